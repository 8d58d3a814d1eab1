//! The shape of the code itself: no source file grows past what one reader takes in.

use std::path::PathBuf;

/// The most lines a Rust source file may have.
const MAX_LINES: usize = 700;

/// Every `.rs` file under `dir`.
fn rust_files(dir: PathBuf, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_is_over_700_lines() {
    let mut files = vec![super::root().join("build.rs")];
    for dir in ["src", "tests", "benches", "examples"] {
        let dir = super::root().join(dir);
        if dir.is_dir() {
            rust_files(dir, &mut files);
        }
    }
    assert!(files.len() > 50, "the walk found the sources");
    let long: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these by job (at most {MAX_LINES} lines each): {long:?}"
    );
}
