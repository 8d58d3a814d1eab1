//! OpenHands' software-agent-sdk condenser, call for call: the `LLMSummarizingCondenser` the SDK's settings
//! build for an agent (openhands-sdk 1.58.2, `openhands/sdk/settings/model.py`
//! `LLMSummarizingCondenserSettings.build_condenser`: `max_size=240`, `keep_first=2`, `minimum_progress=0.1`,
//! and `max_tokens` the agent LLM's input limit), as the agent's step runs it
//! (`openhands/sdk/agent/agent.py` `Agent.step` → `agent/utils.py` `prepare_llm_messages`).
//!
//! ## What it does
//! The history is the conversation's view: its events, read from ctxbench's items as the SDK records them (the
//! system prompt one event; each user message and observation one; an assistant turn with tool calls one
//! action event per call, the turn's text going with the first; an assistant turn without calls one message
//! event; each tool result one observation event). At every call point the condenser looks at the view
//! (`context/condenser/llm_summarizing_condenser.py`): over `max_size` events (`Reason.EVENTS`) it keeps the
//! newest `max_size / 2 - keep_first - 1`; over `max_tokens` (`Reason.TOKENS`) the newest events that leave
//! at most half of `max_tokens` (the shortest prefix after the first `keep_first` events whose tokens exceed
//! the excess goes); with both, the fewer. What it forgets runs from the first `keep_first` events (never the
//! system prompt) to that tail, both ends moved forward to where no tool call is left apart from its result
//! and no call of a batch from its siblings (`context/view/properties`, `manipulation_indices`). The forgotten
//! events are summarized and the summary, a user message holding the summary's text alone
//! (`CondensationSummaryEvent`), takes their place; it is an event like any other, so the next condensation
//! forgets and summarizes it with the rest. A condensation ends the agent's step without a model call, and the
//! next step looks again, so a view still over a limit is condensed again before anything is sent.
//!
//! Where nothing can be forgotten, or less than `minimum_progress` of the view, the event count's trigger
//! lets the view be sent as it is (`CondensationRequirement.SOFT`) and the token count's makes a hard context
//! reset (`HARD`: everything after the system prompt summarized). A view that still needs a condensation after
//! 20 in a row fails the episode there (the SDK would condense at every step without end).
//!
//! A failed summary call leaves the view as it is and sends it (ctxbench's contract; the SDK would go on
//! without the condensation where the count of events asked for it, and reset where the tokens did).
//!
//! ## Count
//! The SDK's own: the agent LLM's `get_token_count` of the view's messages with the tool schemas (litellm's
//! `token_counter` with the model's tokenizer, made locally, not the recorded usage). ctxbench's count of the
//! request stands for it (the run's tokenizer; tool schemas and unrecorded context included).
//!
//! ## Parameters
//! - `max_size` (240), `keep_first` (2), `minimum_progress` (0.1): the SDK's settings.
//! - `max_tokens`: absent, the run's window (the agent LLM's `effective_max_input_tokens`, which the SDK
//!   takes when none is configured); the smaller of the two where it is given.
//!
//! ## Example
//! `{"type": "openhands_sdk"}` or `{"type": "openhands_sdk", "max_size": 120, "keep_first": 4}`

use serde::{Deserialize, Serialize};

use super::prompt::Prompt;
use super::{Applied, CallPoint, LlmCall, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};

/// The characters of each event the summarizer is shown: all of them (the SDK cuts none on its first try).
const WHOLE_TEXTS: usize = 1_000_000;

/// Condensations in a row after which a view still over the token limit fails the episode.
const MAX_ROUNDS: usize = 20;

fn default_max_size() -> usize {
    240
}

fn default_keep_first() -> usize {
    2
}

fn default_minimum_progress() -> f64 {
    0.1
}

