//! Where a strategy acted: the episodes in which it changed the request at least once, and its savings, cost
//! saving and retention at need over those episodes alone. A pooled figure mixes the episodes a strategy
//! reduced with those it left alone (a pipeline that only acts on long episodes "keeps" every finding of the
//! short ones); this one says what it does when it does something.

use super::slot;
use super::{needs, Agg, EpisodeView, Field, Metric, Slot, Unit, Values};

/// The slots [`put_sums`] fills: input tokens, the baseline's, cost with the cache, the baseline's, then the
/// retention counts (found needs and retained, first needs and retained, task-given needs and retained).
pub(super) const SUMS: [&str; 10] = [
    slot::INPUT_TOKENS,
    slot::BASELINE_INPUT_TOKENS,
    slot::COST_USD,
    slot::BASELINE_COST_USD,
    slot::NEEDS,
    slot::RETAINED,
    slot::FIRST_NEEDS,
    slot::FIRST_RETAINED,
    slot::NEEDS_TASK,
    slot::TASK_RETAINED,
];

/// The [`SUMS`] of an episode under a strategy: the sums behind savings, cost saved and the retention figures
/// (here over the episodes acted on, in [`super::intervals`] per bootstrap replicate).
pub(super) fn put_sums(v: &EpisodeView<'_>, out: &mut Values<'_>) {
    let input =
        |r: &crate::replay::EpisodeReplay| r.steps.iter().map(|s| s.tokens_sent).sum::<usize>();
    let cost =
        |r: &crate::replay::EpisodeReplay| super::maybe(v.context.prices.episode_cost(&r.steps));
    let counts = needs::NeedCounts::of(&needs::ledger(v.episode, &v.replay.steps));
    out.put(slot::INPUT_TOKENS, input(v.replay))
        .put(slot::BASELINE_INPUT_TOKENS, input(v.baseline))
        .put(slot::COST_USD, cost(v.replay))
        .put(slot::BASELINE_COST_USD, cost(v.baseline))
        .put(slot::NEEDS, counts.needs)
        .put(slot::RETAINED, counts.retained)
        .put(slot::FIRST_NEEDS, counts.first)
        .put(slot::FIRST_RETAINED, counts.first_retained)
        .put(slot::NEEDS_TASK, counts.task)
        .put(slot::TASK_RETAINED, counts.task_retained);
}

/// Episodes acted on, and the figures over them.
pub struct Acted;

impl Metric for Acted {
    /// The flag, then — when it acted, else zeros — the [`SUMS`].
    fn episode_slots(&self) -> Vec<Slot> {
        let mut slots = vec![Slot::column(
            slot::ACTED,
            Unit::Flag,
            "Whether the strategy changed the request at least once in the episode.",
        )];
        slots.extend(SUMS.map(Slot::kept));
        slots
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let acted = v.replay.steps.iter().any(|s| s.changed);
        out.put(slot::ACTED, acted);
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
                Agg::sum(slot::ACTED),
            ),
            Field::new(
                "savings_acted",
                Unit::Share,
                "Savings over the episodes the strategy acted on (null when it acted on none).",
                Agg::float_saving(slot::INPUT_TOKENS, slot::BASELINE_INPUT_TOKENS),
            ),
            Field::new(
                "cost_savings_acted",
                Unit::Share,
                "Cost saving (with the prompt cache) over the episodes the strategy acted on.",
                Agg::float_saving(slot::COST_USD, slot::BASELINE_COST_USD),
            ),
            Field::new(
                "needs_acted",
                Unit::Count,
                "(Found finding, need) pairs met on the episodes the strategy acted on: the evidence its \
                 retention there rests on.",
                Agg::sum(slot::NEEDS),
            ),
            Field::new(
                "retention_at_need_acted",
                Unit::Share,
                "Retention at need (found findings) over the episodes the strategy acted on.",
                Agg::ratio(slot::RETAINED, slot::NEEDS),
            ),
            Field::new(
                "retention_first_need_acted",
                Unit::Share,
                "Retention at the first need over the episodes the strategy acted on.",
                Agg::ratio(slot::FIRST_RETAINED, slot::FIRST_NEEDS),
            ),
            Field::new(
                "retention_at_need_task_acted",
                Unit::Share,
                "Retention at need of task-given findings over the episodes the strategy acted on.",
                Agg::ratio(slot::TASK_RETAINED, slot::NEEDS_TASK),
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
