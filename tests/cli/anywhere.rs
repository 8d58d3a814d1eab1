//! The tool run from a folder that holds nothing of the repository, as an installed ctxbench is: the bundled
//! dataset generated in memory, the bundled configurations read from the binary, `init`, and errors that say
//! their cause once and what to do, within 100 columns. (`scripts/installed_check.sh` installs the binary with
//! `cargo install` and runs every command the README shows, the same way.)

use std::path::Path;
use std::process::{Command, Output};

use super::{root, text};

/// `ctxbench ARGS` run in `dir`.
fn in_dir(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxbench"))
        .args(args)
        .current_dir(dir)
        .env("CTXBENCH_VERIFY", "1")
        .output()
        .expect("the binary runs")
}

/// A run from an empty folder replays the bundled dataset, generated in memory and said so, and records it as
/// a clone's run does (same path, same SHA-256): `show` then finds it as well.
#[test]
fn a_run_from_an_empty_folder_replays_the_bundled_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let out = in_dir(dir.path(), &["run", "--strategies", "none,compaction"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr
            .contains("no datasets/default.jsonl here: the bundled dataset is generated in memory"),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/default/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["dataset"]["path"], "datasets/default.jsonl");
    assert_eq!(summary["dataset"]["episodes"], 42);
    let clone = ctxbench::run::dataset_sha256(&root().join("datasets/default.jsonl")).unwrap();
    assert_eq!(summary["dataset"]["sha256"], clone.as_str());
    let show = in_dir(
        dir.path(),
        &["show", "reports/default", "--episode", "coding-03"],
    );
    assert!(show.status.success(), "{}", text(&show.stderr));
    assert!(dir
        .path()
        .join("reports/default/episodes/coding-03.html")
        .is_file());
}

/// The bundled configurations are read from the binary where no such file is; `init` writes them to edit,
/// and replaces none without --force.
#[test]
fn bundled_configs_are_read_anywhere_and_init_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = super::subset(dir.path(), 3);
    let data = data.to_str().unwrap();
    let sweep = in_dir(
        dir.path(),
        &[
            "sweep",
            "--grid",
            "configs/sweep_presets.toml",
            "--dataset",
            data,
            "--config",
            "configs/default.toml",
        ],
    );
    let stderr = text(&sweep.stderr);
    assert!(sweep.status.success(), "{stderr}");
    assert!(
        stderr.contains("no configs/sweep_presets.toml here: ctxbench reads its bundled copy"),
        "{stderr}"
    );
    for (kind, file, bundled) in [
        ("run", "ctxbench.toml", "configs/default.toml"),
        ("sweep", "sweep.toml", "configs/sweep.toml"),
        (
            "sweep-presets",
            "sweep_presets.toml",
            "configs/sweep_presets.toml",
        ),
    ] {
        let init = in_dir(dir.path(), &["init", kind]);
        assert!(init.status.success(), "{}", text(&init.stderr));
        assert_eq!(
            std::fs::read(dir.path().join(file)).unwrap(),
            std::fs::read(root().join(bundled)).unwrap()
        );
    }
    let again = in_dir(dir.path(), &["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(
        text(&again.stderr),
        "error: 'ctxbench.toml' already exists, and `init` replaces no file\n  hint: give another file \
         with --out, or --force to replace it\n"
    );
    let run = in_dir(
        dir.path(),
        &[
            "run",
            "--config",
            "ctxbench.toml",
            "--dataset",
            data,
            "--strategies",
            "none,pipeline",
        ],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(dir.path().join("reports/ctxbench/report.html").is_file());
}

/// A command that fails says what failed, its cause once and what to do, each line within 100 columns, and
/// exits 2.
#[test]
fn errors_say_their_cause_once_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["run", "--dataset", "mine.jsonl"],
            "ctxbench import TRACES -o mine.jsonl",
        ),
        (
            &["run", "--config", "mine.toml"],
            "ctxbench init -o mine.toml",
        ),
        (
            &["sweep", "--grid", "grid.toml"],
            "ctxbench init -o grid.toml",
        ),
        (&["validate", "gone/data.jsonl"], "ctxbench gen"),
    ];
    for (args, hint) in cases {
        let out = in_dir(dir.path(), args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert_eq!(
            stderr.matches("No such file or directory").count(),
            1,
            "{stderr}"
        );
        assert!(!stderr.contains("os error"), "{stderr}");
        assert!(
            stderr.contains("  hint: ") && stderr.contains(hint),
            "{stderr}"
        );
        assert!(stderr.lines().all(|l| l.chars().count() <= 100), "{stderr}");
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "a command that failed wrote nothing"
    );
}
