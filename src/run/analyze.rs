//! The analysis step between the metrics and the report (criterion's measure → analyze → report): from each
//! strategy's running totals and the run's configuration, the typed results a report renders — every strategy's
//! figures with the baseline known by its type, what to pick under the run's rule, the paired differences along
//! the Pareto frontier, and the timings. The writer writes what this decides; it decides nothing itself.

use super::RunConfig;
use crate::metrics::intervals::PairedDifference;
use crate::metrics::timing::ComputeTimes;
use crate::metrics::{fields as field, Catalog, StrategyMetrics, StrategyTotals};
use crate::report::recommend::{recommend, Recommendation, Rule};
use crate::report::Timing;

/// One strategy's running totals, as the writer keeps them: its name, its metrics' totals, its compute times
/// and its LLM calls' times.
pub type Totals = (String, StrategyTotals, ComputeTimes, ComputeTimes);

/// What the report renders of the totals so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Every strategy's figures, in the configuration's order, the baseline marked.
    pub strategies: Vec<StrategyMetrics>,
    /// What to pick, when the run compares any strategy with the baseline.
    pub recommendation: Option<Recommendation>,
    /// The paired differences between neighbours on the frontier of savings and retention at need.
    pub comparisons: Vec<PairedDifference>,
    /// Each strategy's compute time and LLM latency.
    pub timings: Vec<Timing>,
}

/// The rule the recommendation applies under `config`.
#[must_use]
pub fn rule(config: &RunConfig) -> Rule {
    Rule {
        min_retention: config.min_retention,
        min_needs: config.min_needs,
        without_retention: config.recommend_without_retention,
    }
}

/// Analyzes `totals` (one per strategy of `config`, in its order) with `catalog`.
#[must_use]
pub fn analyze(totals: &[Totals], catalog: &Catalog, config: &RunConfig) -> Analysis {
    let strategies: Vec<StrategyMetrics> = totals
        .iter()
        .zip(&config.strategies)
        .map(|((name, t, _, _), s)| StrategyMetrics {
            baseline: s.config.is_baseline(),
            recorded: matches!(s.config, crate::strategy::StrategyConfig::AsRecorded(_)),
            ..catalog.strategy(name, t)
        })
        .collect();
    let recommendation = strategies
        .iter()
        .any(|s| !s.baseline && !s.recorded)
        .then(|| recommend(&strategies, &rule(config)));
    Analysis {
        comparisons: frontier_differences(&strategies, totals, catalog),
        timings: totals
            .iter()
            .map(|(name, _, compute, llm)| Timing {
                strategy: name.clone(),
                compute_p50_us: compute.quantile_us(0.5),
                compute_p95_us: compute.quantile_us(0.95),
                llm_calls: llm.count(),
                llm_p50_ms: llm.quantile_us(0.5) / 1e3,
                llm_p95_ms: llm.quantile_us(0.95) / 1e3,
            })
            .collect(),
        strategies,
        recommendation,
    }
}

/// The paired differences between neighbours on the Pareto frontier of (savings, retention at need), the
/// baselines left out, in order of savings.
fn frontier_differences(
    strategies: &[StrategyMetrics],
    totals: &[Totals],
    catalog: &Catalog,
) -> Vec<PairedDifference> {
    let candidates: Vec<(usize, (f64, f64))> = strategies
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.baseline)
        .filter_map(|(i, s)| {
            Some((
                i,
                (
                    s.number(field::SAVINGS)?,
                    s.number(field::RETENTION_AT_NEED)?,
                ),
            ))
        })
        .collect();
    let points: Vec<(f64, f64)> = candidates.iter().map(|c| c.1).collect();
    let mut frontier: Vec<(usize, (f64, f64))> = crate::metrics::series::pareto_frontier(&points)
        .into_iter()
        .map(|k| candidates[k])
        .collect();
    frontier.sort_by(|x, y| x.1 .0.total_cmp(&y.1 .0).then(x.0.cmp(&y.0)));
    frontier
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (&totals[w[0].0], &totals[w[1].0]);
            catalog.paired((&a.0, &a.1), (&b.0, &b.1))
        })
        .collect()
}
