//! Probes: the share of questions answered right from the request as sent, and the share of the valid ones
//! (those the unreduced context answers) that the strategy's request answers too.
//!
//! Raw accuracy measures the answerer as much as the reduction: a probe the full context cannot answer says
//! nothing of what a strategy kept. A probe is **valid** when the baseline (no reduction) answers it right at
//! the same point; **probe retention** = valid probes the strategy also answers / valid probes.

use super::slot;
use super::{maybe, ratio, Agg, EpisodeView, Field, Metric, Slot, Unit, Values};

/// Probe accuracy and probe retention per episode and over the dataset.
pub struct Probes;

/// (probes, correct, valid, valid and correct) of one episode under one strategy, over the probes with
/// accepted answers (an open probe with only a reference answer is the judge's: `metrics::judge`).
fn counts(v: &EpisodeView<'_>) -> (usize, usize, usize, usize) {
    let exact: Vec<_> = v
        .replay
        .probes
        .iter()
        .filter(|p| {
            v.episode
                .probes
                .iter()
                .find(|q| q.id == p.probe)
                .is_none_or(|q| !q.answers.is_empty())
        })
        .collect();
    let probes = exact.len();
    let correct = exact.iter().filter(|p| p.correct).count();
    let (mut valid, mut kept) = (0, 0);
    for p in exact {
        let baseline = v
            .baseline
            .probes
            .iter()
            .find(|b| b.probe == p.probe && b.step == p.step);
        if baseline.is_some_and(|b| b.correct) {
            valid += 1;
            kept += usize::from(p.correct);
        }
    }
    (probes, correct, valid, kept)
}

impl Metric for Probes {
    /// The columns, then the valid probes answered right.
    fn episode_slots(&self) -> Vec<Slot> {
        vec![
            Slot::column(slot::PROBES, Unit::Count, "Probes asked."),
            Slot::column(
                slot::PROBES_CORRECT,
                Unit::Count,
                "Probes answered with an accepted answer.",
            ),
            Slot::column(
                slot::PROBE_ACCURACY,
                Unit::Share,
                "probes_correct / probes.",
            ),
            Slot::column(
                slot::PROBES_VALID,
                Unit::Count,
                "Probes the baseline (no reduction) answers right at the same point.",
            ),
            Slot::column(
                slot::PROBE_RETENTION,
                Unit::Share,
                "Of the valid probes, the share this strategy also answers right.",
            ),
            Slot::kept(slot::PROBES_KEPT),
        ]
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let (probes, correct, valid, kept) = counts(v);
        out.put(slot::PROBES, probes)
            .put(slot::PROBES_CORRECT, correct)
            .put(slot::PROBE_ACCURACY, maybe(ratio(correct, probes)))
            .put(slot::PROBES_VALID, valid)
            .put(slot::PROBE_RETENTION, maybe(ratio(kept, valid)))
            .put(slot::PROBES_KEPT, kept);
    }

    fn strategy_fields(&self) -> Vec<Field> {
        vec![
            Field::new("probes", Unit::Count, "Probes asked.", Agg::sum(slot::PROBES)),
            Field::new(
                "probe_accuracy",
                Unit::Share,
                "Share of probes answered with an accepted answer, pooled (answerer and reduction together).",
                Agg::ratio(slot::PROBES_CORRECT, slot::PROBES),
            ),
            Field::new(
                "probes_valid",
                Unit::Count,
                "Probes the unreduced context answers right: the ones that can measure a reduction.",
                Agg::sum(slot::PROBES_VALID),
            ),
            Field::new(
                "probe_retention",
                Unit::Share,
                "Valid probes this strategy answers right / valid probes, pooled.",
                Agg::ratio(slot::PROBES_KEPT, slot::PROBES_VALID),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Episode, FindingKind};
    use crate::metrics::Context;
    use crate::replay::{EpisodeReplay, ProbeRecord};
    use serde_json::Value;

    fn replay(strategy: &str, answers: &[(&str, Option<usize>, bool)]) -> EpisodeReplay {
        EpisodeReplay {
            episode: "e".into(),
            source: "t".into(),
            strategy: strategy.into(),
            items: 10,
            steps: Vec::new(),
            calls: Vec::new(),
            probes: answers
                .iter()
                .map(|&(probe, step, correct)| ProbeRecord {
                    probe: probe.into(),
                    step,
                    kind: FindingKind::Recall,
                    correct,
                    answer: String::new(),
                    judged: false,
                    grades: None,
                })
                .collect(),
        }
    }

    /// The probe values of `replay` against `baseline` on `ep`.
    fn values(ep: &Episode, replay: &EpisodeReplay, baseline: &EpisodeReplay) -> Vec<Value> {
        let context = Context {
            prices: crate::metrics::Prices::default(),
            context_window: 1000,
        };
        let view = EpisodeView {
            episode: ep,
            replay,
            baseline,
            context: &context,
            ledger: None,
        };
        crate::metrics::slots::episode_values(&Probes, &view)
    }

    /// Four probes: the baseline answers p1, p2 and p3 (p3 at the end), not p4; the strategy answers p1 and
    /// p4. Accuracy 2/4; valid 3; retention 1/3 (p4, which the full context cannot answer, does not count).
    #[test]
    fn probe_retention_counts_only_what_the_full_context_answers() {
        let baseline = replay(
            "none",
            &[
                ("p1", Some(2), true),
                ("p2", Some(5), true),
                ("p3", None, true),
                ("p4", Some(5), false),
            ],
        );
        let strategy = replay(
            "s",
            &[
                ("p1", Some(2), true),
                ("p2", Some(5), false),
                ("p3", None, false),
                ("p4", Some(5), true),
            ],
        );
        let ep = Episode::default();
        let out = values(&ep, &strategy, &baseline);
        assert_eq!(
            out,
            [
                Value::from(4),
                Value::from(2),
                Value::from(0.5),
                Value::from(3),
                Value::from(1.0 / 3.0),
                Value::from(1)
            ]
        );
        // The baseline against itself: every valid probe is kept.
        let out = values(&ep, &baseline, &baseline);
        assert_eq!(out[3..], [Value::from(3), Value::from(1.0), Value::from(3)]);
    }

    /// An open probe (a reference answer, no accepted answers) is the judge's: its record is left out of these
    /// counts, and a probe with accepted answers is counted, each by its own id. The strategy answers the
    /// exact probe p1 right and the open p2 wrong: 1 probe, 1 correct.
    #[test]
    fn an_open_probe_is_left_to_the_judge_by_its_own_id() {
        let probe = |id: &str, answers: &[&str]| crate::history::Probe {
            id: id.into(),
            question: "q".into(),
            answers: answers.iter().map(|&a| a.into()).collect(),
            reference: answers.is_empty().then(|| "ref".into()),
            ..crate::history::Probe::default()
        };
        let ep = Episode {
            probes: vec![probe("p1", &["x"]), probe("p2", &[])],
            ..Episode::default()
        };
        let baseline = replay("none", &[("p1", Some(2), true), ("p2", Some(2), true)]);
        let strategy = replay("s", &[("p1", Some(2), true), ("p2", Some(2), false)]);
        let out = values(&ep, &strategy, &baseline);
        assert_eq!(
            out,
            [
                Value::from(1),
                Value::from(1),
                Value::from(1.0),
                Value::from(1),
                Value::from(1.0),
                Value::from(1)
            ]
        );
    }
}
