//! Running a comparison: configuration, parallel replay of a streamed dataset, and the files it writes.
//!
//! Episodes stream through a pipeline of threads ([`pipeline`]): a reader parses and checks them, at most a
//! window of them ahead of the writer; the workers replay each as soon as one is free (with a real
//! model, a worker waits only for a strategy's call and, at the episode's end, for the answers of its probes:
//! those go out as tasks of the client while the replay goes on; the mock answers at once); the writer
//! ([`writer`]) puts results back in dataset order, computes their metrics and appends their rows. Every few episodes the rows are
//! flushed and the finished episodes journaled ([`journal`]), and the other tables are rewritten, from running
//! totals, at most every few seconds and at the end: a run that fails midway keeps what it finished, and memory
//! does not grow with the number of episodes.

pub mod advice;
pub mod analyze;
pub mod config;
mod dry;
pub mod journal;
mod overrides;
mod pipeline;
pub mod recommend;
pub mod sends;
pub mod session;
pub mod shard;
pub mod show;
pub mod staging;
pub mod usage;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use config::{
    dataset_sha256, has_recorded_compaction, PricingConfig, RunConfig, TokenizerConfig,
    UnrecordedMode, SUMMARY_VERSION,
};
pub use dry::{dry_run, DryRow, DryRun};
pub use overrides::{Overrides, TokenizerOverride};

use crate::error::{Error, Result};
use crate::history::dataset::stream_every;
use crate::llm::openai::OpenAiLlm;
use crate::report::RunReport;
use journal::{scan_journal, JOURNAL};
use pipeline::{read_episodes, replay_episode, Input, Replayed, Window};
use session::{Models, Session};
use writer::{Target, Writer};

/// Progress callbacks, so the CLI can draw a bar without the library knowing about terminals.
pub trait Progress: Sync {
    /// `n` more episodes finished.
    fn advance(&self, n: u64);
}

impl Progress for () {
    fn advance(&self, _: u64) {}
}

/// The result of a run: the report and where it was written.
#[derive(Debug)]
pub struct RunOutcome {
    /// The report.
    pub report: RunReport,
    /// The run directory.
    pub dir: PathBuf,
    /// What the real LLM's client did, when the run had one.
    pub llm: Option<crate::llm::openai::LlmStats>,
    /// What the real judge's client did, when the run had one.
    pub judge: Option<crate::llm::openai::LlmStats>,
}

/// How a run goes besides its configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunOptions {
    /// Continue the interrupted run in the output directory.
    pub resume: bool,
    /// Go on past an episode whose LLM call failed: it is left out of every figure and named in the report.
    pub keep_going: bool,
    /// With a real LLM: send no call that could take the run's spend past this many USD.
    pub max_cost: Option<f64>,
    /// Replay only this shard's episodes (see [`shard`]); the run keeps its journal for `ctxbench merge`.
    pub shard: Option<shard::Shard>,
    /// Which LLM calls `llm_calls.jsonl` holds (`None`: [`CallLog::default_for`] the run's models).
    pub calls: Option<CallLog>,
}

/// Which LLM calls a run writes to `llm_calls.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CallLog {
    /// Every call with what the model said: what `ctxbench show` answers a real model's replay from.
    All,
    /// The calls that failed.
    Failed,
    /// None (the file is written empty).
    None,
}

impl CallLog {
    /// Every call when a real model answers (or grades) them: they cost money, and `ctxbench show` replays
    /// from them. Only the failed ones for the mock, whose calls cannot fail and whose answers are the same
    /// on every replay (`ctxbench show` asks it again): the bundled run's 1.8 MB of answers, written, synced
    /// and merged, told nothing a replay does not.
    #[must_use]
    pub fn default_for(config: &RunConfig) -> Self {
        if config.llm.is_some() || config.judge.is_some() {
            Self::All
        } else {
            Self::Failed
        }
    }

    /// Whether the log holds `call`.
    #[must_use]
    pub fn keeps(self, call: &crate::replay::calls::CallRecord) -> bool {
        match self {
            Self::All => true,
            Self::Failed => call.error.is_some(),
            Self::None => false,
        }
    }
}