/// Parameters of [`OpenhandsSdk`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenhandsSdkConfig {
    /// Events the view may hold before it is condensed.
    #[serde(default = "default_max_size")]
    pub max_size: usize,
    /// Events at the start never forgotten.
    #[serde(default = "default_keep_first")]
    pub keep_first: usize,
    /// The least share of the view a condensation must forget.
    #[serde(default = "default_minimum_progress")]
    pub minimum_progress: f64,
    /// Tokens the view may hold; absent, the run's window (the smaller of the two where given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
}

impl Default for OpenhandsSdkConfig {
    fn default() -> Self {
        Self {
            max_size: default_max_size(),
            keep_first: default_keep_first(),
            minimum_progress: default_minimum_progress(),
            max_tokens: None,
        }
    }
}

impl OpenhandsSdkConfig {
    /// The token limit in a run whose window is `window` (`_effective_max_tokens`).
    #[must_use]
    pub fn max_tokens(&self, window: usize) -> usize {
        self.max_tokens.map_or(window, |m| m.min(window))
    }
}

impl StrategySpec for OpenhandsSdkConfig {
    /// Checks what the SDK's validators check.
    fn validate(&self) -> Result<()> {
        if self.max_size == 0 {
            return Err(Error::Config(
                "openhands_sdk max_size must be above 0".into(),
            ));
        }
        if self.max_size / 2 <= self.keep_first + 1 {
            return Err(Error::Config(format!(
                "openhands_sdk keep_first {} must be less than max_size // 2 - 1 ({}) to leave room for \
                 condensation",
                self.keep_first,
                (self.max_size / 2).saturating_sub(1)
            )));
        }
        if !(self.minimum_progress > 0.0 && self.minimum_progress < 1.0) {
            return Err(Error::Config(format!(
                "openhands_sdk minimum_progress {} is outside (0, 1)",
                self.minimum_progress
            )));
        }
        if self.max_tokens == Some(0) {
            return Err(Error::Config(
                "openhands_sdk max_tokens must be above 0".into(),
            ));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(OpenhandsSdk::new(self.clone()))
    }

    fn budget(&self, context_window: usize) -> Option<usize> {
        Some(self.max_tokens(context_window))
    }
}

/// What an event is, for the properties the condenser keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    System,
    Message,
    /// A tool call of the assistant turn (response) `response`.
    Action {
        call: String,
        response: usize,
    },
    Observation {
        call: String,
    },
    Summary,
}

/// One event of the view and the items it is sent as.
#[derive(Debug, Clone)]
struct Event {
    kind: Kind,
    items: Vec<Item>,
}

/// The strategy; see the module docs.
pub struct OpenhandsSdk {
    config: OpenhandsSdkConfig,
    /// Items before the first event that are not sent (travelling with no event).
    lead: Vec<Item>,
    view: Vec<Event>,
    /// The contents as this strategy last left them.
    sent: Vec<Item>,
    responses: usize,
}

/// Why the view is condensed.
#[derive(Debug, Clone, Copy, Default)]
struct Reasons {
    tokens: bool,
    events: bool,
}

impl OpenhandsSdk {
    /// The strategy for `config`.
    #[must_use]
    pub fn new(config: OpenhandsSdkConfig) -> Self {
        Self {
            config,
            lead: Vec::new(),
            view: Vec::new(),
            sent: Vec::new(),
            responses: 0,
        }
    }

    /// The contents the view is sent as.
    fn contents(&self) -> Vec<Item> {
        let mut out = self.lead.clone();
        for e in &self.view {
            out.extend(e.items.iter().cloned());
        }
        out
    }

    /// Adds what the replay appended since the last call point to the view, as the SDK's events.
    fn receive(&mut self, live: &[Item]) {
        if !live.starts_with(&self.sent) {
            // The replay took the reasoning of ended turns out.
            self.sent.retain(|i| !i.is_turn_reasoning());
            self.lead.retain(|i| !i.is_turn_reasoning());
            for e in &mut self.view {
                e.items.retain(|i| !i.is_turn_reasoning());
            }
            self.view.retain(|e| !e.items.is_empty());
        }
        let new: Vec<Item> = if live.starts_with(&self.sent) {
            live[self.sent.len()..].to_vec()
        } else {
            // A live request of another shape: the conversation starts anew from it.
            self.lead.clear();
            self.view.clear();
            live.to_vec()
        };
        self.push(&new);
    }

