//! The fast replay against the plain reference replay: random episodes through every built-in strategy and
//! every preset, with the mock LLM; every step record, probe answer and call record must be the same. (The
//! library's own tests, `replay::reference::tests`, check the bundled dataset's episodes and one built to reach
//! every path of the tally.)

use std::sync::{Arc, OnceLock};

use ctxbench::history::Unit;
use ctxbench::history::{Finding, FindingKind, Probe, SentBack};
use ctxbench::llm::mock::{MockConfig, MockLlm};
use ctxbench::replay::{reference, EpisodeReplay, Replayer};
use ctxbench::strategy::{
    self, presets, CompactionConfig, CompactionMode, CondenseAction, CondenserConfig, Measure,
    NamedStrategy, PipelineConfig, Prompt, RewriteConfig, RewriteUnit, SlidingWindowConfig,
    StrategyConfig,
};
use ctxbench::{Episode, Item, Tokenizer};
use proptest::prelude::*;

fn tokenizer() -> Arc<Tokenizer> {
    static T: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    Arc::clone(T.get_or_init(|| Tokenizer::shared_default().unwrap()))
}

/// Every strategy a run can name, and a few settings the defaults leave out.
fn strategies() -> Vec<NamedStrategy> {
    let mut all = strategy::defaults();
    all.extend(presets::presets().iter().map(presets::Preset::named));
    all.push(NamedStrategy::new(
        "truncate",
        StrategyConfig::Compaction(CompactionConfig {
            keep_last: 1,
            min_chars: 50,
            mode: CompactionMode::Truncate,
            head_chars: 40,
            tail_chars: 40,
            ..CompactionConfig::default()
        }),
    ));
    // A window of no items: only the head (the system messages and the task). After an empty reply the next
    // request starts with a system message it keeps, and goes on with a user message it drops — a kept prefix
    // past the items the replay had counted.
    all.push(NamedStrategy::new(
        "head-only",
        StrategyConfig::SlidingWindow(SlidingWindowConfig {
            max_items: Some(0),
            ..SlidingWindowConfig::default()
        }),
    ));
    // The new building blocks at sizes a random episode reaches: rewrites of short steps and outputs, a share
    // forgotten, user messages kept within a budget, an opaque item, a trigger on the history alone, a preview.
    all.push(NamedStrategy::new(
        "rewrite-steps",
        StrategyConfig::Rewrite(RewriteConfig {
            min_tokens: 30,
            accept_saved: Some(10),
            ..RewriteConfig::default()
        }),
    ));
    all.push(NamedStrategy::new(
        "rewrite-outputs",
        StrategyConfig::Rewrite(RewriteConfig {
            unit: RewriteUnit::ToolResults,
            delay: 0,
            context_before: None,
            min_tokens: 40,
            accept_saved: None,
            accept_ratio: None,
            prompt: Prompt::AconObservation,
            ..RewriteConfig::default()
        }),
    ));
    all.push(NamedStrategy::new(
        "share-codex-opaque",
        StrategyConfig::Pipeline(PipelineConfig {
            trigger_tokens: Some(900),
            ..PipelineConfig::new(
                1.0,
                vec![
                    StrategyConfig::Condenser(CondenserConfig {
                        forget_share: Some(0.3),
                        action: CondenseAction::Summarize,
                        prompt: Prompt::AnthropicCompact,
                        ..CondenserConfig::new(Unit::Messages, 4, 0, 4)
                    }),
                    StrategyConfig::Condenser(CondenserConfig {
                        keep_user_tokens: Some(12),
                        opaque_tokens: Some(150),
                        action: CondenseAction::Summarize,
                        prompt: Prompt::Codex,
                        ..CondenserConfig::new(Unit::Items, 1, 0, 0)
                    }),
                ],
            )
        }),
    ));
    all.push(NamedStrategy::new(
        "history-trigger-preview",
        StrategyConfig::Pipeline(PipelineConfig {
            trigger_tokens: Some(600),
            measure: Measure::History,
            run_all: true,
            ..PipelineConfig::new(
                1.0,
                vec![StrategyConfig::Compaction(CompactionConfig {
                    keep_last: 0,
                    min_chars: 0,
                    args_max_chars: 0,
                    min_tokens: 60,
                    head_chars: 80,
                    placeholder: Some(
                        "[~{tokens:,} tokens of {id}]\n{head}\n[{chars:,} chars]".into(),
                    ),
                    ..CompactionConfig::default()
                })],
            )
        }),
    ));
    all.push(NamedStrategy::new(
        "mask-all",
        StrategyConfig::Compaction(CompactionConfig {
            keep_last: 0,
            min_chars: 0,
            ..CompactionConfig::default()
        }),
    ));
    all
}

