//! Strands Agents' `context_manager="auto"`, call for call (strands-agents 1.62.0:
//! `strands/_context_manager/context_manager.py` `ContextManager`, `strategies/offload/base.py`,
//! `truncate.py` and `summarize.py`, `methods/truncate.py` and `methods/summarize.py`, and
//! `event_loop/event_loop.py` `_estimate_input_tokens`).
//!
//! ## What it does
//! A Strands message is an assistant turn (its text and calls), the results of a turn, or a user message;
//! the system prompt is not one. Strands counts with its own estimate (`Model.count_tokens`' default, for
//! providers without a native count): characters / 4 of each text, rounded up, and of a call's name, plus
//! characters / 2 of its input as `json.dumps` writes it.
//! - As it joins the history, every tool result that is not an error and is over `truncate_threshold`
//!   (1,500) tokens by that estimate becomes `[Truncated: 1 block, ~N tokens]`, its first 60% and last 40% of
//!   `preview_tokens` (750) × 4 characters around `[... N chars elided ...]`, and the stash reference
//!   Strands appends (`[Stashed] [ref: ID_0]`).
//! - Before each call Strands projects the request: the previous call's usage (the request as sent, and
//!   the answer's tokens) plus its estimate of the messages since; at the first call its estimate of
//!   everything, the system prompt and the spec of its `retrieve_context` tool (699 tokens) included. At
//!   `utilization` (0.85) of the window or more, every message but the task and the `preserve_recent` (4)
//!   newest, with the call or results each pairs with, becomes `[Summarized: N messages, ~T tokens]` and the
//!   summary, as assistant text: appended to the assistant message where they were (before its calls, as a
//!   provider is sent them) or its own message. An earlier summary is in one of those messages.
//! - Then, where the estimate of the messages reaches the window, the oldest 20% of them go (the emergency
//!   truncation), `[... N messages elided ...]` in their place.
//!
//! After a summary or a removal, consecutive messages of one role are merged (`_repair_alternation`), which
//! the strategy tracks to count messages as Strands does.
//!
//! ## Trade-offs
//! The provider's usage is ctxbench's count of the request (`CallPoint::measure`) and of the recorded answer;
//! the spec of Strands' retrieval tool is counted in its first estimate but not sent (ctxbench sends the
//! episode's tools), and the agent never reads a stashed result back. The summarizer is asked with Strands'
//! prompt, the history as ctxbench's transcript.
//!
//! ## Parameters
//! `truncate_threshold` (1,500), `preview_tokens` (750), `utilization` (0.85), `preserve_recent` (4).
//!
//! ## Example
//! `{"type": "strands"}`

use serde::{Deserialize, Serialize};

use super::{Applied, CallPoint, Change, LlmCall, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};

mod estimate;

use estimate::{estimate, item_estimate, preview, quarter, thousands};

/// Strands' summarization system prompt (`methods/summarize.py` `DEFAULT_SYSTEM_PROMPT`, 1.62.0).
const SUMMARY_PROMPT: &str = include_str!("../../../assets/prompts/strands_auto_summary.md");

/// Tokens Strands estimates for the spec of its `retrieve_context` tool (`json.dumps(spec)` / 2, 1.62.0).
pub const RETRIEVAL_TOOL_TOKENS: usize = 699;

/// The characters of each item the summarizer is shown: all of them.
const WHOLE_TEXTS: usize = 1_000_000;

/// The share of messages the emergency truncation removes (`_EMERGENCY_REMOVAL_RATIO`).
const EMERGENCY_SHARE: f64 = 0.2;

fn default_truncate_threshold() -> usize {
    1_500
}

fn default_preview_tokens() -> usize {
    750
}

fn default_utilization() -> f64 {
    0.85
}

fn default_preserve_recent() -> usize {
    4
}

/// Parameters of [`Strands`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrandsConfig {
    /// Tool results over this many tokens (Strands' estimate) are truncated.
    #[serde(default = "default_truncate_threshold")]
    pub truncate_threshold: usize,
    /// The tokens of a truncated result's preview (4 characters each).
    #[serde(default = "default_preview_tokens")]
    pub preview_tokens: usize,
    /// The share of the window at which it summarizes.
    #[serde(default = "default_utilization")]
    pub utilization: f64,
    /// The newest messages a summary leaves.
    #[serde(default = "default_preserve_recent")]
    pub preserve_recent: usize,
}

