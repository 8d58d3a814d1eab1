//! Running a comparison: configuration, parallel replay of a streamed dataset, and the files it writes.
//!
//! Episodes stream through a pipeline of threads: a reader parses and checks them, at most a window of them
//! ahead of the writer; the rayon workers replay each as soon as one is free (the mock LLM's futures are ready
//! at once, so each episode blocks on its own future); the writer puts results back in dataset order and
//! appends their rows. Every few episodes `steps.csv` and `episodes.csv` are flushed and the finished episodes
//! are journaled, and the other tables are rewritten, from running totals, at most every few seconds and at the
//! end: a run that fails midway keeps what it finished, and memory does not grow with the number of episodes.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::history::dataset::{dataset_files, stream};
use crate::history::validate::check_episode;
use crate::history::Episode;
use crate::llm::mock::{MockConfig, MockLlm};
use crate::llm::openai::{OpenAiConfig, OpenAiLlm};
use crate::llm::pricing::{Price, PriceTable};
use crate::llm::Llm;
use crate::metrics::{episode_metrics, EpisodeMetrics, Prices, StrategyTotals};
use crate::replay::{EpisodeReplay, Replayer};
use crate::report::charts::{ChartData, StepSeries};
use crate::report::csv::{EpisodeRow, RowsWriter, StepRow};
use crate::report::{standard_notes, DatasetInfo, ExportManager, RunReport};
use crate::strategy::{self, NamedStrategy, StrategyConfig};
use crate::tokens::{Backend, Encoding, Tokenizer};

/// Version of the `summary.json` format.
pub const SUMMARY_VERSION: u32 = 1;

/// Tokenizer settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokenizerConfig {
    /// The encoding.
    pub encoding: Encoding,
    /// The backend.
    pub backend: Backend,
}

/// Pricing settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PricingConfig {
    /// The agent's model, priced for every call point.
    pub agent_model: String,
    /// The model strategies call (summaries); the mock's model when absent.
    pub strategy_model: Option<String>,
    /// Extra or overriding prices, USD per million tokens.
    pub models: BTreeMap<String, Price>,
}

impl Default for PricingConfig {
    fn default() -> Self {
        Self {
            agent_model: "gpt-4o".into(),
            strategy_model: None,
            models: BTreeMap::new(),
        }
    }
}

/// Everything a run needs besides the dataset; read from TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// Recorded in the summary; the mock LLM and the replay use no randomness.
    pub seed: u64,
    /// The agent model's context window, in tokens.
    pub context_window: usize,
    /// Tokenizer settings.
    pub tokenizer: TokenizerConfig,
    /// The mock LLM's latency model and summary budget.
    pub mock: MockConfig,
    /// Prices.
    pub pricing: PricingConfig,
    /// A real OpenAI-compatible LLM for the strategies' calls and the probes; the mock when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<OpenAiConfig>,
    /// The strategies to compare, by name.
    pub strategies: Vec<NamedStrategy>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            seed: 42,
            context_window: 128_000,
            tokenizer: TokenizerConfig::default(),
            mock: MockConfig::default(),
            pricing: PricingConfig::default(),
            llm: None,
            strategies: strategy::defaults(),
        }
    }
}

impl RunConfig {
    /// Reads a TOML config file.
    ///
    /// # Errors
    /// Names the file and the TOML problem (line and key).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
        let config: Self = toml::from_str(&text)
            .map_err(|e| Error::Config(format!("'{}': {e}", path.display())))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the config.
    ///
    /// # Errors
    /// Names the value at fault.
    pub fn validate(&self) -> Result<()> {
        if self.context_window == 0 {
            return Err(Error::Config("context_window must be above 0".into()));
        }
        if self.strategies.is_empty() {
            return Err(Error::Config("no strategy to compare".into()));
        }
        strategy::validate_all(&self.strategies)
    }

