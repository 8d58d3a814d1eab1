//! Metrics: every figure ctxbench reports, computed from replay records by pure functions, and defined once.
//!
//! Each quantity belongs to one [`Metric`], which declares its values at the two levels a replay measures —
//! a step of `steps.csv`, an episode of `episodes.csv` — as named [`Slot`]s (with unit and meaning for those
//! that are columns), computes them by name ([`Values::put`]), and says how episode values aggregate into a
//! strategy's figures ([`Agg`], naming the slots it reads). The [`Catalog`] lists the metrics, checks their
//! declarations and resolves the names once; the CSV headers, the JSON fields, the running totals and the
//! journal's layout digest all derive from it. Values are JSON values, so a figure is written the same way to
//! CSV and JSON, and per-kind figures are keyed by the kind's name, never by position. Outside the metrics,
//! strategy fields are read through the typed keys of [`fields`].
//!
//! **Adding a metric**: one file implementing [`Metric`], and one line in [`Catalog::standard`]
//! (docs/architecture.md, "A metric").
//!
//! Definitions (DESIGN.md "Metrics"): savings = 1 − input tokens / baseline input tokens on the same episodes;
//! cost = the agent's calls (the prefix equal to the previous request priced as cached input) plus the
//! strategy's calls; retention = share of the findings introduced so far whose evidence is all in the request
//! as sent.

pub mod acted;
pub mod aggregate;
pub mod bootstrap;
#[cfg(test)]
mod by_hand;
mod catalog;
pub mod cost;
pub mod failed;
pub mod fidelity;
pub mod fields;
pub mod figures;
pub mod floor;
pub mod intervals;
pub mod judge;
pub mod llm_use;
pub mod needs;
pub mod probes;
pub mod retention;
pub mod series;
pub mod slot;
pub mod slots;
pub mod timing;
pub mod token_share;
pub mod tokens;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use aggregate::{float, maybe, Agg, Totals};
pub use catalog::Catalog;
pub use cost::Prices;
pub use fields::FieldKey;
pub use slots::{Name, Slot, Values};

use crate::history::Episode;
use crate::replay::{EpisodeReplay, StepRecord};

/// What a column's numbers count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A number of things (steps, items, calls).
    Count,
    /// Tokens.
    Tokens,
    /// US dollars.
    Usd,
    /// Milliseconds.
    Ms,
    /// A share in [0, 1] (reports show it as a percentage).
    Share,
    /// True or false.
    Flag,
}

impl Unit {
    /// The unit as the report's glossary names it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Tokens => "tokens",
            Self::Usd => "USD",
            Self::Ms => "ms",
            Self::Share => "share (0–1)",
            Self::Flag => "true or false",
        }
    }
}

/// One named quantity as a report shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The CSV column or JSON field name.
    pub name: String,
    /// What its numbers count.
    pub unit: Unit,
    /// What it means, in a sentence (the report's glossary).
    pub doc: String,
}

impl Column {
    /// A column.
    pub fn new(name: impl Into<String>, unit: Unit, doc: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            unit,
            doc: doc.into(),
        }
    }
}

/// A strategy field: a column and how it aggregates the metric's episode values.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field.
    pub column: Column,
    /// How it is computed over episodes.
    pub agg: Agg,
}

impl Field {
    /// A field.
    pub fn new(name: impl Into<String>, unit: Unit, doc: impl Into<String>, agg: Agg) -> Self {
        Self {
            column: Column::new(name, unit, doc),
            agg,
        }
    }
}

/// What an episode's metrics need besides the records.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// The agent's and the strategies' prices.
    pub prices: Prices,
    /// The agent model's context window, in tokens (the episode's: [`crate::llm::pricing::Defaults`]).
    pub context_window: usize,
}

/// One step, with what its metrics may read.
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    /// The episode.
    pub episode: &'a Episode,
    /// The step.
    pub step: &'a StepRecord,
    /// The run's context.
    pub context: &'a Context,
}

/// One episode under one strategy, with its baseline replay and what its metrics may read.
#[derive(Debug, Clone, Copy)]
pub struct EpisodeView<'a> {
    /// The episode.
    pub episode: &'a Episode,
    /// The strategy's replay.
    pub replay: &'a EpisodeReplay,
    /// The baseline's replay of the same episode.
    pub baseline: &'a EpisodeReplay,
    /// The run's context.
    pub context: &'a Context,
    /// The strategy's loss ledger ([`needs::ledger`]) when the caller has it, computed once per episode and
    /// strategy for every metric that reads it; a metric computes it when it is absent.
    pub ledger: Option<&'a [needs::NeedRow]>,
}

