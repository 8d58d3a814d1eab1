//! The report's detail tables: the judge's grades of open probes, and what each strategy lost.

use super::table::{strings, usd, Table};
use super::{pct, RunReport};
use crate::metrics::fields as field;

/// The judge's grades of open probes.
pub(super) fn judge(run: &RunReport) -> Table {
    let grade = |v: Option<f64>| v.map_or_else(|| "–".into(), |v| format!("{v:.2}"));
    let interval = |v: &serde_json::Value| match v.as_array().map(|a| {
        (
            a.first().and_then(serde_json::Value::as_f64),
            a.get(1).and_then(serde_json::Value::as_f64),
        )
    }) {
        Some((Some(lo), Some(hi))) => format!("[{lo:.2}, {hi:.2}]"),
        _ => "–".into(),
    };
    let mut headers = strings(["strategy", "graded", "overall (0-5)", "95% interval"]);
    headers.extend(
        crate::llm::judge::DIMENSIONS
            .iter()
            .map(|d| d.replace('_', " ")),
    );
    headers.extend(strings(["agrees with exact answers", "judge cost"]));
    let stand_in = run
        .config
        .get("judge")
        .is_none_or(serde_json::Value::is_null);
    Table {
        title: "Open probes graded by the judge".into(),
        headers,
        rows: run
            .strategies
            .iter()
            .map(|s| {
                let dims = s.keyed(field::JUDGE_SCORE_BY_DIMENSION);
                let mut row = vec![
                    s.strategy.clone(),
                    format!(
                        "{} of {}",
                        s.count(field::JUDGE_GRADED),
                        s.count(field::JUDGED)
                    ),
                    grade(s.number(field::JUDGE_SCORE)),
                    interval(s.get(field::JUDGE_SCORE_CI95)),
                ];
                row.extend(
                    crate::llm::judge::DIMENSIONS
                        .iter()
                        .map(|d| grade(dims.iter().find(|(k, _)| k == d).and_then(|(_, v)| *v))),
                );
                row.extend([
                    pct(s.number(field::JUDGE_AGREEMENT)),
                    usd(s.number(field::JUDGE_COST_USD)),
                ]);
                row
            })
            .collect(),
        note: Some(if stand_in {
            "The judge here is the mock's deterministic stand-in: every dimension is 5 × the share of the \
             reference answer's identifying tokens (names, paths, numbers) the answer holds. Configure [judge] \
             for a model's grades on the six dimensions of the rubric (assets/judge/rubric.md)."
                .to_owned()
        } else {
            format!(
                "A model graded each answer against the reference on the rubric's six dimensions \
                 (assets/judge/, digest {}); agreement counts a grade of 2.5 or more as a pass.",
                &crate::llm::judge::digest()[..12]
            )
        }),
    }
}

/// What each strategy lost: needs lost by cause, and the findings lost at the most needs.
pub(super) fn losses(run: &RunReport) -> Vec<Table> {
    let causes: Vec<String> = crate::metrics::needs::CAUSES
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    let mut headers = strings(["strategy", "needs", "lost"]);
    headers.extend(causes.iter().map(|c| format!("lost: {c}")));
    let by_cause = Table {
        title: "Needs lost, by what lost them".into(),
        headers,
        rows: run
            .strategies
            .iter()
            .map(|s| {
                let counts = s.get(field::LOST_BY);
                let lost: u64 = causes
                    .iter()
                    .map(|c| counts.get(c).and_then(serde_json::Value::as_u64).unwrap_or(0))
                    .sum();
                let mut row = vec![s.strategy.clone(), s.count(field::NEEDS).to_string(), lost.to_string()];
                row.extend(causes.iter().map(|c| {
                    counts
                        .get(c)
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(0)
                        .to_string()
                }));
                row
            })
            .collect(),
        note: Some(
            "Needs of found findings. A need is lost where the finding's evidence is not in the request at the \
             need; it counts under what \
             the strategy reported doing at the call point where the evidence left the request (several: more \
             than one thing at once; never_present: the evidence was never whole in a request, an annotation \
             to check)."
                .into(),
        ),
    };
    let most = Table {
        title: "Findings lost most often".into(),
        headers: strings(["strategy", "episode", "finding", "kind", "needs lost", "lost by", "what it says"]),
        rows: run
            .most_lost
            .iter()
            .map(|l| {
                vec![
                    l.strategy.clone(),
                    l.episode.clone(),
                    l.finding.clone(),
                    l.kind.as_str().to_owned(),
                    format!("{} of {}", l.lost, l.needs),
                    l.lost_by.clone(),
                    l.text.replace('|', "\\|").replace('\n', " "),
                ]
            })
            .collect(),
        note: Some(format!(
            "Per strategy, the {} findings lost at the most needs (ties in dataset order); findings.csv has every one.",
            super::MOST_LOST
        )),
    };
    vec![by_cause, most]
}
