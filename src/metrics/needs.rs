//! Retention at need, and the loss ledger: whether each finding's evidence is in the request at the call
//! points where the agent needs it, and, where it is not, when it left the request and by what.
//!
//! ## Definitions
//! - A finding's **need points** are its `needed_at` items; each is checked at the call point just before it
//!   (the last call point at or before the item that comes after the finding was introduced). A finding with
//!   no need points is needed at the episode's last call point. Needs that fall on one call point count once.
//! - **retention_at_need** = (finding, need) pairs whose finding is present in the request as sent at the
//!   need's call point / all pairs. The baseline's is 100% whenever the evidence is in the items (it never
//!   removes anything); a pair whose evidence never was in a request is reported as lost `never_present`.
//! - A lost pair's **lost_at_step** is the last call point, up to the need, at which the finding was in the
//!   request handed to the strategy and not in the request it sent; **lost_by** is what the strategy reported
//!   doing there: `masked`, `truncated`, `dropped`, `summarized` (joined with `+` when it did several), or
//!   `rewritten` when it reported nothing more specific.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{maybe, ratio, Agg, Column, EpisodeView, Field, Metric, Unit};
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

/// The (finding, need) pairs of `episode` replayed as `steps`, in finding order, with what became of each.
#[must_use]
pub fn ledger(episode: &Episode, steps: &[StepRecord]) -> Vec<NeedRow> {
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
        for (needed_at, step) in checked {
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

/// Retention at need, in all and per finding kind, and the lost needs by cause.
pub struct RetentionAtNeed;

impl Metric for RetentionAtNeed {
    fn episode_columns(&self) -> Vec<Column> {
        let mut columns = vec![
            Column::new(
                "needs",
                Unit::Count,
                "(finding, need) pairs: each finding at each call point where the agent needs it (the last \
                 call point when no need is recorded).",
            ),
            Column::new(
                "retention_at_need",
                Unit::Share,
                "Share of the (finding, need) pairs whose evidence is in the request as sent at the need.",
            ),
        ];
        columns.extend(FindingKind::ALL.iter().map(|k| {
            Column::new(
                format!("retention_at_need_{}", k.as_str()),
                Unit::Share,
                format!("Retention at need of {} findings.", k.as_str()),
            )
        }));
        columns
    }

    /// The columns, then the pairs retained, (pairs, retained) per kind, and lost pairs per cause.
    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let rows = ledger(v.episode, &v.replay.steps);
        let mut kinds = [(0usize, 0usize); FindingKind::ALL.len()];
        let mut causes = [0usize; CAUSES.len()];
        for r in &rows {
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
        let retained = rows.iter().filter(|r| r.retained).count();
        out.extend([Value::from(rows.len()), maybe(ratio(retained, rows.len()))]);
        out.extend(kinds.iter().map(|&(n, r)| maybe(ratio(r, n))));
        out.push(Value::from(retained));
        for (n, r) in kinds {
            out.extend([Value::from(n), Value::from(r)]);
        }
        out.extend(causes.iter().map(|&c| Value::from(c)));
    }

    fn strategy_fields(&self) -> Vec<Field> {
        let kinds = FindingKind::ALL.len();
        let retained = 2 + kinds;
        let per_kind = retained + 1;
        let per_cause = per_kind + 2 * kinds;
        vec![
            Field::new(
                "needs",
                Unit::Count,
                "(finding, need) pairs over every episode.",
                Agg::Sum(0),
            ),
            Field::new(
                "retention_at_need",
                Unit::Share,
                "(finding, need) pairs retained / pairs, pooled over episodes: the headline retention.",
                Agg::Ratio(retained, 0),
            ),
            Field::new(
                "retention_at_need_by_kind",
                Unit::Share,
                "Retention at need per finding kind, pooled.",
                Agg::Keyed(
                    FindingKind::ALL
                        .iter()
                        .enumerate()
                        .map(|(k, kind)| {
                            let at = per_kind + 2 * k;
                            (kind.as_str().to_owned(), Agg::Ratio(at + 1, at))
                        })
                        .collect(),
                ),
            ),
            Field::new(
                "lost_by",
                Unit::Count,
                "Needs lost, by what the strategy did when the finding left the request.",
                Agg::Keyed(
                    CAUSES
                        .iter()
                        .enumerate()
                        .map(|(c, cause)| ((*cause).to_owned(), Agg::Sum(per_cause + c)))
                        .collect(),
                ),
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
                from_task: f.from_task,
                introduced_at: f.introduced_at,
                need,
            }
        })
        .collect();
    (ledger, lost)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::history::{Finding, Item};
    use crate::llm::mock::{MockConfig, MockLlm};
    use crate::replay::{EpisodeReplay, Replayer};
    use crate::strategy::compaction::CompactionConfig;
    use crate::strategy::{NamedStrategy, StrategyConfig};
    use crate::tokens::Tokenizer;

    /// Call points at items 2, 5, 8 and 11; the finding `E42` comes from the result at 4 and is needed at the
    /// turns starting at 8 (which writes it down) and 11.
    fn episode(needed_at: Vec<usize>) -> Episode {
        Episode {
            id: "e".into(),
            source: "t".into(),
            items: vec![
                Item::system("You fix builds."),
                Item::user("Fix the build."),
                Item::assistant("Running the build."),
                Item::tool_call("c1", "run", "{}"),
                Item::tool_result("c1", "run", "error E42 in parse.py"),
                Item::assistant("Reading the parser."),
                Item::tool_call("c2", "cat", "{}"),
                Item::tool_result("c2", "run", "def parse(): ..."),
                Item::assistant("Fixing E42 now."),
                Item::tool_call("c3", "edit", "{}"),
                Item::tool_result("c3", "edit", "ok"),
                Item::assistant("Done."),
            ],
            findings: vec![Finding {
                id: "f1".into(),
                text: "the build fails with E42".into(),
                evidence: vec!["error E42".into()],
                introduced_at: 4,
                kind: FindingKind::Recall,
                needed_at,
                ..Finding::default()
            }],
            ..Episode::default()
        }
    }

    fn replay(ep: &Episode) -> Vec<EpisodeReplay> {
        let tok = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
        let r = Replayer::new(tok, &llm, 100_000);
        let mask_all = CompactionConfig {
            keep_last: 0,
            min_chars: 0,
            ..CompactionConfig::default()
        };
        let strategies = [
            NamedStrategy::new("none", StrategyConfig::None),
            NamedStrategy::new("mask_all", StrategyConfig::Compaction(mask_all)),
        ];
        r.replay_all(ep, &strategies).unwrap()
    }

    #[test]
    fn the_baseline_keeps_every_need_and_masking_loses_the_first() {
        let ep = episode(vec![8, 11]);
        let out = replay(&ep);
        let baseline = ledger(&ep, &out[0].steps);
        assert_eq!(baseline.len(), 2);
        assert!(baseline.iter().all(|r| r.retained && r.lost_by.is_none()));
        let masked = ledger(&ep, &out[1].steps);
        // At the turn that starts at 8 (call point 2) the result was masked at call point 1, where it was
        // first handed over; at 11 the agent's own "Fixing E42 now." holds it in its words (by the identifying
        // token E42, not the exact evidence string "error E42").
        assert_eq!(
            masked,
            vec![
                NeedRow {
                    finding: 0,
                    needed_at: Some(8),
                    step: 2,
                    retained: false,
                    lost_at_step: Some(1),
                    lost_by: Some("masked".into()),
                },
                NeedRow {
                    finding: 0,
                    needed_at: Some(11),
                    step: 3,
                    retained: true,
                    lost_at_step: None,
                    lost_by: None,
                },
            ]
        );
        // The final retention says 100% where the need says 50%.
        assert!(out[1].steps[3].present.contains(0));
    }

    #[test]
    fn without_need_points_the_finding_is_needed_at_the_end() {
        let ep = episode(Vec::new());
        let out = replay(&ep);
        let rows = ledger(&ep, &out[1].steps);
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].needed_at, rows[0].step), (None, 3));
        assert!(rows[0].retained);
        // Needs on one call point count once; a need before any call point after the finding is not checked.
        let ep = episode(vec![6, 7, 8]);
        let rows = ledger(&ep, &out[1].steps);
        assert_eq!(
            rows.iter()
                .map(|r| (r.needed_at, r.step))
                .collect::<Vec<_>>(),
            [(Some(6), 1), (Some(8), 2)]
        );
    }

    #[test]
    fn lost_by_names_what_the_strategy_did() {
        let mut step = StepRecord::default();
        assert_eq!(cause(&step), "rewritten");
        step.compacted_items = 3;
        step.truncated_items = 1;
        step.dropped_items = 2;
        assert_eq!(cause(&step), "masked+truncated+dropped");
        step = StepRecord {
            summarized_items: 4,
            ..StepRecord::default()
        };
        assert_eq!(cause(&step), "summarized");
    }

    #[test]
    fn episode_values_count_pairs_per_kind_and_cause() {
        let ep = episode(vec![8, 11]);
        let out = replay(&ep);
        let context = crate::metrics::Context {
            prices: crate::metrics::Prices::default(),
            context_window: 100_000,
        };
        let view = EpisodeView {
            episode: &ep,
            replay: &out[1],
            baseline: &out[0],
            context: &context,
        };
        let mut values = Vec::new();
        RetentionAtNeed.episode_values(&view, &mut values);
        // needs, retention, 4 kinds; retained; (needs, retained) per kind; lost per cause.
        assert_eq!(values[0], Value::from(2));
        assert_eq!(values[1], Value::from(0.5));
        assert_eq!(values[2], Value::from(0.5));
        assert_eq!(values[3], Value::Null);
        assert_eq!(values[6], Value::from(1));
        assert_eq!(values[7..9], [Value::from(2), Value::from(1)]);
        assert_eq!(values[15], Value::from(1), "one need lost to masking");
        assert_eq!(values.len(), 6 + 1 + 8 + CAUSES.len());
    }
}
