//! Advice a careful engineer would sign (issue 54), each scenario as a user meets it: a compaction credited
//! with the needs met before it acted, a pick that costs more than doing nothing, intervals of no width,
//! requests over the window that counted against nothing, window advice that contradicts itself, and a sweep
//! that refused the window the advice named. Every report written here is also checked for a "-0.0%", an
//! interval of no width and a table without rows.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde_json::Value;

/// `source` imported into `dir`.
fn import(source: &Path, dir: &Path) -> PathBuf {
    let data = dir.join("data.jsonl");
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
    data
}

/// What a run printed and wrote.
struct Ran {
    stdout: String,
    summary: Value,
    markdown: String,
}

impl Ran {
    fn recommended(&self) -> Option<&str> {
        self.summary["recommendation"]["strategy"].as_str()
    }

    fn strategy(&self, name: &str) -> &Value {
        self.summary["strategies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["strategy"] == name)
            .unwrap_or_else(|| panic!("no strategy {name}"))
    }

    fn standing(&self, name: &str) -> String {
        self.summary["recommendation"]["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["strategy"] == name)
            .unwrap_or_else(|| panic!("no verdict for {name}"))["standing"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The console, the Markdown report and the recommendation, together.
    fn text(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.stdout, self.markdown, self.summary["recommendation"]
        )
    }
}

/// `ctxbench run` on `data` with `extra`, writing into `dir/out`; checks what it wrote is honest.
fn run(data: &Path, dir: &Path, extra: &[&str]) -> Ran {
    let out = dir.join("out");
    let o = crate::ctxbench_run(data, None, &out, extra, None);
    let stdout = crate::text(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", crate::text(&o.stderr));
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    let ran = Ran {
        stdout,
        summary: serde_json::from_str(&read("summary.json")).unwrap(),
        markdown: read("report.md"),
    };
    honest(&ran.text());
    honest(&read("report.html"));
    no_empty_table(&ran.markdown);
    ran
}

/// No "-0.0%", no interval of no width (`92.6% [92.6%, 92.6%]`), and every interval written one way, `[a, b]`
/// (tables and sentences alike; not `[a–b]`).
fn honest(text: &str) {
    assert!(!text.contains("-0.0%"), "a -0.0%");
    let dashed = Regex::new(r"\[-?\d+\.\d%?–-?\d+\.\d%?\]").unwrap();
    assert!(
        !dashed.is_match(text),
        "an interval written with a dash: {:?}",
        dashed.find(text).map(|m| m.as_str())
    );
    let interval = Regex::new(r"\[(\d+\.\d)%, (\d+\.\d)%\]").unwrap();
    for c in interval.captures_iter(text) {
        assert_ne!(&c[1], &c[2], "an interval of no width: {}", &c[0]);
    }
}

/// Every Markdown table has a row under its header.
fn no_empty_table(markdown: &str) {
    let lines: Vec<&str> = markdown.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("|---") {
            assert!(
                lines.get(i + 1).is_some_and(|l| l.starts_with('|')),
                "a table without rows under {:?}",
                lines[i - 1]
            );
        }
    }
}

/// The windows the advice names (`--window N`).
fn windows_named(text: &str) -> Vec<u64> {
    Regex::new(r"--window (\d+)")
        .unwrap()
        .captures_iter(text)
        .map(|c| c[1].parse().unwrap())
        .collect()
}

/// The compacted Claude Code session at `--window 199500`: Claude Code's auto-compact first acts at call
/// point 101, after 23 of the 27 needs. Its figures where it acted count from there: 4 needs on one episode,
/// not the 27, so it is not recommended ("too few episodes"), and one episode shows no interval at all.
#[test]
fn the_compacted_session_is_judged_from_its_first_act() {
    let dir = tempfile::tempdir().unwrap();
    let data = import(
        &crate::root().join("tests/fixtures/compacted/claude_code_2.1.39_auto_compact.jsonl"),
        dir.path(),
    );
    let ran = run(
        &data,
        dir.path(),
        &[
            "--strategies",
            "none,claude_code_auto_compact",
            "--window",
            "199500",
        ],
    );
    assert_eq!(ran.recommended(), None, "{}", ran.summary["recommendation"]);
    let s = ran.strategy("claude_code_auto_compact");
    assert_eq!(s["episodes_acted"], 1);
    let pooled = s["needs"].as_u64().unwrap();
    let there = s["needs_acted"].as_u64().unwrap();
    assert!(there < pooled, "{there} of {pooled}");
    assert_eq!(there, 4, "{s}");
    assert_eq!(ran.standing("claude_code_auto_compact"), "too_few_episodes");
    // acted_from in episodes.csv is where it first changed a request.
    let csv = std::fs::read_to_string(dir.path().join("out/episodes.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "acted_from").unwrap();
    let row = csv
        .lines()
        .find(|l| l.contains(",claude_code_auto_compact,"))
        .unwrap();
    assert_eq!(row.split(',').nth(col), Some("101"), "{row}");
    // One episode: "too few episodes" beside the figure, never an interval.
    assert!(ran.text().contains("(too few episodes)"), "{}", ran.stdout);
}

/// Five episodes of the bundled dataset with `--min-episodes 1`: the intervals that are shown all have a
/// width, the baseline's 100% among them (it shows none), and a strategy that kept every need on few episodes
/// reaches well below 100%.
#[test]
fn few_episodes_and_shares_of_one_keep_a_width() {
    let dir = tempfile::tempdir().unwrap();
    let data = crate::subset(dir.path(), 5);
    let ran = run(&data, dir.path(), &["--min-episodes", "1"]);
    for s in ran.summary["strategies"].as_array().unwrap() {
        for key in [
            "retention_at_need_ci95",
            "retention_first_need_ci95",
            "retention_at_need_acted_ci95",
        ] {
            if let Some([lo, hi]) = s[key].as_array().map(|a| [a[0].clone(), a[1].clone()]) {
                let (lo, hi) = (lo.as_f64().unwrap(), hi.as_f64().unwrap());
                assert!(hi - lo > 0.01, "{} {key}: [{lo}, {hi}]", s["strategy"]);
                if s[key.trim_end_matches("_ci95")] == 1.0 {
                    assert!(lo < 0.95, "{} {key}: [{lo}, {hi}]", s["strategy"]);
                }
            }
        }
    }
}

/// `--strategies none,openhands_observation_masking` on the shared traces: masking saves tokens but costs
/// more than no reduction where it acts (it loses the prompt cache), so it is not a pick. Twelve of the traces
/// name no model (tau-bench's, two SWE-agent ones, ...): unpriced, never priced as another model, so the run's
/// whole cost is unknown and the reason gives the cost from its first act on, on the priced episode it acted on.
#[test]
fn a_strategy_that_costs_more_than_nothing_is_not_a_pick() {
    if crate::shared_trace_files().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = import(&crate::root().join("../shared/traces"), dir.path());
    let ran = run(
        &data,
        dir.path(),
        &["--strategies", "none,openhands_observation_masking"],
    );
    let s = ran.strategy("openhands_observation_masking");
    assert!(s["savings"].as_f64().unwrap() > 0.0, "{s}");
    assert!(
        s["cost_usd"].is_null() && s["baseline_cost_usd"].is_null(),
        "{s}"
    );
    assert!(s["cost_savings_acted"].as_f64().unwrap() < 0.0, "{s}");
    assert_eq!(
        s["cost_savings_acted_priced"], s["cost_savings_acted"],
        "{s}"
    );
    assert_eq!(s["episodes_acted_priced"], 1, "{s}");
    assert_eq!(ran.recommended(), None);
    assert_eq!(ran.standing("openhands_observation_masking"), "costlier");
    let flat = ran.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("more than no reduction from its first act on, where priced"),
        "{flat}"
    );
    assert!(
        flat.contains("12 episodes whose trace names no model are unpriced"),
        "{flat}"
    );
}

/// Every preset on the shared traces at `--window 8000`: what no strategy may reduce (22,788 tokens on the
/// aider sessions) is over the window, so every preset sends requests over it, each counted and shown, and
/// nothing is picked; the advice says the window is too small for these traces and offers no command at it.
#[test]
fn nothing_that_sends_over_the_window_is_picked() {
    if crate::shared_trace_files().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = import(&crate::root().join("../shared/traces"), dir.path());
    let ran = run(
        &data,
        dir.path(),
        &["--strategies", "presets", "--window", "8000"],
    );
    if let Some(pick) = ran.recommended() {
        assert_eq!(ran.strategy(pick)["steps_over_window"], 0, "{pick}");
    }
    for v in ran.summary["recommendation"]["verdicts"]
        .as_array()
        .unwrap()
    {
        let name = v["strategy"].as_str().unwrap();
        let over = ran.strategy(name)["steps_over_window"].as_u64().unwrap();
        // Sent over the window: out for that, unless its framework already failed the episode.
        if over > 0 {
            assert!(
                v["standing"] == "over_window" || v["standing"] == "fails_in_framework",
                "{name}: {v}"
            );
        }
    }
    assert!(
        ran.strategy("acon_history")["steps_over_window"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Shown as failures: a column of the console, and a line of the reading.
    assert!(ran.stdout.contains("over window"), "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("over the 8,000-token window: failures, which a provider refuses"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("The 8,000-token window is too small for these traces"),
        "{}",
        ran.stdout
    );
    assert!(!windows_named(&ran.text()).contains(&8000));
}

/// The aider sessions at `--window 13000` and the Claude Code sessions' presets at the default window: no
/// advice names the window in use, nor one below what no strategy may reduce.
#[test]
fn window_advice_names_neither_the_window_in_use_nor_one_below_the_floor() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    assert!(files.iter().any(|f| f.to_string_lossy().contains("aider")));
    for (folder, extra) in [
        ("aider", vec!["--window", "13000"]),
        ("claude-code", vec!["--strategies", "presets"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let data = import(
            &crate::root().join("../shared/traces").join(folder),
            dir.path(),
        );
        let ran = run(&data, dir.path(), &extra);
        let window = ran.summary["analysis"]["window"]["tokens"]
            .as_u64()
            .unwrap();
        let floor = ran.summary["analysis"]["window"]["floor"].as_u64().unwrap();
        let named = windows_named(&ran.text());
        for w in &named {
            // A sweep at the window in use is a command on the same data, not window advice.
            let advice = format!("`--window {w}` makes it act");
            if ran.text().contains(&advice) {
                assert_ne!(*w, window, "{folder}: advice names the window in use");
                assert!(
                    *w >= floor,
                    "{folder}: --window {w} under the {floor}-token floor"
                );
            }
        }
        if floor > window {
            assert!(
                ran.stdout.contains("is too small for these traces"),
                "{folder}: {}",
                ran.stdout
            );
            assert!(!named.contains(&window), "{folder}: {named:?}");
        }
    }
}

/// `sweep --window 46000` runs and sweeps at that window; and the command a no-pick names runs as written.
#[test]
fn sweep_takes_the_window_and_the_named_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = crate::subset(dir.path(), 4);
    let out = dir.path().join("s");
    let o = crate::ctxbench(
        &[
            "sweep",
            "--dataset",
            data.to_str().unwrap(),
            "--window",
            "46000",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", crate::text(&o.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["config"]["context_window"], 46000);
    // Four episodes are too few to pick on: the sentence names a sweep, which runs as written.
    let ran = run(&data, dir.path(), &[]);
    assert_eq!(ran.recommended(), None);
    let command = Regex::new(r"`ctxbench (sweep [^`]+)`")
        .unwrap()
        .captures(&ran.text())
        .map(|c| c[1].to_owned())
        .expect("a sweep named");
    let mut args: Vec<String> = command.split(' ').map(str::to_owned).collect();
    args.extend([
        "--out".into(),
        dir.path().join("named").display().to_string(),
    ]);
    let o = crate::ctxbench(&args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(o.status.success(), "{command}: {}", crate::text(&o.stderr));
}
