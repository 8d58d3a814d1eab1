//! Importers: one committed fixture per format, malformed input, and every real trace under ../shared/traces.

use std::path::{Path, PathBuf};

use ctxbench::history::import::import_file;
use ctxbench::history::validate::check_episode;
use ctxbench::{Episode, Item, ItemKind};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn kinds(ep: &Episode) -> Vec<&'static str> {
    ep.items.iter().map(|i| i.kind().as_str()).collect()
}

fn one(name: &str, format: Option<&str>) -> Episode {
    let mut eps = import_file(&fixture(name), format).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(eps.len(), 1, "{name}");
    let ep = eps.remove(0);
    assert_eq!(check_episode(&ep), vec![], "{name}");
    // Auto detection agrees with the explicit format.
    let auto = import_file(&fixture(name), None).unwrap();
    assert_eq!(auto[0].items, ep.items, "{name}: auto detection");
    ep
}

#[test]
fn openai_messages() {
    let ep = one("openai.json", Some("openai"));
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "tool_call",
            "tool_result",
            "assistant_text"
        ]
    );
    assert_eq!(ep.meta["model"], "gpt-4o");
    // The path the tool revealed and the assistant used again is an automatic artifact finding.
    assert!(
        ep.findings
            .iter()
            .any(|f| f.evidence == ["build/config.mk"] && f.introduced_at == 3),
        "{:?}",
        ep.findings
    );
}

#[test]
fn anthropic_blocks() {
    let ep = one("anthropic.json", Some("anthropic"));
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "assistant_text",
            "tool_call",
            "tool_result",
            "assistant_text"
        ]
    );
    assert!(
        matches!(&ep.items[4], Item::ToolResult { is_error: true, name, .. } if &**name == "bash")
    );
}

#[test]
fn swe_agent_traj() {
    let ep = one("swe_agent.traj", Some("swe-agent"));
    assert_eq!(
        ep.items
            .iter()
            .filter(|i| i.kind() == ItemKind::ToolResult)
            .count(),
        2
    );
    assert_eq!(ep.meta["model_stats"]["tokens_sent"], 1200);
    assert!(ep
        .findings
        .iter()
        .any(|f| f.evidence == ["/repo/src/bad_module.py"]));
}

#[test]
fn mini_swe_agent_both_formats() {
    let legacy = one("mini_swe_agent_legacy.json", Some("mini-swe-agent"));
    assert_eq!(
        kinds(&legacy),
        ["system", "user", "assistant_text", "user", "assistant_text"]
    );
    assert!(
        legacy
            .findings
            .iter()
            .any(|f| f.evidence == ["max_workers"]),
        "{:?}",
        legacy.findings
    );
    let v11 = one("mini_swe_agent_1_1.json", Some("mini-swe-agent"));
    assert_eq!(
        v11.meta["provider_prompt_tokens"],
        serde_json::json!([321, 380])
    );
    assert_eq!(v11.meta["model"], "deepseek/deepseek-chat");
    assert!(
        !kinds(&v11).is_empty()
            && v11
                .items
                .iter()
                .all(|i| !i.text().starts_with("diff --git")),
        "exit is skipped"
    );
}

#[test]
fn openhands_streams() {
    let ep = one("openhands_events.json", Some("openhands"));
    assert_eq!(
        kinds(&ep),
        [
            "user",
            "assistant_text",
            "tool_call",
            "tool_result",
            "assistant_text"
        ]
    );
    assert!(
        matches!(&ep.items[2], Item::ToolCall { id, name, .. } if &**id == "toolu_9" && &**name == "execute_bash")
    );
    let out = import_file(&fixture("openhands_output.jsonl"), Some("openhands")).unwrap();
    assert_eq!(out[0].id, "openhands_output.jsonl#repo__1");
    assert_eq!(
        kinds(&out[0]),
        ["user", "assistant_text", "tool_call", "tool_result"]
    );
    assert_eq!(out[0].meta["metrics"]["accumulated_cost"], 0.03);
}

