//! The run's threads: a reader that parses and checks episodes at most a window ahead of the writer, and the
//! workers that replay each episode under every strategy on the first free core.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::journal::JournalHead;
use crate::error::{Error, Result};
use crate::history::dataset::{LinesDigest, Read};
use crate::history::validate::check_episode;
use crate::history::{Episode, Item};
use crate::replay::{EpisodeReplay, Replayer};
use crate::strategy::{NamedStrategy, StrategyConfig};

/// One episode's replays under every strategy, with its baseline's (and a shard's hash of its line).
pub(super) type Replayed = (Episode, Option<u128>, Replays);

/// The replays of one episode: one per configured strategy, in order, and the baseline's, which is one of them
/// when the config has `none` (never a copy), else a replay of its own.
pub(super) struct Replays {
    pub(super) replays: Vec<EpisodeReplay>,
    baseline: Result<usize, EpisodeReplay>,
    /// The replay of the first `as_recorded` strategy, when the config has one.
    recorded: Option<usize>,
}

impl Replays {
    /// The baseline's replay.
    pub(super) fn baseline(&self) -> &EpisodeReplay {
        match &self.baseline {
            Ok(i) => &self.replays[*i],
            Err(own) => own,
        }
    }

    /// The replay the episode's record is compared with ([`crate::metrics::fidelity::compared_strategy`]):
    /// `as_recorded`'s where the agent compacted its own context (a run on such a dataset always has one:
    /// [`super::RunConfig::with_as_recorded`]), else the baseline's.
    pub(super) fn compared(&self, episode: &Episode) -> &EpisodeReplay {
        match self.recorded {
            Some(i) if crate::metrics::fidelity::compares_as_recorded(episode) => &self.replays[i],
            _ => self.baseline(),
        }
    }

    /// The baseline's replay when it is none of the configured strategies'.
    pub(super) fn own_baseline(&self) -> Option<&EpisodeReplay> {
        self.baseline.as_ref().err()
    }
}

/// Replays one episode under the baseline and every strategy.
pub(super) fn replay_episode(
    replayer: &Replayer<'_>,
    episode: &Episode,
    strategies: &[NamedStrategy],
) -> Result<Replays> {
    let has_baseline = strategies
        .iter()
        .position(|s| s.config == StrategyConfig::None);
    let mut all: Vec<NamedStrategy> = strategies.to_vec();
    if has_baseline.is_none() {
        all.insert(0, NamedStrategy::new("(baseline)", StrategyConfig::None));
    }
    let mut replays = replayer.replay_all(episode, &all)?;
    let baseline = match has_baseline {
        Some(i) => Ok(i),
        None => Err(replays.remove(0)),
    };
    let recorded = strategies
        .iter()
        .position(|s| matches!(s.config, StrategyConfig::AsRecorded(_)));
    Ok(Replays {
        replays,
        baseline,
        recorded,
    })
}

/// How far the reader may run ahead of the writer: at most `size` episodes read and not yet written and, with
/// a real model ([`Window::weighed`]), at most as many bytes of them as `size` episodes of the mean size read so
/// far, so that what a run holds open follows the concurrency and the dataset's mean episode, not a run of
/// large episodes that happen to come together (an episode too large for the bytes left waits until none is
/// open); and, with a real model, an episode past the first few is read only while the endpoint has a place
/// for more requests than are outstanding ([`Window::on_demand`]): episodes are opened as the endpoint can
/// take their calls, not as far as the window allows. Memory stays bounded whatever one slow episode holds up.
/// Also how the writer tells the reader and the workers to stop.
pub(super) struct Window<'a> {
    pub(super) size: usize,
    /// Whether the episodes open are also bounded by their bytes.
    weighed: bool,
    /// Whether more calls could go out now than are outstanding (None: the mock, always).
    demand: Option<&'a (dyn Fn() -> bool + Sync)>,
    state: std::sync::Mutex<Open>,
    moved: std::sync::Condvar,
}

/// The episodes read and not yet written.
#[derive(Debug, Default)]
struct Open {
    /// Episodes written (every episode before this index).
    written: usize,
    stopped: bool,
    /// The bytes of each episode admitted and not yet written, in dataset order from `written`.
    bytes: std::collections::VecDeque<u64>,
    /// Their sum.
    open_bytes: u64,
    /// Every episode admitted so far: how many, and their bytes (the mean the budget is made of).
    seen: u64,
    seen_bytes: u64,
}

