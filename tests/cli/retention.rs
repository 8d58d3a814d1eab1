//! Retention that can fail: the bundled run against the committed `reports/example` byte for byte, the matching
//! rule on texts taken from the real traces, and what masking every tool result keeps of them at the first
//! need. The real traces are read from ../shared/traces (skipped, with a message, when absent).

use std::path::Path;

use ctxbench::history::evidence::{holds, reading, Reading};
use ctxbench::{Episode, Item};

use crate::{ctxbench, root, text};

/// The bundled run (`ctxbench run --name example --out reports/example`, as the committed report was made)
/// equals `reports/example` byte for byte in every CSV, JSON, Markdown and HTML file the folder holds; wall
/// clock (`timings.csv`), charts and `llm_calls.jsonl` (left out of the repository) aside. A figure that moves
/// fails here until `reports/example` is regenerated with the command above.
#[test]
fn the_bundled_run_equals_reports_example() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("example");
    let o = ctxbench(
        &["run", "--name", "example", "--out", out.to_str().unwrap()],
        None,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let committed = root().join("reports/example");
    let mut compared = 0;
    for entry in std::fs::read_dir(&committed).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let published = [".csv", ".json", ".md", ".html"]
            .iter()
            .any(|ext| name.ends_with(ext));
        if name == "timings.csv" || !published {
            continue;
        }
        let want = std::fs::read(committed.join(&name)).unwrap();
        let got = std::fs::read(out.join(&name)).unwrap();
        if want != got {
            let (w, g) = (text(&want), text(&got));
            let line = w
                .lines()
                .zip(g.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| w.lines().count().min(g.lines().count()));
            panic!(
                "reports/example/{name} differs from the bundled run at line {} (regenerate it: ctxbench run \
                 --name example --out reports/example):\n  committed: {:?}\n  now:       {:?}",
                line + 1,
                w.lines().nth(line).unwrap_or(""),
                g.lines().nth(line).unwrap_or("")
            );
        }
        compared += 1;
    }
    assert!(compared >= 6, "{compared} files compared");
}

/// The first item of the episode of `file` whose text contains `needle`.
fn item<'t>(traces: &'t [(String, Vec<Episode>)], file: &str, needle: &str) -> &'t Item {
    traces
        .iter()
        .filter(|(name, _)| name.starts_with(file))
        .flat_map(|(_, eps)| eps.iter().flat_map(|e| &e.items))
        .find(|i| i.searchable().contains(needle))
        .unwrap_or_else(|| panic!("{file}: no item holds {needle:?}"))
}

/// The matching rule on texts of the real traces: (trace, a string that picks the item, evidence, kept). Each
/// item is read as the replay reads it (a tool output or call exactly, the agent's messages as its words).
#[test]
fn real_pairs_hold_as_the_rule_says() {
    let Some(traces) = crate::traces::imported() else {
        return;
    };
    let pairs: [(&str, &str, &str, bool); 14] = [
        // tau-bench: a user id, a date, a flight number; the agent's own account of the price.
        (
            "gpt-4o-airline__idx011",
            "\"reservation_id\": \"G72NSF\"",
            "7015",
            false,
        ),
        (
            "gpt-4o-airline__idx011",
            "\"reservation_id\": \"G72NSF\"",
            "ivan_muller_7015",
            true,
        ),
        (
            "gpt-4o-airline__idx011",
            "The current time is 2024-05-15",
            "202",
            false,
        ),
        (
            "gpt-4o-airline__idx011",
            "\"reservation_id\": \"G72NSF\"",
            "097",
            false,
        ),
        (
            "gpt-4o-airline__idx011",
            "The total cost for the booking is $375",
            "total price is 375",
            true,
        ),
        (
            "gpt-4o-airline__idx011",
            "The total cost for the booking is $375",
            "total price is 329",
            false,
        ),
        (
            "gpt-4o-airline__idx011",
            "with a balance of $500",
            "certificate_8998287",
            false,
        ),
        // A tool call's arguments name the flight; they do not say it was booked.
        (
            "gpt-4o-airline__idx011",
            "{\"user_id\":\"ivan_muller_7015\",\"origin\"",
            "booked flight HAT097",
            false,
        ),
        // SWE-agent's marshmallow fix: the agent restates the task's figure in its words.
        (
            "demo_function_calling_replace",
            "The output has changed from 344 to 345",
            "Output of this snippet is `344`",
            true,
        ),
        (
            "demo_function_calling_replace",
            "The output has changed from 344 to 345",
            "Output of this snippet is `343`",
            false,
        ),
        // mini-swe-agent on sqlfluff: a rule file named by its rule alone is not its path.
        (
            "deepseek_lite_dev__sqlfluff",
            "Let me examine the L060 rule file",
            "src/sqlfluff/rules/L060.py",
            false,
        ),
        (
            "deepseek_lite_dev__sqlfluff",
            "replaces IFNULL/NVL with COALESCE",
            "IFNULL",
            true,
        ),
        (
            "deepseek_lite_dev__sqlfluff",
            "replaces IFNULL/NVL with COALESCE",
            "ifnull",
            true,
        ),
        (
            "deepseek_lite_dev__sqlfluff",
            "replaces IFNULL/NVL with COALESCE",
            "NVL2",
            false,
        ),
    ];
    for (file, pick, evidence, kept) in pairs {
        let it = item(&traces, file, pick);
        assert_eq!(
            holds(&it.searchable(), reading(it), evidence),
            kept,
            "{file}: {evidence:?} in the item holding {pick:?}"
        );
    }
    assert_eq!(
        reading(item(
            &traces,
            "gpt-4o-airline__idx011",
            "{\"user_id\":\"ivan_muller_7015\",\"origin\""
        )),
        Reading::Exact
    );
}

