//! The series charts draw, computed here so that charts only draw: per-step values of one episode, the Pareto
//! frontier of a comparison, and the points of a sweep.

use serde::{Deserialize, Serialize};

use super::{ratio, Context, EpisodeView};
use crate::replay::EpisodeReplay;

/// Per-step series of one episode under one strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepSeries {
    /// The strategy.
    pub strategy: String,
    /// Tokens sent at each call point.
    pub tokens_sent: Vec<usize>,
    /// Retention at each call point (`None` before the first finding).
    pub retention: Vec<Option<f64>>,
    /// Cumulative cost in USD after each call point (`None` when prices are unknown).
    pub cumulative_cost_usd: Vec<Option<f64>>,
}

impl StepSeries {
    /// Appends one call point: tokens sent, findings introduced and retained, and the step's cost (which
    /// extends the running total; an unknown cost makes the rest of the total unknown).
    pub fn push(
        &mut self,
        tokens_sent: usize,
        introduced: usize,
        retained: usize,
        cost_usd: Option<f64>,
    ) {
        let total = self
            .cumulative_cost_usd
            .last()
            .copied()
            .unwrap_or(Some(0.0));
        self.tokens_sent.push(tokens_sent);
        self.retention.push(ratio(retained, introduced));
        self.cumulative_cost_usd
            .push(total.zip(cost_usd).map(|(a, b)| a + b));
    }
}

/// The series the per-step charts need: one episode under every strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChartData {
    /// The episode drawn per step.
    pub episode: String,
    /// The context window in tokens.
    pub context_window: usize,
    /// One series per strategy.
    pub series: Vec<StepSeries>,
}

impl ChartData {
    /// The per-step series of one episode's replays (`replays` under every strategy, `baseline` among them or
    /// not).
    #[must_use]
    pub fn of_episode(
        episode: &crate::history::Episode,
        replays: &[EpisodeReplay],
        context: &Context,
    ) -> Self {
        Self {
            episode: episode.id.clone(),
            context_window: context.context_window,
            series: replays
                .iter()
                .map(|r| {
                    let view = EpisodeView {
                        episode,
                        replay: r,
                        baseline: r,
                        context,
                        ledger: None,
                    };
                    let mut series = StepSeries {
                        strategy: r.strategy.clone(),
                        ..StepSeries::default()
                    };
                    for s in view.steps() {
                        let (introduced, retained) = super::retention::step_counts(&s);
                        series.push(
                            s.step.tokens_sent,
                            introduced,
                            retained,
                            context.prices.step_cost(s.step),
                        );
                    }
                    series
                })
                .collect(),
        }
    }
}

/// Indices of the points on the Pareto frontier of (savings, retention): no other point is at least as good on
/// both and better on one.
#[must_use]
pub fn pareto_frontier(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (s, r) = points[i];
            !points
                .iter()
                .any(|&(s2, r2)| s2 >= s && r2 >= r && (s2 > s || r2 > r))
        })
        .collect()
}

/// One setting of a sweep, for its charts: its grid, its parameter values (shown as text) and the strategy
/// name its results are reported under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPoint {
    /// The grid's name.
    pub grid: String,
    /// (parameter, value) of this setting, in the grid's order.
    pub values: Vec<(String, String)>,
    /// The strategy name.
    pub strategy: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontier_keeps_only_undominated_points() {
        let pts = [
            (0.0, 100.0),
            (60.0, 70.0),
            (30.0, 95.0),
            (50.0, 60.0),
            (85.0, 69.0),
        ];
        assert_eq!(pareto_frontier(&pts), vec![0, 1, 2, 4]);
    }
}
