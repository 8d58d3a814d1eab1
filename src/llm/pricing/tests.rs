//! Every price rule by hand: the snapshot's prices for the models the traces called, cache writes and reads as
//! each provider bills them, 1-hour writes, a retired model, an unknown one, a config's override, and the
//! genai-prices matcher against what genai-prices itself matched.

use std::collections::BTreeMap;

use super::table::{PriceSource, Snapshot};
use super::*;

fn quote(name: &str) -> Quote {
    PriceTable::builtin()
        .quote(name)
        .unwrap_or_else(|| panic!("{name} is priced"))
}

/// (input, cached input, output, 5-minute write, 1-hour write, shortest cached prompt) of a price.
fn rates(p: &Price) -> (f64, f64, f64, Option<f64>, Option<f64>, u64) {
    (
        p.input,
        p.cached_input,
        p.output,
        p.cache_write,
        p.cache_write_1h,
        p.min_cached_prefix,
    )
}

#[test]
fn the_snapshot_and_the_rules_parse_and_name_their_sources() {
    let snap = Snapshot::builtin();
    let names: Vec<&str> = snap.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["LiteLLM", "genai-prices"]);
    assert!(snap.sources.iter().all(|s| s.licence.starts_with("MIT")));
    assert!(snap.date.len() == 10, "{}", snap.date);
    let _: toml::Value = toml::from_str(table::RULES).unwrap();
}

/// The bundled run's models, priced as the hand list priced them (its outputs stay byte for byte).
#[test]
fn openai_models_read_at_their_rate_and_write_nothing_apart() {
    let gpt4o = quote("gpt-4o");
    assert_eq!(rates(&gpt4o.price), (2.5, 1.25, 10.0, None, None, 1024));
    assert_eq!(gpt4o.window, Some(128_000));
    assert!(matches!(&gpt4o.source, PriceSource::LiteLlm { key, .. } if key == "gpt-4o"));
    assert_eq!(
        rates(&quote("gpt-4o-mini").price),
        (0.15, 0.075, 0.6, None, None, 1024)
    );
    // A dated id is its own key; another case is the same model.
    assert_eq!(quote("gpt-4o-2024-08-06").price.input, 2.5);
    assert_eq!(quote("GPT-4o").price, gpt4o.price);
}

#[test]
fn claude_opus_4_5_at_anthropics_list_prices_and_cache_rules() {
    let q = quote("claude-opus-4-5-20251101");
    // Input $5, cache read $0.50 (0.1×), output $25, 5-minute write $6.25 (1.25×), 1-hour write $10 (2×); caches
    // prompts from 4,096 tokens; 200,000 tokens of input.
    assert_eq!(
        rates(&q.price),
        (5.0, 0.5, 25.0, Some(6.25), Some(10.0), 4096)
    );
    assert_eq!(q.window, Some(200_000));
    // A provider prefix names the same entry; Bedrock's regional id is LiteLLM's own key.
    assert_eq!(quote("anthropic/claude-opus-4-5").price, q.price);
    let bedrock = quote("bedrock/us.anthropic.claude-opus-4-5-20251101-v1:0");
    assert!(
        matches!(&bedrock.source, PriceSource::LiteLlm { key, .. } if key == "us.anthropic.claude-opus-4-5-20251101-v1:0")
    );
    assert_eq!(
        quote("bedrock/converse/us.anthropic.claude-opus-4-5-20251101-v1:0").source,
        bedrock.source
    );
}

/// LiteLLM strips a prefix only when it is one of LiteLLM's providers: `openai/gpt-4o` is `gpt-4o`, while a name
/// behind a prefix LiteLLM does not know (a proxy's route) is not taken for the model after it: it is unpriced.
#[test]
fn only_a_litellm_provider_prefix_is_stripped() {
    let q = quote("openai/gpt-4o");
    assert!(
        matches!(&q.source, PriceSource::LiteLlm { key, .. } if key == "gpt-4o"),
        "{:?}",
        q.source
    );
    assert!(PriceTable::builtin().quote("myproxy/gpt-4o").is_none());
}

