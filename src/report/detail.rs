//! The report's detail tables: the judge's grades of open probes, and what each strategy lost.

use super::document::{col, share, stat, strategy, Cell, Col, Row, Table};
use super::RunReport;
use crate::metrics::fields as field;
use crate::metrics::needs::LostFinding;

/// The judge's grades of open probes (no row where none was graded).
pub(super) fn judge<'r>(run: &RunReport, rows: &[Row<'r>]) -> Table {
    let grade = |v: Option<f64>| Cell::figure(v.map_or_else(|| "–".into(), |v| format!("{v:.2}")));
    let interval = |v: &serde_json::Value| match v.as_array().map(|a| {
        (
            a.first().and_then(serde_json::Value::as_f64),
            a.get(1).and_then(serde_json::Value::as_f64),
        )
    }) {
        Some((Some(lo), Some(hi))) => Cell::figure(format!("[{lo:.2}, {hi:.2}]")),
        _ => Cell::figure("–"),
    };
    let stand_in = run
        .config
        .get("judge")
        .is_none_or(serde_json::Value::is_null);
    let mut cols: Vec<Col<'_, Row<'r>>> = vec![
        strategy(),
        stat("graded", |s| {
            Cell::figure(
                match (s.count(field::JUDGE_GRADED), s.count(field::JUDGED)) {
                    (Some(graded), Some(judged)) => format!("{graded} of {judged}"),
                    _ => "–".to_owned(),
                },
            )
        }),
        stat("overall (0-5)", move |s| {
            grade(s.number(field::JUDGE_SCORE))
        }),
        stat("95% interval", move |s| {
            interval(s.get(field::JUDGE_SCORE_CI95))
        }),
    ];
    cols.extend(crate::llm::judge::DIMENSIONS.iter().map(|d| {
        col(d.replace('_', " "), move |s: &Row<'r>| {
            let dims = s.keyed(field::JUDGE_SCORE_BY_DIMENSION);
            grade(dims.iter().find(|(k, _)| k == d).and_then(|(_, v)| *v))
        })
    }));
    cols.push(share("agrees with exact answers", field::JUDGE_AGREEMENT));
    cols.push(stat("judge cost", |s| {
        Cell::usd(s.number(field::JUDGE_COST_USD))
    }));
    let judged = rows
        .iter()
        .filter(|s| s.count(field::JUDGED).is_some_and(|n| n > 0));
    Table::of(
        "Open probes graded by the judge",
        &cols,
        judged,
        Some(if stand_in {
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
    )
}

/// What each strategy lost: needs lost by cause, and the findings lost at the most needs.
pub(super) fn losses<'r>(run: &RunReport, rows: &[Row<'r>]) -> Vec<Table> {
    let causes: Vec<String> = crate::metrics::needs::CAUSES
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    let lost_by = |s: &crate::metrics::StrategyMetrics, c: &str| {
        s.get(field::LOST_BY)
            .get(c)
            .and_then(serde_json::Value::as_u64)
    };
    let mut cols: Vec<Col<'_, Row<'r>>> = vec![
        strategy(),
        stat("needs", |s| Cell::count(s.count(field::NEEDS))),
        stat("lost", move |s| {
            Cell::count(
                crate::metrics::needs::CAUSES
                    .iter()
                    .map(|c| lost_by(s, c))
                    .sum(),
            )
        }),
    ];
    cols.extend(causes.iter().map(|c| {
        col(format!("lost: {c}"), move |s: &Row<'r>| {
            Cell::count(lost_by(s, c))
        })
    }));
    let by_cause = Table::of(
        "Needs lost, by what lost them",
        &cols,
        rows,
Some(
            "Needs of found findings. A need is lost where the finding's evidence is not in the request at the \
             need; it counts under what \
             the strategy reported doing at the call point where the evidence left the request (several: more \
             than one thing at once; never_present: the evidence was never whole in a request, an annotation \
             to check)."
                .into(),
        ),
    );
    let most = Table::of(
        "Findings lost most often",
        &[
            col("strategy", |l: &LostFinding| Cell::text(&l.strategy)),
            col("episode", |l: &LostFinding| Cell::episode(&l.episode, &l.strategy, &l.finding)),
            col("finding", |l: &LostFinding| Cell::text(&l.finding)),
            col("kind", |l: &LostFinding| Cell::text(l.kind.as_str())),
            col("needs lost", |l: &LostFinding| Cell::figure(format!("{} of {}", l.lost, l.needs))),
            col("lost by", |l: &LostFinding| Cell::text(&l.lost_by)),
            col("what it says", |l: &LostFinding| {
                Cell::text(l.text.replace('|', "\\|").replace('\n', " "))
            }),
        ],
        &run.most_lost,
        Some(format!(
            "Per strategy, the {} findings lost at the most needs (ties in dataset order); findings.csv has every one.",
            super::MOST_LOST
        )),
    );
    vec![by_cause, most]
}
