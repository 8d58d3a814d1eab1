//! Condenser: when a history holds more than `max_units` units, keep the first `keep_first` and the last
//! `keep_last` units and drop or summarize the ones in between.
//!
//! This is the shape of most event- and turn-based memory managers (OpenHands condensers, the OpenAI Agents
//! SDK sessions, Google ADK compaction, Letta's partial eviction, the "Complexity Trap" summarizer); the
//! presets in [`super::presets`] configure it as each of them.
//!
//! ## What it does
//! A unit is an item, a tool result, an assistant turn or a user turn ([`Unit`]). System messages and
//! summaries never count as units and are never dropped; items before the first unit (the task, for turn
//! units) are kept. At a call point with more than `max_units` units, the items from the start of unit
//! `keep_first` to the start of the last `keep_last` units are forgotten:
//! - `action = "drop"`: they are removed.
//! - `action = "summarize"`: the LLM summarizes them (with the previous summary folded in when `rolling`)
//!   and a summary message (`[Previous work summary]` …) takes their place; with `shadow_prompt`, the summary is
//!   an assistant message answering that user message (the Agents SDK's synthetic pair). When the call fails,
//!   nothing changes and the failure is recorded.
//!
//! A tool result whose call is forgotten, and a tool call whose result is forgotten, go too: an API rejects
//! either one alone.
//!
//! With `forget_share`, a condensation forgets the oldest share of the units after the first `keep_first` (at
//! least one, never the last `keep_last`), moving the cut past tool results whose call it forgot (Strands'
//! summarizing manager, Inspect AI's trim). With `keep_user_tokens`, the forgotten user messages are kept,
//! newest first, within that many tokens (as Codex estimates them: 4 bytes a token; the one that crosses is cut
//! in its middle), and the summary follows them (Codex CLI). The summary is asked with a peer's `prompt`
//! ([`Prompt`]) and written as that peer writes it; with `opaque_tokens` it stands for a server's opaque
//! compaction item of that size, cut to it or filled up to it with a marker, so that the request is as large
//! as the provider's would be (the item's content cannot be known offline).
//!
//! ## Trade-offs
//! Unit counts are cheap to check and independent of the tokenizer, but blind to size: a hundred short events
//! trigger a condensation that a few huge tool outputs never will. Halving (keep far fewer than `max_units`)
//! amortizes the cost: the context grows back for many steps between two condensations and keeps its prompt
//! cache meanwhile.
//!
//! ## Parameters
//! - `unit` (`items`), `max_units` (required), `keep_first` (0), `keep_last` (required).
//! - `action` (`drop`), `rolling` (true), `shadow_prompt` (none), `item_chars` (10000: the formatter's cut).
//! - `forget_share` (none), `keep_user_tokens` (none), `prompt` (`ctxbench`), `opaque_tokens` (none).
//!
//! ## Example
//! `{"type": "condenser", "unit": "items", "max_units": 100, "keep_first": 1, "keep_last": 49}`

use serde::{Deserialize, Serialize};

use super::prompt::Prompt;
use super::summarization::ask;
use super::{paired, retain_paired, Applied, CallPoint, Change, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role, Unit, SUMMARY_PREFIX};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};
use crate::tokens::Tokenizer;

/// What happens to the forgotten units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CondenseAction {
    /// Remove them.
    #[default]
    Drop,
    /// Replace them by an LLM summary.
    Summarize,
}

fn default_rolling() -> bool {
    true
}

fn default_item_chars() -> usize {
    10_000
}

/// Parameters of [`Condenser`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CondenserConfig {
    /// What is counted.
    #[serde(default)]
    pub unit: Unit,
    /// Condense when the history holds more units than this.
    pub max_units: usize,
    /// Units kept at the start.
    #[serde(default)]
    pub keep_first: usize,
    /// Units kept at the end.
    pub keep_last: usize,
    /// Drop or summarize.
    #[serde(default)]
    pub action: CondenseAction,
    /// Fold the previous summary into the next one (otherwise summaries accumulate).
    #[serde(default = "default_rolling")]
    pub rolling: bool,
    /// A user message the summary answers, as an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow_prompt: Option<String>,
    /// Characters of each item shown to the summarizer.
    #[serde(default = "default_item_chars")]
    pub item_chars: usize,
    /// Forget this share of the units after the first `keep_first` (at least one, never the last `keep_last`)
    /// instead of all but the last `keep_last`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forget_share: Option<f64>,
    /// Keep the forgotten user messages, newest first, within this many tokens (4 bytes a token); the summary
    /// follows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_user_tokens: Option<usize>,
    /// The summarizer's prompt, and how the summary is written into the history.
    #[serde(default, skip_serializing_if = "Prompt::is_ctxbench")]
    pub prompt: Prompt,
    /// The summary stands for an opaque item of this many tokens: it is cut to them or filled up to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque_tokens: Option<usize>,
}

