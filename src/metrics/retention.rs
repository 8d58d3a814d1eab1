//! Retention: the share of the findings introduced so far whose evidence is all in the request as sent.

use serde_json::Value;

use super::{maybe, ratio, Agg, Column, EpisodeView, Field, Metric, StepView, Unit};
use crate::history::{Episode, FindingKind};
use crate::replay::StepRecord;

/// Per finding kind (in [`FindingKind::ALL`] order): findings introduced before the step, and retained at it.
fn by_kind(episode: &Episode, step: &StepRecord) -> [(usize, usize); 4] {
    let mut counts = [(0, 0); 4];
    for (i, f) in episode.findings.iter().enumerate() {
        if f.introduced_at >= step.item_index {
            continue;
        }
        let k = &mut counts[f.kind as usize];
        k.0 += 1;
        k.1 += usize::from(step.present.contains(i));
    }
    counts
}

/// Findings introduced before a step, and retained at it.
#[must_use]
pub fn step_counts(v: &StepView<'_>) -> (usize, usize) {
    sum(&by_kind(v.episode, v.step))
}

fn sum(counts: &[(usize, usize); 4]) -> (usize, usize) {
    counts
        .iter()
        .fold((0, 0), |(i, r), (ki, kr)| (i + ki, r + kr))
}

/// Retention per step, at the last step, on average over the steps, and per finding kind.
pub struct Retention;

impl Metric for Retention {
    fn step_columns(&self) -> Vec<Column> {
        vec![
            Column::new(
                "findings_introduced",
                Unit::Count,
                "Findings introduced before this call point.",
            ),
            Column::new(
                "findings_retained",
                Unit::Count,
                "Of those, findings whose every evidence string is in the request as sent.",
            ),
            Column::new(
                "retention",
                Unit::Share,
                "findings_retained / findings_introduced.",
            ),
        ]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Vec<Value>) {
        let (introduced, retained) = step_counts(v);
        out.extend([
            Value::from(introduced),
            Value::from(retained),
            maybe(ratio(retained, introduced)),
        ]);
    }

    fn episode_columns(&self) -> Vec<Column> {
        let mut columns = vec![
            Column::new(
                "findings",
                Unit::Count,
                "Findings introduced by the last call point.",
            ),
            Column::new(
                "final_retention",
                Unit::Share,
                "Retention at the last call point.",
            ),
            Column::new(
                "mean_retention",
                Unit::Share,
                "Mean retention over the call points with a finding introduced.",
            ),
        ];
        columns.extend(FindingKind::ALL.iter().map(|k| {
            Column::new(
                format!("retention_{}", k.as_str()),
                Unit::Share,
                format!(
                    "Retention of {} findings at the last call point.",
                    k.as_str()
                ),
            )
        }));
        columns
    }

    /// The columns, then the findings retained at the last call point, then (introduced, retained) per kind.
    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Vec<Value>) {
        let per_step: Vec<[(usize, usize); 4]> = v
            .replay
            .steps
            .iter()
            .map(|s| by_kind(v.episode, s))
            .collect();
        let last = per_step.last().copied().unwrap_or_default();
        let (introduced, retained) = sum(&last);
        let shares: Vec<f64> = per_step
            .iter()
            .filter_map(|k| {
                let (i, r) = sum(k);
                ratio(r, i)
            })
            .collect();
        #[allow(clippy::cast_precision_loss)]
        let mean = (!shares.is_empty())
            .then(|| super::total(shares.iter().copied()) / shares.len() as f64);
        out.extend([
            Value::from(introduced),
            maybe(ratio(retained, introduced)),
            maybe(mean),
        ]);
        out.extend(last.iter().map(|&(i, r)| maybe(ratio(r, i))));
        out.push(Value::from(retained));
        for (i, r) in last {
            out.extend([Value::from(i), Value::from(r)]);
        }
    }

    fn strategy_fields(&self) -> Vec<Field> {
        let kinds = 3 + FindingKind::ALL.len();
        vec![
            Field::new("findings", Unit::Count, "Findings introduced, over every episode.", Agg::Sum(0)),
            Field::new(
                "final_retention",
                Unit::Share,
                "Findings retained at each episode's last call point / findings introduced, pooled.",
                Agg::Ratio(kinds, 0),
            ),
            Field::new(
                "mean_retention",
                Unit::Share,
                "The mean of the episodes' mean retention.",
                Agg::Mean(2),
            ),
            Field::new(
                "retention_by_kind",
                Unit::Share,
                "Final retention per finding kind, pooled.",
                Agg::Keyed(
                    FindingKind::ALL
                        .iter()
                        .enumerate()
                        .map(|(k, kind)| {
                            let at = kinds + 1 + 2 * k;
                            (kind.as_str().to_owned(), Agg::Ratio(at + 1, at))
                        })
                        .collect(),
                ),
            ),
        ]
    }
}
