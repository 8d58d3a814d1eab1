//! pydantic's genai-prices, as ctxbench's snapshot keeps it: providers with their match rules and models with
//! theirs, matched as genai-prices' own `find_provider_model` matches them when called as LiteLLM's callers call it
//! (`provider_id="litellm"`): a name `p/rest` whose `p` is a provider (its id, or its `provider_match`) is
//! `rest` at that provider; any other name goes to the first provider whose `model_match` it meets. Within the
//! provider, the first model whose `match` the lower-cased name meets, else the same in each of the provider's
//! `fallback` providers; a name that meets none is tried once more with a compact date (`-20251211`) written as
//! `-2025-12-11`. `tests/fixtures/prices/genai_matches.json` holds what genai-prices itself matched every name of
//! the snapshot to (`scripts/refresh_prices.py`), and a test holds this matcher to it.

use serde::Deserialize;

use super::Rates;

/// A match rule, as genai-prices writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clause {
    /// The name starts with it (case-insensitive).
    StartsWith(String),
    /// The name ends with it (case-insensitive).
    EndsWith(String),
    /// The name contains it (case-insensitive).
    Contains(String),
    /// The name equals it (case-insensitive).
    Equals(String),
    /// Python's `re.search` of the name, case-sensitive.
    Regex(String),
    /// Any of them.
    Or(Vec<Clause>),
    /// All of them.
    And(Vec<Clause>),
}

impl Clause {
    /// Whether `name` meets the rule; `name` is lower case, as genai-prices lowers it before matching.
    #[must_use]
    pub fn is_match(&self, name: &str) -> bool {
        match self {
            Clause::StartsWith(p) => name.starts_with(&p.to_lowercase()),
            Clause::EndsWith(p) => name.ends_with(&p.to_lowercase()),
            Clause::Contains(p) => name.contains(&p.to_lowercase()),
            Clause::Equals(p) => name == p.to_lowercase(),
            Clause::Regex(r) => regex_match(r, name),
            Clause::Or(cs) => cs.iter().any(|c| c.is_match(name)),
            Clause::And(cs) => cs.iter().all(|c| c.is_match(name)),
        }
    }
}

/// `re.search(pattern, name)`, with the pattern compiled once (lookarounds included: fancy-regex).
fn regex_match(pattern: &str, name: &str) -> bool {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static COMPILED: OnceLock<Mutex<HashMap<String, Option<fancy_regex::Regex>>>> = OnceLock::new();
    let mut compiled = COMPILED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let re = compiled
        .entry(pattern.to_owned())
        .or_insert_with(|| fancy_regex::Regex::new(pattern).ok());
    re.as_ref()
        .is_some_and(|re| re.is_match(name).unwrap_or(false))
}

/// One model of a provider.
#[derive(Debug, Clone, Deserialize)]
pub struct Model {
    /// genai-prices' id of it.
    pub id: String,
    /// Which names it is.
    #[serde(rename = "match")]
    pub rule: Clause,
    /// Its context window, when genai-prices gives one.
    #[serde(default)]
    pub window: Option<usize>,
    /// Whether genai-prices gives it no token price (an image or audio model): a name it takes is unpriced.
    #[serde(default)]
    pub unpriced: bool,
    /// Its prices (zero where `unpriced`).
    #[serde(flatten)]
    pub rates: Rates,
}

/// One provider.
#[derive(Debug, Clone, Deserialize)]
pub struct Provider {
    /// Its id (`anthropic`, `aws`, `openrouter`).
    pub id: String,
    /// The model names that are its, when none names a provider.
    #[serde(default)]
    pub model_match: Option<Clause>,
    /// The provider names that are it (`bedrock` is `aws`).
    #[serde(default)]
    pub provider_match: Option<Clause>,
    /// Providers whose models it serves at their prices, when it lists none of its own for a name.
    #[serde(default)]
    pub fallback: Vec<String>,
    /// Its models, in match order.
    pub models: Vec<Model>,
}

/// The provider a name's prefix names: by id, else by `provider_match`.
fn by_id<'a>(providers: &'a [Provider], id: &str) -> Option<&'a Provider> {
    let id = id.trim().to_lowercase();
    providers.iter().find(|p| p.id == id).or_else(|| {
        providers
            .iter()
            .find(|p| p.provider_match.as_ref().is_some_and(|c| c.is_match(&id)))
    })
}

/// The first model of `provider` (or, failing it, of its fallback providers, one step) that `name` is.
fn model_of<'a>(
    providers: &'a [Provider],
    provider: &'a Provider,
    name: &str,
    fall_back: bool,
) -> Option<&'a Model> {
    provider
        .models
        .iter()
        .find(|m| m.rule.is_match(name))
        .or_else(|| {
            fall_back
                .then(|| {
                    provider.fallback.iter().find_map(|id| {
                        let p = providers.iter().find(|p| p.id == *id)?;
                        model_of(providers, p, name, false)
                    })
                })
                .flatten()
        })
}

