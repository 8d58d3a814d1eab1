//! aider's summary of older turns on the real aider sessions under ../shared/traces, placed by aider's own rule
//! (`history::import::aider::summary`). Skipped, with a message, when the folder is absent.

use std::collections::BTreeMap;

use ctxbench::Item;

use crate::traces::imported;

/// aider summarizes older turns once its chat history passes its budget (2,048 of its tokens for these
/// models), which no transcript shows: the importer places each summary by aider's rule, counting as aider's
/// litellm did (cl100k_base of each message's JSON). Where, by episode and call point, and what the
/// as-recorded request drops there: every turn before the tail aider kept, while the episode (what the
/// baseline and every strategy replay) keeps the whole history.
#[test]
fn aider_summaries_of_older_turns_are_placed_by_aiders_rule() {
    use ctxbench::history::recorded::RecordedCompaction;
    let Some(traces) = imported() else { return };
    let mut found: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ep in traces
        .iter()
        .flat_map(|(_, e)| e)
        .filter(|e| e.source == "import/aider")
    {
        let Some(r) = RecordedCompaction::of(ep) else {
            continue;
        };
        assert!(r.added.is_empty(), "{}: the summary is no item", ep.id);
        let points = ep.call_points();
        for c in &r.compactions {
            assert!(c.unseen_summary, "{}", ep.id);
            // The request at the summary: a suffix of the history up to the call point, shorter than it.
            let sent = r.request(&ep.items, c.call_point).unwrap();
            let history: Vec<&Item> = ep.items[..points[c.call_point]]
                .iter()
                .filter(|i| i.is_sent())
                .collect();
            assert!(sent.len() < history.len(), "{}", ep.id);
            assert!(
                history.ends_with(&sent.iter().collect::<Vec<_>>()),
                "{}: call {}",
                ep.id,
                c.call_point
            );
        }
        found.insert(
            ep.id.clone(),
            r.compactions.iter().map(|c| c.call_point).collect(),
        );
    }
    let expected: BTreeMap<String, Vec<usize>> = [
        (
            "chat-history__session0288__2024-08-09T16-16-42.md",
            vec![2, 6],
        ),
        (
            "chat-history__session0295__2024-08-09T16-51-14.md#context1",
            vec![3],
        ),
        (
            "chat-history__session0343__2024-08-09T19-32-47.md",
            vec![3, 6, 9],
        ),
        (
            "chat-history__session0919__2024-08-19T15-30-56.md#context1",
            vec![2],
        ),
    ]
    .into_iter()
    .map(|(e, c)| (e.to_owned(), c))
    .collect();
    assert_eq!(found, expected);
}