    /// Keeps only the strategies named in `names` (comma-separated lists are split), in that order.
    ///
    /// # Errors
    /// Names an unknown strategy and lists the known ones.
    pub fn select(&mut self, names: &[String]) -> Result<()> {
        let presets: Vec<String> = strategy::presets::presets()
            .iter()
            .map(|p| p.name.to_owned())
            .collect();
        let defaults: Vec<String> = strategy::defaults().into_iter().map(|s| s.name).collect();
        let wanted: Vec<&str> = names
            .iter()
            .flat_map(|n| n.split(','))
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .flat_map(|n| match n {
                "presets" => std::iter::once("none")
                    .chain(presets.iter().map(String::as_str))
                    .collect(),
                "all" => defaults
                    .iter()
                    .chain(&presets)
                    .map(String::as_str)
                    .collect(),
                _ => vec![n],
            })
            .collect();
        let mut picked = Vec::new();
        for name in wanted {
            let found = self
                .strategies
                .iter()
                .chain(strategy::defaults().iter())
                .find(|s| s.name == name)
                .cloned()
                .or_else(|| strategy::presets::find(name));
            match found {
                Some(s) if !picked.iter().any(|p: &NamedStrategy| p.name == s.name) => {
                    picked.push(s)
                }
                Some(_) => {}
                None => {
                    let known: Vec<String> =
                        self.strategies.iter().map(|s| s.name.clone()).collect();
                    return Err(Error::Config(format!(
                        "unknown strategy '{name}'; this config has: {}; `ctxbench strategies` lists the \
                         built-in ones and the presets ('presets' selects them all)",
                        known.join(", ")
                    )));
                }
            }
        }
        self.strategies = picked;
        self.validate()
    }

    /// The price table: built-in prices overridden by the config's.
    #[must_use]
    pub fn price_table(&self) -> PriceTable {
        let mut table = PriceTable::builtin();
        table.extend(&PriceTable {
            models: self.pricing.models.clone(),
        });
        table
    }

    /// The prices of the agent's and the strategies' models (`None` where unknown).
    #[must_use]
    pub fn prices(&self) -> Prices {
        let table = self.price_table();
        Prices {
            agent: table.get(&self.pricing.agent_model),
            strategy: table.get(
                self.pricing
                    .strategy_model
                    .as_deref()
                    .or(self.llm.as_ref().map(|l| l.model.as_str()))
                    .unwrap_or(&self.mock.model),
            ),
        }
    }
}

/// Progress callbacks, so the CLI can draw a bar without the library knowing about terminals.
pub trait Progress: Sync {
    /// `n` more episodes finished.
    fn advance(&self, n: u64);
}

impl Progress for () {
    fn advance(&self, _: u64) {}
}

