//! Importers: one committed fixture per format, malformed input, and every real trace under ../shared/traces.

use std::path::{Path, PathBuf};

use ctxbench::history::import::import_file;
use ctxbench::history::usage::ProviderUsage;
use ctxbench::history::validate::check_episode;
use ctxbench::{Episode, Item, ItemKind};

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

pub(crate) fn kinds(ep: &Episode) -> Vec<&'static str> {
    ep.items.iter().map(|i| i.kind().as_str()).collect()
}

pub(crate) fn one(name: &str, format: Option<&str>) -> Episode {
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
    assert_eq!(ep.model.as_deref(), Some("gpt-4o"));
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
            "reasoning",
            "assistant_text"
        ]
    );
    assert!(
        matches!(&ep.items[4], Item::ToolResult { is_error: true, name, .. } if &**name == "bash")
    );
    // Thinking goes back within its turn (the tool-use loop); the API strips it from later turns' prompts.
    assert!(matches!(
        &ep.items[5],
        Item::Reasoning {
            sent_back: ctxbench::history::SentBack::Turn,
            ..
        }
    ));
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
    assert_eq!(ep.meta["usage"]["input_tokens"], 1200);
    assert!(ep.stopped);
    assert!(ep
        .findings
        .iter()
        .any(|f| f.evidence == ["/repo/src/bad_module.py"]));
}

#[test]
fn mini_swe_agent_both_formats() {
    let legacy = one("mini_swe_agent_legacy.json", Some("mini-swe-agent"));
    // The command's output comes back as a user message: an observation.
    assert_eq!(
        kinds(&legacy),
        [
            "system",
            "user",
            "assistant_text",
            "tool_result",
            "assistant_text"
        ]
    );
    assert!(matches!(&legacy.items[3], Item::Observation { .. }));
    assert!(
        legacy
            .findings
            .iter()
            .any(|f| f.evidence == ["max_workers"]),
        "{:?}",
        legacy.findings
    );
    let v11 = one("mini_swe_agent_1_1.json", Some("mini-swe-agent"));
    let calls: Vec<u64> = v11.meta["usage"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [321, 380]);
    assert!(v11.stopped);
    assert_eq!(v11.model.as_deref(), Some("deepseek/deepseek-chat"));
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
    assert_eq!(out[0].meta["accumulated_cost"], 0.03);
}

#[test]
fn claude_code_follows_the_parent_chain() {
    let ep = one("claude_code.jsonl", Some("claude-code"));
    assert_eq!(
        kinds(&ep),
        ["user", "tool_call", "tool_result", "assistant_text"]
    );
    assert!(ep.items.iter().all(|i| i.text() != "sidechain"));
    let calls: Vec<u64> = ep.meta["usage"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(calls, [510, 543]);
    // Claude Code's `output_tokens` are streaming placeholders: never reported as completions.
    let usage = ProviderUsage::of(&ep).unwrap();
    assert!(usage.output_unrecorded && usage.output_tokens.is_none());
    assert!(usage.calls.iter().all(|c| c.output_tokens == 0));
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
    // The header, the edit report and the `/run` command never reach the model; aider's note of the commit and
    // the test output it answers do, as observations.
    assert_eq!(
        kinds(&ep),
        [
            "user",
            "assistant_text",
            "tool_result",
            "tool_result",
            "assistant_text"
        ],
        "{:?}",
        ep.items
    );
    assert!(matches!(&ep.items[2], Item::Observation { .. }));
    assert_eq!(
        ep.items[2].text(),
        "I committed the changes with git hash 1a2b3c4 & commit msg: add test"
    );
    assert!(ep.items[1].text().contains("def test_upper"));
    assert!(ep.items[3]
        .text()
        .starts_with("I ran this command:\n\n pytest\n\nAnd got this output:\n\nFAILED"));
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
    // What smolagents sends: its calls as assistant text, the tool's answers as user messages.
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "assistant_text",
            "tool_result",
            "assistant_text"
        ]
    );
    assert!(ep.items[2].text().starts_with("Calling tools:"));
    assert!(matches!(&ep.items[3], Item::Observation { name, .. } if &**name == "web_search"));
    assert_eq!(ep.meta["true_answer"], "1842");
    assert!(ep.stopped);
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
        &ctxbench::run::RunOptions::default(),
    )
    .unwrap();
    assert_eq!(out.report.dataset.episodes, episodes.len());
    assert!(out.report.complete);
    let none = &out.report.strategies[0];
    assert_eq!(
        none.number(ctxbench::metrics::fields::FINAL_RETENTION),
        Some(1.0)
    );
    assert!(
        out.report.strategies[1..]
            .iter()
            .all(|s| s.number(ctxbench::metrics::fields::SAVINGS) > Some(0.0)),
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
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["c1", "->c1", "c1#2", "->c1#2"]);
    assert!(check_episode(&eps[0]).is_empty());
}

