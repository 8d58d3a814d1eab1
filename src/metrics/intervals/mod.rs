//! 95% intervals of the headline figures: savings and cost saved by the paired bootstrap
//! ([`super::bootstrap`]), the retention shares by a Wilson interval on the (finding, need) pairs widened by the
//! design effect of the episodes ([`ClusterSums`]), and the paired difference between two strategies.
//!
//! ## Why not the bootstrap for a share
//! A share of pairs is clustered: the needs of one episode are kept or lost together far more often than
//! those of two. Over one episode, or where every pair is kept (or every one lost), every bootstrap replicate
//! has the same share, and the percentile interval has no width — it claims a certainty the data lacks. The
//! interval here holds there ([`ClusterSums::interval`]); `docs/intervals.md` gives the method, why, and the
//! simulation that checks its coverage (`metrics::intervals::coverage`).

#[cfg(test)]
mod coverage;
pub mod share;

pub use share::ClusterSums;

use super::slot;
use super::{
    acted, bootstrap, Agg, EpisodeView, Field, Metric, Name, Slot, StrategyTotals, Unit, Values,
};
use serde::{Deserialize, Serialize};

/// Intervals of savings, cost saving and the retention figures.
pub struct Intervals;

impl Metric for Intervals {
    /// The sums over every call point ([`acted::SUMS`]), whose replicates the bootstrap keeps.
    fn episode_slots(&self) -> Vec<Slot> {
        acted::SUMS.map(Slot::kept).to_vec()
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        acted::put_sums(v, out, 0);
    }

    /// The retention and cost sums the paired differences read.
    fn replicated(&self) -> Vec<Name> {
        [
            slot::RETAINED,
            slot::NEEDS,
            slot::COST_USD,
            slot::BASELINE_COST_USD,
        ]
        .map(Name::of)
        .to_vec()
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "savings_ci95",
                Unit::Share,
                "95% paired-bootstrap interval of savings.",
                Agg::ci95(SAVINGS),
            ),
            Field::new(
                "cost_savings_ci95",
                Unit::Share,
                "95% paired-bootstrap interval of the cost saving (with the prompt cache).",
                Agg::ci95(COST_SAVINGS),
            ),
            Field::new(
                "retention_at_need_ci95",
                Unit::Share,
                "95% interval of retention at need (Wilson on the pairs, widened by the design effect of the \
                 episodes; null with fewer than two episodes with a need).",
                Agg::share_ci95(slot::RETAINED, slot::NEEDS),
            ),
            Field::new(
                "retention_first_need_ci95",
                Unit::Share,
                "95% interval of retention at the first need (as retention at need's).",
                Agg::share_ci95(slot::FIRST_RETAINED, slot::FIRST_NEEDS),
            ),
            Field::new(
                "retention_at_need_task_ci95",
                Unit::Share,
                "95% interval of the task-given findings' retention at need (as retention at need's).",
                Agg::share_ci95(slot::TASK_RETAINED, slot::NEEDS_TASK),
            ),
        ]
    }
}

const SAVINGS: Agg = Agg::Saving(
    Name::of(slot::INPUT_TOKENS),
    Name::of(slot::BASELINE_INPUT_TOKENS),
);
/// Cost saved, with the prompt cache.
pub(super) const COST_SAVINGS: Agg =
    Agg::FloatSaving(Name::of(slot::COST_USD), Name::of(slot::BASELINE_COST_USD));
/// Retention at need.
pub(super) const RETENTION: Agg = Agg::Ratio(Name::of(slot::RETAINED), Name::of(slot::NEEDS));

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
    agg: &Agg<usize>,
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