    /// `items` as the events the SDK records.
    fn push(&mut self, items: &[Item]) {
        let mut i = 0;
        while i < items.len() {
            let item = &items[i];
            if !item.is_sent() {
                // Travels with the event before it.
                match self.view.last_mut() {
                    Some(e) => e.items.push(item.clone()),
                    None => self.lead.push(item.clone()),
                }
                i += 1;
                continue;
            }
            if item.is_assistant_turn() {
                let mut j = i;
                while j < items.len() && (items[j].is_assistant_turn() || !items[j].is_sent()) {
                    j += 1;
                }
                self.push_turn(&items[i..j]);
                i = j;
                continue;
            }
            let kind = match item {
                Item::ToolResult { call_id, .. } => Kind::Observation {
                    call: call_id.to_string(),
                },
                _ if item.is_role(Role::System) => Kind::System,
                _ => Kind::Message,
            };
            self.view.push(Event {
                kind,
                items: vec![item.clone()],
            });
            i += 1;
        }
    }

    /// One assistant turn: an action event per tool call sharing the response, the turn's text (and what
    /// travels with it) going with the first; a message event where it makes no call.
    fn push_turn(&mut self, turn: &[Item]) {
        self.responses += 1;
        let response = self.responses;
        let (calls, rest): (Vec<&Item>, Vec<&Item>) = turn
            .iter()
            .partition(|i| matches!(i, Item::ToolCall { .. }));
        let mut thought: Vec<Item> = rest.into_iter().cloned().collect();
        if calls.is_empty() {
            self.view.push(Event {
                kind: Kind::Message,
                items: thought,
            });
            return;
        }
        for call in calls {
            let Item::ToolCall { id, .. } = call else {
                continue;
            };
            let mut items = std::mem::take(&mut thought);
            items.push(call.clone());
            self.view.push(Event {
                kind: Kind::Action {
                    call: id.to_string(),
                    response,
                },
                items,
            });
        }
    }

    /// The tokens of `events` as the agent LLM counts a request of them (`get_total_token_count`).
    fn tokens(at: &CallPoint, events: &[Event]) -> usize {
        let items: Vec<Item> = events
            .iter()
            .flat_map(|e| e.items.iter().cloned())
            .collect();
        at.tokenizer.count_request(&[], &items) + at.fixed_tokens()
    }

    /// `get_condensation_reasons` (no condensation request: the agent never asks here).
    fn reasons(&self, at: &CallPoint) -> Reasons {
        Reasons {
            tokens: Self::tokens(at, &self.view) > self.config.max_tokens(at.context_window),
            events: self.view.len() > self.config.max_size,
        }
    }

    /// The view's manipulation indices: where events may be inserted and between which they may be forgotten.
    fn manipulation_indices(&self) -> Vec<bool> {
        let n = self.view.len();
        let mut ok = vec![true; n + 1];
        // Batch atomicity: no cut inside a response's calls.
        for (k, pair) in self.view.windows(2).enumerate() {
            if let (Kind::Action { response: a, .. }, Kind::Action { response: b, .. }) =
                (&pair[0].kind, &pair[1].kind)
            {
                if a == b {
                    ok[k + 1] = false;
                }
            }
        }
        // Tool call matching: no cut between a call and its result.
        let mut pending: Vec<&str> = Vec::new();
        for (k, e) in self.view.iter().enumerate() {
            match &e.kind {
                Kind::Action { call, .. } => pending.push(call),
                Kind::Observation { call } => pending.retain(|c| *c != call.as_str()),
                _ => {}
            }
            if !pending.is_empty() {
                ok[k + 1] = false;
            }
        }
        ok
    }

