//! Coding agent: debugging a failing test with file reads, greps, test runs and edits.

use serde_json::json;

use super::{event_turns, plant, Builder, Rng};
use crate::history::{FindingKind, Item};

const MODULES: [&str; 10] = [
    "billing",
    "parser",
    "scheduler",
    "auth",
    "inventory",
    "reports",
    "cache",
    "dates",
    "export",
    "search",
];
const LIBS: [&str; 8] = [
    "pydantic",
    "requests",
    "sqlalchemy",
    "numpy",
    "pandas",
    "django",
    "attrs",
    "dateutil",
];
const VERBS: [&str; 12] = [
    "parse",
    "load",
    "compute",
    "render",
    "validate",
    "merge",
    "resolve",
    "normalize",
    "fetch",
    "apply",
    "build",
    "split",
];
const NOUNS: [&str; 12] = [
    "invoice", "token", "window", "record", "offset", "schedule", "batch", "header", "payload",
    "period", "row", "index",
];
const CONSTS: [&str; 8] = [
    "MAX_RETRIES",
    "LEAP_OFFSET_DAYS",
    "BATCH_LIMIT",
    "CACHE_TTL_SECONDS",
    "ROUNDING_PLACES",
    "PAGE_SIZE",
    "GRACE_PERIOD_HOURS",
    "SHARD_COUNT",
];

const SYSTEM: &str = "You are a software engineering agent working in a Python repository. You can call tools: \
read_file(path), grep(pattern, path), list_dir(path), run_tests(target), git_log(path), edit_file(path, old, new). \
Work step by step: reproduce the failure, find the root cause, make the smallest fix, and run the tests again. \
Explain what you are doing before each tool call. Never edit tests to make them pass.";

fn ident(rng: &mut Rng) -> String {
    format!("{}_{}", rng.pick(&VERBS), rng.pick(&NOUNS))
}

fn code_file(rng: &mut Rng, lo: usize, hi: usize) -> Vec<String> {
    let lines = rng.range(lo, hi);
    let mut out = vec![
        "from __future__ import annotations".to_string(),
        "import logging".into(),
        String::new(),
    ];
    while out.len() < lines {
        let f = ident(rng);
        let arg = rng.pick(&NOUNS);
        let n = rng.range(2, 900);
        out.push(format!("def {f}({arg}, *, strict: bool = False):"));
        out.push(format!("    \"\"\"{}\"\"\"", super::sentence(rng)));
        out.push(format!(
            "    value = {arg}.get(\"{}\", {n})",
            rng.pick(&NOUNS)
        ));
        out.push(format!("    if strict and value > {}:", rng.range(1, 5000)));
        out.push(format!(
            "        raise ValueError(f\"{f}: {{value}} out of range\")"
        ));
        out.push(format!(
            "    return {}(value) + {}",
            ident(rng),
            rng.range(0, 9)
        ));
        out.push(String::new());
    }
    out.into_iter()
        .enumerate()
        .map(|(i, l)| format!("{:>4}  {l}", i + 1))
        .collect()
}

fn test_log(rng: &mut Rng, m: &str, lo: usize, hi: usize) -> Vec<String> {
    let passed = rng.range(lo, hi);
    let mut out = vec![
        "============================= test session starts =============================="
            .to_string(),
        "platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0".into(),
        format!("collected {passed} items"),
        String::new(),
    ];
    for i in 0..passed {
        let module = rng.pick(&MODULES);
        let test = ident(rng);
        let percent = (i + 1) * 100 / passed.max(1);
        // Skips and expected failures carry paths, numbers and error words like the failure that matters.
        out.push(match rng.range(0, 24) {
            0 => format!(
                "tests/test_{module}.py::test_{test} SKIPPED (requires network: ConnectionError at port {})",
                rng.range(1024, 9999)
            ),
            1 => format!(
                "tests/test_{module}.py::test_{test} XFAIL (known failure, see issue #{})",
                rng.range(100, 4000)
            ),
            _ => format!(
                "tests/test_{module}.py::test_{test} PASSED{:>width$}[{percent:>3}%]",
                "",
                width = rng.range(2, 20)
            ),
        });
    }
    if rng.percent(50) {
        out.push(format!(
            "tests/test_{m}.py: DeprecationWarning: {} is deprecated",
            ident(rng)
        ));
    }
    out
}

