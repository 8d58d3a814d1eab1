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
fn imported() -> Option<Vec<(String, Vec<Episode>)>> {
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
fn usage(traces: &[(String, Vec<Episode>)]) -> BTreeMap<String, EpisodeUsage> {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("traces.jsonl");
    let episodes: Vec<Episode> = traces.iter().flat_map(|(_, e)| e.clone()).collect();
    let mut bytes = Vec::new();
    ctxbench::history::dataset::write_episodes(&mut bytes, &episodes).unwrap();
    std::fs::write(&path, bytes).unwrap();
    let tok = Tokenizer::shared_default().unwrap();
    compare(&path, &tok)
        .unwrap()
        .into_iter()
        .map(|u| (u.episode.clone(), u))
        .collect()
}

/// Where a trace records each call's usage, the replay has one call point per recorded call, but for the
/// traces that do not record every call (named here with the reason, checked by hand against the files).
#[test]
fn call_points_match_the_recorded_calls() {
    let Some(traces) = imported() else { return };
    // An aider reply interrupted with ^C has no `Tokens:` report; OpenHands' test trajectories keep no usage
    // for the agent's plain messages (no tool call, so no `tool_call_metadata`).
    let known = [
        ("chat-history__session0343__2024-08-09T19-32-47.md", 11, 10),
        ("runtime-trajs__basic_gui_mode.json", 5, 4),
        ("runtime-trajs__basic_interactions.json", 3, 1),
    ];
    let mut checked = 0;
    for ep in traces.iter().flat_map(|(_, e)| e) {
        let Some(recorded) = ProviderUsage::of(ep).and_then(|u| u.recorded_calls()) else {
            continue;
        };
        let points = ep.call_points().len();
        match known.iter().find(|k| k.0 == ep.id) {
            Some(&(_, p, r)) => assert_eq!((points, recorded), (p, r), "{}", ep.id),
            None => assert_eq!(
                points, recorded,
                "{}: call points against recorded calls",
                ep.id
            ),
        }
        checked += 1;
    }
    assert!(checked >= 14, "{checked} episodes record their calls");
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

/// aider: one call point per assistant reply (an edit block's closing `>>>>>>> REPLACE` stays in it).
#[test]
fn aider_sessions_have_one_call_point_per_reply() {
    let Some(traces) = imported() else { return };
    let mut sessions = 0;
    for ep in traces.iter().flat_map(|(_, e)| e) {
        if ep.source != "import/aider" {
            continue;
        }
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
        sessions += 1;
    }
    assert_eq!(sessions, 4);
}

/// Replayed against recorded prompt tokens (o200k_base), where the figure means something: smolagents'
/// code agent holds its whole prompt and runs gpt-4o (±2%); SWE-agent's `tokens_sent` is litellm's own
/// count of the same messages without the tool schemas (±5%); mini-swe-agent ran deepseek-chat, whose
/// tokenizer and tool template are not o200k's (the gap is pinned so that a change shows); smolagents'
/// tool-calling agent sends tool schemas its trace does not record.
#[test]
fn replay_matches_the_recorded_prompt_tokens() {
    let Some(traces) = imported() else { return };
    let usage = usage(&traces);
    let ratio = |prefix: &str| {
        let (_, u) = usage
            .iter()
            .find(|(id, _)| id.starts_with(prefix))
            .unwrap_or_else(|| panic!("no usage for {prefix}: {:?}", usage.keys()));
        u.ratio.unwrap()
    };
    let within = |prefix: &str, lo: f64, hi: f64| {
        let r = ratio(prefix);
        assert!(
            (lo..=hi).contains(&r),
            "{prefix}: replay/recorded {r:.3} not in {lo}..={hi}"
        );
    };
    within("gpt-4o__code__simpleqa", 0.98, 1.02);
    within("test-repo__6e44b9", 0.95, 1.05);
    within("deepseek_lite_dev__sqlfluff", 0.84, 0.89);
    within("gpt-4o__tool-calling__simpleqa", 0.80, 0.95);
    // Each of mini-swe-agent's calls, past the fixed prompt, grows as the provider's did.
    let ms = usage
        .iter()
        .find(|(id, _)| id.starts_with("deepseek_lite_dev"))
        .unwrap()
        .1;
    assert_eq!(ms.calls.len(), 41);
    let (r0, c0) = ms.calls[0];
    let (rn, cn) = *ms.calls.last().unwrap();
    #[allow(clippy::cast_precision_loss)]
    let growth = (rn - r0) as f64 / (cn.input_tokens - c0.input_tokens) as f64;
    assert!((0.85..=1.0).contains(&growth), "growth ratio {growth:.3}");
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
