//! Every headline figure of a tiny episode, worked out by hand (the arithmetic is in the comments) and
//! compared with what the replay and the metrics compute.
//!
//! The episode, with each item's tokens by OpenAI's chat accounting (3 per message + 1 for the role + the
//! content; a one-word content is one token, checked below):
//!
//! | item | what | tokens |
//! |---:|---|---:|
//! | 0 | system "fix" | 5 |
//! | 1 | user "go" | 5 |
//! | 2 | assistant "run" (call point 0) | 5 |
//! | 3 | observation "zebra found" (3 content tokens) | 7 |
//! | 4 | assistant "read" (call point 1) | 5 |
//! | 5 | observation "lines" | 5 |
//! | 6 | assistant "patch zebra" (call point 2; 2 content tokens) | 6 |
//! | 7 | observation "ok" | 5 |
//! | 8 | assistant "done" (call point 3; the agent stopped after it) | 5 |
//!
//! A request is its items plus 3 tokens of reply priming; a turn's output is its tokens less 3. Two findings:
//! "zebra", found in item 3 and needed at items 4 and 6, and "go", which the task gives (the first user
//! message), needed at items 4 and 8; one probe, "What was found?", asked after item 5.
//! Prices: $1 per input token, $0.50 per cached token, $2 per output token, no minimum prefix.

use std::sync::Arc;

use crate::llm::mock::{MockConfig, MockLlm};
use crate::llm::pricing::Price;
use crate::metrics::{fields as field, Catalog, Context, EpisodeResult, Prices, StrategyMetrics};
use crate::replay::{EpisodeReplay, Replayer};
use crate::strategy::sliding_window::SlidingWindowConfig;
use crate::strategy::{NamedStrategy, StrategyConfig};
use crate::{Episode, Finding, FindingKind, Item, Probe, Tokenizer};

fn episode() -> Episode {
    Episode {
        id: "tiny".into(),
        source: "hand".into(),
        items: vec![
            Item::system("fix"),
            Item::user("go"),
            Item::assistant("run"),
            Item::observation("run", "zebra found"),
            Item::assistant("read"),
            Item::observation("cat", "lines"),
            Item::assistant("patch zebra"),
            Item::observation("edit", "ok"),
            Item::assistant("done"),
        ],
        stopped: true,
        findings: vec![
            Finding {
                id: "f1".into(),
                text: "a zebra was found".into(),
                evidence: vec!["zebra".into()],
                introduced_at: 3,
                needed_at: vec![4, 6],
                kind: FindingKind::Recall,
                ..Finding::default()
            },
            Finding {
                id: "f2".into(),
                text: "the task says go".into(),
                evidence: vec!["go".into()],
                introduced_at: 1,
                needed_at: vec![4, 8],
                kind: FindingKind::Decision,
                ..Finding::default()
            },
        ],
        probes: vec![Probe {
            id: "p1".into(),
            after_item: 5,
            question: "What was found?".into(),
            answers: vec!["zebra".into()],
            finding: Some("f1".into()),
            kind: FindingKind::Recall,
            reference: None,
        }],
        ..Episode::default()
    }
}

