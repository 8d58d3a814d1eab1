//! README.md is a user guide of at most 400 lines, and what it quotes of the console is what the commands print:
//! each block after a line `<!-- ctxbench ARGS -->` is whole paragraphs (runs of lines between blank lines) of
//! what `ctxbench ARGS --out out` writes to stdout in an empty folder, as the installed binary runs there (the
//! bundled dataset generated in memory, the configurations read from the binary).
//!
//! When a change alters an output, rewrite the quotes from today's output with
//! `CTXBENCH_README_WRITE=1 cargo test --release --test cli readme` (each block becomes as many paragraphs as
//! it has, from the paragraph whose first word its own first line starts with) and read the diff.

use std::process::Command;

use super::{root, text};

/// The README's size limit, in lines (measurements and history go to docs/).
const MAX_LINES: usize = 400;

/// A quote: the line of its marker (0-based), the arguments, and the lines of its block.
struct Quote {
    marker: usize,
    args: String,
    from: usize,
    to: usize,
}

fn quotes(lines: &[&str]) -> Vec<Quote> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(args) = line
            .strip_prefix("<!-- ctxbench ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        assert!(
            lines.get(i + 1).is_some_and(|l| l.starts_with("```")),
            "README.md line {}: a fenced block follows `<!-- ctxbench {args} -->`",
            i + 1
        );
        let from = i + 2;
        let to = from
            + lines[from..]
                .iter()
                .take_while(|l| !l.starts_with("```"))
                .count();
        assert!(to > from, "README.md line {}: an empty quote", i + 1);
        assert!(
            to < lines.len(),
            "README.md line {}: the quote is not closed",
            i + 1
        );
        out.push(Quote {
            marker: i,
            args: args.to_owned(),
            from,
            to,
        });
    }
    out
}

/// Paragraphs: runs of non-blank lines.
fn paragraphs<'a>(lines: &[&'a str]) -> Vec<Vec<&'a str>> {
    lines
        .split(|l| l.trim().is_empty())
        .filter(|p| !p.is_empty())
        .map(<[&str]>::to_vec)
        .collect()
}

/// What `ctxbench ARGS --out out` prints to stdout in an empty folder.
fn printed(args: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut argv: Vec<&str> = args.split_whitespace().collect();
    argv.extend(["--out", "out"]);
    let out = Command::new(env!("CARGO_BIN_EXE_ctxbench"))
        .args(&argv)
        .current_dir(dir.path())
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "ctxbench {args} failed in an empty folder: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn the_readme_quotes_what_the_commands_print() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let quotes = quotes(&lines);
    assert!(
        quotes.len() >= 3,
        "README.md quotes {} outputs (run, presets, sweep)",
        quotes.len()
    );
    let write = std::env::var_os("CTXBENCH_README_WRITE").is_some();
    let mut rewritten: Vec<String> = Vec::new();
    let mut at = 0;
    let mut stale = Vec::new();
    for q in &quotes {
        let stdout = printed(&q.args);
        let out_lines: Vec<&str> = stdout.lines().collect();
        let said = paragraphs(&out_lines);
        let block = paragraphs(&lines[q.from..q.to]);
        let found = said.windows(block.len()).any(|w| w == block.as_slice());
        for l in &lines[q.from..q.to] {
            assert!(
                l.chars().count() <= 100,
                "README.md quotes a line of {} columns after `<!-- ctxbench {} -->`: the console keeps \
                 within 100",
                l.chars().count(),
                q.args
            );
        }
        if found {
            continue;
        }
        if !write {
            stale.push(format!(
                "README.md line {}: the block after `<!-- ctxbench {} -->` is not what the command prints \
                 (whole paragraphs of it); it prints:\n{stdout}",
                q.marker + 1,
                q.args
            ));
            continue;
        }
        // The paragraphs from the one whose first word the block's first line starts with.
        let first = block[0][0].split_whitespace().next().unwrap_or_default();
        let start = said
            .iter()
            .position(|p| p[0].split_whitespace().next() == Some(first))
            .unwrap_or_else(|| {
                panic!(
                    "`ctxbench {}` prints no paragraph starting with {first:?}; edit README.md line {} \
                     by hand. It prints:\n{stdout}",
                    q.args,
                    q.marker + 1
                )
            });
        let taken = &said[start..(start + block.len()).min(said.len())];
        rewritten.extend(lines[at..q.from].iter().map(|l| (*l).to_owned()));
        let joined: Vec<String> = taken.iter().map(|p| p.join("\n")).collect();
        rewritten.extend(joined.join("\n\n").lines().map(str::to_owned));
        at = q.to;
    }
    if write && at > 0 {
        rewritten.extend(lines[at..].iter().map(|l| (*l).to_owned()));
        std::fs::write(&path, rewritten.join("\n") + "\n").unwrap();
        eprintln!("README.md: quotes rewritten from today's output; read `git diff README.md`");
    }
    assert!(stale.is_empty(), "{}", stale.join("\n\n"));
    let count = std::fs::read_to_string(&path).unwrap().lines().count();
    assert!(
        count <= MAX_LINES,
        "README.md is {count} lines: at most {MAX_LINES} (measurements and history go to docs/)"
    );
}

#[test]
fn a_quote_is_whole_paragraphs_of_the_output() {
    let out = ["a", "b", "", "c", "d", "", "e"];
    let said = paragraphs(&out);
    let whole = paragraphs(&["c", "d"]);
    let part = paragraphs(&["d"]);
    let across = paragraphs(&["a", "b", "", "c", "d"]);
    let cut = paragraphs(&["b", "", "c", "d"]);
    assert!(said.windows(whole.len()).any(|w| w == whole.as_slice()));
    assert!(!said.windows(part.len()).any(|w| w == part.as_slice()));
    assert!(said.windows(across.len()).any(|w| w == across.as_slice()));
    assert!(!said.windows(cut.len()).any(|w| w == cut.as_slice()));
    let readme = [
        "x",
        "<!-- ctxbench run -->",
        "```text",
        "c",
        "d",
        "```",
        "y",
    ];
    let q = quotes(&readme);
    assert_eq!(
        (q.len(), q[0].args.as_str(), q[0].from, q[0].to),
        (1, "run", 3, 5)
    );
}
