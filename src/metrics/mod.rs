//! Metrics: pure functions from replay records to numbers, per episode and per strategy over a dataset.
//!
//! Definitions (DESIGN.md "Metrics"): savings = 1 − input tokens / baseline input tokens on the same episode;
//! cost = the agent's own calls (cached prefix priced as cached input) plus the strategy's calls; retention =
//! share of the findings introduced so far that are retained in the request as sent.

use serde::{Deserialize, Serialize};

use crate::history::{FindingKind, ItemKind};
use crate::llm::pricing::Price;
use crate::replay::{EpisodeReplay, StepRecord};

/// The prices a run uses: the agent's model and the model the strategies call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    /// The agent's model; `None` when unknown (cost is then unknown).
    pub agent: Option<Price>,
    /// The strategies' model.
    pub strategy: Option<Price>,
}

impl Prices {
    /// Cost of one step in USD: the agent call plus the strategy's calls; `None` when a needed price is unknown.
    #[must_use]
    pub fn step_cost(&self, s: &StepRecord) -> Option<f64> {
        let agent = self.agent?.cost_usd(
            s.tokens_sent as u64,
            s.cached_tokens as u64,
            s.output_tokens as u64,
        );
        let strategy = if s.strategy_calls == 0 {
            0.0
        } else {
            self.strategy?
                .cost_usd(s.strategy_input_tokens, 0, s.strategy_output_tokens)
        };
        Some(agent + strategy)
    }
}

/// The sum of `values`, starting from `+0.0`.
///
/// `Iterator::sum` for `f64` starts from `-0.0`, so an empty sum would print as `-0` in every report.
#[must_use]
pub fn total(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().fold(0.0, |a, b| a + b)
}

/// The sum of optional values, `None` as soon as one is `None`; starts from `+0.0`.
#[must_use]
pub fn total_known(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values.into_iter().try_fold(0.0, |a, b| b.map(|b| a + b))
}