/// One coding episode of `turns` tool turns.
#[allow(clippy::too_many_lines)] // a script of one episode reads best top to bottom
pub fn episode(rng: &mut Rng, index: usize, turns: usize) -> crate::Episode {
    let m = *rng.pick(&MODULES);
    let pkg = format!(
        "{}{}",
        rng.pick(&["core", "app", "svc", "lib"]),
        rng.range(1, 9)
    );
    let src = format!("src/{pkg}/{m}.py");
    let settings = format!("src/{pkg}/settings.py");
    let test_file = format!("tests/test_{m}.py");
    let test_fn = format!("test_{}", ident(rng));
    let lib = *rng.pick(&LIBS);
    let (major, minor) = (rng.range(1, 4), rng.range(0, 19));
    let expected = rng.range(100, 9999);
    let actual = expected + rng.range(1, 3);
    let constant = *rng.pick(&CONSTS);
    let const_value = rng.range(2, 720);
    let other_test = format!("test_{}", ident(rng));
    let other_module = *rng.pick(&MODULES);
    let verbosity = [1usize, 1, 2, 2, 3][index % 5];
    let task = format!(
        "Fix the failing test {test_file}::{test_fn} after upgrading {lib} to {major}.{minor}"
    );
    let mut b = Builder::new(format!("coding-{index:02}"), "gen/coding", task.clone());
    b.meta("family", json!("coding"));
    b.push(Item::system(SYSTEM));
    b.push(Item::user(format!(
        "{task}. CI started failing on main yesterday; nothing else changed. Please find the root cause and fix it."
    )));
    let events = event_turns(turns, &[15, 35, 55, 62, 85]);
    // Findings by role, once introduced.
    let (mut failure, mut setting, mut edit, mut decision, mut open) =
        (None, None, None, None, None);
    for t in 0..turns {
        if t == events[0] {
            b.push(Item::assistant(format!(
                "Let me reproduce the failure by running {test_file}."
            )));
            let mut lines = test_log(rng, m, 30 * verbosity + 10, 30 * verbosity + 60);
            let trace = vec![
                format!(
                    "_________________________________ {test_fn} _________________________________"
                ),
                format!("    def {test_fn}():"),
                format!("        result = {}(FIXTURE)", ident(rng)),
                format!(">       assert result == {expected}"),
                format!("E       AssertionError: assert {actual} == {expected}"),
                format!("{test_file}:{}: AssertionError", rng.range(20, 400)),
            ];
            let at = lines.len() * 2 / 3;
            for (k, l) in trace.into_iter().enumerate() {
                lines.insert(at + k, l);
            }
            lines.push(format!(
                "FAILED {test_file}::{test_fn} - AssertionError: assert {actual} == {expected}"
            ));
            lines.push(format!(
                "=========== 1 failed, {} passed in {}.{:02}s ===========",
                lines.len(),
                rng.range(1, 30),
                rng.range(0, 99)
            ));
            let at = b.tool(
                "run_tests",
                &json!({ "target": test_file }),
                lines.join("\n"),
            );
            failure = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("{test_fn} fails: assert {actual} == {expected}"),
                vec![format!("AssertionError: assert {actual} == {expected}")],
                "What number does the failing test still come up with instead of the expected one?".into(),
                format!("{actual}"),
            ));
        } else if t == events[1] {
            if let Some(f) = failure {
                b.need(f);
            }
            b.push(Item::assistant(format!(
                "The off-by-{} suggests a constant; let me read {settings}.",
                actual - expected
            )));
            let mut lines = code_file(rng, 60 * verbosity + 40, 60 * verbosity + 160);
            let line =
                format!("{constant} = {const_value}  # changed in {lib} {major}.{minor} migration");
            plant(rng, &mut lines, format!("      {line}"), 55, 90);
            let at = b.tool("read_file", &json!({ "path": settings }), lines.join("\n"));
            setting = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("{constant} is {const_value} in {settings}"),
                vec![format!("{constant} = {const_value}")],
                format!(
                    "What value does the settings file give the constant that the {lib} migration changed?"
                ),
                format!("{constant} = {const_value}"),
            ));
        } else if t == events[2] {
            let f = ident(rng);
            if let Some(s) = setting {
                b.need(s);
            }
            b.push(Item::assistant(format!(
                "The {lib} migration changed the settings to {constant} = {const_value}, and {f} adds it twice; I will remove the second adjustment in {src}."
            )));
            let old = format!("    value = value + {constant}\n    return value + {constant}");
            let new = format!("    value = value + {constant}\n    return value");
            let at = b.tool(
                "edit_file",
                &json!({ "path": src, "old": old, "new": new }),
                format!("Applied edit to {src} (+1 -1)"),
            );
            edit = Some(b.finding(
                FindingKind::Artifact,
                at,
                format!("edited {src} to drop the double {constant} adjustment"),
                vec![format!("Applied edit to {src}")],
                "Where was the edit applied?".into(),
                src.clone(),
            ));
        } else if t == events[3] {
            let reason = rng.pick(&[
                "it breaks the plugin API",
                "the changelog lists a regression",
                "two other services pin it",
            ]);
            let text = format!(
                "Decision: keep {lib} at {major}.{minor} and fix our code instead of pinning the old release, because {reason}."
            );
            let at = b.push(Item::assistant(text));
            b.tool(
                "run_tests",
                &json!({ "target": test_file }),
                test_log(rng, m, 20 + 5, 20 + 40).join("\n"),
            );
            decision = Some(b.finding(
                FindingKind::Decision,
                at,
                format!("keep {lib} {major}.{minor}"),
                vec![format!("keep {lib} at {major}.{minor}")],
                "What did the agent decide to do about the upgraded library rather than pinning the old release?"
                    .into(),
                format!("keep {lib} at {major}.{minor}"),
            ));
        } else if t == events[4] {
            b.push(Item::assistant(
                "Running the whole suite to check for regressions.".to_string(),
            ));
            let mut lines = test_log(rng, m, 40 * verbosity + 20, 40 * verbosity + 80);
            lines.push(format!(
                "FAILED tests/test_{other_module}.py::{other_test} - TimeoutError: worker did not answer in 30s"
            ));
            b.tool("run_tests", &json!({ "target": "tests" }), lines.join("\n"));
            let at = b.push(Item::assistant(format!(
                "The original failure is fixed. Open problem: {other_test} in tests/test_{other_module}.py times out waiting for a worker; the pool size is the suspect, for a fix of its own."
            )));
            open = Some(b.finding(
                FindingKind::Continuation,
                at,
                format!("{other_test} times out and is left for a fix of its own"),
                vec![format!(
                    "{other_test} in tests/test_{other_module}.py times out"
                )],
                "Which test still hangs waiting for a worker?".into(),
                other_test.clone(),
            ));
            b.tool(
                "read_file",
                &json!({ "path": format!("tests/test_{other_module}.py") }),
                code_file(rng, 40, 40).join("\n"),
            );
        } else {
            let step = rng.range(0, 9);
            let note = match failure {
                Some(f) if edit.is_none() && rng.percent(30) => {
                    b.need(f);
                    format!(" {test_fn} still fails: assert {actual} == {expected}.")
                }
                _ => String::new(),
            };
            match step {
                0..=3 => {
                    let path = format!("src/{pkg}/{}.py", rng.pick(&MODULES));
                    b.push(Item::assistant(format!("Let me read {path}.{note}")));
                    let lines = code_file(rng, 30 * verbosity + 20, 30 * verbosity + 200);
                    b.tool("read_file", &json!({ "path": path }), lines.join("\n"));
                }
                4 | 5 => {
                    let pattern = ident(rng);
                    b.push(Item::assistant(format!("Searching for {pattern}.{note}")));
                    let hits: Vec<String> = (0..rng.range(3, 25 * verbosity))
                        .map(|_| {
                            format!(
                                "src/{pkg}/{}.py:{}:    return {pattern}(value) + {}",
                                rng.pick(&MODULES),
                                rng.range(1, 900),
                                rng.range(0, 9)
                            )
                        })
                        .collect();
                    b.tool(
                        "grep",
                        &json!({ "pattern": pattern, "path": "src" }),
                        hits.join("\n"),
                    );
                }
                6 => {
                    b.push(Item::assistant(format!(
                        "Listing src/{pkg} to see the layout."
                    )));
                    let files: Vec<String> = MODULES
                        .iter()
                        .map(|f| format!("{f}.py  {} bytes", rng.range(300, 40_000)))
                        .collect();
                    b.tool(
                        "list_dir",
                        &json!({ "path": format!("src/{pkg}") }),
                        files.join("\n"),
                    );
                }
                7 => {
                    b.push(Item::assistant(format!(
                        "Checking recent history of {src}."
                    )));
                    let log: Vec<String> = (0..rng.range(5, 30))
                        .map(|_| {
                            format!(
                                "{} {} ({})",
                                rng.hex(7),
                                super::sentence(rng),
                                rng.pick(&["ana", "bo", "chen", "dee"])
                            )
                        })
                        .collect();
                    b.tool("git_log", &json!({ "path": src }), log.join("\n"));
                }
                _ => {
                    b.push(Item::assistant(format!("Running {test_file} again.{note}")));
                    let lines = test_log(rng, m, 20 * verbosity + 5, 20 * verbosity + 40);
                    b.tool(
                        "run_tests",
                        &json!({ "target": test_file }),
                        lines.join("\n"),
                    );
                }
            }
        }
    }
    for f in [setting, edit, decision, open].into_iter().flatten() {
        b.need(f);
    }
    // Open probes, one of each kind, graded by the judge after the last item.
    if let Some(f) = failure {
        b.open_probe(
            f,
            FindingKind::Recall,
            "What did the failing test report?".into(),
            format!("AssertionError: assert {actual} == {expected} (it got {actual}, expected {expected})"),
        );
    }
    if let Some(f) = edit {
        b.open_probe(
            f,
            FindingKind::Artifact,
            "Which files did the agent change, and how?".into(),
            format!("{src}: removed the second {constant} adjustment, so the value is added once"),
        );
    }
    if let Some(f) = decision {
        b.open_probe(
            f,
            FindingKind::Decision,
            "What did the agent decide about the upgraded library, and why?".into(),
            format!(
                "Keep {lib} at {major}.{minor} and fix the code instead of pinning the old release"
            ),
        );
    }
    if let Some(f) = open {
        b.open_probe(
            f,
            FindingKind::Continuation,
            "What is left to do?".into(),
            format!("{other_test} in tests/test_{other_module}.py times out waiting for a worker; check the pool size"),
        );
    }
    b.push(Item::assistant(format!(
        "Summary: {test_fn} passes since the double {constant} = {const_value} adjustment was removed from {src}; {lib} stays at {major}.{minor}. {other_test} in tests/test_{other_module}.py times out for an unrelated reason and gets a fix of its own."
    )));
    b.finish()
}
