//! A strategy's figures typed: the fields of its results that the analysis decides with, read once from the
//! catalog's [`StrategyMetrics`]. A field that is missing, or of another type, is an error naming it
//! ([`Figures::of`]), never a 0; a figure that may be unknown (a ratio with nothing to divide, a cost without a
//! price) is an `Option` that must be present in the results all the same (null, not absent).

use serde::{Deserialize, Deserializer};

use super::StrategyMetrics;
use crate::error::{Error, Result};

/// A present value that may be null: absent is an error (serde treats a missing `Option` field as `None`
/// unless it is read through a function such as this one).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// An interval `[lo, hi]`, as the results hold it.
pub type Interval = Option<(f64, f64)>;

/// One strategy's figures the analysis reads (their meanings: the report's glossary, `summary.json`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(Default))]
#[allow(missing_docs)]
pub struct Figures {
    pub input_tokens: u64,
    pub baseline_input_tokens: u64,
    pub savings: f64,
    #[serde(deserialize_with = "present")]
    pub savings_ci95: Interval,
    #[serde(deserialize_with = "present")]
    pub peak_tokens: Option<u64>,
    pub steps_over_window: u64,
    pub strategy_calls: u64,
    #[serde(deserialize_with = "present")]
    pub cost_usd: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub baseline_cost_usd: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub cost_savings: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub cost_savings_ci95: Interval,
    pub needs: u64,
    #[serde(deserialize_with = "present")]
    pub retention_at_need: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub retention_at_need_ci95: Interval,
    pub first_needs: u64,
    #[serde(deserialize_with = "present")]
    pub retention_first_need: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub retention_first_need_ci95: Interval,
    pub needs_task: u64,
    #[serde(deserialize_with = "present")]
    pub retention_at_need_task: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub retention_at_need_task_ci95: Interval,
    pub episodes_without_found_needs: u64,
    pub episodes_acted: u64,
    pub episodes_needed_acted: u64,
    #[serde(deserialize_with = "present")]
    pub savings_acted: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub cost_savings_acted: Option<f64>,
    /// Absent in results written before it was: 0.
    #[serde(default)]
    pub episodes_acted_priced: u64,
    /// Absent in results written before it was: null.
    #[serde(default)]
    pub cost_savings_acted_priced: Option<f64>,
    pub needs_acted: u64,
    #[serde(deserialize_with = "present")]
    pub retention_at_need_acted: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub retention_at_need_acted_ci95: Interval,
    #[serde(deserialize_with = "present")]
    pub retention_first_need_acted: Option<f64>,
    #[serde(deserialize_with = "present")]
    pub floor_tokens: Option<u64>,
    #[serde(deserialize_with = "present")]
    pub budget_tokens: Option<u64>,
    pub episodes_below_floor: u64,
    pub episodes_window_below_floor: u64,
    pub episodes_failed: u64,
}

impl Figures {
    /// The figures of `s`.
    ///
    /// # Errors
    /// [`Error::Figures`], naming the strategy and the field, when one is missing or of another type.
    pub fn of(s: &StrategyMetrics) -> Result<Self> {
        serde_json::from_value(serde_json::Value::Object(s.values.clone())).map_err(|e| {
            Error::Figures {
                strategy: s.strategy.clone(),
                message: e.to_string(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standard() -> StrategyMetrics {
        let catalog = crate::metrics::Catalog::standard();
        catalog.strategy("s", &catalog.totals())
    }

    /// Every figure is a field of the standard catalog: the typed read of empty totals succeeds, its unknown
    /// figures null and its counts 0.
    #[test]
    fn every_figure_is_a_field_of_the_catalog() {
        let f = Figures::of(&standard()).unwrap();
        assert_eq!(f.episodes_below_floor, 0);
        assert_eq!(f.retention_at_need_acted, None);
        assert_eq!(f.floor_tokens, None);
    }

    /// A missing figure is an error naming it, whether a count or one that may be null; a count of the wrong
    /// type too.
    #[test]
    fn a_missing_figure_is_an_error_never_a_zero() {
        for field in [
            "episodes_below_floor",
            "retention_at_need_acted",
            "budget_tokens",
        ] {
            let mut s = standard();
            s.values.remove(field);
            let e = Figures::of(&s).unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("'s'"), "{e}");
        }
        let mut s = standard();
        s.values
            .insert("steps_over_window".into(), serde_json::Value::Null);
        assert!(Figures::of(&s).is_err());
    }
}
