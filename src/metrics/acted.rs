//! Where a strategy acted: per episode, the figures from the call point where it first changed the request on
//! — its **first act** — and, over the episodes it acted on, its savings, cost saving and retention at need
//! there. Before its first act a strategy sends what the baseline sends, so a pooled figure credits it with
//! every need met before it did anything (a compaction that fires at call point 101 "keeps" the 23 needs met
//! before it); these figures count only what it did once it acted.
//!
//! ## Definitions (episode by episode; summed over the episodes it acted on)
//! - **acted_from**: the first call point whose request the strategy changed; none when it changed none.
//! - **savings there** = 1 − Σ tokens sent from `acted_from` on / the baseline's at the same call points.
//! - **cost saved there** = 1 − cost there / the baseline's: the agent's calls from `acted_from` on, plus the
//!   strategy's own calls wherever it made them (a call that changed nothing before its first act is paid too).
//! - **retention at need there**: the (found finding, need) pairs checked at `acted_from` or later, and the
//!   share kept; **first need there**: the found findings whose first need falls there, and the share kept at
//!   it; the task-given findings' the same.
//! - **episodes_needed_acted**: the episodes it acted on where a found finding was needed from its first act
//!   on — the clusters its retention there rests on (`--min-episodes`).

use super::slot;
use super::{needs, Agg, EpisodeView, Field, Metric, Slot, Unit, Values};
use crate::replay::{EpisodeReplay, StepRecord};

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

/// The call point where a strategy first changed the request (`steps` its replay of an episode), `None` when
/// it changed none.
#[must_use]
pub fn first_act(steps: &[StepRecord]) -> Option<usize> {
    steps.iter().position(|s| s.changed)
}

/// What [`put_sums`] found: the found needs met there, and the strategy's cost there and the baseline's
/// (`None` where unpriced).
pub(super) struct Sums {
    /// Found needs met from `from` on.
    pub needs: usize,
    /// The strategy's cost and the baseline's, where both are priced.
    pub priced: Option<(f64, f64)>,
}

/// The [`SUMS`] of an episode under a strategy from call point `from` on: the sums behind savings, cost saved
/// and the retention figures (from the first act here, from call point 0 in [`super::intervals`]).
pub(super) fn put_sums(v: &EpisodeView<'_>, out: &mut Values<'_>, from: usize) -> Sums {
    fn after(r: &EpisodeReplay, from: usize) -> &[StepRecord] {
        r.steps.get(from..).unwrap_or(&[])
    }
    let input = |r: &EpisodeReplay| after(r, from).iter().map(|s| s.tokens_sent).sum::<usize>();
    let prices = &v.context.prices;
    // The agent's calls from `from` on, and the strategy's own calls before it (the baseline makes none).
    let cost = |r: &EpisodeReplay| {
        let before = &r.steps[..r.steps.len() - after(r, from).len()];
        let own = before
            .iter()
            .map(|s| prices.strategy_cost(s))
            .try_fold(0.0, |a, b| b.map(|b| a + b));
        own.zip(prices.episode_cost(after(r, from)))
            .map(|(o, a)| a + o)
    };
    let (cost, baseline_cost) = (cost(v.replay), cost(v.baseline));
    let computed;
    let rows = match v.ledger {
        Some(rows) => rows,
        None => {
            computed = needs::ledger(v.episode, &v.replay.steps);
            &computed
        }
    };
    let counts = needs::NeedCounts::of(rows.iter().filter(|r| r.step >= from));
    out.put(slot::INPUT_TOKENS, input(v.replay))
        .put(slot::BASELINE_INPUT_TOKENS, input(v.baseline))
        .put(slot::COST_USD, super::maybe(cost))
        .put(slot::BASELINE_COST_USD, super::maybe(baseline_cost))
        .put(slot::NEEDS, counts.needs)
        .put(slot::RETAINED, counts.retained)
        .put(slot::FIRST_NEEDS, counts.first)
        .put(slot::FIRST_RETAINED, counts.first_retained)
        .put(slot::NEEDS_TASK, counts.task)
        .put(slot::TASK_RETAINED, counts.task_retained);
    Sums {
        needs: counts.needs,
        priced: cost.zip(baseline_cost),
    }
}

/// Episodes acted on, and the figures from the first act on over them.
pub struct Acted;

