//! The [`Catalog`]: the metrics of a run, their slots and fields checked and resolved once, and the column
//! lists, running totals and strategy results they make.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::slots::{Name, Slot, Values};
use super::{
    intervals, Agg, Column, EpisodeMetrics, EpisodeView, Field, Metric, StepView, StrategyMetrics,
    StrategyTotals, Totals,
};

/// The metrics of a run and the column lists they make, built once.
pub struct Catalog {
    metrics: Vec<Box<dyn Metric>>,
    /// Per metric: its step slots.
    step_slots: Vec<Vec<Slot>>,
    step_columns: Vec<Column>,
    /// Per metric: its episode slots.
    episode_slots: Vec<Vec<Slot>>,
    episode_columns: Vec<Column>,
    /// Per metric: its fields as declared, and their aggregations resolved to slot indices.
    fields: Vec<Vec<Field>>,
    aggs: Vec<Vec<Agg<usize>>>,
    /// Per metric: the slots whose bootstrap replicates its totals keep.
    replicated: Vec<Vec<usize>>,
    digest: String,
}

/// Field names a strategy's results hold besides the catalog's (`summary.json` flattens them together).
const STRATEGY_IDENTITY: [&str; 2] = ["strategy", "episodes"];

impl Catalog {
    /// The metrics every run reports, in column order.
    #[must_use]
    pub fn standard() -> Self {
        use super::{
            acted, cost, failed, floor, judge, llm_use, needs, probes, retention, token_share,
            tokens,
        };
        Self::new(vec![
            Box::new(tokens::Tokens),
            Box::new(llm_use::LlmUse),
            Box::new(llm_use::Actions),
            Box::new(cost::Cost),
            Box::new(retention::Retention),
            Box::new(needs::RetentionAtNeed),
            Box::new(acted::Acted),
            Box::new(floor::Floor),
            Box::new(failed::Failed),
            Box::new(intervals::Intervals),
            Box::new(probes::Probes),
            Box::new(judge::Judge),
            Box::new(token_share::TokenShare),
        ])
    }

