//! Sliding window: keep the system messages and the first user message, then the newest items that fit.
//!
//! ## What it does
//! At every call point, if the request is over budget, it keeps every system message, the first user message
//! and the longest run of newest items such that the whole request fits `max_tokens` (and holds at most
//! `max_items` items besides that head). A tool result whose call fell outside the window is dropped too, so a
//! tool call is never separated from its result.
//!
//! ## Trade-offs
//! No LLM call and no cost; cheap to compute; keeps the prompt-cache prefix only until the first cut. Whatever
//! falls out of the window is gone, however important: retention drops as soon as findings age out.
//!
//! ## Parameters
//! - `max_tokens`: token budget of the whole request (instructions, items, reply priming).
//! - `window_share`: the budget as a share of the model's context window instead (0.125: an eighth of it), so it
//!   follows `--window`; with `max_tokens` too, the smaller budget holds.
//! - `max_items`: the most items kept besides the head.
//! - `keep_first_user` (true): the first user message is part of the head.
//! - `start_on_user` (false): the window starts at a user message, an observation (sent with the user role)
//!   too (LangChain `trim_messages(start_on="human")`).
//! - `whole_history` (false): trim the whole history anew at every call point, as an agent's pre-model hook
//!   calls LangChain's `trim_messages` on the graph's messages, which keep everything: an item dropped at one
//!   call point comes back at a later one where it fits again (where what is sent beside the items shrinks).
//!   Without it, what the window drops is gone from the live request for good.
//!
//! ## Example
//! `{"type": "sliding_window", "max_tokens": 16000}` or `{"type": "sliding_window", "window_share": 0.125}`

use serde::{Deserialize, Serialize};

use super::{retain_paired, Applied, CallPoint, Change, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::{Llm, LlmRequest};

/// Parameters of [`SlidingWindow`]; at least one limit must be set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlidingWindowConfig {
    /// Token budget of the whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    /// Token budget as a share of the context window (0 < share <= 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_share: Option<f64>,
    /// Most items kept besides the head.
    #[serde(default)]
    pub max_items: Option<usize>,
    /// Keep the first user message (the task) in the head, beside the system messages.
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub keep_first_user: bool,
    /// The kept window must start with a user message: items before the first one are dropped too
    /// (LangChain's `start_on="human"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub start_on_user: bool,
    /// Trim the whole history at every call point, not the live request: what was dropped may come back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_history: bool,
}

fn yes() -> bool {
    true
}

impl Default for SlidingWindowConfig {
    fn default() -> Self {
        Self {
            max_tokens: None,
            window_share: None,
            max_items: None,
            keep_first_user: true,
            start_on_user: false,
            whole_history: false,
        }
    }
}

impl StrategySpec for SlidingWindowConfig {
    /// Checks that a limit is set.
    fn validate(&self) -> Result<()> {
        if self.max_tokens.is_none() && self.max_items.is_none() && self.window_share.is_none() {
            return Err(Error::Config(
                "sliding_window needs max_tokens, window_share or max_items".into(),
            ));
        }
        if let Some(share) = self.window_share {
            if !(share > 0.0 && share <= 1.0) {
                return Err(Error::Config(format!(
                    "sliding_window window_share must be above 0 and at most 1 (a share of the context \
                     window), not {share}"
                )));
            }
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(SlidingWindow::new(self.clone()))
    }

    fn budget(&self, context_window: usize) -> Option<usize> {
        (self.max_tokens.is_some() || self.window_share.is_some())
            .then(|| self.token_budget(context_window))
    }
}

impl SlidingWindowConfig {
    /// The token budget in a run whose window is `context_window`: `max_tokens`, `window_share` of the
    /// window, the smaller of both (unbounded with neither).
    #[must_use]
    pub fn token_budget(&self, context_window: usize) -> usize {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let share = self.window_share.map_or(usize::MAX, |s| {
            // Whole tokens: the share of the window, rounded down.
            (s * context_window as f64).floor() as usize
        });
        self.max_tokens.unwrap_or(usize::MAX).min(share)
    }
}

/// The sliding-window strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct SlidingWindow {
    config: SlidingWindowConfig,
    /// With `whole_history`: every item received so far, none dropped.
    history: Vec<Item>,
    /// With `whole_history`: the contents as this window last left them.
    sent: Vec<Item>,
}

