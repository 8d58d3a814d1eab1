//! The price table a run prices with: a config's `[pricing.models]` over the pinned snapshot
//! (`assets/prices/prices.json`, written by `scripts/refresh_prices.sh`; docs/pricing.md).
//!
//! A name is looked up, in order,
//! 1. in the config's models, as written;
//! 2. in LiteLLM's map as LiteLLM's `get_model_info` looks a name up: the name itself, then, for `p/rest` where `p`
//!    is one of its providers, `rest` (and, for Bedrock, `rest` without its `converse/` or `invoke/` route);
//!    each as written, then in lower case;
//! 3. in genai-prices by its own rules ([`super::genai::find`]), for the models LiteLLM no longer lists.
//!
//! A name none of them knows has no price and no window: never another model's. The shortest prompt a model's
//! provider caches comes from the table where it says (LiteLLM's `prompt_cache_min_tokens`), else from
//! `pricing.toml`'s rules (built in), else [`super::DEFAULT_MIN_CACHED_PREFIX`].

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;

use super::genai;
use super::{Price, Rates, DEFAULT_MIN_CACHED_PREFIX};
use crate::error::{Error, Result};

/// The pinned snapshot, built into the binary.
pub const SNAPSHOT: &str = include_str!("../../../assets/prices/prices.json");

/// ctxbench's own rules over the snapshot (`pricing.toml` at the repository root), built into the binary.
pub const RULES: &str = include_str!("../../../pricing.toml");

/// One source of the snapshot, as it records it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Source {
    /// The table's name (`LiteLLM`, `genai-prices`).
    pub name: String,
    /// The package and version it was read from.
    pub package: String,
    /// The file of the package.
    pub file: String,
    /// Its licence.
    pub licence: String,
    /// Its home page.
    pub home: String,
}

impl Source {
    /// The table and its version, as reports name it (`LiteLLM 1.110.2`).
    #[must_use]
    pub fn label(&self) -> String {
        let version = self.package.split_whitespace().nth(1).unwrap_or("");
        format!("{} {version}", self.name).trim_end().to_owned()
    }
}

/// A LiteLLM entry: its provider, rates, input limit and shortest cached prompt.
#[derive(Debug, Clone, Deserialize)]
struct Entry {
    #[serde(default)]
    provider: Option<String>,
    #[serde(flatten)]
    rates: Rates,
    #[serde(default)]
    window: Option<usize>,
    #[serde(default)]
    min_cached_prefix: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct LiteLlm {
    prefixes: Vec<String>,
    models: HashMap<String, Entry>,
}

/// The snapshot, parsed.
#[derive(Debug, Deserialize)]
pub struct Snapshot {
    /// The date it was written.
    pub date: String,
    /// Where it comes from: LiteLLM, then genai-prices.
    pub sources: Vec<Source>,
    litellm: LiteLlm,
    genai_prices: Vec<genai::Provider>,
    /// LiteLLM's names in lower case, for names written in another case.
    #[serde(skip)]
    lower: HashMap<String, String>,
}

/// `pricing.toml`: the shortest prompt a provider caches, by provider and by model name.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rules {
    min_cached_prefix: MinPrefix,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MinPrefix {
    #[serde(default)]
    providers: BTreeMap<String, u64>,
    #[serde(default)]
    models: BTreeMap<String, u64>,
}

impl Snapshot {
    /// The built-in snapshot, parsed once.
    ///
    /// # Panics
    /// Never: a test parses it.
    #[must_use]
    pub fn builtin() -> &'static Snapshot {
        static SNAP: OnceLock<Snapshot> = OnceLock::new();
        SNAP.get_or_init(|| {
            let mut s: Snapshot =
                serde_json::from_str(SNAPSHOT).expect("assets/prices/prices.json parses");
            s.lower = s
                .litellm
                .models
                .keys()
                .map(|k| (k.to_lowercase(), k.clone()))
                .collect();
            s
        })
    }

    /// genai-prices' providers, in match order.
    #[must_use]
    pub fn genai_providers(&self) -> &[genai::Provider] {
        &self.genai_prices
    }

    /// The snapshot's sources, as a report names them (`LiteLLM 1.110.2`).
    fn source_named(&self, name: &str) -> String {
        self.sources
            .iter()
            .find(|s| s.name == name)
            .map_or_else(|| name.to_owned(), Source::label)
    }

    /// Every source, as reports name them, and the snapshot's date: `LiteLLM 1.110.2 and genai-prices 0.2.5, as of
    /// 2026-12-07`.
    #[must_use]
    pub fn describe(&self) -> String {
        let labels: Vec<String> = self.sources.iter().map(Source::label).collect();
        format!("{}, as of {}", labels.join(" and "), self.date)
    }

    /// The LiteLLM key `name` is, by LiteLLM's lookup order.
    fn litellm_key(&self, name: &str) -> Option<&str> {
        let mut candidates = vec![name.to_owned()];
        if let Some((prefix, rest)) = name.split_once('/') {
            if self.litellm.prefixes.iter().any(|p| p == prefix) {
                candidates.push(rest.to_owned());
                if prefix.starts_with("bedrock") {
                    for route in ["converse/", "invoke/"] {
                        if let Some(r) = rest.strip_prefix(route) {
                            candidates.push(r.to_owned());
                        }
                    }
                }
            }
        }
        candidates.iter().find_map(|c| {
            self.litellm
                .models
                .get_key_value(c.as_str())
                .map(|(k, _)| k.as_str())
                .or_else(|| self.lower.get(&c.to_lowercase()).map(String::as_str))
        })
    }
}

