//! What to pick on users' own traces: the README's sample import at `--window 8000` recommends nothing that
//! did not earn it where it acted, flags the budgets that cannot work, and a Claude Code session without
//! found findings says retention measured nothing instead of recommending.

use serde_json::Value;

fn import_and_run(source: &std::path::Path, window: &str) -> (String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("mine.jsonl");
    let out = dir.path().join("run");
    let o = crate::ctxbench(
        &[
            "import",
            source.to_str().unwrap(),
            "-o",
            data.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", crate::text(&o.stderr));
    let o = crate::ctxbench(
        &[
            "run",
            "--dataset",
            data.to_str().unwrap(),
            "--window",
            window,
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    let stdout = crate::text(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", crate::text(&o.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (stdout, summary)
}

/// The sample: the sliding window's 1,000-token budget (an eighth of 8,000) is below what no strategy may
/// reduce (tau-bench's 1,367 tokens of tool schemas, the unrecorded context of the aider and Claude Code
/// sessions), so it is flagged with both sizes and never recommended, however much it kept pooled; that
/// context is over the window on two sessions, so every strategy sends requests over it and says so; the
/// imported formats' replay against their usage is said.
#[test]
fn the_readme_sample_recommends_only_on_evidence() {
    let (stdout, summary) = import_and_run(&crate::root().join("tests/fixtures/import"), "8000");
    let rec = &summary["recommendation"];
    assert_ne!(rec["strategy"], "sliding_window", "{rec}");
    let standing = |name: &str| {
        rec["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["strategy"] == name)
            .unwrap_or_else(|| panic!("no verdict for {name}: {rec}"))["standing"]
            .clone()
    };
    // Two of the sessions need more than 8,000 tokens of what no strategy may reduce: every strategy sends
    // requests over the window, the window is too small for these traces, and no sweep at it is offered.
    for name in ["sliding_window", "compaction", "summarization", "pipeline"] {
        assert_eq!(standing(name), "over_window", "{name}");
    }
    assert!(
        stdout.contains("token window is too small for these traces"),
        "{stdout}"
    );
    assert!(!stdout.contains("--window 8000"), "{stdout}");
    let window = summary["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["strategy"] == "sliding_window")
        .unwrap();
    assert_eq!(window["budget_tokens"], 1000);
    assert!(window["floor_tokens"].as_u64().unwrap() > 1000);
    assert!(window["episodes_below_floor"].as_u64().unwrap() > 0);
    // The reading is wrapped at 100 columns.
    let flat = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Its budget (1,000 tokens) is below what no strategy may reduce"),
        "{stdout}"
    );
    // The baseline is known by its type and given no verdict.
    assert_eq!(summary["strategies"][0]["baseline"], true);
    assert!(rec["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["strategy"] != "none"));
    // Per format, the replay against the usage the traces record.
    let formats: Vec<&str> = summary["fidelity"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["format"].as_str())
        .collect();
    assert!(
        formats.contains(&"claude-code") && formats.contains(&"aider"),
        "{formats:?}"
    );
    assert!(
        stdout.contains("claude-code: 2 of 2 episodes record usage; the baseline replays 1.000"),
        "{stdout}"
    );
}

/// A public Claude Code session: no finding the agent found is needed, and what no strategy may reduce is
/// over the window, so nothing is recommended, and the report says why; 98% of its input is context the
/// session did not record.
#[test]
fn a_claude_code_session_says_retention_measured_nothing() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    let session = files
        .iter()
        .find(|f| f.ends_with("claude-code/stop-hook-uncommitted-changes.jsonl"))
        .expect("the shared Claude Code session");
    let (stdout, summary) = import_and_run(session, "8000");
    assert!(
        summary["recommendation"]["strategy"].is_null(),
        "{}",
        summary["recommendation"]
    );
    assert!(
        stdout.contains("no finding the agent found was needed there"),
        "{stdout}"
    );
    // Its 18,789 tokens of unrecorded context are over the window: too small for the session, whatever the
    // strategy.
    assert!(
        stdout.contains("The 8,000-token window is too small for these traces"),
        "{stdout}"
    );
    assert!(
        stdout
            .replace('\n', " ")
            .contains("of the input is context the traces did not record"),
        "{stdout}"
    );
}