impl CondenserConfig {
    /// A condenser of `max_units` units keeping the first `keep_first` and the last `keep_last`, with every
    /// other parameter at its default (`drop`, rolling, ctxbench's prompt).
    #[must_use]
    pub fn new(unit: Unit, max_units: usize, keep_first: usize, keep_last: usize) -> Self {
        Self {
            unit,
            max_units,
            keep_first,
            keep_last,
            action: CondenseAction::Drop,
            rolling: true,
            shadow_prompt: None,
            item_chars: default_item_chars(),
            forget_share: None,
            keep_user_tokens: None,
            prompt: Prompt::Ctxbench,
            opaque_tokens: None,
        }
    }
}

impl StrategySpec for CondenserConfig {
    /// Checks the parameters.
    /// When `max_units` is 0, the kept units exceed it, or `item_chars` is 0.
    fn validate(&self) -> Result<()> {
        if self.max_units == 0 {
            return Err(Error::Config("condenser max_units must be above 0".into()));
        }
        if self.keep_first + self.keep_last > self.max_units {
            return Err(Error::Config(format!(
                "condenser keeps {} + {} units, more than max_units {}",
                self.keep_first, self.keep_last, self.max_units
            )));
        }
        if self.item_chars == 0 {
            return Err(Error::Config("condenser item_chars must be above 0".into()));
        }
        if let Some(share) = self.forget_share {
            if !(share > 0.0 && share <= 1.0) {
                return Err(Error::Config(format!(
                    "condenser forget_share {share} is outside (0, 1]"
                )));
            }
        }
        if self.opaque_tokens == Some(0) {
            return Err(Error::Config(
                "condenser opaque_tokens must be above 0".into(),
            ));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Condenser::new(self.clone()))
    }
}

/// The condenser strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct Condenser {
    config: CondenserConfig,
}

impl Condenser {
    /// A condenser with the given parameters.
    #[must_use]
    pub fn new(config: CondenserConfig) -> Self {
        Self { config }
    }

    /// Whether item `i` belongs to a summary: the summary itself, or the shadow prompt right before one.
    fn is_summary_part(&self, items: &[Item], i: usize) -> bool {
        items[i].is_summary()
            || self.config.shadow_prompt.as_deref().is_some_and(|shadow| {
                items[i].is_role(Role::User)
                    && items[i].text() == shadow
                    && items.get(i + 1).is_some_and(Item::is_summary)
            })
    }

    /// Which items a condensation would forget now, or `None` when the history is within its limit.
    fn forgotten(&self, items: &[Item]) -> Option<Vec<bool>> {
        let starts: Vec<usize> = self
            .config
            .unit
            .starts(items)
            .into_iter()
            .filter(|&i| !self.is_summary_part(items, i))
            .collect();
        let n = starts.len();
        if n <= self.config.max_units || self.config.keep_first + self.config.keep_last >= n {
            return None;
        }
        let from = starts[self.config.keep_first];
        let last = match self.config.forget_share {
            None => n - self.config.keep_last,
            Some(share) => {
                let after_first = n - self.config.keep_first;
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    clippy::cast_precision_loss
                )]
                let forget = ((after_first as f64 * share).floor() as usize).max(1);
                (self.config.keep_first + forget).min(n - self.config.keep_last)
            }
        };
        let mut to = starts.get(last).copied().unwrap_or(items.len());
        if self.config.forget_share.is_some() {
            // The kept part may not start with a result whose call is forgotten: the cut moves past it.
            while items.get(to).is_some_and(|i| {
                matches!(i, Item::ToolResult { .. })
                    && i.call_id().is_some_and(|id| {
                        items[from..to]
                            .iter()
                            .any(|c| matches!(c, Item::ToolCall { id: cid, .. } if **cid == *id))
                    })
            }) {
                to += 1;
            }
        }
        let fold = self.config.action == CondenseAction::Summarize && self.config.rolling;
        let forgotten = (0..items.len())
            .map(|i| {
                if self.is_summary_part(items, i) {
                    fold
                } else {
                    (from..to).contains(&i) && !items[i].is_role(Role::System)
                }
            })
            .collect();
        Some(forgotten)
    }
}