/// One turn of a random agent: (assistant text?, parallel tool calls, output length, a user message first?,
/// a line that becomes a finding?, (how the environment answers: 0 tool results, 1 an observation as in text
/// mode; recorded reasoning: 0 none, 1 not sent back, 2 sent back always, 3 sent back within its turn (dropped
/// at the next user message); a system message first?)).
type Turn = (bool, usize, usize, bool, bool, (u8, u8, bool));

/// How a random episode starts and ends and what it carries: (open end?, stopped?, tool schemas, opening
/// system message: 0 none, 1 one ending in a full stop, 2 one ending in a word — the tools' tokens depend on
/// the first system message, and on how its end joins a newline); unrecorded context before each call
/// point: 0 none, 1 the same size every time, 2 growing, with the part read from the cache recorded).
type Shape = (bool, bool, usize, u8, u8);

/// A random episode: system and task, then turns of text, tool calls with long or short results or
/// observations, reasoning, user messages in the middle, findings from tool output and probes about them;
/// with or without tool schemas, stopped or not.
fn episode() -> impl Strategy<Value = Episode> {
    let turn = (
        any::<bool>(),
        0usize..4,
        1usize..600,
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.3),
        (0u8..2, 0u8..4, prop::bool::weighted(0.1)),
    );
    (
        prop::collection::vec(turn, 1..30),
        (any::<bool>(), any::<bool>(), 0usize..3, 0u8..3, 0u8..3),
    )
        .prop_map(|(turns, shape)| build(&turns, shape))
}

fn tools(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| {
            serde_json::json!({"type": "function", "function": {
                "name": format!("tool_{i}"), "description": "Runs something.",
                "parameters": {"type": "object", "required": ["cmd"],
                               "properties": {"cmd": {"type": "string", "description": "The command"},
                                              "mode": {"type": "string", "enum": ["a", "b"]}}}}})
        })
        .collect()
}

fn finding(t: usize, at: usize, kind: FindingKind) -> (Finding, Probe) {
    (
        Finding {
            id: format!("f{t}"),
            text: format!("value_{t} overflowed"),
            evidence: vec![format!("E{t:04}"), format!("value_{t} overflowed")],
            introduced_at: at,
            kind,
            ..Finding::default()
        },
        Probe {
            id: format!("p{t}"),
            after_item: at,
            question: format!("Which error code did value_{t} overflow with?"),
            answers: vec![format!("E{t:04}")],
            finding: Some(format!("f{t}")),
            kind: FindingKind::Recall,
            // Every other probe is also open: the judge grades it against a reference.
            reference: t
                .is_multiple_of(2)
                .then(|| format!("value_{t} overflowed with error E{t:04}")),
        },
    )
}