/// SHA-256 of the dataset files under `path`, in file order.
///
/// # Errors
/// Names the file that could not be read.
pub fn dataset_sha256(path: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    for file in dataset_files(path)? {
        let mut f = std::fs::File::open(&file).map_err(|e| Error::io("open", &file, e))?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f.read(&mut buf).map_err(|e| Error::io("read", &file, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// The result of a run: the report and where it was written.
#[derive(Debug)]
pub struct RunOutcome {
    /// The report.
    pub report: RunReport,
    /// The run directory.
    pub dir: PathBuf,
}

/// Replays one episode under the baseline and every strategy; returns (reports, baseline).
fn replay_episode(
    replayer: &Replayer<'_>,
    episode: &Episode,
    strategies: &[NamedStrategy],
) -> Result<(Vec<EpisodeReplay>, EpisodeReplay)> {
    let has_baseline = strategies
        .iter()
        .position(|s| s.config == StrategyConfig::None);
    let mut all: Vec<NamedStrategy> = strategies.to_vec();
    if has_baseline.is_none() {
        all.insert(0, NamedStrategy::new("(baseline)", StrategyConfig::None));
    }
    let mut out = pollster::block_on(replayer.replay_all(episode, &all))?;
    let baseline = match has_baseline {
        Some(i) => out[i].clone(),
        None => out.remove(0),
    };
    Ok((out, baseline))
}

/// Runs the comparison on `dataset` and writes the run directory `out`.
///
/// # Errors
/// Bad input (naming file, line and episode), an invalid config, or a file that cannot be written. Files
/// already written stay, marked incomplete.
pub fn run(
    config: &RunConfig,
    dataset: &Path,
    out: &Path,
    name: &str,
    progress: &dyn Progress,
    resume: bool,
) -> Result<RunOutcome> {
    config.validate()?;
    std::fs::create_dir_all(out).map_err(|e| Error::io("create", out, e))?;
    let config_json = serde_json::to_value(config).map_err(|e| Error::Serialize {
        what: "config",
        message: e.to_string(),
    })?;
    let journal_path = out.join(JOURNAL);
    // A resumed run reads its journal twice, entry by entry: here for the ids of the episodes to skip, and as
    // the writer starts for their rows, so that memory does not grow with the episodes finished.
    let journal = if resume {
        Some(scan_journal(&journal_path, &config_json)?)
    } else {
        None
    };
    let none = HashSet::new();
    let finished_ids = journal.as_ref().map_or(&none, |j| &j.ids);
    // With a real LLM each worker waits on the network: as many workers as requests may be in flight.
    let threads = config
        .llm
        .as_ref()
        .map_or_else(rayon::current_num_threads, |l| {
            l.max_concurrency.max(rayon::current_num_threads())
        });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::Config(format!("cannot start {threads} worker threads: {e}")))?;
    let episodes = stream(dataset)?;
    // A real LLM's client is checked (its key, its cache) before anything is written.
    let openai = config.llm.clone().map(OpenAiLlm::new).transpose()?;
    let window = Window::new(threads.max(1) * 8);
    let checkpoint_every = threads.max(1) * 4;

    std::thread::scope(|scope| {
        // Stops the reader and the workers however this scope is left.
        let _stop = window.stop_on_drop();
        // The dataset is hashed, read and validated while the vocabulary loads.
        let sha256 = scope.spawn(|| dataset_sha256(dataset));
        let (episode_tx, episode_rx) = std::sync::mpsc::sync_channel(window.size);
        let window = &window;
        scope.spawn(move || read_episodes(episodes, finished_ids, window, &episode_tx));
        let (result_tx, result_rx) = std::sync::mpsc::channel::<(usize, Result<Replayed>)>();
        // Episodes replay on the pool as they arrive, each on the first free worker; results come back
        // tagged with their place in the dataset.
        let workers = scope.spawn(move || -> Result<()> {
            let tokenizer = Arc::new(Tokenizer::new(
                config.tokenizer.encoding,
                config.tokenizer.backend,
            )?);
            let llm: Box<dyn Llm> = match openai {
                Some(l) => Box::new(l),
                None => Box::new(MockLlm::new(config.mock.clone(), Arc::clone(&tokenizer))),
            };
            let replayer = Replayer::new(tokenizer, llm.as_ref(), config.context_window);
            pool.install(|| {
                episode_rx.into_iter().par_bridge().for_each_with(
                    result_tx,
                    |tx, (index, episode): (usize, Result<Episode>)| {
                        if window.stopped() {
                            return;
                        }
                        let replayed = episode.and_then(|ep| {
                            replay_episode(&replayer, &ep, &config.strategies).map(|r| (ep, r))
                        });
                        // The receiver is gone only when the run has stopped.
                        let _ = tx.send((index, replayed));
                    },
                );
            });
            Ok(())
        });

        let sha256 = sha256
            .join()
            .unwrap_or_else(|_| Err(Error::Config("hashing the dataset panicked".into())))?;
        let mut state = State::start(
            config,
            dataset,
            out,
            name,
            &config_json,
            sha256,
            journal.as_ref(),
        )?;
        // Results are written in dataset order: the ones that arrive early wait here.
        let mut early: BTreeMap<usize, Result<Replayed>> = BTreeMap::new();
        let mut next = 0;
        for (index, replayed) in result_rx {
            early.insert(index, replayed);
            while let Some(replayed) = early.remove(&next) {
                next += 1;
                window.advance(next);
                let (episode, replays) = match replayed {
                    Ok(r) => r,
                    Err(e) => {
                        // A bad episode or a failing strategy stops the run here, after everything before
                        // it was written.
                        state.checkpoint(true)?;
                        return Err(e);
                    }
                };
                state.add(&episode, replays)?;
                progress.advance(1);
                if state.done.len() >= checkpoint_every {
                    state.checkpoint(false)?;
                }
            }
        }
        // The workers end when the dataset does, or at once when they could not start.
        workers
            .join()
            .unwrap_or_else(|_| Err(Error::Config("a replay worker panicked".into())))?;
        state.report.complete = true;
        state.checkpoint(true)?;
        state.journal.finish()?;
        Ok(RunOutcome {
            report: state.report,
            dir: out.to_owned(),
        })
    })
}

/// One episode's replays under every strategy, and its baseline replay.
type Replayed = (Episode, (Vec<EpisodeReplay>, EpisodeReplay));

/// How far the reader may run ahead of the writer, in episodes: memory stays bounded whatever one slow episode
/// holds up. Also how the writer tells the reader and the workers to stop.
struct Window {
    size: usize,
    /// (episodes written, stopped)
    state: std::sync::Mutex<(usize, bool)>,
    moved: std::sync::Condvar,
}

impl Window {
    fn new(size: usize) -> Self {
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
    fn advance(&self, written: usize) {
        self.update(|s| s.0 = written);
    }

    fn stopped(&self) -> bool {
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

    fn stop_on_drop(&self) -> impl Drop + '_ {
        struct Stop<'a>(&'a Window);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.update(|s| s.1 = true);
            }
        }
        Stop(self)
    }
}

/// Reads, validates and sends the episodes to replay, numbered in dataset order; stops after the first bad
/// one, which is sent as the error it is.
fn read_episodes(
    episodes: impl Iterator<Item = Result<(PathBuf, usize, Episode)>>,
    skip: &HashSet<String>,
    window: &Window,
    tx: &std::sync::mpsc::SyncSender<(usize, Result<Episode>)>,
) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut index = 0;
    for res in episodes {
        let checked = res.and_then(|(file, line, ep)| {
            if let Some(issue) = check_episode(&ep).into_iter().next() {
                return Err(Error::Invalid {
                    path: file,
                    line,
                    episode: ep.id,
                    message: format!(
                        "{}: {} (run `ctxbench validate` for every problem)",
                        issue.field, issue.message
                    ),
                });
            }
            if !seen.insert(ep.id.clone()) {
                return Err(Error::Invalid {
                    path: file,
                    line,
                    episode: ep.id,
                    message: "duplicate episode id: every episode of a run needs its own id".into(),
                });
            }
            Ok(ep)
        });
        if checked.as_ref().is_ok_and(|ep| skip.contains(&ep.id)) {
            continue;
        }
        let failed = checked.is_err();
        if !window.admit(index) || tx.send((index, checked)).is_err() || failed {
            return;
        }
        index += 1;
    }
}