impl EpisodeView<'_> {
    /// The view of each step.
    pub fn steps(&self) -> impl Iterator<Item = StepView<'_>> + '_ {
        self.replay.steps.iter().map(|step| StepView {
            episode: self.episode,
            step,
            context: self.context,
        })
    }
}

/// A group of quantities: their values at each level, named once, how to compute them, how they aggregate.
pub trait Metric: Send + Sync {
    /// The metric's name in error messages (its type's).
    fn name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    /// The values this metric computes per step, each a column of `steps.csv`.
    fn step_slots(&self) -> Vec<Slot> {
        Vec::new()
    }

    /// The values of one step: one per step slot, in order, each put by its slot's name.
    fn step_values(&self, step: &StepView<'_>, out: &mut Values<'_>) {
        let _ = (step, out);
    }

    /// The values this metric computes per episode: the columns it adds to `episodes.csv`, and any its
    /// aggregations need besides ([`Slot::kept`]).
    fn episode_slots(&self) -> Vec<Slot>;

    /// The values of one episode: one per episode slot, in order, each put by its slot's name.
    fn episode_values(&self, episode: &EpisodeView<'_>, out: &mut Values<'_>);

    /// The fields this metric adds to a strategy's results, each aggregating episode slots it names.
    fn strategy_fields(&self) -> Vec<Field>;

    /// Episode slots whose bootstrap replicates the totals keep besides those its interval fields read (for
    /// paired differences between strategies).
    fn replicated(&self) -> Vec<Name> {
        Vec::new()
    }
}

/// Each strategy's first summary in the episode, as its model wrote it.
fn examples(
    episode: &str,
    calls: &[(String, Vec<crate::replay::calls::CallRecord>)],
) -> Vec<ExampleCall> {
    calls
        .iter()
        .filter_map(|(strategy, calls)| {
            let c = calls.iter().find(|c| {
                c.purpose == crate::replay::calls::Purpose::Strategy && !c.text.is_empty()
            })?;
            Some(ExampleCall {
                strategy: strategy.clone(),
                episode: episode.to_owned(),
                step: c.step,
                model: c.model.clone(),
                text: c.text.clone(),
            })
        })
        .collect()
}

impl Catalog {
    /// What the metrics make of one finished episode: its step rows and metrics under every strategy of
    /// `replays` (in order), and the baseline's metrics; its fidelity is `compared`'s against the record (the
    /// replay [`fidelity::compared_strategy`] names).
    #[must_use]
    pub fn episode_result(
        &self,
        episode: &Episode,
        replays: &[EpisodeReplay],
        baseline: &EpisodeReplay,
        compared: &EpisodeReplay,
        context: &Context,
    ) -> EpisodeResult {
        let view = |replay| EpisodeView {
            episode,
            replay,
            baseline,
            context,
            ledger: None,
        };
        let steps = replays
            .iter()
            .map(|r| {
                let rows = view(r)
                    .steps()
                    .map(|s| StepRow {
                        step: s.step.step,
                        item_index: s.step.item_index,
                        values: self.step_values(&s),
                    })
                    .collect();
                (r.strategy.clone(), rows)
            })
            .collect();
        let mut calls: Vec<(String, Vec<crate::replay::calls::CallRecord>)> = replays
            .iter()
            .map(|r| (r.strategy.clone(), r.calls.clone()))
            .collect();
        if !replays.iter().any(|r| r.strategy == baseline.strategy) {
            calls.insert(0, (baseline.strategy.clone(), baseline.calls.clone()));
        }
        let examples = examples(&episode.id, &calls);
        let llm_ms = calls
            .iter()
            .map(|(strategy, calls)| {
                (
                    strategy.clone(),
                    calls.iter().map(|c| c.latency_ms).collect(),
                )
            })
            .collect();
        let (strategies, baseline_metrics, ledger, lost) =
            self.strategy_results(episode, replays, baseline, context);
        EpisodeResult {
            episode: episode.id.clone(),
            items: episode.items.len(),
            steps,
            ledger,
            calls,
            examples,
            lost,
            strategies,
            baseline: baseline_metrics,
            compute_us: replays
                .iter()
                .map(|r| {
                    (
                        r.strategy.clone(),
                        r.steps.iter().map(|s| s.compute_us).collect(),
                    )
                })
                .collect(),
            llm_ms,
            peak_tokens: baseline
                .steps
                .iter()
                .map(|s| s.tokens_sent)
                .max()
                .unwrap_or(0),
            fidelity: fidelity::Fidelity::of(episode, compared),
            model: None,
            recorded_cost: None,
        }
    }