impl Default for StrandsConfig {
    fn default() -> Self {
        Self {
            truncate_threshold: default_truncate_threshold(),
            preview_tokens: default_preview_tokens(),
            utilization: default_utilization(),
            preserve_recent: default_preserve_recent(),
        }
    }
}

impl StrandsConfig {
    /// Where it summarizes: the smallest projection at `utilization` of `window` or over.
    #[must_use]
    pub fn trigger_tokens(&self, window: usize) -> usize {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let at = (self.utilization * window as f64).ceil() as usize;
        at
    }
}

impl StrategySpec for StrandsConfig {
    /// Checks the parameters.
    /// When `utilization` is outside (0, 1] or the threshold is not above the preview (Strands' own check).
    fn validate(&self) -> Result<()> {
        if !(self.utilization > 0.0 && self.utilization <= 1.0) {
            return Err(Error::Config(format!(
                "strands utilization {} is outside (0, 1]",
                self.utilization
            )));
        }
        if self.truncate_threshold <= self.preview_tokens {
            return Err(Error::Config(format!(
                "strands truncate_threshold ({}) must be greater than preview_tokens ({})",
                self.truncate_threshold, self.preview_tokens
            )));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Strands::new(self.clone()))
    }

    fn budget(&self, context_window: usize) -> Option<usize> {
        Some(self.trigger_tokens(context_window))
    }
}

/// The strategy; see the module docs.
pub struct Strands {
    config: StrandsConfig,
    /// Per item of the live request, whether a Strands message starts there.
    starts: Vec<bool>,
    /// Items of the live request after the previous call point.
    seen: usize,
    /// The previous call's usage: the request as sent (its answer's tokens are added when it joins).
    previous: Option<usize>,
}

/// A Strands message: its items, and whether it is the assistant's.
#[derive(Debug, Clone)]
struct Message {
    items: std::ops::Range<usize>,
    assistant: bool,
}

impl Strands {
    /// The strategy for `config`.
    #[must_use]
    pub fn new(config: StrandsConfig) -> Self {
        Self {
            config,
            starts: Vec::new(),
            seen: 0,
            previous: None,
        }
    }

    /// The messages of `items`, system messages aside.
    fn messages(&self, items: &[Item]) -> Vec<Message> {
        let mut out: Vec<Message> = Vec::new();
        let mut open = false;
        for (i, item) in items.iter().enumerate() {
            if item.is_role(Role::System) {
                open = false;
                continue;
            }
            if open && !self.starts[i] {
                if let Some(last) = out.last_mut() {
                    last.items.end = i + 1;
                }
                continue;
            }
            out.push(Message {
                items: i..i + 1,
                assistant: item.is_assistant_turn(),
            });
            open = true;
        }
        out
    }

    /// The items `from..` joined since the previous call point: where each starts a message, as the agent
    /// loop adds them (a turn, a turn's results, each user message), and the tool results truncated as they
    /// join. Returns the first item truncated.
    fn join(&mut self, req: &mut LlmRequest, from: usize) -> (usize, Option<usize>) {
        let items = &req.contents;
        self.starts.truncate(from);
        for i in from..items.len() {
            let same_kind = i > from
                && ((items[i].is_assistant_turn() && items[i - 1].is_assistant_turn())
                    || (matches!(items[i], Item::ToolResult { .. })
                        && matches!(items[i - 1], Item::ToolResult { .. })));
            self.starts.push(!same_kind);
        }
        let mut truncated = 0;
        let mut first = None;
        for i in from..req.contents.len() {
            let Item::ToolResult {
                call_id,
                content,
                is_error: false,
                ..
            } = &req.contents[i]
            else {
                continue;
            };
            if quarter(content) <= self.config.truncate_threshold {
                continue;
            }
            if let Some(preview) = preview(content, self.config.preview_tokens) {
                let text = format!("{preview}\n\n[Stashed] [ref: {call_id}_0]");
                if let Item::ToolResult { content, .. } = &mut req.contents[i] {
                    *content = text.into();
                }
                truncated += 1;
                first.get_or_insert(i);
            }
        }
        (truncated, first)
    }

