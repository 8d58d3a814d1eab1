//! Each episode's model, price and window, as a run takes them: the model the trace names (the configuration's
//! agent model where it names none), priced and windowed from the table; `--window` sets every episode's window.

use serde::{Deserialize, Serialize};

use super::{Price, PriceTable, Quote};
use crate::history::Episode;

/// Where an episode's window comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowFrom {
    /// `--window` (or the config's `window`): every episode's.
    Option,
    /// The model's input limit in the price table.
    Table,
    /// The configuration's `context_window`: the episode names no model, or the table gives its model no limit.
    #[default]
    Config,
}

/// An episode's model as a run prices and windows it: what reports name per episode (or per group of
/// episodes sharing it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelUse {
    /// The model of most of its call points: the trace's, else the configuration's agent model.
    pub model: String,
    /// Whether the trace names it.
    pub recorded: bool,
    /// The other models its call points called, in order of first use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<String>,
    /// Where its price comes from (`LiteLLM 1.110.2 \`claude-opus-4-5-20251101\``); `None`: unpriced.
    pub price: Option<String>,
    /// Its window, in tokens.
    pub window: usize,
    /// Where the window comes from.
    pub window_from: WindowFrom,
    /// Whether it is priced without a prompt cache: its provider caches only where asked (Anthropic's
    /// `cache_control`), and the trace records each call's usage with no cache read or write in any.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncached: bool,
    /// Whether its cache writes are priced at the 1-hour cache's rate: the trace records more tokens written
    /// to Anthropic's 1-hour cache than to its 5-minute one (the agent asked for the 1-hour TTL).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_hour_cache: bool,
}

/// An episode's recorded usage at its model's prices, beside the baseline's replay of the same call points: the
/// cost figure's check against the record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedCost {
    /// The call points whose usage the trace records.
    pub calls: usize,
    /// Their recorded usage, priced as recorded ([`Price::cost_recorded`]: reads, 5-minute and 1-hour writes
    /// at their rates), with the output the replay counts (Claude Code records none).
    pub recorded_usd: f64,
    /// The baseline's replay of the same call points, priced as every replay is.
    pub baseline_usd: f64,
}

impl RecordedCost {
    /// The recorded cost of `episode` at the prices `agent_at` gives each call point, beside `baseline_usd` of
    /// the same call points (`steps`: the baseline's); `None` when the trace does not record each call's usage
    /// or a call point's price is unknown.
    #[must_use]
    pub fn of(
        episode: &Episode,
        steps: &[crate::replay::StepRecord],
        agent_at: impl Fn(usize) -> Option<Price>,
        baseline_usd: impl Fn(&crate::replay::StepRecord) -> Option<f64>,
    ) -> Option<Self> {
        let usage = crate::history::usage::ProviderUsage::of(episode)?;
        let mut out = Self::default();
        for (k, u) in usage.per_call_point(steps.len())? {
            let step = &steps[k];
            let write = u.cache_write_tokens.unwrap_or(0);
            let hour = u.cache_write_1h_tokens.unwrap_or(0).min(write);
            let cache = super::CacheUse {
                read: u.cache_read_tokens.unwrap_or(0),
                write_5m: write - hour,
                write_1h: hour,
            };
            out.recorded_usd +=
                agent_at(k)?.cost_recorded(u.input_tokens, cache, step.output_tokens as u64);
            out.baseline_usd += baseline_usd(step)?;
            out.calls += 1;
        }
        (out.calls > 0).then_some(out)
    }
}

/// The episodes of a run that share a model, price and window, as reports name them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelGroup {
    /// The model, its price's source and the window.
    #[serde(flatten)]
    pub model: ModelUse,
    /// The episodes, in dataset order.
    pub episodes: Vec<String>,
    /// Over its episodes that record each call's usage: that usage at the model's prices, beside the baseline.
    /// Named `recorded_cost` in JSON: the flattened [`ModelUse`] already has a `recorded` key.
    #[serde(
        default,
        rename = "recorded_cost",
        skip_serializing_if = "Option::is_none"
    )]
    pub recorded: Option<RecordedCost>,
}