/// Automatic findings on the real traces: none is a file view's line number, a dotted leader, or a tool
/// output's word the task already holds; the ones labelled as the task's are those the task gives.
#[test]
fn automatic_findings_leave_out_noise_and_the_task() {
    let Some(traces) = crate::traces::imported() else {
        return;
    };
    let mut found = 0;
    for ep in traces.iter().flat_map(|(_, e)| e) {
        let task = ctxbench::history::evidence::TaskText::new(ep);
        for f in &ep.findings {
            let w = &f.evidence[0];
            assert!(!w.contains("..."), "{}: {w}", ep.id);
            let intro = ep.items[f.introduced_at].searchable();
            let line_number = intro.lines().any(|l| {
                let t = l.trim_start();
                t.starts_with(w.as_str())
                    && t[w.len()..].starts_with(['\t', '│', '→', '|', ':'])
                    && w.chars().all(|c| c.is_ascii_digit())
            });
            assert!(!line_number, "{}: {w} is a line number", ep.id);
            assert_eq!(f.from_task, task.gives(f), "{}: {w}", ep.id);
            found += usize::from(!f.from_task);
        }
    }
    assert!(found >= 30, "{found} found findings");
}

/// On the real traces at an 8,000-token window, masking every tool result (compaction with `keep_last = 0,
/// min_chars = 0`) keeps at most 30% of the found findings at their first need and clearly less than `none` at
/// need; `none` keeps every one; the task-given findings are reported apart.
#[test]
fn masking_every_tool_result_loses_found_findings_at_their_first_need() {
    let Some(_) = crate::shared_trace_files() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("traces.jsonl");
    let traces = root().join("../shared/traces");
    let o = ctxbench(
        &[
            "import",
            traces.to_str().unwrap(),
            "-o",
            data.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let config = dir.path().join("mask.toml");
    std::fs::write(
        &config,
        "[[strategies]]\nname = \"none\"\ntype = \"none\"\n\n[[strategies]]\nname = \"mask_all\"\n\
         type = \"compaction\"\nkeep_last = 0\nmin_chars = 0\n",
    )
    .unwrap();
    let out = dir.path().join("r");
    let o = crate::ctxbench_run(&data, Some(&config), &out, &["--window", "8000"], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let summary = summary(&out);
    let get = |s: &str, f: &str| summary[s][f].as_f64().unwrap_or_else(|| panic!("{s}.{f}"));
    assert_eq!(get("none", "retention_at_need"), 1.0);
    assert_eq!(get("none", "retention_first_need"), 1.0);
    assert!(get("mask_all", "retention_first_need") <= 0.3);
    assert!(get("mask_all", "retention_at_need") < 0.8);
    assert!(get("none", "needs_task") > 0.0 && get("none", "needs") > 0.0);
    assert_eq!(get("none", "retention_at_need_task"), 1.0);
    // The episodes without a found need are counted, and said.
    assert!(get("none", "episodes_without_found_needs") > 0.0);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("## Found and task-given findings"),
        "{report}"
    );
    assert!(report.contains("have no finding the agent found needed at a call point"));
}

/// Each strategy's figures in `summary.json`, by name.
fn summary(out: &Path) -> serde_json::Map<String, serde_json::Value> {
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    s["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["strategy"].as_str().unwrap().to_owned(), v.clone()))
        .collect()
}
