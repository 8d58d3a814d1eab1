//! Episodes of the real traces under ../shared/traces counted in the model's tokens, at the k import fitted
//! from their record. Skipped, with a message, when the folder is absent.

use std::collections::BTreeMap;

use ctxbench::history::usage::ProviderUsage;
use ctxbench::Tokenizer;

use crate::traces::{imported, usage};

/// Where the fit vouches for k (fitted within 0.5–2 from more calls than parameters, no call past 3%, at least
/// 1), import counts the episode at it: the three Claude Code sessions with three or more calls at k
/// 1.48–1.60 and OpenHands' basic_gui_mode and wrong_initial_state at 1.230 and 1.703; the two-call session (0 by construction), the
/// one-call session, every aider context (gpt-4o given 1, or fitted by construction) and OpenHands' fits
/// below 1 stay at 1. Counted at k, the
/// baseline still equals every call's record, each block is within 1% of the fit's U, and the fit of that
/// replay reads import's k.
#[test]
fn claude_code_sessions_are_counted_in_the_models_tokens() {
    let Some(mut traces) = imported() else { return };
    let tok = Tokenizer::shared_default().unwrap();
    let mut counted = BTreeMap::new();
    for ep in traces.iter_mut().flat_map(|(_, e)| e.iter_mut()) {
        if let Ok(c) = ctxbench::replay::unrecorded::calibrate(ep, &tok).unwrap() {
            let recorded = ProviderUsage::of(ep).unwrap().counted_at_k;
            assert_eq!(recorded, Some(c.k.unwrap_or(1.0)), "{}", ep.id);
            if let Some(k) = c.k {
                counted.insert(ep.id.clone(), (ep.source.clone(), k));
            }
        }
    }
    eprintln!("counted at k: {counted:?}");
    let claude: Vec<&str> = counted
        .iter()
        .filter(|(_, (s, _))| s == "import/claude-code")
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(
        claude,
        [
            "hello-world-script.jsonl",
            "stop-hook-reflection-first-stop.jsonl",
            "stop-hook-uncommitted-changes.jsonl"
        ]
    );
    assert!(counted
        .values()
        .filter(|(s, _)| s == "import/claude-code")
        .all(|(_, k)| (1.48..=1.61).contains(k)));
    // Of the rest, OpenHands' basic_gui_mode at 1.230 and wrong_initial_state at 1.703 (Claude 3.5 Sonnet); no aider context
    // (gpt-4o's is given 1, the others' fits are by construction), and neither of OpenHands' fits below 1.
    let others: Vec<(&str, f64)> = counted
        .iter()
        .filter(|(_, (s, _))| s != "import/claude-code")
        .map(|(id, (_, k))| (id.as_str(), *k))
        .collect();
    let ids: Vec<&str> = others.iter().map(|o| o.0).collect();
    assert_eq!(
        ids,
        [
            "runtime-trajs__basic_gui_mode.json",
            "runtime-trajs__wrong_initial_state.json"
        ],
        "{others:?}"
    );
    assert!(
        (others[0].1 - 1.230).abs() < 5e-4 && (others[1].1 - 1.703).abs() < 5e-4,
        "{others:?}"
    );
    for u in usage(&traces).values() {
        let Some(&(_, k)) = counted.get(&u.episode) else {
            continue;
        };
        let fit = u.fit.as_ref().unwrap();
        assert_eq!(fit.counted_at, Some(k), "{}", u.episode);
        assert!(fit.k == k && fit.k_fitted, "{}: {fit:?}", u.episode);
        for c in &u.calls {
            assert_eq!(
                c.replayed as u64, c.recorded.input_tokens,
                "{} call {}",
                u.episode, c.call_point
            );
        }
        if u.source == "import/claude-code" {
            let uu = fit.segments[0].1.unwrap();
            let block = u.unrecorded_tokens as f64 / u.calls.len() as f64;
            assert!(
                (block / uu - 1.0).abs() < 0.01,
                "{}: {block} vs U {uu}",
                u.episode
            );
        }
    }
}
