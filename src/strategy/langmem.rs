//! LangMem's running summary, call for call: `SummarizationNode` / `summarize_messages` (langmem 0.0.30,
//! `langmem/short_term/summarization.py`) as a LangGraph agent runs it before every model call, over the
//! graph's messages, which keep everything (the node writes what is sent under `summarized_messages` and keeps
//! its `RunningSummary` in the graph's context).
//!
//! ## What it does
//! At every call point, over the whole history (the system message set aside, and the messages a previous
//! summary covered skipped), it counts the messages from the oldest on; at the first message where the count
//! reaches `max_tokens_before_summary` and what follows fits `max_tokens` less `max_summary_tokens` (and the
//! system message), everything up to it is summarized, the running summary extended (when the last of them is
//! a tool call, its result too). Once a summary exists every request is the system message, the summary as a
//! system message ('Summary of the conversation so far: …') and the messages after the summarized ones.
//! LangMem's own quirks are kept: what is sent resumes after as many messages as were summarized, counted from
//! the first one not yet summarized (a tool result pulled in out of order shifts it); the system message is
//! left out when the previous summary's text is in it; `max_summary_tokens` at or over `max_tokens` raises
//! (`ValueError`), which fails the episode there.
//!
//! ## Count
//! The `token_counter` the user passes, per message: ctxbench's count (the run's tokenizer; messages only, as
//! LangMem counts, so the tool schemas and unrecorded context are outside its budget). LangMem's default,
//! `count_tokens_approximately` (characters / 4), is not reproduced.
//!
//! ## Parameters
//! - `max_tokens`: LangMem's `max_tokens`; absent, `window_share` of the run's window.
//! - `window_share` (0.5): the share of the window `max_tokens` is when not given.
//! - `max_tokens_before_summary`: absent, `max_tokens` (LangMem's default).
//! - `max_summary_tokens` (256, LangMem's default).
//!
//! ## Example
//! `{"type": "langmem"}` or `{"type": "langmem", "max_tokens": 4000, "max_summary_tokens": 128}`

use serde::{Deserialize, Serialize};

use super::prompt::Prompt;
use super::{Applied, CallPoint, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};

/// LangMem's `DEFAULT_FINAL_SUMMARY_PROMPT`: the system message a running summary is sent as.
pub const LANGMEM_SUMMARY_OPENING: &str = "Summary of the conversation so far: ";

/// The characters of each message the summarizer is shown: all of them.
const WHOLE_TEXTS: usize = 1_000_000;

fn default_window_share() -> f64 {
    0.5
}

fn default_max_summary_tokens() -> usize {
    256
}

/// Parameters of [`Langmem`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LangmemConfig {
    /// LangMem's `max_tokens`; absent, `window_share` of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    /// The share of the window `max_tokens` is when not given.
    #[serde(default = "default_window_share")]
    pub window_share: f64,
    /// LangMem's `max_tokens_before_summary`; absent, `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_before_summary: Option<usize>,
    /// LangMem's `max_summary_tokens`.
    #[serde(default = "default_max_summary_tokens")]
    pub max_summary_tokens: usize,
}

impl Default for LangmemConfig {
    fn default() -> Self {
        Self {
            max_tokens: None,
            window_share: default_window_share(),
            max_tokens_before_summary: None,
            max_summary_tokens: default_max_summary_tokens(),
        }
    }
}

impl LangmemConfig {
    /// `max_tokens` in a run whose window is `window`.
    #[must_use]
    pub fn max_tokens(&self, window: usize) -> usize {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        self.max_tokens
            .unwrap_or_else(|| (self.window_share * window as f64).floor() as usize)
    }
}

impl StrategySpec for LangmemConfig {
    /// Checks that `window_share` is in (0, 1].
    fn validate(&self) -> Result<()> {
        if !(self.window_share > 0.0 && self.window_share <= 1.0) {
            return Err(Error::Config(format!(
                "langmem window_share {} is outside (0, 1]",
                self.window_share
            )));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Langmem::new(self.clone()))
    }

    fn budget(&self, context_window: usize) -> Option<usize> {
        Some(self.max_tokens(context_window))
    }
}

/// LangMem's `RunningSummary`.
#[derive(Debug, Clone)]
struct RunningSummary {
    summary: String,
    /// Where the last summarized message is in the history (LangMem finds it by its id).
    last: usize,
}

/// The strategy; see the module docs.
pub struct Langmem {
    config: LangmemConfig,
    /// The graph's messages: every item received, none dropped.
    history: Vec<Item>,
    /// The contents as this strategy last left them.
    sent: Vec<Item>,
    summary: Option<RunningSummary>,
}

impl Langmem {
    /// The strategy for `config`.
    #[must_use]
    pub fn new(config: LangmemConfig) -> Self {
        Self {
            config,
            history: Vec::new(),
            sent: Vec::new(),
            summary: None,
        }
    }