/// Runs the comparison on `dataset` and writes the run directory `out`.
///
/// The run is written into `OUT.partial` and replaces `out` only once complete ([`staging`]).
///
/// # Errors
/// Bad input (naming file, line and episode), an invalid config, a dataset without episodes, or a file that
/// cannot be written. What was finished stays in `OUT.partial`, marked incomplete, for `--resume`.
pub fn run(
    config: &RunConfig,
    dataset: &Path,
    out: &Path,
    name: &str,
    progress: &dyn Progress,
    options: &RunOptions,
) -> Result<RunOutcome> {
    config.validate()?;
    // Where the agent compacted its own context, what it sent is a row of the comparison.
    let config = &*config.for_dataset(dataset)?;
    let resume = options.resume;
    // A real LLM's client is checked (its key, its endpoint, its model) before anything is written.
    let session = Session::open(
        config,
        Models::Real {
            max_cost: options.max_cost,
        },
    )?;
    // Everything is written into OUT.partial, swapped in for OUT once the run completes.
    let staging = staging::prepare(out, resume)?;
    let result = run_in(config, dataset, &staging, name, progress, options, &session);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            staging::discard_if_empty(&staging);
            return Err(e);
        }
    };
    // A shard may hold no episode (more shards than episodes); a run may not.
    if outcome.report.dataset.episodes == 0
        && outcome.report.failed.is_empty()
        && options.shard.is_none()
    {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(Error::Config(format!(
            "'{}' holds no episode: nothing was run and '{}' is untouched (a dataset is JSON lines of \
             episodes; `ctxbench import FILE -o out.jsonl` converts an agent's trace)",
            dataset.display(),
            out.display()
        )));
    }
    if !outcome.report.complete {
        return Ok(outcome);
    }
    staging::swap_in(&staging, out)?;
    Ok(RunOutcome {
        dir: out.to_owned(),
        ..outcome
    })
}

/// What a run is, as its journal and summary record it: the configuration, the judge's digest (a resumed run
/// refuses another version), and the shard (it resumes only as itself; the merge compares configs without it).
fn run_identity(config: &RunConfig, options: &RunOptions) -> Result<serde_json::Value> {
    let mut config_json = serde_json::to_value(config).map_err(|e| Error::Serialize {
        what: "config",
        message: e.to_string(),
    })?;
    config_json["judge_digest"] = serde_json::Value::from(crate::llm::judge::digest());
    if let Some(shard) = options.shard {
        config_json["shard"] = shard.to_json();
    }
    Ok(config_json)
}

/// How many replay workers: with a real model a worker waits for a strategy's call and for its episode's last
/// answers, so there are as many as requests may be in flight (the model's or the judge's limit, whichever is
/// higher): with fewer, the endpoint would wait for the workers. Else one per core (rayon's count, which
/// `RAYON_NUM_THREADS` sets).
fn worker_count(config: &RunConfig) -> usize {
    let cores = rayon::current_num_threads();
    [config.llm.as_ref(), config.judge.as_ref()]
        .into_iter()
        .flatten()
        .map(|c| c.max_concurrency)
        .max()
        .map_or(cores, |most| most.max(cores))
}

/// How many episodes the reader may run ahead of the writer ([`Window`]): what a run holds at most (each
/// episode parsed, replayed, or finished and waiting for the ones before it to be written).
///
/// With the mock, two per worker: a worker finds the next episode parsed while the writer still holds the one
/// before, and parsed episodes do not weigh on memory (eight per worker, the earlier window, peaked 2.5 MB
/// higher on the bundled run). With a real model there are as many workers as requests may be in flight, and
/// an episode holds its replays until it is written: one per worker and a quarter more (at least 2), for the
/// episodes that finish while an earlier one still waits for its answers. Two per worker held 1.28× more at
/// 1,000 generated episodes than at 100 (`max_concurrency` 64: 100 episodes are fewer than 128); the
/// requests in flight stay the same (docs/performance-history.md).
fn window_size(config: &RunConfig, threads: usize) -> usize {
    let threads = threads.max(1);
    if config.llm.is_some() || config.judge.is_some() {
        threads + (threads / 4).max(2)
    } else {
        threads * 2
    }
}