impl Open {
    /// Whether episode `index` of `bytes` may be read now, in a window of `size`.
    fn fits(&self, index: usize, bytes: u64, size: usize, weighed: bool) -> bool {
        if index >= self.written + size {
            return false;
        }
        if !weighed || self.bytes.is_empty() {
            return true;
        }
        // `size` episodes of the mean size read so far, this one included.
        let budget = (u128::from(self.seen_bytes) + u128::from(bytes)) * size as u128
            / (u128::from(self.seen) + 1);
        u128::from(self.open_bytes + bytes) <= budget
    }

    /// Counts an episode of `bytes` open.
    fn take(&mut self, bytes: u64) {
        self.bytes.push_back(bytes);
        self.open_bytes += bytes;
        self.seen += 1;
        self.seen_bytes += bytes;
    }

    /// Every episode before `written` is written: no longer open.
    fn written_to(&mut self, written: usize) {
        for _ in self.written..written {
            let bytes = self.bytes.pop_front().unwrap_or(0);
            self.open_bytes = self.open_bytes.saturating_sub(bytes);
        }
        self.written = self.written.max(written);
    }
}

/// Episodes open whatever the demand: a worker per core finds one to replay.
fn open_at_least() -> usize {
    rayon::current_num_threads().max(2)
}

/// How often a reader that waits for the endpoint's demand looks again.
const DEMAND_POLL: std::time::Duration = std::time::Duration::from_millis(5);

impl<'a> Window<'a> {
    /// A window of `size` episodes, and of their bytes too when `weighed`.
    pub(super) fn new(size: usize, weighed: bool) -> Self {
        Self {
            size,
            weighed,
            demand: None,
            state: std::sync::Mutex::new(Open::default()),
            moved: std::sync::Condvar::new(),
        }
    }

    /// The same window, reading an episode past the first few only while `demand` says the endpoint could take
    /// more calls than are outstanding.
    pub(super) fn on_demand(mut self, demand: &'a (dyn Fn() -> bool + Sync)) -> Self {
        self.demand = Some(demand);
        self
    }

    /// Whether the reader weighs the episodes it admits ([`episode_bytes`]).
    pub(super) fn weighed(&self) -> bool {
        self.weighed
    }

    fn update(&self, f: impl FnOnce(&mut Open)) {
        if let Ok(mut state) = self.state.lock() {
            f(&mut state);
        }
        self.moved.notify_all();
    }

    /// `written` episodes are written.
    pub(super) fn advance(&self, written: usize) {
        self.update(|s| s.written_to(written));
    }

    pub(super) fn stopped(&self) -> bool {
        self.state.lock().map_or(true, |s| s.stopped)
    }

    /// Waits until episode `index`, of `bytes` ([`episode_bytes`]; 0 when not weighed), may be read, and
    /// counts it open; false when the run stopped.
    fn admit(&self, index: usize, bytes: u64) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        loop {
            if state.stopped {
                return false;
            }
            if state.fits(index, bytes, self.size, self.weighed) {
                let wanted = index < state.written + open_at_least()
                    || self.demand.is_none_or(|demand| demand());
                if wanted {
                    break;
                }
                // The endpoint has calls enough: look again as they are answered (or an episode written).
                state = match self.moved.wait_timeout(state, DEMAND_POLL) {
                    Ok((s, _)) => s,
                    Err(_) => return false,
                };
                continue;
            }
            state = match self.moved.wait(state) {
                Ok(s) => s,
                Err(_) => return false,
            };
        }
        state.take(bytes);
        true
    }

    pub(super) fn stop_on_drop(&self) -> impl Drop + '_ {
        struct Stop<'a, 'b>(&'a Window<'b>);
        impl Drop for Stop<'_, '_> {
            fn drop(&mut self) {
                self.0.update(|s| s.stopped = true);
            }
        }
        Stop(self)
    }
}

