//! Cost in USD, in two views: with the provider's prompt cache (the prefix equal to the previous request read
//! from the cache, the rest written to it, per the model's cache rules in `pricing.toml`), and with no cache
//! (every input token at the input price). Both add the strategy's own calls, which share no prefix.

use super::slot;
use super::{maybe, Agg, EpisodeView, Field, Metric, Slot, StepView, Unit, Values};
use crate::llm::pricing::Price;
use crate::replay::StepRecord;

/// The prices an episode's replay uses: the agent's model (the episode's, and from each switch of model on, the
/// switch's) and the model the strategies call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    /// The agent's model; `None` when unknown (cost is then unknown).
    pub agent: Option<Price>,
    /// (first call point, price) of each model the episode switched to, in order: the agent's price from that
    /// call point on.
    pub agent_switches: Vec<(usize, Option<Price>)>,
    /// The strategies' model.
    pub strategy: Option<Price>,
    /// The judge's model (`None`: unknown, or the mock's stand-in, which costs nothing).
    pub judge: Option<Price>,
}

impl Prices {
    /// The agent's price at call point `step`: the last switch at or before it, else the episode's model's.
    #[must_use]
    pub fn agent_at(&self, step: usize) -> Option<Price> {
        self.agent_switches
            .iter()
            .rev()
            .find(|(from, _)| *from <= step)
            .map_or(self.agent, |(_, p)| *p)
    }

    /// The strategy's calls at one step, in USD (no cache); `None` when they need an unknown price.
    #[must_use]
    pub fn strategy_cost(&self, s: &StepRecord) -> Option<f64> {
        if s.llm_calls.is_empty() {
            return Some(0.0);
        }
        Some(self.strategy?.cost_usd_no_cache(
            s.llm_calls.iter().map(|c| c.input_tokens).sum(),
            s.llm_calls.iter().map(|c| c.output_tokens).sum(),
        ))
    }

    /// Cost of one step in USD with the prompt cache: the agent call plus the strategy's calls; `None` when a
    /// needed price is unknown.
    #[must_use]
    pub fn step_cost(&self, s: &StepRecord) -> Option<f64> {
        let agent = self.agent_at(s.step)?.cost_usd(
            s.tokens_sent as u64,
            s.cached_tokens as u64,
            s.output_tokens as u64,
        );
        Some(agent + self.strategy_cost(s)?)
    }

    /// Cost of one step in USD with no cache.
    #[must_use]
    pub fn step_cost_no_cache(&self, s: &StepRecord) -> Option<f64> {
        let agent = self
            .agent_at(s.step)?
            .cost_usd_no_cache(s.tokens_sent as u64, s.output_tokens as u64);
        Some(agent + self.strategy_cost(s)?)
    }

    /// Cost of an episode's steps in USD with the cache, `None` when a price is unknown.
    #[must_use]
    pub fn episode_cost(&self, steps: &[StepRecord]) -> Option<f64> {
        steps
            .iter()
            .map(|s| self.step_cost(s))
            .try_fold(0.0, |a, b| b.map(|b| a + b))
    }

    /// Cost of an episode's steps in USD with no cache, `None` when a price is unknown.
    #[must_use]
    pub fn episode_cost_no_cache(&self, steps: &[StepRecord]) -> Option<f64> {
        steps
            .iter()
            .map(|s| self.step_cost_no_cache(s))
            .try_fold(0.0, |a, b| b.map(|b| a + b))
    }
}

/// Cost per step, per episode, and saved against the baseline, in both views.
pub struct Cost;

impl Metric for Cost {
    fn step_slots(&self) -> Vec<Slot> {
        vec![Slot::column(
            slot::COST_USD,
            Unit::Usd,
            "Cost of the call point: the agent's call (cached prefix at the cached price, the rest at the \
             cache-write price) and the strategy's calls.",
        )]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        out.put(slot::COST_USD, maybe(v.context.prices.step_cost(v.step)));
    }