/// Share `part / whole`, or `None` when `whole` is 0.
#[must_use]
#[allow(clippy::cast_precision_loss)]
pub fn ratio(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Metrics of one episode under one strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeMetrics {
    /// The episode id.
    pub episode: String,
    /// The episode's source.
    pub source: String,
    /// The strategy.
    pub strategy: String,
    /// Items in the episode.
    pub items: usize,
    /// Call points.
    pub steps: usize,
    /// Total input tokens over all call points.
    pub input_tokens: usize,
    /// The same for the baseline.
    pub baseline_input_tokens: usize,
    /// 1 − input / baseline input.
    pub savings: f64,
    /// Largest request sent.
    pub peak_tokens: usize,
    /// Call points whose request exceeded the window.
    pub steps_over_window: usize,
    /// Input tokens priced as cached.
    pub cached_tokens: usize,
    /// Output tokens of the agent's recorded turns.
    pub output_tokens: usize,
    /// LLM calls made by the strategy.
    pub strategy_calls: usize,
    /// Of those, failed calls.
    pub strategy_failures: usize,
    /// Prompt tokens of the strategy's calls.
    pub strategy_input_tokens: u64,
    /// Completion tokens of the strategy's calls.
    pub strategy_output_tokens: u64,
    /// LLM latency of the strategy's calls, in milliseconds.
    pub strategy_llm_ms: f64,
    /// Cost in USD (agent and strategy); `None` when a price is unknown.
    pub cost_usd: Option<f64>,
    /// Findings introduced by the last call point.
    pub findings: usize,
    /// Retention at the last call point.
    pub final_retention: Option<f64>,
    /// Mean retention over call points that had a finding introduced.
    pub mean_retention: Option<f64>,
    /// Retention at the last call point per finding kind, as (introduced, retained).
    pub retention_by_kind: [(usize, usize); 4],
    /// Probes asked.
    pub probes: usize,
    /// Probes answered correctly.
    pub probes_correct: usize,
    /// Tokens sent by item kind, summed over call points.
    pub tokens_by_kind: [usize; 6],
}

/// Computes an episode's metrics against its baseline replay.
#[must_use]
pub fn episode_metrics(
    replay: &EpisodeReplay,
    baseline: &EpisodeReplay,
    prices: &Prices,
) -> EpisodeMetrics {
    let input_tokens: usize = replay.steps.iter().map(|s| s.tokens_sent).sum();
    let baseline_input_tokens: usize = baseline.steps.iter().map(|s| s.tokens_sent).sum();
    let cost_usd = total_known(replay.steps.iter().map(|s| prices.step_cost(s)));
    let last = replay.steps.last();
    let with_findings: Vec<f64> = replay
        .steps
        .iter()
        .filter_map(|s| ratio(s.findings_retained, s.findings_introduced))
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let mean_retention = (!with_findings.is_empty())
        .then(|| total(with_findings.iter().copied()) / with_findings.len() as f64);
    let mut tokens_by_kind = [0usize; 6];
    for s in &replay.steps {
        for (acc, n) in tokens_by_kind.iter_mut().zip(s.tokens_by_kind) {
            *acc += n;
        }
    }
    EpisodeMetrics {
        episode: replay.episode.clone(),
        source: replay.source.clone(),
        strategy: replay.strategy.clone(),
        items: replay.items,
        steps: replay.steps.len(),
        input_tokens,
        baseline_input_tokens,
        savings: ratio(input_tokens, baseline_input_tokens).map_or(0.0, |r| 1.0 - r),
        peak_tokens: replay
            .steps
            .iter()
            .map(|s| s.tokens_sent)
            .max()
            .unwrap_or(0),
        steps_over_window: replay.steps.iter().filter(|s| s.over_window).count(),
        cached_tokens: replay.steps.iter().map(|s| s.cached_tokens).sum(),
        output_tokens: replay.steps.iter().map(|s| s.output_tokens).sum(),
        strategy_calls: replay.steps.iter().map(|s| s.strategy_calls).sum(),
        strategy_failures: replay.steps.iter().map(|s| s.strategy_failures).sum(),
        strategy_input_tokens: replay.steps.iter().map(|s| s.strategy_input_tokens).sum(),
        strategy_output_tokens: replay.steps.iter().map(|s| s.strategy_output_tokens).sum(),
        strategy_llm_ms: total(replay.steps.iter().map(|s| s.strategy_llm_ms)),
        cost_usd,
        findings: last.map_or(0, |s| s.findings_introduced),
        final_retention: last.and_then(|s| ratio(s.findings_retained, s.findings_introduced)),
        mean_retention,
        retention_by_kind: last.map_or([(0, 0); 4], |s| s.retention_by_kind),
        probes: replay.probes.len(),
        probes_correct: replay.probes.iter().filter(|p| p.correct).count(),
        tokens_by_kind,
    }
}

/// Metrics of one strategy over a dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyMetrics {
    /// The strategy.
    pub strategy: String,
    /// Episodes replayed.
    pub episodes: usize,
    /// Call points.
    pub steps: usize,
    /// Total input tokens.
    pub input_tokens: usize,
    /// Total baseline input tokens.
    pub baseline_input_tokens: usize,
    /// 1 − total input / total baseline input.
    pub savings: f64,
    /// Mean of the per-episode savings.
    pub mean_episode_savings: f64,
    /// Largest request sent in any episode.
    pub peak_tokens: usize,
    /// Call points over the window.
    pub steps_over_window: usize,
    /// LLM calls by the strategy.
    pub strategy_calls: usize,
    /// Of those, failures.
    pub strategy_failures: usize,
    /// Prompt tokens of the strategy's calls.
    pub strategy_input_tokens: u64,
    /// Completion tokens of the strategy's calls.
    pub strategy_output_tokens: u64,
    /// LLM latency of the strategy's calls, in milliseconds.
    pub strategy_llm_ms: f64,
    /// Total cost in USD; `None` when a price is unknown.
    pub cost_usd: Option<f64>,
    /// Cost relative to the baseline's: 1 − cost / baseline cost.
    pub cost_savings: Option<f64>,
    /// Findings at the end of all episodes.
    pub findings: usize,
    /// Pooled retention at the last call point: retained / introduced over all episodes.
    pub final_retention: Option<f64>,
    /// Mean of per-episode mean retention.
    pub mean_retention: Option<f64>,
    /// Pooled final retention per finding kind (`FindingKind::ALL` order).
    pub retention_by_kind: [Option<f64>; 4],
    /// Probes asked.
    pub probes: usize,
    /// Share answered correctly.
    pub probe_accuracy: Option<f64>,
    /// Share of tokens sent by item kind (`ItemKind::ALL` order).
    pub token_share: [f64; 6],
}