fn build(turns: &[Turn], (open_end, stopped, schemas, opening, unrecorded): Shape) -> Episode {
    let mut items = match opening {
        0 => vec![],
        1 => vec![Item::system("You are a coding agent. Use the tools.")],
        _ => vec![Item::system("You are a coding agent with tools")],
    };
    items.push(Item::user("Fix the failing test in src/lib.rs."));
    let mut findings = Vec::new();
    let mut probes = Vec::new();
    let mut call = 0;
    for (t, &(text, calls, len, user, found, (answer, reasoning, note))) in turns.iter().enumerate()
    {
        // A system message mid-episode (a harness's reminder): part of every sliding window's head, and the
        // first system message of an episode that opened without one.
        if note {
            items.push(Item::system(format!("Reminder {t}: {len} tokens left")));
        }
        if user {
            items.push(Item::user(format!("Also check module m{t}.")));
        }
        if reasoning > 0 {
            items.push(Item::Reasoning {
                content: format!("I think m{t} holds the bug. ")
                    .repeat(1 + len % 4)
                    .into(),
                sent_back: [SentBack::Never, SentBack::Always, SentBack::Turn]
                    [usize::from(reasoning - 1)],
            });
        }
        let fact = format!("ERROR E{t:04}: value_{t} overflowed at src/m{t}.rs:{len}\n");
        if answer == 1 {
            // Text mode: the action is in the reply, the environment answers with a user message.
            items.push(Item::assistant(
                format!("Running `cat f{t}.rs`. ").repeat(1 + len % 3),
            ));
            let mut out = format!("line {t} of f{t}.rs\n").repeat(1 + len / 20);
            if found {
                out.push_str(&fact);
                let (f, p) = finding(t, items.len(), FindingKind::Decision);
                findings.push(f);
                probes.push(p);
            }
            items.push(Item::observation(if t % 2 == 0 { "bash" } else { "" }, out));
            continue;
        }
        if !text && calls == 0 && reasoning == 1 {
            // An empty reply: the model reasoned (not sent back) and said nothing; the harness reminds it. The
            // next request then starts, after what the last one sent, with a system message.
            items.push(Item::system(format!("Reminder {t}: reply with an action")));
            items.push(Item::user(format!("Go on with module m{t}.")));
            continue;
        }
        if text || calls == 0 {
            items.push(Item::assistant(
                format!("Step {t}: next I will look at m{t}. ").repeat(1 + len % 5),
            ));
        }
        let ids: Vec<String> = (0..calls)
            .map(|_| {
                call += 1;
                format!("call_{call}")
            })
            .collect();
        for id in &ids {
            items.push(Item::tool_call(
                id.clone(),
                "bash",
                format!("{{\"cmd\":\"cat f{t}.rs {}\"}}", "x".repeat(len % 700)),
            ));
        }
        for (k, id) in ids.iter().enumerate() {
            let mut out = format!("line {t}.{k} of output\n").repeat(1 + len / 20);
            if found && k == 0 {
                out.push_str(&fact);
                let kind = if t % 2 == 0 {
                    FindingKind::Recall
                } else {
                    FindingKind::Artifact
                };
                let (f, p) = finding(t, items.len(), kind);
                findings.push(f);
                probes.push(p);
            }
            items.push(Item::tool_result(id.clone(), "bash", out));
        }
    }
    if !open_end {
        items.push(Item::assistant("Done: the test passes."));
    }
    let mut ep = Episode {
        id: "random".into(),
        source: "proptest".into(),
        task: "fix".into(),
        items,
        findings,
        probes,
        tools: tools(schemas),
        stopped,
        ..Episode::default()
    };
    if unrecorded > 0 {
        // A block before each call point, from the last: the positions of those before stay as they are.
        let points = ep.call_points();
        for (k, &at) in points.iter().enumerate().rev() {
            let block = if unrecorded == 1 {
                Item::unrecorded(700, None)
            } else {
                // All of it read from the cache at even call points (the prefix after it may be too), part of
                // it at odd ones.
                Item::unrecorded(300 + 50 * k, Some(300 + 50 * k - 50 * (k % 2)))
            };
            ep.items.insert(at, block);
            for f in &mut ep.findings {
                if f.introduced_at >= at {
                    f.introduced_at += 1;
                }
            }
            for p in &mut ep.probes {
                if p.after_item >= at {
                    p.after_item += 1;
                }
            }
        }
    }
    ep
}

fn without_timing(mut r: EpisodeReplay) -> EpisodeReplay {
    for s in &mut r.steps {
        s.compute_us = 0.0;
    }
    r
}

fn check(ep: &Episode, window: usize) -> Result<(), TestCaseError> {
    let llm = MockLlm::new(MockConfig::default(), tokenizer());
    let fast = Replayer::new(tokenizer(), &llm, window).verifying(true);
    let all = strategies();
    let replays = fast.replay_all(ep, &all).unwrap();
    for (named, fast) in all.iter().zip(replays) {
        // The reference replays with a mock and a tokenizer of its own, their caches empty: answers and
        // counts do not depend on what the fast replay asked first.
        let own = Tokenizer::shared_default().unwrap();
        let fresh = MockLlm::new(MockConfig::default(), Arc::clone(&own));
        let plain = reference::replay(&own, &fresh, window, ep, named).unwrap();
        let (fast, plain) = (without_timing(fast), without_timing(plain));
        prop_assert_eq!(
            fast.steps.len(),
            plain.steps.len(),
            "strategy {}",
            named.name
        );
        for (a, b) in fast.steps.iter().zip(&plain.steps) {
            prop_assert_eq!(a, b, "strategy {}, step {}", named.name, a.step);
        }
        prop_assert_eq!(&fast.probes, &plain.probes, "strategy {}", named.name);
        // The calls made, what becomes llm_calls.jsonl: purpose, step, usage, modelled latency and text.
        prop_assert_eq!(
            fast.calls.len(),
            plain.calls.len(),
            "strategy {}: calls",
            named.name
        );
        for (i, (a, b)) in fast.calls.iter().zip(&plain.calls).enumerate() {
            prop_assert_eq!(a, b, "strategy {}, call {}", named.name, i);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn fast_replay_equals_reference(ep in episode(), window in prop::sample::select(vec![1_500usize, 4_000, 12_000, 128_000])) {
        check(&ep, window)?;
    }
}