    /// A catalog of `metrics`, in column order.
    ///
    /// # Panics
    /// When the metrics' declarations disagree ([`Catalog::try_new`]): a bug in a metric.
    #[must_use]
    pub fn new(metrics: Vec<Box<dyn Metric>>) -> Self {
        Self::try_new(metrics).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A catalog of `metrics`, in column order, with their declarations checked: within a metric, slot names
    /// are unique, step slots are columns and every field's aggregation names slots the metric declares; over
    /// the catalog, column names are unique in each table and field names in a strategy's results.
    ///
    /// # Errors
    /// The first disagreement, naming the metric and the slot or field.
    pub fn try_new(metrics: Vec<Box<dyn Metric>>) -> Result<Self, String> {
        let step_slots: Vec<Vec<Slot>> = metrics.iter().map(|m| m.step_slots()).collect();
        let episode_slots: Vec<Vec<Slot>> = metrics.iter().map(|m| m.episode_slots()).collect();
        let fields: Vec<Vec<Field>> = metrics.iter().map(|m| m.strategy_fields()).collect();
        let mut aggs = Vec::with_capacity(metrics.len());
        let mut replicated = Vec::with_capacity(metrics.len());
        for (i, m) in metrics.iter().enumerate() {
            let name = m.name();
            unique(name, "step slot", step_slots[i].iter().map(|s| s.name))?;
            unique(
                name,
                "episode slot",
                episode_slots[i].iter().map(|s| s.name),
            )?;
            if let Some(s) = step_slots[i].iter().find(|s| s.column.is_none()) {
                return Err(format!(
                    "metric {name}: step slot `{}` is not a column (steps are not aggregated)",
                    s.name
                ));
            }
            let slots = &episode_slots[i];
            aggs.push(
                fields[i]
                    .iter()
                    .map(|f| {
                        f.agg
                            .resolve(&mut |n: &Name| index(slots, *n))
                            .map_err(|e: String| {
                                format!("metric {name}: field `{}`: {e}", f.column.name)
                            })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            );
            let mut slots: Vec<usize> = aggs[i].iter().flat_map(Agg::interval_slots).collect();
            for n in m.replicated() {
                slots.push(index(&episode_slots[i], n).map_err(|e| format!("metric {name}: {e}"))?);
            }
            slots.sort_unstable();
            slots.dedup();
            replicated.push(slots);
        }
        let step_columns: Vec<Column> = columns(&step_slots).cloned().collect();
        let episode_columns: Vec<Column> = columns(&episode_slots).cloned().collect();
        unique(
            "catalog",
            "steps.csv column",
            step_columns.iter().map(|c| &c.name),
        )?;
        unique(
            "catalog",
            "episodes.csv column",
            episode_columns.iter().map(|c| &c.name),
        )?;
        unique(
            "catalog",
            "strategy field",
            STRATEGY_IDENTITY
                .iter()
                .map(|s| (*s).to_owned())
                .chain(fields.iter().flatten().map(|f| f.column.name.clone())),
        )?;
        let digest = digest(&step_slots, &episode_slots);
        Ok(Self {
            metrics,
            step_slots,
            step_columns,
            episode_slots,
            episode_columns,
            fields,
            aggs,
            replicated,
            digest,
        })
    }

    /// The columns of a step row, after the step's identity (episode, strategy, step, item index).
    #[must_use]
    pub fn step_columns(&self) -> &[Column] {
        &self.step_columns
    }

    /// The values of one step, one per [`Catalog::step_columns`].
    ///
    /// # Panics
    /// When a metric's values disagree with its slots ([`Values::put`]).
    #[must_use]
    pub fn step_values(&self, step: &StepView<'_>) -> Vec<Value> {
        let mut out = Vec::with_capacity(self.step_columns.len());
        for (m, slots) in self.metrics.iter().zip(&self.step_slots) {
            let mut values = Values::new(m.name(), slots, &mut out);
            m.step_values(step, &mut values);
            values.finish();
        }
        out
    }

    /// The columns of an episode row, after the episode's identity (episode, source, strategy).
    pub fn episode_columns(&self) -> impl Iterator<Item = &Column> {
        self.episode_columns.iter()
    }

    /// The fields of a strategy's results, after its name and episode count.
    pub fn strategy_fields(&self) -> impl Iterator<Item = &Field> {
        self.fields.iter().flatten()
    }

    /// A digest of the names, in order, of every metric's step and episode values and of the columns among
    /// them: what a run's journal and tables store by position. Changing, adding, removing or moving a
    /// metric's value changes it, so that a journal written by another catalog is refused, not misread.
    #[must_use]
    pub fn layout_digest(&self) -> &str {
        &self.digest
    }

    /// The paired difference `b` − `a` of two strategies (retention at need, cost saving) with its interval,
    /// when the catalog has the [`intervals::Intervals`] metric.
    #[must_use]
    pub fn paired(
        &self,
        a: (&str, &StrategyTotals),
        b: (&str, &StrategyTotals),
    ) -> Option<intervals::PairedDifference> {
        let at = self
            .metrics
            .iter()
            .position(|m| m.name() == std::any::type_name::<intervals::Intervals>())?;
        let slots = &self.episode_slots[at];
        let resolve = |agg: &Agg| {
            agg.resolve(&mut |n: &Name| index(slots, *n))
                .expect("the Intervals metric declares the slots of its figures")
        };
        intervals::paired(
            a,
            b,
            at,
            &resolve(&intervals::RETENTION),
            &resolve(&intervals::COST_SAVINGS),
        )
    }

    /// The metrics of one episode under one strategy.
    ///
    /// # Panics
    /// When a metric's values disagree with its slots ([`Values::put`]).
    #[must_use]
    pub fn episode(&self, view: &EpisodeView<'_>) -> EpisodeMetrics {
        EpisodeMetrics {
            episode: view.episode.id.clone(),
            source: view.episode.source.clone(),
            strategy: view.replay.strategy.clone(),
            values: self
                .metrics
                .iter()
                .zip(&self.episode_slots)
                .map(|(m, slots)| {
                    let mut out = Vec::with_capacity(slots.len());
                    let mut values = Values::new(m.name(), slots, &mut out);
                    m.episode_values(view, &mut values);
                    values.finish();
                    out
                })
                .collect(),
        }
    }

    /// The values of an episode row, one per [`Catalog::episode_columns`].
    pub fn episode_row<'m>(
        &'m self,
        m: &'m EpisodeMetrics,
    ) -> impl Iterator<Item = &'m Value> + 'm {
        self.episode_slots
            .iter()
            .zip(&m.values)
            .flat_map(|(slots, values)| {
                slots
                    .iter()
                    .zip(values)
                    .filter_map(|(s, v)| s.column.as_ref().map(|_| v))
            })
    }

    /// Running totals for one strategy, empty.
    #[must_use]
    pub fn totals(&self) -> StrategyTotals {
        StrategyTotals {
            episodes: 0,
            metrics: self
                .aggs
                .iter()
                .zip(&self.replicated)
                .map(|(aggs, replicated)| {
                    Totals::with_replicates(replicated.clone())
                        .clustering(aggs.iter().flat_map(Agg::cluster_pairs).collect())
                })
                .collect(),
        }
    }

    /// The strategy's results from its running totals.
    #[must_use]
    pub fn strategy(&self, name: &str, totals: &StrategyTotals) -> StrategyMetrics {
        let mut values = serde_json::Map::new();
        for ((fields, aggs), t) in self.fields.iter().zip(&self.aggs).zip(&totals.metrics) {
            for (f, agg) in fields.iter().zip(aggs) {
                values.insert(f.column.name.clone(), t.get(agg));
            }
        }
        StrategyMetrics {
            strategy: name.to_owned(),
            episodes: totals.episodes,
            baseline: false,
            recorded: false,
            values,
        }
    }
}

/// The index of the slot `name` among `slots`.
fn index(slots: &[Slot], name: Name) -> Result<usize, String> {
    slots
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("no episode slot `{name}`"))
}

/// The columns among `slots`, metric by metric.
fn columns(slots: &[Vec<Slot>]) -> impl Iterator<Item = &Column> {
    slots.iter().flatten().filter_map(|s| s.column.as_ref())
}

/// An error naming the first of `names` that is there twice.
fn unique<T: std::fmt::Display + Ord>(
    whose: &str,
    what: &str,
    names: impl IntoIterator<Item = T>,
) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        if let Some(twice) = seen.replace(n) {
            return Err(format!("{whose}: {what} `{twice}` is declared twice"));
        }
    }
    Ok(())
}

