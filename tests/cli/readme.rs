//! README.md is a user guide of at most 400 lines, and what it quotes of the console is what the commands print:
//! each block after a line `<!-- ctxbench ARGS -->` is a run of consecutive lines of what `ctxbench ARGS`
//! writes to stdout in an empty folder (the bundled dataset and configurations, as an installed ctxbench reads
//! them). When a change alters the output, run the command and paste what it prints.

use std::process::Command;

use super::{root, text};

#[test]
fn the_readme_quotes_what_the_commands_print() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    assert!(
        lines.len() <= 400,
        "README.md is {} lines: at most 400 (measurements and history go to docs/)",
        lines.len()
    );
    let mut quoted = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(args) = line
            .strip_prefix("<!-- ctxbench ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        assert!(
            lines.get(i + 1).is_some_and(|l| l.starts_with("```")),
            "README.md line {}: a quoted block follows `<!-- ctxbench {args} -->`",
            i + 1
        );
        let block: Vec<&str> = lines[i + 2..]
            .iter()
            .take_while(|l| !l.starts_with("```"))
            .copied()
            .collect();
        assert!(
            !block.is_empty(),
            "README.md line {}: an empty quote",
            i + 1
        );
        let dir = tempfile::tempdir().unwrap();
        let mut argv: Vec<&str> = args.split_whitespace().collect();
        argv.extend(["--out", "out"]);
        let out = Command::new(env!("CARGO_BIN_EXE_ctxbench"))
            .args(&argv)
            .current_dir(dir.path())
            .output()
            .expect("the binary runs");
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "ctxbench {args}: {}",
            text(&out.stderr)
        );
        let printed: Vec<&str> = stdout.lines().collect();
        assert!(
            printed.windows(block.len()).any(|w| w == block.as_slice()),
            "README.md line {}: the block after `<!-- ctxbench {args} -->` is not what the command prints; \
             it prints:\n{stdout}",
            i + 1
        );
        quoted += 1;
    }
    assert!(quoted >= 2, "README.md quotes {quoted} outputs");
}
