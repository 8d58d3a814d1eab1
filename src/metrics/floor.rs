//! Budgets that cannot work: the part of every request no strategy may reduce (the reply priming, tool
//! schemas, the context a trace did not record, system messages and the task) against the size a strategy
//! brings a request down to. A sliding window whose budget is below that floor drops every item it may; a
//! pipeline whose trigger is below it runs every stage at every call point. Such a strategy is flagged and
//! never recommended (`report::recommend`).

use super::slot;
use super::{Agg, EpisodeView, Field, Metric, Slot, Unit, Values};

/// The floor, the budget, and the episodes where the budget is below the floor.
pub struct Floor;

impl Metric for Floor {
    fn episode_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(
                slot::FLOOR_TOKENS,
                Unit::Tokens,
                "The largest part of a request no strategy may reduce: reply priming, tool schemas, unrecorded \
                 context, system messages and the task.",
            ),
            Slot::column(
                slot::BUDGET_TOKENS,
                Unit::Tokens,
                "The size the strategy brings a request down to (a window's budget, a pipeline's trigger); empty \
                 when it has none.",
            ),
            Slot::column(
                slot::BELOW_FLOOR,
                Unit::Flag,
                "Whether the strategy's budget is below the floor at some call point, where it cannot work.",
            ),
            Slot::column(
                slot::WINDOW_BELOW_FLOOR,
                Unit::Flag,
                "Whether the model's window is below the floor at some call point: no request there fits it, \
                 whatever the strategy.",
            ),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let steps = &v.replay.steps;
        let floor = steps.iter().map(|s| s.floor_tokens).max().unwrap_or(0);
        let budget = steps.iter().find_map(|s| s.budget_tokens);
        let below = steps
            .iter()
            .any(|s| s.budget_tokens.is_some_and(|b| b < s.floor_tokens));
        out.put(slot::FLOOR_TOKENS, floor)
            .put(slot::BUDGET_TOKENS, budget)
            .put(slot::BELOW_FLOOR, below)
            .put(slot::WINDOW_BELOW_FLOOR, floor > v.context.context_window);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "floor_tokens",
                Unit::Tokens,
                "The largest part of any request no strategy may reduce (reply priming, tool schemas, \
                 unrecorded context, system messages, the task).",
                Agg::max(slot::FLOOR_TOKENS),
            ),
            Field::new(
                "budget_tokens",
                Unit::Tokens,
                "The size the strategy brings a request down to, when it has one (null: none).",
                Agg::max(slot::BUDGET_TOKENS),
            ),
            Field::new(
                "episodes_below_floor",
                Unit::Count,
                "Episodes where the strategy's budget is below what it may not reduce: it cannot work there.",
                Agg::sum(slot::BELOW_FLOOR),
            ),
            Field::new(
                "episodes_window_below_floor",
                Unit::Count,
                "Episodes where what no strategy may reduce is over the model's window: the window is too small \
                 for them.",
                Agg::sum(slot::WINDOW_BELOW_FLOOR),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Episode;
    use crate::metrics::slots::episode_values;
    use crate::metrics::{Context, Prices};
    use crate::replay::{EpisodeReplay, StepRecord};

    fn replay(steps: &[(usize, Option<usize>)]) -> EpisodeReplay {
        EpisodeReplay {
            episode: "e".into(),
            source: "s".into(),
            strategy: "w".into(),
            items: 0,
            steps: steps
                .iter()
                .map(|&(floor_tokens, budget_tokens)| StepRecord {
                    floor_tokens,
                    budget_tokens,
                    ..StepRecord::default()
                })
                .collect(),
            probes: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// A budget of 1,000 against floors of 900 and 1,367 (tau-bench's tool schemas): below at the second
    /// call point; a budget equal to the floor, or above it, is not below it; no budget is never below.
    #[test]
    fn a_budget_under_the_floor_at_any_call_point_is_flagged() {
        let episode = Episode::default();
        let context = Context {
            prices: Prices::default(),
            context_window: 5000,
        };
        for (steps, floor, budget, below) in [
            (
                vec![(900, Some(1000)), (1367, Some(1000))],
                1367,
                Some(1000.0),
                true,
            ),
            (vec![(1000, Some(1000))], 1000, Some(1000.0), false),
            (vec![(500, Some(1000))], 500, Some(1000.0), false),
            (vec![(5000, None)], 5000, None, false),
            (vec![(4000, None), (5001, None)], 5001, None, false),
        ] {
            let r = replay(&steps);
            let v = EpisodeView {
                episode: &episode,
                replay: &r,
                baseline: &r,
                context: &context,
                ledger: None,
            };
            let values = episode_values(&Floor, &v);
            assert_eq!(values[0], serde_json::json!(floor));
            assert_eq!(values[1].as_f64(), budget, "{steps:?}");
            assert_eq!(values[2], serde_json::json!(below), "{steps:?}");
            // The window (5,000) is too small only where the floor is over it.
            assert_eq!(values[3], serde_json::json!(floor > 5000), "{steps:?}");
        }
    }
}
