//! Summarization: the book's listing 6.6, faithfully, plus a rolling variant.
//!
//! ## What it does
//! At every call point: find the first user message; start after the last summarized position (at first, the
//! user message); keep the newest `keep_recent` items; format the items in between with the history
//! formatter (messages cut to `message_chars`, tool results to `tool_result_chars` characters, each followed
//! by `...`), ask the LLM for a summary, append `[Previous work summary]\n<summary>` to the instructions,
//! drop the summarized items and record the position, so that nothing is summarized twice. Exactly as the
//! listing, the recorded position is `len(preserved_start) - 1`, and the recent items are kept by count, so a
//! tool result can be kept while its call is summarized.
//!
//! With `rolling = true`, the previous summary is folded into the history of the next one and replaced by it,
//! so the instructions hold one summary, not one per summarization.
//!
//! ## Trade-offs
//! The biggest savings on long runs, at the price of an LLM call per summarization (cost and latency) and of
//! losing for good what the summary leaves out. The formatter's limits decide what a summary can ever
//! contain: a finding 300 characters into a tool output is never shown to the summarizer. Rewriting the
//! start of the context also loses the provider's prompt cache.
//!
//! ## Parameters
//! - `keep_recent` (5): newest items kept verbatim.
//! - `message_chars` (500), `tool_result_chars` (200): the history formatter's cuts.
//! - `rolling` (false): fold the previous summary into the new one.
//!
//! ## Example
//! `{"type": "summarization", "keep_recent": 5}`

use serde::{Deserialize, Serialize};

use super::{Applied, CallPoint, Change, LlmCall, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};

pub use crate::history::SUMMARY_PREFIX;

/// Parameters of [`Summarization`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizationConfig {
    /// Newest items kept verbatim.
    pub keep_recent: usize,
    /// Characters of a message shown to the summarizer.
    pub message_chars: usize,
    /// Characters of a tool result shown to the summarizer.
    pub tool_result_chars: usize,
    /// Fold the previous summary into the next one instead of appending another.
    pub rolling: bool,
}

impl Default for SummarizationConfig {
    fn default() -> Self {
        Self {
            keep_recent: 5,
            message_chars: 500,
            tool_result_chars: 200,
            rolling: false,
        }
    }
}

impl StrategySpec for SummarizationConfig {
    /// Checks the parameters.
    /// When the formatter limits are zero (the summarizer would see nothing).
    fn validate(&self) -> Result<()> {
        if self.message_chars == 0 || self.tool_result_chars == 0 {
            return Err(Error::Config(
                "summarization needs message_chars and tool_result_chars above 0".into(),
            ));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Summarization::new(self.clone()))
    }
}

/// The summarization strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct Summarization {
    config: SummarizationConfig,
    /// The listing's `context.state["last_summary_idx"]`.
    last_summary_idx: Option<usize>,
    /// Index of the instruction holding the rolling summary.
    rolling_slot: Option<usize>,
}

impl Summarization {
    /// A summarization strategy that has summarized nothing yet.
    #[must_use]
    pub fn new(config: SummarizationConfig) -> Self {
        Self {
            config,
            last_summary_idx: None,
            rolling_slot: None,
        }
    }

    /// The recorded position: the last item of the preserved start, or `None` before the first summary.
    #[must_use]
    pub fn last_summary_idx(&self) -> Option<usize> {
        self.last_summary_idx
    }

    /// The listing's `format_history_for_summary` of `items`, with its cuts as parameters.
    #[must_use]
    pub fn transcript(&self, items: &[Item]) -> Transcript {
        Transcript::of_items(
            items,
            self.config.message_chars,
            self.config.tool_result_chars,
        )
    }
}

/// Asks `llm` for a summary of `transcript`.
///
/// # Errors
/// The failed call, with its error text, for the caller to record; the caller must leave the request as it
/// was.
pub(crate) fn request_summary(
    llm: &dyn Llm,
    transcript: &Transcript,
) -> std::result::Result<(String, LlmCall), LlmCall> {
    ask(llm, &transcript.request())
}

/// Sends `request` to `llm`: its answer and the call, or the failed call.
///
/// # Errors
/// The failed call, with its error text, for the caller to record; the caller must leave the request as it
/// was.
pub(crate) fn ask(
    llm: &dyn Llm,
    request: &LlmRequest,
) -> std::result::Result<(String, LlmCall), LlmCall> {
    match llm.generate(request) {
        Ok(response) => Ok((
            response.text,
            LlmCall {
                input_tokens: response.usage.input_tokens,
                output_tokens: response.usage.output_tokens,
                latency_ms: response.latency_ms,
                error: None,
            },
        )),
        Err(e) => Err(LlmCall {
            error: Some(e.to_string()),
            ..LlmCall::default()
        }),
    }
}

