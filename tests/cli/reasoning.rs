//! Reasoning replayed as each provider sends it back (`history::SentBack`): within its turn, dropped at the next
//! user message; the fast replay equals the reference on it (tests/cli/reference.rs), and
//! tests/cli/traces.rs pins a public deepseek-reasoner run.

use ctxbench::ItemKind;

use crate::import::{kinds, one};

/// An OpenAI Responses API request (its input items as OpenAI documents them: the fixture is built from the
/// cookbook "Better performance from reasoning models using the Responses API", not written by the API):
/// the instructions are its system message, reasoning items are reasoning sent back within their turn, calls
/// and their outputs pair up. Replayed, the first turn's reasoning is in the request that carries its tool
/// result and leaves once the user asks again; the second turn's is in the last request.
#[test]
fn openai_responses_reasoning_goes_back_within_its_turn() {
    let ep = one("openai_responses.json", Some("openai"));
    assert_eq!(
        kinds(&ep),
        [
            "system",
            "user",
            "reasoning",
            "tool_call",
            "tool_result",
            "assistant_text",
            "user",
            "reasoning",
            "tool_call",
            "tool_result"
        ]
    );
    assert!(ep.items[2].is_turn_reasoning() && ep.items[7].is_turn_reasoning());
    assert!(ep.items[2]
        .text()
        .starts_with("The user asks for the weather in Paris"));
    assert_eq!(ep.tools.len(), 1);
    let tok = ctxbench::Tokenizer::shared_default().unwrap();
    let llm = ctxbench::llm::mock::MockLlm::new(
        ctxbench::llm::mock::MockConfig::default(),
        std::sync::Arc::clone(&tok),
    );
    let none =
        ctxbench::strategy::NamedStrategy::new("none", ctxbench::strategy::StrategyConfig::None);
    let replay = ctxbench::replay::Replayer::new(std::sync::Arc::clone(&tok), &llm, 128_000)
        .replay(&ep, &none)
        .unwrap();
    let reasoning: Vec<usize> = replay
        .steps
        .iter()
        .map(|s| s.tokens_by_kind.get(ItemKind::Reasoning))
        .collect();
    let (r1, r2) = (tok.count_item(&ep.items[2]), tok.count_item(&ep.items[7]));
    assert_eq!(reasoning, [0, r1, 0, r2]);
}

/// The tokenizer that sized a trace's blocks of unrecorded context is in the dataset; `usage` and `run` counting
/// with another size them again (the record less their own replay) and say so, so that no block carries the
/// first tokenizer's error; the run's replay then equals the record call by call.
#[test]
fn blocks_sized_with_another_tokenizer_are_sized_again_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("cc.jsonl");
    let out = crate::ctxbench(
        &[
            "import",
            "tests/fixtures/import/claude_code.jsonl",
            "-o",
            &data.display().to_string(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", crate::text(&out.stderr));
    let written = std::fs::read_to_string(&data).unwrap();
    assert!(
        written.contains(r#""sized_with":"o200k_base""#),
        "{written}"
    );
    let flat = |b: &[u8]| {
        crate::text(b)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let usage = crate::ctxbench(
        &[
            "usage",
            &data.display().to_string(),
            "--encoding",
            "cl100k_base",
            "--per-call",
        ],
        None,
    );
    let said = flat(&usage.stdout);
    assert!(usage.status.success(), "{said}");
    assert!(
        said.contains("were sized with o200k_base at import, and are sized again with cl100k_base"),
        "{said}"
    );
    let run_dir = dir.path().join("run");
    let run = crate::ctxbench_run(&data, None, &run_dir, &["--encoding", "cl100k_base"], None);
    assert!(run.status.success(), "{}", crate::text(&run.stderr));
    let report = flat(&std::fs::read(run_dir.join("report.md")).unwrap());
    assert!(
        report.contains("was sized with o200k_base at import and sized again with cl100k_base"),
        "{report}"
    );
    assert!(
        report.contains("replays 1.000 of the recorded input, worst call 1.000"),
        "{report}"
    );
    // With the tokenizer that sized them, nothing is said.
    let run_dir = dir.path().join("same");
    let run = crate::ctxbench_run(&data, None, &run_dir, &[], None);
    assert!(run.status.success(), "{}", crate::text(&run.stderr));
    let report = flat(&std::fs::read(run_dir.join("report.md")).unwrap());
    assert!(!report.contains("sized again"), "{report}");
}