/// A compact date suffix written with dashes (`gpt-5.2-20251211` → `gpt-5.2-2025-12-11`), as genai-prices retries
/// a name that matched nothing (its `_COMPACT_DATE_RE`, then a check that the date is a day); the name unchanged
/// when it has none.
#[must_use]
pub fn dashed_date(name: &str) -> String {
    static RE: std::sync::OnceLock<fancy_regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        fancy_regex::Regex::new(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")
            .expect("static pattern")
    });
    re.replace_all(name, |c: &fancy_regex::Captures<'_>| {
        let n = |i: usize| c[i].parse::<u32>().unwrap_or(0);
        if is_day(n(2), n(3), n(4)) {
            format!("-{}-{}-{}", &c[2], &c[3], &c[4])
        } else {
            c[0].to_owned()
        }
    })
    .into_owned()
}

/// Whether y-m-d is a day of the Gregorian calendar.
fn is_day(y: u32, m: u32, d: u32) -> bool {
    let leap = (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    };
    d >= 1 && d <= days
}

/// The provider and model genai-prices matches `name` to, as its `find_provider_model(name, None, "litellm",
/// None)` does.
#[must_use]
pub fn find<'a>(providers: &'a [Provider], name: &str) -> Option<(&'a Provider, &'a Model)> {
    let name = name.to_lowercase();
    let (provider, rest) = match name.split_once('/') {
        Some((id, rest)) if !id.is_empty() => match by_id(providers, id) {
            Some(p) => (p, rest.to_owned()),
            None => (by_model(providers, &name)?, name.clone()),
        },
        _ => (by_model(providers, &name)?, name.clone()),
    };
    let model = model_of(providers, provider, &rest, true).or_else(|| {
        let dashed = dashed_date(&rest);
        (dashed != rest)
            .then(|| model_of(providers, provider, &dashed, true))
            .flatten()
    })?;
    Some((provider, model))
}

/// The first provider whose `model_match` `name` meets.
fn by_model<'a>(providers: &'a [Provider], name: &str) -> Option<&'a Provider> {
    if name.is_empty() {
        return None;
    }
    providers
        .iter()
        .find(|p| p.model_match.as_ref().is_some_and(|c| c.is_match(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_match_as_genai_prices_does() {
        let c: Clause = serde_json::from_str(
            r#"{"or": [{"starts_with": "Claude-3-5-sonnet"}, {"and": [{"contains": "opus"}, {"ends_with": "-v1"}]},
                {"equals": "x"}, {"regex": "^gpt-\\d$"}, {"regex": "^(?!.*-tts)o"}]}"#,
        )
        .unwrap();
        for (name, is) in [
            ("claude-3-5-sonnet-20240620", true),
            ("my-opus-v1", true),
            ("my-opus-v2", false),
            ("x", true),
            ("xx", false),
            ("gpt-4", true),
            ("gpt-44", false),
            ("o3", true),
            ("o3-tts", false),
            ("claude-3-5-haiku", false),
        ] {
            assert_eq!(c.is_match(name), is, "{name}");
        }
    }

    #[test]
    fn compact_dates_are_dashed_when_they_are_days() {
        assert_eq!(dashed_date("gpt-5.2-20251211"), "gpt-5.2-2025-12-11");
        assert_eq!(dashed_date("m-20251211-v1:0"), "m-2025-12-11-v1:0");
        assert_eq!(dashed_date("m-20251211:1"), "m-2025-12-11:1");
        assert_eq!(dashed_date("m-20251211x"), "m-20251211x");
        assert_eq!(dashed_date("m-20250229"), "m-20250229");
        // February of a common year has 28 days; of a leap year 29.
        assert_eq!(dashed_date("m-20250228"), "m-2025-02-28");
        assert_eq!(dashed_date("m-20240229"), "m-2024-02-29");
        assert_eq!(dashed_date("m-20240431"), "m-20240431");
        assert_eq!(dashed_date("m-20240430"), "m-2024-04-30");
        assert_eq!(dashed_date("m-20000229"), "m-2000-02-29");
        assert_eq!(dashed_date("m-19990101"), "m-19990101");
        assert_eq!(dashed_date("plain"), "plain");
        assert!(!is_day(2100, 2, 29) && is_day(2400, 2, 29) && !is_day(2025, 13, 1));
        assert!(is_day(2100, 2, 28) && is_day(2025, 2, 1) && !is_day(2025, 2, 0));
    }

    /// A name `p/rest` goes to the provider `p` names; an empty `p` names none, so `/rest` goes by the
    /// providers' model rules, whole. Here a provider whose `provider_match` every id meets would otherwise
    /// take it.
    #[test]
    fn a_prefix_names_its_provider_and_an_empty_one_names_none() {
        let providers: Vec<Provider> = serde_json::from_str(
            r#"[{"id": "any", "provider_match": {"starts_with": ""},
                 "models": [{"id": "any-m", "match": {"contains": "m"}, "input": 1}]},
                {"id": "slash", "model_match": {"starts_with": "/"},
                 "models": [{"id": "slash-m", "match": {"starts_with": "/m"}, "input": 2}]}]"#,
        )
        .unwrap();
        let ids = |name: &str| find(&providers, name).map(|(p, m)| (p.id.clone(), m.id.clone()));
        let pair = |p: &str, m: &str| Some((p.to_owned(), m.to_owned()));
        assert_eq!(ids("/m1"), pair("slash", "slash-m"));
        assert_eq!(ids("whatever/m1"), pair("any", "any-m"));
        assert_eq!(ids("any/x"), None);
        assert_eq!(ids("m1"), None);
    }
}
