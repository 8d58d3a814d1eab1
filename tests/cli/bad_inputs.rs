//! The bad-input corpus (tests/fixtures/bad/cases.toml): every malformed dataset goes through `validate` and
//! `run`, every malformed trace through `import`; each must give its expected error, naming the file and line,
//! with the right exit code and no panic.

use serde::Deserialize;

use crate::{ctxbench, root, text};

#[derive(Deserialize)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    file: String,
    format: Option<String>,
    line: usize,
    expect: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/bad/cases.toml")).unwrap();
    toml::from_str::<Cases>(&text).unwrap().case
}

#[test]
fn every_bad_input_has_an_expected_error() {
    let cases = cases();
    assert!(cases.len() >= 50, "the corpus has {} cases", cases.len());
    for kind in ["dataset", "import"] {
        for entry in std::fs::read_dir(root().join("tests/fixtures/bad").join(kind)).unwrap() {
            let name = format!("{kind}/{}", entry.unwrap().file_name().to_string_lossy());
            assert!(
                cases.iter().any(|c| c.file == name),
                "{name} has no case in cases.toml"
            );
        }
    }
}

fn no_panic(file: &str, out: &std::process::Output) {
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert!(
        !stderr.contains("panicked") && out.status.code().is_some(),
        "{file}: {stderr}"
    );
}

#[test]
fn bad_datasets_fail_validate_and_run_with_their_error() {
    for case in cases().iter().filter(|c| c.file.starts_with("dataset/")) {
        let path = format!("tests/fixtures/bad/{}", case.file);
        let out = ctxbench(&["validate", &path], None);
        no_panic(&case.file, &out);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{}: {stdout}", case.file);
        assert!(
            stdout.contains(&format!("{path}:{}: ", case.line)) && stdout.contains(&case.expect),
            "{}: expected line {} and {:?} in\n{stdout}",
            case.file,
            case.line,
            case.expect
        );
        let dir = tempfile::tempdir().unwrap();
        let out = ctxbench(
            &[
                "run",
                "--dataset",
                &path,
                "--out",
                dir.path().join("run").to_str().unwrap(),
            ],
            None,
        );
        no_panic(&case.file, &out);
        let stderr = crate::unwrapped(&text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", case.file);
        let name = case.file.trim_start_matches("dataset/");
        assert!(
            stderr.starts_with("error: ")
                && stderr.contains(name)
                && stderr.contains(&format!("line {}", case.line)),
            "{}: {stderr}",
            case.file
        );
    }
}

#[test]
fn bad_traces_fail_import_with_their_error() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("out.jsonl");
    for case in cases().iter().filter(|c| c.file.starts_with("import/")) {
        let path = format!("tests/fixtures/bad/{}", case.file);
        let format = case.format.as_deref().unwrap_or("auto");
        let out = ctxbench(
            &[
                "import",
                "--format",
                format,
                &path,
                "-o",
                out_file.to_str().unwrap(),
            ],
            None,
        );
        no_panic(&case.file, &out);
        let stderr = crate::unwrapped(&text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", case.file);
        assert!(
            stderr.contains(&path)
                && stderr.contains(&format!("at line {}: ", case.line))
                && stderr.contains(&case.expect),
            "{}: expected line {} and {:?} in\n{stderr}",
            case.file,
            case.line,
            case.expect
        );
        assert!(
            !out_file.exists(),
            "{}: a failed import wrote its output",
            case.file
        );
    }
}

/// An output directory that cannot be created (its parent is a file) stops the run with an error naming it.
#[test]
fn an_unwritable_output_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let out_dir = blocker.join("run");
    let data = crate::subset(dir.path(), 1);
    let out = crate::ctxbench_run(&data, None, &out_dir, &[], None);
    let stderr = crate::unwrapped(&text(&out.stderr));
    no_panic("unwritable", &out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("failed to create") && stderr.contains(&out_dir.display().to_string()),
        "{stderr}"
    );
}

