//! How an episode value becomes a strategy figure over the dataset: the [`Agg`] each strategy field names, and
//! the running totals that compute every aggregation in constant memory, adding episodes in the order they
//! come (floating-point sums are order-dependent; a run adds in dataset order whatever its threads).

use serde_json::Value;

use super::intervals::ClusterSums;
use super::{ratio, Name};

/// How a strategy field is computed from the episode values of its metric, which it names: `S` is a slot's
/// [`Name`] where a metric declares the field, and the slot's index once the catalog resolved it.
#[derive(Debug, Clone, PartialEq)]
pub enum Agg<S = Name> {
    /// The sum over episodes: an integer when every value is one; null as soon as one value is null.
    Sum(S),
    /// The largest value; null when no episode has one.
    Max(S),
    /// The mean over the episodes where the value is not null; null when there is none.
    Mean(S),
    /// Σ a / Σ b; null when Σ b is 0.
    Ratio(S, S),
    /// Σ a / Σ b; 0 when Σ b is 0 (a share of a whole that may be empty).
    Share(S, S),
    /// 1 − Σ a / Σ b; 0 when Σ b is 0.
    Saving(S, S),
    /// 1 − Σ a / Σ a of the baseline on the same episodes; null when either sum is null or the baseline's
    /// is not above 0.
    SavingOverBaseline(S),
    /// 1 − Σ a / Σ b over any numbers; null when either sum is null or Σ b is not above 0.
    FloatSaving(S, S),
    /// Σ a / Σ b over any numbers (a mean of grades: their sum over their count); null when either sum is null
    /// or Σ b is not above 0.
    FloatRatio(S, S),
    /// The 95% paired-bootstrap interval `[lo, hi]` of a [`Agg::Saving`], [`Agg::FloatSaving`],
    /// [`Agg::Ratio`] or [`Agg::FloatRatio`] ([`super::bootstrap`]); null when it is undefined. The metric's
    /// totals keep each replicate's sums for it.
    Ci95(Box<Agg<S>>),
    /// The 95% interval `[lo, hi]` of the share Σ a / Σ b of (finding, need) pairs kept, clustered by episode
    /// ([`super::intervals::ClusterSums::interval`]: Wilson on the pairs widened by the episodes' design
    /// effect); null with fewer than two episodes where Σ b grew. The totals keep the sums it needs.
    ShareCi95(S, S),
    /// An object of named aggregations (a value per kind, keyed by the kind's name).
    Keyed(Vec<(String, Agg<S>)>),
}

impl Agg {
    /// [`Agg::Sum`] of a slot.
    pub fn sum(a: impl Into<Name>) -> Self {
        Self::Sum(a.into())
    }

    /// [`Agg::Max`] of a slot.
    pub fn max(a: impl Into<Name>) -> Self {
        Self::Max(a.into())
    }

    /// [`Agg::Mean`] of a slot.
    pub fn mean(a: impl Into<Name>) -> Self {
        Self::Mean(a.into())
    }

    /// [`Agg::Ratio`] of two slots.
    pub fn ratio(a: impl Into<Name>, b: impl Into<Name>) -> Self {
        Self::Ratio(a.into(), b.into())
    }

    /// [`Agg::Share`] of two slots.
    pub fn share(a: impl Into<Name>, b: impl Into<Name>) -> Self {
        Self::Share(a.into(), b.into())
    }

    /// [`Agg::Saving`] of two slots.
    pub fn saving(a: impl Into<Name>, b: impl Into<Name>) -> Self {
        Self::Saving(a.into(), b.into())
    }

    /// [`Agg::SavingOverBaseline`] of a slot.
    pub fn saving_over_baseline(a: impl Into<Name>) -> Self {
        Self::SavingOverBaseline(a.into())
    }

    /// [`Agg::FloatSaving`] of two slots.
    pub fn float_saving(a: impl Into<Name>, b: impl Into<Name>) -> Self {
        Self::FloatSaving(a.into(), b.into())
    }

    /// [`Agg::FloatRatio`] of two slots.
    pub fn float_ratio(a: impl Into<Name>, b: impl Into<Name>) -> Self {
        Self::FloatRatio(a.into(), b.into())
    }

    /// [`Agg::Ci95`] of an aggregation.
    #[must_use]
    pub fn ci95(of: Self) -> Self {
        Self::Ci95(Box::new(of))
    }

