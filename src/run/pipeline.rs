//! The run's threads: a reader that parses and checks episodes at most a window ahead of the writer, and the
//! workers that replay each episode under every strategy on the first free core.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::journal::JournalHead;
use crate::error::{Error, Result};
use crate::history::dataset::{LinesDigest, Read};
use crate::history::validate::check_episode;
use crate::history::Episode;
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

/// How far the reader may run ahead of the writer, in episodes: memory stays bounded whatever one slow episode
/// holds up. Also how the writer tells the reader and the workers to stop.
pub(super) struct Window {
    pub(super) size: usize,
    /// (episodes written, stopped)
    state: std::sync::Mutex<(usize, bool)>,
    moved: std::sync::Condvar,
}

impl Window {
    pub(super) fn new(size: usize) -> Self {
        Self {
            size,
            state: std::sync::Mutex::new((0, false)),
            moved: std::sync::Condvar::new(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut (usize, bool))) {
        if let Ok(mut state) = self.state.lock() {
            f(&mut state);
        }
        self.moved.notify_all();
    }

    /// `written` episodes are written.
    pub(super) fn advance(&self, written: usize) {
        self.update(|s| s.0 = written);
    }

    pub(super) fn stopped(&self) -> bool {
        self.state.lock().map_or(true, |s| s.1)
    }

    /// Waits until episode `index` may be read; false when the run stopped.
    fn admit(&self, index: usize) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        while !state.1 && index >= state.0 + self.size {
            state = match self.moved.wait(state) {
                Ok(s) => s,
                Err(_) => return false,
            };
        }
        !state.1
    }

    pub(super) fn stop_on_drop(&self) -> impl Drop + '_ {
        struct Stop<'a>(&'a Window);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.update(|s| s.1 = true);
            }
        }
        Stop(self)
    }
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
    window: &Window,
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
        if !window.admit(index) || tx.send((index, checked)).is_err() || failed {
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
        if window.admit(index) {
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
