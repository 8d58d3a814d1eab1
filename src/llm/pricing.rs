//! Prices in USD per million tokens, and the cost of a call with prompt caching modelled.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The committed price table (`pricing.toml` at the repository root), built into the binary.
pub const BUILTIN_TABLE: &str = include_str!("../../pricing.toml");

/// The price of one model, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
}

impl Price {
    /// The cost of one call in USD: `cached` of the `input` tokens are priced as cached input.
    #[must_use]
    pub fn cost_usd(&self, input: u64, cached: u64, output: u64) -> f64 {
        let cached = cached.min(input);
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let usd = ((input - cached) as f64 * self.input
            + cached as f64 * self.cached_input
            + output as f64 * self.output)
            / 1_000_000.0;
        usd
    }
}

/// Model name → price.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    /// The prices, by model name.
    pub models: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The built-in table.
    ///
    /// # Panics
    /// Never: the built-in table is checked by a test.
    #[must_use]
    pub fn builtin() -> Self {
        Self::parse(BUILTIN_TABLE).expect("the built-in pricing.toml parses (checked by a test)")
    }

    /// Parses a TOML table of `[models."name"] input = … cached_input = … output = …`.
    ///
    /// # Errors
    /// Names the TOML problem.
    pub fn parse(text: &str) -> Result<Self> {
        let table: Self =
            toml::from_str(text).map_err(|e| Error::Config(format!("bad pricing table: {e}")))?;
        for (name, p) in &table.models {
            if [p.input, p.cached_input, p.output]
                .iter()
                .any(|v| !v.is_finite() || *v < 0.0)
            {
                return Err(Error::Config(format!(
                    "price of model '{name}' must be finite and not negative"
                )));
            }
        }
        Ok(table)
    }

    /// The price of `model`, or `None` when the table does not know it (cost is then unknown, never zero).
    #[must_use]
    pub fn get(&self, model: &str) -> Option<Price> {
        self.models.get(model).copied()
    }

    /// Adds or replaces entries from `other`.
    pub fn extend(&mut self, other: &PriceTable) {
        for (k, v) in &other.models {
            self.models.insert(k.clone(), *v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_prices_caching() {
        let table = PriceTable::builtin();
        let p = table.get("gpt-4o").expect("gpt-4o is priced");
        let full = p.cost_usd(1_000_000, 0, 0);
        let cached = p.cost_usd(1_000_000, 1_000_000, 0);
        assert!((full - p.input).abs() < 1e-12);
        assert!(cached < full);
        assert!(table.get("no-such-model").is_none());
    }

    #[test]
    fn negative_price_is_rejected() {
        let err = PriceTable::parse("[models.x]\ninput = -1.0\ncached_input = 0.0\noutput = 0.0\n")
            .unwrap_err();
        assert!(err.to_string().contains("'x'"), "{err}");
    }
}
