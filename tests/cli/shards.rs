//! Shards and their merge: 1, 3 and 7 shard runs merged give one run's tables, records and per-strategy figures
//! byte for byte; shards that are not the N of one run are refused, named.

use std::path::Path;

use crate::{ctxbench, ctxbench_run, subset, text};

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()))
}

fn merge(dirs: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["merge".to_owned()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend([
        "--out".to_owned(),
        out.display().to_string(),
        "--name".into(),
        "one".into(),
    ]);
    ctxbench(&args.iter().map(String::as_str).collect::<Vec<_>>(), None)
}

/// The row tables a run appends to: its export manager's row exporters, the list the merge reads too.
fn row_tables(dir: &Path) -> Vec<&'static str> {
    let catalog = std::sync::Arc::new(ctxbench::metrics::Catalog::standard());
    let tables: Vec<&str> = ctxbench::report::ExportManager::standard(dir, &catalog)
        .row_tables()
        .map(|t| t.file_name())
        .collect();
    assert!(tables.contains(&"steps.csv"), "{tables:?}");
    tables
}

#[test]
fn merged_shards_equal_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 11);
    let single = dir.path().join("one");
    let out = ctxbench_run(&data, None, &single, &["--name", "one"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for n in [1usize, 3, 7] {
        let shards: Vec<_> = (0..n)
            .map(|i| {
                let d = dir.path().join(format!("n{n}-s{i}"));
                let spec = format!("{i}/{n}");
                let out = ctxbench_run(&data, None, &d, &["--shard", &spec, "--name", "one"], None);
                assert!(out.status.success(), "{spec}: {}", text(&out.stderr));
                assert!(d.join("shard.jsonl").exists(), "{spec} keeps its entries");
                d
            })
            .collect();
        // Given in reverse order: the merge orders shards by index.
        let dirs: Vec<&Path> = shards.iter().rev().map(|d| d.as_path()).collect();
        let merged = dir.path().join(format!("merged-{n}"));
        let out = merge(&dirs, &merged);
        assert!(out.status.success(), "{n} shards: {}", text(&out.stderr));
        for file in row_tables(&merged)
            .iter()
            .chain(&["summary.json", "report.md"])
        {
            assert!(
                read(&single, file) == read(&merged, file),
                "{n} shards: {file} differs from one run's"
            );
        }
        assert!(!merged.join("resume.jsonl").exists() && !merged.join("shard.jsonl").exists());
    }
    // More shards than episodes: the shards past the last episode are complete and empty.
    let few = dir.path().join("few");
    std::fs::create_dir(&few).unwrap();
    let data = subset(&few, 2);
    let single = few.join("one");
    assert!(ctxbench_run(&data, None, &single, &["--name", "one"], None)
        .status
        .success());
    let shards: Vec<_> = (0..4)
        .map(|i| {
            let d = few.join(format!("s{i}"));
            let spec = format!("{i}/4");
            let out = ctxbench_run(&data, None, &d, &["--shard", &spec, "--name", "one"], None);
            assert!(out.status.success(), "{spec}: {}", text(&out.stderr));
            d
        })
        .collect();
    let merged = few.join("merged");
    let dirs: Vec<&Path> = shards.iter().map(|d| d.as_path()).collect();
    assert!(merge(&dirs, &merged).status.success());
    assert!(read(&single, "summary.json") == read(&merged, "summary.json"));
}

#[test]
fn shards_of_another_run_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 5);
    let shard = |name: &str, spec: &str, extra: &[&str]| {
        let d = dir.path().join(name);
        let mut args = vec!["--shard", spec];
        args.extend_from_slice(extra);
        let out = ctxbench_run(&data, None, &d, &args, None);
        assert!(out.status.success(), "{spec}: {}", text(&out.stderr));
        d
    };
    let s0 = shard("s0", "0/2", &[]);
    let s1 = shard("s1", "1/2", &[]);
    let wide = shard("wide", "1/2", &["--window", "64000"]);
    let third = shard("third", "0/3", &[]);
    // The same episodes in another order: another dataset.
    let reversed = dir.path().join("reversed.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&data)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.reverse();
    std::fs::write(&reversed, lines.join("\n") + "\n").unwrap();
    let other = dir.path().join("other");
    let out = ctxbench_run(&reversed, None, &other, &["--shard", "1/2"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out_dir = dir.path().join("merged");
    for (dirs, says) in [
        (vec![s0.as_path()], "missing shard(s) 1/2"),
        (vec![s0.as_path(), s0.as_path()], "given twice"),
        (vec![s0.as_path(), wide.as_path()], "context_window"),
        (vec![s0.as_path(), third.as_path()], "not from one split"),
        (vec![s0.as_path(), other.as_path()], "different datasets"),
        (vec![s0.as_path(), dir.path()], "not a completed shard run"),
    ] {
        let out = merge(&dirs, &out_dir);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
        assert!(!out_dir.exists(), "a refused merge writes nothing");
    }
    assert!(merge(&[s1.as_path(), s0.as_path()], &out_dir)
        .status
        .success());
    // A shard is resumed only as itself: the shard is part of the configuration its journal records.
    let bad = ctxbench(&["run", "--shard", "2/2"], None);
    assert!(
        text(&bad.stderr).contains("does not exist"),
        "{}",
        text(&bad.stderr)
    );
}
