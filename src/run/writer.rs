//! The writer of a run: it takes finished episodes in dataset order, computes their metrics, appends their
//! rows, keeps each strategy's running totals, journals what it finished, and rewrites the tables.

use std::path::Path;
use std::sync::Arc;

use super::analyze::{empty_totals, Totals};
use super::config::{RunConfig, SUMMARY_VERSION};
use super::journal::{read_journal, Finished, Journal, JournalHead, JOURNAL};
use super::pipeline::Replays;
use super::CallLog;
use crate::error::{Error, Result};
use crate::history::Episode;
use crate::metrics::series::ChartData;
use crate::metrics::{Catalog, EpisodeResult};
use crate::report::{standard_notes, DatasetInfo, ExportManager, RunReport, Tables};

/// Tables are rewritten at most this often while a run goes on (each write is as long as the run so far).
const TABLES_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a run goes on before its tables are first written at a checkpoint: a run of a second or less
/// writes them once, at its end.
const TABLES_FIRST: std::time::Duration = std::time::Duration::from_secs(1);

/// What the writer holds: the report so far, the exporters, the running totals, and the finished episodes
/// not yet journaled.
pub(super) struct Writer<'a> {
    config: &'a RunConfig,
    config_json: &'a serde_json::Value,
    /// How each episode's model, price and window are taken.
    defaults: crate::llm::pricing::Defaults,
    catalog: Arc<Catalog>,
    sha256: String,
    pub(super) report: RunReport,
    exports: ExportManager,
    journal: Journal,
    /// Each strategy's running totals, compute times and LLM call times, in config order.
    totals: Vec<Totals>,
    /// The peak baseline context so far: its episode is drawn step by step in the charts.
    largest: usize,
    /// Finished episodes not journaled yet.
    pub(super) done: Vec<Finished>,
    /// When the tables are next rewritten at a checkpoint: [`TABLES_FIRST`] after the run starts, then
    /// [`TABLES_EVERY`] after each write. A run shorter than that writes them once, when it ends or stops.
    tables_due: std::time::Instant,
    /// Which calls `llm_calls.jsonl` holds.
    calls: CallLog,
}

/// Where a run writes and what it continues.
pub(super) struct Target<'a> {
    pub(super) dataset: &'a Path,
    pub(super) out: &'a Path,
    pub(super) name: &'a str,
    /// The dataset's SHA-256; empty for a shard, which does not hash the dataset.
    pub(super) sha256: String,
    pub(super) journal: Option<&'a JournalHead>,
    /// The row tables hold every row the journal vouches for already, and nothing else (a merge's): they are
    /// opened as they are, not read again to drop the rows of unfinished episodes.
    pub(super) complete_tables: bool,
    /// Which calls `llm_calls.jsonl` holds.
    pub(super) calls: CallLog,
}

/// The report of a run before any episode: its identity, dataset, configuration and settings.
fn empty_report(
    config: &RunConfig,
    config_json: &serde_json::Value,
    name: &str,
    dataset: &Path,
    sha256: &str,
) -> RunReport {
    RunReport {
        version: SUMMARY_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        run: name.into(),
        complete: false,
        dataset: DatasetInfo {
            path: dataset.display().to_string(),
            sha256: sha256.to_owned(),
            lines_xxh3: None,
            episodes: 0,
            items: 0,
        },
        config: config_json.clone(),
        settings: config.report_settings(),
        tokenizer: config.tokenizer_info(),
        fidelity: Vec::new(),
        models: Vec::new(),
        strategies: Vec::new(),
        recommendation: None,
        analysis: crate::report::analysis::Analysis::empty(
            super::analyze::rule(config),
            config.context_window as u64,
        ),
        most_lost: Vec::new(),
        comparisons: Vec::new(),
        examples: Vec::new(),
        failed: Vec::new(),
        notes: {
            let mut notes = standard_notes();
            notes.push(strategy_model_note(config));
            notes
        },
        timings: Vec::new(),
        charts: ChartData::default(),
        pages: Vec::new(),
    }
}