    /// Strands' projection of the request: the previous call's usage plus the answer and the messages since,
    /// or on the first call its estimate of everything.
    fn projected(&self, items: &[Item], from: usize) -> usize {
        let Some(previous) = self.previous else {
            let system: usize = items
                .iter()
                .filter(|i| i.is_role(Role::System))
                .map(|i| quarter(i.text()))
                .sum();
            return system + estimate(items, |i| !i.is_role(Role::System)) + RETRIEVAL_TOOL_TOKENS;
        };
        // The answer: the assistant turn the new items start with.
        let turn = items[from..]
            .iter()
            .take_while(|i| i.is_assistant_turn())
            .count();
        previous + estimate(&items[from + turn..], |_| true)
    }

    /// Removes the messages `gone` (indices into `messages`) and puts `marker` where they were, as Strands'
    /// `_splice_with_pairs`, `_insert_marker` and `_repair_alternation` do. Returns the items dropped and the
    /// first item changed.
    fn splice(
        &mut self,
        req: &mut LlmRequest,
        messages: &[Message],
        gone: &[usize],
        marker: Item,
    ) -> (usize, usize) {
        let mut keep = vec![true; req.contents.len()];
        for &m in gone {
            keep[messages[m].items.clone()].fill(false);
        }
        let dropped = keep.iter().filter(|&&k| !k).count();
        let lowest = gone.iter().copied().min().unwrap_or(1);
        let first_changed = messages[lowest].items.start;
        let mut flags = keep.iter();
        req.contents.retain(|_| *flags.next().unwrap_or(&true));
        let mut flags = keep.iter();
        self.starts.retain(|_| *flags.next().unwrap_or(&true));
        // The marker: appended to the assistant message beside the gap, or its own assistant message there.
        let after = self.messages(&req.contents);
        let index = lowest.clamp(1, after.len());
        let beside = [index - 1, index]
            .into_iter()
            .find(|&n| n > 0 && n < after.len() && after[n].assistant);
        let (at, starts) = match beside {
            Some(n) => {
                let range = after[n].items.clone();
                // Before the message's calls: its text first, as a provider is sent it.
                let at = range
                    .clone()
                    .find(|&i| matches!(req.contents[i], Item::ToolCall { .. }))
                    .unwrap_or(range.end);
                if at == range.start {
                    self.starts[at] = false;
                }
                (at, at == range.start)
            }
            None => (
                after
                    .get(index)
                    .map_or(req.contents.len(), |m| m.items.start),
                true,
            ),
        };
        req.contents.insert(at, marker);
        self.starts.insert(at, starts);
        // Consecutive messages of one role merge.
        let merged = self.messages(&req.contents);
        for pair in merged.windows(2) {
            if pair[0].assistant == pair[1].assistant && pair[0].items.end == pair[1].items.start {
                self.starts[pair[1].items.start] = false;
            }
        }
        (dropped, first_changed.min(at))
    }

    /// `SummarizeStrategy._apply_per_message`: every message but the task and the newest
    /// `preserve_recent`, with their pairs, become one summary.
    fn summarize(
        &mut self,
        req: &mut LlmRequest,
        llm: &dyn Llm,
    ) -> Option<(usize, usize, usize, LlmCall)> {
        let messages = self.messages(&req.contents);
        let n = messages.len();
        if n <= 1 || n <= self.config.preserve_recent {
            return None;
        }
        let oldest = if self.config.preserve_recent == 0 {
            n
        } else {
            n - self.config.preserve_recent
        };
        let mut safe: Vec<usize> = (1..oldest)
            .flat_map(|m| with_pair(&req.contents, &messages, m))
            .collect();
        safe.sort_unstable();
        safe.dedup();
        if safe.is_empty() {
            return None;
        }
        let items: Vec<&Item> = safe
            .iter()
            .flat_map(|&m| &req.contents[messages[m].items.clone()])
            .collect();
        let tokens: usize = items.iter().map(|i| item_estimate(i)).sum();
        let request = summary_request(&items);
        let (answer, call) = match super::summarization::ask(llm, &request) {
            Ok((answer, call)) if !answer.trim().is_empty() => (answer, call),
            // A failed or empty summary leaves the request as it was (Strands logs it and goes on).
            Ok((_, call)) | Err(call) => return Some((0, 0, usize::MAX, call)),
        };
        let marker = format!(
            "[Summarized: {} messages, ~{} tokens]\n\n{}",
            safe.len(),
            thousands(tokens),
            answer.trim()
        );
        let summarized = items.len();
        let (_, first) = self.splice(req, &messages, &safe, Item::assistant(marker));
        Some((summarized, safe.len(), first, call))
    }

