//! Named value slots: what a metric computes per step and per episode, declared once by name, and the writer
//! its values go through, which checks each value against the slot it fills.
//!
//! A metric declares its slots ([`Slot`]) — each a [`Name`], and for the ones written to `steps.csv` or
//! `episodes.csv`, the column's unit and meaning — and computes its values with [`Values::put`], naming each.
//! A value put under another name than the next declared slot, or a slot left empty, is a bug in the metric,
//! and the writer panics saying which (every replay in the test suite goes through it). Aggregations
//! ([`super::Agg`]) name the slots they read; the catalog resolves the names when it is built.

use std::fmt;

use serde_json::Value;

use super::{Column, Unit};

/// The name of a metric's value: a base name, and for one value per kind (finding kind, item kind, cause…)
/// the kind. Its text (a column's name) is `base`, or `base_kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name {
    base: &'static str,
    kind: Option<&'static str>,
}

impl Name {
    /// A value's name.
    #[must_use]
    pub const fn of(base: &'static str) -> Self {
        Self { base, kind: None }
    }

    /// The name of `base`'s value for `kind`.
    #[must_use]
    pub const fn kind(base: &'static str, kind: &'static str) -> Self {
        Self {
            base,
            kind: Some(kind),
        }
    }
}

impl Name {
    /// Whether `other` is this name: the same constants (one pointer comparison each, as metrics put their
    /// values by the constants of [`super::slot`] and kinds' `as_str`), else the same text.
    #[must_use]
    pub fn is(self, other: Name) -> bool {
        let same = |a: &'static str, b: &'static str| std::ptr::eq(a, b) || a == b;
        same(self.base, other.base)
            && match (self.kind, other.kind) {
                (None, None) => true,
                (Some(a), Some(b)) => same(a, b),
                _ => false,
            }
    }
}

impl From<&'static str> for Name {
    fn from(base: &'static str) -> Self {
        Self::of(base)
    }
}

impl From<(&'static str, &'static str)> for Name {
    fn from((base, kind): (&'static str, &'static str)) -> Self {
        Self::kind(base, kind)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            None => f.write_str(self.base),
            Some(kind) => write!(f, "{}_{kind}", self.base),
        }
    }
}

/// One value a metric computes per step or per episode: its name, and the column it is written to, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The value's name (the column's name when it is one).
    pub name: Name,
    /// Its column in `steps.csv` or `episodes.csv`; `None` for a value kept for the strategy's aggregations
    /// only.
    pub column: Option<Column>,
}

impl Slot {
    /// A value written as a column named after it.
    pub fn column(name: impl Into<Name>, unit: Unit, doc: impl Into<String>) -> Self {
        let name = name.into();
        Self {
            name,
            column: Some(Column::new(name.to_string(), unit, doc)),
        }
    }

    /// A value kept for the strategy's aggregations, not written to a table.
    pub fn kept(name: impl Into<Name>) -> Self {
        Self {
            name: name.into(),
            column: None,
        }
    }
}

/// Where a metric puts its values: one per declared slot, in the declared order, each by its slot's name.
pub struct Values<'a> {
    metric: &'static str,
    slots: &'a [Slot],
    out: &'a mut Vec<Value>,
    start: usize,
}

impl<'a> Values<'a> {
    /// A writer of `metric`'s values for `slots`, appended to `out`.
    pub(super) fn new(metric: &'static str, slots: &'a [Slot], out: &'a mut Vec<Value>) -> Self {
        let start = out.len();
        Self {
            metric,
            slots,
            out,
            start,
        }
    }

    /// Puts the value of the slot `name`, which must be the next slot the metric declares.
    ///
    /// # Panics
    /// When `name` is not that slot's name: the metric's values and its declaration disagree.
    pub fn put(&mut self, name: impl Into<Name>, value: impl Into<Value>) -> &mut Self {
        let name = name.into();
        let at = self.out.len() - self.start;
        match self.slots.get(at) {
            Some(slot) if slot.name.is(name) => self.out.push(value.into()),
            Some(slot) => panic!(
                "metric {}: value `{name}` put where slot {at} `{}` is declared",
                self.metric, slot.name
            ),
            None => panic!(
                "metric {}: value `{name}` put after its {} declared slots",
                self.metric,
                self.slots.len()
            ),
        }
        self
    }