/// What the writer holds: the report so far, the open files, and the finished episodes not yet journaled.
struct State<'a> {
    config: &'a RunConfig,
    config_json: &'a serde_json::Value,
    prices: Prices,
    sha256: String,
    report: RunReport,
    steps: RowsWriter,
    episodes: RowsWriter,
    journal: Journal,
    exports: ExportManager,
    totals: Totals,
    /// The peak baseline context so far: its episode is drawn step by step in the charts.
    largest: usize,
    done: Vec<Finished>,
    /// When the tables are next rewritten at a checkpoint: [`TABLES_FIRST`] after the run starts, then
    /// [`TABLES_EVERY`] after each write. A run shorter than that writes them once, when it ends or stops.
    tables_due: std::time::Instant,
}

/// What the tables need of the episodes finished so far, in constant memory: each strategy's running totals
/// and compute-time histogram (config order), and the baseline's totals.
struct Totals {
    strategies: Vec<(String, StrategyTotals, hdrhistogram::Histogram<u64>)>,
    baseline: StrategyTotals,
}

impl Totals {
    fn new(strategies: &[NamedStrategy]) -> Self {
        Self {
            strategies: strategies
                .iter()
                .map(|s| {
                    // Three significant digits: a percentile is off by at most 0.1%, far below run-to-run noise.
                    let histogram = hdrhistogram::Histogram::new(3)
                        .expect("three significant digits are within hdrhistogram's range");
                    (s.name.clone(), StrategyTotals::default(), histogram)
                })
                .collect(),
            baseline: StrategyTotals::default(),
        }
    }

