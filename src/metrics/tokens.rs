//! Tokens sent: per call point, per episode, and savings against the baseline.

use serde_json::Value;

use super::{float, ratio, Agg, Column, EpisodeView, Field, Metric, StepView, Unit};

/// Tokens of the requests as sent, their peak, steps over the window, and savings.
pub struct Tokens;

impl Metric for Tokens {
    fn step_columns(&self) -> Vec<Column> {
        vec![
            Column::new("items_sent", Unit::Count, "Items in the request as sent."),
            Column::new(
                "instructions_sent",
                Unit::Count,
                "Instructions (summaries) in the request as sent.",
            ),
            Column::new(
                "tokens_before",
                Unit::Tokens,
                "Tokens of the live request before the strategy ran.",
            ),
            Column::new(
                "tokens_sent",
                Unit::Tokens,
                "Tokens of the request as sent (OpenAI chat accounting).",
            ),
            Column::new(
                "cached_tokens",
                Unit::Tokens,
                "Tokens of the sent request's prefix equal to the previous request as sent.",
            ),
            Column::new(
                "output_tokens",
                Unit::Tokens,
                "Tokens of the recorded assistant turn that answered.",
            ),
            Column::new(
                "over_window",
                Unit::Flag,
                "Whether the request as sent exceeds the context window.",
            ),
        ]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Vec<Value>) {
        let s = v.step;
        out.extend([
            Value::from(s.items_sent),
            Value::from(s.instructions_sent),
            Value::from(s.tokens_before),
            Value::from(s.tokens_sent),
            Value::from(s.cached_tokens),
            Value::from(s.output_tokens),
            Value::from(s.tokens_sent > v.context.context_window),
        ]);
    }

    fn episode_columns(&self) -> Vec<Column> {
        vec![
            Column::new("items", Unit::Count, "Items in the episode."),
            Column::new("steps", Unit::Count, "Call points replayed."),
            Column::new(
                "input_tokens",
                Unit::Tokens,
                "Tokens sent, summed over call points.",
            ),
            Column::new(
                "baseline_input_tokens",
                Unit::Tokens,
                "The same for the baseline (no reduction) on the same episode.",
            ),
            Column::new(
                "savings",
                Unit::Share,
                "1 − input tokens / baseline input tokens.",
            ),
            Column::new("peak_tokens", Unit::Tokens, "The largest request sent."),
            Column::new(
                "steps_over_window",
                Unit::Count,
                "Call points whose request exceeded the window.",
            ),
            Column::new(
                "cached_tokens",
                Unit::Tokens,
                "Input tokens priced as cached.",
            ),
            Column::new(
                "output_tokens",
                Unit::Tokens,
                "Output tokens of the agent's recorded turns.",
            ),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let steps = &v.replay.steps;
        let input: usize = steps.iter().map(|s| s.tokens_sent).sum();
        let baseline: usize = v.baseline.steps.iter().map(|s| s.tokens_sent).sum();
        out.extend([
            Value::from(v.replay.items),
            Value::from(steps.len()),
            Value::from(input),
            Value::from(baseline),
            float(ratio(input, baseline).map_or(0.0, |r| 1.0 - r)),
            Value::from(steps.iter().map(|s| s.tokens_sent).max().unwrap_or(0)),
            Value::from(
                steps
                    .iter()
                    .filter(|s| s.tokens_sent > v.context.context_window)
                    .count(),
            ),
            Value::from(steps.iter().map(|s| s.cached_tokens).sum::<usize>()),
            Value::from(steps.iter().map(|s| s.output_tokens).sum::<usize>()),
        ]);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new("steps", Unit::Count, "Call points replayed.", Agg::Sum(1)),
            Field::new(
                "input_tokens",
                Unit::Tokens,
                "Tokens sent over every call point.",
                Agg::Sum(2),
            ),
            Field::new(
                "baseline_input_tokens",
                Unit::Tokens,
                "Tokens the baseline sent on the same episodes.",
                Agg::Sum(3),
            ),
            Field::new(
                "savings",
                Unit::Share,
                "1 − input tokens / baseline input tokens, pooled over the episodes.",
                Agg::Saving(2, 3),
            ),
            Field::new(
                "mean_episode_savings",
                Unit::Share,
                "The mean of the episodes' own savings.",
                Agg::Mean(4),
            ),
            Field::new(
                "peak_tokens",
                Unit::Tokens,
                "The largest request sent in any episode.",
                Agg::Max(5),
            ),
            Field::new(
                "steps_over_window",
                Unit::Count,
                "Call points whose request exceeded the window.",
                Agg::Sum(6),
            ),
        ]
    }
}
