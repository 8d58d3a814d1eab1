//! The replay loop's tests, on a small episode of its own ([`episode`]) with the mock.

use super::*;
use crate::history::{Finding, FindingKind, Probe};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::strategy::{Change, StrategyConfig};
use crate::tokens::TOKENS_PER_REPLY;

pub(crate) fn episode() -> Episode {
    let mut items = vec![
        Item::system("You are a coding agent."),
        Item::user("Fix the failing test."),
    ];
    for i in 0..12 {
        items.push(Item::assistant(format!("Step {i}: running the tests.")));
        items.push(Item::tool_call(format!("c{i}"), "run_tests", "{}"));
        let mut out = format!(
            "collected 40 items\n{}",
            "PASSED tests/test_misc.py\n".repeat(60)
        );
        if i == 2 {
            out.push_str(
                "FAILED tests/test_dates.py::test_leap - AssertionError: expected 2024-02-29\n",
            );
        }
        items.push(Item::tool_result(format!("c{i}"), "run_tests", out));
    }
    items.push(Item::assistant("Fixed the leap year bug in src/dates.py."));
    Episode {
        id: "ep".into(),
        source: "test".into(),
        task: "fix".into(),
        items,
        findings: vec![Finding {
            id: "f1".into(),
            text: "leap test fails".into(),
            evidence: vec!["AssertionError: expected 2024-02-29".into()],
            introduced_at: 10,
            kind: FindingKind::Recall,
            ..Finding::default()
        }],
        probes: vec![Probe {
            id: "p1".into(),
            after_item: 30,
            question: "Which test in test_dates.py failed with an AssertionError?".into(),
            answers: vec!["test_leap".into()],
            finding: Some("f1".into()),
            kind: FindingKind::Recall,
            reference: None,
        }],
        meta: serde_json::Map::new(),
        ..Episode::default()
    }
}

fn replay(strategies: &[NamedStrategy]) -> Vec<EpisodeReplay> {
    let tok = Tokenizer::shared_default().unwrap();
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let r = Replayer::new(tok, &llm, 4000);
    r.replay_all(&episode(), strategies).unwrap()
}

#[test]
fn baseline_keeps_everything_and_caches_the_prefix() {
    let out = replay(&[NamedStrategy::new("none", StrategyConfig::None)]);
    let steps = &out[0].steps;
    assert_eq!(steps.len(), 13);
    for w in steps.windows(2) {
        assert!(w[1].tokens_sent > w[0].tokens_sent);
        // The previous request is a prefix of the next one.
        assert_eq!(w[1].cached_tokens, w[0].tokens_sent - TOKENS_PER_REPLY);
    }
    // The finding is in every request from its introduction on.
    assert!(steps
        .iter()
        .all(|s| s.present.contains(0) == (s.item_index > 10)));
    assert!(out[0].probes[0].correct, "{:?}", out[0].probes);
}

#[test]
fn strategies_differ() {
    let out = replay(&[
        NamedStrategy::new("none", StrategyConfig::None),
        NamedStrategy::new(
            "window",
            StrategyConfig::SlidingWindow(crate::strategy::SlidingWindowConfig {
                max_tokens: Some(1500),
                max_items: None,
                ..crate::strategy::SlidingWindowConfig::default()
            }),
        ),
        NamedStrategy::new(
            "compaction",
            StrategyConfig::Compaction(crate::strategy::CompactionConfig::default()),
        ),
    ]);
    let totals: Vec<usize> = out
        .iter()
        .map(|r| r.steps.iter().map(|s| s.tokens_sent).sum())
        .collect();
    assert!(totals[1] < totals[0] && totals[2] < totals[0], "{totals:?}");
    // Compaction masks the old failing output: the finding is no longer present at the end.
    assert!(!out[2].steps.last().unwrap().present.contains(0));
}

/// The tally reads an item's tokens once and takes what a strategy kept as it was: over a replay, the
/// tokenizer is asked about as many times as there are items, not once per item of every request (which
/// the reference replay does, and the fast one would if it took its shortcuts in none of the cases they
/// are for: an unchanged request, items dropped, a prefix kept).
#[test]
fn the_tally_counts_each_item_once_whatever_the_strategy_declares() {
    let ep = episode();
    for (name, config, most) in [
        ("none", StrategyConfig::None, 2),
        (
            "window",
            StrategyConfig::SlidingWindow(crate::strategy::SlidingWindowConfig {
                max_items: Some(8),
                ..crate::strategy::SlidingWindowConfig::default()
            }),
            2,
        ),
        (
            "window by tokens",
            StrategyConfig::SlidingWindow(crate::strategy::SlidingWindowConfig {
                max_tokens: Some(1500),
                max_items: None,
                ..crate::strategy::SlidingWindowConfig::default()
            }),
            2,
        ),
        (
            "compaction",
            StrategyConfig::Compaction(crate::strategy::CompactionConfig::default()),
            // Each compaction's placeholders are new items, counted when they first appear.
            4,
        ),
    ] {
        let tok = Arc::new(
            Tokenizer::new(
                crate::tokens::Encoding::default(),
                crate::tokens::Backend::default(),
            )
            .unwrap(),
        );
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
        let replayer = Replayer::new(Arc::clone(&tok), &llm, 4000).verifying(true);
        let before = tok.cache_stats();
        let out = replayer
            .replay_all(&ep, &[NamedStrategy::new(name, config)])
            .unwrap();
        let after = tok.cache_stats();
        let lookups = (after.hits + after.misses) - (before.hits + before.misses);
        let read_every_request: usize = out[0].steps.iter().map(|s| s.items_sent).sum();
        // On this episode (39 items): 74, 42, 42 and 139 lookups; 260, 115, 125 and 260 items sent.
        let items = u64::try_from(ep.items.len()).unwrap();
        assert!(
            lookups <= most * items && lookups < read_every_request as u64,
            "{name}: {lookups} tokenizer lookups for {items} items, {read_every_request} items sent"
        );
    }
}

/// A strategy that drops the oldest tool result but says it changed nothing.
struct Liar;

impl crate::strategy::Strategy for Liar {
    fn apply(&mut self, _: &CallPoint, req: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        if let Some(i) = req
            .contents
            .iter()
            .position(|i| matches!(i, Item::ToolResult { .. }))
        {
            req.contents.remove(i);
        }
        Ok(Applied::new(Change::Unchanged))
    }
}

#[test]
#[should_panic(expected = "strategy 'liar' declared a wrong change at step 1 of episode 'ep'")]
fn a_wrong_declaration_panics_with_the_strategy_and_step() {
    let tok = Tokenizer::shared_default().unwrap();
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let replayer = Replayer::new(tok, &llm, 4000).verifying(true);
    // Step 0 has no tool result to drop yet; at step 1 the liar drops one.
    let _ = replayer.replay_custom(&episode(), "liar", Box::new(Liar));
}
