//! Retention at need, and the loss ledger: whether each finding's evidence is in the request at the call
//! points where the agent needs it, and, where it is not, when it left the request and by what.
//!
//! ## Definitions
//! - A finding is **task-given** (`from_task`) when the task states it: each of its evidence strings is in the
//!   episode's `task` or its first user message ([`crate::history::evidence::TaskText`]); every other finding
//!   the agent **found** (in a tool output, an observation, an earlier turn).
//! - A finding's **need points** are its `needed_at` items; each is checked at the call point just before it
//!   (the last call point at or before the item that comes after the finding was introduced). A finding with
//!   no need points is needed at the episode's last call point. Needs that fall on one call point count once;
//!   the **first need** is the earliest call point checked, where the agent first uses the fact, before it
//!   could have restated it.
//! - **retention_at_need** = (found finding, need) pairs whose finding is present in the request as sent at
//!   the need's call point / all such pairs; **retention_first_need** = found findings present at their first
//!   need / found findings with a need; **retention_at_need_task** = the same as retention at need over
//!   task-given findings (a strategy can drop the task). Pooled over a dataset, each is a ratio of sums: an
//!   episode with no found finding needed at a call point adds nothing to the headline (it is neither 100% nor
//!   0%; its own figure is null) and is counted in `episodes_without_found_needs`. The baseline's retention is
//!   100% whenever the evidence is in the items; a pair whose evidence never was in a request is lost
//!   `never_present`.
//! - A lost pair's **lost_at_step** is the last call point, up to the need, at which the finding was in the
//!   request handed to the strategy and not in the request it sent; **lost_by** is what the strategy reported
//!   doing there: `masked`, `truncated`, `dropped`, `summarized` (joined with `+` when it did several), or
//!   `rewritten` when it reported nothing more specific.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::slot;
use super::{maybe, ratio, Agg, EpisodeView, Field, Metric, Slot, Unit, Values};
use crate::history::evidence::TaskText;
use crate::history::{Episode, FindingKind};
use crate::replay::StepRecord;

/// The causes a lost need is counted under in `lost_by` (a loss with several causes counts as `several`).
pub const CAUSES: [&str; 7] = [
    "masked",
    "truncated",
    "dropped",
    "summarized",
    "several",
    "rewritten",
    "never_present",
];

/// One (finding, need) pair of an episode under one strategy: a row of `findings.csv`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeedRow {
    /// The finding's index in the episode.
    pub finding: usize,
    /// Whether the task gives the finding (else the agent found it).
    pub from_task: bool,
    /// Which need of the finding this is: 1 for its first, 2 for the next… (the `need` column).
    pub ordinal: usize,
    /// The item the need is at (`None`: the finding has no need points; it is checked at the last call point).
    pub needed_at: Option<usize>,
    /// The call point it is checked at.
    pub step: usize,
    /// Whether the finding is in the request as sent there.
    pub retained: bool,
    /// Where lost: the call point at which it left the request (`None` when it never was in one).
    pub lost_at_step: Option<usize>,
    /// Where lost: what the strategy did there (see the module docs).
    pub lost_by: Option<String>,
}

/// The call point a need at item `need` of a finding introduced at `introduced` is checked at: the last one
/// at or before `need` that comes after `introduced`.
fn step_of(steps: &[StepRecord], introduced: usize, need: usize) -> Option<usize> {
    let s = steps
        .partition_point(|s| s.item_index <= need)
        .checked_sub(1)?;
    (steps[s].item_index > introduced).then_some(s)
}