impl<'a> Writer<'a> {
    /// Opens the run directory: new tables, or those of the interrupted run being resumed, whose finished
    /// episodes come back into the totals from the journal, one entry at a time.
    pub(super) fn start(
        config: &'a RunConfig,
        config_json: &'a serde_json::Value,
        target: Target<'_>,
    ) -> Result<Self> {
        let Target {
            dataset,
            out,
            name,
            sha256,
            journal,
            complete_tables,
            calls,
        } = target;
        if let Some(head) = journal {
            if head.sha256.as_ref().is_some_and(|s| *s != sha256) {
                return Err(Error::Config(format!(
                    "cannot resume the run in '{}': the dataset '{}' changed since it started",
                    out.display(),
                    dataset.display()
                )));
            }
        }
        let catalog = Arc::new(Catalog::standard());
        let mut exports = ExportManager::standard(out, &catalog);
        exports.open_tables(&match journal {
            None => Tables::New,
            Some(_) if complete_tables => Tables::Complete,
            Some(j) => Tables::Resumed(&j.ids),
        })?;
        let journal_path = out.join(JOURNAL);
        let mut writer = Self {
            config,
            config_json,
            defaults: config.model_defaults(),
            totals: empty_totals(config, &catalog),
            catalog,
            report: empty_report(config, config_json, name, dataset, &sha256),
            sha256,
            exports,
            journal: Journal::open(&journal_path, journal.map(|j| j.len))?,
            largest: 0,
            done: Vec::new(),
            tables_due: std::time::Instant::now() + TABLES_FIRST,
            calls,
        };
        if let Some(head) = journal {
            read_journal(&journal_path, head.len, |f: Finished| {
                writer.count(&f.result);
                if let Some(chart) = f.chart.filter(|_| f.result.peak_tokens > writer.largest) {
                    writer.largest = f.result.peak_tokens;
                    writer.report.charts = chart;
                }
                Ok(())
            })?;
        }
        Ok(writer)
    }

    /// Adds an episode's replay against its recorded usage to its format's.
    fn add_fidelity(&mut self, result: &EpisodeResult) {
        let format = result.fidelity.format();
        let at = match self
            .report
            .fidelity
            .binary_search_by(|f| f.format.as_str().cmp(format))
        {
            Ok(at) => at,
            Err(at) => {
                self.report.fidelity.insert(
                    at,
                    crate::metrics::fidelity::FormatFidelity {
                        format: format.to_owned(),
                        ..Default::default()
                    },
                );
                at
            }
        };
        self.report.fidelity[at].add(&result.fidelity);
    }

    /// Adds a finished episode to the totals and the dataset's counts.
    fn count(&mut self, result: &EpisodeResult) {
        self.report.dataset.episodes += 1;
        self.report.dataset.items += result.items;
        // Episodes whose trace names no model are the configuration's agent model, as the settings say.
        if let Some(model) = result.model.as_ref().filter(|m| m.recorded) {
            crate::llm::pricing::ModelGroup::add(
                &mut self.report.models,
                &result.episode,
                model,
                result.recorded_cost,
            );
            // The tokenizer stands in for the traces' model, when it is not that model's own.
            if self.report.tokenizer.stands_in_for.is_none() {
                self.report.tokenizer.stands_in_for = self.config.stand_in_for(&model.model);
            }
        }
        // Generated episodes record no usage and claim none: nothing to check.
        if !result.fidelity.source.starts_with("gen/") || result.fidelity.has_usage {
            self.add_fidelity(result);
        }
        for m in &result.strategies {
            // A strategy the config does not name has no totals: a journal's config is this run's.
            if let Some((_, totals, _, _)) = self.totals.iter_mut().find(|t| t.0 == m.strategy) {
                totals.add(m, &result.baseline);
            }
        }
        for example in &result.examples {
            if !self
                .report
                .examples
                .iter()
                .any(|e| e.strategy == example.strategy)
            {
                self.report.examples.push(example.clone());
            }
        }
        for lost in &result.lost {
            crate::report::keep_most_lost(&mut self.report.most_lost, lost);
        }
        for (strategy, times) in &result.compute_us {
            if let Some((_, _, histogram, _)) = self.totals.iter_mut().find(|t| &t.0 == strategy) {
                for &us in times {
                    histogram.record(us);
                }
            }
        }
        for (strategy, times) in &result.llm_ms {
            if let Some((_, _, _, histogram)) = self.totals.iter_mut().find(|t| &t.0 == strategy) {
                for &ms in times {
                    histogram.record(ms * 1e3);
                }
            }
        }
    }

    /// Leaves out an episode whose LLM call failed (under `--keep-going`): named in the report, in no figure,
    /// not journaled (a resumed run tries it again).
    pub(super) fn fail(&mut self, episode: String, error: String) {
        self.report
            .failed
            .push(crate::report::FailedEpisode { episode, error });
    }