    /// Adds a finished episode (a strategy the config does not name has no totals: the journal's config is this
    /// run's).
    fn add(&mut self, f: &Finished) {
        self.baseline.add(&f.baseline);
        for row in &f.rows {
            if let Some((_, totals, _)) = self.strategies.iter_mut().find(|s| s.0 == row.strategy) {
                totals.add(row);
            }
        }
        for (strategy, times) in &f.compute {
            if let Some((_, _, histogram)) = self.strategies.iter_mut().find(|s| &s.0 == strategy) {
                for &us in times {
                    // In nanoseconds; the histogram grows to any value, so a record cannot fail.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let _ = histogram.record((us * 1e3).round() as u64);
                }
            }
        }
    }

    /// Sets the report's per-strategy metrics and timings.
    fn write_into(&self, report: &mut RunReport) {
        let baseline_cost = self.baseline.cost_usd();
        report.strategies = self
            .strategies
            .iter()
            .map(|(name, totals, _)| totals.metrics(name, baseline_cost))
            .collect();
        #[allow(clippy::cast_precision_loss)]
        let us = |h: &hdrhistogram::Histogram<u64>, q: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(q) as f64 / 1e3
            }
        };
        report.timings = self
            .strategies
            .iter()
            .map(|(name, _, h)| (name.clone(), us(h, 0.5), us(h, 0.95)))
            .collect();
    }
}

/// Tables are rewritten at most this often while a run goes on (each write is as long as the run so far).
const TABLES_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a run goes on before its tables are first written at a checkpoint: a run of a second or less
/// writes them once, at its end.
const TABLES_FIRST: std::time::Duration = std::time::Duration::from_secs(1);

impl<'a> State<'a> {
    #[allow(clippy::too_many_arguments)]
    fn start(
        config: &'a RunConfig,
        dataset: &Path,
        out: &Path,
        name: &str,
        config_json: &'a serde_json::Value,
        sha256: String,
        journal: Option<&JournalHead>,
    ) -> Result<Self> {
        let journal_path = out.join(JOURNAL);
        let steps = if let Some(journal) = journal {
            if journal.sha256.as_ref().is_some_and(|s| *s != sha256) {
                return Err(Error::Config(format!(
                    "cannot resume the run in '{}': the dataset '{}' changed since it started",
                    out.display(),
                    dataset.display()
                )));
            }
            RowsWriter::resume(&out.join("steps.csv"), &journal.ids)?
        } else {
            RowsWriter::create(&out.join("steps.csv"))?
        };
        // Rewritten from the journal, which holds the rows of every finished episode.
        let episodes = RowsWriter::create(&out.join("episodes.csv"))?;
        let mut state = Self {
            config,
            config_json,
            prices: config.prices(),
            report: RunReport {
                version: SUMMARY_VERSION,
                tool_version: env!("CARGO_PKG_VERSION").into(),
                run: name.into(),
                complete: false,
                dataset: DatasetInfo {
                    path: dataset.display().to_string(),
                    sha256: sha256.clone(),
                    episodes: 0,
                    items: 0,
                },
                config: config_json.clone(),
                strategies: Vec::new(),
                notes: standard_notes(),
                timings: Vec::new(),
                charts: ChartData::default(),
            },
            sha256,
            steps,
            journal: Journal::open(&journal_path, journal.map(|j| j.len))?,
            exports: ExportManager::standard(out),
            episodes,
            totals: Totals::new(&config.strategies),
            largest: 0,
            done: Vec::new(),
            tables_due: std::time::Instant::now() + TABLES_FIRST,
        };
        // What an interrupted run finished comes back as it was, one entry at a time.
        if let Some(journal) = journal {
            read_journal(&journal_path, journal.len, |f: Finished| {
                state.report.dataset.episodes += 1;
                state.report.dataset.items += f.items;
                state.totals.add(&f);
                for row in &f.rows {
                    state.episodes.write(&EpisodeRow::from(row))?;
                }
                if let Some(chart) = f.chart.filter(|_| f.peak > state.largest) {
                    state.largest = f.peak;
                    state.report.charts = chart;
                }
                Ok(())
            })?;
        }
        Ok(state)
    }