    /// Adds what the replay appended to the live request since the last call point to the history: the live
    /// request is what this strategy left plus the new items, less the reasoning of ended turns, which the
    /// replay takes out (and so does the history, the summary's place moving with it).
    fn receive(&mut self, live: &[Item]) {
        if !live.starts_with(&self.sent) {
            self.sent.retain(|i| !i.is_turn_reasoning());
            if let Some(s) = self.summary.as_mut() {
                let before = self.history[..=s.last]
                    .iter()
                    .filter(|i| i.is_turn_reasoning())
                    .count();
                s.last = s.last.saturating_sub(before);
            }
            self.history.retain(|i| !i.is_turn_reasoning());
        }
        if live.starts_with(&self.sent) {
            self.history.extend_from_slice(&live[self.sent.len()..]);
        } else {
            // A live request of another shape: the history starts anew from it.
            self.history = live.to_vec();
            self.summary = None;
        }
    }

    /// `summarize_messages` over the history: the contents to send, the items summarized and the LLM call.
    #[allow(clippy::too_many_lines)]
    fn summarize(
        &mut self,
        at: &CallPoint,
        llm: &dyn Llm,
    ) -> std::result::Result<(Vec<Item>, usize, Option<super::LlmCall>), String> {
        let count = |i: &Item| at.tokenizer.count_item(i);
        let max_tokens = self.config.max_tokens(at.context_window);
        let before_summary = self.config.max_tokens_before_summary.unwrap_or(max_tokens);
        if self.config.max_summary_tokens >= max_tokens {
            return Err(format!(
                "LangMem raises ValueError: `max_summary_tokens` ({}) must be less than `max_tokens` ({})",
                self.config.max_summary_tokens, max_tokens
            ));
        }
        let history = &self.history;
        // `_preprocess_messages`: the system message (the first message, when it is one) set aside.
        let system = usize::from(history.first().is_some_and(|i| i.is_role(Role::System)));
        #[allow(clippy::cast_possible_wrap)]
        let mut max_remaining = max_tokens as i64 - self.config.max_summary_tokens as i64;
        if system == 1 {
            #[allow(clippy::cast_possible_wrap)]
            {
                max_remaining -= count(&history[0]) as i64;
            }
        }
        let messages = &history[system..];
        if messages.is_empty() {
            return Ok((history.clone(), 0, None));
        }
        // The first message not yet summarized (found by the last summarized one's id).
        let done = self
            .summary
            .as_ref()
            .map_or(0, |s| s.last + 1 - system)
            .min(messages.len());
        let counts: Vec<usize> = messages[done..].iter().map(count).collect();
        let total: usize = counts.iter().sum();
        let mut n = 0usize;
        let mut cut = None;
        for (k, c) in counts.iter().enumerate() {
            n += c;
            #[allow(clippy::cast_possible_wrap)]
            if cut.is_none() && n >= before_summary && ((total - n) as i64) <= max_remaining {
                cut = Some(done + k);
            }
        }
        let mut summarized: Vec<usize> = cut.map_or_else(Vec::new, |c| (done..=c).collect());
        // A tool call last: its results join (the newest result of each id among the messages not yet
        // summarized, wherever it is).
        if let Some(Item::ToolCall { id, .. }) = summarized.last().map(|&m| &messages[m]) {
            let result = (done..messages.len()).rev().find(
                |&m| matches!(&messages[m], Item::ToolResult { call_id, .. } if call_id == id),
            );
            summarized.extend(result);
        }
        let previous = self.summary.clone();
        let mut call = None;
        if let Some(&last) = summarized.last() {
            let items: Vec<Item> = summarized.iter().map(|&m| messages[m].clone()).collect();
            let transcript = Transcript::of_items(&items, WHOLE_TEXTS, WHOLE_TEXTS)
                .after(previous.as_ref().map(|s| s.summary.as_str()));
            let request = Prompt::Ctxbench.summary_request(&transcript, "");
            match super::summarization::ask(llm, &request) {
                Ok((answer, ok)) => {
                    call = Some(ok);
                    self.summary = Some(RunningSummary {
                        summary: answer,
                        last: system + last,
                    });
                }
                // A failed call leaves the request as it was (ctxbench's contract; LangMem would raise).
                Err(failed) => return Ok((Vec::new(), usize::MAX, Some(failed))),
            }
        }
        let Some(summary) = &self.summary else {
            return Ok((history.clone(), 0, call));
        };
        // `_prepare_summarization_result`.
        let include_system = system == 1
            && !previous
                .as_ref()
                .is_some_and(|p| history[0].text().contains(p.summary.as_str()));
        let mut out = Vec::with_capacity(history.len() + 1);
        if include_system {
            out.push(history[0].clone());
        }
        out.push(Item::system(format!(
            "{LANGMEM_SUMMARY_OPENING}{}",
            summary.summary
        )));
        let from = (done + summarized.len()).min(messages.len());
        out.extend_from_slice(&messages[from..]);
        Ok((out, summarized.len(), call))
    }
}