/// Aggregates the episode metrics of one strategy; `baseline_cost` is the baseline's total cost.
#[must_use]
pub fn strategy_metrics(
    name: &str,
    rows: &[&EpisodeMetrics],
    baseline_cost: Option<f64>,
) -> StrategyMetrics {
    let mut totals = StrategyTotals::default();
    for r in rows {
        totals.add(r);
    }
    totals.metrics(name, baseline_cost)
}

/// Running totals of one strategy's episode metrics: all that [`StrategyMetrics`] needs, in constant memory, so
/// that a run keeps these and not a row per episode. Floating-point sums add in the order the episodes come,
/// as a fold over the rows would.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyTotals {
    episodes: usize,
    steps: usize,
    input_tokens: usize,
    baseline_input_tokens: usize,
    savings: f64,
    peak_tokens: usize,
    steps_over_window: usize,
    strategy_calls: usize,
    strategy_failures: usize,
    strategy_input_tokens: u64,
    strategy_output_tokens: u64,
    strategy_llm_ms: f64,
    /// `None` as soon as one episode's cost is unknown.
    cost_usd: Option<f64>,
    findings: usize,
    /// (introduced, retained) per finding kind.
    retention_by_kind: [(usize, usize); 4],
    /// Sum and number of the episodes' mean retentions.
    mean_retention: (f64, usize),
    probes: usize,
    probes_correct: usize,
    tokens_by_kind: [usize; 6],
}

impl Default for StrategyTotals {
    fn default() -> Self {
        Self {
            episodes: 0,
            steps: 0,
            input_tokens: 0,
            baseline_input_tokens: 0,
            savings: 0.0,
            peak_tokens: 0,
            steps_over_window: 0,
            strategy_calls: 0,
            strategy_failures: 0,
            strategy_input_tokens: 0,
            strategy_output_tokens: 0,
            strategy_llm_ms: 0.0,
            cost_usd: Some(0.0),
            findings: 0,
            retention_by_kind: [(0, 0); 4],
            mean_retention: (0.0, 0),
            probes: 0,
            probes_correct: 0,
            tokens_by_kind: [0; 6],
        }
    }
}

impl StrategyTotals {
    /// Adds one episode's metrics.
    pub fn add(&mut self, r: &EpisodeMetrics) {
        self.episodes += 1;
        self.steps += r.steps;
        self.input_tokens += r.input_tokens;
        self.baseline_input_tokens += r.baseline_input_tokens;
        self.savings += r.savings;
        self.peak_tokens = self.peak_tokens.max(r.peak_tokens);
        self.steps_over_window += r.steps_over_window;
        self.strategy_calls += r.strategy_calls;
        self.strategy_failures += r.strategy_failures;
        self.strategy_input_tokens += r.strategy_input_tokens;
        self.strategy_output_tokens += r.strategy_output_tokens;
        self.strategy_llm_ms += r.strategy_llm_ms;
        self.cost_usd = self.cost_usd.zip(r.cost_usd).map(|(a, b)| a + b);
        self.findings += r.findings;
        for (k, v) in self.retention_by_kind.iter_mut().zip(r.retention_by_kind) {
            k.0 += v.0;
            k.1 += v.1;
        }
        if let Some(m) = r.mean_retention {
            self.mean_retention.0 += m;
            self.mean_retention.1 += 1;
        }
        self.probes += r.probes;
        self.probes_correct += r.probes_correct;
        for (t, v) in self.tokens_by_kind.iter_mut().zip(r.tokens_by_kind) {
            *t += v;
        }
    }

