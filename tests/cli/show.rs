//! `ctxbench show` and the console: the episode explorer's pages of a run, what they hold, the report's links
//! to them, the checks before a page is made (the dataset's hash, the episode), a real model's run shown from
//! its record without a request, and a console table that fits 100 columns.

use std::path::Path;

use crate::{ctxbench, ctxbench_run, subset, text};

/// The JSON a page draws itself from.
fn page_data(page: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find(r#"<script type="application/json" id="data">"#)
        .unwrap();
    let json = &html[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
    serde_json::from_str(json).unwrap()
}

/// A run of 9 bundled episodes with an 8k window (so that every strategy acts), in `dir/r`.
fn small_run(dir: &Path, extra: &[&str]) -> (std::path::PathBuf, std::process::Output) {
    let data = subset(dir, 9);
    let run = dir.join("r");
    let mut args = vec!["--window", "8000"];
    args.extend(extra);
    let out = ctxbench_run(&data, None, &run, &args, None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    (run, out)
}

/// The pages of the episodes the report names: self-contained, holding what compaction masked and the
/// placeholder, and where each lost finding left the request; the report then links them.
#[test]
fn show_writes_the_pages_the_report_links() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = small_run(dir.path(), &[]);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(!report.contains("](episodes/"), "no page yet, no link");
    assert!(
        report.contains("`ctxbench show`"),
        "the report says how to write them"
    );
    let out = ctxbench(&["show", run.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    let stdout = text(&out.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let named: Vec<&str> = summary["most_lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["episode"].as_str().unwrap())
        .collect();
    assert!(!named.is_empty());
    for ep in &named {
        let page = run.join(format!("episodes/{ep}.html"));
        assert!(stdout.contains(&page.display().to_string()), "{stdout}");
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            !html.contains("src=\"http")
                && !html.contains("href=\"http")
                && !html.contains("<link"),
            "{ep}: the page fetches nothing"
        );
    }
    // Where compaction lost a finding to masking, the page has the item masked at that call point, its
    // placeholder, and the finding's evidence in the recorded item.
    let lost = summary["most_lost"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["strategy"] == "compaction" && l["lost_by"] == "masked")
        .expect("compaction lost a finding to masking");
    let data = page_data(&run.join(format!(
        "episodes/{}.html",
        lost["episode"].as_str().unwrap()
    )));
    let findings = data["findings"].as_array().unwrap();
    let f = findings
        .iter()
        .position(|x| x["id"] == lost["finding"])
        .unwrap();
    let compaction = data["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "compaction")
        .unwrap();
    let row = compaction["ledger"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == f && r[3] == 0 && r[5] == "masked")
        .unwrap();
    let step = row[4].as_u64().unwrap();
    let texts = data["texts"].as_array().unwrap();
    let evidence = findings[f]["evidence"][0].as_str().unwrap().to_lowercase();
    let masked = compaction["items"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|entry| {
            let item = entry[0].as_u64().unwrap() as usize;
            let recorded = texts[data["items"][item][2].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            entry[1]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t[0] == step && t[1] == 1 && recorded.to_lowercase().contains(&evidence))
                .map(|t| {
                    texts[t[2].as_u64().unwrap() as usize]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
        });
    let placeholder =
        masked.expect("the item holding the evidence was masked at the call point of the loss");
    assert!(placeholder.starts_with("[compacted"), "{placeholder}");
    // The evidence of the finding is marked where it is.
    assert!(data["marks"].as_array().unwrap().iter().any(|m| m[1] == f));
    // The report links each named episode, at the strategy and the finding.
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let link = format!(
        "(episodes/{}.html#s=compaction&f={})",
        lost["episode"].as_str().unwrap(),
        lost["finding"].as_str().unwrap()
    );
    assert!(report.contains(&link), "{link} in\n{report}");
    assert!(
        !report.contains("`ctxbench show`"),
        "every named episode has its page"
    );
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let href = link[1..link.len() - 1].replace('&', "&amp;");
    assert!(html.contains(&format!("href=\"{href}\"")), "{href}");
    // `ctxbench report` keeps the links.
    let out = ctxbench(&["report", run.to_str().unwrap()], None);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(run.join("report.md"))
        .unwrap()
        .contains(&link));
}

/// `show --strategies` writes its narrower page beside the one with every strategy, says so, and never replaces
/// it; the report lists both, and links the episode of its charts to its page.
#[test]
fn a_page_of_some_strategies_goes_beside_the_page_of_all() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = small_run(dir.path(), &[]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let episode = summary["most_lost"][0]["episode"]
        .as_str()
        .unwrap()
        .to_owned();
    let full = run.join(format!("episodes/{episode}.html"));
    let narrow = run.join(format!("episodes/{episode}+compaction.html"));
    let dir_arg = run.to_str().unwrap();
    let out = ctxbench(&["show", dir_arg, "--episode", &episode], None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    let before = std::fs::read(&full).unwrap();
    let out = ctxbench(
        &[
            "show",
            dir_arg,
            "--episode",
            &episode,
            "--strategies",
            "compaction",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    let stdout = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        stdout.contains(
            "compaction beside the baseline, written beside the page with every strategy"
        ),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read(&full).unwrap(),
        before,
        "the page of every strategy is kept"
    );
    let names = |page: &Path| -> Vec<String> {
        page_data(page)["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&narrow).len(), 2);
    assert!(names(&full).len() > 2);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("(episodes/{episode}.html): every strategy"))
            && report.contains(&format!(
                "(episodes/{episode}+compaction.html): compaction beside the baseline"
            )),
        "{report}"
    );
}

/// A dataset that changed since the run, and an episode it does not hold, are refused, naming what to do.
#[test]
fn show_checks_the_dataset_and_the_episode() {
    let dir = tempfile::tempdir().unwrap();
    let (run, _) = small_run(dir.path(), &[]);
    let out = ctxbench(&["show", run.to_str().unwrap(), "--episode", "nope"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        crate::unwrapped(&text(&out.stderr)).contains("no episode 'nope'"),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    let data = dir.path().join("subset.jsonl");
    let mut bytes = std::fs::read(&data).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(&data, bytes).unwrap();
    let out = ctxbench(
        &["show", run.to_str().unwrap(), "--episode", "coding-00"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert!(
        stderr.contains("changed since the run") && stderr.contains("--dataset"),
        "{stderr}"
    );
}

/// `run --explore N` writes the pages of the N episodes where the strategies lost the most needs.
#[test]
fn run_explore_writes_the_most_informative_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (run, out) = small_run(
        dir.path(),
        &["--explore", "2", "--strategies", "none,compaction"],
    );
    let stdout = text(&out.stdout);
    let pages: Vec<_> = std::fs::read_dir(run.join("episodes")).unwrap().collect();
    assert_eq!(pages.len(), 2, "{stdout}");
    assert_eq!(stdout.matches("episodes/").count(), 2, "{stdout}");
    // The first is the episode with the most needs lost.
    let ledger = std::fs::read_to_string(run.join("findings.csv")).unwrap();
    let mut lost: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for l in ledger.lines().skip(1) {
        let cells: Vec<&str> = l.split(',').collect();
        *lost.entry(cells[0]).or_default() += usize::from(cells[8] == "false");
    }
    let most = lost.values().max().unwrap();
    let first = stdout.lines().find(|l| l.contains("episodes/")).unwrap();
    let ep = first
        .rsplit('/')
        .next()
        .unwrap()
        .split(".html")
        .next()
        .unwrap();
    assert_eq!(lost[ep], *most, "{stdout}");
}

/// The console's table fits 100 columns; `--wide` prints every column; a summary quoted in report.md keeps
/// its headings inside the quote.
#[test]
fn the_console_fits_100_columns_and_summaries_are_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let (run, out) = small_run(dir.path(), &[]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("retention at need [95% interval]"),
        "{stdout}"
    );
    for line in stdout.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    let out = ctxbench(&["report", run.to_str().unwrap(), "--wide"], None);
    assert!(text(&out.stdout).contains("final retention"));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("\n> ## Task\n"), "{report}");
    assert!(
        !report.contains("\n## Task"),
        "a summary's heading reads as the report's"
    );
}

/// A run with a real model is shown from its record of every call: the server, gone, is not asked again.
#[test]
fn a_real_models_run_is_shown_without_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 2);
    let (url, seen) = crate::llm::server(vec![crate::llm::ok("foo.h is where the parser lives")]);
    let cfg = crate::llm::llm_config(dir.path(), "real", &url, "backoff_ms = 10\n");
    let priced = std::fs::read_to_string(&cfg).unwrap()
        + "[pricing.models.\"test-model\"]\ninput = 1000.0\ncached_input = 1000.0\noutput = 1000.0\n";
    std::fs::write(&cfg, priced).unwrap();
    let run = dir.path().join("out");
    let out = ctxbench_run(&data, Some(&cfg), &run, &[], None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    let sent = seen.lock().unwrap().requests;
    std::fs::remove_dir_all(dir.path().join("cache-real")).unwrap();
    let out = ctxbench(
        &["show", run.to_str().unwrap(), "--episode", "coding-00"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    assert_eq!(seen.lock().unwrap().requests, sent, "show sent nothing");
    let data = page_data(&run.join("episodes/coding-00.html"));
    let texts = data["texts"].as_array().unwrap();
    let summarize = data["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "summarize")
        .unwrap();
    let written: Vec<&str> = summarize["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(summarize["written"].as_array().unwrap())
        .map(|w| texts[w[3].as_u64().unwrap() as usize].as_str().unwrap())
        .collect();
    assert!(
        written
            .iter()
            .any(|t| t.contains("foo.h is where the parser lives")),
        "the summary the model wrote is on the page: {written:?}"
    );
    // Asked to call the model, it does (the cache is gone).
    let out = ctxbench(
        &[
            "show",
            run.to_str().unwrap(),
            "--episode",
            "coding-00",
            "--call-llm",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    assert!(seen.lock().unwrap().requests > sent);
    // Bounded by --max-cost as a run is: below a call's estimate, nothing more is sent.
    std::fs::remove_dir_all(dir.path().join("cache-real")).unwrap();
    let before = seen.lock().unwrap().requests;
    let out = ctxbench(
        &[
            "show",
            run.to_str().unwrap(),
            "--episode",
            "coding-00",
            "--call-llm",
            "--max-cost",
            "0.01",
        ],
        None,
    );
    let err = crate::unwrapped(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--max-cost"), "{err}");
    assert_eq!(seen.lock().unwrap().requests, before, "{err}");
}

/// Where Inspect AI raises "Compaction insufficient" (not caught by `react()`), the episode fails under the
/// preset that reproduces it: episodes.csv says at which call point, summary.json counts it, the report says
/// so and never recommends the preset, the explorer's page marks the call point, and `ctxbench sends` names
/// the error there. coding-08 at an 8k window: CompactionEdit cannot bring call point 3 under 7,200 tokens.
#[test]
fn a_preset_fails_where_its_framework_raises_and_the_report_and_explorer_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("coding-08.jsonl");
    let line = std::fs::read_to_string(crate::root().join("datasets/default.jsonl"))
        .unwrap()
        .lines()
        .find(|l| l.contains(r#""id":"coding-08""#))
        .unwrap()
        .to_owned();
    std::fs::write(&data, line + "\n").unwrap();
    let run = dir.path().join("r");
    let strategies = "inspect_compaction_edit,inspect_compaction_summary";
    let args = [
        "--window",
        "8000",
        "--strategies",
        strategies,
        "--explore",
        "1",
    ];
    let out = ctxbench_run(&data, None, &run, &args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut episodes = csv::Reader::from_path(run.join("episodes.csv")).unwrap();
    let headers = episodes.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = episodes.records().map(Result::unwrap).collect();
    let row = |s: &str| rows.iter().find(|r| &r[col("strategy")] == s).unwrap();
    assert_eq!(&row("inspect_compaction_edit")[col("failed_at_step")], "3");
    assert_eq!(
        &row("inspect_compaction_summary")[col("failed_at_step")],
        ""
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let failed = |s: &str| {
        summary["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["strategy"] == s)
            .unwrap()["episodes_failed"]
            .as_f64()
    };
    assert_eq!(failed("inspect_compaction_edit"), Some(1.0));
    assert_eq!(failed("inspect_compaction_summary"), Some(0.0));
    // Its verdict says so: the first reason, before any other.
    let verdict = summary["recommendation"]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["strategy"] == "inspect_compaction_edit")
        .unwrap();
    assert_eq!(verdict["standing"], "fails_in_framework", "{verdict}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("`inspect_compaction_edit` fails 1 of 1 episodes as its framework does"),
        "{report}"
    );
    let page = page_data(&run.join("episodes/coding-08.html"));
    let edit = page["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "inspect_compaction_edit")
        .unwrap();
    assert_eq!(edit["failed"]["step"], 3);
    assert!(edit["failed"]["error"]
        .as_str()
        .unwrap()
        .contains("Compaction insufficient"));
    let sends = ctxbench(
        &[
            "sends",
            "--dataset",
            data.to_str().unwrap(),
            "--strategies",
            "inspect_compaction_edit",
            "--window",
            "8000",
        ],
        None,
    );
    assert!(sends.status.success(), "{}", text(&sends.stderr));
    let lines: Vec<serde_json::Value> = text(&sends.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines[2]["failed"].is_null() && lines[3]["failed"].is_string());
}

/// A run of imported traces (models the traces name, usage they record) is shown from its summary.json: the
/// README's own import, run and show, which once failed to read back the `recorded` key written twice.
#[test]
fn show_reads_back_a_run_of_imported_traces() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("mine.jsonl");
    let out = ctxbench(
        &[
            "import",
            "tests/fixtures/import/",
            "-o",
            data.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = dir.path().join("mine");
    let out = ctxbench_run(&data, None, &run, &["--window", "8000"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert!(
        summary["models"]
            .as_array()
            .is_some_and(|m| m.iter().any(|g| g.get("recorded_cost").is_some())),
        "some imported trace records its usage: {}",
        summary["models"]
    );
    let out = ctxbench(&["show", run.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
}