#[test]
fn claude_code_follows_the_parent_chain() {
    let ep = one("claude_code.jsonl", Some("claude-code"));
    assert_eq!(
        kinds(&ep),
        ["user", "tool_call", "tool_result", "assistant_text"]
    );
    assert!(ep.items.iter().all(|i| i.text() != "sidechain"));
    assert_eq!(
        ep.meta["provider_prompt_tokens"],
        serde_json::json!([510, 543])
    );
}

#[test]
fn tau_bench_result() {
    let ep = one("tau_bench.json", Some("tau-bench"));
    assert_eq!(ep.task, "Cancel reservation ABC123");
    assert_eq!(ep.meta["reward"], 1.0);
    assert!(ep.findings.iter().any(|f| f.evidence == ["1234"]));
}

#[test]
fn aider_markdown() {
    let ep = one("aider.md", Some("aider"));
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "assistant_text",
            "user",
            "user",
            "user",
            "assistant_text"
        ],
        "{:?}",
        ep.items
    );
    assert!(ep.items[2].text().contains("def test_upper"));
    assert!(
        ep.findings
            .iter()
            .any(|f| f.evidence == ["test_lower_ascii"]),
        "{:?}",
        ep.findings
    );
}

#[test]
fn smolagents_run() {
    let mut eps = import_file(&fixture("smolagents.jsonl"), Some("smolagents")).unwrap();
    let ep = eps.remove(0);
    assert_eq!(check_episode(&ep), vec![]);
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "tool_call",
            "tool_result",
            "assistant_text"
        ]
    );
    assert!(
        matches!(&ep.items[2], Item::ToolCall { id, name, .. } if &**id == "call_z" && &**name == "web_search")
    );
    assert_eq!(ep.meta["true_answer"], "1842");
}

/// Wrong-format imports name the file and the line (the malformed-trace corpus is tests/fixtures/bad/import).
#[test]
fn a_trace_read_as_another_format_names_file_and_line() {
    let err = import_file(&fixture("swe_agent.traj"), Some("claude-code"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("swe_agent.traj") && err.contains("line 1"),
        "{err}"
    );
    let err = import_file(&fixture("aider.md"), Some("claude-code"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("aider.md") && err.contains("line 1"), "{err}");
}

/// Every real trace imports, validates and replays through every default strategy.
#[test]
fn every_shared_trace_imports_validates_and_replays() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    assert!(files.len() >= 26, "{files:?}");
    let mut episodes = Vec::new();
    for f in &files {
        let eps = import_file(f, None).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for ep in &eps {
            assert_eq!(check_episode(ep), vec![], "{}", ep.id);
        }
        episodes.extend(eps);
    }
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("traces.jsonl");
    let mut bytes = Vec::new();
    ctxbench::history::dataset::write_episodes(&mut bytes, &episodes).unwrap();
    std::fs::write(&data, bytes).unwrap();
    let config = ctxbench::run::RunConfig {
        context_window: 8_000,
        ..Default::default()
    };
    let out = ctxbench::run::run(
        &config,
        &data,
        &tmp.path().join("run"),
        "traces",
        &(),
        false,
    )
    .unwrap();
    assert_eq!(out.report.dataset.episodes, episodes.len());
    assert!(out.report.complete);
    let none = &out.report.strategies[0];
    assert_eq!(none.number("final_retention"), Some(1.0));
    assert!(
        out.report.strategies[1..]
            .iter()
            .all(|s| s.number("savings") > Some(0.0)),
        "{:?}",
        out.report.strategies
    );
}

/// A trace that reuses a call id (SWE-agent demonstrations do) imports with a fresh id for the reuse, and each
/// result answers the latest call with its recorded id.
#[test]
fn reused_call_ids_become_unique() {
    let text = r#"[
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "b"}
    ]"#;
    let eps = ctxbench::history::import::import_text(text, Path::new("reuse.json"), Some("openai"))
        .unwrap();
    let ids: Vec<String> = eps[0]
        .items
        .iter()
        .filter_map(|i| match i {
            Item::ToolCall { id, .. } => Some(id.to_string()),
            Item::ToolResult { call_id, .. } => Some(format!("->{call_id}")),
            Item::Message { .. } => None,
        })
        .collect();
    assert_eq!(ids, ["c1", "->c1", "c1#2", "->c1#2"]);
    assert!(check_episode(&eps[0]).is_empty());
}