impl SlidingWindow {
    /// A sliding window with the given limits.
    #[must_use]
    pub fn new(config: SlidingWindowConfig) -> Self {
        Self {
            config,
            history: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// With `whole_history`: adds what the replay appended to the live request since the last call point to
    /// the whole history and puts the whole history in `req`; returns how many items that brought back. The
    /// live request is what this window left plus the new items, less the reasoning of ended turns, which the
    /// replay takes out (and so does the history); a live request of any other shape starts the history anew.
    fn restore(&mut self, req: &mut LlmRequest) -> usize {
        let live = &req.contents;
        if !live.starts_with(&self.sent) {
            self.sent.retain(|i| !i.is_turn_reasoning());
            self.history.retain(|i| !i.is_turn_reasoning());
        }
        if !live.starts_with(&self.sent) {
            self.history.clone_from(live);
            return 0;
        }
        self.history.extend_from_slice(&live[self.sent.len()..]);
        let restored = self.history.len() - live.len();
        if restored > 0 {
            req.contents.clone_from(&self.history);
        }
        restored
    }

    /// The token budget at a call point: `max_tokens`, `window_share` of the window, the smaller of both.
    fn budget(&self, state: &CallPoint) -> usize {
        self.config.token_budget(state.context_window)
    }

    /// The reduction itself, synchronous: returns, when it dropped any, which of the items handed in it kept.
    pub fn reduce(&self, state: &CallPoint, req: &mut LlmRequest) -> Option<Vec<bool>> {
        let max_tokens = self.budget(state);
        if self.config.max_items.is_none()
            && !self.config.start_on_user
            && state.input_tokens(req) <= max_tokens
        {
            return None;
        }
        let tok = &state.tokenizer;
        let first_user = req
            .contents
            .iter()
            .position(|i| i.is_role(Role::User))
            .filter(|_| self.config.keep_first_user);
        let is_head = |i: usize, item: &Item| item.is_role(Role::System) || Some(i) == first_user;
        let counts = state.content_tokens(req);
        let instructions: usize = req
            .instructions
            .iter()
            .map(|s| tok.count_instruction(s))
            .sum();
        let head_tokens: usize = tok.reply_tokens()
            + state.fixed_tokens()
            + instructions
            + req
                .contents
                .iter()
                .enumerate()
                .filter(|(i, item)| is_head(*i, item))
                .map(|(i, _)| counts[i])
                .sum::<usize>();
        let body = req
            .contents
            .iter()
            .enumerate()
            .filter(|(i, it)| !is_head(*i, it))
            .count();
        let total = head_tokens
            + counts
                .iter()
                .enumerate()
                .filter(|(i, _)| !is_head(*i, &req.contents[*i]))
                .map(|(_, c)| c)
                .sum::<usize>();
        let max_items = self.config.max_items.unwrap_or(usize::MAX);
        // Like LangChain's trim_messages, `start_on_user` applies even when everything fits.
        if total <= max_tokens && body <= max_items && !self.config.start_on_user {
            return None;
        }
        // Walk back from the newest item while the window still fits.
        let mut used = head_tokens;
        let mut kept = 0usize;
        let mut start = req.contents.len();
        for i in (0..req.contents.len()).rev() {
            if is_head(i, &req.contents[i]) {
                continue;
            }
            if used + counts[i] > max_tokens || kept + 1 > max_items {
                break;
            }
            used += counts[i];
            kept += 1;
            start = i;
        }
        if self.config.start_on_user {
            // A user message as sent: an observation is sent with the user role (a LangChain HumanMessage).
            start = (start..req.contents.len())
                .find(|&i| !is_head(i, &req.contents[i]) && req.contents[i].wire_role() == "user")
                .unwrap_or(req.contents.len());
        }
        let keep: Vec<bool> = (0..req.contents.len())
            .map(|i| is_head(i, &req.contents[i]) || i >= start)
            .collect();
        let kept = retain_paired(&mut req.contents, &keep);
        kept.contains(&false).then_some(kept)
    }
}

impl Strategy for SlidingWindow {
    fn apply(&mut self, state: &CallPoint, req: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        if self.config.whole_history {
            let handed = req.contents.clone();
            if self.restore(req) > 0 {
                // What the caller knew of the request handed in is not the whole history's.
                let whole = CallPoint {
                    input_tokens: None,
                    content_tokens: None,
                    ..state.clone()
                };
                self.reduce(&whole, req);
                self.sent.clone_from(&req.contents);
                if req.contents == handed {
                    return Ok(Applied::unchanged());
                }
                let kept_prefix = handed
                    .iter()
                    .zip(&req.contents)
                    .take_while(|(a, b)| a == b)
                    .count();
                return Ok(Applied {
                    dropped_items: handed.len().saturating_sub(req.contents.len()),
                    ..Applied::new(Change::Rewrote { kept_prefix })
                });
            }
            let applied = self.apply_to_live(state, req);
            self.sent.clone_from(&req.contents);
            return Ok(applied);
        }
        Ok(self.apply_to_live(state, req))
    }
}

impl SlidingWindow {
    /// The window over the live request as handed in.
    fn apply_to_live(&self, state: &CallPoint, req: &mut LlmRequest) -> Applied {
        match self.reduce(state, req) {
            Some(kept) => {
                let dropped = kept.iter().filter(|&&k| !k).count();
                Applied {
                    dropped_items: dropped,
                    ..Applied::new(Change::Dropped(kept))
                }
            }
            None => Applied::unchanged(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state};

    fn history(n: usize) -> LlmRequest {
        let mut items = vec![
            Item::system("You are an agent."),
            Item::user("Do the task."),
        ];
        for i in 0..n {
            items.push(Item::assistant(format!("step {i}")));
            items.push(Item::tool_call(format!("c{i}"), "run", "{}"));
            items.push(Item::tool_result(
                format!("c{i}"),
                "run",
                "output ".repeat(20),
            ));
        }
        LlmRequest::from_contents(items)
    }

    #[test]
    fn keeps_head_and_newest_within_budget() {
        let st = state(100_000);
        let mut req = history(20);
        let mut sw = SlidingWindow::new(SlidingWindowConfig {
            max_tokens: Some(200),
            max_items: None,
            ..SlidingWindowConfig::default()
        });
        let applied = run(&mut sw, &st, &mut req, &mock());
        assert!(applied.changed());
        assert!(st.measure(&req) <= 200);
        assert_eq!(req.contents[0], Item::system("You are an agent."));
        assert_eq!(req.contents[1], Item::user("Do the task."));
        assert_eq!(req.contents.last(), history(20).contents.last());
    }

    /// LangChain's pre-model hook trims the whole history at every call: where what is sent beside the items
    /// shrinks (an imported trace's unrecorded context), items dropped at one call point come back; the plain
    /// window's drops are for good.
    #[test]
    fn whole_history_brings_back_what_fits_again() {
        let config = |whole_history| SlidingWindowConfig {
            max_tokens: Some(400),
            whole_history,
            ..SlidingWindowConfig::default()
        };
        let big = CallPoint {
            unrecorded_tokens: 250,
            ..state(100_000)
        };
        let small = state(100_000);
        let mut sent = Vec::new();
        for whole in [false, true] {
            let mut sw = SlidingWindow::new(config(whole));
            let mut req = history(6);
            run(&mut sw, &big, &mut req, &mock());
            assert!(big.measure(&req) <= 400);
            let first = req.contents.len();
            assert!(
                first < history(6).contents.len(),
                "the first call point trims"
            );
            // The next turn arrives; the context beside the items is gone.
            req.contents.push(Item::assistant("step 6"));
            req.contents.push(Item::user("go on"));
            let applied = run(&mut sw, &small, &mut req, &mock());
            assert!(small.measure(&req) <= 400);
            sent.push((first, req.contents.len(), applied.changed()));
            if whole {
                // The whole history trimmed anew: the same as a fresh window over all of it.
                let mut all = history(6);
                all.contents.push(Item::assistant("step 6"));
                all.contents.push(Item::user("go on"));
                run(
                    &mut SlidingWindow::new(config(true)),
                    &small,
                    &mut all,
                    &mock(),
                );
                assert_eq!(req, all);
                // And once more with nothing new: nothing changes.
                let again = run(&mut sw, &small, &mut req, &mock());
                assert!(!again.changed());
            }
        }
        // The plain window: what it dropped stays dropped, the two new items join, nothing to trim.
        assert_eq!(sent[0], (sent[0].0, sent[0].0 + 2, false));
        // The whole history: dropped items came back.
        assert_eq!(sent[1].0, sent[0].0);
        assert!(sent[1].1 > sent[0].1 && sent[1].2, "{sent:?}");
    }

    /// `start_on="human"`: an observation is sent as a user message, a LangChain HumanMessage, and can start
    /// the window (aider's "I committed the changes" after an answer).
    #[test]
    fn start_on_user_starts_at_an_observation_too() {
        let st = state(100_000);
        let mut req = LlmRequest::from_contents(vec![
            Item::system("sys"),
            Item::user("first ".repeat(100)),
            Item::assistant("answer ".repeat(100)),
            Item::observation("git", "I committed the changes"),
            Item::user("next"),
        ]);
        let mut sw = SlidingWindow::new(SlidingWindowConfig {
            max_tokens: Some(60),
            keep_first_user: false,
            start_on_user: true,
            ..SlidingWindowConfig::default()
        });
        run(&mut sw, &st, &mut req, &mock());
        assert_eq!(
            req.contents.iter().map(Item::text).collect::<Vec<_>>(),
            ["sys", "I committed the changes", "next"]
        );
    }

    #[test]
    fn never_leaves_an_orphan_result() {
        let st = state(100_000);
        let mut req = history(10);
        // A count that would cut between a call and its result.
        let mut sw = SlidingWindow::new(SlidingWindowConfig {
            max_tokens: None,
            max_items: Some(4),
            ..SlidingWindowConfig::default()
        });
        run(&mut sw, &st, &mut req, &mock());
        assert!(matches!(
            req.contents[2],
            Item::ToolCall { .. } | Item::Message { .. }
        ));
        assert!(req.contents.len() <= 6);
    }
}