    /// Total cost in USD; `None` when a price is unknown.
    #[must_use]
    pub fn cost_usd(&self) -> Option<f64> {
        self.cost_usd
    }

    /// The strategy's metrics under `name`; `baseline_cost` is the baseline's total cost.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn metrics(&self, name: &str, baseline_cost: Option<f64>) -> StrategyMetrics {
        let all_tokens: usize = self.tokens_by_kind.iter().sum();
        let kinds = self.retention_by_kind;
        StrategyMetrics {
            strategy: name.to_owned(),
            episodes: self.episodes,
            steps: self.steps,
            input_tokens: self.input_tokens,
            baseline_input_tokens: self.baseline_input_tokens,
            savings: ratio(self.input_tokens, self.baseline_input_tokens).map_or(0.0, |r| 1.0 - r),
            mean_episode_savings: if self.episodes == 0 {
                0.0
            } else {
                self.savings / self.episodes as f64
            },
            peak_tokens: self.peak_tokens,
            steps_over_window: self.steps_over_window,
            strategy_calls: self.strategy_calls,
            strategy_failures: self.strategy_failures,
            strategy_input_tokens: self.strategy_input_tokens,
            strategy_output_tokens: self.strategy_output_tokens,
            strategy_llm_ms: self.strategy_llm_ms,
            cost_usd: self.cost_usd,
            cost_savings: match (self.cost_usd, baseline_cost) {
                (Some(c), Some(b)) if b > 0.0 => Some(1.0 - c / b),
                _ => None,
            },
            findings: self.findings,
            final_retention: ratio(
                kinds.iter().map(|k| k.1).sum(),
                kinds.iter().map(|k| k.0).sum(),
            ),
            mean_retention: (self.mean_retention.1 > 0)
                .then(|| self.mean_retention.0 / self.mean_retention.1 as f64),
            retention_by_kind: kinds.map(|(i, r)| ratio(r, i)),
            probes: self.probes,
            probe_accuracy: ratio(self.probes_correct, self.probes),
            token_share: self
                .tokens_by_kind
                .map(|t| ratio(t, all_tokens).unwrap_or(0.0)),
        }
    }
}

/// Names of the finding kinds, in the order of the per-kind arrays.
#[must_use]
pub fn finding_kind_names() -> [&'static str; 4] {
    FindingKind::ALL.map(FindingKind::as_str)
}