/// The recorded calls an imported episode keeps (`meta.usage.calls[].input_tokens`).
pub(crate) fn recorded_calls(ep: &Episode) -> Vec<u64> {
    ctxbench::history::usage::ProviderUsage::of(ep)
        .map(|u| u.calls.iter().map(|c| c.input_tokens).collect())
        .unwrap_or_default()
}

/// aider: an edit block's `>>>>>>> REPLACE` is the model's, `Cost:` continues the token report, commands are
/// not sent, `/run` output the model answers is an observation: one call point per reply, as many as reports.
#[test]
fn aider_edit_blocks_stay_in_their_reply() {
    let ep = one("aider_edit_blocks.md", Some("aider"));
    assert_eq!(
        kinds(&ep),
        [
            "user",
            "assistant_text",
            "tool_result",
            "user",
            "assistant_text",
            "tool_result",
            "assistant_text"
        ],
        "{:?}",
        ep.items
    );
    assert!(
        ep.items[1].text().contains(">>>>>>> REPLACE")
            && ep.items[1].text().ends_with("This removes the backticks.")
    );
    assert!(ep.items[2]
        .text()
        .contains("cb9a5c9 & commit msg: fix: Remove backticks"));
    assert!(
        ep.items[5].text().contains("AssertionError")
            && !ep.items[5].text().contains("Add the output")
    );
    assert_eq!(ep.call_points().len(), 3);
    assert_eq!(recorded_calls(&ep), [5_800, 6_204, 6_900]);
    assert!(ep
        .items
        .iter()
        .all(|i| !i.text().contains("Cost:") && !i.text().starts_with("/add")));
}

/// Claude Code: the results of parallel calls sit on branches of their own; stop-hook feedback (isMeta) was
/// sent; thinking is output. Every call keeps its result and every API call is a call point.
#[test]
fn claude_code_keeps_parallel_results_and_meta_messages() {
    let ep = one("claude_code_parallel.jsonl", Some("claude-code"));
    assert_eq!(
        kinds(&ep),
        [
            "user",
            "reasoning",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "assistant_text",
            "user",
            "assistant_text"
        ],
        "{:?}",
        ep.items
    );
    assert!(ep.items[7].text().starts_with("Stop hook feedback"));
    assert_eq!(ep.call_points(), [1, 6, 8]);
    assert_eq!(recorded_calls(&ep), [3_204, 3_293, 3_345]);
}

/// mini-swe-agent with deepseek-reasoner sends `reasoning_content` back, and DeepSeek takes it within its turn:
/// it is counted in later requests until a new user message.
#[test]
fn mini_swe_agent_sends_reasoning_back() {
    let ep = one("mini_swe_agent_reasoner.json", Some("mini-swe-agent"));
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "reasoning",
            "assistant_text",
            "tool_call",
            "tool_result",
            "reasoning",
            "assistant_text",
            "tool_call"
        ]
    );
    assert!(matches!(
        &ep.items[2],
        Item::Reasoning {
            sent_back: ctxbench::history::SentBack::Turn,
            ..
        }
    ));
    let tok = ctxbench::Tokenizer::shared_default().unwrap();
    let llm = ctxbench::llm::mock::MockLlm::new(
        ctxbench::llm::mock::MockConfig::default(),
        std::sync::Arc::clone(&tok),
    );
    let replay = ctxbench::replay::Replayer::new(tok, &llm, 128_000)
        .replay(
            &ep,
            &ctxbench::strategy::NamedStrategy::new(
                "none",
                ctxbench::strategy::StrategyConfig::None,
            ),
        )
        .unwrap();
    assert_eq!(replay.steps.len(), 2, "the run stopped at its submission");
    assert!(replay.steps[1].tokens_by_kind.get(ItemKind::Reasoning) > 30);
    assert_eq!(recorded_calls(&ep), [412, 603]);
}

