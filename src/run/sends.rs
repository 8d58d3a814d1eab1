//! `ctxbench sends`: the request each strategy sends at every call point of a dataset's episodes, as JSON
//! lines, for comparing a preset with its framework's own code (`scripts/conformance/`).
//!
//! Every LLM call a strategy makes is answered with one fixed text ([`STAND_IN_SUMMARY`]), so that a summary
//! is the same text on both sides of a comparison: the framework's driver answers its summarizer with the
//! same words. One line per call point and strategy:
//!
//! ```json
//! {"episode": "coding-05", "strategy": "inspect_compaction_trim", "step": 3, "item_index": 12,
//!  "tokens_before": 7450, "tokens": 6020, "fixed_tokens": 0, "failed": null,
//!  "request": {"instructions": [], "contents": [{"type": "message", "role": "system", "content": "..."}]}}
//! ```
//!
//! `tokens` is what the run counts for the request as sent (tool schemas and the reply's priming included),
//! `fixed_tokens` the part of it outside the request's instructions and contents (the tool schemas and the
//! context the trace did not record, which no strategy sees: a driver adds them to its model's count),
//! `failed` the error the framework would raise there ([`crate::strategy::Applied::failure`]); items are in
//! the dataset's format.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::history::dataset::read_all;
use crate::llm::{Llm, LlmRequest, LlmResponse, Usage};
use crate::replay::{Observer, Replayer};
use crate::strategy::{Applied, NamedStrategy};
use crate::tokens::Tokenizer;

/// What every strategy's LLM call is answered with.
pub const STAND_IN_SUMMARY: &str = "STAND-IN SUMMARY: the conversation so far, summarized.";

/// Answers every request with [`STAND_IN_SUMMARY`].
struct StandIn(Arc<Tokenizer>);

impl Llm for StandIn {
    fn model(&self) -> &'static str {
        "stand-in"
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        let input = self
            .0
            .count_request(&request.instructions, &request.contents);
        Ok(LlmResponse {
            text: STAND_IN_SUMMARY.to_owned(),
            usage: Usage {
                input_tokens: input as u64,
                output_tokens: self.0.count_text(STAND_IN_SUMMARY) as u64,
            },
            latency_ms: 0.0,
            meta: crate::llm::CallMeta::default(),
        })
    }
}

/// One request an observed replay sent: the strategy, the step, the request, the framework's failure there.
type Request = (String, usize, LlmRequest, Option<String>);

/// The requests an observed replay sent.
#[derive(Default)]
struct Sent(Mutex<Vec<Request>>);

impl Observer for Sent {
    fn observe(&self, strategy: &str, step: usize, _: &LlmRequest, sent: &LlmRequest, a: &Applied) {
        if let Ok(mut all) = self.0.lock() {
            all.push((strategy.to_owned(), step, sent.clone(), a.failure.clone()));
        }
    }
}

#[derive(Serialize)]
struct Line<'a> {
    episode: &'a str,
    strategy: &'a str,
    step: usize,
    item_index: usize,
    tokens_before: usize,
    tokens: usize,
    fixed_tokens: usize,
    failed: Option<&'a str>,
    request: &'a LlmRequest,
}

/// Writes, for every episode of `dataset` and every strategy, one JSON line per call point to `out`, replayed
/// with a window of `window` tokens and counted with `tokenizer`. Returns the lines written.
///
/// # Errors
/// A dataset that cannot be read, a strategy's harness fault, or output that cannot be written.
pub fn sends(
    dataset: &Path,
    strategies: &[NamedStrategy],
    window: usize,
    tokenizer: Arc<Tokenizer>,
    out: &mut dyn Write,
) -> Result<usize> {
    let llm = StandIn(Arc::clone(&tokenizer));
    let mut lines = 0;
    for episode in read_all(dataset)? {
        let sent = Sent::default();
        let replays = Replayer::new(Arc::clone(&tokenizer), &llm, window)
            .observed(&sent)
            .replay_all(&episode, strategies)?;
        let sent = sent.0.into_inner().unwrap_or_default();
        for (strategy, step, request, failed) in &sent {
            let Some(record) = replays
                .iter()
                .find(|r| r.strategy == *strategy)
                .and_then(|r| r.steps.get(*step))
            else {
                continue;
            };
            let line = Line {
                episode: &episode.id,
                strategy,
                step: *step,
                item_index: record.item_index,
                tokens_before: record.tokens_before,
                tokens: record.tokens_sent,
                fixed_tokens: record.tokens_sent.saturating_sub(
                    tokenizer.count_request(&request.instructions, &request.contents),
                ),
                failed: failed.as_deref(),
                request,
            };
            serde_json::to_writer(&mut *out, &line)
                .map_err(|e| Error::io("write", "stdout", e.into()))?;
            writeln!(out).map_err(|e| Error::io("write", "stdout", e))?;
            lines += 1;
        }
    }
    Ok(lines)
}
