//! What the console prints fits 100 columns: every help text, the strategies' list, the tables of `usage`,
//! what `import` says about the project's own fixtures, and a run's comparison.

use clap::CommandFactory as _;

use super::{ctxbench, root, text};

/// The widest a line of the console may be.
const WIDTH: usize = 100;

/// The lines of `out` wider than [`WIDTH`] characters, with what printed them.
fn too_wide(what: &str, out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.chars().count() > WIDTH)
        .map(|l| format!("{what}: {} columns: {l}", l.chars().count()))
        .collect()
}

#[test]
fn every_help_text_fits_100_columns() {
    let mut wide = Vec::new();
    let mut commands: Vec<Vec<String>> = vec![vec![]];
    for sub in ctxbench::cli::Cli::command().get_subcommands() {
        commands.push(vec![sub.get_name().to_owned()]);
    }
    for args in commands {
        for flag in ["--help", "-h"] {
            let mut full: Vec<&str> = args.iter().map(String::as_str).collect();
            full.push(flag);
            let out = ctxbench(&full, None);
            assert!(out.status.success(), "{full:?}: {}", text(&out.stderr));
            wide.extend(too_wide(&full.join(" "), &text(&out.stdout)));
        }
    }
    assert!(wide.is_empty(), "{}", wide.join("\n"));
}

#[test]
fn strategies_usage_import_and_run_fit_100_columns() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("mine.jsonl");
    let mut wide = Vec::new();
    for args in [vec!["strategies"], vec!["strategies", "-v"]] {
        let out = ctxbench(&args, None);
        assert!(out.status.success());
        wide.extend(too_wide(&args.join(" "), &text(&out.stdout)));
    }
    let fixtures = root().join("tests/fixtures/import");
    let import = ctxbench(
        &[
            "import",
            fixtures.to_str().unwrap(),
            "-o",
            data.to_str().unwrap(),
        ],
        None,
    );
    assert!(import.status.success(), "{}", text(&import.stderr));
    wide.extend(too_wide("import (stdout)", &text(&import.stdout)));
    wide.extend(too_wide("import (stderr)", &text(&import.stderr)));
    let usage = ctxbench(&["usage", data.to_str().unwrap(), "--per-call"], None);
    assert!(usage.status.success(), "{}", text(&usage.stderr));
    wide.extend(too_wide("usage --per-call", &text(&usage.stdout)));
    let out = dir.path().join("run");
    let run = ctxbench(
        &[
            "run",
            "--dataset",
            data.to_str().unwrap(),
            "--window",
            "8000",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    wide.extend(too_wide("run", &text(&run.stdout)));
    assert!(wide.is_empty(), "{}", wide.join("\n"));
}
