//! What import says an imported dataset will let retention measure, on the real traces under ../shared/traces.

use std::path::PathBuf;

/// Import says, per episode, how many findings the agent found and needs later, and warns when no episode has
/// one: the public Claude Code sessions hold none but a commit hash one of them reports in its last answer,
/// and without that session none at all. On aider's sessions no automatic finding is aider's edit marker or a
/// bare common number.
#[test]
fn import_tells_what_retention_will_measure() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let import = |inputs: &[&PathBuf]| {
        let out_file = dir.path().join("out.jsonl");
        let mut args = vec!["import".to_owned()];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap().to_owned()));
        args.extend(["-o".to_owned(), out_file.to_str().unwrap().to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = crate::ctxbench(&args, None);
        let (stdout, stderr) = (crate::text(&out.stdout), crate::text(&out.stderr));
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout
                .lines()
                .chain(stderr.lines())
                .all(|l| l.chars().count() <= 100),
            "{stdout}{stderr}"
        );
        let episodes: Vec<serde_json::Value> = std::fs::read_to_string(&out_file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (stdout, stderr, episodes)
    };
    let of = |format: &str| -> Vec<&PathBuf> {
        files
            .iter()
            .filter(|f| f.parent().unwrap().ends_with(format))
            .collect()
    };
    let claude = of("claude-code");
    let (stdout, stderr, _) = import(&claude);
    // Lines are wrapped at 100 columns after the file's path, so where a line breaks depends on where the
    // traces are: compare with every run of whitespace made one space.
    let flat = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let (flat_out, flat_err) = (flat(&stdout), flat(&stderr));
    assert!(
        flat_out.contains(
            "'stop-hook-reflection-first-stop.jsonl': 19 items, 2 findings (1 found, needed later)"
        ),
        "{stdout}"
    );
    assert!(
        flat_out
            .contains("'hello-world-script.jsonl': 12 items, 1 finding (0 found, needed later)"),
        "{stdout}"
    );
    assert!(
        flat_err.contains("warning: 4 episodes without a finding the agent found and needed later"),
        "{stderr}"
    );
    let without: Vec<&PathBuf> = claude
        .into_iter()
        .filter(|f| !f.ends_with("stop-hook-reflection-first-stop.jsonl"))
        .collect();
    let (_, stderr, _) = import(&without);
    assert!(
        flat(&stderr).contains(
            "warning: no episode has a finding the agent found and needed later, so retention will \
             measure nothing here: add findings"
        ),
        "{stderr}"
    );
    let (_, _, episodes) = import(&of("aider"));
    for ep in &episodes {
        for f in ep["findings"].as_array().unwrap() {
            let evidence = f["evidence"][0].as_str().unwrap();
            assert!(
                !["SEARCH/REPLACE", "1000", "1024"].contains(&evidence),
                "{}: {evidence}",
                ep["id"]
            );
        }
    }
}