/// Names of the item kinds, in the order of the per-kind arrays.
#[must_use]
pub fn item_kind_names() -> [&'static str; 6] {
    ItemKind::ALL.map(ItemKind::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_price_gives_unknown_cost() {
        let step = crate::replay::StepRecord {
            step: 0,
            item_index: 0,
            items_sent: 1,
            instructions_sent: 0,
            tokens_before: 10,
            tokens_sent: 10,
            cached_tokens: 0,
            output_tokens: 1,
            tokens_by_kind: [0; 6],
            strategy_calls: 1,
            strategy_failures: 0,
            strategy_input_tokens: 5,
            strategy_output_tokens: 5,
            strategy_llm_ms: 0.0,
            summarized_items: 0,
            compacted_items: 0,
            dropped_items: 0,
            findings_introduced: 0,
            findings_retained: 0,
            retention_by_kind: [(0, 0); 4],
            over_window: false,
            compute_us: 0.0,
        };
        let p = Price {
            input: 1.0,
            cached_input: 0.5,
            output: 2.0,
        };
        assert_eq!(
            Prices {
                agent: Some(p),
                strategy: None
            }
            .step_cost(&step),
            None
        );
        let c = Prices {
            agent: Some(p),
            strategy: Some(p),
        }
        .step_cost(&step)
        .unwrap();
        assert!((c - (10.0 + 2.0 + 5.0 + 10.0) / 1e6).abs() < 1e-15);
    }

    fn row(input: usize, baseline: usize, cost: Option<f64>, mean: Option<f64>) -> EpisodeMetrics {
        EpisodeMetrics {
            episode: "e".into(),
            source: "s".into(),
            strategy: "x".into(),
            items: 10,
            steps: 4,
            input_tokens: input,
            baseline_input_tokens: baseline,
            savings: ratio(input, baseline).map_or(0.0, |r| 1.0 - r),
            peak_tokens: input / 2,
            steps_over_window: 1,
            cached_tokens: 0,
            output_tokens: 0,
            strategy_calls: 2,
            strategy_failures: 1,
            strategy_input_tokens: 7,
            strategy_output_tokens: 3,
            strategy_llm_ms: 0.5,
            cost_usd: cost,
            findings: 3,
            final_retention: None,
            mean_retention: mean,
            retention_by_kind: [(2, 1), (1, 1), (0, 0), (0, 0)],
            probes: 2,
            probes_correct: 1,
            tokens_by_kind: [input, 0, 0, 0, 0, 0],
        }
    }

    #[test]
    fn strategy_totals_pool_tokens_and_average_episodes() {
        let rows = [
            row(50, 100, Some(1.0), Some(0.5)),
            row(300, 300, Some(2.0), None),
        ];
        let m = strategy_metrics("x", &rows.iter().collect::<Vec<_>>(), Some(6.0));
        assert_eq!(
            (m.episodes, m.steps, m.input_tokens, m.baseline_input_tokens),
            (2, 8, 350, 400)
        );
        // Pooled over tokens (1 - 350/400), and the mean of the episodes' own savings ((0.5 + 0) / 2).
        assert!((m.savings - 0.125).abs() < 1e-12, "{}", m.savings);
        assert!((m.mean_episode_savings - 0.25).abs() < 1e-12);
        assert_eq!(m.peak_tokens, 150);
        assert_eq!(
            (m.steps_over_window, m.strategy_calls, m.strategy_failures),
            (2, 4, 2)
        );
        assert_eq!((m.strategy_input_tokens, m.strategy_output_tokens), (14, 6));
        assert_eq!(m.strategy_llm_ms, 1.0);
        assert_eq!(m.cost_usd, Some(3.0));
        assert_eq!(m.cost_savings, Some(0.5));
        // An episode without a mean retention does not count in the mean.
        assert_eq!(m.mean_retention, Some(0.5));
        assert_eq!(m.final_retention, Some(4.0 / 6.0));
        assert_eq!(m.retention_by_kind, [Some(0.5), Some(1.0), None, None]);
        assert_eq!((m.findings, m.probes, m.probe_accuracy), (6, 4, Some(0.5)));
        assert_eq!(m.token_share, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        // One unknown cost makes the total unknown, whatever comes after.
        let mut totals = StrategyTotals::default();
        for r in [
            row(1, 2, Some(1.0), None),
            row(1, 2, None, None),
            row(1, 2, Some(1.0), None),
        ] {
            totals.add(&r);
        }
        assert_eq!(totals.cost_usd(), None);
        assert_eq!(totals.metrics("x", Some(1.0)).cost_savings, None);
        // No episode: zeros, and nothing to divide.
        let empty = StrategyTotals::default().metrics("x", None);
        assert_eq!(
            (empty.episodes, empty.savings, empty.mean_episode_savings),
            (0, 0.0, 0.0)
        );
        assert_eq!(
            (empty.cost_usd, empty.mean_retention, empty.probe_accuracy),
            (Some(0.0), None, None)
        );
    }
}