/// The first 16 hex digits of the SHA-256 of the value layout: per metric, its step slots, then its episode
/// slots (a column marked `*`).
fn digest(step_slots: &[Vec<Slot>], episode_slots: &[Vec<Slot>]) -> String {
    let mut text = String::new();
    for (steps, episodes) in step_slots.iter().zip(episode_slots) {
        let names = |slots: &[Slot]| -> Vec<String> {
            slots
                .iter()
                .map(|s| format!("{}{}", s.name, if s.column.is_some() { "*" } else { "" }))
                .collect()
        };
        text.push_str(&format!(
            "step {}\nepisode {}\n",
            names(steps).join(","),
            names(episodes).join(",")
        ));
    }
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Unit;

    /// A metric of `slots` (a column when marked), its step slots, and `fields`.
    struct Declared {
        step: Vec<&'static str>,
        slots: Vec<(&'static str, bool)>,
        fields: Vec<(&'static str, Agg)>,
    }

    impl Metric for Declared {
        fn name(&self) -> &'static str {
            "Declared"
        }

        fn step_slots(&self) -> Vec<Slot> {
            self.step
                .iter()
                .map(|n| Slot::column(*n, Unit::Count, "."))
                .collect()
        }

        fn episode_slots(&self) -> Vec<Slot> {
            self.slots
                .iter()
                .map(|&(n, column)| {
                    if column {
                        Slot::column(n, Unit::Count, ".")
                    } else {
                        Slot::kept(n)
                    }
                })
                .collect()
        }

        fn episode_values(&self, _: &EpisodeView<'_>, out: &mut Values<'_>) {
            for (n, _) in &self.slots {
                out.put(*n, 1);
            }
        }

        fn strategy_fields(&self) -> Vec<Field> {
            self.fields
                .iter()
                .map(|(n, agg)| Field::new(*n, Unit::Count, ".", agg.clone()))
                .collect()
        }
    }

    fn metric(slots: &[(&'static str, bool)], fields: &[(&'static str, Agg)]) -> Box<dyn Metric> {
        Box::new(Declared {
            step: Vec::new(),
            slots: slots.to_vec(),
            fields: fields.to_vec(),
        })
    }

    fn error(metrics: Vec<Box<dyn Metric>>) -> String {
        Catalog::try_new(metrics).err().expect("a disagreement")
    }

    #[test]
    fn the_standard_catalog_is_consistent() {
        let catalog = Catalog::try_new(Catalog::standard().metrics).unwrap();
        assert_eq!(catalog.layout_digest().len(), 16);
        // Aggregations are resolved once, one per field.
        assert_eq!(
            catalog.aggs.iter().map(Vec::len).sum::<usize>(),
            catalog.strategy_fields().count()
        );
    }

    /// Each way a metric's declarations can disagree is refused when the catalog is built, naming the metric
    /// and the slot or field.
    #[test]
    fn disagreeing_declarations_are_refused() {
        let ok = || metric(&[("a", true), ("b", false)], &[("f", Agg::ratio("a", "b"))]);
        assert!(Catalog::try_new(vec![ok()]).is_ok());
        assert_eq!(
            error(vec![metric(
                &[("a", true)],
                &[("f", Agg::ratio("a", "typo"))]
            )]),
            "metric Declared: field `f`: no episode slot `typo`"
        );
        assert_eq!(
            error(vec![metric(
                &[("a", true)],
                &[("f", Agg::keyed([("k", Agg::sum(("a", "k")))]))]
            )]),
            "metric Declared: field `f`: no episode slot `a_k`"
        );
        assert_eq!(
            error(vec![metric(&[("a", true), ("a", false)], &[])]),
            "Declared: episode slot `a` is declared twice"
        );
        assert_eq!(
            error(vec![ok(), metric(&[("a", true)], &[])]),
            "catalog: episodes.csv column `a` is declared twice"
        );
        assert_eq!(
            error(vec![ok(), metric(&[("c", true)], &[("f", Agg::sum("c"))])]),
            "catalog: strategy field `f` is declared twice"
        );
        assert_eq!(
            error(vec![metric(&[("a", true)], &[("episodes", Agg::sum("a"))])]),
            "catalog: strategy field `episodes` is declared twice"
        );
        assert_eq!(
            error(vec![metric(&[("a", true)], &[("f", Agg::ci95(Agg::sum("a")))])]),
            "metric Declared: field `f`: an interval (Ci95) is only of a ratio or a saving, whose replicates the \
             totals keep"
        );
        let steps = Box::new(Declared {
            step: vec!["s", "s"],
            slots: Vec::new(),
            fields: Vec::new(),
        });
        assert_eq!(
            error(vec![steps]),
            "Declared: step slot `s` is declared twice"
        );
    }

    /// The layout digest changes with the names, order and columns of the values a journal stores, and with
    /// nothing else (a field's aggregation is recomputed from the values on resume).
    #[test]
    fn the_layout_digest_follows_the_stored_values() {
        let digest = |slots: &[(&'static str, bool)], fields: &[(&'static str, Agg)]| {
            Catalog::new(vec![metric(slots, fields)])
                .layout_digest()
                .to_owned()
        };
        let base = digest(&[("a", true), ("b", false)], &[]);
        assert_eq!(base, digest(&[("a", true), ("b", false)], &[]), "stable");
        for (what, other) in [
            ("a value renamed", digest(&[("a", true), ("c", false)], &[])),
            (
                "values reordered",
                digest(&[("b", false), ("a", true)], &[]),
            ),
            (
                "a value added",
                digest(&[("a", true), ("b", false), ("c", false)], &[]),
            ),
            ("a value removed", digest(&[("a", true)], &[])),
            (
                "a column no longer written",
                digest(&[("a", false), ("b", false)], &[]),
            ),
        ] {
            assert_ne!(base, other, "{what}");
        }
        assert_eq!(
            base,
            digest(&[("a", true), ("b", false)], &[("f", Agg::sum("a"))]),
            "fields are not stored"
        );
        // Values moved from one metric to the next are stored apart: the layout differs.
        let split = Catalog::new(vec![
            metric(&[("a", true)], &[]),
            metric(&[("b", false)], &[]),
        ]);
        assert_ne!(base, split.layout_digest());
        // The standard catalog's is what a journal's head carries.
        assert_eq!(
            Catalog::standard().layout_digest(),
            crate::run::journal::metrics_layout()
        );
    }
}