    /// The smallest manipulation index at or after `threshold` (`find_next`).
    fn find_next(indices: &[bool], threshold: usize) -> Option<usize> {
        (threshold..indices.len()).find(|&k| indices[k])
    }

    /// Where the system prompt is, when there is one.
    fn system_index(&self) -> Option<usize> {
        self.view.iter().position(|e| e.kind == Kind::System)
    }

    /// `_get_forgotten_events`: the range of the view to forget (the summary goes at its start), or `None`
    /// where there is no manipulation index for it.
    fn forgotten(&self, at: &CallPoint, reasons: Reasons) -> Option<(usize, usize)> {
        let n = self.view.len();
        let keep_first = self.config.keep_first;
        let mut tails: Vec<usize> = Vec::new();
        if reasons.events {
            tails.push(self.config.max_size / 2 - keep_first - 1);
        }
        if reasons.tokens {
            let max_tokens = self.config.max_tokens(at.context_window);
            #[allow(clippy::cast_possible_wrap)]
            let reduce = Self::tokens(at, &self.view) as i64 - (max_tokens / 2) as i64;
            let base = &self.view[..keep_first.min(n)];
            let rest = &self.view[keep_first.min(n)..];
            tails.push(Self::suffix_for_reduction(at, base, rest, reduce));
        }
        let tail = tails.into_iter().min()?;
        let naive_end = n.saturating_sub(tail);
        let protected = self
            .system_index()
            .map_or(keep_first, |s| keep_first.max(s + 1));
        let indices = self.manipulation_indices();
        let start = Self::find_next(&indices, protected)?;
        let end = Self::find_next(&indices, naive_end)?;
        Some((start, end.max(start)))
    }

    /// `get_suffix_length_for_token_reduction`: how many of `rest`'s newest events may stay once its shortest
    /// prefix whose tokens (counted after `base`) exceed `reduce` is gone.
    fn suffix_for_reduction(at: &CallPoint, base: &[Event], rest: &[Event], reduce: i64) -> usize {
        if rest.is_empty() {
            return 0;
        }
        if reduce <= 0 {
            return rest.len();
        }
        let base_tokens = if base.is_empty() {
            0
        } else {
            Self::tokens(at, base)
        };
        let mut events: Vec<Event> = base.to_vec();
        for (k, e) in rest.iter().enumerate() {
            events.push(e.clone());
            #[allow(clippy::cast_possible_wrap)]
            if (Self::tokens(at, &events) as i64 - base_tokens as i64) > reduce {
                return rest.len() - (k + 1);
            }
        }
        0
    }

    /// Summarizes the view's events `start..end` and puts the summary in their place; the items summarized and
    /// the call, or the failed call.
    fn condense(
        &mut self,
        llm: &dyn Llm,
        start: usize,
        end: usize,
    ) -> std::result::Result<(usize, LlmCall), LlmCall> {
        let items: Vec<Item> = self.view[start..end]
            .iter()
            .flat_map(|e| e.items.iter())
            .filter(|i| i.is_sent())
            .cloned()
            .collect();
        let transcript = Transcript::of_items(&items, WHOLE_TEXTS, WHOLE_TEXTS);
        let request = Prompt::Ctxbench.summary_request(&transcript, "");
        let (summary, call) = super::summarization::ask(llm, &request)?;
        self.view.splice(
            start..end,
            [Event {
                kind: Kind::Summary,
                items: vec![Item::user(summary)],
            }],
        );
        Ok((items.len(), call))
    }