    /// Each strategy's [`EpisodeMetrics`], the baseline's, and the episode's ledger rows and lost findings,
    /// strategy by strategy. Each strategy's loss ledger is computed once (and which findings the task gives
    /// once for all of them), read by the metrics and made into the ledger's rows; the baseline's metrics are
    /// those of its replay among `replays` (never copied) when it is there.
    fn strategy_results(
        &self,
        episode: &Episode,
        replays: &[EpisodeReplay],
        baseline: &EpisodeReplay,
        context: &Context,
    ) -> (
        Vec<EpisodeMetrics>,
        EpisodeMetrics,
        Vec<needs::LedgerRow>,
        Vec<needs::LostFinding>,
    ) {
        let view = |replay, ledger| EpisodeView {
            episode,
            replay,
            baseline,
            context,
            ledger,
        };
        let given = needs::task_given(episode);
        let ledgers: Vec<Vec<needs::NeedRow>> = replays
            .iter()
            .map(|r| needs::ledger_given(episode, &r.steps, &given))
            .collect();
        let metrics: Vec<EpisodeMetrics> = replays
            .iter()
            .zip(&ledgers)
            .map(|(r, rows)| self.episode(&view(r, Some(rows))))
            .collect();
        let baseline_metrics = replays
            .iter()
            .position(|r| std::ptr::eq(r, baseline))
            .map_or_else(
                || self.episode(&view(baseline, None)),
                |i| metrics[i].clone(),
            );
        let (mut ledger, mut lost) = (Vec::new(), Vec::new());
        for (r, rows) in replays.iter().zip(ledgers) {
            let (l, f) = needs::resolve(episode, &r.strategy, rows);
            ledger.extend(l);
            lost.extend(f);
        }
        (metrics, baseline_metrics, ledger, lost)
    }
}

/// One row of `steps.csv`: a call point of an episode under a strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// The call point.
    pub step: usize,
    /// The episode item it precedes.
    pub item_index: usize,
    /// One value per [`Catalog::step_columns`].
    pub values: Vec<Value>,
}

/// What the metrics make of one finished episode under every strategy of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeResult {
    /// The episode id.
    pub episode: String,
    /// Items in the episode.
    pub items: usize,
    /// Its step rows, strategy by strategy (not kept by the journal: `steps.csv` holds them).
    #[serde(skip)]
    pub steps: Vec<(String, Vec<StepRow>)>,
    /// Its loss ledger, strategy by strategy (not kept by the journal: `findings.csv` holds it).
    #[serde(skip)]
    pub ledger: Vec<needs::LedgerRow>,
    /// Its LLM calls, strategy by strategy (not kept by the journal: `llm_calls.jsonl` holds them).
    #[serde(skip)]
    pub calls: Vec<(String, Vec<crate::replay::calls::CallRecord>)>,
    /// The first thing each strategy had a model write in this episode (a summary), for the report.
    #[serde(default)]
    pub examples: Vec<ExampleCall>,
    /// The findings each strategy lost at one need or more.
    #[serde(default)]
    pub lost: Vec<needs::LostFinding>,
    /// Its metrics under each strategy of the run, in order.
    pub strategies: Vec<EpisodeMetrics>,
    /// Its metrics under the baseline.
    pub baseline: EpisodeMetrics,
    /// Each strategy's compute time per step, in microseconds.
    pub compute_us: Vec<(String, Vec<f64>)>,
    /// Each strategy's LLM call latencies (probes included), in milliseconds, as the client measured them.
    #[serde(default)]
    pub llm_ms: Vec<(String, Vec<f64>)>,
    /// The baseline's largest request: the episode with the largest is drawn step by step.
    pub peak_tokens: usize,
    /// The baseline's replay against the usage the trace records.
    #[serde(default)]
    pub fidelity: fidelity::Fidelity,
    /// The episode's model, the source of its price and its window, as the run took them (set by the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::llm::pricing::ModelUse>,
    /// Its recorded usage at its model's prices, beside the baseline's cost of the same call points (set by the
    /// run, where the trace records each call's usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_cost: Option<crate::llm::pricing::RecordedCost>,
}