/// The paired difference `b` − `a` of two strategies' totals, whose `metric`-th metric is [`Intervals`], with
/// its [`RETENTION`] and [`COST_SAVINGS`] resolved to the metric's slots.
#[must_use]
pub fn paired(
    (a, a_totals): (&str, &StrategyTotals),
    (b, b_totals): (&str, &StrategyTotals),
    metric: usize,
    retention: &Agg<usize>,
    cost_savings: &Agg<usize>,
) -> Option<PairedDifference> {
    let (ta, tb) = (a_totals.metric(metric)?, b_totals.metric(metric)?);
    let (retention, retention_ci) = difference(ta, tb, retention);
    let (cost, cost_ci) = difference(ta, tb, cost_savings);
    Some(PairedDifference {
        a: a.to_owned(),
        b: b.to_owned(),
        retention_at_need: retention,
        retention_at_need_ci95: retention_ci,
        cost_savings: cost,
        cost_savings_ci95: cost_ci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use serde_json::Value;

    /// [`RETENTION`] and [`COST_SAVINGS`] over the metric's values: input, baseline input, cost, baseline
    /// cost, needs, retained…
    const RETENTION_AT: Agg<usize> = Agg::Ratio(5, 4);
    const COST_AT: Agg<usize> = Agg::FloatSaving(2, 3);

    #[test]
    fn the_figures_name_the_slots_of_the_sums() {
        let slots = Intervals.episode_slots();
        let index = |n: &Name| -> Result<usize, String> {
            slots
                .iter()
                .position(|s| s.name == *n)
                .ok_or_else(|| n.to_string())
        };
        assert_eq!(RETENTION.resolve(&mut { index }), Ok(RETENTION_AT));
        assert_eq!(COST_SAVINGS.resolve(&mut { index }), Ok(COST_AT));
    }

    fn diff(retention: Option<(f64, f64)>, cost: Option<(f64, f64)>) -> PairedDifference {
        PairedDifference {
            a: "a".into(),
            b: "b".into(),
            retention_at_need: None,
            retention_at_need_ci95: retention,
            cost_savings: None,
            cost_savings_ci95: cost,
        }
    }

    /// A difference is told apart from noise only when its interval leaves out 0, on either side.
    #[test]
    fn an_interval_that_holds_zero_is_no_difference() {
        for (interval, differs) in [
            (Some((0.1, 0.3)), true),
            (Some((-0.3, -0.1)), true),
            (Some((-0.1, 0.2)), false),
            (Some((0.0, 0.2)), false),
            (Some((-0.2, 0.0)), false),
            (None, false),
        ] {
            assert_eq!(
                diff(interval, None).retention_differs(),
                differs,
                "{interval:?}"
            );
            assert_eq!(diff(None, interval).cost_differs(), differs, "{interval:?}");
            assert!(
                !diff(None, interval).retention_differs() && !diff(interval, None).cost_differs()
            );
        }
    }

    /// b − a on the same resampled episodes, by hand. Episode 1 is in every replicate once; episode 2 is in half
    /// the replicates twice and in the other half not at all, so the replicates take two values.
    #[test]
    fn paired_differences_by_hand() {
        let reps = bootstrap::REPLICATES;
        let once = vec![1u8; reps];
        let alternate: Vec<u8> = (0..reps).map(|r| if r % 2 == 0 { 0 } else { 2 }).collect();
        // Values: input, baseline input, cost, baseline cost, needs, retained.
        let episode = |cost: f64, needs: u64, retained: u64| {
            [
                json!(0),
                json!(0),
                json!(cost),
                json!(10.0),
                json!(needs),
                json!(retained),
            ]
        };
        let (mut a, mut b) = (
            super::super::Totals::with_replicates(vec![2, 3, 4, 5]),
            super::super::Totals::with_replicates(vec![2, 3, 4, 5]),
        );
        a.add_weighted(&episode(8.0, 4, 2), &[], &once);
        b.add_weighted(&episode(5.0, 4, 4), &[], &once);
        a.add_weighted(&episode(6.0, 2, 2), &[], &alternate);
        b.add_weighted(&episode(4.0, 2, 0), &[], &alternate);
        // Retention: a 4/6, b 4/6: no difference. Without episode 2: a 1/2, b 1: +0.5; with it twice: a 6/8,
        // b 4/8: −0.25.
        let (point, interval) = difference(&a, &b, &RETENTION_AT);
        assert!(point.unwrap().abs() < 1e-12);
        assert_eq!(interval, Some((-0.25, 0.5)));
        // Cost saved: a 1 − 14/20 = 0.3, b 1 − 9/20 = 0.55: b saves 0.25 more. Without episode 2: 0.5 − 0.2 = 0.3;
        // with it twice: (1 − 13/30) − (1 − 20/30) = 7/30.
        let (point, interval) = difference(&a, &b, &COST_AT);
        assert!((point.unwrap() - 0.25).abs() < 1e-12);
        let (lo, hi) = interval.unwrap();
        assert!(
            (lo - 7.0 / 30.0).abs() < 1e-12 && (hi - 0.3).abs() < 1e-12,
            "{lo} {hi}"
        );
        // Through the catalog: two strategies' totals over the same two episodes, named as given.
        let catalog = crate::metrics::Catalog::new(vec![Box::new(Intervals)]);
        let metrics =
            |id: &str, strategy: &str, values: [Value; 6]| crate::metrics::EpisodeMetrics {
                episode: id.into(),
                source: "t".into(),
                strategy: strategy.into(),
                values: vec![values.to_vec()],
            };
        let (mut ta, mut tb) = (catalog.totals(), catalog.totals());
        for (id, va, vb) in [
            ("e1", episode(8.0, 4, 2), episode(5.0, 4, 4)),
            ("e2", episode(6.0, 2, 2), episode(4.0, 2, 0)),
        ] {
            let (ma, mb) = (metrics(id, "a", va), metrics(id, "b", vb));
            ta.add(&ma, &ma);
            tb.add(&mb, &ma);
        }
        let d = catalog.paired(("a", &ta), ("b", &tb)).unwrap();
        assert_eq!((d.a.as_str(), d.b.as_str()), ("a", "b"));
        assert!(d.retention_at_need.unwrap().abs() < 1e-12);
        assert!((d.cost_savings.unwrap() - 0.25).abs() < 1e-12);
        assert!(d.retention_at_need_ci95.is_some() && d.cost_savings_ci95.is_some());
        // Totals without replicates give the point and no interval.
        let mut plain = super::super::Totals::default();
        plain.add(&episode(8.0, 4, 2), &[]);
        let (point, interval) = difference(&plain, &plain, &RETENTION_AT);
        assert_eq!((point, interval), (Some(0.0), None));
    }
}