    /// The agent's steps until one sends: a condensation at each step that needs one. The items summarized,
    /// or the failure.
    fn steps(
        &mut self,
        at: &CallPoint,
        llm: &dyn Llm,
        calls: &mut Vec<LlmCall>,
    ) -> std::result::Result<usize, String> {
        let mut summarized = 0;
        for round in 0..=MAX_ROUNDS {
            let reasons = self.reasons(at);
            if !reasons.tokens && !reasons.events {
                return Ok(summarized);
            }
            let n = self.view.len();
            #[allow(clippy::cast_precision_loss)]
            let range = self.forgotten(at, reasons).filter(|&(s, e)| {
                e > s && ((e - s) as f64) >= n as f64 * self.config.minimum_progress
            });
            let (start, end) = match range {
                Some(r) => r,
                // SOFT: the view goes as it is.
                None if !reasons.tokens => return Ok(summarized),
                // HARD: a hard context reset, everything after the system prompt.
                None => {
                    let preserve = self.system_index().map_or(0, |s| s + 1);
                    if preserve >= n {
                        return Err(
                            "the OpenHands SDK raises NoCondensationAvailableException: the view is over its \
                             token limit with nothing to condense"
                                .to_owned(),
                        );
                    }
                    (preserve, n)
                }
            };
            if round == MAX_ROUNDS {
                return Err(format!(
                    "the OpenHands SDK condenses at every step without end: {MAX_ROUNDS} condensations in a \
                     row and the view still needs one"
                ));
            }
            match self.condense(llm, start, end) {
                Ok((items, call)) => {
                    calls.push(call);
                    summarized += items;
                }
                Err(failed) => {
                    calls.push(failed);
                    return Ok(summarized);
                }
            }
        }
        Ok(summarized)
    }
}