impl Condenser {
    /// The items the summary covers (earlier summaries aside, and their parts) and the request that asks for it:
    /// their transcript after the earlier summaries, with the task.
    fn summary_request(&self, items: &[Item], covered: &[bool]) -> (Vec<Item>, LlmRequest) {
        let mut previous = Vec::new();
        let mut history = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if !covered[i] {
                continue;
            }
            if item.is_summary() {
                previous.push(
                    item.text()
                        .strip_prefix(SUMMARY_PREFIX)
                        .unwrap_or(item.text()),
                );
            } else if !self.is_summary_part(items, i) {
                history.push(item.clone());
            }
        }
        let transcript =
            Transcript::of_items(&history, self.config.item_chars, self.config.item_chars).after(
                (!previous.is_empty())
                    .then(|| previous.join("\n"))
                    .as_deref(),
            );
        let task = items
            .iter()
            .find(|i| i.is_role(Role::User) && !i.is_summary())
            .map_or("", Item::text);
        let request = self.config.prompt.summary_request(&transcript, task);
        (history, request)
    }
}

impl Strategy for Condenser {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        let Some(mut forgotten) = self.forgotten(&req.contents) else {
            return Ok(Applied::unchanged());
        };
        // What the summary covers: the forgotten items, user messages kept by a budget included.
        let covered = forgotten.clone();
        let range_end = covered.iter().rposition(|&f| f).map_or(0, |i| i + 1);
        let mut edited: Option<(usize, String)> = None;
        if let Some(budget) = self.config.keep_user_tokens {
            let (kept, cut) = keep_user_messages(&req.contents, &forgotten, budget);
            for i in kept {
                forgotten[i] = false;
            }
            edited = cut;
        }
        let keep: Vec<bool> = forgotten.iter().map(|f| !f).collect();
        let mut summary_items = Vec::new();
        let mut call = None;
        let mut summarized_items = 0;
        if self.config.action == CondenseAction::Summarize {
            let (history, request) = self.summary_request(&req.contents, &covered);
            match ask(llm, &request) {
                Ok((answer, done)) => {
                    call = Some(done);
                    summarized_items = history.len();
                    let mut summary = self
                        .config
                        .prompt
                        .wrap(&self.config.prompt.extract(&answer));
                    if let Some(tokens) = self.config.opaque_tokens {
                        summary = opaque(&at.tokenizer, &summary, tokens);
                    }
                    summary_items = match &self.config.shadow_prompt {
                        Some(shadow) => vec![Item::user(shadow.clone()), Item::assistant(summary)],
                        None => vec![Item::user(summary)],
                    };
                }
                // The request stays exactly as it was.
                Err(failed) => return Ok(Applied::unchanged().with_call(failed)),
            }
        }
        if let Some((i, text)) = &edited {
            req.contents[*i] = Item::user(text.clone());
        }
        let first_forgotten = forgotten.iter().position(|&f| f).unwrap_or(0);
        let keep = paired(&req.contents, &keep);
        // The summary goes where the forgotten items were; after the user messages a budget kept, with one.
        let insert_before = if self.config.keep_user_tokens.is_some() {
            range_end
        } else {
            first_forgotten
        };
        let insert_at = keep[..insert_before].iter().filter(|&&k| k).count();
        let edited_at = edited
            .as_ref()
            .map(|(i, _)| keep[..*i].iter().filter(|&&k| k).count());
        let kept = retain_paired(&mut req.contents, &keep);
        let removed = kept.iter().filter(|&&k| !k).count();
        let forgotten_items = forgotten.iter().filter(|&&f| f).count();
        let change = change_of(kept, !summary_items.is_empty(), insert_at, edited_at);
        let mut applied = Applied::new(change);
        applied.llm_calls.extend(call);
        applied.summarized_items = summarized_items;
        applied.compacted_items = usize::from(edited.is_some());
        applied.truncated_items = usize::from(edited.is_some());
        applied.dropped_items = if summary_items.is_empty() {
            removed
        } else {
            removed.saturating_sub(forgotten_items)
        };
        req.contents.splice(insert_at..insert_at, summary_items);
        Ok(applied)
    }
}

/// What a condensation changed: items dropped only, or, with a summary inserted at `insert_at` or a user
/// message cut at `edited_at`, the items before the first one dropped or changed, and before the summary, as
/// they were.
fn change_of(kept: Vec<bool>, summary: bool, insert_at: usize, edited_at: Option<usize>) -> Change {
    if !summary && edited_at.is_none() {
        return Change::Dropped(kept);
    }
    let first_dropped = kept.iter().position(|&k| !k).unwrap_or(kept.len());
    Change::Rewrote {
        kept_prefix: first_dropped
            .min(if summary { insert_at } else { usize::MAX })
            .min(edited_at.unwrap_or(usize::MAX)),
    }
}

