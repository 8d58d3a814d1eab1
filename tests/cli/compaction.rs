//! Traces whose agent compacted its own context. Inspect AI logs written by inspect-ai itself with each of its
//! compaction strategies (`tests/fixtures/compacted`, rewritten by `scripts/make_obs_fixtures.sh`), and
//! a public Claude Code 2.1.39 session with an auto-compact (marot/spotter, MIT), trimmed by
//! `scripts/trim_claude_session.py`; the whole sessions, an auto-compact and a `/compact`, where
//! `CTXBENCH_COMPACTED_SESSIONS` names their folder. The
//! import keeps the uncompacted history as the episode and what the agent sent as `as_recorded`, which must
//! send the recorded model inputs call by call.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ctxbench::history::recorded::RecordedCompaction;
use ctxbench::history::usage::ProviderUsage;
use ctxbench::history::{import, Item};
use ctxbench::llm::mock::{MockConfig, MockLlm};
use ctxbench::llm::LlmRequest;
use ctxbench::replay::{Observer, Replayer};
use ctxbench::strategy::{Applied, AsRecordedConfig, NamedStrategy, StrategyConfig};
use ctxbench::{Episode, Tokenizer};
use serde_json::Value;

use super::{ctxbench, root, text};

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/compacted").join(name)
}

fn as_recorded() -> NamedStrategy {
    NamedStrategy::new(
        "as_recorded",
        StrategyConfig::AsRecorded(AsRecordedConfig::default()),
    )
}

/// Every request a replay sent, in order.
#[derive(Default)]
struct Sent(Mutex<Vec<LlmRequest>>);

impl Observer for Sent {
    fn observe(&self, _: &str, _: usize, _: &LlmRequest, sent: &LlmRequest, _: &Applied) {
        self.0.lock().unwrap().push(sent.clone());
    }
}

/// The requests `strategy` sends at each call point of `episode`, and their tokens (with or without the
/// context the trace did not record).
fn replay(
    episode: &Episode,
    strategy: &NamedStrategy,
    unrecorded: bool,
) -> (Vec<LlmRequest>, Vec<usize>) {
    let tok = Tokenizer::shared_default().unwrap();
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let sent = Sent::default();
    let replay = Replayer::new(tok, &llm, usize::MAX)
        .with_unrecorded(unrecorded)
        .observed(&sent)
        .replay(episode, strategy)
        .unwrap();
    let tokens = replay.steps.iter().map(|s| s.tokens_sent).collect();
    (sent.0.into_inner().unwrap(), tokens)
}

/// The sample of an Inspect `.eval` log, its `attachment://` strings resolved.
fn sample(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let name = zip
        .file_names()
        .find(|n| n.starts_with("samples/"))
        .unwrap()
        .to_owned();
    let mut text = String::new();
    zip.by_name(&name)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let mut sample: Value = serde_json::from_str(&text).unwrap();
    let attachments = sample["attachments"].clone();
    fn resolve(v: &mut Value, a: &Value) {
        match v {
            Value::String(s) => {
                if let Some(t) = s.strip_prefix("attachment://").and_then(|k| a[k].as_str()) {
                    *s = t.to_owned();
                }
            }
            Value::Array(x) => x.iter_mut().for_each(|v| resolve(v, a)),
            Value::Object(o) => o.values_mut().for_each(|v| resolve(v, a)),
            _ => {}
        }
    }
    resolve(&mut sample, &attachments);
    sample
}

/// What a message says, as a list of keys that an item of the same message has too: a role and its text, a
/// call id, a result's call id and content.
fn message_keys(m: &Value) -> Vec<String> {
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let role = m["role"].as_str().unwrap();
    let mut keys = Vec::new();
    match role {
        "tool" => keys.push(format!(
            "result {} {text}",
            m["tool_call_id"].as_str().unwrap()
        )),
        _ => {
            if !text.trim().is_empty() {
                keys.push(format!("{role} {text}"));
            }
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                keys.push(format!("call {}", c["id"].as_str().unwrap()));
            }
        }
    }
    keys
}

fn item_keys(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .filter(|i| i.is_sent())
        .map(|i| match i {
            Item::ToolResult {
                call_id, content, ..
            } => format!("result {call_id} {content}"),
            Item::ToolCall { id, .. } => format!("call {id}"),
            other => format!("{} {}", other.wire_role(), other.text()),
        })
        .collect()
}