/// Where a model's price comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PriceSource {
    /// The run config's `[pricing.models]`.
    Config,
    /// LiteLLM's map, under this key, at this version (`LiteLLM 1.110.2`).
    LiteLlm {
        /// The table and version.
        table: String,
        /// The key.
        key: String,
    },
    /// genai-prices, this provider's model, at this version.
    GenaiPrices {
        /// The table and version.
        table: String,
        /// The provider's id.
        provider: String,
        /// The model's id.
        model: String,
    },
}

impl std::fmt::Display for PriceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PriceSource::Config => write!(f, "the config's [pricing.models]"),
            PriceSource::LiteLlm { table, key } => write!(f, "{table} `{key}`"),
            PriceSource::GenaiPrices {
                table,
                provider,
                model,
            } => write!(f, "{table} `{provider}/{model}`"),
        }
    }
}

/// A model's price, its input limit where the table gives one, and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Quote {
    /// The price.
    pub price: Price,
    /// The most input tokens a request may hold, when the table says.
    pub window: Option<usize>,
    /// Where it comes from.
    pub source: PriceSource,
}

/// The prices a run uses: a config's models over the snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    /// The config's prices, by model name: they replace the snapshot's.
    pub models: BTreeMap<String, Price>,
}

impl PriceTable {
    /// The snapshot alone.
    #[must_use]
    pub fn builtin() -> Self {
        Self::default()
    }

    /// The snapshot under `models` (a config's `[pricing.models]`).
    ///
    /// # Errors
    /// A price that is negative or not finite, naming the model.
    pub fn with_models(models: BTreeMap<String, Price>) -> Result<Self> {
        if let Some((name, _)) = models.iter().find(|(_, p)| !p.is_valid()) {
            return Err(Error::Config(format!(
                "price of model '{name}' in [pricing.models] must be finite and not negative"
            )));
        }
        Ok(Self { models })
    }

    /// The price, window and source of `model`; `None` when neither the config nor the snapshot knows it.
    #[must_use]
    pub fn quote(&self, model: &str) -> Option<Quote> {
        if let Some(p) = self.models.get(model) {
            return Some(Quote {
                price: *p,
                window: None,
                source: PriceSource::Config,
            });
        }
        // The snapshot's answer for a name, looked up once per process (a run asks for every episode's model).
        static QUOTES: OnceLock<std::sync::Mutex<HashMap<String, Option<Quote>>>> = OnceLock::new();
        let quotes = QUOTES.get_or_init(Default::default);
        let known = quotes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(model)
            .cloned();
        if let Some(q) = known {
            return q;
        }
        let q = Self::snapshot_quote(model);
        quotes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(model.to_owned(), q.clone());
        q
    }

    /// The price, window and source of `model` in the snapshot alone.
    fn snapshot_quote(model: &str) -> Option<Quote> {
        let snap = Snapshot::builtin();
        if let Some(key) = snap.litellm_key(model) {
            let e = &snap.litellm.models[key];
            let min = e
                .min_cached_prefix
                .unwrap_or_else(|| min_prefix(e.provider.as_deref(), key));
            return Some(Quote {
                price: Price::from_rates(&e.rates, min),
                window: e.window,
                source: PriceSource::LiteLlm {
                    table: snap.source_named("LiteLLM"),
                    key: key.to_owned(),
                },
            });
        }
        let (provider, m) = genai::find(&snap.genai_prices, model).filter(|(_, m)| !m.unpriced)?;
        Some(Quote {
            price: Price::from_rates(&m.rates, min_prefix(Some(&provider.id), &m.id)),
            window: m.window,
            source: PriceSource::GenaiPrices {
                table: snap.source_named("genai-prices"),
                provider: provider.id.clone(),
                model: m.id.clone(),
            },
        })
    }

    /// The price of `model`, or `None` when unknown (cost is then unknown, never zero).
    #[must_use]
    pub fn get(&self, model: &str) -> Option<Price> {
        self.quote(model).map(|q| q.price)
    }

    /// What to do about a model without a price, in a sentence.
    #[must_use]
    pub fn hint(model: &str) -> String {
        format!(
            "'{model}' is in neither price table ({}): its cost is unknown; add [pricing.models.\"{model}\"] with \
             input, cached_input and output (USD per million tokens) to the config",
            Snapshot::builtin().describe()
        )
    }
}

/// The shortest prompt cached for a model of `provider` whose table entry (`key`) does not say: `pricing.toml`'s
/// rule for the first model name it contains, else its provider's, else the default.
fn min_prefix(provider: Option<&str>, key: &str) -> u64 {
    static RULES_PARSED: OnceLock<Rules> = OnceLock::new();
    let rules = RULES_PARSED
        .get_or_init(|| toml::from_str(RULES).expect("pricing.toml parses (checked by a test)"));
    let key = key.to_lowercase();
    rules
        .min_cached_prefix
        .models
        .iter()
        .find(|(name, _)| key.contains(name.as_str()))
        .map(|(_, n)| *n)
        .or_else(|| provider.and_then(|p| rules.min_cached_prefix.providers.get(p).copied()))
        .unwrap_or(DEFAULT_MIN_CACHED_PREFIX)
}
