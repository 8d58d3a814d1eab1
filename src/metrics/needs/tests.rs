//! Tests of the loss ledger and retention at need (by hand).

use std::sync::Arc;

use super::*;
use crate::history::{Finding, Item};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::replay::{EpisodeReplay, Replayer};
use crate::strategy::compaction::CompactionConfig;
use crate::strategy::{NamedStrategy, StrategyConfig};
use crate::tokens::Tokenizer;

/// Call points at items 2, 5, 8 and 11; the finding `E42` comes from the result at 4 and is needed at the
/// turns starting at 8 (which writes it down) and 11; the task names `parse.py`, needed at 8 too.
fn episode(needed_at: Vec<usize>) -> Episode {
    Episode {
        id: "e".into(),
        source: "t".into(),
        items: vec![
            Item::system("You fix builds."),
            Item::user("Fix the build of parse.py."),
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
        findings: vec![
            Finding {
                id: "f1".into(),
                text: "the build fails with E42".into(),
                evidence: vec!["error E42".into()],
                introduced_at: 4,
                kind: FindingKind::Recall,
                needed_at,
                ..Finding::default()
            },
            Finding {
                id: "f2".into(),
                text: "the task is about parse.py".into(),
                evidence: vec!["parse.py".into()],
                introduced_at: 1,
                kind: FindingKind::Artifact,
                needed_at: vec![8],
                ..Finding::default()
            },
        ],
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

/// The task's finding, at its one need: kept by both (the first user message is never masked).
fn task_row(step: usize) -> NeedRow {
    NeedRow {
        finding: 1,
        from_task: true,
        ordinal: 1,
        needed_at: Some(8),
        step,
        retained: true,
        lost_at_step: None,
        lost_by: None,
    }
}

#[test]
fn the_baseline_keeps_every_need_and_masking_loses_the_first() {
    let ep = episode(vec![8, 11]);
    let out = replay(&ep);
    let baseline = ledger(&ep, &out[0].steps);
    assert_eq!(baseline.len(), 3);
    assert!(baseline.iter().all(|r| r.retained && r.lost_by.is_none()));
    let masked = ledger(&ep, &out[1].steps);
    // At the turn that starts at 8 (call point 2) the result was masked at call point 1, where it was
    // first handed over; at 11 the agent's own "Fixing E42 now." holds it in its words (by the identifying
    // token E42: "error" names the kind of failure, not the fact).
    assert_eq!(
        masked,
        vec![
            NeedRow {
                finding: 0,
                from_task: false,
                ordinal: 1,
                needed_at: Some(8),
                step: 2,
                retained: false,
                lost_at_step: Some(1),
                lost_by: Some("masked".into()),
            },
            NeedRow {
                finding: 0,
                from_task: false,
                ordinal: 2,
                needed_at: Some(11),
                step: 3,
                retained: true,
                lost_at_step: None,
                lost_by: None,
            },
            task_row(2),
        ]
    );
    // The final retention says 100% where the need says 50% and the first need 0%.
    assert!(out[1].steps[3].present.contains(0));
    let c = NeedCounts::of(&masked);
    assert_eq!(
        c,
        NeedCounts {
            needs: 2,
            retained: 1,
            first: 1,
            first_retained: 0,
            task: 1,
            task_retained: 1,
        }
    );
    assert_eq!(c.values(), [2, 1, 1, 0, 1, 1].map(Value::from));
}

#[test]
fn without_need_points_the_finding_is_needed_at_the_end() {
    let ep = episode(Vec::new());
    let out = replay(&ep);
    let rows = ledger(&ep, &out[1].steps);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].needed_at, rows[0].step, rows[0].ordinal),
        (None, 3, 1)
    );
    assert!(rows[0].retained);
    // Needs on one call point count once; a need before any call point after the finding is not checked;
    // the needs checked are numbered in order.
    let ep = episode(vec![6, 7, 8]);
    let rows = ledger(&ep, &out[1].steps);
    assert_eq!(
        rows.iter()
            .map(|r| (r.needed_at, r.step, r.ordinal))
            .collect::<Vec<_>>(),
        [(Some(6), 1, 1), (Some(8), 2, 2), (Some(8), 2, 1)]
    );
    // A finding the turn at call point 5 introduces is not checked there: a need at 7 (whose call point is
    // 5) is not checked at all, the one at 8 is its first.
    let mut ep = episode(vec![7, 8]);
    ep.findings[0].introduced_at = 5;
    let rows = ledger(&ep, &out[1].steps);
    assert_eq!(
        rows.iter()
            .map(|r| (r.finding, r.needed_at, r.step, r.ordinal))
            .collect::<Vec<_>>(),
        [(0, Some(8), 2, 1), (1, Some(8), 2, 1)]
    );
    // A finding without need points that the last call point's own turn introduces (item 11) is never in a
    // request: it is not checked; one introduced just before it is.
    for (introduced, checked) in [(11, 0), (10, 1)] {
        let mut ep = episode(Vec::new());
        ep.findings[0].introduced_at = introduced;
        let rows = ledger(&ep, &out[1].steps);
        assert_eq!(rows.iter().filter(|r| r.finding == 0).count(), checked);
    }
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
    step.summarized_items = 0;
    step.compacted_items = 2;
    step.truncated_items = 2;
    assert_eq!(cause(&step), "truncated");
}