/// What the strategy did at `step`, as `lost_by` names it.
fn cause(step: &StepRecord) -> String {
    let masked = step.compacted_items.saturating_sub(step.truncated_items);
    let labels: Vec<&str> = [
        ("masked", masked),
        ("truncated", step.truncated_items),
        ("dropped", step.dropped_items),
        ("summarized", step.summarized_items),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .map(|(l, _)| l)
    .collect();
    if labels.is_empty() {
        "rewritten".into()
    } else {
        labels.join("+")
    }
}

/// The (finding, need) pairs of `episode` replayed as `steps`, in finding order and, per finding, in need
/// order, with what became of each.
#[must_use]
pub fn ledger(episode: &Episode, steps: &[StepRecord]) -> Vec<NeedRow> {
    ledger_given(episode, steps, &task_given(episode))
}

/// Whether the task of `episode` gives each of its findings, in finding order ([`TaskText::gives`]): the same
/// under every strategy, so an episode's ledgers read it once ([`ledger_given`]).
#[must_use]
pub fn task_given(episode: &Episode) -> Vec<bool> {
    let task = TaskText::new(episode);
    episode.findings.iter().map(|f| task.gives(f)).collect()
}

/// [`ledger`], with which findings the task gives already known (`given`, from [`task_given`]).
#[must_use]
pub fn ledger_given(episode: &Episode, steps: &[StepRecord], given: &[bool]) -> Vec<NeedRow> {
    let mut rows = Vec::new();
    let Some(last) = steps.len().checked_sub(1) else {
        return rows;
    };
    for (f, finding) in episode.findings.iter().enumerate() {
        let mut checked: Vec<(Option<usize>, usize)> = if finding.needed_at.is_empty() {
            (steps[last].item_index > finding.introduced_at)
                .then_some((None, last))
                .into_iter()
                .collect()
        } else {
            finding
                .needed_at
                .iter()
                .filter_map(|&n| step_of(steps, finding.introduced_at, n).map(|s| (Some(n), s)))
                .collect()
        };
        checked.sort_by_key(|c| c.1);
        checked.dedup_by_key(|c| c.1);
        let from_task = given[f];
        for (n, (needed_at, step)) in checked.into_iter().enumerate() {
            let retained = steps[step].present.contains(f);
            let lost_at_step = (!retained)
                .then(|| {
                    (0..=step).rev().find(|&s| {
                        steps[s].present_before.contains(f) && !steps[s].present.contains(f)
                    })
                })
                .flatten();
            rows.push(NeedRow {
                finding: f,
                from_task,
                ordinal: n + 1,
                needed_at,
                step,
                retained,
                lost_at_step,
                lost_by: (!retained).then(|| {
                    lost_at_step.map_or_else(|| "never_present".into(), |s| cause(&steps[s]))
                }),
            });
        }
    }
    rows
}

/// The sums behind an episode's retention figures, from its ledger rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NeedCounts {
    /// (found finding, need) pairs.
    pub needs: usize,
    /// Of those, retained.
    pub retained: usize,
    /// Found findings with a need: their first needs.
    pub first: usize,
    /// Of those, retained at their first need.
    pub first_retained: usize,
    /// (task-given finding, need) pairs.
    pub task: usize,
    /// Of those, retained.
    pub task_retained: usize,
}

impl NeedCounts {
    /// The counts of `rows`.
    #[must_use]
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a NeedRow>) -> Self {
        let mut c = Self::default();
        for r in rows {
            let kept = usize::from(r.retained);
            if r.from_task {
                c.task += 1;
                c.task_retained += kept;
            } else {
                c.needs += 1;
                c.retained += kept;
                if r.ordinal == 1 {
                    c.first += 1;
                    c.first_retained += kept;
                }
            }
        }
        c
    }

    /// The counts as episode values, in this order: needs, retained, first needs, retained there, task needs,
    /// retained.
    #[must_use]
    pub fn values(&self) -> [Value; 6] {
        [
            self.needs,
            self.retained,
            self.first,
            self.first_retained,
            self.task,
            self.task_retained,
        ]
        .map(Value::from)
    }
}

/// Retention at need (over found findings; at their first need; over task-given findings), per finding kind,
/// and the lost needs by cause.
pub struct RetentionAtNeed;