#[test]
fn deepseek_reads_at_its_hit_rate_writes_nothing_apart_and_caches_from_64_tokens() {
    for name in [
        "deepseek-chat",
        "deepseek/deepseek-chat",
        "deepseek-reasoner",
        "deepseek/deepseek-reasoner",
    ] {
        let q = quote(name);
        // LiteLLM writes deepseek/deepseek-chat's cache creation as 0.0: DeepSeek bills a miss as input, and a
        // write price not above the input price is no charge of its own.
        assert_eq!(
            rates(&q.price),
            (0.28, 0.028, 0.42, None, None, 64),
            "{name}"
        );
        assert_eq!(q.window, Some(131_072), "{name}");
    }
}

/// LiteLLM no longer lists Claude 3.5 Sonnet (June 2024) or Claude 3 Haiku: genai-prices prices them.
#[test]
fn a_retired_model_is_priced_by_genai_prices() {
    let q = quote("claude-3-5-sonnet-20240620");
    assert!(
        matches!(&q.source, PriceSource::GenaiPrices { provider, model, .. } if provider == "anthropic" && model == "claude-3-5-sonnet"),
        "{:?}",
        q.source
    );
    assert_eq!(
        rates(&q.price),
        (3.0, 0.3, 15.0, Some(3.75), Some(6.0), 1024)
    );
    assert_eq!(q.window, Some(200_000));
    assert!(q.source.to_string().starts_with("genai-prices "));
    let haiku = quote("claude-3-haiku-20240307");
    assert_eq!(
        rates(&haiku.price),
        (0.25, 0.03, 1.25, Some(0.3), Some(0.5), 2048)
    );
}

#[test]
fn an_unknown_model_has_no_price_and_a_hint() {
    let table = PriceTable::builtin();
    for name in [
        "mockllm/model",
        "qwen2.5-7b-instruct-local",
        "",
        "no-such-model",
    ] {
        assert!(table.quote(name).is_none(), "{name}");
        assert!(table.get(name).is_none(), "{name}");
    }
    let hint = PriceTable::hint("qwen2.5-7b");
    assert!(
        hint.contains("LiteLLM")
            && hint.contains("genai-prices")
            && hint.contains("[pricing.models.\"qwen2.5-7b\"]"),
        "{hint}"
    );
}

/// A config's price replaces the snapshot's for that name only.
#[test]
fn a_configs_price_overrides_the_snapshot() {
    let mine = Price::new(1.0, 0.1, 2.0);
    let table = PriceTable::with_models(BTreeMap::from([
        ("claude-opus-4-5-20251101".to_owned(), mine),
        ("my-local".to_owned(), Price::new(0.0, 0.0, 0.0)),
    ]))
    .unwrap();
    let q = table.quote("claude-opus-4-5-20251101").unwrap();
    assert_eq!(
        (q.price, q.window, q.source),
        (mine, None, PriceSource::Config)
    );
    assert_eq!(table.get("my-local").map(|p| p.output), Some(0.0));
    assert_eq!(
        table.get("claude-opus-4-5").map(|p| p.input),
        Some(5.0),
        "the others stay"
    );
    let bad = Price {
        cache_write_1h: Some(-1.0),
        ..mine
    };
    let err = PriceTable::with_models(BTreeMap::from([("x".to_owned(), bad)])).unwrap_err();
    assert!(err.to_string().contains("'x'"), "{err}");
}

/// A `pricing.toml` price that does not say how short a prompt its provider caches takes the default, 1,024
/// tokens (OpenAI's and Anthropic's): a 1,023-token prompt is all input, a 1,024-token one reads its cached
/// prefix.
#[test]
fn a_config_price_without_a_minimum_prefix_caches_from_1024_tokens() {
    let p: Price = toml::from_str("input = 1.0\ncached_input = 0.5\noutput = 2.0\n").unwrap();
    assert_eq!(p.min_cached_prefix, 1024);
    assert_eq!(p, Price::new(1.0, 0.5, 2.0));
    assert!((p.cost_usd(1023, 1000, 0) - 1023e-6).abs() < 1e-15);
    assert!((p.cost_usd(1024, 1000, 0) - (24e-6 + 500e-6)).abs() < 1e-15);
}

