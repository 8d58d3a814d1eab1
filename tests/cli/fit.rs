//! `ctxbench usage` shows the fit of the context a trace left out (recorded ≈ U + k × replayed per episode,
//! [`ctxbench::replay::fit`]): its worst residual per episode and per call, what k is, whether the context is
//! one constant block (only then named as the importer names it), a fit that is 0 by construction said to be,
//! and a call past 3% flagged.

use crate::{ctxbench, root, text};

#[test]
fn usage_shows_the_fit_per_episode_and_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.jsonl");
    let fixtures = root().join("tests/fixtures");
    let files = [
        fixtures.join("import/claude_code_parallel.jsonl"),
        fixtures.join("import/aider_clear.md"),
        fixtures.join("compacted/claude_code_2.1.39_auto_compact.jsonl"),
    ];
    let mut args = vec!["import", "-o", data.to_str().unwrap()];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let out = ctxbench(&args, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ctxbench(&["usage", data.to_str().unwrap(), "--per-call"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let flat = stdout.replace("\n  ", " ").replace('\n', " ");
    assert!(stdout.contains("| ratio | fit |"), "{stdout}");
    // Claude Code, three calls, no change shown: k fitted, one constant block named as the importer names it,
    // the worst call 0.4% over its record; the ratio is 1 by construction. Counted at that k, the replay's U
    // is the blocks' mean, 3,166 (3,165 on o200k_base's own counts: the rounding of each item at k).
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| claude_code_parallel.jsonl"))
        .unwrap();
    assert!(row.ends_with("| 1.000* | +0.4% |"), "{row}");
    assert!(
        flat.contains(
            "claude_code_parallel.jsonl: recorded ≈ U + k × replayed with k = 1.715 (the model's tokens per \
             token counted, fitted), U = 3166 tokens, constant: Claude Code's system prompt and tool schemas; \
             its worst residual +0.4% at call 1"
        ),
        "{flat}"
    );
    assert!(
        flat.contains(
            "claude_code_parallel.jsonl (counted with o200k_base at k = 1.715: the model's tokens)"
        ) && flat.contains("every item and every text a strategy writes counted as 1.715 ×"),
        "{flat}"
    );
    for call in [
        "| 0 | 3204 | 3204 | 3000 | 200 | – | 1.000 | -0.1% |",
        "| 1 | 3293 | 3293 | 3200 | 90 | – | 1.000 | +0.4% |",
    ] {
        assert!(stdout.contains(call), "{call}\n{stdout}");
    }
    // gpt-4o-mini counted with o200k_base: k is 1, given (its replies' received counts are their cl100k_base
    // counts, so the reports are aider's own, o200k_base for a gpt-4o model). One call: as many parameters as
    // calls, said to be 0 by construction, never a result.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| aider_clear.md#context2"))
        .unwrap();
    assert!(row.ends_with("| +0.0%* |"), "{row}");
    assert!(
        flat.contains(
            "aider_clear.md#context2: recorded ≈ U + k × replayed with k = 1 (given: the record is the \
             agent's own count with o200k_base, the tokenizer counting here)"
        ) && flat.contains("the residual is 0 by construction and says nothing"),
        "{flat}"
    );
    // The trimmed compacted session: least squares wants k past 2, held there, so the residuals are not 0 by
    // construction; the first call is far off and flagged, and the block is not called the system prompt.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| claude_cod") && l.contains("| 152 |"))
        .unwrap();
    assert!(row.ends_with("%! |"), "{row}");
    let sentence = flat
        .split("claude_code_2.1.39_auto_compact.jsonl: recorded ≈")
        .nth(1)
        .unwrap();
    assert!(
        sentence.contains("held at the end of 0.5–2")
            && sentence.contains("flagged: more than 3% on a call")
            && sentence.contains("changing where the trace shows it does")
            && !sentence
                .split("flagged")
                .next()
                .unwrap()
                .contains("system prompt"),
        "{sentence}"
    );
}

/// An aider session the fit flags (session0288: +3.9% at call 4, with its applied edits sized and aider's
/// summaries of older turns at calls 2 and 6 placed by aider's rule) says where the summaries replace older
/// turns and names what aider can change without the transcript showing it; skipped, saying why, without
/// ../shared/traces.
#[test]
fn a_flagged_aider_session_names_what_its_transcript_does_not_show() {
    let Some(files) = crate::shared_trace_files() else {
        return;
    };
    let trace = files
        .iter()
        .find(|f| f.to_string_lossy().contains("session0288"))
        .expect("session0288 among the shared traces");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d.jsonl");
    let out = ctxbench(
        &[
            "import",
            "-o",
            data.to_str().unwrap(),
            trace.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = ctxbench(&["usage", data.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let flat = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains(
            "growing by k × the sizes of the 5 applied edits the trace shows, holding from each of calls 2, \
             6 on the summary of older turns the agent sent in their place, which the trace does not hold); \
             its worst residual +3.9% at call 4; flagged: more than 3% on a call (what can change without \
             the trace showing it: the size of each summary of older turns aider sent, which the transcript \
             does not hold and on which aider's rule for when to summarize again depends, and the repo \
             map, which aider recomputes for each message within its budget)"
        ),
        "{flat}"
    );
}
