//! What importers share for traces whose agent compacted its own context: what the agent sent at each call
//! point, laid out against the uncompacted history ([`RecordedCompaction`]).

use crate::history::recorded::{Compaction, RecordedCompaction};
use crate::history::{Episode, Item};

/// Stores in `episode` what its agent sent (`sent[k]`, the items of call point `k`'s request, when the trace
/// shows them) where that differs from the history as recorded; nothing when it never does. Returns the number
/// of call points whose request differs.
pub fn store(
    by: &str,
    compactions: Vec<Compaction>,
    episode: &mut Episode,
    sent: &[Option<Vec<Item>>],
) -> usize {
    let points = episode.call_points();
    let requests: Vec<Option<Vec<Item>>> = points
        .iter()
        .enumerate()
        .map(|(k, &at)| {
            let request: Vec<Item> = sent
                .get(k)?
                .as_ref()?
                .iter()
                .filter(|i| i.is_sent())
                .cloned()
                .collect();
            let history = episode.items[..at].iter().filter(|i| i.is_sent());
            (!request.iter().eq(history)).then_some(request)
        })
        .collect();
    let differ = requests.iter().filter(|r| r.is_some()).count();
    if differ > 0 {
        RecordedCompaction::from_requests(by, compactions, &episode.items, &requests)
            .store(episode);
    }
    differ
}