/// Costs worked out by hand, at $1, $0.5, $2 per million (input, cached, output), a write premium of $1.25,
/// a 1-hour one of $2 and a minimum prefix of 1,000 tokens.
#[test]
fn cache_costs_by_hand() {
    let p = Price {
        input: 1.0,
        cached_input: 0.5,
        output: 2.0,
        cache_write: Some(1.25),
        cache_write_1h: Some(2.0),
        min_cached_prefix: 1000,
        tier: None,
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // 3,000 in, 2,000 cached, 100 out: 1,000 × 1.25 + 2,000 × 0.5 + 100 × 2 = 2,450 µ$.
    assert!(close(p.cost_usd(3000, 2000, 100), 0.002_45));
    // No cache: 3,000 × 1 + 100 × 2 = 3,200 µ$.
    assert!(close(p.cost_usd_no_cache(3000, 100), 0.003_2));
    // Under the minimum: 999 tokens are plain input, nothing read or written: 999 µ$.
    assert!(close(p.cost_usd(999, 900, 0), 0.000_999));
    // At the minimum it caches: 1,000 in, 600 cached: 400 × 1.25 + 600 × 0.5 = 800 µ$.
    assert!(close(p.cost_usd(1000, 600, 0), 0.000_8));
    // A cached count above the input is the input.
    assert!(close(p.cost_usd(2000, 5000, 0), 0.001));
    // Without a write premium, the rest is plain input: 1,000 × 1 + 2,000 × 0.5 = 2,000 µ$.
    let q = Price::new(1.0, 0.5, 2.0);
    assert!(close(q.cost_usd(3000, 2000, 0), 0.002));
    assert_eq!(q.min_cached_prefix, 1024);
}

/// A call priced as its trace records it: Claude Code's first call of hello-world-script (2 input, 3,173
/// written to the 5-minute cache, 15,289 read) at Opus 4.5's prices, and the 1-hour cache at 2×.
#[test]
fn recorded_cache_reads_and_writes_by_hand() {
    let opus = quote("claude-opus-4-5-20251101").price;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    let five = CacheUse {
        read: 15_289,
        write_5m: 3_173,
        write_1h: 0,
    };
    // 2 × 5 + 3,173 × 6.25 + 15,289 × 0.5 + 10 × 25 = 10 + 19,831.25 + 7,644.5 + 250 = 27,735.75 µ$.
    assert!(close(opus.cost_recorded(18_464, five, 10), 0.027_735_75));
    let hour = CacheUse {
        read: 15_289,
        write_5m: 0,
        write_1h: 3_173,
    };
    // The same writes to the 1-hour cache: 3,173 × 10 = 31,730 instead of 19,831.25.
    assert!(close(opus.cost_recorded(18_464, hour, 10), 0.039_634_5));
    // Counts above the input are capped, reads first: 100 in, 80 read, 50 written: 80 × 0.5 + 20 × 6.25.
    let over = CacheUse {
        read: 80,
        write_5m: 50,
        write_1h: 50,
    };
    assert!(close(opus.cost_recorded(100, over, 0), 0.000_165));
    // A provider that bills no write apart: written tokens at the input price; a 1-hour write without a price of
    // its own at the 5-minute one.
    let deepseek = quote("deepseek-chat").price;
    let use_ = CacheUse {
        read: 1000,
        write_5m: 500,
        write_1h: 0,
    };
    assert!(close(
        deepseek.cost_recorded(2000, use_, 100),
        (1000.0 * 0.28 + 1000.0 * 0.028 + 100.0 * 0.42) / 1e6
    ));
    let no_1h = Price {
        cache_write_1h: None,
        ..opus
    };
    assert!(close(
        no_1h.cost_recorded(
            1000,
            CacheUse {
                read: 0,
                write_5m: 0,
                write_1h: 1000
            },
            0
        ),
        0.006_25
    ));
}

/// Gemini 2.5 Pro: prompts over 200,000 tokens pay the tier's rates on every token.
#[test]
fn a_prompt_above_the_tier_pays_the_tiers_rates() {
    let p = quote("gemini-2.5-pro").price;
    let t = p.tier.expect("gemini-2.5-pro has a tier");
    assert_eq!((t.above, t.input, t.output), (200_000, 2.5, 15.0));
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(
        p.cost_usd_no_cache(200_000, 0),
        200_000.0 * 1.25 / 1e6
    ));
    assert!(close(
        p.cost_usd_no_cache(200_001, 10),
        (200_001.0 * 2.5 + 150.0) / 1e6
    ));
    assert!(close(
        p.cost_usd(300_000, 100_000, 0),
        (200_000.0 * 2.5 + 100_000.0 * t.cached_input) / 1e6
    ));
    assert_eq!(p.rates_for(200_000).input, 1.25);
}

