//! What strategies do besides the agent: their own LLM calls, and the items they drop, compact or summarize.

use super::slot;
use super::{float, total, Agg, EpisodeView, Field, Metric, Slot, StepView, Unit, Values};
use crate::replay::StepRecord;

/// The strategy's own LLM calls: how many, how many failed, their tokens and time.
pub struct LlmUse;

const NAMES: [(&str, Unit, &str); 5] = [
    (
        slot::STRATEGY_CALLS,
        Unit::Count,
        "LLM calls the strategy made (summaries).",
    ),
    (
        slot::STRATEGY_FAILURES,
        Unit::Count,
        "Of those, calls that failed.",
    ),
    (
        slot::STRATEGY_INPUT_TOKENS,
        Unit::Tokens,
        "Prompt tokens of the strategy's calls.",
    ),
    (
        slot::STRATEGY_OUTPUT_TOKENS,
        Unit::Tokens,
        "Completion tokens of the strategy's calls.",
    ),
    (
        slot::STRATEGY_LLM_MS,
        Unit::Ms,
        "LLM time of the strategy's calls (measured, or the mock's model).",
    ),
];

fn slots() -> Vec<Slot> {
    NAMES
        .iter()
        .map(|(n, u, d)| Slot::column(*n, *u, *d))
        .collect()
}

/// The step's calls, failures, input and output tokens, and LLM time.
fn of_step(s: &StepRecord) -> (usize, usize, u64, u64, f64) {
    let calls = &s.llm_calls;
    (
        calls.len(),
        calls.iter().filter(|c| c.error.is_some()).count(),
        calls.iter().map(|c| c.input_tokens).sum(),
        calls.iter().map(|c| c.output_tokens).sum(),
        total(calls.iter().map(|c| c.latency_ms)),
    )
}

fn put(out: &mut Values<'_>, (calls, failures, input, output, ms): (usize, usize, u64, u64, f64)) {
    out.put(slot::STRATEGY_CALLS, calls)
        .put(slot::STRATEGY_FAILURES, failures)
        .put(slot::STRATEGY_INPUT_TOKENS, input)
        .put(slot::STRATEGY_OUTPUT_TOKENS, output)
        .put(slot::STRATEGY_LLM_MS, float(ms));
}

impl Metric for LlmUse {
    fn step_slots(&self) -> Vec<Slot> {
        slots()
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        put(out, of_step(v.step));
    }

    fn episode_slots(&self) -> Vec<Slot> {
        slots()
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let mut sum = (0, 0, 0, 0, 0.0);
        for s in &v.replay.steps {
            let (c, f, i, o, ms) = of_step(s);
            sum = (sum.0 + c, sum.1 + f, sum.2 + i, sum.3 + o, sum.4 + ms);
        }
        put(out, sum);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        NAMES
            .iter()
            .map(|(n, u, d)| Field::new(*n, *u, *d, Agg::sum(*n)))
            .collect()
    }
}

/// The items a strategy took out of the request at each step, by what it did to them.
pub struct Actions;

impl Metric for Actions {
    fn step_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(
                slot::SUMMARIZED_ITEMS,
                Unit::Count,
                "Items the strategy summarized away.",
            ),
            Slot::column(
                slot::COMPACTED_ITEMS,
                Unit::Count,
                "Items whose content the strategy replaced by a stub or cut.",
            ),
            Slot::column(
                slot::DROPPED_ITEMS,
                Unit::Count,
                "Items the strategy dropped.",
            ),
        ]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        out.put(slot::SUMMARIZED_ITEMS, v.step.summarized_items)
            .put(slot::COMPACTED_ITEMS, v.step.compacted_items)
            .put(slot::DROPPED_ITEMS, v.step.dropped_items);
    }

    fn episode_slots(&self) -> Vec<Slot> {
        Vec::new()
    }

    fn episode_values(&self, _: &EpisodeView<'_>, _: &mut Values<'_>) {}

    fn strategy_fields(&self) -> Vec<Field> {
        Vec::new()
    }
}