impl ModelGroup {
    /// Adds `episode`, taken as `model`, to its group in `groups` (a new one at the end when none shares it),
    /// with its recorded usage's cost when it has one.
    pub fn add(
        groups: &mut Vec<ModelGroup>,
        episode: &str,
        model: &ModelUse,
        recorded: Option<RecordedCost>,
    ) {
        let at = match groups.iter().position(|g| g.model == *model) {
            Some(at) => at,
            None => {
                groups.push(ModelGroup {
                    model: model.clone(),
                    ..ModelGroup::default()
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[at];
        g.episodes.push(episode.to_owned());
        if let Some(r) = recorded {
            let sum = g.recorded.get_or_insert_with(RecordedCost::default);
            sum.calls += r.calls;
            sum.recorded_usd += r.recorded_usd;
            sum.baseline_usd += r.baseline_usd;
        }
    }

    /// The largest window any of `episodes` episodes was replayed in: its model's (`groups`), or `fallback`
    /// (the configuration's) for those no group holds (all of them when `groups` is empty).
    #[must_use]
    pub fn largest_window(groups: &[ModelGroup], episodes: usize, fallback: usize) -> usize {
        let named: usize = groups.iter().map(|g| g.episodes.len()).sum();
        let unnamed = (named < episodes || groups.is_empty()).then_some(fallback);
        groups
            .iter()
            .map(|g| g.model.window)
            .chain(unnamed)
            .max()
            .unwrap_or(fallback)
    }

    /// The group in a sentence: `claude-opus-4-5-20251101 (5 episodes): priced from LiteLLM 1.110.2
    /// \`claude-opus-4-5-20251101\`, window 200,000 tokens (the model's input limit)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let m = &self.model;
        let n = self.episodes.len();
        let episodes = if n == 1 {
            format!("episode {}", self.episodes[0])
        } else {
            format!("{n} episodes")
        };
        let named = if m.recorded {
            ""
        } else {
            ", the configuration's agent model (the trace names none)"
        };
        let price = m.price.as_ref().map_or_else(
            || format!("unpriced: {}", PriceTable::hint(&m.model)),
            |p| format!("priced from {p}"),
        );
        let from = match m.window_from {
            WindowFrom::Option => "--window",
            WindowFrom::Table => "the model's input limit",
            WindowFrom::Config => "the configuration's context_window",
        };
        let cache = if m.uncached {
            " without a prompt cache (the trace records none)"
        } else if m.one_hour_cache {
            " with 1-hour cache writes (as the trace records them)"
        } else {
            ""
        };
        let others = if m.others.is_empty() {
            String::new()
        } else {
            format!("; also called {}", m.others.join(", "))
        };
        let recorded = self.recorded.filter(|r| r.recorded_usd > 0.0).map_or_else(String::new, |r| {
            format!(
                "; its {} recorded calls at these prices ${:.4} (outputs as replayed), the baseline's replay of \
                 them ${:.4} ({:.3})",
                r.calls,
                r.recorded_usd,
                r.baseline_usd,
                r.baseline_usd / r.recorded_usd
            )
        });
        format!(
            "{} ({episodes}{named}): {price}{cache}, window {} tokens ({from}){others}{recorded}",
            m.model,
            crate::report::table::thousands(m.window as u64)
        )
    }
}

/// The model of an episode whose trace names none, where the configuration names no `agent_model` either:
/// unpriced, its window the configuration's `context_window`.
pub const NO_MODEL: &str = "no model named";

/// How a run takes each episode's model: the price table and the configuration's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Defaults {
    /// The prices.
    pub table: PriceTable,
    /// The model of episodes whose trace names none (the config's `agent_model`); `None`: they are
    /// [`NO_MODEL`], unpriced.
    pub agent_model: Option<String>,
    /// Their window, and that of a model the table gives no input limit (the config's `context_window`).
    pub context_window: usize,
    /// Every episode's window, whatever its model (`--window`).
    pub window: Option<usize>,
}

/// An episode's prices: its model's at every call point, and each switch's from its call point on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallPrices {
    /// The episode's model's price; `None`: unknown.
    pub main: Option<Price>,
    /// (first call point, price) of each switch of model, in order.
    pub switches: Vec<(usize, Option<Price>)>,
}

impl CallPrices {
    /// The same price at every call point.
    #[must_use]
    pub fn uniform(price: Option<Price>) -> Self {
        Self {
            main: price,
            switches: Vec::new(),
        }
    }