/// Whether the run's models could take more calls now ([`Window::on_demand`]): an episode is read while fewer
/// calls are outstanding than twice the endpoint's places (a call outstanding may still wait for its turn, or
/// be a probe's waiting for a place behind the calls a replay waits for: with once, 74% of 256 in flight on 100
/// generated episodes, 84% with twice, 87% with the reader unbounded by demand).
fn demand<'a>(config: &'a RunConfig, session: &'a Session) -> impl Fn() -> bool + Sync + 'a {
    let clients = session.clients();
    move || {
        [
            (clients.0, config.llm.as_ref()),
            (clients.1, config.judge.as_ref()),
        ]
        .into_iter()
        .any(|(client, cfg)| {
            client
                .zip(cfg)
                .is_some_and(|(c, cfg)| c.requests_in_flight() < 2 * cfg.max_concurrency)
        })
    }
}

/// The reader's window ([`Window`]): with a real model bounded by the episodes' bytes too, and read on
/// `demand`.
fn window<'a>(
    config: &RunConfig,
    session: &Session,
    threads: usize,
    demand: &'a (dyn Fn() -> bool + Sync),
) -> Window<'a> {
    let real = config.llm.is_some() || config.judge.is_some();
    let window = Window::new(window_size(config, threads), real);
    if session.clients().0.is_some() || session.clients().1.is_some() {
        window.on_demand(demand)
    } else {
        window
    }
}

/// How results are written: the reader's window to advance, whether a failed LLM call leaves its episode out
/// (`--keep-going`), the progress, and how many episodes between checkpoints.
struct Order<'a> {
    window: &'a Window<'a>,
    keep_going: bool,
    progress: &'a dyn Progress,
    checkpoint_every: usize,
}

/// Writes the results in dataset order (the ones that arrive early wait), checkpointing as it goes; a bad
/// episode or a failing strategy stops the run after everything before it was written.
fn write_in_order(
    results: std::sync::mpsc::Receiver<Outcome>,
    writer: &mut Writer,
    order: &Order<'_>,
) -> Result<()> {
    let mut early: BTreeMap<usize, (Option<String>, Result<Replayed>)> = BTreeMap::new();
    let mut next = 0;
    for (index, id, replayed) in results {
        early.insert(index, (id, replayed));
        while let Some((id, replayed)) = early.remove(&next) {
            next += 1;
            order.window.advance(next);
            let (episode, line, replays) = match replayed {
                Ok(r) => r,
                // Under --keep-going an episode whose LLM call failed is left out and named.
                Err(Error::Llm(message)) if order.keep_going => {
                    writer.fail(id.unwrap_or_default(), message);
                    order.progress.advance(1);
                    continue;
                }
                Err(e) => {
                    writer.checkpoint(true)?;
                    return Err(e);
                }
            };
            writer.add(&episode, line, &replays)?;
            order.progress.advance(1);
            if writer.done.len() >= order.checkpoint_every {
                writer.checkpoint(false)?;
            }
        }
    }
    Ok(())
}

/// The dataset's SHA-256 for a run; none for a shard, which hashes only its own lines, as it reads them (`merge`
/// hashes the dataset and checks them): the other shards' lines are neither parsed nor hashed.
fn run_sha256(dataset: &Path, options: &RunOptions) -> Result<String> {
    match options.shard {
        Some(_) => Ok(String::new()),
        None => dataset_sha256(dataset),
    }
}

/// What a worker sends back: the episode's place in the dataset, its id, and its replays.
type Outcome = (usize, Option<String>, Result<Replayed>);