impl Metric for RetentionAtNeed {
    /// The columns, then the retained needs, first needs and retained there, task-given needs retained,
    /// (needs, retained) per kind, lost per cause, and whether the episode has no found need.
    fn episode_slots(&self) -> Vec<Slot> {
        let mut columns = vec![
            Slot::column(
                slot::NEEDS,
                Unit::Count,
                "(finding, need) pairs of the findings the agent found (not the task's): each at each call \
                 point where the agent needs it (the last call point when no need is recorded).",
            ),
            Slot::column(
                slot::RETENTION_AT_NEED,
                Unit::Share,
                "Share of the found findings' (finding, need) pairs whose evidence is in the request as sent at \
                 the need; null when the episode has none.",
            ),
            Slot::column(
                slot::RETENTION_FIRST_NEED,
                Unit::Share,
                "Share of the found findings whose evidence is in the request at their first need.",
            ),
            Slot::column(
                slot::NEEDS_TASK,
                Unit::Count,
                "(finding, need) pairs of the findings the task gives (in its text or first user message).",
            ),
            Slot::column(
                slot::RETENTION_AT_NEED_TASK,
                Unit::Share,
                "Retention at need of the task-given findings.",
            ),
        ];
        columns.extend(FindingKind::ALL.iter().map(|k| {
            Slot::column(
                (slot::RETENTION_AT_NEED, k.as_str()),
                Unit::Share,
                format!("Retention at need of found {} findings.", k.as_str()),
            )
        }));
        columns.extend(
            [
                slot::RETAINED,
                slot::FIRST_NEEDS,
                slot::FIRST_RETAINED,
                slot::TASK_RETAINED,
            ]
            .map(Slot::kept),
        );
        for k in FindingKind::ALL {
            columns.extend([
                Slot::kept((slot::NEEDS, k.as_str())),
                Slot::kept((slot::RETAINED, k.as_str())),
            ]);
        }
        columns.extend(CAUSES.map(|c| Slot::kept((slot::LOST, c))));
        columns.push(Slot::kept(slot::NO_FOUND_NEEDS));
        columns
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let computed;
        let rows = if let Some(rows) = v.ledger {
            rows
        } else {
            computed = ledger(v.episode, &v.replay.steps);
            &computed
        };
        let c = NeedCounts::of(rows);
        let mut kinds = [(0usize, 0usize); FindingKind::ALL.len()];
        let mut causes = [0usize; CAUSES.len()];
        for r in rows.iter().filter(|r| !r.from_task) {
            let k = &mut kinds[v.episode.findings[r.finding].kind as usize];
            k.0 += 1;
            k.1 += usize::from(r.retained);
            if let Some(by) = &r.lost_by {
                let c = CAUSES
                    .iter()
                    .position(|c| c == by)
                    .unwrap_or(if by.contains('+') { 4 } else { 5 });
                causes[c] += 1;
            }
        }
        out.put(slot::NEEDS, c.needs)
            .put(slot::RETENTION_AT_NEED, maybe(ratio(c.retained, c.needs)))
            .put(
                slot::RETENTION_FIRST_NEED,
                maybe(ratio(c.first_retained, c.first)),
            )
            .put(slot::NEEDS_TASK, c.task)
            .put(
                slot::RETENTION_AT_NEED_TASK,
                maybe(ratio(c.task_retained, c.task)),
            );
        for (k, &(n, r)) in FindingKind::ALL.iter().zip(&kinds) {
            out.put((slot::RETENTION_AT_NEED, k.as_str()), maybe(ratio(r, n)));
        }
        out.put(slot::RETAINED, c.retained)
            .put(slot::FIRST_NEEDS, c.first)
            .put(slot::FIRST_RETAINED, c.first_retained)
            .put(slot::TASK_RETAINED, c.task_retained);
        for (k, (n, r)) in FindingKind::ALL.iter().zip(kinds) {
            out.put((slot::NEEDS, k.as_str()), n)
                .put((slot::RETAINED, k.as_str()), r);
        }
        for (cause, n) in CAUSES.iter().zip(causes) {
            out.put((slot::LOST, *cause), n);
        }
        out.put(slot::NO_FOUND_NEEDS, usize::from(c.needs == 0));
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new(
                "needs",
                Unit::Count,
                "(found finding, need) pairs over every episode.",
                Agg::sum(slot::NEEDS),
            ),
            Field::new(
                "retention_at_need",
                Unit::Share,
                "(found finding, need) pairs retained / pairs, pooled over episodes: the headline retention.",
                Agg::ratio(slot::RETAINED, slot::NEEDS),
            ),
            Field::new(
                "first_needs",
                Unit::Count,
                "Found findings with a need, over every episode: each is checked at its first need.",
                Agg::sum(slot::FIRST_NEEDS),
            ),
            Field::new(
                "retention_first_need",
                Unit::Share,
                "Found findings retained at their first need / found findings with a need, pooled.",
                Agg::ratio(slot::FIRST_RETAINED, slot::FIRST_NEEDS),
            ),
            Field::new(
                "needs_task",
                Unit::Count,
                "(task-given finding, need) pairs over every episode.",
                Agg::sum(slot::NEEDS_TASK),
            ),
            Field::new(
                "retention_at_need_task",
                Unit::Share,
                "Retention at need of task-given findings, pooled (null without any).",
                Agg::ratio(slot::TASK_RETAINED, slot::NEEDS_TASK),
            ),
            Field::new(
                "episodes_without_found_needs",
                Unit::Count,
                "Episodes with no found finding needed at a call point: retention at need leaves them out.",
                Agg::sum(slot::NO_FOUND_NEEDS),
            ),
            Field::new(
                "retention_at_need_by_kind",
                Unit::Share,
                "Retention at need of found findings per finding kind, pooled.",
                Agg::keyed(FindingKind::ALL.map(|k| {
                    let k = k.as_str();
                    (k, Agg::ratio((slot::RETAINED, k), (slot::NEEDS, k)))
                })),
            ),
            Field::new(
                "lost_by",
                Unit::Count,
                "Needs of found findings lost, by what the strategy did when the finding left the request.",
                Agg::keyed(CAUSES.map(|c| (c, Agg::sum((slot::LOST, c))))),
            ),
        ]
    }
}