    /// The price of call point `k`.
    #[must_use]
    pub fn at(&self, k: usize) -> Option<Price> {
        self.switches
            .iter()
            .rev()
            .find(|(from, _)| *from <= k)
            .map_or(self.main, |(_, p)| *p)
    }
}

impl Defaults {
    /// The window of `episode`: `--window`, else its model's input limit in the table, else the configuration's.
    #[must_use]
    pub fn window_of(&self, episode: &Episode) -> usize {
        if let Some(w) = self.window {
            return w;
        }
        episode
            .model
            .as_deref()
            .and_then(|m| self.table.quote(m))
            .and_then(|q| q.window)
            .unwrap_or(self.context_window)
    }

    /// The model, prices and window of `episode`.
    #[must_use]
    pub fn resolve(&self, episode: &Episode) -> (CallPrices, ModelUse) {
        let (model, recorded) = match (episode.model.as_deref(), self.agent_model.as_deref()) {
            (Some(m), _) => (m, true),
            (None, Some(m)) => (m, false),
            (None, None) => (NO_MODEL, false),
        };
        let quote: Option<Quote> = (model != NO_MODEL)
            .then(|| self.table.quote(model))
            .flatten();
        let (window, window_from) = match (self.window, quote.as_ref().and_then(|q| q.window)) {
            (Some(w), _) => (w, WindowFrom::Option),
            (None, Some(w)) if recorded => (w, WindowFrom::Table),
            _ => (self.context_window, WindowFrom::Config),
        };
        // A provider whose cache is asked for (a write premium) and a trace that records every call's usage
        // without a cache read or write: the agent did not ask, and paid every input token as input.
        let uncached = recorded_no_cache(episode);
        let one_hour = recorded_one_hour(episode);
        let as_billed = |p: Option<Price>| match p {
            Some(p) if uncached && p.cache_write.is_some() => Some(p.without_cache()),
            Some(p) if one_hour && p.cache_write_1h.is_some() => Some(p.one_hour_writes()),
            p => p,
        };
        let switches: Vec<(usize, Option<Price>)> = episode
            .model_switches
            .iter()
            .map(|s| (s.call_point, as_billed(self.table.get(&s.model))))
            .collect();
        let mut others: Vec<String> = Vec::new();
        for s in &episode.model_switches {
            if s.model != model && !others.contains(&s.model) {
                others.push(s.model.clone());
            }
        }
        let use_ = ModelUse {
            model: model.to_owned(),
            recorded,
            others,
            price: quote.as_ref().map(|q| q.source.to_string()),
            window,
            window_from,
            uncached: uncached
                && quote
                    .as_ref()
                    .is_some_and(|q| q.price.cache_write.is_some()),
            one_hour_cache: !uncached
                && one_hour
                && quote
                    .as_ref()
                    .is_some_and(|q| q.price.cache_write_1h.is_some()),
        };
        (
            CallPrices {
                main: as_billed(quote.map(|q| q.price)),
                switches,
            },
            use_,
        )
    }
}

/// Whether `episode`'s trace records more tokens written to the 1-hour cache than to the 5-minute one.
fn recorded_one_hour(episode: &Episode) -> bool {
    crate::history::usage::ProviderUsage::of(episode).is_some_and(|u| {
        let hour: u64 = u.calls.iter().filter_map(|c| c.cache_write_1h_tokens).sum();
        let all: u64 = u.calls.iter().filter_map(|c| c.cache_write_tokens).sum();
        hour > all.saturating_sub(hour)
    })
}

/// Whether `episode`'s trace records its calls' usage and none of them read from or wrote to a cache.
fn recorded_no_cache(episode: &Episode) -> bool {
    crate::history::usage::ProviderUsage::of(episode).is_some_and(|u| {
        !u.calls.is_empty()
            && u.calls.iter().all(|c| {
                c.cache_read_tokens.unwrap_or(0) == 0
                    && c.cache_write_tokens.unwrap_or(0) == 0
                    && c.cache_write_1h_tokens.unwrap_or(0) == 0
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Item, ModelSwitch};

    fn defaults(window: Option<usize>) -> Defaults {
        Defaults {
            table: PriceTable::builtin(),
            agent_model: Some("gpt-4o".into()),
            context_window: 128_000,
            window,
        }
    }

    fn episode(model: Option<&str>) -> Episode {
        Episode {
            items: vec![
                Item::user("a"),
                Item::assistant("1"),
                Item::user("b"),
                Item::assistant("2"),
            ],
            stopped: true,
            model: model.map(str::to_owned),
            ..Episode::default()
        }
    }

    #[test]
    fn the_window_is_the_models_unless_an_option_says() {
        let d = defaults(None);
        let (prices, opus) = d.resolve(&episode(Some("claude-opus-4-5-20251101")));
        assert_eq!(
            (opus.window, opus.window_from),
            (200_000, WindowFrom::Table)
        );
        assert!(opus.recorded && opus.price.as_deref().unwrap().starts_with("LiteLLM "));
        assert_eq!(prices.at(1).map(|p| p.input), Some(5.0));
        assert_eq!(d.window_of(&episode(Some("deepseek-chat"))), 131_072);
        // No model: the configuration's, priced and windowed as it says.
        let (prices, gpt) = d.resolve(&episode(None));
        assert_eq!(
            (
                gpt.model.as_str(),
                gpt.recorded,
                gpt.window,
                gpt.window_from
            ),
            ("gpt-4o", false, 128_000, WindowFrom::Config)
        );
        assert_eq!(prices.main.map(|p| p.input), Some(2.5));
        // No model, and none in the configuration: unpriced, never priced as another; the configuration's
        // window.
        let bare = Defaults {
            agent_model: None,
            ..defaults(None)
        };
        let (prices, none) = bare.resolve(&episode(None));
        assert_eq!(
            (
                none.model.as_str(),
                none.recorded,
                none.price.clone(),
                none.window,
                prices.main
            ),
            (NO_MODEL, false, None, 128_000, None)
        );
        // An unknown model: unpriced, the configuration's window.
        let (prices, unknown) = d.resolve(&episode(Some("my-local")));
        assert_eq!(
            (prices.main, unknown.price.clone(), unknown.window_from),
            (None, None, WindowFrom::Config)
        );
        let said = ModelGroup {
            model: unknown,
            episodes: vec!["a".into(), "b".into()],
            recorded: None,
        }
        .describe();
        assert!(
            said.starts_with(
                "my-local (2 episodes): unpriced: 'my-local' is in neither price table"
            ) && said.contains("[pricing.models.\"my-local\"]")
                && said.ends_with("window 128,000 tokens (the configuration's context_window)"),
            "{said}"
        );
        // --window sets every episode's.
        let d = defaults(Some(8_000));
        let (_, opus) = d.resolve(&episode(Some("claude-opus-4-5-20251101")));
        assert_eq!((opus.window, opus.window_from), (8_000, WindowFrom::Option));
    }

    /// Anthropic caches only where asked: a trace that records every call's usage with no cache read or write
    /// (aider in 2024) is priced without a cache; one cache read in the record keeps it; a provider that caches
    /// by itself (DeepSeek) keeps its discounted reads, recorded or not.
    #[test]
    fn a_trace_that_records_no_cache_use_of_an_opt_in_cache_is_priced_without_one() {
        use crate::history::usage::{CallUsage, ProviderUsage};
        let with_usage = |model: &str, read: Option<u64>| {
            let mut ep = episode(Some(model));
            let call = |r| CallUsage {
                input_tokens: 5000,
                output_tokens: 10,
                cache_read_tokens: r,
                ..CallUsage::default()
            };
            ProviderUsage::from_calls("test", vec![call(None), call(read)]).store(&mut ep);
            ep
        };
        let d = defaults(None);
        let (prices, sonnet) = d.resolve(&with_usage("claude-3-5-sonnet-20240620", None));
        let p = prices.main.unwrap();
        assert!(sonnet.uncached);
        assert_eq!(
            (p.input, p.cached_input, p.cache_write, p.cache_write_1h),
            (3.0, 3.0, None, None)
        );
        // 5,000 in, 4,000 of them the previous request: all at $3 per million, as without a cache.
        assert!((p.cost_usd(5000, 4000, 0) - 0.015).abs() < 1e-12);
        let (prices, cached) = d.resolve(&with_usage("claude-3-5-sonnet-20240620", Some(4000)));
        assert!(!cached.uncached);
        assert_eq!(prices.main.unwrap().cache_write, Some(3.75));
        let (prices, deepseek) = d.resolve(&with_usage("deepseek-chat", None));
        assert!(!deepseek.uncached);
        assert_eq!(prices.main.unwrap().cached_input, 0.028);
        // No usage recorded: the cache as the provider bills it.
        let (prices, _) = d.resolve(&episode(Some("claude-3-5-sonnet-20240620")));
        assert_eq!(prices.main.unwrap().cache_write, Some(3.75));
    }

    /// A trace whose writes went to the 1-hour cache: the replay's writes at its rate (Opus 4.5: $10, 2×).
    #[test]
    fn recorded_one_hour_writes_price_the_replays_writes_at_the_one_hour_rate() {
        use crate::history::usage::{CallUsage, ProviderUsage};
        let with_writes = |five: u64, hour: u64| {
            let mut ep = episode(Some("claude-opus-4-5-20251101"));
            let call = CallUsage {
                input_tokens: 20_000,
                cache_read_tokens: Some(15_000),
                cache_write_tokens: Some(five + hour),
                cache_write_1h_tokens: Some(hour),
                ..CallUsage::default()
            };
            ProviderUsage::from_calls("test", vec![call]).store(&mut ep);
            ep
        };
        let d = defaults(None);
        let (prices, hour) = d.resolve(&with_writes(1000, 4000));
        assert!(hour.one_hour_cache && !hour.uncached);
        let p = prices.main.unwrap();
        assert_eq!((p.cache_write, p.cache_write_1h), (Some(10.0), Some(10.0)));
        // 20,000 in, 15,000 read: 5,000 × 10 + 15,000 × 0.5 = 57,500 µ$.
        assert!((p.cost_usd(20_000, 15_000, 0) - 0.0575).abs() < 1e-12);
        let (prices, five) = d.resolve(&with_writes(4000, 1000));
        assert!(!five.one_hour_cache);
        assert_eq!(prices.main.unwrap().cache_write, Some(6.25));
        let group = ModelGroup {
            model: hour,
            episodes: vec!["e".into()],
            recorded: None,
        };
        assert!(
            group.describe().contains("with 1-hour cache writes"),
            "{}",
            group.describe()
        );
    }

    /// An episode's recorded usage priced as recorded, beside the baseline's cost of the same call points; a
    /// call point without a record is left out of both, a trace without per-call usage gives none.
    #[test]
    fn recorded_usage_is_priced_as_recorded_beside_the_baseline() {
        use crate::history::usage::{CallUsage, ProviderUsage, Unrecorded};
        let opus = PriceTable::builtin().get("claude-opus-4-5").unwrap();
        let mut ep = episode(Some("claude-opus-4-5-20251101"));
        let step = |output: usize| crate::replay::StepRecord {
            output_tokens: output,
            ..crate::replay::StepRecord::default()
        };
        let steps = [step(10), step(20)];
        // Call point 0: 2 input, 3,173 written (173 of them to the 1-hour cache), 15,289 read; 1 has no record.
        let mut usage = ProviderUsage::from_calls(
            "test",
            vec![CallUsage {
                input_tokens: 18_464,
                cache_read_tokens: Some(15_289),
                cache_write_tokens: Some(3_173),
                cache_write_1h_tokens: Some(173),
                ..CallUsage::default()
            }],
        );
        usage.unrecorded = vec![Unrecorded {
            call_point: 1,
            why: "interrupted".into(),
        }];
        usage.store(&mut ep);
        let r = RecordedCost::of(
            &ep,
            &steps,
            |_| Some(opus),
            |s| Some(s.output_tokens as f64),
        )
        .unwrap();
        // 2 × 5 + 3,000 × 6.25 + 173 × 10 + 15,289 × 0.5 + 10 × 25 = 28,384.5 µ$; the baseline's stand-in 10.
        assert_eq!(r.calls, 1);
        assert!(
            (r.recorded_usd - 0.028_384_5).abs() < 1e-12,
            "{}",
            r.recorded_usd
        );
        assert!((r.baseline_usd - 10.0).abs() < 1e-12);
        assert_eq!(RecordedCost::of(&ep, &steps, |_| None, |_| Some(0.0)), None);
        assert_eq!(
            RecordedCost::of(&episode(None), &steps, |_| Some(opus), |_| Some(0.0)),
            None
        );
        // Groups add their episodes' figures.
        let (_, m) = defaults(None).resolve(&ep);
        let mut groups = Vec::new();
        ModelGroup::add(&mut groups, "a", &m, Some(r));
        ModelGroup::add(&mut groups, "b", &m, Some(r));
        ModelGroup::add(&mut groups, "c", &m, None);
        assert_eq!(groups.len(), 1);
        let sum = groups[0].recorded.unwrap();
        assert_eq!((sum.calls, groups[0].episodes.len()), (2, 3));
        assert!((sum.recorded_usd - 0.056_769).abs() < 1e-12);
        assert!((sum.baseline_usd - 20.0).abs() < 1e-12);
        // summary.json reads back what it wrote: the group's cost beside its model's own `recorded` flag.
        let json = serde_json::to_string(&groups).unwrap();
        let back: Vec<ModelGroup> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, groups, "{json}");
        assert!(json.contains("\"recorded\":true") && json.contains("\"recorded_cost\":{"));
    }

    #[test]
    fn a_switch_is_priced_as_its_model_from_its_call_point() {
        let mut ep = episode(Some("claude-3-5-sonnet-20240620"));
        ep.model_switches = vec![ModelSwitch {
            call_point: 1,
            model: "gpt-4o".into(),
        }];
        let (prices, use_) = defaults(None).resolve(&ep);
        assert_eq!(prices.at(0).map(|p| p.input), Some(3.0));
        assert_eq!(prices.at(1).map(|p| p.input), Some(2.5));
        assert_eq!(prices.at(9).map(|p| p.input), Some(2.5));
        assert_eq!(use_.others, ["gpt-4o"]);
        // A switch back to the episode's own model, and to gpt-4o again: each other model named once.
        ep.model_switches.extend([
            ModelSwitch {
                call_point: 2,
                model: "claude-3-5-sonnet-20240620".into(),
            },
            ModelSwitch {
                call_point: 3,
                model: "gpt-4o".into(),
            },
        ]);
        let (prices, use_) = defaults(None).resolve(&ep);
        assert_eq!(use_.others, ["gpt-4o"]);
        assert_eq!(prices.at(2).map(|p| p.input), Some(3.0));
        assert_eq!(CallPrices::uniform(None).at(3), None);
        let p = Price::new(1.0, 0.5, 2.0);
        assert_eq!(CallPrices::uniform(Some(p)).at(3), Some(p));
    }

    /// The largest window a run's episodes were replayed in, by hand: the groups' windows, and the
    /// configuration's only where an episode is in no group (or there is none).
    #[test]
    fn the_largest_window_counts_the_fallback_only_for_episodes_no_group_holds() {
        let group = |window: usize, episodes: usize| ModelGroup {
            model: ModelUse {
                window,
                ..ModelUse::default()
            },
            episodes: (0..episodes).map(|i| format!("e{i}")).collect(),
            recorded: None,
        };
        let groups = [group(200_000, 2), group(131_072, 1)];
        // Every episode in a group: a larger fallback is no episode's window.
        assert_eq!(ModelGroup::largest_window(&groups, 3, 1_000_000), 200_000);
        // A fourth episode in none: the fallback is its window, the largest when it is larger.
        assert_eq!(ModelGroup::largest_window(&groups, 4, 300_000), 300_000);
        assert_eq!(ModelGroup::largest_window(&groups, 4, 100_000), 200_000);
        assert_eq!(ModelGroup::largest_window(&[], 0, 128_000), 128_000);
        assert_eq!(ModelGroup::largest_window(&[], 5, 64_000), 64_000);
    }

    /// A group's sentence names its recorded calls' cost beside the baseline's only where that cost is above 0.
    #[test]
    fn a_group_names_its_recorded_cost_only_when_there_is_one() {
        let group = |recorded_usd: f64| ModelGroup {
            model: ModelUse {
                model: "claude-opus-4-5-20251101".into(),
                recorded: true,
                price: Some("LiteLLM 1.110.2 `claude-opus-4-5-20251101`".into()),
                window: 200_000,
                window_from: WindowFrom::Table,
                ..ModelUse::default()
            },
            episodes: vec!["a".into(), "b".into()],
            recorded: Some(RecordedCost {
                calls: 3,
                recorded_usd,
                baseline_usd: 0.0276,
            }),
        };
        assert_eq!(
            group(0.0279).describe(),
            "claude-opus-4-5-20251101 (2 episodes): priced from LiteLLM 1.110.2 `claude-opus-4-5-20251101`, \
             window 200,000 tokens (the model's input limit); its 3 recorded calls at these prices $0.0279 \
             (outputs as replayed), the baseline's replay of them $0.0276 (0.989)"
        );
        assert_eq!(
            group(0.0).describe(),
            "claude-opus-4-5-20251101 (2 episodes): priced from LiteLLM 1.110.2 `claude-opus-4-5-20251101`, \
             window 200,000 tokens (the model's input limit)"
        );
    }
}
