//! Shards and their merge: 1, 3 and 7 shard runs merged give one run's tables, records and per-strategy figures
//! byte for byte; shards that are not the N of one run are refused, named; a shard hashes its own lines only, and
//! the merge checks every line of the dataset against the shard that replayed it.

use std::path::{Path, PathBuf};

use crate::{ctxbench, ctxbench_run, subset, text};

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()))
}

fn merge(dirs: &[&Path], out: &Path) -> std::process::Output {
    merge_with(dirs, out, &[])
}

fn merge_with(dirs: &[&Path], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["merge".to_owned()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend([
        "--out".to_owned(),
        out.display().to_string(),
        "--name".into(),
        "one".into(),
    ]);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    ctxbench(&args.iter().map(String::as_str).collect::<Vec<_>>(), None)
}

/// The files one run and a merge of its shards write alike: every CSV, JSON, JSON Lines and Markdown file of the
/// run directory but timings.csv (wall-clock times).
fn compared(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| {
            f != "timings.csv"
                && [".csv", ".json", ".jsonl", ".md"]
                    .iter()
                    .any(|x| f.ends_with(x))
        })
        .collect();
    files.sort();
    files
}

/// Every file of [`compared`] is the same in `merged` as in `single`, and there are no others.
fn assert_same_run(single: &Path, merged: &Path, what: &str) {
    let files = compared(single);
    assert_eq!(compared(merged), files, "{what}");
    for file in &files {
        assert!(
            read(single, file) == read(merged, file),
            "{what}: {file} differs from one run's"
        );
    }
}

/// `text` (JSON lines) with line `k` (from 0) changed in one word: still an episode, not the same line.
fn altered(text: &str, k: usize) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let changed = lines[k].replacen(" the ", " teh ", 1);
    assert_ne!(changed, lines[k], "line {k} has no ' the '");
    lines[k] = changed;
    lines.join("\n") + "\n"
}

/// Runs shard `spec` of `data` into `out`, named as the one run.
fn shard_run(data: &Path, out: &Path, spec: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--shard", spec, "--name", "one"];
    args.extend_from_slice(extra);
    ctxbench_run(data, None, out, &args, None)
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
        let files = compared(&single);
        for file in row_tables(&merged)
            .iter()
            .chain(&["summary.json", "report.md"])
        {
            assert!(files.iter().any(|f| f == file), "{file}: {files:?}");
        }
        assert_same_run(&single, &merged, &format!("{n} shards"));
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
        let stderr = crate::unwrapped(&text(&out.stderr));
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
        crate::unwrapped(&text(&bad.stderr)).contains("does not exist"),
        "{}",
        crate::unwrapped(&text(&bad.stderr))
    );
}