/// Codex's estimate of a text's tokens: 4 bytes a token, rounded up.
fn approx_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// The user messages of `items` among the `forgotten` ones that fit `budget` tokens, newest first (Codex's
/// `build_compacted_history`): their indices, and the one that crosses the budget with its middle cut out.
fn keep_user_messages(
    items: &[Item],
    forgotten: &[bool],
    budget: usize,
) -> (Vec<usize>, Option<(usize, String)>) {
    let mut kept = Vec::new();
    let mut remaining = budget;
    for i in (0..items.len()).rev() {
        // A user message as the server sees it: an observation is sent as one.
        if !forgotten[i] || items[i].wire_role() != "user" || items[i].is_summary() {
            continue;
        }
        if remaining == 0 {
            break;
        }
        let text = items[i].text();
        let tokens = approx_tokens(text);
        kept.push(i);
        if tokens <= remaining {
            remaining -= tokens;
        } else {
            return (kept, Some((i, truncate_middle(text, remaining))));
        }
    }
    (kept, None)
}

/// `text` cut to `tokens` tokens (4 bytes each) in its middle, as Codex truncates: half the budget's bytes
/// from the start, the rest from the end, and `…N tokens truncated…` between.
fn truncate_middle(text: &str, tokens: usize) -> String {
    let budget = tokens * 4;
    if text.len() <= budget {
        return text.to_owned();
    }
    let mut left = budget / 2;
    while !text.is_char_boundary(left) {
        left -= 1;
    }
    let mut right = text.len() - (budget - budget / 2);
    while !text.is_char_boundary(right) {
        right += 1;
    }
    format!(
        "{}…{} tokens truncated…{}",
        &text[..left],
        (text.len() - budget).div_ceil(4),
        &text[right..]
    )
}

/// What fills an opaque item up to its size, after a line saying what it is: a word of one token.
const OPAQUE_FILL: &str = " opaque";

