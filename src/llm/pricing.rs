//! Prices in USD per million tokens, and the cost of a call with prompt caching modelled.
//!
//! ## The cache model
//! A call's input is its cached prefix (the part equal to the previous request, as the replay measures it)
//! and the rest. Per model, the price table says
//! - `cached_input`: the price of a token read from the cache;
//! - `cache_write`: the price of a token written to it (the uncached rest of a request long enough to cache),
//!   when the provider bills writes apart — Anthropic bills them at 1.25× the input price for its 5-minute
//!   cache; OpenAI, Google and DeepSeek do not (the input price, the default);
//! - `min_cached_prefix`: the shortest prompt the provider caches (OpenAI and Anthropic 1,024 tokens, Claude
//!   3.5 Haiku 2,048, Gemini 2.5 2,048, DeepSeek 64): a shorter request reads and writes nothing.
//!
//! Two views of a run's cost follow: [`Price::cost_usd`] with the cache, and [`Price::cost_usd_no_cache`],
//! every input token at the input price (a provider without caching, or a cache that always misses).
//! Simplifications: hits are taken for the whole shared prefix (providers cache in blocks of 64–128 tokens
//! past the minimum) and never expire between the calls of an episode.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The committed price table (`pricing.toml` at the repository root), built into the binary.
pub const BUILTIN_TABLE: &str = include_str!("../../pricing.toml");

/// The shortest prompt a provider caches when the table does not say: OpenAI's and Anthropic's 1,024 tokens.
pub const DEFAULT_MIN_CACHED_PREFIX: u64 = 1024;

fn default_min_cached_prefix() -> u64 {
    DEFAULT_MIN_CACHED_PREFIX
}

/// The price of one model, USD per million tokens, and its prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens written to the cache, when billed apart from `input` (Anthropic: 1.25 × input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// The shortest prompt, in tokens, that the provider caches.
    #[serde(default = "default_min_cached_prefix")]
    pub min_cached_prefix: u64,
}

impl Price {
    /// A price with the default cache model (writes at the input price, [`DEFAULT_MIN_CACHED_PREFIX`]).
    #[must_use]
    pub fn new(input: f64, cached_input: f64, output: f64) -> Self {
        Self {
            input,
            cached_input,
            output,
            cache_write: None,
            min_cached_prefix: DEFAULT_MIN_CACHED_PREFIX,
        }
    }

    /// The cost of one call in USD, with the cache: of its `input` tokens, the `cached` prefix is read from
    /// the cache and the rest written to it, when the request is at least `min_cached_prefix` long; a shorter
    /// one is all plain input.
    #[must_use]
    pub fn cost_usd(&self, input: u64, cached: u64, output: u64) -> f64 {
        let (cached, write) = if input >= self.min_cached_prefix {
            (cached.min(input), self.cache_write.unwrap_or(self.input))
        } else {
            (0, self.input)
        };
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let usd = ((input - cached) as f64 * write
            + cached as f64 * self.cached_input
            + output as f64 * self.output)
            / 1_000_000.0;
        usd
    }