/// A price without the cache, and with 1-hour writes, by hand, a tier's rates included: without the cache
/// every input token (the tier's too) is input, no write is billed apart; with 1-hour writes each write is at
/// the 1-hour rate where there is one, the 5-minute one's where not.
#[test]
fn without_the_cache_and_with_one_hour_writes_by_hand() {
    let tier = Tier {
        above: 200_000,
        input: 6.0,
        cached_input: 0.6,
        output: 22.5,
        cache_write: Some(7.5),
        cache_write_1h: Some(12.0),
    };
    let p = Price {
        input: 3.0,
        cached_input: 0.3,
        output: 15.0,
        cache_write: Some(3.75),
        cache_write_1h: Some(6.0),
        min_cached_prefix: 0,
        tier: Some(tier),
    };
    let plain = p.without_cache();
    assert_eq!(
        plain,
        Price {
            cached_input: 3.0,
            cache_write: None,
            cache_write_1h: None,
            tier: Some(Tier {
                cached_input: 6.0,
                cache_write: None,
                cache_write_1h: None,
                ..tier
            }),
            ..p
        }
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // 300,000 tokens, 100,000 of them a cached prefix, 10 out: above the tier, all at its input price.
    assert!(close(
        plain.cost_usd(300_000, 100_000, 10),
        (300_000.0 * 6.0 + 10.0 * 22.5) / 1e6
    ));
    assert!(close(
        p.cost_usd(300_000, 100_000, 10),
        (200_000.0 * 7.5 + 100_000.0 * 0.6 + 10.0 * 22.5) / 1e6
    ));
    let hour = p.one_hour_writes();
    assert_eq!(
        hour,
        Price {
            cache_write: Some(6.0),
            tier: Some(Tier {
                cache_write: Some(12.0),
                ..tier
            }),
            ..p
        }
    );
    assert!(close(
        hour.cost_usd(1_000, 400, 0),
        (600.0 * 6.0 + 400.0 * 0.3) / 1e6
    ));
    // Where the table gives no 1-hour rate, a write stays at the 5-minute one.
    let five = Price {
        cache_write_1h: None,
        tier: Some(Tier {
            cache_write_1h: None,
            ..tier
        }),
        ..p
    };
    assert_eq!(five.one_hour_writes(), five);
}

/// The rates a table gives, made into a price with the provider's cache rules.
#[test]
fn rates_become_a_price_with_the_providers_cache_rules() {
    let r = Rates {
        input: 2.0,
        output: 8.0,
        cache_read: None,
        cache_write: Some(2.0),
        cache_write_1h: Some(4.0),
        tiers: vec![TierRates {
            above: 100,
            input: Some(3.0),
            cache_write: Some(1.0),
            ..TierRates::default()
        }],
    };
    let p = Price::from_rates(&r, 64);
    // No read price: reads at the input price; a write at the input price is no premium; the 1-hour one is.
    assert_eq!(rates(&p), (2.0, 2.0, 8.0, None, Some(4.0), 64));
    let t = p.tier.unwrap();
    assert_eq!(
        (
            t.above,
            t.input,
            t.cached_input,
            t.output,
            t.cache_write,
            t.cache_write_1h
        ),
        (100, 3.0, 3.0, 8.0, None, Some(4.0))
    );
    assert!(p.is_valid());
    assert!(!Price {
        tier: Some(Tier {
            output: f64::NAN,
            ..t
        }),
        ..p
    }
    .is_valid());
}

/// genai-prices' matcher against what genai-prices itself matched every name of the snapshot to (and the
/// refresh script's extra names: dated, prefixed, upper case, unknown).
#[test]
fn genai_prices_matching_equals_genai_prices_own() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/prices/genai_matches.json"
    );
    let vectors: Vec<(String, Option<String>, Option<String>)> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(vectors.len() > 5000, "{}", vectors.len());
    let snap = Snapshot::builtin();
    let mut wrong = Vec::new();
    for (name, provider, model) in &vectors {
        let got =
            genai::find(snap.genai_providers(), name).map(|(p, m)| (p.id.clone(), m.id.clone()));
        let want = provider.clone().zip(model.clone());
        if got != want {
            wrong.push(format!("{name}: {got:?} ≠ {want:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {}: {:#?}",
        wrong.len(),
        vectors.len(),
        &wrong[..wrong.len().min(20)]
    );
}
