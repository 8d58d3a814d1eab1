//! Prices in USD per million tokens, where they come from, and the cost of a call with each provider's prompt
//! cache.
//!
//! ## Where prices come from
//! A pinned snapshot of two public tables ([`table`]; docs/pricing.md): LiteLLM's model map, and pydantic's
//! genai-prices for the models LiteLLM no longer lists (retired ones such as claude-3-5-sonnet-20240620), each
//! matched by its own rules. A run config's `[pricing.models."name"]` replaces a model's price; a model neither
//! table knows has no price (its cost is unknown, never zero, and never another model's).
//!
//! ## The cache model
//! A call's input is its cached prefix (the part equal to the previous request, as the replay measures it) and
//! the rest. Per model,
//! - `cached_input`: the price of a token read from the cache (Anthropic 0.1× input, OpenAI 0.5× or less,
//!   DeepSeek and Gemini their discounted rate; the input price where the table gives none);
//! - `cache_write`: the price of a token written to the 5-minute cache, when the provider bills writes apart —
//!   Anthropic at 1.25× input; `cache_write_1h` its 1-hour cache, 2× input. A table's write price that is not
//!   above the input price is no charge of its own (OpenAI, DeepSeek and Gemini bill the uncached rest as input);
//! - `min_cached_prefix`: the shortest prompt the provider caches (the table's, else `pricing.toml`'s rule for its
//!   provider): a shorter request reads and writes nothing;
//! - `tier`: the rates of a prompt above a size (Gemini 2.5 Pro over 200,000 tokens), all its tokens at them.
//!
//! Two views of a replayed call's cost follow: [`Price::cost_usd`] with the cache, and
//! [`Price::cost_usd_no_cache`], every input token at the input price. A call whose trace records what the
//! provider read from and wrote to its cache is priced as recorded ([`Price::cost_recorded`]). Simplifications:
//! hits are taken for the whole shared prefix (providers cache in blocks of 64–128 tokens past the minimum), never
//! expire between the calls of an episode, and replayed writes go to the 5-minute cache.

pub mod episode;
pub mod genai;
pub mod table;

use serde::{Deserialize, Serialize};

pub use episode::{CallPrices, Defaults, ModelGroup, ModelUse, RecordedCost, WindowFrom, NO_MODEL};
pub use table::{PriceSource, PriceTable, Quote};

/// The shortest prompt a provider caches when neither the table nor `pricing.toml` says: OpenAI's and
/// Anthropic's 1,024 tokens.
pub const DEFAULT_MIN_CACHED_PREFIX: u64 = 1024;

fn default_min_cached_prefix() -> u64 {
    DEFAULT_MIN_CACHED_PREFIX
}

/// A model's rates as a price table gives them, USD per million tokens (the snapshot's form).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Rates {
    /// Uncached input tokens.
    #[serde(default)]
    pub input: f64,
    /// Output tokens.
    #[serde(default)]
    pub output: f64,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Input tokens written to the 5-minute cache.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Input tokens written to the 1-hour cache.
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
    /// The rates of prompts above a size, lowest first; a rate a tier leaves out is the base one.
    #[serde(default)]
    pub tiers: Vec<TierRates>,
}

/// A tier of [`Rates`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct TierRates {
    /// Prompts of more input tokens than this pay the tier's rates on every token.
    pub above: u64,
    /// Uncached input.
    #[serde(default)]
    pub input: Option<f64>,
    /// Output.
    #[serde(default)]
    pub output: Option<f64>,
    /// Cache reads.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// 5-minute cache writes.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// 1-hour cache writes.
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
}

/// What a call costs per token: one set of rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// Prompts of more input tokens than this pay these rates on every token.
    pub above: u64,
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens read from the cache.
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
    /// 5-minute cache writes, when billed apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// 1-hour cache writes, when billed apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
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
    /// Input tokens written to the 5-minute cache, when billed apart from `input` (Anthropic: 1.25 × input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Input tokens written to the 1-hour cache, when billed apart from `input` (Anthropic: 2 × input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
    /// The shortest prompt, in tokens, that the provider caches.
    #[serde(default = "default_min_cached_prefix")]
    pub min_cached_prefix: u64,
    /// The rates of a prompt above a size (the table's first tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
}

