//! The judge's grades of open probes ([`crate::llm::judge`]): the mean overall grade, per dimension and per
//! probe kind, with its interval; how often the judge agrees with exact-answer grading where a probe has both;
//! and what the judge's calls cost, apart from the strategies' own.

use super::slot;
use super::{maybe, Agg, EpisodeView, Field, Metric, Slot, Unit, Values};
use crate::history::FindingKind;
use crate::llm::judge::DIMENSIONS;
use crate::replay::calls::Purpose;

/// A grade at or above this counts as "right" when the judge is compared with exact-answer grading.
pub const PASS: f64 = 2.5;

/// Judge grades and judge cost.
pub struct Judge;

impl Metric for Judge {
    /// The columns; then the graded count, the overall sum, the sum per dimension, (graded, sum) per kind,
    /// the probes with both kinds of grading and those where the two agree, the judge's calls, and their cost.
    fn episode_slots(&self) -> Vec<Slot> {
        let mut slots = vec![
            Slot::column(
                slot::JUDGED,
                Unit::Count,
                "Open probes the judge was asked to grade.",
            ),
            Slot::column(
                slot::JUDGE_SCORE,
                Unit::Count,
                "Mean overall grade (0-5) of the answers the judge graded.",
            ),
            Slot::kept(slot::GRADED),
            Slot::kept(slot::OVERALL),
        ];
        slots.extend(DIMENSIONS.map(|d| Slot::kept((slot::DIMENSION, d))));
        for k in FindingKind::ALL {
            slots.extend([
                Slot::kept((slot::GRADED, k.as_str())),
                Slot::kept((slot::OVERALL, k.as_str())),
            ]);
        }
        slots.extend([slot::BOTH, slot::AGREE, slot::CALLS, slot::COST_USD].map(Slot::kept));
        slots
    }

    fn episode_values(&self, v: &EpisodeView<'_>, out: &mut Values<'_>) {
        let probes = &v.replay.probes;
        let graded: Vec<_> = probes
            .iter()
            .filter_map(|p| p.grades.map(|g| (p, g)))
            .collect();
        let judged = probes.iter().filter(|p| p.judged).count();
        #[allow(clippy::cast_precision_loss)]
        let mean = (!graded.is_empty())
            .then(|| graded.iter().map(|(_, g)| g.overall).sum::<f64>() / graded.len() as f64);
        out.put(slot::JUDGED, judged)
            .put(slot::JUDGE_SCORE, maybe(mean))
            .put(slot::GRADED, graded.len())
            .put(
                slot::OVERALL,
                super::float(graded.iter().map(|(_, g)| g.overall).sum()),
            );
        for (d, dimension) in DIMENSIONS.iter().enumerate() {
            out.put(
                (slot::DIMENSION, *dimension),
                super::float(graded.iter().map(|(_, g)| g.dimensions[d]).sum()),
            );
        }
        for kind in FindingKind::ALL {
            let of_kind: Vec<f64> = graded
                .iter()
                .filter(|(p, _)| p.kind == kind)
                .map(|(_, g)| g.overall)
                .collect();
            out.put((slot::GRADED, kind.as_str()), of_kind.len()).put(
                (slot::OVERALL, kind.as_str()),
                super::float(of_kind.iter().sum()),
            );
        }
        // Probes with accepted answers as well: does a pass by the judge go with a correct exact answer?
        let exact: Vec<_> = graded
            .iter()
            .filter(|(p, _)| {
                v.episode
                    .probes
                    .iter()
                    .find(|q| q.id == p.probe)
                    .is_some_and(|q| !q.answers.is_empty())
            })
            .collect();
        let agree = exact
            .iter()
            .filter(|(p, g)| p.correct == (g.overall >= PASS))
            .count();
        out.put(slot::BOTH, exact.len()).put(slot::AGREE, agree);
        let calls: Vec<_> = v
            .replay
            .calls
            .iter()
            .filter(|c| c.purpose == Purpose::Judge)
            .collect();
        out.put(slot::CALLS, calls.len());
        let cost = if calls.is_empty() {
            Some(0.0)
        } else {
            v.context.prices.judge.map(|p| {
                calls
                    .iter()
                    .map(|c| p.cost_usd_no_cache(c.input_tokens, c.output_tokens))
                    .sum()
            })
        };
        out.put(slot::COST_USD, maybe(cost));
    }