    /// Adds one replayed episode: its step rows, metrics and chart series.
    fn add(
        &mut self,
        ep: &Episode,
        (replays, baseline): (Vec<EpisodeReplay>, EpisodeReplay),
    ) -> Result<()> {
        let prices = &self.prices;
        self.report.dataset.episodes += 1;
        self.report.dataset.items += ep.items.len();
        let mut entry = Finished {
            episode: ep.id.clone(),
            sha256: self.sha256.clone(),
            items: ep.items.len(),
            rows: Vec::with_capacity(replays.len()),
            baseline: episode_metrics(&baseline, &baseline, prices),
            peak: 0,
            compute: Vec::with_capacity(replays.len()),
            chart: None,
        };
        for r in &replays {
            for s in &r.steps {
                self.steps
                    .write(&StepRow::new(&r.episode, &r.strategy, s, prices))?;
            }
            let times: Vec<f64> = r.steps.iter().map(|s| s.compute_us).collect();
            entry.compute.push((r.strategy.clone(), times));
            let row = episode_metrics(r, &baseline, prices);
            self.episodes.write(&EpisodeRow::from(&row))?;
            entry.rows.push(row);
        }
        self.totals.add(&entry);
        entry.peak = baseline
            .steps
            .iter()
            .map(|s| s.tokens_sent)
            .max()
            .unwrap_or(0);
        if entry.peak > self.largest {
            self.largest = entry.peak;
            self.report.charts = chart_data(&ep.id, self.config.context_window, &replays, prices);
            entry.chart = Some(self.report.charts.clone());
        }
        self.done.push(entry);
        Ok(())
    }

    /// Flushes the step rows and journals the episodes finished since the last call, then rewrites the tables
    /// when `tables` is set or when they are due (see [`State::tables_due`]).
    fn checkpoint(&mut self, tables: bool) -> Result<()> {
        self.steps.flush()?;
        self.episodes.flush()?;
        // The journal is written after the rows it vouches for, and before the tables.
        self.journal
            .append(self.config_json, &std::mem::take(&mut self.done))?;
        if tables || std::time::Instant::now() >= self.tables_due {
            self.totals.write_into(&mut self.report);
            self.exports.write_all(&self.report)?;
            self.tables_due = std::time::Instant::now() + TABLES_EVERY;
        }
        Ok(())
    }
}

/// The journal of a run in progress, beside its tables: a first line with the configuration, then one line per
/// finished episode with everything the tables need from it. `run --resume` reads it back; a completed run
/// removes it.
const JOURNAL: &str = "resume.jsonl";

/// One finished episode, as journaled.
#[derive(Serialize, Deserialize)]
struct Finished {
    episode: String,
    sha256: String,
    items: usize,
    rows: Vec<EpisodeMetrics>,
    baseline: EpisodeMetrics,
    peak: usize,
    compute: Vec<(String, Vec<f64>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chart: Option<ChartData>,
}

/// The journal file being written.
struct Journal {
    file: std::fs::File,
    path: PathBuf,
    fresh: bool,
}

impl Journal {
    /// Starts a journal, or continues one after its first `whole` bytes (the lines [`scan_journal`] read whole: a
    /// line cut short by a crash goes, so that the next entry starts a line of its own).
    fn open(path: &Path, whole: Option<u64>) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(whole.is_some())
            .write(true)
            .truncate(whole.is_none())
            .open(path)
            .map_err(|e| Error::io("open", path, e))?;
        if let Some(len) = whole {
            file.set_len(len)
                .map_err(|e| Error::io("truncate", path, e))?;
        }
        Ok(Self {
            file,
            path: path.to_owned(),
            // Without a whole first line, the configuration is written again.
            fresh: whole.is_none_or(|len| len == 0),
        })
    }