impl Strategy for OpenhandsSdk {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        self.receive(&req.contents);
        let mut calls = Vec::new();
        let mut applied = match self.steps(at, llm, &mut calls) {
            Ok(summarized) => {
                let mut applied = Applied::replaced(req, self.contents());
                if applied.changed() {
                    applied.summarized_items = summarized;
                }
                applied
            }
            Err(raised) => Applied {
                failure: Some(raised),
                ..Applied::unchanged()
            },
        };
        applied.llm_calls = calls;
        self.sent.clone_from(&req.contents);
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state};

    fn config(max_size: usize) -> OpenhandsSdkConfig {
        OpenhandsSdkConfig {
            max_size,
            ..OpenhandsSdkConfig::default()
        }
    }

    /// The default preset at one call point of `items` in a window of `window`: what it did, and the request
    /// it sent.
    fn default_at(window: usize, items: Vec<Item>) -> (Applied, LlmRequest) {
        let mut req = LlmRequest::from_contents(items);
        let a = run(
            &mut OpenhandsSdk::new(OpenhandsSdkConfig::default()),
            &state(window),
            &mut req,
            &mock(),
        );
        (a, req)
    }

    fn texts(r: &LlmRequest) -> Vec<String> {
        r.contents.iter().map(|i| i.text().to_owned()).collect()
    }

    /// A system prompt, a task and `turns` assistant turns of a thought and two calls, then their results.
    fn batches(turns: usize) -> Vec<Item> {
        let mut items = vec![Item::system("sys"), Item::user("task")];
        for t in 0..turns {
            items.push(Item::assistant(format!("t{t}")));
            items.push(Item::tool_call(format!("a{t}"), "bash", "{}"));
            items.push(Item::tool_call(format!("b{t}"), "bash", "{}"));
            items.push(Item::tool_result(format!("a{t}"), "bash", format!("ra{t}")));
            items.push(Item::tool_result(format!("b{t}"), "bash", format!("rb{t}")));
        }
        items
    }

    /// By hand: 18 events (sys, task, 4 turns of 2 actions and 2 observations; the thought goes with the
    /// first action). Over max_size 16 the tail is 16 / 2 - 2 - 1 = 5 events, from index 13, a result whose
    /// sibling call's result is still to come: the cut moves to 14, and the newest turn stays whole.
    #[test]
    fn the_cut_moves_to_where_no_call_is_left_apart_from_its_result() {
        let st = state(1_000_000);
        let mut req = LlmRequest::from_contents(batches(4));
        let a = run(&mut OpenhandsSdk::new(config(16)), &st, &mut req, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(a.summarized_items, 15);
        let t = texts(&req);
        assert_eq!(t[..2], ["sys", "task"]);
        assert!(
            req.contents[2].is_role(Role::User),
            "the summary is a user message"
        );
        assert_eq!(t[3..], ["t3", "{}", "{}", "ra3", "rb3"]);
        // 18 events, not over 18: nothing happens.
        let mut req = LlmRequest::from_contents(batches(4));
        let a = run(&mut OpenhandsSdk::new(config(18)), &st, &mut req, &mock());
        assert!(!a.changed());
    }

    /// By hand: over the token limit, the newest events within half of it stay (the shortest prefix after the
    /// first 2 events whose tokens exceed the excess goes), the summary in its place.
    #[test]
    fn over_the_token_limit_keeps_the_newest_events_within_half_of_it() {
        let items = crate::strategy::presets::testing::agent_run(10, 30).contents;
        let tok = state(1).tokenizer;
        let total = tok.count_request(&[], &items);
        let window = total - 1;
        let reduce = total - window / 2;
        // Events after sys and task are the items themselves here; the prefix that goes.
        let mut sum = 0;
        let mut prefix = 0;
        for (k, i) in items[2..].iter().enumerate() {
            sum += tok.count_item(i);
            if sum > reduce {
                prefix = k + 1;
                break;
            }
        }
        // The tail may not start with a result whose call goes.
        let mut from = 2 + prefix;
        if matches!(items[from], Item::ToolResult { .. }) {
            from += 1;
        }
        let (a, req) = default_at(window, items.clone());
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(req.contents[..2], items[..2]);
        assert_eq!(req.contents[3..], items[from..]);
        assert!(tok.count_request(&[], &req.contents) <= window / 2 + 200);
    }

    /// Nothing to forget after the first 2 events, yet over the token limit: a hard context reset summarizes
    /// everything after the system prompt.
    #[test]
    fn a_task_over_the_limit_is_reset_into_a_summary() {
        let items = vec![Item::system("sys"), Item::user("word ".repeat(400))];
        let (a, req) = default_at(300, items);
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(req.contents.len(), 2);
        assert_eq!(req.contents[0].text(), "sys");
        assert!(a.failure.is_none());
    }

    /// A system prompt over the limit: nothing brings the view under it, and the SDK would condense at every
    /// step; the episode fails there.
    #[test]
    fn a_view_that_never_fits_fails() {
        let items = vec![
            Item::system("word ".repeat(400)),
            Item::user("task"),
            Item::tool_call("c", "bash", "{}"),
            Item::tool_result("c", "bash", "out"),
        ];
        let st = state(300);
        let mut req = LlmRequest::from_contents(items);
        let before = req.clone();
        let a = OpenhandsSdk::new(OpenhandsSdkConfig::default())
            .apply(&st, &mut req, &mock())
            .unwrap();
        assert!(
            a.failure
                .as_deref()
                .is_some_and(|f| f.contains("without end")),
            "{a:?}"
        );
        assert_eq!(req, before);
    }

    /// The summary is an event: the next condensation forgets it with the rest, and one summary is sent.
    #[test]
    fn the_next_condensation_summarizes_the_summary_too() {
        let st = state(1_000_000);
        let mut s = OpenhandsSdk::new(config(16));
        let mut req = LlmRequest::from_contents(batches(4));
        run(&mut s, &st, &mut req, &mock());
        let mut more = batches(8);
        req.contents.extend(more.drain(22..));
        let a = run(&mut s, &st, &mut req, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        let users = req
            .contents
            .iter()
            .filter(|i| i.is_role(Role::User))
            .count();
        assert_eq!(users, 2, "the task and one summary");
    }

    #[test]
    fn validates_what_the_sdk_validates() {
        assert!(OpenhandsSdkConfig::default().validate().is_ok());
        assert!(config(6).validate().is_err());
        assert!(config(8).validate().is_ok());
        let c = OpenhandsSdkConfig {
            minimum_progress: 1.0,
            ..OpenhandsSdkConfig::default()
        };
        assert!(c.validate().is_err());
    }
}
