//! Tokens sent: per call point, per episode, and savings against the baseline.

use super::slot;
use super::{float, ratio, Agg, EpisodeView, Field, Metric, Slot, StepView, Unit, Values};

/// Tokens of the requests as sent, their peak, steps over the window, and savings.
pub struct Tokens;

impl Metric for Tokens {
    fn step_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(
                slot::ITEMS_SENT,
                Unit::Count,
                "Items in the request as sent.",
            ),
            Slot::column(
                slot::INSTRUCTIONS_SENT,
                Unit::Count,
                "Instructions (summaries) in the request as sent.",
            ),
            Slot::column(
                slot::TOKENS_BEFORE,
                Unit::Tokens,
                "Tokens of the live request before the strategy ran.",
            ),
            Slot::column(
                slot::TOKENS_SENT,
                Unit::Tokens,
                "Tokens of the request as sent (OpenAI chat accounting).",
            ),
            Slot::column(
                slot::CACHED_TOKENS,
                Unit::Tokens,
                "Tokens of the sent request's prefix equal to the previous request as sent.",
            ),
            Slot::column(
                slot::OUTPUT_TOKENS,
                Unit::Tokens,
                "Tokens of the recorded assistant turn that answered.",
            ),
            Slot::column(
                slot::OVER_WINDOW,
                Unit::Flag,
                "Whether the request as sent exceeds the context window.",
            ),
        ]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        let s = v.step;
        out.put(slot::ITEMS_SENT, s.items_sent)
            .put(slot::INSTRUCTIONS_SENT, s.instructions_sent)
            .put(slot::TOKENS_BEFORE, s.tokens_before)
            .put(slot::TOKENS_SENT, s.tokens_sent)
            .put(slot::CACHED_TOKENS, s.cached_tokens)
            .put(slot::OUTPUT_TOKENS, s.output_tokens)
            .put(slot::OVER_WINDOW, s.tokens_sent > v.context.context_window);
    }

    fn episode_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(slot::ITEMS, Unit::Count, "Items in the episode."),
            Slot::column(slot::STEPS, Unit::Count, "Call points replayed."),
            Slot::column(
                slot::INPUT_TOKENS,
                Unit::Tokens,
                "Tokens sent, summed over call points.",
            ),
            Slot::column(
                slot::BASELINE_INPUT_TOKENS,
                Unit::Tokens,
                "The same for the baseline (no reduction) on the same episode.",
            ),
            Slot::column(
                slot::SAVINGS,
                Unit::Share,
                "1 − input tokens / baseline input tokens.",
            ),
            Slot::column(slot::PEAK_TOKENS, Unit::Tokens, "The largest request sent."),
            Slot::column(
                slot::STEPS_OVER_WINDOW,
                Unit::Count,
                "Call points whose request exceeded the window.",
            ),
            Slot::column(
                slot::CACHED_TOKENS,
                Unit::Tokens,
                "Input tokens priced as cached.",
            ),
            Slot::column(
                slot::OUTPUT_TOKENS,
                Unit::Tokens,
                "Output tokens of the agent's recorded turns.",
            ),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let steps = &v.replay.steps;
        let input: usize = steps.iter().map(|s| s.tokens_sent).sum();
        let baseline: usize = v.baseline.steps.iter().map(|s| s.tokens_sent).sum();
        out.put(slot::ITEMS, v.replay.items)
            .put(slot::STEPS, steps.len())
            .put(slot::INPUT_TOKENS, input)
            .put(slot::BASELINE_INPUT_TOKENS, baseline)
            .put(
                slot::SAVINGS,
                float(ratio(input, baseline).map_or(0.0, |r| 1.0 - r)),
            )
            .put(
                slot::PEAK_TOKENS,
                steps.iter().map(|s| s.tokens_sent).max().unwrap_or(0),
            )
            .put(
                slot::STEPS_OVER_WINDOW,
                steps
                    .iter()
                    .filter(|s| s.tokens_sent > v.context.context_window)
                    .count(),
            )
            .put(
                slot::CACHED_TOKENS,
                steps.iter().map(|s| s.cached_tokens).sum::<usize>(),
            )
            .put(
                slot::OUTPUT_TOKENS,
                steps.iter().map(|s| s.output_tokens).sum::<usize>(),
            );
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "steps",
                Unit::Count,
                "Call points replayed.",
                Agg::sum(slot::STEPS),
            ),
            Field::new(
                "input_tokens",
                Unit::Tokens,
                "Tokens sent over every call point.",
                Agg::sum(slot::INPUT_TOKENS),
            ),
            Field::new(
                "baseline_input_tokens",
                Unit::Tokens,
                "Tokens the baseline sent on the same episodes.",
                Agg::sum(slot::BASELINE_INPUT_TOKENS),
            ),
            Field::new(
                "savings",
                Unit::Share,
                "1 − input tokens / baseline input tokens, pooled over the episodes.",
                Agg::saving(slot::INPUT_TOKENS, slot::BASELINE_INPUT_TOKENS),
            ),
            Field::new(
                "mean_episode_savings",
                Unit::Share,
                "The mean of the episodes' own savings.",
                Agg::mean(slot::SAVINGS),
            ),
            Field::new(
                "peak_tokens",
                Unit::Tokens,
                "The largest request sent in any episode.",
                Agg::max(slot::PEAK_TOKENS),
            ),
            Field::new(
                "steps_over_window",
                Unit::Count,
                "Call points whose request exceeded the window.",
                Agg::sum(slot::STEPS_OVER_WINDOW),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Episode;
    use crate::metrics::slots::{episode_values, slot_index, step_values};
    use crate::metrics::{Context, EpisodeView, Prices, StepView};
    use crate::replay::{EpisodeReplay, StepRecord};
    use serde_json::Value;

    fn replay(sent: &[usize]) -> EpisodeReplay {
        EpisodeReplay {
            episode: "e".into(),
            source: "t".into(),
            strategy: "s".into(),
            items: 7,
            steps: sent
                .iter()
                .enumerate()
                .map(|(step, &tokens_sent)| StepRecord {
                    step,
                    tokens_sent,
                    cached_tokens: step,
                    output_tokens: 10,
                    ..StepRecord::default()
                })
                .collect(),
            calls: Vec::new(),
            probes: Vec::new(),
        }
    }

    /// A window of 100 tokens: a request of 99 or 100 tokens fits it, ones of 101 to 103 do not.
    #[test]
    fn a_request_is_over_the_window_only_past_it() {
        let context = Context {
            prices: Prices::default(),
            context_window: 100,
        };
        let ep = Episode::default();
        let over = slot_index(&Tokens, "steps_over_window");
        let r = replay(&[99, 100, 101, 102, 103]);
        let flags: Vec<Value> = r
            .steps
            .iter()
            .map(|step| {
                let view = StepView {
                    episode: &ep,
                    step,
                    context: &context,
                };
                step_values(&Tokens, &view)[6].clone()
            })
            .collect();
        assert_eq!(flags, [false, false, true, true, true].map(Value::from));
        // Against a baseline of 600 + 410 = 1,010 tokens, 505 sent saves 1 − 505/1010 = 0.5.
        let baseline = replay(&[600, 410]);
        let view = EpisodeView {
            episode: &ep,
            replay: &r,
            baseline: &baseline,
            context: &context,
            ledger: None,
        };
        let values = episode_values(&Tokens, &view);
        assert_eq!(
            values,
            [
                Value::from(7),
                Value::from(5),
                Value::from(505),
                Value::from(1010),
                Value::from(0.5),
                Value::from(103),
                Value::from(3),
                Value::from(10),
                Value::from(50)
            ]
        );
        assert_eq!(values[over], Value::from(3));
    }
}