/// A row of `findings.csv`: one (finding, need) pair of an episode under one strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRow {
    /// The strategy.
    pub strategy: String,
    /// The finding's id.
    pub finding: String,
    /// Its kind.
    pub kind: FindingKind,
    /// Whether the task introduced it.
    pub from_task: bool,
    /// The item that introduced it.
    pub introduced_at: usize,
    /// The pair.
    pub need: NeedRow,
}

/// A finding a strategy lost at one need or more, for the report's list of the findings lost most often.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostFinding {
    /// The strategy.
    pub strategy: String,
    /// The episode.
    pub episode: String,
    /// The finding's id.
    pub finding: String,
    /// What the finding says.
    pub text: String,
    /// Its kind.
    pub kind: FindingKind,
    /// Its needs.
    pub needs: usize,
    /// Of those, the needs lost.
    pub lost: usize,
    /// What lost it most often (the first such cause on ties).
    pub lost_by: String,
}

/// The ledger rows and the lost findings of one episode under `strategy`, from its `rows`.
#[must_use]
pub fn resolve(
    episode: &Episode,
    strategy: &str,
    rows: Vec<NeedRow>,
) -> (Vec<LedgerRow>, Vec<LostFinding>) {
    let mut lost: Vec<LostFinding> = Vec::new();
    for r in &rows {
        let f = &episode.findings[r.finding];
        let i = match lost.iter().position(|l| l.finding == f.id) {
            Some(i) => i,
            None => {
                lost.push(LostFinding {
                    strategy: strategy.to_owned(),
                    episode: episode.id.clone(),
                    finding: f.id.clone(),
                    text: f.text.clone(),
                    kind: f.kind,
                    needs: 0,
                    lost: 0,
                    lost_by: String::new(),
                });
                lost.len() - 1
            }
        };
        lost[i].needs += 1;
        lost[i].lost += usize::from(!r.retained);
    }
    for l in &mut lost {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for r in rows
            .iter()
            .filter(|r| episode.findings[r.finding].id == l.finding)
        {
            if let Some(by) = r.lost_by.as_deref() {
                match counts.iter_mut().find(|c| c.0 == by) {
                    Some(c) => c.1 += 1,
                    None => counts.push((by, 1)),
                }
            }
        }
        let most = counts.iter().map(|c| c.1).max().unwrap_or(0);
        l.lost_by = counts
            .iter()
            .find(|c| c.1 == most)
            .map_or_else(String::new, |c| c.0.to_owned());
    }
    lost.retain(|l| l.lost > 0);
    let ledger = rows
        .into_iter()
        .map(|need| {
            let f = &episode.findings[need.finding];
            LedgerRow {
                strategy: strategy.to_owned(),
                finding: f.id.clone(),
                kind: f.kind,
                from_task: need.from_task,
                introduced_at: f.introduced_at,
                need,
            }
        })
        .collect();
    (ledger, lost)
}

#[cfg(test)]
mod tests;
