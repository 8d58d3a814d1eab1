//! Retention: the share of the findings introduced so far whose evidence is all in the request as sent.

use super::slot;
use super::{maybe, ratio, Agg, EpisodeView, Field, Metric, Slot, StepView, Unit, Values};
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
    fn step_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(
                slot::FINDINGS_INTRODUCED,
                Unit::Count,
                "Findings introduced before this call point.",
            ),
            Slot::column(
                slot::FINDINGS_RETAINED,
                Unit::Count,
                "Of those, findings whose every evidence string is in the request as sent.",
            ),
            Slot::column(
                slot::RETENTION,
                Unit::Share,
                "findings_retained / findings_introduced.",
            ),
        ]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        let (introduced, retained) = step_counts(v);
        out.put(slot::FINDINGS_INTRODUCED, introduced)
            .put(slot::FINDINGS_RETAINED, retained)
            .put(slot::RETENTION, maybe(ratio(retained, introduced)));
    }

    /// The columns, then the findings retained at the last call point, then (introduced, retained) per kind.
    fn episode_slots(&self) -> Vec<Slot> {
        let mut columns = vec![
            Slot::column(
                slot::FINDINGS,
                Unit::Count,
                "Findings introduced by the last call point.",
            ),
            Slot::column(
                slot::FINAL_RETENTION,
                Unit::Share,
                "Retention at the last call point.",
            ),
            Slot::column(
                slot::MEAN_RETENTION,
                Unit::Share,
                "Mean retention over the call points with a finding introduced.",
            ),
        ];
        columns.extend(FindingKind::ALL.iter().map(|k| {
            Slot::column(
                (slot::RETENTION, k.as_str()),
                Unit::Share,
                format!(
                    "Retention of {} findings at the last call point.",
                    k.as_str()
                ),
            )
        }));
        columns.push(Slot::kept(slot::RETAINED));
        for k in FindingKind::ALL {
            columns.extend([
                Slot::kept((slot::INTRODUCED, k.as_str())),
                Slot::kept((slot::RETAINED, k.as_str())),
            ]);
        }
        columns
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
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
        out.put(slot::FINDINGS, introduced)
            .put(slot::FINAL_RETENTION, maybe(ratio(retained, introduced)))
            .put(slot::MEAN_RETENTION, maybe(mean));
        for (k, &(i, r)) in FindingKind::ALL.iter().zip(&last) {
            out.put((slot::RETENTION, k.as_str()), maybe(ratio(r, i)));
        }
        out.put(slot::RETAINED, retained);
        for (k, (i, r)) in FindingKind::ALL.iter().zip(last) {
            out.put((slot::INTRODUCED, k.as_str()), i)
                .put((slot::RETAINED, k.as_str()), r);
        }
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new("findings", Unit::Count, "Findings introduced, over every episode.", Agg::sum(slot::FINDINGS)),
            Field::new(
                "final_retention",
                Unit::Share,
                "Findings retained at each episode's last call point / findings introduced, pooled.",
                Agg::ratio(slot::RETAINED, slot::FINDINGS),
            ),
            Field::new(
                "mean_retention",
                Unit::Share,
                "The mean of the episodes' mean retention.",
                Agg::mean(slot::MEAN_RETENTION),
            ),
            Field::new(
                "retention_by_kind",
                Unit::Share,
                "Final retention per finding kind, pooled.",
                Agg::keyed(FindingKind::ALL.map(|k| {
                    let k = k.as_str();
                    (k, Agg::ratio((slot::RETAINED, k), (slot::INTRODUCED, k)))
                })),
            ),
        ]
    }
}
