//! Where a strategy acted: the episodes in which it changed the request at least once, and its savings, cost
//! saving and retention at need over those episodes alone. A pooled figure mixes the episodes a strategy
//! reduced with those it left alone (a pipeline that only acts on long episodes "keeps" every finding of the
//! short ones); this one says what it does when it does something.

use super::{needs, Agg, EpisodeView, Field, Metric, Slot, Unit, Values};

/// The slots [`put_sums`] fills: input tokens, the baseline's, cost with the cache, the baseline's, then the
/// retention counts (found needs and retained, first needs and retained, task-given needs and retained).
pub(super) const SUMS: [&str; 10] = [
    "input_tokens",
    "baseline_input_tokens",
    "cost_usd",
    "baseline_cost_usd",
    "needs",
    "retained",
    "first_needs",
    "first_retained",
    "needs_task",
    "task_retained",
];

/// The [`SUMS`] of an episode under a strategy: the sums behind savings, cost saved and the retention figures
/// (here over the episodes acted on, in [`super::intervals`] per bootstrap replicate).
pub(super) fn put_sums(v: &EpisodeView<'_>, out: &mut Values<'_>) {
    let input =
        |r: &crate::replay::EpisodeReplay| r.steps.iter().map(|s| s.tokens_sent).sum::<usize>();
    let cost =
        |r: &crate::replay::EpisodeReplay| super::maybe(v.context.prices.episode_cost(&r.steps));
    let counts = needs::NeedCounts::of(&needs::ledger(v.episode, &v.replay.steps));
    out.put("input_tokens", input(v.replay))
        .put("baseline_input_tokens", input(v.baseline))
        .put("cost_usd", cost(v.replay))
        .put("baseline_cost_usd", cost(v.baseline))
        .put("needs", counts.needs)
        .put("retained", counts.retained)
        .put("first_needs", counts.first)
        .put("first_retained", counts.first_retained)
        .put("needs_task", counts.task)
        .put("task_retained", counts.task_retained);
}

/// Episodes acted on, and the figures over them.
pub struct Acted;

impl Metric for Acted {
    /// The flag, then — when it acted, else zeros — the [`SUMS`].
    fn episode_slots(&self) -> Vec<Slot> {
        let mut slots = vec![Slot::column(
            "acted",
            Unit::Flag,
            "Whether the strategy changed the request at least once in the episode.",
        )];
        slots.extend(SUMS.map(Slot::kept));
        slots
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let acted = v.replay.steps.iter().any(|s| s.changed);
        out.put("acted", acted);
        if acted {
            put_sums(v, out);
        } else {
            for name in SUMS {
                out.put(name, 0);
            }
        }
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "episodes_acted",
                Unit::Count,
                "Episodes where the strategy changed the request at least once.",
                Agg::sum("acted"),
            ),
            Field::new(
                "savings_acted",
                Unit::Share,
                "Savings over the episodes the strategy acted on (null when it acted on none).",
                Agg::float_saving("input_tokens", "baseline_input_tokens"),
            ),
            Field::new(
                "cost_savings_acted",
                Unit::Share,
                "Cost saving (with the prompt cache) over the episodes the strategy acted on.",
                Agg::float_saving("cost_usd", "baseline_cost_usd"),
            ),
            Field::new(
                "needs_acted",
                Unit::Count,
                "(Found finding, need) pairs met on the episodes the strategy acted on: the evidence its \
                 retention there rests on.",
                Agg::sum("needs"),
            ),
            Field::new(
                "retention_at_need_acted",
                Unit::Share,
                "Retention at need (found findings) over the episodes the strategy acted on.",
                Agg::ratio("retained", "needs"),
            ),
            Field::new(
                "retention_first_need_acted",
                Unit::Share,
                "Retention at the first need over the episodes the strategy acted on.",
                Agg::ratio("first_retained", "first_needs"),
            ),
            Field::new(
                "retention_at_need_task_acted",
                Unit::Share,
                "Retention at need of task-given findings over the episodes the strategy acted on.",
                Agg::ratio("task_retained", "needs_task"),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// episodes.csv has the flag as its own column; the figures over acted-on episodes are summary fields
    /// (pinned by hand in `by_hand`).
    #[test]
    fn the_flag_is_an_episode_column() {
        let names: Vec<String> = Acted
            .episode_slots()
            .iter()
            .filter_map(|s| Some(s.column.as_ref()?.name.clone()))
            .collect();
        assert_eq!(names, ["acted"]);
    }
}