/// What a trace records of one call's prompt against the provider's cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUse {
    /// Read from the cache.
    pub read: u64,
    /// Written to the 5-minute cache.
    pub write_5m: u64,
    /// Written to the 1-hour cache.
    pub write_1h: u64,
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
            cache_write_1h: None,
            min_cached_prefix: DEFAULT_MIN_CACHED_PREFIX,
            tier: None,
        }
    }

    /// The price a table's `rates` make with the provider's cache rules: a cache read at the input price where
    /// the table gives none, a write charged apart only above the input price, `min_cached_prefix` tokens the
    /// shortest prompt cached, the first tier.
    #[must_use]
    pub fn from_rates(rates: &Rates, min_cached_prefix: u64) -> Self {
        let premium = |input: f64, w: Option<f64>| w.filter(|w| *w > input);
        let tier = rates.tiers.first().map(|t| {
            let input = t.input.unwrap_or(rates.input);
            Tier {
                above: t.above,
                input,
                cached_input: t.cache_read.or(rates.cache_read).unwrap_or(input),
                output: t.output.unwrap_or(rates.output),
                cache_write: premium(input, t.cache_write.or(rates.cache_write)),
                cache_write_1h: premium(input, t.cache_write_1h.or(rates.cache_write_1h)),
            }
        });
        Self {
            input: rates.input,
            cached_input: rates.cache_read.unwrap_or(rates.input),
            output: rates.output,
            cache_write: premium(rates.input, rates.cache_write),
            cache_write_1h: premium(rates.input, rates.cache_write_1h),
            min_cached_prefix,
            tier,
        }
    }

    /// The same price without a prompt cache: every input token at the input price (an agent that did not
    /// ask for Anthropic's cache).
    #[must_use]
    pub fn without_cache(&self) -> Self {
        Self {
            cached_input: self.input,
            cache_write: None,
            cache_write_1h: None,
            tier: self.tier.map(|t| Tier {
                cached_input: t.input,
                cache_write: None,
                cache_write_1h: None,
                ..t
            }),
            ..*self
        }
    }

    /// The same price with every cache write at the 1-hour cache's rate (an agent that asked for the 1-hour
    /// TTL), where the table gives one.
    #[must_use]
    pub fn one_hour_writes(&self) -> Self {
        Self {
            cache_write: self.cache_write_1h.or(self.cache_write),
            tier: self.tier.map(|t| Tier {
                cache_write: t.cache_write_1h.or(t.cache_write),
                ..t
            }),
            ..*self
        }
    }

    /// The rates a prompt of `input` tokens pays: the tier's above its size, else the base ones.
    #[must_use]
    pub fn rates_for(&self, input: u64) -> Tier {
        match self.tier {
            Some(t) if input > t.above => t,
            _ => Tier {
                above: 0,
                input: self.input,
                cached_input: self.cached_input,
                output: self.output,
                cache_write: self.cache_write,
                cache_write_1h: self.cache_write_1h,
            },
        }
    }

    /// The cost of one call in USD, with the cache: of its `input` tokens, the `cached` prefix is read from
    /// the cache and the rest written to it (the 5-minute cache), when the request is at least
    /// `min_cached_prefix` long; a shorter one is all plain input.
    #[must_use]
    pub fn cost_usd(&self, input: u64, cached: u64, output: u64) -> f64 {
        let r = self.rates_for(input);
        let (cached, write) = if input >= self.min_cached_prefix {
            (cached.min(input), r.cache_write.unwrap_or(r.input))
        } else {
            (0, r.input)
        };
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let usd = ((input - cached) as f64 * write
            + cached as f64 * r.cached_input
            + output as f64 * r.output)
            / 1_000_000.0;
        usd
    }

    /// The cost of one call in USD with no cache: every input token at the input price.
    #[must_use]
    pub fn cost_usd_no_cache(&self, input: u64, output: u64) -> f64 {
        let r = self.rates_for(input);
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let usd = (input as f64 * r.input + output as f64 * r.output) / 1_000_000.0;
        usd
    }

    /// The cost of one call in USD as its trace records it: of its `input` tokens, those the provider says it
    /// read from its cache at the read price, those it wrote at the write price of their cache (5 minutes, 1
    /// hour; the input price where writes are not billed apart), the rest as input; the recorded counts capped
    /// by `input`, reads first.
    #[must_use]
    pub fn cost_recorded(&self, input: u64, cache: CacheUse, output: u64) -> f64 {
        let r = self.rates_for(input);
        let read = cache.read.min(input);
        let write_5m = cache.write_5m.min(input - read);
        let write_1h = cache.write_1h.min(input - read - write_5m);
        let rest = input - read - write_5m - write_1h;
        let w5 = r.cache_write.unwrap_or(r.input);
        let w1 = r.cache_write_1h.unwrap_or(w5);
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let usd = (rest as f64 * r.input
            + read as f64 * r.cached_input
            + write_5m as f64 * w5
            + write_1h as f64 * w1
            + output as f64 * r.output)
            / 1_000_000.0;
        usd
    }

    /// Whether every rate is finite and not negative.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        let tier = self.tier.map_or(vec![], |t| {
            vec![
                t.input,
                t.cached_input,
                t.output,
                t.cache_write.unwrap_or(0.0),
                t.cache_write_1h.unwrap_or(0.0),
            ]
        });
        [
            self.input,
            self.cached_input,
            self.output,
            self.cache_write.unwrap_or(0.0),
            self.cache_write_1h.unwrap_or(0.0),
        ]
        .iter()
        .chain(&tier)
        .all(|v| v.is_finite() && *v >= 0.0)
    }
}

#[cfg(test)]
mod tests;