/// What an episode weighs open, roughly: the bytes of its texts (items, findings, probes, tool schemas as
/// their JSON would be) and a fixed share per item; read only when the window is [`Window::weighed`].
pub(super) fn episode_bytes(ep: &Episode) -> u64 {
    const PER_ITEM: usize = 48;
    let items: usize = ep
        .items
        .iter()
        .map(|item| {
            PER_ITEM
                + match item {
                    Item::Message { content, .. }
                    | Item::Reasoning { content, .. }
                    | Item::Unrecorded { note: content, .. } => content.len(),
                    Item::ToolCall {
                        id,
                        name,
                        arguments,
                    } => id.len() + name.len() + arguments.len(),
                    Item::ToolResult {
                        call_id,
                        name,
                        content,
                        ..
                    } => call_id.len() + name.len() + content.len(),
                    Item::Observation { name, content } => name.len() + content.len(),
                }
        })
        .sum();
    let findings: usize = ep
        .findings
        .iter()
        .map(|f| f.text.len() + f.evidence.iter().map(String::len).sum::<usize>())
        .sum();
    let probes: usize = ep
        .probes
        .iter()
        .map(|p| p.question.len() + p.answers.iter().map(String::len).sum::<usize>())
        .sum();
    let tools: usize = ep.tools.iter().map(|t| t.to_string().len()).sum();
    (items + findings + probes + tools + ep.task.len()) as u64
}

/// An episode sent to the workers: the episode and, in a shard, its line's hash (journaled with its results).
pub(super) type Input = (Episode, Option<u128>);

