//! Cost in USD: the agent's calls, with the prefix equal to the previous request priced as cached input, plus
//! the strategy's own calls.

use serde_json::Value;

use super::{maybe, Agg, Column, EpisodeView, Field, Metric, StepView, Unit};
use crate::llm::pricing::Price;
use crate::replay::StepRecord;

/// The prices a run uses: the agent's model and the model the strategies call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    /// The agent's model; `None` when unknown (cost is then unknown).
    pub agent: Option<Price>,
    /// The strategies' model.
    pub strategy: Option<Price>,
}

impl Prices {
    /// Cost of one step in USD: the agent call plus the strategy's calls; `None` when a needed price is unknown.
    #[must_use]
    pub fn step_cost(&self, s: &StepRecord) -> Option<f64> {
        let agent = self.agent?.cost_usd(
            s.tokens_sent as u64,
            s.cached_tokens as u64,
            s.output_tokens as u64,
        );
        let strategy = if s.llm_calls.is_empty() {
            0.0
        } else {
            self.strategy?.cost_usd(
                s.llm_calls.iter().map(|c| c.input_tokens).sum(),
                0,
                s.llm_calls.iter().map(|c| c.output_tokens).sum(),
            )
        };
        Some(agent + strategy)
    }

    /// Cost of an episode's steps in USD, `None` when a price is unknown.
    #[must_use]
    pub fn episode_cost(&self, steps: &[StepRecord]) -> Option<f64> {
        steps
            .iter()
            .map(|s| self.step_cost(s))
            .try_fold(0.0, |a, b| b.map(|b| a + b))
    }
}

/// Cost per step, per episode, and saved against the baseline.
pub struct Cost;

impl Metric for Cost {
    fn step_columns(&self) -> Vec<Column> {
        vec![Column::new(
            "cost_usd",
            Unit::Usd,
            "Cost of the call point: the agent's call (cached prefix at the cached price) and the strategy's calls.",
        )]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Vec<Value>) {
        out.push(maybe(v.context.prices.step_cost(v.step)));
    }

    fn episode_columns(&self) -> Vec<Column> {
        vec![Column::new(
            "cost_usd",
            Unit::Usd,
            "Cost of the episode's call points; empty when a price is unknown.",
        )]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        out.push(maybe(v.context.prices.episode_cost(&v.replay.steps)));
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "cost_usd",
                Unit::Usd,
                "Cost over the dataset: the agent's calls (cached prefix at the cached price) and the strategy's.",
                Agg::Sum(0),
            ),
            Field::new(
                "cost_savings",
                Unit::Share,
                "1 − cost / the baseline's cost on the same episodes.",
                Agg::SavingOverBaseline(0),
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
            dropped_items: 0,
            present: FindingSet::default(),
            present_before: FindingSet::default(),
            compute_us: 0.0,
        };
        let p = Price {
            input: 1.0,
            cached_input: 0.5,
            output: 2.0,
        };
        assert_eq!(
            Prices {
                agent: Some(p),
                strategy: None
            }
            .step_cost(&step),
            None
        );
        let c = Prices {
            agent: Some(p),
            strategy: Some(p),
        }
        .step_cost(&step)
        .unwrap();
        assert!((c - (10.0 + 2.0 + 5.0 + 10.0) / 1e6).abs() < 1e-15);
    }
}