/// OpenHands: the system event's tool schemas, the model's own arguments (not the runtime's fields), and an
/// error with no cause as an observation of its own, not a second result of the call before it.
#[test]
fn openhands_tools_arguments_and_orphan_errors() {
    let ep = one("openhands_system_tools.json", Some("openhands"));
    assert_eq!(ep.tools.len(), 2);
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "assistant_text",
            "tool_call",
            "tool_result",
            "tool_result",
            "assistant_text",
            "tool_call"
        ],
        "{:?}",
        ep.items
    );
    // The model called `finish` as a tool: that call ends the run, with no result.
    assert!(
        matches!(&ep.items[7], Item::ToolCall { name, arguments, .. } if &**name == "finish" && &**arguments == "{}")
    );
    assert!(
        matches!(&ep.items[3], Item::ToolCall { arguments, .. } if &**arguments == "{\"command\": \"ls /workspace/repo\"}")
    );
    assert!(matches!(&ep.items[5], Item::Observation { name, .. } if &**name == "error"));
    assert_eq!(recorded_calls(&ep), [2_410, 2_590]);
    assert!(ep.stopped);
    // The tool schemas count in every request.
    let tok = ctxbench::Tokenizer::shared_default().unwrap();
    assert!(tok.count_tools(&ep.tools) > 60);
}

/// `validate` refuses a second result for one call.
#[test]
fn a_second_result_for_one_call_is_a_problem() {
    let mut ep = one("openhands_system_tools.json", Some("openhands"));
    ep.items[5] = Item::tool_result("toolu_1", "error", "again");
    let issues = check_episode(&ep);
    assert!(
        issues
            .iter()
            .any(|i| i.field == "items[5].call_id" && i.message.contains("second result")),
        "{issues:?}"
    );
}

/// SWE-agent in text mode: the demonstration is part of the fixed prompt, the task is the first user message,
/// and the environment's answers are observations, which observation masking (M = 10 turns) acts on.
#[test]
fn swe_agent_text_mode_observations_are_masked() {
    let ep = one("swe_agent_text.traj", Some("swe-agent"));
    assert_eq!(kinds(&ep)[..3], ["system", "system", "user"]);
    assert!(ep.items[2].text().contains("TimeDelta serialization"));
    let observations = ep
        .items
        .iter()
        .filter(|i| matches!(i, Item::Observation { .. }))
        .count();
    assert_eq!(observations, 14);
    assert!(matches!(&ep.items[4], Item::Observation { name, .. } if &**name == "open"));
    // The final submit, missing from the history, is the last call.
    assert!(ep.items.last().unwrap().text().contains("submitting"));
    assert_eq!(ep.call_points().len(), 15);
    let tok = ctxbench::Tokenizer::shared_default().unwrap();
    let llm = ctxbench::llm::mock::MockLlm::new(
        ctxbench::llm::mock::MockConfig::default(),
        std::sync::Arc::clone(&tok),
    );
    let replayer = ctxbench::replay::Replayer::new(tok, &llm, 128_000);
    let masking = ctxbench::strategy::presets::find("complexity_trap_masking").unwrap();
    let none =
        ctxbench::strategy::NamedStrategy::new("none", ctxbench::strategy::StrategyConfig::None);
    let out = replayer.replay_all(&ep, &[none, masking]).unwrap();
    let total = |i: usize| out[i].steps.iter().map(|s| s.tokens_sent).sum::<usize>();
    assert!(
        total(1) < total(0) * 95 / 100,
        "masking saves: {} of {}",
        total(1),
        total(0)
    );
}