impl Strategy for Summarization {
    fn apply(&mut self, _: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        let Some(user_idx) = req.contents.iter().position(|i| i.is_role(Role::User)) else {
            return Ok(Applied::unchanged());
        };
        let last_summary_idx = self.last_summary_idx.unwrap_or(user_idx);
        let summary_start = last_summary_idx + 1;
        let Some(summary_end) = req.contents.len().checked_sub(self.config.keep_recent) else {
            return Ok(Applied::unchanged());
        };
        if summary_end <= summary_start {
            return Ok(Applied::unchanged());
        }
        let previous = self
            .rolling_slot
            .filter(|_| self.config.rolling)
            .and_then(|slot| req.instructions.get(slot))
            .and_then(|s| s.strip_prefix(SUMMARY_PREFIX))
            .map(str::to_owned);
        let transcript = self
            .transcript(&req.contents[summary_start..summary_end])
            .after(previous.as_deref());
        let (summary, call) = match request_summary(llm, &transcript) {
            Ok(done) => done,
            // The request stays exactly as it was; the failure is recorded, never committed as a summary.
            Err(failed) => return Ok(Applied::unchanged().with_call(failed)),
        };
        let text = format!("{SUMMARY_PREFIX}{summary}");
        match self.rolling_slot.filter(|_| previous.is_some()) {
            Some(slot) => req.instructions[slot] = text,
            None => {
                req.append_instructions(text);
                self.rolling_slot = Some(req.instructions.len() - 1);
            }
        }
        let summarized = summary_end - summary_start;
        req.contents.drain(summary_start..summary_end);
        // len(preserved_start) - 1, as in the listing: the same position as before.
        self.last_summary_idx = Some(summary_start - 1);
        // A summary joined the instructions: nothing of the request can be taken as it was.
        Ok(Applied {
            summarized_items: summarized,
            ..Applied::new(Change::Replaced).with_call(call)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::llm::{LlmResponse, Usage};
    use crate::strategy::testing::{run, state, Failing};

    /// Records every summarization history and answers "S<n>".
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Llm for Recorder {
        fn model(&self) -> &str {
            "recorder"
        }
        fn generate(&self, req: &LlmRequest) -> Result<LlmResponse> {
            let mut seen = self.0.lock().unwrap();
            seen.push(req.instructions[0].clone());
            Ok(LlmResponse {
                text: format!("S{}", seen.len()),
                usage: Usage::default(),
                latency_ms: 0.0,
                meta: Default::default(),
            })
        }
    }

    fn items(n: usize) -> Vec<Item> {
        let mut v = vec![Item::system("sys"), Item::user("task")];
        v.extend((0..n).map(|i| Item::assistant(format!("a{i}"))));
        v
    }

    /// The listing worked by hand: 2 + 8 items, keep_recent 5.
    /// user_idx = 1, start = 2, end = 10 - 5 = 5 → summarize [a0, a1, a2]; contents = [sys, task, a3..a7];
    /// last_summary_idx = 1. Next call with 4 new items (11 items): start 2, end 6 → summarize [a3..a6], keep [a7, b0..b3].
    #[test]
    fn reproduces_listing_6_6_by_hand() {
        let st = state(1000);
        let llm = Recorder::default();
        let mut s = Summarization::new(SummarizationConfig::default());
        let mut req = LlmRequest::from_contents(items(8));
        let a = run(&mut s, &st, &mut req, &llm);
        assert_eq!(a.summarized_items, 3);
        assert_eq!(
            req.instructions,
            vec!["[Previous work summary]\nS1".to_string()]
        );
        let texts: Vec<&str> = req.contents.iter().map(Item::text).collect();
        assert_eq!(texts, ["sys", "task", "a3", "a4", "a5", "a6", "a7"]);
        assert_eq!(s.last_summary_idx(), Some(1));
        let history = llm.0.lock().unwrap()[0].clone();
        assert!(history.contains(
            "<history>\n[assistant]: a0...\n[assistant]: a1...\n[assistant]: a2...\n</history>"
        ));

        req.contents.extend([
            Item::assistant("b0"),
            Item::assistant("b1"),
            Item::assistant("b2"),
            Item::assistant("b3"),
        ]);
        run(&mut s, &st, &mut req, &llm);
        let texts: Vec<&str> = req.contents.iter().map(Item::text).collect();
        assert_eq!(texts, ["sys", "task", "a7", "b0", "b1", "b2", "b3"]);
        assert_eq!(
            req.instructions.len(),
            2,
            "each summary is appended, as in the listing"
        );
        // Nothing is summarized twice.
        let second = llm.0.lock().unwrap()[1].clone();
        assert!(second.contains("[assistant]: a3...") && !second.contains("a2..."));
        // Too little left: no call.
        assert_eq!(run(&mut s, &st, &mut req, &llm), Applied::unchanged());
    }

    #[test]
    fn formatter_cuts_characters_and_marks_them() {
        let long = "é".repeat(600);
        let transcript = Transcript::of_items(
            &[
                Item::user(long.clone()),
                Item::tool_call("1", "grep", "{\"q\":\"x\"}"),
                Item::tool_result("1", "grep", long),
            ],
            500,
            200,
        );
        let lines: Vec<&str> = transcript.as_str().lines().collect();
        assert_eq!(lines[0], format!("[user]: {}...", "é".repeat(500)));
        assert_eq!(lines[1], "[Tool Call]: grep({\"q\":\"x\"})");
        assert_eq!(
            lines[2],
            format!("[Tool Result]: grep -> {}...", "é".repeat(200))
        );
    }

    #[test]
    fn rolling_keeps_one_summary() {
        let st = state(1000);
        let llm = Recorder::default();
        let mut s = Summarization::new(SummarizationConfig {
            rolling: true,
            ..SummarizationConfig::default()
        });
        let mut req = LlmRequest::from_contents(items(8));
        run(&mut s, &st, &mut req, &llm);
        req.contents
            .extend((0..6).map(|i| Item::assistant(format!("b{i}"))));
        run(&mut s, &st, &mut req, &llm);
        assert_eq!(
            req.instructions,
            vec!["[Previous work summary]\nS2".to_string()]
        );
        assert!(llm.0.lock().unwrap()[1].contains("[Previous summary]: S1"));
    }

    #[test]
    fn failed_call_leaves_request_unchanged() {
        let st = state(1000);
        let mut s = Summarization::new(SummarizationConfig::default());
        let mut req = LlmRequest::from_contents(items(8));
        let before = req.clone();
        let a = run(&mut s, &st, &mut req, &Failing);
        assert_eq!(req, before);
        assert_eq!(a.failures(), 1);
        assert!(!a.changed());
        assert_eq!(s.last_summary_idx(), None);
    }
}