    /// `EmergencyTruncateStrategy`: where the estimate of the messages reaches the window, the oldest 20% go.
    fn emergency(&mut self, req: &mut LlmRequest, window: usize) -> Option<(usize, usize)> {
        let messages = self.messages(&req.contents);
        if messages.len() <= 3 {
            return None;
        }
        let tokens = estimate(&req.contents, |i| !i.is_role(Role::System));
        #[allow(clippy::cast_precision_loss)]
        if (tokens as f64) / (window as f64) < 1.0 {
            return None;
        }
        let removable = messages.len() - 1;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let mut count = ((removable as f64 * EMERGENCY_SHARE) as usize).max(1);
        // Python's IndexError past the end: Strands logs the failure and goes on.
        let next = messages.get(1 + count)?;
        if !next.assistant {
            count += 1;
        }
        let mut gone: Vec<usize> = (1..=count)
            .flat_map(|m| with_pair(&req.contents, &messages, m))
            .collect();
        gone.sort_unstable();
        gone.dedup();
        if gone.is_empty() {
            return None;
        }
        let word = if gone.len() == 1 {
            "message"
        } else {
            "messages"
        };
        let marker = Item::assistant(format!("[... {} {word} elided ...]", gone.len()));
        Some(self.splice(req, &messages, &gone, marker))
    }
}

impl Strategy for Strands {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        let from = self.seen.min(req.contents.len());
        let (truncated, mut first) = self.join(req, from);
        let mut applied = Applied::unchanged();
        applied.compacted_items = truncated;
        applied.truncated_items = truncated;
        // The previous call's usage grows by its answer: the turn the new items start with.
        if let Some(previous) = self.previous.as_mut() {
            *previous += req.contents[from..]
                .iter()
                .take_while(|i| i.is_assistant_turn())
                .map(|i| at.tokenizer.count_item(i))
                .sum::<usize>();
        }
        let projected = self.projected(&req.contents, from);
        #[allow(clippy::cast_precision_loss)]
        let utilization = projected as f64 / at.context_window as f64;
        if utilization >= self.config.utilization {
            if let Some((summarized, _, changed, call)) = self.summarize(req, llm) {
                applied.llm_calls.push(call);
                if changed != usize::MAX {
                    applied.summarized_items = summarized;
                    first = Some(first.map_or(changed, |f| f.min(changed)));
                }
            }
        }
        if let Some((dropped, changed)) = self.emergency(req, at.context_window) {
            applied.dropped_items += dropped;
            first = Some(first.map_or(changed, |f| f.min(changed)));
        }
        if let Some(first) = first {
            applied.change = Change::Rewrote { kept_prefix: first };
        }
        self.seen = req.contents.len();
        self.previous = Some(at.measure(req));
        Ok(applied)
    }
}

/// Message `m` and the message it pairs with (`_collect_removable_with_pair`): the calls before a message of
/// results, the results after a message of calls; nothing when either is the first or the last message.
fn with_pair(items: &[Item], messages: &[Message], m: usize) -> Vec<usize> {
    let n = messages.len();
    if m == 0 || m + 1 >= n {
        return Vec::new();
    }
    let has = |k: usize, call: bool| {
        items[messages[k].items.clone()].iter().any(|i| {
            if call {
                matches!(i, Item::ToolCall { .. })
            } else {
                matches!(i, Item::ToolResult { .. })
            }
        })
    };
    let mut out = vec![m];
    if has(m, false) && has(m - 1, true) {
        if m - 1 == 0 {
            return Vec::new();
        }
        out.push(m - 1);
    }
    if has(m, true) && has(m + 1, false) {
        if m + 1 >= n - 1 {
            return Vec::new();
        }
        out.push(m + 1);
    }
    out
}