/// `ctxbench import DIR` reads every trace under it, names each one's format, warns on stderr about episodes
/// without a found finding needed later and skips files in no known format; a run of it that imports nothing fails and writes
/// nothing.
#[test]
fn import_reads_a_directory_and_fails_when_nothing_is_imported() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    std::fs::create_dir_all(traces.join("nested")).unwrap();
    std::fs::copy(fixture("claude_code.jsonl"), traces.join("a.jsonl")).unwrap();
    std::fs::copy(fixture("swe_agent.traj"), traces.join("nested/b.traj")).unwrap();
    std::fs::write(traces.join("notes.txt"), "not a trace").unwrap();
    std::fs::write(traces.join("README.md"), "# about these traces").unwrap();
    let out_file = dir.path().join("out.jsonl");
    let out = crate::ctxbench(
        &[
            "import",
            traces.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ],
        None,
    );
    let (stdout, stderr) = (crate::text(&out.stdout), crate::text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("a.jsonl: claude-code trace")
            && stdout.contains("b.traj: swe-agent trace")
            && !stdout.contains("warning")
            && stderr.contains("warning: skipped 1 file")
            && stderr.contains("notes.txt: cannot detect the format")
            && !stderr.contains("README.md")
            && !stdout.contains("README.md"),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains("wrote 2 episodes"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(&out_file).unwrap().lines().count(),
        2
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a trace").unwrap();
    let none = dir.path().join("none.jsonl");
    let out = crate::ctxbench(
        &[
            "import",
            empty.to_str().unwrap(),
            "-o",
            none.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::text(&out.stderr).contains("nothing was imported"));
    assert!(!none.exists());
}

/// The README's sample import: every fixture is detected (each file named with its format and its own
/// episodes, the files of one OpenTelemetry folder each with theirs) or refused with the reason; warnings go
/// to stderr, one per cause with a line per file, and counts are singular where they are one.
#[test]
fn the_fixture_folder_imports_every_file_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("mine.jsonl");
    let folder = root_fixture_dir();
    let out = crate::ctxbench(
        &[
            "import",
            folder.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ],
        None,
    );
    let (stdout, stderr) = (crate::text(&out.stdout), crate::text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    let mut files = Vec::new();
    let mut stack = vec![folder.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    for f in &files {
        let name = f.strip_prefix(&folder).unwrap().display().to_string();
        let imported = stdout.contains(&format!("{name}: "));
        let refused = stderr.contains(&format!("{name}: not a trace: "));
        // The spans, logs and metrics of one export are read together: their episodes are the spans file's.
        let joined = name.starts_with("obs/otel_legacy/") && !name.ends_with("traces.jsonl");
        assert!(
            imported || refused || joined,
            "{name} neither imported nor refused\n{stdout}{stderr}"
        );
    }
    assert!(stderr.contains("openhands_session_expected.json: not a trace"));
    assert!(stdout.contains("aider_run_instructions.md: aider trace"));
    // Each episode under the file it came from.
    let span = stdout.find("otel_latest_span.jsonl: otel trace").unwrap();
    let event = stdout.find("otel_latest_event.jsonl: otel trace").unwrap();
    let span_episode = stdout
        .find("'otel_latest_span.jsonl#latest-span-build'")
        .unwrap();
    assert!(
        span < span_episode && (event < span || event > span_episode),
        "{stdout}"
    );
    assert!(stdout.contains("otel_legacy/traces.jsonl: otel trace, 2 episodes"));
    // Plurals, and every warning on stderr, grouped.
    assert!(
        stdout.contains(", 1 probe\n") && stdout.contains(", 1 finding ("),
        "{stdout}"
    );
    assert!(!stdout.contains(" 1 probes") && !stdout.contains(" 1 findings"));
    assert!(!stdout.contains("warning"), "{stdout}");
    assert_eq!(
        stderr
            .matches("episodes without a finding the agent found and needed later:")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("  ") && stderr.lines().all(|l| l.chars().count() <= 100));
}

fn root_fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}