/// What a strategy had a model write (its first call with an answer in an episode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExampleCall {
    /// The strategy.
    pub strategy: String,
    /// The episode.
    pub episode: String,
    /// The call point.
    pub step: Option<usize>,
    /// The model.
    pub model: String,
    /// What it wrote.
    pub text: String,
}

/// The metric values of one episode under one strategy, per metric of the catalog (in its slots' order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeMetrics {
    /// The episode id.
    pub episode: String,
    /// The episode's source.
    pub source: String,
    /// The strategy.
    pub strategy: String,
    /// Per metric, in catalog order: its episode values.
    pub values: Vec<Vec<Value>>,
}

/// One strategy's running totals over the episodes added so far, in constant memory.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyTotals {
    episodes: usize,
    metrics: Vec<Totals>,
}

impl StrategyTotals {
    /// Adds one episode's metrics, with the baseline's metrics on the same episode.
    pub fn add(&mut self, episode: &EpisodeMetrics, baseline: &EpisodeMetrics) {
        self.episodes += 1;
        let weights = bootstrap::weights(&episode.episode);
        for ((t, values), base) in self
            .metrics
            .iter_mut()
            .zip(&episode.values)
            .zip(&baseline.values)
        {
            t.add_weighted(values, base, &weights);
        }
    }

    /// The running totals of the catalog's `metric`-th metric.
    #[must_use]
    pub fn metric(&self, metric: usize) -> Option<&Totals> {
        self.metrics.get(metric)
    }

    /// Episodes added.
    #[must_use]
    pub fn episodes(&self) -> usize {
        self.episodes
    }
}

/// One strategy's results over a dataset: its name, its episodes, and every field of the catalog in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyMetrics {
    /// The strategy.
    pub strategy: String,
    /// Episodes replayed.
    pub episodes: usize,
    /// Whether this is the baseline (a strategy of type `none`, whatever its name): every other strategy is
    /// compared with it, and it is never recommended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
    /// Whether this is what the agent itself sent where it compacted its own context (`as_recorded`): compared
    /// like any strategy, but nobody can pick it, so it is never recommended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recorded: bool,
    /// Every field, by name, in catalog order.
    #[serde(flatten)]
    pub values: serde_json::Map<String, Value>,
}

impl StrategyMetrics {
    /// A field's value (null when these results have no such field: a summary written by another version).
    ///
    /// In the crate's unit tests, a field these results lack panics instead, so that a key naming no field
    /// of the catalog fails the test that renders it (`report::readers`).
    #[must_use]
    pub fn get(&self, key: FieldKey) -> &Value {
        match self.values.get(key.name()) {
            Some(v) => v,
            #[cfg(test)]
            None => panic!(
                "strategy `{}` has no field `{}`: the key names no field of its catalog",
                self.strategy,
                key.name()
            ),
            #[cfg(not(test))]
            None => &Value::Null,
        }
    }

    /// A field as a number, `None` when it is null or missing.
    #[must_use]
    pub fn number(&self, key: FieldKey) -> Option<f64> {
        self.get(key).as_f64()
    }

    /// A field as a count, `None` when it is null or missing (never 0 for a figure these results lack).
    #[must_use]
    pub fn count(&self, key: FieldKey) -> Option<u64> {
        self.get(key).as_u64()
    }

    /// A keyed field's entries (`retention_by_kind`, `token_share`), in order.
    #[must_use]
    pub fn keyed(&self, key: FieldKey) -> Vec<(&str, Option<f64>)> {
        self.get(key)
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k.as_str(), v.as_f64())).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
impl StrategyMetrics {
    /// A field by its name, for tests that read fields no reader does.
    ///
    /// # Panics
    /// When these results have no such field.
    pub(crate) fn named(&self, name: &str) -> &Value {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("strategy `{}` has no field `{name}`", self.strategy))
    }
}

/// The sum of `values`, starting from `+0.0`.
///
/// `Iterator::sum` for `f64` starts from `-0.0`, so an empty sum would print as `-0` in every report.
#[must_use]
pub fn total(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |a, b| a + b)
}

/// Share `part / whole`, or `None` when `whole` is 0.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn ratio(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}