/// `summary` as an opaque item of `tokens` tokens (counted as a user message by `tokenizer`): cut at its end to
/// fit, or filled up to them after a line `[opaque compaction item]`; within a token or two where the tokenizer
/// merges.
fn opaque(tokenizer: &Tokenizer, summary: &str, tokens: usize) -> String {
    let count = |text: &str| tokenizer.count_item(&Item::user(text));
    let mut text = summary.to_owned();
    // A token holds at least one character: dropping as many characters as tokens over never cuts too much.
    while count(&text) > tokens && !text.is_empty() {
        let over = count(&text) - tokens;
        let n = text.chars().count();
        text = text.chars().take(n.saturating_sub(over)).collect();
    }
    if count(&text) >= tokens {
        return text;
    }
    let base = format!("{text}\n[opaque compaction item]");
    if count(&base) > tokens {
        return text;
    }
    let mut fill = tokens.saturating_sub(count(&base));
    // A few rounds: each fill word is one token, but merges at the seams may make it more or fewer.
    for _ in 0..8 {
        let candidate = format!("{base}{}", OPAQUE_FILL.repeat(fill));
        let got = count(&candidate);
        if got <= tokens {
            text = candidate;
        }
        match got.cmp(&tokens) {
            std::cmp::Ordering::Equal => break,
            std::cmp::Ordering::Less => fill += tokens - got,
            std::cmp::Ordering::Greater => fill = fill.saturating_sub(got - tokens),
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state, Failing};

    fn config(max_units: usize, keep_first: usize, keep_last: usize) -> CondenserConfig {
        CondenserConfig::new(Unit::Items, max_units, keep_first, keep_last)
    }

    /// sys, task, then `n` (call, result) pairs.
    fn history(n: usize) -> LlmRequest {
        let mut items = vec![Item::system("sys"), Item::user("task")];
        for i in 0..n {
            items.push(Item::tool_call(
                format!("c{i}"),
                "run",
                format!("{{\"i\":{i}}}"),
            ));
            items.push(Item::tool_result(
                format!("c{i}"),
                "run",
                format!("out {i}"),
            ));
        }
        LlmRequest::from_contents(items)
    }

    #[test]
    fn under_the_limit_nothing_changes() {
        let mut c = Condenser::new(config(10, 1, 4));
        let mut r = history(4); // 9 units
        let before = r.clone();
        let a = run(&mut c, &state(100_000), &mut r, &mock());
        assert_eq!((a.changed(), r), (false, before));
    }

    #[test]
    fn drop_keeps_head_and_tail_and_never_splits_a_pair() {
        let mut c = Condenser::new(config(10, 1, 5));
        let mut r = history(6); // task + 12 items = 13 units
        let a = run(&mut c, &state(100_000), &mut r, &mock());
        // Forgotten: units 1..8 (c0..r3); the tail starts with r3, whose call is gone, so r3 goes too.
        let texts: Vec<&str> = r.contents.iter().map(Item::text).collect();
        assert_eq!(
            texts,
            ["sys", "task", "{\"i\":4}", "out 4", "{\"i\":5}", "out 5"]
        );
        assert_eq!(a.dropped_items, 8);
    }

    #[test]
    fn summarize_folds_the_previous_summary_and_places_the_new_one_after_the_head() {
        let mut cfg = config(6, 1, 2);
        cfg.action = CondenseAction::Summarize;
        let mut c = Condenser::new(cfg);
        let llm = mock();
        let mut r = history(4); // 9 units
        let a = run(&mut c, &state(100_000), &mut r, &llm);
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(a.summarized_items, 6);
        assert_eq!(r.contents[1].text(), "task");
        assert!(r.contents[2].is_summary(), "{:?}", r.contents[2]);
        assert_eq!(r.contents.len(), 5, "sys, task, summary, c3, r3");
        // Grow again: the second summary replaces the first.
        for i in 4..8 {
            r.contents
                .push(Item::tool_call(format!("c{i}"), "run", "{}"));
            r.contents.push(Item::tool_result(
                format!("c{i}"),
                "run",
                format!("out {i}"),
            ));
        }
        run(&mut c, &state(100_000), &mut r, &llm);
        assert_eq!(r.contents.iter().filter(|i| i.is_summary()).count(), 1);
        assert!(r.contents[2].is_summary());
    }

    #[test]
    fn a_failed_summary_leaves_the_request_as_it_was() {
        let mut cfg = config(6, 1, 2);
        cfg.action = CondenseAction::Summarize;
        let mut r = history(4);
        let before = r.clone();
        let a = run(&mut Condenser::new(cfg), &state(100_000), &mut r, &Failing);
        assert_eq!(r, before);
        assert!(!a.changed());
        assert_eq!(a.failures(), 1);
    }

    #[test]
    fn a_share_forgets_the_oldest_and_moves_the_cut_past_an_orphan_result() {
        // Strands: 30% of the messages, never the last 10; the task is a message like any other.
        let mut cfg = CondenserConfig::new(Unit::Messages, 10, 0, 10);
        cfg.forget_share = Some(0.3);
        let mut r = history(10); // task + 20 messages = 21: forget 6 (task, c0, r0, c1, r1, c2) and r2 with c2
        let a = run(&mut Condenser::new(cfg), &state(100_000), &mut r, &mock());
        assert_eq!(r.contents[1].text(), "{\"i\":3}");
        assert_eq!(a.dropped_items, 7);
    }

    #[test]
    fn codex_keeps_user_messages_within_a_budget_and_the_summary_follows_them() {
        let mut cfg = CondenserConfig::new(Unit::Items, 1, 0, 0);
        cfg.action = CondenseAction::Summarize;
        cfg.keep_user_tokens = Some(10);
        cfg.prompt = Prompt::Codex;
        let mut r = history(2);
        // 25 tokens by Codex's estimate, newest first: cut to the budget's 10, and the task no longer fits.
        r.contents.push(Item::user("x".repeat(100)));
        let a = run(&mut Condenser::new(cfg), &state(100_000), &mut r, &mock());
        let texts: Vec<&str> = r.contents.iter().map(Item::text).collect();
        assert_eq!(
            texts[1],
            format!("{}…15 tokens truncated…{}", "x".repeat(20), "x".repeat(20))
        );
        assert!(
            texts[2].starts_with("You are resuming an in-progress task"),
            "{}",
            texts[2]
        );
        assert_eq!(r.contents.len(), 3);
        assert_eq!(a.truncated_items, 1);
        assert_eq!(a.llm_calls.len(), 1);
    }

    #[test]
    fn an_opaque_item_has_the_size_it_states() {
        let tok = crate::tokens::Tokenizer::shared_default().unwrap();
        for target in [40, 400, 2_000] {
            let text = opaque(&tok, "short summary\nwith two lines", target);
            let got = tok.count_item(&Item::user(text.as_str()));
            assert!(got.abs_diff(target) <= 2, "{target}: {got}");
        }
        let long = "fact 1234 ".repeat(500);
        let cut = opaque(&tok, &long, 100);
        assert!(tok.count_item(&Item::user(cut.as_str())) <= 100);
        assert!(long.starts_with(&cut));
    }

    #[test]
    fn invalid_limits_are_named() {
        let err = config(4, 2, 3).validate().unwrap_err();
        assert!(err.to_string().contains("max_units 4"), "{err}");
    }
}