    fn strategy_fields(&self) -> Vec<Field> {
        let mean = Agg::float_ratio(slot::OVERALL, slot::GRADED);
        vec![
            Field::new("judged", Unit::Count, "Open probes the judge was asked to grade.", Agg::sum(slot::JUDGED)),
            Field::new(
                "judge_graded",
                Unit::Count,
                "Of those, the answers it gave grades for (a reply without grades is not counted).",
                Agg::sum(slot::GRADED),
            ),
            Field::new(
                "judge_score",
                Unit::Count,
                "Mean overall grade, 0-5, of the answers graded, pooled.",
                mean.clone(),
            ),
            Field::new(
                "judge_score_ci95",
                Unit::Count,
                "95% paired-bootstrap interval of judge_score.",
                Agg::ci95(mean),
            ),
            Field::new(
                "judge_score_by_dimension",
                Unit::Count,
                "Mean grade per rubric dimension, 0-5.",
                Agg::keyed(DIMENSIONS.map(|d| (d, Agg::float_ratio((slot::DIMENSION, d), slot::GRADED)))),
            ),
            Field::new(
                "judge_score_by_kind",
                Unit::Count,
                "Mean overall grade per probe kind, 0-5.",
                Agg::keyed(FindingKind::ALL.map(|k| {
                    let k = k.as_str();
                    (k, Agg::float_ratio((slot::OVERALL, k), (slot::GRADED, k)))
                })),
            ),
            Field::new(
                "judge_agreement",
                Unit::Share,
                "Of the probes graded both ways, the share where the judge's pass (overall at least 2.5) goes \
                 with a correct exact answer and its fail with a wrong one.",
                Agg::ratio(slot::AGREE, slot::BOTH),
            ),
            Field::new("judge_calls", Unit::Count, "Calls to the judge.", Agg::sum(slot::CALLS)),
            Field::new(
                "judge_cost_usd",
                Unit::Usd,
                "Cost of the judge's calls (uncached), apart from the strategies' own; 0 for the stand-in.",
                Agg::sum(slot::COST_USD),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Episode, Probe};
    use crate::llm::judge::Grades;
    use crate::llm::pricing::Price;
    use crate::metrics::{fields as field, Context, Prices};
    use crate::replay::calls::CallRecord;
    use crate::replay::{EpisodeReplay, ProbeRecord};
    use serde_json::Value;

    fn record(id: &str, kind: FindingKind, correct: bool, overall: Option<f64>) -> ProbeRecord {
        ProbeRecord {
            probe: id.into(),
            step: None,
            kind,
            correct,
            answer: String::new(),
            judged: true,
            grades: overall.map(|o| Grades {
                dimensions: [o, 1.0, 2.0, 3.0, 4.0, 5.0],
                overall: o,
            }),
        }
    }

    fn judge_call(input: u64, output: u64) -> CallRecord {
        CallRecord {
            step: None,
            purpose: Purpose::Judge,
            model: "j".into(),
            request_hash: None,
            status: Some(200),
            attempts: 1,
            cached: false,
            latency_ms: 0.0,
            input_tokens: input,
            output_tokens: output,
            estimated: false,
            error: None,
            text: String::new(),
        }
    }

    /// Three judged probes: p1 (recall, exact answers too, correct, graded 4), p2 (artifact, open only,
    /// graded 1), p3 (recall, exact answers too, wrong, no grade given). Mean overall (4 + 1) / 2 = 2.5; p1
    /// agrees (correct and 4 ≥ 2.5); p3 has no grade, so one probe is graded both ways. Two judge calls of
    /// 1,000 + 100 tokens at $1 and $2 per million: 2 × 0.0012 = $0.0024.
    /// The judge's episode values for `replay` of `episode`.
    fn values(episode: &Episode, replay: &EpisodeReplay, context: &Context) -> Vec<Value> {
        let view = EpisodeView {
            episode,
            replay,
            baseline: replay,
            context,
            ledger: None,
        };
        crate::metrics::slots::episode_values(&Judge, &view)
    }

    /// An open probe, with an accepted answer when `answers`.
    fn probe(id: &str, answers: bool) -> Probe {
        Probe {
            id: id.into(),
            answers: if answers {
                vec!["x".into()]
            } else {
                Vec::new()
            },
            reference: Some("ref".into()),
            ..Probe::default()
        }
    }

    #[test]
    fn judge_values_by_hand() {
        let episode = Episode {
            probes: vec![probe("p1", true), probe("p2", false), probe("p3", true)],
            ..Episode::default()
        };
        let replay = EpisodeReplay {
            episode: "e".into(),
            source: "t".into(),
            strategy: "s".into(),
            items: 0,
            steps: Vec::new(),
            probes: vec![
                record("p1", FindingKind::Recall, true, Some(4.0)),
                record("p2", FindingKind::Artifact, false, Some(1.0)),
                record("p3", FindingKind::Recall, false, None),
            ],
            calls: vec![judge_call(1000, 100), judge_call(1000, 100)],
        };
        let context = Context {
            prices: Prices {
                judge: Some(Price::new(1.0, 1.0, 2.0)),
                ..Prices::default()
            },
            context_window: 1000,
        };
        let out = values(&episode, &replay, &context);
        assert_eq!(
            out[..4],
            [
                Value::from(3),
                Value::from(2.5),
                Value::from(2),
                Value::from(5.0)
            ]
        );
        // Dimension sums: accuracy 4 + 1, then 1 + 1, 2 + 2, … .
        assert_eq!(out[4..10], [5.0, 2.0, 4.0, 6.0, 8.0, 10.0].map(Value::from));
        // Per kind (graded, sum): recall (1, 4), artifact (1, 1), decision and continuation none.
        assert_eq!(
            out[10..18],
            [
                Value::from(1),
                Value::from(4.0),
                Value::from(1),
                Value::from(1.0),
                Value::from(0),
                Value::from(0.0),
                Value::from(0),
                Value::from(0.0)
            ]
        );
        assert_eq!(
            out[18..21],
            [Value::from(1), Value::from(1), Value::from(2)]
        );
        let cost = out[21].as_f64().unwrap();
        assert!((cost - 0.0024).abs() < 1e-12, "{cost}");
        assert_eq!(out.len(), 22);

        // Agreement counts only graded probes that also have accepted answers: a (answers, right, 4.0) agrees;
        // b and c (no answers) are left out whatever their grades.
        let episode = Episode {
            probes: vec![probe("a", true), probe("b", false), probe("c", false)],
            ..Episode::default()
        };
        let replay = EpisodeReplay {
            probes: vec![
                record("a", FindingKind::Recall, true, Some(4.0)),
                record("b", FindingKind::Recall, false, Some(3.0)),
                record("c", FindingKind::Recall, false, Some(1.0)),
            ],
            calls: Vec::new(),
            ..replay
        };
        let out = values(&episode, &replay, &context);
        assert_eq!(out[18..20], [Value::from(1), Value::from(1)]);
    }

    /// The strategy's fields from two episodes, by hand: every aggregate reads the episode values it names.
    #[test]
    fn judge_fields_by_hand() {
        let catalog = crate::metrics::Catalog::new(vec![Box::new(Judge)]);
        let context = Context {
            prices: Prices {
                judge: Some(Price::new(1.0, 1.0, 2.0)),
                ..Prices::default()
            },
            context_window: 1000,
        };
        let mut totals = catalog.totals();
        // Episode 1: p1 recall 4.0 (answers, right), p2 artifact 1.0 (no answers); 2 judge calls.
        // Episode 2: q1 decision 3.0 (answers, wrong: disagrees), q2 recall ungraded; 1 judge call.
        let episodes = [
            (
                vec![probe("p1", true), probe("p2", false)],
                vec![
                    record("p1", FindingKind::Recall, true, Some(4.0)),
                    record("p2", FindingKind::Artifact, false, Some(1.0)),
                ],
                2,
            ),
            (
                vec![probe("q1", true), probe("q2", true)],
                vec![
                    record("q1", FindingKind::Decision, false, Some(3.0)),
                    record("q2", FindingKind::Recall, false, None),
                ],
                1,
            ),
        ];
        for (i, (probes, records, calls)) in episodes.into_iter().enumerate() {
            let episode = Episode {
                id: format!("e{i}"),
                probes,
                ..Episode::default()
            };
            let replay = EpisodeReplay {
                episode: episode.id.clone(),
                source: "t".into(),
                strategy: "s".into(),
                items: 0,
                steps: Vec::new(),
                probes: records,
                calls: (0..calls).map(|_| judge_call(1000, 100)).collect(),
            };
            let view = EpisodeView {
                episode: &episode,
                replay: &replay,
                baseline: &replay,
                context: &context,
                ledger: None,
            };
            let m = catalog.episode(&view);
            totals.add(&m, &m);
        }
        let s = catalog.strategy("s", &totals);
        assert_eq!(
            (s.count(field::JUDGED), s.count(field::JUDGE_GRADED)),
            (Some(4), Some(3))
        );
        // (4 + 1 + 3) / 3.
        assert!((s.number(field::JUDGE_SCORE).unwrap() - 8.0 / 3.0).abs() < 1e-12);
        // The records grade accuracy as overall (4, 1, 3) and the other dimensions 1, 2, 3, 4, 5.
        let dims = s.get(field::JUDGE_SCORE_BY_DIMENSION);
        assert!(
            (dims["accuracy"].as_f64().unwrap() - 8.0 / 3.0).abs() < 1e-12,
            "{dims}"
        );
        assert_eq!(
            (
                dims["context_awareness"].as_f64(),
                dims["instruction_following"].as_f64()
            ),
            (Some(1.0), Some(5.0))
        );
        let kinds = s.get(field::JUDGE_SCORE_BY_KIND);
        assert_eq!(
            (
                kinds["recall"].as_f64(),
                kinds["artifact"].as_f64(),
                kinds["decision"].as_f64()
            ),
            (Some(4.0), Some(1.0), Some(3.0))
        );
        assert!(kinds["continuation"].is_null(), "{kinds}");
        // Both answers and grade: p1 (agrees), q1 (3.0 passes but the exact answer is wrong): 1 of 2.
        assert!((s.number(field::JUDGE_AGREEMENT).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(s.count(field::JUDGE_CALLS), Some(3));
        // 3 calls × (1000 × 1 + 100 × 2) / 1e6.
        assert!((s.number(field::JUDGE_COST_USD).unwrap() - 0.0036).abs() < 1e-12);
    }
}