/// Reads, validates and sends the episodes to replay, numbered in dataset order; stops after the first bad
/// one, which is sent as the error it is. A resumed run (its journal, and the directory it continues) skips the
/// episodes its journal holds, and a resumed shard first checks that their lines are still the ones it replayed.
/// Returns the digest of a shard's lines ([`LinesDigest`]) when it read them all.
pub(super) fn read_episodes(
    episodes: impl Iterator<Item = Result<Read>>,
    resumed: Option<(&JournalHead, &Path)>,
    window: &Window<'_>,
    tx: &std::sync::mpsc::SyncSender<(usize, Result<Input>)>,
) -> Option<String> {
    let (none, unhashed) = (HashSet::new(), HashMap::new());
    let skip = resumed.map_or(&none, |(j, _)| &j.ids);
    let lines = resumed.map_or(&unhashed, |(j, _)| &j.lines);
    let refused = |why: String| {
        let dir = resumed.map_or(Path::new(""), |(_, dir)| dir).display();
        Error::Config(format!(
            "cannot resume the shard in '{dir}': {why}; remove '{dir}' and run the shard again to start over"
        ))
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut digest = LinesDigest::default();
    let mut index = 0;
    for res in episodes {
        let checked = res.and_then(|(file, line, ep, hash)| {
            if let Some(hash) = hash {
                digest.add(hash);
            }
            check(&file, line, &ep, &mut seen)?;
            if let Some(&done) = lines.get(&ep.id) {
                if hash != Some(done) {
                    return Err(refused(format!(
                        "its episode '{}' (line {line} of '{}') changed since the shard replayed it",
                        ep.id,
                        file.display()
                    )));
                }
            }
            Ok((ep, hash))
        });
        if checked.as_ref().is_ok_and(|(ep, _)| skip.contains(&ep.id)) {
            continue;
        }
        let failed = checked.is_err();
        let bytes = match &checked {
            Ok((ep, _)) if window.weighed() => episode_bytes(ep),
            _ => 0,
        };
        if !window.admit(index, bytes) || tx.send((index, checked)).is_err() || failed {
            return None;
        }
        index += 1;
    }
    // A resumed shard's finished episode that is no longer one of its lines: the dataset changed.
    if let Some(gone) = lines.keys().filter(|id| !seen.contains(*id)).min() {
        let gone = refused(format!(
            "its finished episode '{gone}' is no longer among its lines of the dataset (the dataset changed since \
             the shard started)"
        ));
        if window.admit(index, 0) {
            let _ = tx.send((index, Err(gone)));
        }
        return None;
    }
    Some(digest.hex())
}

/// Checks an episode read at `line` of `file`: valid, and the first of its id (`seen` holds the ids before it).
fn check(file: &Path, line: usize, ep: &Episode, seen: &mut HashSet<String>) -> Result<()> {
    if let Some(issue) = check_episode(ep).into_iter().next() {
        return Err(Error::Invalid {
            path: file.to_owned(),
            line,
            episode: ep.id.clone(),
            message: format!(
                "{}: {} (run `ctxbench validate` for every problem)",
                issue.field, issue.message
            ),
        });
    }
    if !seen.insert(ep.id.clone()) {
        return Err(Error::Invalid {
            path: file.to_owned(),
            line,
            episode: ep.id.clone(),
            message: "duplicate episode id: every episode of a run needs its own id".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Admits what fits of `sizes` in order, as the reader does, without waiting: the indices admitted.
    fn admitted(open: &mut Open, from: usize, sizes: &[u64], size: usize, weighed: bool) -> usize {
        let mut index = from;
        for &bytes in sizes {
            if !open.fits(index, bytes, size, weighed) {
                break;
            }
            open.take(bytes);
            index += 1;
        }
        index
    }

    #[test]
    fn a_window_of_equal_episodes_holds_its_size_weighed_or_not() {
        for weighed in [false, true] {
            let mut open = Open::default();
            assert_eq!(admitted(&mut open, 0, &[100; 10], 4, weighed), 4);
            open.written_to(1);
            assert_eq!(admitted(&mut open, 4, &[100; 10], 4, weighed), 5);
            assert_eq!(open.open_bytes, 400);
        }
    }

    #[test]
    fn large_episodes_together_are_held_to_the_bytes_of_a_window_of_mean_ones() {
        // Twenty episodes of 100 bytes read and written: the mean is 100, a window of 4 holds 400 bytes.
        let mut open = Open::default();
        assert_eq!(admitted(&mut open, 0, &[100; 4], 4, true), 4);
        for written in 1..=16 {
            open.written_to(written);
            assert_eq!(
                admitted(&mut open, written + 3, &[100], 4, true),
                written + 4
            );
        }
        open.written_to(20);
        assert_eq!(open.open_bytes, 0);
        // Then episodes of 1,000 bytes: the first is open alone (nothing else is), the next waits for it.
        assert_eq!(admitted(&mut open, 20, &[1000, 1000], 4, true), 21);
        assert_eq!(open.open_bytes, 1000);
        // Unweighed, the count alone: four of them.
        let mut count = Open::default();
        assert_eq!(admitted(&mut count, 0, &[1000; 8], 4, false), 4);
        // A small one waits too while the large one holds more than the budget, and goes once it is written.
        assert_eq!(admitted(&mut open, 21, &[100], 4, true), 21);
        open.written_to(21);
        assert_eq!(admitted(&mut open, 21, &[100; 8], 4, true), 25);
        assert!(open.open_bytes <= 4 * open.seen_bytes / open.seen);
    }

    #[test]
    fn the_count_bounds_a_weighed_window_of_small_episodes() {
        // Tiny episodes after large ones: the bytes would allow many, the count allows 4.
        let mut open = Open::default();
        assert_eq!(admitted(&mut open, 0, &[10_000], 4, true), 1);
        open.written_to(1);
        assert_eq!(admitted(&mut open, 1, &[1; 10], 4, true), 5);
    }

    #[test]
    fn past_the_first_few_an_episode_is_read_only_on_demand() {
        let wanted = std::sync::atomic::AtomicBool::new(false);
        let demand = || wanted.load(std::sync::atomic::Ordering::Relaxed);
        let window = Window::new(100, true).on_demand(&demand);
        for index in 0..open_at_least() {
            assert!(
                window.admit(index, 100),
                "the first few whatever the demand"
            );
        }
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| window.admit(open_at_least(), 100));
            std::thread::sleep(std::time::Duration::from_millis(30));
            assert!(!reader.is_finished(), "no demand: the next waits");
            wanted.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(
                reader.join().unwrap(),
                "read once the endpoint could take more"
            );
        });
    }

    #[test]
    fn the_reader_waits_for_the_writer_and_stops_with_the_run() {
        let window = Window::new(2, true);
        assert!(window.admit(0, 100));
        assert!(window.admit(1, 100));
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| window.admit(2, 100));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(
                !reader.is_finished(),
                "the third waits for the first to be written"
            );
            window.advance(1);
            assert!(reader.join().unwrap());
            let stopped = scope.spawn(|| window.admit(3, 100));
            drop(window.stop_on_drop());
            assert!(!stopped.join().unwrap());
        });
    }
}