fn values(ep: &Episode, out: &[EpisodeReplay], strategy: usize) -> Vec<Value> {
    let context = crate::metrics::Context {
        prices: crate::metrics::Prices::default(),
        context_window: 100_000,
    };
    let view = EpisodeView {
        episode: ep,
        replay: &out[strategy],
        baseline: &out[0],
        context: &context,
        ledger: None,
    };
    crate::metrics::slots::episode_values(&RetentionAtNeed, &view)
}

#[test]
fn episode_values_count_pairs_per_kind_and_cause() {
    let ep = episode(vec![8, 11]);
    let out = replay(&ep);
    let values = values(&ep, &out, 1);
    fn at(name: impl Into<crate::metrics::Name>) -> usize {
        crate::metrics::slots::slot_index(&RetentionAtNeed, name)
    }
    // needs, retention at need, at the first need, task needs, task retention, 4 kinds (found findings).
    assert_eq!(
        values[..at("retained")],
        [
            Value::from(2),
            Value::from(0.5),
            Value::from(0.0),
            Value::from(1),
            Value::from(1.0),
            Value::from(0.5),
            Value::Null,
            Value::Null,
            Value::Null,
        ]
    );
    // Retained, first needs, retained there, task-given retained.
    assert_eq!(
        values[at("retained")..at(("needs", "recall"))],
        [1, 1, 0, 1].map(Value::from)
    );
    // (needs, retained) of recall, then of the other kinds: the artifact is the task's, not counted.
    assert_eq!(
        values[at(("needs", "recall"))..at(("needs", "recall")) + 4],
        [2, 1, 0, 0].map(Value::from)
    );
    assert_eq!(
        values[at(("lost", "masked"))],
        Value::from(1),
        "one need lost to masking"
    );
    assert_eq!(
        values[at(("lost", "masked")) + 1..at("no_found_needs")]
            .iter()
            .filter(|v| v.as_u64() != Some(0))
            .count(),
        0
    );
    assert_eq!(values[at("no_found_needs")], Value::from(0));
    // Each field reads the value it names.
    let totals = {
        let mut t = crate::metrics::Totals::default();
        t.add(&values, &values);
        t
    };
    let field = |name: &str| crate::metrics::slots::field_value(&RetentionAtNeed, &totals, name);
    assert_eq!(field("needs"), Value::from(2));
    assert_eq!(field("retention_at_need"), Value::from(0.5));
    assert_eq!(field("first_needs"), Value::from(1));
    assert_eq!(field("retention_first_need"), Value::from(0.0));
    assert_eq!(field("needs_task"), Value::from(1));
    assert_eq!(field("retention_at_need_task"), Value::from(1.0));
    assert_eq!(field("episodes_without_found_needs"), Value::from(0));
    assert_eq!(field("lost_by")["masked"], Value::from(1));
    assert_eq!(
        field("retention_at_need_by_kind")["recall"],
        Value::from(0.5)
    );
    assert_eq!(field("retention_at_need_by_kind")["artifact"], Value::Null);
}

/// An episode whose only finding the task gives has no found need: its retention at need is null, not
/// 100% nor 0%, and it is counted apart.
#[test]
fn an_episode_without_found_findings_is_counted_apart() {
    let mut ep = episode(vec![8]);
    ep.findings.remove(0);
    let out = replay(&ep);
    assert_eq!(
        ledger(&ep, &out[1].steps),
        [task_row(2)].map(|r| NeedRow { finding: 0, ..r })
    );
    let values = values(&ep, &out, 1);
    assert_eq!(values[0], Value::from(0));
    assert_eq!(values[1], Value::Null);
    assert_eq!(values[2], Value::Null);
    assert_eq!(
        (values[3].clone(), values[4].clone()),
        (Value::from(1), Value::from(1.0))
    );
    let no_found = crate::metrics::slots::slot_index(&RetentionAtNeed, "no_found_needs");
    assert_eq!(values[no_found], Value::from(1));
}

#[test]
fn resolve_gathers_each_finding_s_needs_into_one_lost_finding() {
    let ep = episode(vec![8, 11]);
    let out = replay(&ep);
    let (ledger_rows, lost) = resolve(&ep, "mask_all", ledger(&ep, &out[1].steps));
    assert_eq!(
        ledger_rows
            .iter()
            .map(|r| (r.finding.as_str(), r.need.retained))
            .collect::<Vec<_>>(),
        [("f1", false), ("f1", true), ("f2", true)]
    );
    // f1's two needs (the first lost, the second held by the agent's own "Fixing E42 now.") make one lost
    // finding; f2, kept, is not listed.
    assert_eq!(
        lost.iter()
            .map(|l| (l.finding.as_str(), l.needs, l.lost, l.lost_by.as_str()))
            .collect::<Vec<_>>(),
        [("f1", 2, 1, "masked")]
    );
    // The same without the task's finding: f1's needs are still counted together.
    let mut ep = ep;
    ep.findings.truncate(1);
    let (_, lost) = resolve(&ep, "mask_all", ledger(&ep, &out[1].steps));
    assert_eq!(
        lost.iter()
            .map(|l| (l.finding.as_str(), l.needs, l.lost))
            .collect::<Vec<_>>(),
        [("f1", 2, 1)]
    );
}