/// The merge reads the dataset once and checks each line against the shard that replayed it: a line changed since
/// the shards ran is refused whether it is shard 0's or one shard 0 never read (shard 1's), naming the line and
/// the shard; so is an episode more, a dataset that is gone (saying how to give it), and a shard of the previous
/// journal format. Given where it moved, the dataset merges into one run's outputs.
#[test]
fn the_merge_checks_every_line_against_the_shard_that_replayed_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 6);
    let original = std::fs::read_to_string(&data).unwrap();
    let single = dir.path().join("one");
    let out = ctxbench_run(&data, None, &single, &["--name", "one"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| {
            let d = dir.path().join(format!("s{i}"));
            let out = shard_run(&data, &d, &format!("{i}/2"), &[]);
            assert!(out.status.success(), "{}", text(&out.stderr));
            d
        })
        .collect();
    let dirs: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    let out_dir = dir.path().join("merged");
    let refused = |extra: &[&str], says: &[&str]| {
        let out = merge_with(&dirs, &out_dir, extra);
        let stderr = crate::unwrapped(&text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        for s in says {
            assert!(stderr.contains(s), "{s}: {stderr}");
        }
        assert!(!out_dir.exists(), "a refused merge writes nothing");
    };
    for k in [0, 3] {
        std::fs::write(&data, altered(&original, k)).unwrap();
        let owner = format!("shard {}/2 in '{}'", k % 2, shards[k % 2].display());
        refused(
            &[],
            &[
                &format!("line {} of '{}'", k + 1, data.display()),
                &owner,
                "--dataset",
            ],
        );
    }
    let first = original
        .lines()
        .next()
        .unwrap()
        .replacen("\"id\":\"", "\"id\":\"more-", 1);
    std::fs::write(&data, format!("{original}{first}\n")).unwrap();
    refused(&[], &["holds 7 episodes where the 2 shards replayed 6"]);

    std::fs::remove_file(&data).unwrap();
    refused(
        &[],
        &[
            &format!("the dataset '{}' is not there", data.display()),
            "--dataset PATH",
        ],
    );
    let moved = dir.path().join("moved.jsonl");
    std::fs::write(&moved, &original).unwrap();
    let out = merge_with(&dirs, &out_dir, &["--dataset", moved.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for file in row_tables(&out_dir).iter().chain(&["llm_calls.jsonl"]) {
        assert!(read(&single, file) == read(&out_dir, file), "{file}");
    }
    let summary = |d: &Path| -> serde_json::Value {
        serde_json::from_slice(&read(d, "summary.json")).unwrap()
    };
    let (one, merged) = (summary(&single), summary(&out_dir));
    assert_eq!(merged["dataset"]["sha256"], one["dataset"]["sha256"]);
    assert_eq!(merged["dataset"]["path"], moved.display().to_string());
    std::fs::remove_dir_all(&out_dir).unwrap();

    // A shard written by the previous journal format (its entries held the dataset's SHA-256).
    let journal = shards[1].join("shard.jsonl");
    let entries = std::fs::read_to_string(&journal).unwrap();
    let head = r#"{"ctxbench_journal":7,"#;
    assert!(entries.starts_with(head), "{entries}");
    std::fs::write(
        &journal,
        entries.replacen(head, r#"{"ctxbench_journal":6,"#, 1),
    )
    .unwrap();
    refused(
        &["--dataset", moved.to_str().unwrap()],
        &["journal format 6", "run the shards again"],
    );
}

/// A shard resumes on the lines it replayed and refuses a dataset where one of them changed, or where a finished
/// episode is no longer among its lines; a line of another shard it neither reads nor hashes, and the merge holds
/// that shard to it.
#[test]
fn a_shard_resumes_only_on_the_lines_it_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 6);
    let original = std::fs::read_to_string(&data).unwrap();
    let single = dir.path().join("one");
    assert!(ctxbench_run(&data, None, &single, &["--name", "one"], None)
        .status
        .success());
    // Shard 0/2 stops at a broken episode (position 4), after finishing those at positions 0 and 2.
    let with = |text: &str, k: usize, line: &str| -> String {
        let mut lines: Vec<&str> = text.lines().collect();
        lines[k] = line;
        lines.join("\n") + "\n"
    };
    let stop = |name: &str| -> PathBuf {
        std::fs::write(&data, with(&original, 4, r#"{"id": 3}"#)).unwrap();
        let d = dir.path().join(name);
        let out = shard_run(&data, &d, "0/2", &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let partial = dir.path().join(format!("{name}.partial"));
        let journal = std::fs::read_to_string(partial.join("resume.jsonl")).unwrap();
        assert_eq!(journal.lines().count(), 3, "{journal}");
        d
    };
    let resume = |d: &Path, dataset: String| {
        std::fs::write(&data, dataset).unwrap();
        shard_run(&data, d, "0/2", &["--resume"])
    };
    let s0 = stop("s0");
    let out = resume(&s0, altered(&original, 0));
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("changed since the shard replayed it")
            && stderr.contains(&format!("line 1 of '{}'", data.display()))
            && stderr.contains("s0.partial' and run the shard again"),
        "{stderr}"
    );
    // A line of shard 1's changed: shard 0 resumes (it reads its own lines only), the merge refuses shard 1.
    let out = resume(&s0, altered(&original, 1));
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(&data, &original).unwrap();
    let s1 = dir.path().join("s1");
    assert!(shard_run(&data, &s1, "1/2", &[]).status.success());
    let merged = dir.path().join("merged");
    std::fs::write(&data, altered(&original, 1)).unwrap();
    let out = merge(&[&s0, &s1], &merged);
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("line 2 of '{}'", data.display())) && stderr.contains("shard 1/2"),
        "{stderr}"
    );
    std::fs::write(&data, &original).unwrap();
    let out = merge(&[&s0, &s1], &merged);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_same_run(&single, &merged, "a resumed shard merged");

    // Two episodes swapped: the finished one at position 0 is shard 1's now.
    let s0 = stop("s0b");
    let lines: Vec<&str> = original.lines().collect();
    let swapped = with(&with(&original, 0, lines[1]), 1, lines[0]);
    let out = resume(&s0, swapped);
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is no longer among its lines"), "{stderr}");
}

/// A shard's summary names the digest of its own lines, not the dataset's SHA-256 (which it does not compute):
/// `ctxbench show` of the shard checks that digest, so a line of another shard's may change, one of its own not.
#[test]
fn show_of_a_shard_checks_its_own_lines() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 4);
    let original = std::fs::read_to_string(&data).unwrap();
    let s1 = dir.path().join("s1");
    assert!(shard_run(&data, &s1, "1/2", &[]).status.success());
    let summary: serde_json::Value = serde_json::from_slice(&read(&s1, "summary.json")).unwrap();
    assert_eq!(summary["dataset"]["sha256"], "", "{summary}");
    assert_eq!(
        summary["dataset"]["lines_xxh3"].as_str().map(str::len),
        Some(32),
        "{summary}"
    );
    let show = || ctxbench(&["show", s1.to_str().unwrap()], None);
    std::fs::write(&data, altered(&original, 0)).unwrap();
    let out = show();
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(&data, altered(&original, 1)).unwrap();
    let out = show();
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("changed since the run") && stderr.contains("its lines' xxh3"),
        "{stderr}"
    );
}