    fn append(&mut self, config: &serde_json::Value, done: &[Finished]) -> Result<()> {
        use std::io::Write as _;
        let mut text = String::new();
        if std::mem::take(&mut self.fresh) {
            text.push_str(&config.to_string());
            text.push('\n');
        }
        for f in done {
            let line = serde_json::to_string(f).map_err(|e| Error::Serialize {
                what: "resume journal",
                message: e.to_string(),
            })?;
            text.push_str(&line);
            text.push('\n');
        }
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::io("write", &self.path, e))
    }

    fn finish(self) -> Result<()> {
        std::fs::remove_file(&self.path).map_err(|e| Error::io("remove", &self.path, e))
    }
}

/// What `run --resume` reads from the journal before the replay starts.
struct JournalHead {
    /// The episodes finished.
    ids: HashSet<String>,
    /// The hash of the dataset they were replayed from.
    sha256: Option<String>,
    /// Bytes of the journal's whole lines: the configuration and every entry before the first line a crash cut
    /// short (that batch is redone).
    len: u64,
}

/// An entry's episode and dataset hash, read without its rows.
#[derive(Deserialize)]
struct FinishedId {
    episode: String,
    sha256: String,
}

/// Checks the journal's configuration against this run's and reads which episodes it holds.
fn scan_journal(path: &Path, config: &serde_json::Value) -> Result<JournalHead> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Config(format!(
                "nothing to resume: '{}' is missing (the run completed, or never wrote a batch)",
                path.display()
            )))
        }
        Err(e) => return Err(Error::io("read", path, e)),
    };
    let mut head = JournalHead {
        ids: HashSet::new(),
        sha256: None,
        len: 0,
    };
    let mut lines = journal_lines(path, file, None);
    match lines.next().transpose()? {
        Some((_, line, end)) => {
            let value: serde_json::Value =
                serde_json::from_str(&line).map_err(|e| Error::Parse {
                    path: path.to_owned(),
                    line: 1,
                    message: e.to_string(),
                })?;
            if value != *config {
                return Err(Error::Config(format!(
                    "cannot resume the run in '{}': its configuration differs from this one (run with the same \
                     --config, --strategies and --window)",
                    path.parent().unwrap_or(path).display()
                )));
            }
            head.len = end;
        }
        None => return Ok(head),
    }
    for line in lines {
        let (number, line, end) = line?;
        let Some(f) = parse_entry::<FinishedId>(path, number, &line)? else {
            break;
        };
        head.sha256.get_or_insert(f.sha256);
        head.ids.insert(f.episode);
        head.len = end;
    }
    Ok(head)
}

/// Calls `entry` on each entry of the journal's first `whole` bytes, in order (the configuration line skipped).
fn read_journal(
    path: &Path,
    whole: u64,
    mut entry: impl FnMut(Finished) -> Result<()>,
) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    for line in journal_lines(path, file, Some(whole)).skip(1) {
        let (number, line, _) = line?;
        match parse_entry::<Finished>(path, number, &line)? {
            Some(f) => entry(f)?,
            None => break,
        }
    }
    Ok(())
}

/// One entry (line `number` of the journal), or `None` for a line a crash cut short.
fn parse_entry<T: serde::de::DeserializeOwned>(
    path: &Path,
    number: usize,
    line: &str,
) -> Result<Option<T>> {
    match serde_json::from_str::<T>(line) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.is_eof() => Ok(None),
        Err(e) => Err(Error::Parse {
            path: path.to_owned(),
            line: number,
            message: e.to_string(),
        }),
    }
}