/// The request asking for a summary of `items`: Strands' system prompt with the history (as ctxbench's
/// transcript, where the mock reads it), the earlier summaries first.
fn summary_request(items: &[&Item]) -> LlmRequest {
    let mut previous = Vec::new();
    let mut history = Vec::new();
    for item in items {
        if item.is_summary() {
            let text = item.text();
            previous.push(text.split_once("\n\n").map_or(text, |(_, s)| s));
        } else {
            history.push((*item).clone());
        }
    }
    let transcript = Transcript::of_items(&history, WHOLE_TEXTS, WHOLE_TEXTS).after(
        (!previous.is_empty())
            .then(|| previous.join("\n"))
            .as_deref(),
    );
    LlmRequest {
        instructions: vec![format!(
            "{}\n\n<history>\n{}\n</history>",
            SUMMARY_PROMPT.trim(),
            transcript.as_str()
        )],
        contents: vec![Item::user("Summarize the content in the history above.")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::presets::testing::agent_run;
    use crate::strategy::testing::{mock, run, state};

    #[test]
    fn a_large_result_is_cut_to_head_and_tail_as_it_joins() {
        let text = "0123456789".repeat(700); // 7,000 characters: 1,750 tokens by Strands' estimate
        let mut s = Strands::new(StrandsConfig::default());
        let mut r = LlmRequest::from_contents(vec![
            Item::system("sys"),
            Item::user("task"),
            Item::tool_call("c0", "bash", "{}"),
            Item::tool_result("c0", "bash", text.clone()),
            Item::tool_call("c1", "bash", "{}"),
            Item::tool_result("c1", "bash", "0123456789".repeat(600)),
        ]);
        let a = run(&mut s, &state(1_000_000), &mut r, &mock());
        assert_eq!(
            a.truncated_items, 1,
            "6,000 characters are 1,500 tokens: not over"
        );
        assert!(r.contents[3].text().ends_with("\n\n[Stashed] [ref: c0_0]"));
        assert_eq!(a.change, Change::Rewrote { kept_prefix: 3 });
    }

    #[test]
    fn over_85_percent_all_but_the_task_and_the_4_newest_messages_become_a_summary() {
        let mut s = Strands::new(StrandsConfig::default());
        // task + 12 messages (6 turns of a call and its results).
        let mut r = agent_run(6, 20);
        let projected = quarter("sys") + estimate(&r.contents, |i| !i.is_role(Role::System)) + 699;
        let st = state(projected * 100 / 85);
        let a = run(&mut s, &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        // c0 r0 .. c3 r3 (8 messages) go; the summary joins c4's message, before its call.
        assert_eq!(a.summarized_items, 8);
        let texts: Vec<&str> = r.contents.iter().map(Item::text).collect();
        assert_eq!(texts[..2], ["sys", "task"]);
        assert!(
            texts[2].starts_with("[Summarized: 8 messages, ~"),
            "{texts:?}"
        );
        assert!(r.contents[2].is_summary());
        assert_eq!(texts[3], "{\"i\":4}");
        assert_eq!(r.contents.len(), 2 + 1 + 4);
        // Just under 85%: nothing.
        let mut s = Strands::new(StrandsConfig::default());
        let mut r = agent_run(6, 20);
        let a = run(&mut s, &state(projected * 100 / 85 + 2), &mut r, &mock());
        assert_eq!(a, Applied::unchanged());
    }

    /// After the first call, the projection is the previous request as sent plus its answer, plus Strands'
    /// estimate of what joined since.
    #[test]
    fn the_projection_is_the_previous_usage_plus_the_estimate_since() {
        let mut s = Strands::new(StrandsConfig::default());
        let mut r = agent_run(1, 10);
        run(&mut s, &state(1_000_000), &mut r, &mock());
        let sent = state(0).measure(&r);
        let turn = Item::tool_call("c9", "bash", "{\"i\":9}");
        let answer = state(0).tokenizer.count_item(&turn);
        r.contents.push(turn);
        r.contents
            .push(Item::tool_result("c9", "bash", "x".repeat(400)));
        // The answer is added to the usage when the next call point applies.
        assert_eq!(s.projected(&r.contents, 4), sent + 100);
        assert!(answer > 0);
    }
}