    /// [`Agg::ShareCi95`] of two slots: kept pairs and pairs.
    pub fn share_ci95(a: impl Into<Name>, b: impl Into<Name>) -> Self {
        Self::ShareCi95(a.into(), b.into())
    }

    /// [`Agg::Keyed`]: one aggregation per kind.
    pub fn keyed(parts: impl IntoIterator<Item = (&'static str, Self)>) -> Self {
        Self::Keyed(parts.into_iter().map(|(k, a)| (k.to_owned(), a)).collect())
    }
}

impl<S> Agg<S> {
    /// The same aggregation with each slot reference mapped by `f`; the first error `f` returns, or one for
    /// an interval of an aggregation without replicates.
    ///
    /// # Errors
    /// When `f` fails, or [`Agg::Ci95`] holds another aggregation than a ratio or a saving.
    pub fn resolve<T, E: From<String>>(
        &self,
        f: &mut impl FnMut(&S) -> Result<T, E>,
    ) -> Result<Agg<T>, E> {
        Ok(match self {
            Self::Sum(a) => Agg::Sum(f(a)?),
            Self::Max(a) => Agg::Max(f(a)?),
            Self::Mean(a) => Agg::Mean(f(a)?),
            Self::Ratio(a, b) => Agg::Ratio(f(a)?, f(b)?),
            Self::Share(a, b) => Agg::Share(f(a)?, f(b)?),
            Self::Saving(a, b) => Agg::Saving(f(a)?, f(b)?),
            Self::SavingOverBaseline(a) => Agg::SavingOverBaseline(f(a)?),
            Self::FloatSaving(a, b) => Agg::FloatSaving(f(a)?, f(b)?),
            Self::FloatRatio(a, b) => Agg::FloatRatio(f(a)?, f(b)?),
            Self::ShareCi95(a, b) => Agg::ShareCi95(f(a)?, f(b)?),
            Self::Ci95(inner) => match **inner {
                Self::Saving(..) | Self::FloatSaving(..) | Self::Ratio(..) | Self::FloatRatio(..) => {
                    Agg::Ci95(Box::new(inner.resolve(f)?))
                }
                _ => return Err(E::from(
                    "an interval (Ci95) is only of a ratio or a saving, whose replicates the totals keep"
                        .to_owned(),
                )),
            },
            Self::Keyed(parts) => Agg::Keyed(
                parts
                    .iter()
                    .map(|(k, a)| Ok((k.clone(), a.resolve(f)?)))
                    .collect::<Result<_, E>>()?,
            ),
        })
    }
}

impl Agg<usize> {
    /// The slots whose bootstrap replicates the aggregation's intervals read (the two of each [`Agg::Ci95`]'s
    /// ratio or saving, in keyed parts too), in order, each once: a metric's totals keep replicates of these
    /// slots and no other.
    #[must_use]
    pub fn interval_slots(&self) -> Vec<usize> {
        fn collect(agg: &Agg<usize>, out: &mut Vec<usize>) {
            match agg {
                Agg::Ci95(inner) => {
                    if let Agg::Ratio(a, b)
                    | Agg::Saving(a, b)
                    | Agg::FloatSaving(a, b)
                    | Agg::FloatRatio(a, b) = **inner
                    {
                        out.extend([a, b]);
                    }
                }
                Agg::Keyed(parts) => parts.iter().for_each(|(_, a)| collect(a, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        collect(self, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The (kept, pairs) slots of each [`Agg::ShareCi95`] of the aggregation (in keyed parts too), in order:
    /// a metric's totals keep the clustered sums of these.
    #[must_use]
    pub fn cluster_pairs(&self) -> Vec<(usize, usize)> {
        match self {
            Agg::ShareCi95(a, b) => vec![(*a, *b)],
            Agg::Keyed(parts) => parts.iter().flat_map(|(_, a)| a.cluster_pairs()).collect(),
            _ => Vec::new(),
        }
    }
}

/// The running totals of one episode value.
#[derive(Debug, Clone, Default, PartialEq)]
struct Acc {
    /// Sum of the integer values.
    int: u128,
    /// Sum of every non-null value as a float, in the order added.
    float: f64,
    /// Whether a value was a float.
    any_float: bool,
    /// Whether a value was null.
    any_null: bool,
    /// Values that were not null.
    present: usize,
    /// The largest value.
    max: Option<Value>,
}

impl Acc {
    fn add(&mut self, v: &Value) {
        match v {
            Value::Null => self.any_null = true,
            Value::Number(n) => {
                self.present += 1;
                match n.as_u64() {
                    Some(i) => self.int += u128::from(i),
                    None => self.any_float = true,
                }
                self.float += n.as_f64().unwrap_or(0.0);
                let larger = self.max.as_ref().is_none_or(|m| {
                    m.as_f64().unwrap_or(f64::NEG_INFINITY) < n.as_f64().unwrap_or(0.0)
                });
                if larger {
                    self.max = Some(v.clone());
                }
            }
            Value::Bool(b) => {
                self.present += 1;
                self.int += u128::from(*b);
                self.float += f64::from(u8::from(*b));
            }
            _ => {}
        }
    }

    fn sum(&self) -> Value {
        if self.any_null {
            Value::Null
        } else if self.any_float {
            float(self.float)
        } else {
            u64::try_from(self.int).map_or_else(|_| float(self.float), Value::from)
        }
    }

    /// The sum as a float, null when a value was.
    fn sum_f64(&self) -> Option<f64> {
        (!self.any_null).then(|| {
            if self.any_float {
                self.float
            } else {
                #[allow(clippy::cast_precision_loss)]
                let f = self.int as f64;
                f
            }
        })
    }

    /// The integer sum, for ratios of counts (exact, as the counts are).
    fn count(&self) -> usize {
        usize::try_from(self.int).unwrap_or(usize::MAX)
    }
}

/// A float as a JSON value (null for NaN and infinities, which JSON cannot hold).
#[must_use]
pub fn float(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// An optional float as a JSON value.
#[must_use]
pub fn maybe(v: Option<f64>) -> Value {
    v.map_or(Value::Null, float)
}

/// The running totals of one metric for one strategy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    values: Vec<Acc>,
    baseline: Vec<Acc>,
    /// Per value, its bootstrap replicates' weighted sums: `Some` for a value of [`Totals::replicated`] until it
    /// is null once, `None` for the others.
    replicates: Vec<Option<Vec<f64>>>,
    /// The values whose replicates are kept: those the metric's intervals read ([`Agg::interval_slots`]).
    replicated: Vec<usize>,
    /// Per (kept, pairs) slots of an [`Agg::ShareCi95`], the episodes' clustered sums.
    clustered: Vec<((usize, usize), ClusterSums)>,
}

impl Totals {
    /// Totals that also keep the bootstrap replicates' sums of the values `replicated` (for a metric with
    /// [`Agg::Ci95`] fields: the slots they read).
    #[must_use]
    pub fn with_replicates(replicated: Vec<usize>) -> Self {
        Self {
            replicated,
            ..Self::default()
        }
    }

    /// The same totals, also keeping the clustered sums of each (kept, pairs) slots of `pairs` (for a metric
    /// with [`Agg::ShareCi95`] fields: the slots they read).
    #[must_use]
    pub fn clustering(mut self, pairs: Vec<(usize, usize)>) -> Self {
        self.clustered = pairs
            .into_iter()
            .map(|p| (p, ClusterSums::default()))
            .collect();
        self
    }

    /// Adds one episode with its bootstrap `weights` (one per replicate; see [`super::bootstrap::weights`]).
    pub fn add_weighted(&mut self, values: &[Value], baseline: &[Value], weights: &[u8]) {
        self.add(values, baseline);
        if self.replicated.is_empty() {
            return;
        }
        if self.replicates.len() < values.len() {
            let from = self.replicates.len();
            self.replicates.resize(values.len(), None);
            for &i in self.replicated.iter().filter(|&&i| i >= from) {
                if let Some(reps) = self.replicates.get_mut(i) {
                    *reps = Some(vec![0.0; weights.len()]);
                }
            }
        }
        for &i in &self.replicated {
            let (Some(reps), Some(v)) = (self.replicates.get_mut(i), values.get(i)) else {
                continue;
            };
            match (reps.as_mut(), v.as_f64()) {
                (Some(reps), Some(x)) => {
                    for (r, &w) in reps.iter_mut().zip(weights) {
                        *r += f64::from(w) * x;
                    }
                }
                (Some(_), None) if v.is_null() => *reps = None,
                (Some(reps), None) => {
                    // A flag counts as 0 or 1.
                    let x = f64::from(u8::from(v.as_bool().unwrap_or(false)));
                    for (r, &w) in reps.iter_mut().zip(weights) {
                        *r += f64::from(w) * x;
                    }
                }
                (None, _) => {}
            }
        }
    }

    /// Adds one episode: this strategy's values of the metric, and the baseline's on the same episode.
    pub fn add(&mut self, values: &[Value], baseline: &[Value]) {
        for ((a, b), sums) in &mut self.clustered {
            let count = |i: usize| values.get(i).and_then(Value::as_u64);
            sums.add(count(*a), count(*b));
        }
        for (accs, vs) in [(&mut self.values, values), (&mut self.baseline, baseline)] {
            if accs.len() < vs.len() {
                accs.resize(vs.len(), Acc::default());
            }
            for (acc, v) in accs.iter_mut().zip(vs) {
                acc.add(v);
            }
        }
    }

    /// The value of `agg` over the episodes added so far.
    #[must_use]
    pub fn get(&self, agg: &Agg<usize>) -> Value {
        let acc = |i: usize| self.values.get(i).cloned().unwrap_or_default();
        match agg {
            Agg::Sum(i) => acc(*i).sum(),
            Agg::Max(i) => acc(*i).max.unwrap_or(Value::Null),
            Agg::Mean(i) => {
                let a = acc(*i);
                #[allow(clippy::cast_precision_loss)]
                let mean = (a.present > 0).then(|| a.float / a.present as f64);
                maybe(mean)
            }
            Agg::Ratio(a, b) => maybe(ratio(acc(*a).count(), acc(*b).count())),
            Agg::Share(a, b) => float(ratio(acc(*a).count(), acc(*b).count()).unwrap_or(0.0)),
            Agg::Saving(a, b) => {
                float(ratio(acc(*a).count(), acc(*b).count()).map_or(0.0, |r| 1.0 - r))
            }
            Agg::SavingOverBaseline(i) => {
                let base = self.baseline.get(*i).cloned().unwrap_or_default();
                match (acc(*i).sum_f64(), base.sum_f64()) {
                    (Some(c), Some(b)) if b > 0.0 => float(1.0 - c / b),
                    _ => Value::Null,
                }
            }
            Agg::FloatSaving(a, b) => match (acc(*a).sum_f64(), acc(*b).sum_f64()) {
                (Some(x), Some(y)) if y > 0.0 => float(1.0 - x / y),
                _ => Value::Null,
            },
            Agg::FloatRatio(a, b) => match (acc(*a).sum_f64(), acc(*b).sum_f64()) {
                (Some(x), Some(y)) if y > 0.0 => float(x / y),
                _ => Value::Null,
            },
            Agg::Ci95(inner) => match self.replicate_values(inner) {
                Some(values) => super::bootstrap::interval(values)
                    .map_or(Value::Null, |(lo, hi)| {
                        Value::from(vec![float(lo), float(hi)])
                    }),
                None => Value::Null,
            },
            Agg::ShareCi95(a, b) => self
                .clustered
                .iter()
                .find(|(p, _)| *p == (*a, *b))
                .and_then(|(_, sums)| sums.interval())
                .map_or(Value::Null, |(lo, hi)| {
                    Value::from(vec![float(lo), float(hi)])
                }),
            Agg::Keyed(parts) => Value::Object(
                parts
                    .iter()
                    .map(|(name, agg)| (name.clone(), self.get(agg)))
                    .collect(),
            ),
        }
    }
}

impl Totals {
    /// The value of `agg` (a saving or a ratio) in each bootstrap replicate, `None` for a replicate where it
    /// is undefined; `None` in all when the totals keep no replicates or a value was null.
    #[must_use]
    pub fn replicate_values(&self, agg: &Agg<usize>) -> Option<Vec<Option<f64>>> {
        let reps = |i: usize| self.replicates.get(i).and_then(Option::as_ref);
        let pairs = |a: usize, b: usize| Some(reps(a)?.iter().zip(reps(b)?));
        Some(match agg {
            Agg::Saving(a, b) | Agg::FloatSaving(a, b) => pairs(*a, *b)?
                .map(|(x, y)| (*y > 0.0).then(|| 1.0 - x / y))
                .collect(),
            Agg::Ratio(a, b) | Agg::FloatRatio(a, b) => pairs(*a, *b)?
                .map(|(x, y)| (*y > 0.0).then(|| x / y))
                .collect(),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A metric's totals keep the replicates of the slots its intervals read, alone or among keyed parts, each
    /// once and in order (`Catalog::totals`): a sum, a saving or keyed parts without an interval ask for none.
    #[test]
    fn the_slots_an_interval_reads_keep_replicates() {
        let none: Vec<usize> = Vec::new();
        assert_eq!(Agg::Sum(0).interval_slots(), none);
        assert_eq!(Agg::Saving(0, 1).interval_slots(), none);
        assert_eq!(
            Agg::Keyed(vec![("x".into(), Agg::Ratio(0, 1))]).interval_slots(),
            none
        );
        assert_eq!(Agg::Ci95(Box::new(Agg::Sum(0))).interval_slots(), none);
        assert_eq!(
            Agg::Ci95(Box::new(Agg::Saving(3, 1))).interval_slots(),
            [1, 3]
        );
        assert_eq!(
            Agg::Ci95(Box::new(Agg::FloatSaving(7, 8))).interval_slots(),
            [7, 8]
        );
        assert_eq!(
            Agg::Keyed(vec![
                ("x".into(), Agg::Sum(0)),
                ("y".into(), Agg::Ci95(Box::new(Agg::Ratio(5, 2)))),
                ("z".into(), Agg::Ci95(Box::new(Agg::FloatRatio(2, 6)))),
            ])
            .interval_slots(),
            [2, 5, 6]
        );
    }

    /// The float aggregations are null when the sum they divide by is not above 0, as documented: a
    /// negative sum too, which a division alone would turn into a number.
    #[test]
    fn a_denominator_not_above_zero_gives_null() {
        let mut t = Totals::default();
        t.add(&[json!(2.0), json!(-4.0)], &[json!(-8.0), json!(1.0)]);
        assert_eq!(t.get(&Agg::FloatSaving(0, 1)), Value::Null);
        assert_eq!(t.get(&Agg::FloatRatio(0, 1)), Value::Null);
        assert_eq!(t.get(&Agg::SavingOverBaseline(0)), Value::Null);
        // A number when it is above 0: slot 1's −4 against the baseline's 1 is 1 − (−4)/1 = 5; then Σ a = 2
        // over Σ b = 4.
        assert_eq!(t.get(&Agg::SavingOverBaseline(1)), json!(5.0));
        t.add(&[json!(0.0), json!(8.0)], &[json!(10.0), json!(0.0)]);
        assert_eq!(t.get(&Agg::FloatSaving(0, 1)), json!(0.5));
        assert_eq!(t.get(&Agg::FloatRatio(0, 1)), json!(0.5));
    }

    /// Each replicate's sums are the episodes' values weighted by that replicate's weights; a flag weighs as 0
    /// or 1; a null value ends its replicates; a value not asked for and totals without the bootstrap keep none.
    #[test]
    fn replicates_are_weighted_sums_by_hand() {
        let mut t = Totals::with_replicates(vec![0, 1, 2]);
        // Values: [tokens, flag, cost, tokens not replicated]; weights of four replicates per episode (the last
        // draws neither).
        t.add_weighted(
            &[json!(10), json!(true), json!(4.0), json!(7)],
            &[],
            &[1, 0, 2, 0],
        );
        t.add_weighted(
            &[json!(3), json!(true), json!(2.0), json!(5)],
            &[],
            &[0, 3, 1, 0],
        );
        assert_eq!(
            t.replicate_values(&Agg::Ratio(3, 0)),
            None,
            "slot 3 keeps none"
        );
        assert_eq!(
            t.replicate_values(&Agg::Ratio(0, 3)),
            None,
            "slot 3 keeps none"
        );
        assert_eq!(t.get(&Agg::Sum(3)), json!(12));
        // Tokens per replicate: 10, 9, 23, 0; cost: 4, 6, 10, 0; flags: 1, 3, 3, 0. A replicate with nothing to
        // divide by has no figure.
        assert_eq!(
            t.replicate_values(&Agg::Ratio(0, 2)),
            Some(vec![Some(2.5), Some(1.5), Some(2.3), None])
        );
        assert_eq!(
            t.replicate_values(&Agg::Ratio(1, 0)),
            Some(vec![Some(0.1), Some(3.0 / 9.0), Some(3.0 / 23.0), None])
        );
        assert_eq!(
            t.replicate_values(&Agg::Saving(1, 0)),
            Some(vec![
                Some(0.9),
                Some(1.0 - 3.0 / 9.0),
                Some(1.0 - 3.0 / 23.0),
                None
            ])
        );
        assert_eq!(
            t.replicate_values(&Agg::Sum(0)),
            None,
            "only ratios and savings"
        );
        // The plain totals are those of `add`.
        assert_eq!(t.get(&Agg::Sum(0)), json!(13));
        t.add_weighted(
            &[json!(1), json!(false), Value::Null, json!(1)],
            &[],
            &[1, 1, 1, 1],
        );
        assert_eq!(t.replicate_values(&Agg::Ratio(0, 2)), None);
        assert_eq!(
            t.replicate_values(&Agg::Ratio(1, 0)),
            Some(vec![
                Some(1.0 / 11.0),
                Some(3.0 / 10.0),
                Some(3.0 / 24.0),
                Some(0.0)
            ])
        );
        let mut plain = Totals::default();
        plain.add_weighted(&[json!(10), json!(true)], &[], &[1, 0, 2]);
        assert_eq!(plain.replicate_values(&Agg::Ratio(1, 0)), None);
        assert_eq!(plain.get(&Agg::Sum(0)), json!(10));
    }

    #[test]
    fn aggregations_by_hand() {
        let mut t = Totals::default();
        // Values: [tokens, baseline tokens, cost, mean-able, flag]
        t.add(
            &[json!(50), json!(100), json!(1.0), json!(0.5), json!(true)],
            &[json!(100), json!(100), json!(4.0)],
        );
        t.add(
            &[
                json!(300),
                json!(300),
                json!(2.0),
                Value::Null,
                json!(false),
            ],
            &[json!(300), json!(300), json!(2.0)],
        );
        assert_eq!(t.get(&Agg::Sum(0)), json!(350));
        assert_eq!(t.get(&Agg::Sum(2)), json!(3.0));
        assert_eq!(t.get(&Agg::Max(0)), json!(300));
        // Of equal values the first is the maximum, as it was written: 300.0 after 300 leaves 300.
        let mut equal = Totals::default();
        equal.add(&[json!(300)], &[]);
        equal.add(&[json!(300.0)], &[]);
        assert_eq!(equal.get(&Agg::Max(0)).to_string(), "300");
        assert_eq!(t.get(&Agg::Mean(3)), json!(0.5));
        assert_eq!(t.get(&Agg::Sum(3)), Value::Null);
        assert_eq!(t.get(&Agg::Sum(4)), json!(1));
        // A flag counts as 0 or 1 in a mean too.
        assert_eq!(t.get(&Agg::Mean(4)), json!(0.5));
        assert_eq!(t.get(&Agg::Saving(0, 1)), json!(0.125));
        assert_eq!(t.get(&Agg::Ratio(0, 1)), json!(0.875));
        assert_eq!(t.get(&Agg::SavingOverBaseline(2)), json!(0.5));
        assert_eq!(
            t.get(&Agg::Keyed(vec![
                ("a".into(), Agg::Sum(0)),
                ("b".into(), Agg::Share(0, 1))
            ])),
            json!({"a": 350, "b": 0.875})
        );
        // Nothing added: sums are 0, ratios have nothing to divide, savings are 0.
        let empty = Totals::default();
        assert_eq!(empty.get(&Agg::Sum(0)), json!(0));
        assert_eq!(empty.get(&Agg::Ratio(0, 1)), Value::Null);
        assert_eq!(empty.get(&Agg::Share(0, 1)), json!(0.0));
        assert_eq!(empty.get(&Agg::Saving(0, 1)), json!(0.0));
        assert_eq!(empty.get(&Agg::Mean(0)), Value::Null);
        assert_eq!(empty.get(&Agg::SavingOverBaseline(0)), Value::Null);
        // One unknown cost makes the total unknown, whatever comes after.
        let mut t = Totals::default();
        for v in [json!(1.0), Value::Null, json!(1.0)] {
            t.add(&[v], &[json!(2.0)]);
        }
        assert_eq!(t.get(&Agg::Sum(0)), Value::Null);
        assert_eq!(t.get(&Agg::SavingOverBaseline(0)), Value::Null);
    }
}