/// A run that fails, or finds no episode, never touches the previous complete run in its output directory,
/// and says whether it finished anything; a folder that is not a run is never replaced.
#[test]
fn a_failed_run_keeps_the_previous_complete_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = crate::subset(dir.path(), 2);
    let out_dir = dir.path().join("run");
    let out = crate::ctxbench_run(&data, None, &out_dir, &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = std::fs::read(out_dir.join("steps.csv")).unwrap();
    let summary = std::fs::read(out_dir.join("summary.json")).unwrap();

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n").unwrap();
    let first = std::fs::read_to_string(&data).unwrap();
    let first = first.lines().next().unwrap().to_owned();
    let broken_first = dir.path().join("broken_first.jsonl");
    std::fs::write(&broken_first, format!("{{\"id\": 3}}\n{first}\n")).unwrap();
    for (bad, says) in [
        (&empty, "no episode"),
        (&broken_first, "failed before finishing an episode"),
    ] {
        let out = crate::ctxbench_run(bad, None, &out_dir, &[], None);
        let stderr = crate::unwrapped(&text(&out.stderr));
        no_panic("failed run", &out);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(std::fs::read(out_dir.join("steps.csv")).unwrap(), before);
        assert_eq!(
            std::fs::read(out_dir.join("summary.json")).unwrap(),
            summary
        );
        assert!(!dir.path().join("run.partial").exists(), "{stderr}");
    }
    // Broken after a good episode: that one is kept in run.partial for --resume, the previous run untouched,
    // and a fresh run there is refused until the user resumes or removes it.
    let broken_second = dir.path().join("broken_second.jsonl");
    std::fs::write(&broken_second, format!("{first}\n{{\"id\": 3}}\n")).unwrap();
    let out = crate::ctxbench_run(&broken_second, None, &out_dir, &[], None);
    let stderr = crate::unwrapped(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the 1 episode(s) it finished are in") && stderr.contains("run.partial"),
        "{stderr}"
    );
    assert!(stderr.contains("previous complete run"), "{stderr}");
    assert_eq!(
        std::fs::read(out_dir.join("summary.json")).unwrap(),
        summary
    );
    let out = crate::ctxbench_run(&data, None, &out_dir, &[], None);
    assert!(
        text(&out.stderr).contains("--resume"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(out_dir.join("summary.json")).unwrap(),
        summary
    );

    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep me").unwrap();
    let out = crate::ctxbench_run(&data, None, &mine, &[], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(crate::unwrapped(&text(&out.stderr)).contains("not a ctxbench run directory"));
    assert_eq!(
        std::fs::read_to_string(mine.join("notes.txt")).unwrap(),
        "keep me"
    );
}

/// An agent's own trace given to `validate` or `run` is recognised: one problem that names its format and the
/// `ctxbench import` command, not a parse error per line.
#[test]
fn a_raw_trace_points_to_import() {
    let dir = tempfile::tempdir().unwrap();
    for (file, format) in [
        ("claude_code.jsonl", "claude-code"),
        ("swe_agent.traj", "swe-agent"),
        ("aider.md", "aider"),
    ] {
        let path = format!("tests/fixtures/import/{file}");
        let out = ctxbench(&["validate", &path], None);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        assert!(
            stdout.contains(&format!("(format {format})"))
                && stdout.contains(&format!("ctxbench import {path} -o out.jsonl"))
                && stdout
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .contains("1 problem,"),
            "{stdout}"
        );
        let out = crate::ctxbench_run(
            std::path::Path::new(&path),
            None,
            &dir.path().join(file),
            &[],
            None,
        );
        let stderr = crate::unwrapped(&text(&out.stderr));
        no_panic(file, &out);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("ctxbench import"), "{stderr}");
    }
}

/// A chat template that raises on tool messages (`raise_exception`, as Hugging Face registers it) stops `run`
/// and `usage` with the template's file, line and message: a request it cannot render is never counted as 0
/// tokens.
#[test]
fn a_failing_chat_template_stops_the_count_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = dir.path().join("tokenizer.json");
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false,
                          "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"<s>": 0, "[UNK]": 1}, "unk_token": "[UNK]"}
    });
    std::fs::write(&tokenizer, json.to_string()).unwrap();
    let template = dir.path().join("no_tools.jinja");
    std::fs::write(
        &template,
        "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n\
         {% if m.role == 'tool' %}{{ raise_exception('tool results are not supported') }}{% endif %}\
         {% endfor %}",
    )
    .unwrap();
    // A trace that records its usage (so that `usage` replays it), with tool results.
    let data = dir.path().join("mini.jsonl");
    let import = ctxbench(
        &[
            "import",
            "tests/fixtures/import/mini_swe_agent_1_1.json",
            "-o",
            &data.display().to_string(),
        ],
        None,
    );
    assert!(import.status.success(), "{}", text(&import.stderr));
    let (tok, tpl) = (
        tokenizer.display().to_string(),
        template.display().to_string(),
    );
    let run = crate::ctxbench_run(
        &data,
        None,
        &dir.path().join("out"),
        &["--tokenizer", &tok, "--chat-template", &tpl],
        Some(1),
    );
    let usage = ctxbench(
        &[
            "usage",
            &data.display().to_string(),
            "--tokenizer",
            &tok,
            "--chat-template",
            &tpl,
        ],
        None,
    );
    for (what, out) in [("run", &run), ("usage", &usage)] {
        no_panic(what, out);
        // Errors are wrapped at 100 columns.
        let stderr = text(&out.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!out.status.success(), "{what}: {}", text(&out.stdout));
        assert!(
            stderr.contains(
                "the chat template 'no_tools.jinja' failed to render at line 2: tool results are not supported"
            ) && stderr.contains("a message of role `tool`"),
            "{what}: {stderr}"
        );
    }
    assert!(!dir.path().join("out").exists(), "no run directory is left");
}