impl Metric for Acted {
    /// The flag and the first act, then — when it acted, else zeros — the [`SUMS`] from the first act on, and
    /// whether a found finding was needed there.
    fn episode_slots(&self) -> Vec<Slot> {
        let mut slots = vec![
            Slot::column(
                slot::ACTED,
                Unit::Flag,
                "Whether the strategy changed the request at least once in the episode.",
            ),
            Slot::column(
                slot::ACTED_FROM,
                Unit::Count,
                "The call point where the strategy first changed the request (its figures where it acted count \
                 from there on); empty when it changed none.",
            ),
        ];
        slots.extend(SUMS.map(Slot::kept));
        slots.extend(
            [
                slot::NEEDED,
                slot::PRICED_ACTED,
                slot::PRICED_COST_USD,
                slot::PRICED_BASELINE_COST_USD,
            ]
            .map(Slot::kept),
        );
        slots
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let from = first_act(&v.replay.steps);
        out.put(slot::ACTED, from.is_some())
            .put(slot::ACTED_FROM, from);
        let sums = match from {
            Some(from) => put_sums(v, out, from),
            None => {
                for name in SUMS {
                    out.put(name, 0);
                }
                Sums {
                    needs: 0,
                    priced: None,
                }
            }
        };
        // Where it acted and both costs are known: the cost saved there over the priced episodes alone.
        let (cost, baseline) = sums.priced.unwrap_or((0.0, 0.0));
        out.put(slot::NEEDED, sums.needs > 0)
            .put(slot::PRICED_ACTED, sums.priced.is_some())
            .put(slot::PRICED_COST_USD, super::float(cost))
            .put(slot::PRICED_BASELINE_COST_USD, super::float(baseline));
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
                "episodes_needed_acted",
                Unit::Count,
                "Episodes the strategy acted on where a found finding was needed from its first act on: the \
                 episodes its retention there rests on.",
                Agg::sum(slot::NEEDED),
            ),
            Field::new(
                "savings_acted",
                Unit::Share,
                "Savings from each episode's first act on, over the episodes the strategy acted on (null when it \
                 acted on none).",
                Agg::float_saving(slot::INPUT_TOKENS, slot::BASELINE_INPUT_TOKENS),
            ),
            Field::new(
                "cost_savings_acted",
                Unit::Share,
                "Cost saving (with the prompt cache) from each episode's first act on, over the episodes the \
                 strategy acted on; its own LLM calls count wherever it made them.",
                Agg::float_saving(slot::COST_USD, slot::BASELINE_COST_USD),
            ),
            Field::new(
                "episodes_acted_priced",
                Unit::Count,
                "Episodes the strategy acted on whose cost there is known (their model and the strategy's \
                 priced): the episodes cost_savings_acted_priced rests on.",
                Agg::sum(slot::PRICED_ACTED),
            ),
            Field::new(
                "cost_savings_acted_priced",
                Unit::Share,
                "Cost saving from each episode's first act on, over the episodes the strategy acted on whose \
                 cost is known (cost_savings_acted where every one is; null where none is): what the advice \
                 judges its cost by when some episode is unpriced.",
                Agg::float_saving(slot::PRICED_COST_USD, slot::PRICED_BASELINE_COST_USD),
            ),
            Field::new(
                "needs_acted",
                Unit::Count,
                "(Found finding, need) pairs met from each episode's first act on: the evidence its retention \
                 where it acted rests on.",
                Agg::sum(slot::NEEDS),
            ),
            Field::new(
                "retention_at_need_acted",
                Unit::Share,
                "Retention at need (found findings) of the needs met from each episode's first act on.",
                Agg::ratio(slot::RETAINED, slot::NEEDS),
            ),
            Field::new(
                "retention_at_need_acted_ci95",
                Unit::Share,
                "95% interval of retention at need where the strategy acted (Wilson on the pairs, widened by the \
                 design effect of the episodes; null with fewer than two episodes).",
                Agg::share_ci95(slot::RETAINED, slot::NEEDS),
            ),
            Field::new(
                "retention_first_need_acted",
                Unit::Share,
                "Retention at the first need, over the found findings first needed from each episode's first \
                 act on.",
                Agg::ratio(slot::FIRST_RETAINED, slot::FIRST_NEEDS),
            ),
            Field::new(
                "retention_at_need_task_acted",
                Unit::Share,
                "Retention at need of task-given findings, over the needs met from each episode's first act on.",
                Agg::ratio(slot::TASK_RETAINED, slot::NEEDS_TASK),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// episodes.csv has the flag and the first act as columns; the figures from the first act on are summary
    /// fields (pinned by hand in `by_hand`).
    #[test]
    fn the_flag_and_the_first_act_are_episode_columns() {
        let names: Vec<String> = Acted
            .episode_slots()
            .iter()
            .filter_map(|s| Some(s.column.as_ref()?.name.clone()))
            .collect();
        assert_eq!(names, ["acted", "acted_from"]);
    }

    /// The first act is the first call point that changed the request, whatever comes after.
    #[test]
    fn the_first_act_is_the_first_change() {
        let steps = |changed: &[bool]| -> Vec<StepRecord> {
            changed
                .iter()
                .map(|&changed| StepRecord {
                    changed,
                    ..StepRecord::default()
                })
                .collect()
        };
        assert_eq!(
            first_act(&steps(&[false, false, true, false, true])),
            Some(2)
        );
        assert_eq!(first_act(&steps(&[true, false])), Some(0));
        assert_eq!(first_act(&steps(&[false, false])), None);
        assert_eq!(first_act(&[]), None);
    }
}