/// The inputs of the agent's own model calls (not the summarizer's), from the log's model events.
fn agent_inputs(sample: &Value) -> Vec<Vec<String>> {
    let pool = sample["events_data"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    sample["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "model")
        .map(|e| match e["input"].as_array().filter(|i| !i.is_empty()) {
            Some(input) => input.clone(),
            None => e["input_refs"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| {
                    let (a, b) = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
                    pool[usize::try_from(a).unwrap()..usize::try_from(b).unwrap()].to_vec()
                })
                .collect(),
        })
        .filter(|input| {
            !input
                .last()
                .and_then(|m| m["content"].as_str())
                .is_some_and(|t| t.contains("tasked with summarizing conversations"))
        })
        .map(|input| input.iter().flat_map(message_keys).collect())
        .collect()
}

#[test]
fn inspect_logs_replay_what_the_agent_sent_call_by_call_and_keep_the_history_whole() {
    for (name, compactions) in [
        ("inspect_summary.eval", 2),
        ("inspect_trim.eval", 2),
        ("inspect_edit.eval", 3),
    ] {
        let path = fixture(name);
        let episodes = import::import_file(&path, None).unwrap();
        let ep = &episodes[0];
        // The history: no summary the compaction wrote, every tool result whole.
        assert!(ep.items.iter().all(|i| !i.is_summary()), "{name}");
        assert!(ep
            .items
            .iter()
            .any(|i| i.text().contains("zlib_inflate_init")));
        let recorded = RecordedCompaction::of(ep).unwrap();
        assert_eq!(recorded.compactions.len(), compactions, "{name}");
        // What as_recorded sends is what the agent's model events were sent, call by call.
        let expected = agent_inputs(&sample(&path));
        let (sent, tokens) = replay(ep, &as_recorded(), true);
        assert_eq!(sent.len(), expected.len(), "{name}: call points");
        for (k, (request, input)) in sent.iter().zip(&expected).enumerate() {
            assert_eq!(&item_keys(&request.contents), input, "{name}, call {k}");
        }
        // Its tokens are what the trace records (gpt-4o's count of each request, within the chat accounting's
        // rounding); the uncompacted baseline's are more once the agent compacted.
        let usage = ProviderUsage::of(ep).unwrap();
        let (_, baseline) = replay(ep, &NamedStrategy::new("none", StrategyConfig::None), true);
        let first = recorded.compactions[0].call_point;
        for (k, call) in usage.calls.iter().enumerate() {
            let recorded = usize::try_from(call.input_tokens).unwrap();
            assert!(
                tokens[k].abs_diff(recorded) * 100 <= recorded,
                "{name}, call {k}: {} vs {recorded}",
                tokens[k]
            );
            if k >= first {
                assert!(baseline[k] > recorded + 100, "{name}, call {k}");
            }
        }
        // The summarizer's calls (summary only) are reported with their recorded usage.
        let summarized = recorded
            .compactions
            .iter()
            .filter(|c| c.llm_input_tokens.is_some())
            .count();
        assert_eq!(
            summarized,
            if name.contains("summary") { 2 } else { 0 },
            "{name}"
        );
    }
}

#[test]
fn a_run_on_compacted_traces_compares_the_agents_own_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("compacted.jsonl");
    let out = dir.path().join("run");
    // The Inspect logs (the Claude Code session's figures are mostly the context it did not record).
    let logs: Vec<PathBuf> = [
        "inspect_summary.eval",
        "inspect_trim.eval",
        "inspect_edit.eval",
    ]
    .iter()
    .map(|f| fixture(f))
    .collect();
    let mut args = vec!["import"];
    args.extend(logs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", data.to_str().unwrap()]);
    let import = ctxbench(&args, None);
    assert!(import.status.success(), "{}", text(&import.stderr));
    let run = ctxbench(
        &[
            "run",
            "--dataset",
            data.to_str().unwrap(),
            "--strategies",
            "none,compaction",
            "--window",
            "1200",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let names: Vec<&str> = summary["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["none", "as_recorded", "compaction"]);
    let row = &summary["strategies"][1];
    assert!(row["savings"].as_f64().unwrap() > 0.2, "{row}");
    // The agent's summaries dropped the fact its last turn needed; the trim and the edit dropped it too.
    assert!(row["retention_at_need"].as_f64().unwrap() < 0.5, "{row}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| as_recorded |"), "{report}");
    // A dataset without such a trace gets no such row.
    let plain = dir.path().join("plain.jsonl");
    let obs = root().join("tests/fixtures/import/obs/inspect.json");
    assert!(ctxbench(
        &[
            "import",
            obs.to_str().unwrap(),
            "-o",
            plain.to_str().unwrap()
        ],
        None
    )
    .status
    .success());
    let out = dir.path().join("plain");
    let run = ctxbench(
        &[
            "run",
            "--dataset",
            plain.to_str().unwrap(),
            "--strategies",
            "none",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(!summary.contains("as_recorded"));
}

/// Checks a Claude Code session with one compaction: the history whole, every recorded call a call point, the
/// compaction's record, the summary opening every request after it, and `as_recorded` calibrated equal to the
/// record call by call. `whole`: the session as Claude Code wrote it (not trimmed), whose replay is close to its
/// record, so that the uncompacted baseline is over the record after the boundary.
fn check_claude_code(
    path: &Path,
    trigger: &str,
    pre: u64,
    call_point: usize,
    prompt: u64,
    whole: bool,
) {
    let tok = Tokenizer::shared_default().unwrap();
    let name = path.display();
    // Found without --format: a 2.1 session opens with a file-history snapshot.
    let mut ep = import::import_file(path, None).unwrap().remove(0);
    let usage = ProviderUsage::of(&ep).unwrap();
    // The walk goes through progress records and back over the boundary: every call is a call point.
    assert_eq!(ep.call_points().len(), usage.calls.len(), "{name}");
    assert!(ep.items.len() > 400, "{name}");
    assert!(ep.items.iter().all(|i| !i.is_summary()), "{name}");
    let recorded = RecordedCompaction::of(&ep).unwrap();
    let c = &recorded.compactions[0];
    assert_eq!(
        (c.kind.as_str(), c.tokens_before, c.call_point),
        (trigger, Some(pre), call_point),
        "{name}"
    );
    assert_eq!(usage.calls[call_point].input_tokens, prompt, "{name}");
    // The summary Claude Code sent opens each request after the boundary, then what followed it.
    let (sent, as_sent) = replay(&ep, &as_recorded(), false);
    let (baseline_sent, baseline) = replay(
        &ep,
        &NamedStrategy::new("none", StrategyConfig::None),
        false,
    );
    for k in call_point..sent.len() {
        assert!(
            sent[k].contents[0]
                .text()
                .starts_with("This session is being continued from a previous conversation"),
            "{name}, call {k}"
        );
        assert!(
            sent[k].contents.len() < baseline_sent[k].contents.len(),
            "{name}, call {k}"
        );
    }
    // Before it, the history as recorded.
    assert_eq!(as_sent[..call_point], baseline[..call_point], "{name}");
    // Without the context the session leaves out (system prompt, tools, files put back), what Claude Code sent
    // is under its record at every call; the uncompacted baseline is over it after the boundary.
    for (k, call) in usage.calls.iter().enumerate() {
        let record = usize::try_from(call.input_tokens).unwrap();
        assert!(as_sent[k] < record, "{name}, call {k}");
        if whole && k >= call_point {
            assert!(baseline[k] > record, "{name}, call {k}");
        }
    }
    if whole {
        // What the import sizes as left out after the boundary is what it was at the session's start, give or
        // take the files Claude Code put back: between 0.8 and 2 times the first call's.
        let first_gap = usage.calls[0].input_tokens as f64 - as_sent[0] as f64;
        let after = prompt as f64 - as_sent[call_point] as f64;
        assert!(
            (0.8..2.0).contains(&(after / first_gap)),
            "{name}: {after} / {first_gap}"
        );
    }
    // Calibrated, the replay of as_recorded is the record, call by call.
    ctxbench::replay::unrecorded::calibrate(&mut ep, &tok)
        .unwrap()
        .unwrap();
    let (_, calibrated) = replay(&ep, &as_recorded(), true);
    for (k, call) in usage.calls.iter().enumerate() {
        assert_eq!(calibrated[k] as u64, call.input_tokens, "{name}, call {k}");
    }
}

/// A public Claude Code 2.1.39 session with an auto-compact (marot/spotter, MIT), trimmed to 270 KB by
/// `scripts/trim_claude_session.py` (every record and the parent chain kept; long texts cut in the middle, ids
/// shortened, runs of progress records reduced to their first one, fields the importer never reads removed).
#[test]
fn a_claude_code_session_keeps_the_whole_history_and_replays_what_claude_code_sent() {
    let path = fixture("claude_code_2.1.39_auto_compact.jsonl");
    check_claude_code(&path, "auto", 167_094, 102, 33_960, false);
}

/// The same on the whole public sessions (2.7 MB each, too large to commit): an auto-compact and a `/compact`,
/// `test/fixtures/transcripts/` of marot/spotter at 0c7102a37a16a869d8e069b168cb3ab0d7441c12, in the folder
/// `CTXBENCH_COMPACTED_SESSIONS` names; skipped, saying so, without it.
#[test]
fn whole_claude_code_sessions_replay_what_claude_code_sent() {
    let Some(dir) = std::env::var_os("CTXBENCH_COMPACTED_SESSIONS").map(PathBuf::from) else {
        eprintln!(
            "skipping: CTXBENCH_COMPACTED_SESSIONS names no folder of the whole public sessions"
        );
        return;
    };
    for (file, trigger, pre, call_point, prompt) in [
        (
            "258c7280-ae70-4798-800f-63464d01a85d.jsonl",
            "auto",
            167_094,
            102,
            33_960,
        ),
        (
            "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
            "manual",
            142_431,
            138,
            45_263,
        ),
    ] {
        let path = dir.join(file);
        if !path.is_file() {
            eprintln!("skipping: {} is absent", path.display());
            continue;
        }
        check_claude_code(&path, trigger, pre, call_point, prompt, true);
    }
}