    /// Checks that every declared slot has its value.
    ///
    /// # Panics
    /// When one has none.
    pub(super) fn finish(self) {
        let at = self.out.len() - self.start;
        if let Some(missing) = self.slots.get(at) {
            panic!(
                "metric {}: {at} values put for {} declared slots, `{}` has none",
                self.metric,
                self.slots.len(),
                missing.name
            );
        }
    }
}

/// A metric's episode values, checked against its slots (for the metrics' tests).
#[cfg(test)]
pub(crate) fn episode_values(
    metric: &dyn super::Metric,
    view: &super::EpisodeView<'_>,
) -> Vec<Value> {
    filled(metric, &metric.episode_slots(), |values| {
        metric.episode_values(view, values);
    })
}

/// The values `metric` puts in its step slots for `view`, in slot order (for the metrics' tests).
#[cfg(test)]
pub(crate) fn step_values(metric: &dyn super::Metric, view: &super::StepView<'_>) -> Vec<Value> {
    filled(metric, &metric.step_slots(), |values| {
        metric.step_values(view, values);
    })
}

/// The values `put` writes into `slots` of `metric`, checked against them.
#[cfg(test)]
fn filled(
    metric: &dyn super::Metric,
    slots: &[Slot],
    put: impl FnOnce(&mut Values<'_>),
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut values = Values::new(metric.name(), slots, &mut out);
    put(&mut values);
    values.finish();
    out
}

/// The index of a metric's episode slot `name` (for the metrics' tests).
#[cfg(test)]
pub(crate) fn slot_index(metric: &dyn super::Metric, name: impl Into<Name>) -> usize {
    let name = name.into();
    metric
        .episode_slots()
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("{} has no episode slot `{name}`", metric.name()))
}

/// A metric's field `name` over `totals` of its values (for the metrics' tests).
#[cfg(test)]
pub(crate) fn field_value(metric: &dyn super::Metric, totals: &super::Totals, name: &str) -> Value {
    let field = metric
        .strategy_fields()
        .into_iter()
        .find(|f| f.column.name == name)
        .unwrap_or_else(|| panic!("{} has no field `{name}`", metric.name()));
    let agg = field
        .agg
        .resolve(&mut |n: &Name| Ok::<_, String>(slot_index(metric, *n)))
        .unwrap();
    totals.get(&agg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots() -> Vec<Slot> {
        vec![Slot::column("a", Unit::Count, "A."), Slot::kept(("b", "x"))]
    }

    #[test]
    fn names_read_as_columns() {
        assert_eq!(Name::of("savings").to_string(), "savings");
        assert_eq!(
            Name::kind("retention", "artifact").to_string(),
            "retention_artifact"
        );
        let s = slots();
        assert_eq!(s[0].column.as_ref().unwrap().name, "a");
        assert_eq!(s[1].column, None);
    }

    #[test]
    fn values_fill_their_slots_by_name_in_order() {
        let s = slots();
        let mut out = vec![Value::from("before")];
        let mut v = Values::new("M", &s, &mut out);
        v.put("a", 1u64).put(("b", "x"), true);
        v.finish();
        assert_eq!(
            out,
            [Value::from("before"), Value::from(1), Value::from(true)]
        );
    }

    #[test]
    #[should_panic(expected = "metric M: value `b_y` put where slot 1 `b_x` is declared")]
    fn a_value_under_another_name_panics() {
        let s = slots();
        let mut out = Vec::new();
        Values::new("M", &s, &mut out)
            .put("a", 1u64)
            .put(("b", "y"), 2u64);
    }

    #[test]
    #[should_panic(expected = "metric M: value `c` put after its 2 declared slots")]
    fn a_value_past_the_slots_panics() {
        let s = slots();
        let mut out = Vec::new();
        Values::new("M", &s, &mut out)
            .put("a", 1u64)
            .put(("b", "x"), 2u64)
            .put("c", 3u64);
    }

    #[test]
    #[should_panic(expected = "metric M: 1 values put for 2 declared slots, `b_x` has none")]
    fn a_slot_left_empty_panics() {
        let s = slots();
        let mut out = Vec::new();
        let mut v = Values::new("M", &s, &mut out);
        v.put("a", 1u64);
        v.finish();
    }
}