    fn episode_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(
                slot::COST_USD,
                Unit::Usd,
                "Cost of the episode's call points with the prompt cache; empty when a price is unknown.",
            ),
            Slot::column(
                slot::COST_USD_NO_CACHE,
                Unit::Usd,
                "Cost of the episode's call points with every input token at the input price.",
            ),
            Slot::kept(slot::BASELINE_COST_USD),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let prices = &v.context.prices;
        out.put(slot::COST_USD, maybe(prices.episode_cost(&v.replay.steps)))
            .put(
                slot::COST_USD_NO_CACHE,
                maybe(prices.episode_cost_no_cache(&v.replay.steps)),
            )
            .put(
                slot::BASELINE_COST_USD,
                maybe(prices.episode_cost(&v.baseline.steps)),
            );
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "cost_usd",
                Unit::Usd,
                "Cost over the dataset with the prompt cache: the agent's calls (cached prefix at the cached \
                 price, the rest at the cache-write price, requests under the model's minimum uncached) and the \
                 strategy's.",
                Agg::sum(slot::COST_USD),
            ),
            Field::new(
                "baseline_cost_usd",
                Unit::Usd,
                "The baseline's cost on the same episodes, with the prompt cache: what no reduction costs.",
                Agg::sum(slot::BASELINE_COST_USD),
            ),
            Field::new(
                "cost_savings",
                Unit::Share,
                "1 − cost / the baseline's cost on the same episodes, with the prompt cache.",
                Agg::saving_over_baseline(slot::COST_USD),
            ),
            Field::new(
                "cost_usd_no_cache",
                Unit::Usd,
                "Cost over the dataset with every input token at the input price.",
                Agg::sum(slot::COST_USD_NO_CACHE),
            ),
            Field::new(
                "cost_savings_no_cache",
                Unit::Share,
                "1 − cost / the baseline's cost on the same episodes, with no cache.",
                Agg::saving_over_baseline(slot::COST_USD_NO_CACHE),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{FindingSet, TokensByKind};
    use crate::strategy::LlmCall;

    #[test]
    fn unknown_price_gives_unknown_cost() {
        let step = StepRecord {
            step: 0,
            item_index: 0,
            items_sent: 1,
            instructions_sent: 0,
            tokens_before: 10,
            tokens_sent: 10,
            cached_tokens: 0,
            output_tokens: 1,
            tokens_by_kind: TokensByKind::default(),
            changed: true,
            llm_calls: vec![LlmCall {
                input_tokens: 5,
                output_tokens: 5,
                latency_ms: 0.0,
                error: None,
            }],
            summarized_items: 0,
            compacted_items: 0,
            truncated_items: 0,
            floor_tokens: 0,
            budget_tokens: None,
            dropped_items: 0,
            present: FindingSet::default(),
            present_before: FindingSet::default(),
            compute_us: 0.0,
            failure: None,
        };
        let p = Price::new(1.0, 0.5, 2.0);
        assert_eq!(
            Prices {
                agent: Some(p),
                strategy: None,
                judge: None,
                agent_switches: Vec::new(),
            }
            .step_cost(&step),
            None
        );
        let c = Prices {
            agent: Some(p),
            strategy: Some(p),
            judge: None,
            agent_switches: Vec::new(),
        }
        .step_cost(&step)
        .unwrap();
        assert!((c - (10.0 + 2.0 + 5.0 + 10.0) / 1e6).abs() < 1e-15);
        // Without a cache the agent's input is all at the full price; the strategy's own calls count the same.
        let step = StepRecord {
            tokens_sent: 3000,
            cached_tokens: 2000,
            ..step
        };
        let prices = Prices {
            agent: Some(p),
            strategy: Some(Price::new(3.0, 3.0, 4.0)),
            judge: None,
            agent_switches: Vec::new(),
        };
        let cached = prices.step_cost(&step).unwrap();
        let full = prices.step_cost_no_cache(&step).unwrap();
        assert!(
            (cached - (1000.0 + 2000.0 * 0.5 + 2.0 + 15.0 + 20.0) / 1e6).abs() < 1e-15,
            "{cached}"
        );
        assert!(
            (full - (3000.0 + 2.0 + 15.0 + 20.0) / 1e6).abs() < 1e-15,
            "{full}"
        );
        // A switch of model prices the agent's calls from its call point on: the step is call point 0 here, so
        // a switch at 0 prices it at $10 per million (output 1 token), one at 1 leaves it at the episode's model's; an unknown model's
        // switch makes the step's cost unknown.
        let switched = |at: usize, price: Option<Price>| Prices {
            agent_switches: vec![(at, price)],
            ..prices.clone()
        };
        let at_10 = Some(Price::new(10.0, 10.0, 10.0));
        assert_eq!(switched(1, at_10).step_cost(&step), Some(cached));
        let no_cache = switched(0, at_10).step_cost_no_cache(&step).unwrap();
        assert!(
            (no_cache - (3000.0 * 10.0 + 10.0 + 15.0 + 20.0) / 1e6).abs() < 1e-15,
            "{no_cache}"
        );
        assert_eq!(switched(0, None).step_cost(&step), None);
        assert_eq!(switched(0, None).agent_at(0), None);
        assert_eq!(switched(3, None).agent_at(2), Some(p));
    }
}
