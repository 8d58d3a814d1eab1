//! 95% paired-bootstrap intervals of the headline figures ([`super::bootstrap`]), and of the difference
//! between two strategies.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{acted, bootstrap, Agg, Column, EpisodeView, Field, Metric, StrategyTotals, Unit};

/// Intervals of savings, cost saving and retention at need.
pub struct Intervals;

impl Metric for Intervals {
    fn episode_columns(&self) -> Vec<Column> {
        Vec::new()
    }

    /// Input tokens, the baseline's, cost, the baseline's, needs and needs retained: the sums the replicates
    /// keep.
    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let (input, cost, needs, retained) = acted::totals(v, v.replay);
        let (base_input, base_cost, _, _) = acted::totals(v, v.baseline);
        out.extend([
            Value::from(input),
            Value::from(base_input),
            cost,
            base_cost,
            Value::from(needs),
            Value::from(retained),
        ]);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "savings_ci95",
                Unit::Share,
                "95% paired-bootstrap interval of savings.",
                Agg::Ci95(Box::new(SAVINGS)),
            ),
            Field::new(
                "cost_savings_ci95",
                Unit::Share,
                "95% paired-bootstrap interval of the cost saving (with the prompt cache).",
                Agg::Ci95(Box::new(COST_SAVINGS)),
            ),
            Field::new(
                "retention_at_need_ci95",
                Unit::Share,
                "95% paired-bootstrap interval of retention at need.",
                Agg::Ci95(Box::new(RETENTION)),
            ),
        ]
    }
}

const SAVINGS: Agg = Agg::Saving(0, 1);
const COST_SAVINGS: Agg = Agg::FloatSaving(2, 3);
const RETENTION: Agg = Agg::Ratio(5, 4);

/// The paired difference of two strategies, `b` − `a`, on the same resampled episodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDifference {
    /// The strategy subtracted.
    pub a: String,
    /// The other.
    pub b: String,
    /// Retention at need of `b` minus that of `a`.
    pub retention_at_need: Option<f64>,
    /// Its 95% interval.
    pub retention_at_need_ci95: Option<(f64, f64)>,
    /// Cost saving (with the prompt cache) of `b` minus that of `a`: positive when `b` costs less.
    pub cost_savings: Option<f64>,
    /// Its 95% interval.
    pub cost_savings_ci95: Option<(f64, f64)>,
}

impl PairedDifference {
    /// Whether the retention interval leaves out 0 (the difference is not noise at 95%).
    #[must_use]
    pub fn retention_differs(&self) -> bool {
        self.retention_at_need_ci95
            .is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }

    /// Whether the cost interval leaves out 0.
    #[must_use]
    pub fn cost_differs(&self) -> bool {
        self.cost_savings_ci95
            .is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// `b` − `a` for the figure `agg`, with its interval, from each strategy's totals of this metric (`None`
/// when either keeps no replicates).
fn difference(
    a: &super::Totals,
    b: &super::Totals,
    agg: &Agg,
) -> (Option<f64>, Option<(f64, f64)>) {
    let point = |t: &super::Totals| t.get(agg).as_f64();
    let value = point(b).zip(point(a)).map(|(y, x)| y - x);
    let interval = a
        .replicate_values(agg)
        .zip(b.replicate_values(agg))
        .and_then(|(ra, rb)| {
            bootstrap::interval(
                ra.into_iter()
                    .zip(rb)
                    .map(|(x, y)| x.zip(y).map(|(x, y)| y - x)),
            )
        });
    (value, interval)
}

/// The paired difference `b` − `a` of two strategies' totals, whose `metric`-th metric is [`Intervals`].
#[must_use]
pub fn paired(
    (a, a_totals): (&str, &StrategyTotals),
    (b, b_totals): (&str, &StrategyTotals),
    metric: usize,
) -> Option<PairedDifference> {
    let (ta, tb) = (a_totals.metric(metric)?, b_totals.metric(metric)?);
    let (retention, retention_ci) = difference(ta, tb, &RETENTION);
    let (cost, cost_ci) = difference(ta, tb, &COST_SAVINGS);
    Some(PairedDifference {
        a: a.to_owned(),
        b: b.to_owned(),
        retention_at_need: retention,
        retention_at_need_ci95: retention_ci,
        cost_savings: cost,
        cost_savings_ci95: cost_ci,
    })
}
