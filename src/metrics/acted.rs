//! Where a strategy acted: the episodes in which it changed the request at least once, and its savings, cost
//! saving and retention at need over those episodes alone. A pooled figure mixes the episodes a strategy
//! reduced with those it left alone (a pipeline that only acts on long episodes "keeps" every finding of the
//! short ones); this one says what it does when it does something.

use serde_json::Value;

use super::{needs, Agg, Column, EpisodeView, Field, Metric, Unit};

/// The number of values [`sums`] gives.
pub(super) const SUMS: usize = 10;

/// Input tokens, the baseline's, cost with the cache, the baseline's, then the retention counts
/// ([`needs::NeedCounts::values`]: found needs and retained, first needs and retained, task-given needs and
/// retained) of an episode under a strategy: the sums behind savings, cost saved and the retention figures
/// (here over the episodes acted on, in [`super::intervals`] per bootstrap replicate).
pub(super) fn sums(v: &EpisodeView<'_>) -> [Value; SUMS] {
    let input =
        |r: &crate::replay::EpisodeReplay| r.steps.iter().map(|s| s.tokens_sent).sum::<usize>();
    let cost =
        |r: &crate::replay::EpisodeReplay| super::maybe(v.context.prices.episode_cost(&r.steps));
    let counts = needs::NeedCounts::of(&needs::ledger(v.episode, &v.replay.steps)).values();
    let [a, b, c, d, e, f] = counts;
    [
        Value::from(input(v.replay)),
        Value::from(input(v.baseline)),
        cost(v.replay),
        cost(v.baseline),
        a,
        b,
        c,
        d,
        e,
        f,
    ]
}

/// Episodes acted on, and the figures over them.
pub struct Acted;

impl Metric for Acted {
    fn episode_columns(&self) -> Vec<Column> {
        vec![Column::new(
            "acted",
            Unit::Flag,
            "Whether the strategy changed the request at least once in the episode.",
        )]
    }

    /// The flag, then — when it acted, else zeros — the [`sums`].
    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let acted = v.replay.steps.iter().any(|s| s.changed);
        out.push(Value::Bool(acted));
        if acted {
            out.extend(sums(v));
        } else {
            out.extend([0; SUMS].map(Value::from));
        }
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "episodes_acted",
                Unit::Count,
                "Episodes where the strategy changed the request at least once.",
                Agg::Sum(0),
            ),
            Field::new(
                "savings_acted",
                Unit::Share,
                "Savings over the episodes the strategy acted on (null when it acted on none).",
                Agg::FloatSaving(1, 2),
            ),
            Field::new(
                "cost_savings_acted",
                Unit::Share,
                "Cost saving (with the prompt cache) over the episodes the strategy acted on.",
                Agg::FloatSaving(3, 4),
            ),
            Field::new(
                "retention_at_need_acted",
                Unit::Share,
                "Retention at need (found findings) over the episodes the strategy acted on.",
                Agg::Ratio(6, 5),
            ),
            Field::new(
                "retention_first_need_acted",
                Unit::Share,
                "Retention at the first need over the episodes the strategy acted on.",
                Agg::Ratio(8, 7),
            ),
            Field::new(
                "retention_at_need_task_acted",
                Unit::Share,
                "Retention at need of task-given findings over the episodes the strategy acted on.",
                Agg::Ratio(10, 9),
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
            .episode_columns()
            .iter()
            .map(|c| c.name.to_string())
            .collect();
        assert_eq!(names, ["acted"]);
    }
}