/// Replays the episodes `episodes` brings on `threads` workers, each taking the next as soon as it is free,
/// and sends each one's outcome to `results`. The workers are plain threads: a rayon pool of 256 reached through
/// `par_bridge`, most of its workers idle (a worker waits for its episode's answers), spent a quarter of a
/// real-model run's CPU at `max_concurrency` 256 in its idle workers' search for work.
fn replay_all(
    threads: usize,
    episodes: std::sync::mpsc::Receiver<(usize, Result<Input>)>,
    results: &std::sync::mpsc::Sender<Outcome>,
    window: &Window,
    session: &Session,
    config: &RunConfig,
) -> Result<()> {
    let replayer = session.replayer();
    let episodes = std::sync::Mutex::new(episodes);
    std::thread::scope(|workers| {
        for _ in 0..threads {
            let (tx, episodes, replayer) = (results.clone(), &episodes, &replayer);
            std::thread::Builder::new()
                .spawn_scoped(workers, move || loop {
                    let next = episodes
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .recv();
                    let Ok((index, episode)) = next else { break };
                    if window.stopped() {
                        continue;
                    }
                    let id = episode.as_ref().ok().map(|(ep, _)| ep.id.clone());
                    let replayed = episode.and_then(|(mut ep, line): Input| {
                        // Blocks of unrecorded context sized with another tokenizer are sized again with the
                        // run's (or the run refuses, saying why).
                        crate::replay::unrecorded::resize(&mut ep, session.tokenizer())?;
                        replay_episode(replayer, &ep, &config.strategies).map(|r| (ep, line, r))
                    });
                    // The receiver is gone only when the run has stopped.
                    let _ = tx.send((index, id, replayed));
                })
                .map_err(|e| {
                    Error::Config(format!("cannot start {threads} worker threads: {e}"))
                })?;
        }
        Ok(())
    })
}

/// [`run`] in the staging directory `out`.
fn run_in(
    config: &RunConfig,
    dataset: &Path,
    out: &Path,
    name: &str,
    progress: &dyn Progress,
    options: &RunOptions,
    session: &Session,
) -> Result<RunOutcome> {
    let resume = options.resume;
    let config_json = run_identity(config, options)?;
    // A resumed run reads its journal twice, entry by entry: here for the ids of the episodes to skip, and as
    // the writer starts for their totals, so that memory does not grow with the episodes finished.
    let journal = if resume {
        Some(scan_journal(&out.join(JOURNAL), &config_json)?)
    } else {
        None
    };
    let resumed = journal.as_ref().map(|j| (j, out));
    let threads = worker_count(config);
    // A shard reads and hashes its own episodes' lines; the others' are counted, neither parsed nor hashed.
    let episodes = stream_every(dataset, options.shard.map(|s| (s.index, s.count)))?;
    let demand = demand(config, session);
    let window = window(config, session, threads, &demand);
    // With a real LLM every episode costs calls: each is journaled as soon as it is written.
    let checkpoint_every = config.llm.as_ref().map_or(threads.max(1) * 4, |_| 1);

    std::thread::scope(|scope| {
        // Stops the reader and the workers however this scope is left.
        let _stop = window.stop_on_drop();
        // The dataset is hashed, read and validated while the vocabulary loads.
        let sha256 = scope.spawn(|| run_sha256(dataset, options));
        let (episode_tx, episode_rx) = std::sync::mpsc::sync_channel(window.size);
        let window = &window;
        let reader = scope.spawn(move || read_episodes(episodes, resumed, window, &episode_tx));
        let (result_tx, result_rx) = std::sync::mpsc::channel::<Outcome>();
        // Episodes replay as they arrive, each on the first free worker; results come back tagged with their
        // place in the dataset.
        let workers = scope
            .spawn(move || replay_all(threads, episode_rx, &result_tx, window, session, config));

        let sha256 = sha256
            .join()
            .unwrap_or_else(|_| Err(Error::Config("hashing the dataset panicked".into())))?;
        let target = Target {
            dataset,
            out,
            name,
            sha256,
            journal: journal.as_ref(),
            complete_tables: false,
            calls: options
                .calls
                .unwrap_or_else(|| CallLog::default_for(config)),
        };
        let mut writer = Writer::start(config, &config_json, target)?;
        let order = Order {
            window,
            keep_going: options.keep_going,
            progress,
            checkpoint_every,
        };
        write_in_order(result_rx, &mut writer, &order)?;
        // The workers end when the dataset does, or at once when they could not start.
        workers
            .join()
            .unwrap_or_else(|_| Err(Error::Config("a replay worker panicked".into())))?;
        if options.shard.is_some() {
            // What the shard read of the dataset: its own lines, in its summary.
            writer.report.dataset.lines_xxh3 = reader.join().ok().flatten();
        }
        Ok(RunOutcome {
            report: writer.finish()?,
            dir: out.to_owned(),
            llm: session.clients().0.map(OpenAiLlm::stats),
            judge: session.clients().1.map(OpenAiLlm::stats),
        })
    })
}