impl Strategy for Langmem {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        self.receive(&req.contents);
        let (out, summarized, call) = match self.summarize(at, llm) {
            Ok(done) => done,
            Err(raised) => {
                self.sent.clone_from(&req.contents);
                return Ok(Applied {
                    failure: Some(raised),
                    ..Applied::unchanged()
                });
            }
        };
        let mut applied = if summarized == usize::MAX {
            // The summarizer's call failed: the request stays as it was.
            Applied::unchanged()
        } else {
            let mut applied = Applied::replaced(req, out);
            if applied.changed() {
                applied.summarized_items = summarized;
            }
            applied
        };
        applied.llm_calls.extend(call);
        self.sent.clone_from(&req.contents);
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state};

    /// A system message, a task and `n` call-and-result turns of `size` lines (the presets' history).
    fn agent(n: usize, size: usize) -> Vec<Item> {
        crate::strategy::presets::testing::agent_run(n, size).contents
    }

    fn config(max_tokens: usize) -> LangmemConfig {
        LangmemConfig {
            max_tokens: Some(max_tokens),
            ..LangmemConfig::default()
        }
    }

    /// By hand: 2 + 2n messages of known size; LangMem summarizes from the first message on until the count
    /// reaches max_tokens with the rest within max_tokens - 256 - the system message.
    #[test]
    fn summarizes_where_the_count_reaches_max_tokens_and_the_rest_fits() {
        let st = state(1_000_000);
        let items = agent(10, 30);
        let tok = &st.tokenizer;
        let sys = tok.count_item(&items[0]);
        let counts: Vec<usize> = items[1..].iter().map(|i| tok.count_item(i)).collect();
        let total: usize = counts.iter().sum();
        // Under max_tokens: nothing happens.
        let mut req = LlmRequest::from_contents(items.clone());
        let a = run(
            &mut Langmem::new(config(total + 300)),
            &st,
            &mut req,
            &mock(),
        );
        assert!(!a.changed());
        // max_tokens at 60% of the messages: the cut is the first message where the count reaches it and the
        // rest is at most max_tokens - 256 - sys.
        let max = total * 6 / 10;
        let mut n = 0;
        let cut = (0..counts.len())
            .find(|&k| {
                n += counts[k];
                n >= max && total - n + 256 + sys <= max
            })
            .unwrap();
        let mut req = LlmRequest::from_contents(items.clone());
        let mut s = Langmem::new(config(max));
        let a = run(&mut s, &st, &mut req, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        // A cut on a tool call takes its result too.
        let summarized = if matches!(items[1 + cut], Item::ToolCall { .. }) {
            cut + 2
        } else {
            cut + 1
        };
        assert_eq!(a.summarized_items, summarized);
        assert_eq!(req.contents[0], items[0]);
        assert!(req.contents[1].text().starts_with(LANGMEM_SUMMARY_OPENING));
        assert!(req.contents[1].is_summary());
        assert_eq!(req.contents[2..], items[1 + summarized..]);
        // The next call point: one more turn, under the budget again: the summary is sent, nothing new.
        let mut next = req.clone();
        next.contents.push(Item::tool_call("x", "run", "{}"));
        next.contents.push(Item::tool_result("x", "run", "ok"));
        let sent = next.clone();
        let a = run(&mut s, &st, &mut next, &mock());
        assert!(a.llm_calls.is_empty());
        assert_eq!(next, sent);
    }

    /// The summary is extended, not appended: one summary message at every call point.
    #[test]
    fn extends_one_running_summary() {
        let st = state(1_000_000);
        let mut s = Langmem::new(config(600));
        let mut req = LlmRequest::from_contents(agent(4, 30));
        let mut calls = 0;
        for i in 0..30 {
            let a = run(&mut s, &st, &mut req, &mock());
            calls += a.llm_calls.len();
            let summaries = req.contents.iter().filter(|i| i.is_summary()).count();
            assert!(summaries <= 1);
            assert_eq!(req.contents[0].text(), "sys");
            req.contents
                .push(Item::tool_call(format!("n{i}"), "run", "{}"));
            req.contents.push(Item::tool_result(
                format!("n{i}"),
                "run",
                "more ".repeat(60),
            ));
        }
        assert!(calls >= 3, "{calls}");
        assert!(st.measure(&req) < 1_200);
    }

    #[test]
    fn raises_where_the_summary_budget_is_the_whole_budget() {
        let st = state(400);
        let mut req = LlmRequest::from_contents(agent(2, 5));
        let a = run(
            &mut Langmem::new(LangmemConfig::default()),
            &st,
            &mut req,
            &mock(),
        );
        assert!(a.failure.unwrap().contains("ValueError"));
    }
}