/// The whole lines of a journal: (1-based number, text, the offset where the line ends), within its first
/// `whole` bytes when given. A last line without its newline was cut short by a crash and is not one.
fn journal_lines(
    path: &Path,
    file: std::fs::File,
    whole: Option<u64>,
) -> impl Iterator<Item = Result<(usize, String, u64)>> + '_ {
    use std::io::BufRead as _;
    let mut reader = std::io::BufReader::new(file.take(whole.unwrap_or(u64::MAX)));
    let (mut number, mut end) = (0usize, 0u64);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let mut buf = Vec::new();
        let line = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) if buf.last() != Some(&b'\n') => return None,
            Ok(n) => {
                number += 1;
                end += u64::try_from(n).unwrap_or(u64::MAX);
                buf.pop();
                String::from_utf8(buf)
                    .map(|text| (number, text, end))
                    .map_err(|e| Error::Parse {
                        path: path.to_owned(),
                        line: number,
                        message: format!("not UTF-8: {e}"),
                    })
            }
            Err(e) => Err(Error::io("read", path, e)),
        };
        failed = line.is_err();
        Some(line)
    })
}

/// The per-step series of one episode's replays.
fn chart_data(
    episode: &str,
    context_window: usize,
    replays: &[EpisodeReplay],
    prices: &Prices,
) -> ChartData {
    ChartData {
        episode: episode.to_owned(),
        context_window,
        series: replays
            .iter()
            .map(|r| {
                let mut series = StepSeries {
                    strategy: r.strategy.clone(),
                    ..StepSeries::default()
                };
                for s in &r.steps {
                    series.push(
                        s.tokens_sent,
                        s.findings_introduced,
                        s.findings_retained,
                        prices.step_cost(s),
                    );
                }
                series
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// A crash can cut the journal's last line short: a resume reads the lines before it, and the entries it
    /// journals start on a line of their own, so that the next resume reads them too.
    #[test]
    fn a_journal_line_cut_short_is_dropped_before_the_next_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let config = serde_json::json!({"seed": 42});
        let entry = |id: &str| format!("{{\"episode\":\"{id}\",\"sha256\":\"abc\"}}\n");
        let whole = format!("{config}\n{}{}", entry("a"), entry("b"));
        std::fs::write(&path, format!("{whole}{{\"episode\":\"c\",\"sha2")).unwrap();

        let head = scan_journal(&path, &config).unwrap();
        let ids = |h: &JournalHead| {
            let mut ids: Vec<String> = h.ids.iter().cloned().collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(&head), ["a", "b"]);
        assert_eq!(head.sha256.as_deref(), Some("abc"));
        assert_eq!(head.len, whole.len() as u64);

        // The resumed run journals another episode: it follows the whole lines.
        let mut journal = Journal::open(&path, Some(head.len)).unwrap();
        assert!(!journal.fresh, "the configuration line is kept");
        journal.file.write_all(entry("d").as_bytes()).unwrap();
        drop(journal);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{whole}{}", entry("d"))
        );
        assert_eq!(ids(&scan_journal(&path, &config).unwrap()), ["a", "b", "d"]);

        // Another configuration, or a line that is whole but wrong, is an error naming the file.
        let other = serde_json::json!({"seed": 7});
        let err = scan_journal(&path, &other).err().unwrap().to_string();
        assert!(err.contains("configuration differs"), "{err}");
        std::fs::write(&path, format!("{whole}{{\"episode\": 3}}\n")).unwrap();
        let err = scan_journal(&path, &config).err().unwrap().to_string();
        assert!(err.contains(JOURNAL) && err.contains("at line 4:"), "{err}");

        // A journal without a whole first line holds nothing, and its configuration is written again.
        std::fs::write(&path, "{\"seed\":").unwrap();
        let head = scan_journal(&path, &config).unwrap();
        assert!(head.ids.is_empty() && head.len == 0);
        assert!(Journal::open(&path, Some(head.len)).unwrap().fresh);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }
}