    /// The cost of one call in USD with no cache: every input token at the input price.
    #[must_use]
    pub fn cost_usd_no_cache(&self, input: u64, output: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let usd = (input as f64 * self.input + output as f64 * self.output) / 1_000_000.0;
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

    /// Parses a TOML table of `[models."name"] input = … cached_input = … output = …` (and optionally
    /// `cache_write = …`, `min_cached_prefix = …`).
    ///
    /// # Errors
    /// Names the TOML problem.
    pub fn parse(text: &str) -> Result<Self> {
        let table: Self =
            toml::from_str(text).map_err(|e| Error::Config(format!("bad pricing table: {e}")))?;
        for (name, p) in &table.models {
            if [
                p.input,
                p.cached_input,
                p.output,
                p.cache_write.unwrap_or(0.0),
            ]
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
        assert_eq!(
            (
                p.input,
                p.cached_input,
                p.output,
                p.cache_write,
                p.min_cached_prefix
            ),
            (2.5, 1.25, 10.0, None, 1024)
        );
        let claude = table
            .get("claude-sonnet-4")
            .expect("claude-sonnet-4 is priced");
        assert_eq!(
            (claude.cache_write, claude.min_cached_prefix),
            (Some(3.75), 1024)
        );
        assert_eq!(
            table.get("claude-3.5-haiku").map(|p| p.min_cached_prefix),
            Some(2048)
        );
        assert!(table.get("no-such-model").is_none());
    }

    /// Costs worked out by hand, at $1, $0.5, $2 per million (input, cached, output), a write premium of
    /// $1.25 and a minimum prefix of 1,000 tokens.
    #[test]
    fn cache_costs_by_hand() {
        let p = Price {
            input: 1.0,
            cached_input: 0.5,
            output: 2.0,
            cache_write: Some(1.25),
            min_cached_prefix: 1000,
        };
        // 3,000 in, 2,000 cached, 100 out: 1,000 × 1.25 + 2,000 × 0.5 + 100 × 2 = 2,450 µ$.
        assert!((p.cost_usd(3000, 2000, 100) - 0.002_45).abs() < 1e-12);
        // No cache: 3,000 × 1 + 100 × 2 = 3,200 µ$.
        assert!((p.cost_usd_no_cache(3000, 100) - 0.003_2).abs() < 1e-12);
        // Under the minimum: 999 tokens are plain input, nothing read or written: 999 µ$.
        assert!((p.cost_usd(999, 900, 0) - 0.000_999).abs() < 1e-12);
        // At the minimum it caches: 1,000 in, 600 cached: 400 × 1.25 + 600 × 0.5 = 800 µ$.
        assert!((p.cost_usd(1000, 600, 0) - 0.000_8).abs() < 1e-12);
        // A cached count above the input is the input.
        assert!((p.cost_usd(2000, 5000, 0) - 0.001).abs() < 1e-12);
        // Without a write premium, the rest is plain input: 1,000 × 1 + 2,000 × 0.5 = 2,000 µ$.
        let q = Price::new(1.0, 0.5, 2.0);
        assert!((q.cost_usd(3000, 2000, 0) - 0.002).abs() < 1e-12);
        assert_eq!(q.min_cached_prefix, 1024);
    }

    #[test]
    fn pricing_toml_fields_parse_and_default() {
        let t = PriceTable::parse(
            "[models.a]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\n\
             [models.b]\ninput = 3.0\ncached_input = 0.3\noutput = 15.0\ncache_write = 3.75\nmin_cached_prefix = 2048\n",
        )
        .unwrap();
        assert_eq!(t.get("a"), Some(Price::new(1.0, 0.1, 2.0)));
        let b = t.get("b").unwrap();
        assert_eq!((b.cache_write, b.min_cached_prefix), (Some(3.75), 2048));
        assert!(PriceTable::parse(
            "[models.c]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\ncache_write = -1.0\n"
        )
        .is_err());
        assert!(PriceTable::parse(
            "[models.c]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\ncolour = 1\n"
        )
        .is_err());
    }

    /// A config's prices replace the built-in ones of the same model and add the others.
    #[test]
    fn config_prices_override_and_extend_the_builtin_table() {
        let mut table = PriceTable::builtin();
        let builtin_mini = table.get("gpt-4o-mini");
        table.extend(
            &PriceTable::parse(
                "[models.gpt-4o]\ninput = 9.0\ncached_input = 1.0\noutput = 20.0\n\
                 [models.\"my-local\"]\ninput = 0.5\ncached_input = 0.5\noutput = 1.5\n",
            )
            .unwrap(),
        );
        assert_eq!(
            table.get("gpt-4o").map(|p| (p.input, p.output)),
            Some((9.0, 20.0))
        );
        assert_eq!(table.get("my-local").map(|p| p.output), Some(1.5));
        assert_eq!(table.get("gpt-4o-mini"), builtin_mini, "the others stay");
        assert!(builtin_mini.is_some());
    }

    #[test]
    fn negative_price_is_rejected() {
        let err = PriceTable::parse("[models.x]\ninput = -1.0\ncached_input = 0.0\noutput = 0.0\n")
            .unwrap_err();
        assert!(err.to_string().contains("'x'"), "{err}");
    }
}