    /// Adds one replayed episode: its metrics, rows and chart series; `line` is a shard's hash of its line
    /// ([`crate::history::dataset::line_hash`]), journaled instead of the dataset's SHA-256.
    pub(super) fn add(
        &mut self,
        episode: &Episode,
        line: Option<u128>,
        replayed: &Replays,
    ) -> Result<()> {
        let replays = &replayed.replays;
        let (context, model) = self.config.episode_context(&self.defaults, episode);
        let mut result = self.catalog.episode_result(
            episode,
            replays,
            replayed.baseline(),
            replayed.compared(episode),
            &context,
        );
        // The mock stood in for the episode's own model where the config names none for the strategies.
        if self.config.strategy_model().is_none() {
            label_mock_calls(&mut result, &model.model);
        }
        result.model = Some(model);
        result.recorded_cost = crate::llm::pricing::RecordedCost::of(
            episode,
            &replayed.baseline().steps,
            |k| context.prices.agent_at(k),
            |s| context.prices.step_cost(s),
        );
        if self.calls != CallLog::All {
            let keep = self.calls;
            for (_, calls) in &mut result.calls {
                calls.retain(|c| keep.keeps(c));
            }
        }
        self.exports.append(&result)?;
        // The rows are in the tables now; the journal keeps the rest.
        result.steps = Vec::new();
        result.ledger = Vec::new();
        result.calls = Vec::new();
        self.count(&result);
        let chart = (result.peak_tokens > self.largest).then(|| {
            self.largest = result.peak_tokens;
            self.report.charts = ChartData::of_episode(episode, replays, &context);
            self.report.charts.clone()
        });
        self.done.push(Finished {
            sha256: line.is_none().then(|| self.sha256.clone()),
            line_xxh3: line.map(|hash| format!("{hash:032x}")),
            result,
            chart,
        });
        Ok(())
    }

    /// Flushes the rows and journals the episodes finished since the last call, then rewrites the tables when
    /// `tables` is set or when they are due (see [`Writer::tables_due`]).
    pub(super) fn checkpoint(&mut self, tables: bool) -> Result<()> {
        self.exports.flush_tables()?;
        // The journal is written after the rows it vouches for, and before the tables.
        self.journal
            .append(self.config_json, &std::mem::take(&mut self.done))?;
        if tables || std::time::Instant::now() >= self.tables_due {
            let analysis = super::analyze::analyze(
                &self.totals,
                &self.catalog,
                self.config,
                &self.report.dataset.path,
                &self.report.models,
            )?;
            self.report.strategies = analysis.strategies;
            self.report.recommendation = analysis.recommendation;
            self.report.analysis = analysis.decided;
            self.report.comparisons = analysis.comparisons;
            self.report.timings = analysis.timings;
            self.exports.write_all(&self.report)?;
            self.tables_due = std::time::Instant::now() + TABLES_EVERY;
        }
        Ok(())
    }

    /// Ends the run: the last tables, then the journal goes.
    /// Episodes left out under `--keep-going` leave the run incomplete, its journal kept: `--resume` tries
    /// them again.
    pub(super) fn finish(mut self) -> Result<RunReport> {
        self.report.complete = self.report.failed.is_empty();
        self.checkpoint(true)?;
        if self.report.complete {
            if self.config_json.get("shard").is_some() {
                // A shard keeps its entries for `ctxbench merge`.
                self.journal.keep_as(super::shard::SHARD_FILE)?;
            } else {
                self.journal.finish()?;
            }
        }
        Ok(self.report)
    }
}

/// Labels the calls the mock answered without a model named ([`crate::llm::mock::UNNAMED`]), and the example
/// summaries it wrote, with the model it stood in for: the episode's own.
fn label_mock_calls(result: &mut crate::metrics::EpisodeResult, model: &str) {
    let unnamed = crate::llm::mock::UNNAMED;
    let calls = result.calls.iter_mut().flat_map(|(_, c)| c.iter_mut());
    for c in calls.filter(|c| c.model == unnamed) {
        model.clone_into(&mut c.model);
    }
    for e in result.examples.iter_mut().filter(|e| e.model == unnamed) {
        model.clone_into(&mut e.model);
    }
}

/// The report's note on what the strategies' own calls are priced as.
fn strategy_model_note(config: &RunConfig) -> String {
    match config.strategy_model() {
        Some(m) if config.llm.is_none() => format!(
            "The strategies' own calls (summaries) are priced as {m}, which the mock LLM stands in for."
        ),
        Some(m) => format!("The strategies' own calls (summaries) are priced as {m}."),
        None => "The strategies' own calls (summaries) are priced as each episode's own model, which the mock \
                 LLM stands in for (`[pricing] strategy_model` names another)."
            .to_owned(),
    }
}
