//! The model of every call, as each importer reads it from the real traces under ../shared/traces (skipped,
//! with a message, when the folder is absent) and from the fixtures.

use std::collections::BTreeMap;

use ctxbench::history::import::import_file;

use crate::root;

/// Each shared trace's episodes, by id, with the models of their call points (the episode's, then every
/// switch as `call point: model`).
fn models_of_traces() -> Option<BTreeMap<String, String>> {
    let traces = crate::traces::imported()?;
    Some(
        traces
            .iter()
            .flat_map(|(_, eps)| eps)
            .map(|ep| {
                let mut m = ep.model.clone().unwrap_or_else(|| "-".into());
                for s in &ep.model_switches {
                    m.push_str(&format!(", {}: {}", s.call_point, s.model));
                }
                (ep.id.clone(), m)
            })
            .collect(),
    )
}

#[test]
fn every_format_of_the_shared_traces_names_the_model_it_records() {
    let Some(models) = models_of_traces() else {
        return;
    };
    let of = |prefix: &str| -> Vec<&str> {
        models
            .iter()
            .filter(|(id, _)| id.starts_with(prefix))
            .map(|(_, m)| m.as_str())
            .collect()
    };
    // Claude Code: `message.model` of every API message.
    for id in [
        "hello-world-script",
        "stop-hook-fast-path-clean",
        "stop-hook-reflection-first-stop",
        "stop-hook-reflection-second-stop",
        "stop-hook-uncommitted-changes",
    ] {
        assert_eq!(of(id), ["claude-opus-4-5-20251101"], "{id}");
    }
    // aider: the header's main model, and the model after each `/model` (session 117's three replies all came
    // after `/model gpt-4o`: the calls to Claude and OpenRouter before it failed); `--mini` is gpt-4o-mini.
    assert_eq!(of("chat-history__session0117"), ["gpt-4o"]);
    assert_eq!(of("chat-history__session0434"), ["gpt-4o-mini"; 2]);
    assert_eq!(
        of("chat-history__session0546"),
        ["claude-3-haiku-20240307"; 3]
    );
    for session in ["0288", "0295", "0343", "0498", "0919", "1046"] {
        let models = of(&format!("chat-history__session{session}"));
        assert!(!models.is_empty(), "{session}");
        assert!(
            models.iter().all(|m| *m == "claude-3-5-sonnet-20240620"),
            "{session}: {models:?}"
        );
    }
    // The website's example has no header: no model.
    assert_eq!(of("website-example"), ["-"]);
    // mini-swe-agent: each raw response's model (the configuration says deepseek/deepseek-chat).
    assert_eq!(of("deepseek_lite_dev"), ["deepseek-chat"]);
    assert_eq!(of("github_issue"), ["-"]);
    // OpenHands: each response's model.
    assert_eq!(
        of("runtime-trajs__basic.json"),
        ["claude-3-5-sonnet-20241022"]
    );
    assert_eq!(
        of("runtime-trajs__basic_interactions"),
        ["gpt-4o-2024-08-06"]
    );
    // smolagents `model_id`, SWE-agent `replay_config.agent.model.name`.
    assert_eq!(of("gpt-4o__code__simpleqa__2025-07-24__line01"), ["gpt-4o"]);
    assert_eq!(of("test-repo__6e44b9"), ["gpt-4o"]);
    assert_eq!(of("ctf_crypto_katy"), ["-"]);
    // tau-bench results do not record the model.
    assert_eq!(of("gpt-4o-airline__idx011"), ["-"]);
}

#[test]
fn fixtures_name_their_models() {
    let import = |name: &str| {
        import_file(&root().join("tests/fixtures").join(name), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let first = |name: &str| import(name).remove(0).model;
    assert_eq!(
        first("import/mini_swe_agent_reasoner.json").as_deref(),
        Some("deepseek/deepseek-reasoner")
    );
    assert_eq!(first("import/openai.json").as_deref(), Some("gpt-4o"));
    assert_eq!(
        first("import/openhands_session.json").as_deref(),
        Some("claude-3-7-sonnet-20250219")
    );
    assert_eq!(
        first("compacted/claude_code_2.1.39_auto_compact.jsonl").as_deref(),
        Some("claude-opus-4-6")
    );
    for ep in import("import/obs/inspect.eval") {
        assert_eq!(ep.model.as_deref(), Some("mockllm/model"), "{}", ep.id);
    }
    for name in [
        "import/obs/otel_latest_span.jsonl",
        "import/obs/openinference.jsonl",
    ] {
        for ep in import(name) {
            assert_eq!(ep.model.as_deref(), Some("gpt-4o-mini"), "{name} {}", ep.id);
        }
    }
    // A trace that names no model leaves the episode without one (the run's configured model applies).
    assert_eq!(first("import/claude_code.jsonl"), None);
    assert_eq!(first("import/tau_bench.json"), None);
}