#[test]
fn every_headline_figure_of_a_tiny_episode_by_hand() {
    let tok = Tokenizer::shared_default().unwrap();
    let ep = episode();
    // The token counts the table above assumes.
    let counts: Vec<usize> = ep.items.iter().map(|i| tok.count_item(i)).collect();
    assert_eq!(counts, [5, 5, 5, 7, 5, 5, 6, 5, 5]);

    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let replayer = Replayer::new(Arc::clone(&tok), &llm, 128_000);
    let window = SlidingWindowConfig {
        max_items: Some(2),
        ..SlidingWindowConfig::default()
    };
    let strategies = [
        NamedStrategy::new("none", StrategyConfig::None),
        NamedStrategy::new("window", StrategyConfig::SlidingWindow(window)),
    ];
    let out = replayer.replay_all(&ep, &strategies).unwrap();
    let steps = |i: usize| -> Vec<(usize, usize, usize)> {
        out[i]
            .steps
            .iter()
            .map(|s| (s.tokens_sent, s.cached_tokens, s.output_tokens))
            .collect()
    };
    // Baseline, (sent, cached, output) per call point:
    // 0: items 0-1 = 10 + 3 = 13, nothing cached; "run" = 5 - 3 = 2 out.
    // 1: items 0-3 = 22 + 3 = 25, items 0-1 cached = 10; "read" 2 out.
    // 2: items 0-5 = 32 + 3 = 35, items 0-3 cached = 22; "patch zebra" 6 - 3 = 3 out.
    // 3: items 0-7 = 43 + 3 = 46, items 0-5 cached = 32; "done" 2 out.
    assert_eq!(
        steps(0),
        [(13, 0, 2), (25, 10, 2), (35, 22, 3), (46, 32, 2)]
    );
    // Sliding window, at most 2 items after the system and first user messages:
    // 0 and 1 as the baseline (at most 2 items after the head);
    // 2: keeps 0, 1, 4, 5 = 20 + 3 = 23, only 0-1 cached = 10;
    // 3: the live request 0, 1, 4, 5, 6, 7 keeps 0, 1, 6, 7 = 21 + 3 = 24, 0-1 cached = 10.
    assert_eq!(
        steps(1),
        [(13, 0, 2), (25, 10, 2), (23, 10, 3), (24, 10, 2)]
    );
    let changed: Vec<bool> = out[1].steps.iter().map(|s| s.changed).collect();
    assert_eq!(changed, [false, false, true, true]);

    let price = Price {
        input: 1e6,
        cached_input: 0.5e6,
        output: 2e6,
        min_cached_prefix: 0,
        ..Price::new(1e6, 0.5e6, 2e6)
    };
    let context = Context {
        prices: Prices {
            agent: Some(price),
            strategy: Some(price),
            judge: None,
            agent_switches: Vec::new(),
        },
        context_window: 128_000,
    };
    // Cost per step, with the cache = (sent - cached) × 1 + cached × 0.5 + output × 2:
    // baseline 13 + 0 + 4 = 17, 15 + 5 + 4 = 24, 13 + 11 + 6 = 30, 14 + 16 + 4 = 34: 105 in all;
    // window 17, 24, 13 + 5 + 6 = 24, 14 + 5 + 4 = 23: 88.
    let cost = |i: usize| -> Vec<f64> {
        out[i]
            .steps
            .iter()
            .map(|s| context.prices.step_cost(s).unwrap())
            .collect()
    };
    assert_eq!(cost(0), [17.0, 24.0, 30.0, 34.0]);
    assert_eq!(cost(1), [17.0, 24.0, 24.0, 23.0]);
    // No cache = sent + output × 2: baseline 17 + 29 + 41 + 50 = 137; window 17 + 29 + 29 + 28 = 103.
    let no_cache = |i: usize| -> f64 {
        out[i]
            .steps
            .iter()
            .map(|s| context.prices.step_cost_no_cache(s).unwrap())
            .sum()
    };
    assert_eq!((no_cache(0), no_cache(1)), (137.0, 103.0));

    let (catalog, result, s) = window_over(&ep, &out, &context);
    let close = |field: &str, want: f64| close_to(&s, field, want);
    // Input: baseline 13 + 25 + 35 + 46 = 119, window 13 + 25 + 23 + 24 = 85.
    assert_eq!(s.count(field::INPUT_TOKENS), Some(85));
    close("savings", 1.0 - 85.0 / 119.0);
    close("cost_usd", 88.0);
    close("baseline_cost_usd", 105.0);
    close("cost_savings", 1.0 - 88.0 / 105.0);
    close("cost_usd_no_cache", 103.0);
    close("cost_savings_no_cache", 1.0 - 103.0 / 137.0);
    // The found finding is needed at item 4 (call point 1), where the window still has item 3: kept; and at
    // item 6 (call point 2), where the window has dropped item 3: lost. Retention at need 1/2; at its first
    // need, 1/1. The task's finding is needed at call points 1 and 3, and the window keeps the first user
    // message: 2/2, reported apart. At the last call point the agent's own "patch zebra" holds "zebra": final
    // retention (over both findings) 2/2.
    assert_eq!(s.count(field::NEEDS), Some(2));
    close("retention_at_need", 0.5);
    assert_eq!(s.count(field::FIRST_NEEDS), Some(1));
    close("retention_first_need", 1.0);
    assert_eq!(s.count(field::NEEDS_TASK), Some(2));
    close("retention_at_need_task", 1.0);
    assert_eq!(s.count(field::EPISODES_WITHOUT_FOUND_NEEDS), Some(0));
    close("final_retention", 1.0);
    // The probe, asked at call point 2: the baseline's request has "zebra found" (the line with the
    // question's word "found"), the window's does not. One valid probe, not kept.
    close("probe_accuracy", 0.0);
    assert_eq!(s.count(field::PROBES_VALID), Some(1));
    close("probe_retention", 0.0);
    // It first changed the request at call point 2: from there on it sent 23 + 24 = 47 tokens against the
    // baseline's 35 + 46 = 81, and cost 24 + 23 = 47 against 30 + 34 = 64. The found finding's need there (call
    // point 2) was lost: 0 of 1; its first need (call point 1) came before, so none is counted there; the
    // task's need at call point 3 was kept.
    assert_eq!(s.count(field::EPISODES_ACTED), Some(1));
    assert_eq!(s.named("episodes_needed_acted"), 1);
    close("savings_acted", 1.0 - 47.0 / 81.0);
    close("cost_savings_acted", 1.0 - 47.0 / 64.0);
    // Priced: the same over the priced episodes it acted on, this one.
    close("cost_savings_acted_priced", 1.0 - 47.0 / 64.0);
    assert_eq!(s.named("episodes_acted_priced"), 1);
    assert_eq!(s.count(field::NEEDS_ACTED), Some(1));
    close("retention_at_need_acted", 0.0);
    assert!(s.named("retention_first_need_acted").is_null());
    close("retention_at_need_task_acted", 1.0);
    // One episode says nothing of the next: no retention interval, there or over every call point.
    for field in [
        "retention_at_need_acted_ci95",
        "retention_at_need_ci95",
        "retention_first_need_ci95",
        "retention_at_need_task_ci95",
    ] {
        assert!(s.named(field).is_null(), "{field}: {}", s.named(field));
    }
    // The bootstrap's, of savings and cost: every replicate that draws the one episode at all has its own
    // figures, so each is the point itself (the report shows "too few episodes" in its place).
    let ci = |field: &str| -> Vec<f64> {
        s.named(field)
            .as_array()
            .unwrap_or_else(|| panic!("{field} is null"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    for (field, want) in [
        ("savings_ci95", 1.0 - 85.0 / 119.0),
        ("cost_savings_ci95", 1.0 - 88.0 / 105.0),
    ] {
        for got in ci(field) {
            assert!((got - want).abs() < 1e-12, "{field}: {got} against {want}");
        }
    }
    // The steps.csv rows: one per call point, every catalog column filled, the figures above.
    let rows = &result.steps.iter().find(|(s, _)| s == "window").unwrap().1;
    let column = |name: &str| {
        catalog
            .step_columns()
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("no step column {name}"))
    };
    let values = |name: &str| -> Vec<f64> {
        rows.iter()
            .map(|r| r.values[column(name)].as_f64().unwrap())
            .collect()
    };
    assert!(rows
        .iter()
        .all(|r| r.values.len() == catalog.step_columns().len()));
    assert_eq!(values("tokens_sent"), [13.0, 25.0, 23.0, 24.0]);
    assert_eq!(values("cached_tokens"), [0.0, 10.0, 10.0, 10.0]);
    assert_eq!(values("cost_usd"), [17.0, 24.0, 24.0, 23.0]);
    // Retention at each call point of the findings introduced before it: the task's alone, then both kept,
    // "zebra" dropped, and back in the agent's own words.
    assert_eq!(
        rows.iter()
            .map(|r| r.values[column("retention")].as_f64())
            .collect::<Vec<_>>(),
        [Some(1.0), Some(1.0), Some(0.5), Some(1.0)]
    );
    // The ledger, in finding and need order: "zebra" kept at call point 1 (its first need), lost at call
    // point 2 (dropped there); the task's "go" kept at call points 1 and 3.
    let ledger: Vec<_> = result
        .ledger
        .iter()
        .filter(|r| r.strategy == "window")
        .map(|r| {
            (
                r.finding.as_str(),
                r.from_task,
                r.need.ordinal,
                r.need.step,
                r.need.retained,
                r.need.lost_at_step,
                r.need.lost_by.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        ledger,
        [
            ("f1", false, 1, 1, true, None, None),
            ("f1", false, 2, 2, false, Some(2), Some("dropped")),
            ("f2", true, 1, 1, true, None, None),
            ("f2", true, 2, 3, true, None, None),
        ]
    );
    // The baseline keeps everything.
    let base = {
        let mut t = catalog.totals();
        t.add(&result.baseline, &result.baseline);
        catalog.strategy("none", &t)
    };
    assert_eq!(base.number(field::RETENTION_AT_NEED), Some(1.0));
    assert_eq!(base.number(field::PROBE_ACCURACY), Some(1.0));
    assert_eq!(base.number(field::COST_USD), Some(105.0));
}

/// A strategy that never changes a request reports so: `acted` is false in its episode row, `episodes_acted`
/// is 0, and the figures over the episodes it acted on are null (there are none), not its pooled figures; the
/// one that acts says true.
#[test]
fn a_strategy_that_never_acts_reports_so() {
    let tok = Tokenizer::shared_default().unwrap();
    let ep = episode();
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let replayer = Replayer::new(Arc::clone(&tok), &llm, 128_000);
    let window = |n: usize| {
        StrategyConfig::SlidingWindow(SlidingWindowConfig {
            max_items: Some(n),
            ..SlidingWindowConfig::default()
        })
    };
    let strategies = [
        NamedStrategy::new("none", StrategyConfig::None),
        NamedStrategy::new("idle", window(100)),
        NamedStrategy::new("window", window(2)),
    ];
    let out = replayer.replay_all(&ep, &strategies).unwrap();
    let context = Context {
        prices: Prices::default(),
        context_window: 128_000,
    };
    let catalog = Catalog::standard();
    let result = catalog.episode_result(&ep, &out, &out[0], &out[0], &context);
    let acted = catalog
        .episode_columns()
        .position(|c| c.name == "acted")
        .unwrap();
    let flags: Vec<Option<bool>> = result
        .strategies
        .iter()
        .map(|m| catalog.episode_row(m).nth(acted).unwrap().as_bool())
        .collect();
    assert_eq!(flags, [Some(false), Some(false), Some(true)]);
    let figures = |i: usize| {
        let mut t = catalog.totals();
        t.add(&result.strategies[i], &result.baseline);
        catalog.strategy(&out[i].strategy, &t)
    };
    let idle = figures(1);
    assert_eq!(idle.count(field::EPISODES_ACTED), Some(0));
    for field in [
        "savings_acted",
        "cost_savings_acted",
        "retention_at_need_acted",
        "retention_at_need_acted_ci95",
        "retention_first_need_acted",
        "retention_at_need_task_acted",
    ] {
        assert!(
            idle.named(field).is_null(),
            "{field}: {}",
            idle.named(field)
        );
    }
    // Its pooled figures are the baseline's.
    assert_eq!(idle.number(field::SAVINGS), Some(0.0));
    assert_eq!(idle.number(field::RETENTION_AT_NEED), Some(1.0));
    assert_eq!(figures(2).count(field::EPISODES_ACTED), Some(1));
    assert_eq!(figures(0).count(field::EPISODES_ACTED), Some(0));
}

/// A strategy's own LLM calls are paid wherever it made them: one made before its first act (which changed
/// nothing, as a summarizer's failed or unused call) counts in its cost where it acted, once; one made at its
/// first act counts there, once. The sliding window of 4 items first acts at call point 3 of 4 (not the
/// middle, where `len - after` and `len / after` agree); its records are given two strategy calls by hand (the
/// metrics read only the records), at call point 0 (10 in, 3 out) and at call point 3 (20 in, 5 out).
#[test]
fn a_strategy_s_own_call_before_its_first_act_is_paid_once() {
    use crate::strategy::LlmCall;
    let tok = Tokenizer::shared_default().unwrap();
    let ep = episode();
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let replayer = Replayer::new(Arc::clone(&tok), &llm, 128_000);
    let strategies = [
        NamedStrategy::new("none", StrategyConfig::None),
        NamedStrategy::new(
            "window",
            StrategyConfig::SlidingWindow(SlidingWindowConfig {
                max_items: Some(4),
                ..SlidingWindowConfig::default()
            }),
        ),
    ];
    let mut out = replayer.replay_all(&ep, &strategies).unwrap();
    // At call point 3 the live request 0-7 keeps 0, 1, 4, 5, 6, 7 = 31 + 3 = 34 tokens, 0-1 cached = 10.
    let sent: Vec<(usize, usize, bool)> = out[1]
        .steps
        .iter()
        .map(|s| (s.tokens_sent, s.cached_tokens, s.changed))
        .collect();
    assert_eq!(
        sent,
        [
            (13, 0, false),
            (25, 10, false),
            (35, 22, false),
            (34, 10, true)
        ]
    );
    let call = |input_tokens: u64, output_tokens: u64| LlmCall {
        input_tokens,
        output_tokens,
        ..LlmCall::default()
    };
    out[1].steps[0].llm_calls.push(call(10, 3));
    out[1].steps[3].llm_calls.push(call(20, 5));
    let price = Price::new(1e6, 0.5e6, 2e6);
    let context = Context {
        prices: Prices {
            agent: Some(Price {
                min_cached_prefix: 0,
                ..price
            }),
            strategy: Some(price),
            judge: None,
            agent_switches: Vec::new(),
        },
        context_window: 128_000,
    };
    let (_, _, s) = window_over(&ep, &out, &context);
    let close = |field: &str, want: f64| close_to(&s, field, want);
    // Its own calls at $1 in, $2 out: 10 + 6 = 16 at call point 0, 20 + 10 = 30 at call point 3. The agent's
    // call at 3: (34 - 10) + 10 × 0.5 + 2 × 2 = 33. Every call point: 17 + 16, 24, 30, 33 + 30 = 150.
    close("cost_usd", 150.0);
    close("cost_savings", 1.0 - 150.0 / 105.0);
    // From its first act on: the agent's 33 and its call's 30 at call point 3, and the call before it, 16:
    // 79, against the baseline's 34 there. Tokens: 34 against 46.
    assert_eq!(s.count(field::EPISODES_ACTED), Some(1));
    close("cost_savings_acted", 1.0 - 79.0 / 34.0);
    close("savings_acted", 1.0 - 34.0 / 46.0);
    // The found finding's needs (call points 1 and 2) both come before its first act: none is met there, so
    // the episode it acted on is not one its retention there rests on; the task's need at 3 is.
    assert_eq!(s.count(field::NEEDS_ACTED), Some(0));
    assert_eq!(s.named("episodes_needed_acted"), 0);
    assert!(s.named("retention_at_need_acted").is_null());
    close("retention_at_need_task_acted", 1.0);
}

/// The published schema, pinned: episodes.csv's columns and summary.json's fields, in order. A metric that
/// loses a column, or a reorder, fails here before it changes a published file.
#[test]
fn the_published_columns_and_fields_are_pinned() {
    let c = crate::metrics::Catalog::standard();
    let episode: Vec<&str> = c.episode_columns().map(|c| c.name.as_str()).collect();
    assert_eq!(
        episode,
        [
            "items",
            "steps",
            "input_tokens",
            "baseline_input_tokens",
            "savings",
            "peak_tokens",
            "steps_over_window",
            "cached_tokens",
            "output_tokens",
            "strategy_calls",
            "strategy_failures",
            "strategy_input_tokens",
            "strategy_output_tokens",
            "strategy_llm_ms",
            "cost_usd",
            "cost_usd_no_cache",
            "findings",
            "final_retention",
            "mean_retention",
            "retention_recall",
            "retention_artifact",
            "retention_decision",
            "retention_continuation",
            "needs",
            "retention_at_need",
            "retention_first_need",
            "needs_task",
            "retention_at_need_task",
            "retention_at_need_recall",
            "retention_at_need_artifact",
            "retention_at_need_decision",
            "retention_at_need_continuation",
            "acted",
            "acted_from",
            "floor_tokens",
            "budget_tokens",
            "below_floor",
            "window_below_floor",
            "framework_failed",
            "failed_at_step",
            "probes",
            "probes_correct",
            "probe_accuracy",
            "probes_valid",
            "probe_retention",
            "judged",
            "judge_score",
        ]
    );
    let fields: Vec<&str> = c
        .strategy_fields()
        .map(|f| f.column.name.as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "steps",
            "input_tokens",
            "baseline_input_tokens",
            "savings",
            "mean_episode_savings",
            "peak_tokens",
            "steps_over_window",
            "strategy_calls",
            "strategy_failures",
            "strategy_input_tokens",
            "strategy_output_tokens",
            "strategy_llm_ms",
            "cost_usd",
            "baseline_cost_usd",
            "cost_savings",
            "cost_usd_no_cache",
            "cost_savings_no_cache",
            "findings",
            "final_retention",
            "mean_retention",
            "retention_by_kind",
            "needs",
            "retention_at_need",
            "first_needs",
            "retention_first_need",
            "needs_task",
            "retention_at_need_task",
            "episodes_without_found_needs",
            "retention_at_need_by_kind",
            "lost_by",
            "episodes_acted",
            "episodes_needed_acted",
            "savings_acted",
            "cost_savings_acted",
            "episodes_acted_priced",
            "cost_savings_acted_priced",
            "needs_acted",
            "retention_at_need_acted",
            "retention_at_need_acted_ci95",
            "retention_first_need_acted",
            "retention_at_need_task_acted",
            "floor_tokens",
            "budget_tokens",
            "episodes_below_floor",
            "episodes_window_below_floor",
            "episodes_failed",
            "savings_ci95",
            "cost_savings_ci95",
            "retention_at_need_ci95",
            "retention_first_need_ci95",
            "retention_at_need_task_ci95",
            "probes",
            "probe_accuracy",
            "probes_valid",
            "probe_retention",
            "judged",
            "judge_graded",
            "judge_score",
            "judge_score_ci95",
            "judge_score_by_dimension",
            "judge_score_by_kind",
            "judge_agreement",
            "judge_calls",
            "judge_cost_usd",
            "token_share",
        ]
    );
}

/// The standard catalog's result for `ep` replayed as `out` (the baseline first, the window second) and the
/// window's figures pooled over that one episode.
fn window_over(
    ep: &Episode,
    out: &[EpisodeReplay],
    context: &Context,
) -> (Catalog, EpisodeResult, StrategyMetrics) {
    let catalog = Catalog::standard();
    let result = catalog.episode_result(ep, out, &out[0], &out[0], context);
    let mut totals = catalog.totals();
    totals.add(&result.strategies[1], &result.baseline);
    let s = catalog.strategy("window", &totals);
    (catalog, result, s)
}

/// `field` of `s` equals `want`, the figure worked out by hand, to 1e-12.
fn close_to(s: &StrategyMetrics, field: &str, want: f64) {
    let got = s
        .named(field)
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is null"));
    assert!(
        (got - want).abs() < 1e-12,
        "{field}: {got} against {want} by hand"
    );
}
