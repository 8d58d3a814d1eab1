//! Retention: the share of the findings introduced so far whose evidence is all in the request as sent.

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
                "findings_introduced",
                Unit::Count,
                "Findings introduced before this call point.",
            ),
            Slot::column(
                "findings_retained",
                Unit::Count,
                "Of those, findings whose every evidence string is in the request as sent.",
            ),
            Slot::column(
                "retention",
                Unit::Share,
                "findings_retained / findings_introduced.",
            ),
        ]
    }

    fn step_values(&self, v: &StepView<'_>, out: &mut Values<'_>) {
        let (introduced, retained) = step_counts(v);
        out.put("findings_introduced", introduced)
            .put("findings_retained", retained)
            .put("retention", maybe(ratio(retained, introduced)));
    }

    /// The columns, then the findings retained at the last call point, then (introduced, retained) per kind.
    fn episode_slots(&self) -> Vec<Slot> {
        let mut columns = vec![
            Slot::column(
                "findings",
                Unit::Count,
                "Findings introduced by the last call point.",
            ),
            Slot::column(
                "final_retention",
                Unit::Share,
                "Retention at the last call point.",
            ),
            Slot::column(
                "mean_retention",
                Unit::Share,
                "Mean retention over the call points with a finding introduced.",
            ),
        ];
        columns.extend(FindingKind::ALL.iter().map(|k| {
            Slot::column(
                ("retention", k.as_str()),
                Unit::Share,
                format!(
                    "Retention of {} findings at the last call point.",
                    k.as_str()
                ),
            )
        }));
        columns.push(Slot::kept("retained"));
        for k in FindingKind::ALL {
            columns.extend([
                Slot::kept(("introduced", k.as_str())),
                Slot::kept(("retained", k.as_str())),
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
        out.put("findings", introduced)
            .put("final_retention", maybe(ratio(retained, introduced)))
            .put("mean_retention", maybe(mean));
        for (k, &(i, r)) in FindingKind::ALL.iter().zip(&last) {
            out.put(("retention", k.as_str()), maybe(ratio(r, i)));
        }
        out.put("retained", retained);
        for (k, (i, r)) in FindingKind::ALL.iter().zip(last) {
            out.put(("introduced", k.as_str()), i)
                .put(("retained", k.as_str()), r);
        }
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new("findings", Unit::Count, "Findings introduced, over every episode.", Agg::sum("findings")),
            Field::new(
                "final_retention",
                Unit::Share,
                "Findings retained at each episode's last call point / findings introduced, pooled.",
                Agg::ratio("retained", "findings"),
            ),
            Field::new(
                "mean_retention",
                Unit::Share,
                "The mean of the episodes' mean retention.",
                Agg::mean("mean_retention"),
            ),
            Field::new(
                "retention_by_kind",
                Unit::Share,
                "Final retention per finding kind, pooled.",
                Agg::keyed(FindingKind::ALL.map(|k| {
                    let k = k.as_str();
                    (k, Agg::ratio(("retained", k), ("introduced", k)))
                })),
            ),
        ]
    }
}
