//! Inspect AI: the compaction `react()` runs before every generate, call for call (inspect_ai 0.3.285,
//! `model/_compaction/_compaction.py`'s `compaction()` handler and `_perform_compaction`).
//!
//! ## What it does
//! At a call point whose request is over `threshold` × the window (Inspect's `int(threshold * window)`), the
//! strategy compacts it (`compaction`: `summary`, `trim`, `edit` or `native`), and compacts the result again, up
//! to 3 more passes, while it is still over and each pass still shrinks it. A request still over after that is
//! where Inspect raises `RuntimeError("Compaction insufficient: …")`, which `react()` does not catch: the
//! sample fails there, and so does the episode under this strategy ([`Applied::failure`]).
//!
//! The sample's input is read once, as `react()` reads it: `_agent_compact` takes the system messages and every
//! message tagged `source="input"` (`inspect_ai/_eval/task/util.py`'s `sample_messages` tags each message of the
//! sample's input) as the prefix every compaction keeps, and `_trim.py`'s `partition_messages` keeps the same
//! ones. In a replay that is the request at the first call point: everything before the first assistant turn.
//!
//! - `summary` (`CompactionSummary`): everything after the input becomes one user message, Inspect's
//!   `[CONTEXT COMPACTION SUMMARY]` wrapper around the model's summary; the previous summary is folded in.
//! - `trim` (`CompactionTrim`, `_trim.py`'s `trim_messages`): the oldest `int(n × (1 − preserve))` of the n
//!   conversation messages go, computed in floating point as Inspect does (`1 − 0.8` is 0.19999999999999996, so
//!   35 messages lose 6, not 7); then every tool result whose call is not in the assistant message before it,
//!   every call whose result went, and a trailing assistant message. A message is an assistant turn (its text
//!   and calls), a tool result or a user message.
//! - `edit` (`CompactionEdit`): every tool result but the newest `keep_tool_uses` becomes '(Tool result
//!   removed)', the calls kept; an observation is a user message to Inspect and stays. Not reproduced: the
//!   reasoning of all but the newest assistant turn, which Inspect clears where the provider allows it.
//! - `native` (`CompactionNative`, OpenAI's `responses.compact`): every user message, then one opaque compaction
//!   item of 2,000 tokens written by the run's model; Inspect counts that result without the system messages.
//!
//! ## Which count triggers
//! Inspect's, as `compact_input` makes it with a real provider: at the first call point its count of the
//! messages plus the tool schemas; after, the previous call's usage (`record_output`: the request as sent
//! there) plus its count of the messages added since. The passes count the messages plus the tool schemas
//! as counted once, at the first call point. The provider's counts (OpenAI's and Anthropic's token-counting
//! endpoints, and usage) are the run's tokenizer here; Inspect's own estimate for providers without an
//! endpoint (o200k + 10%) is not reproduced. They part from ctxbench's count of the whole request only where
//! what is sent outside the messages changes between call points (the unrecorded context of an imported
//! trace, [`crate::history::Item::Unrecorded`]): Inspect counts the previous call's, and in its passes the
//! first call's.
//!
//! ## Parameters
//! - `compaction` (required), `threshold` (0.9), `preserve` (0.8, `trim`), `keep_tool_uses` (3, `edit`).
//!
//! ## Example
//! `{"type": "inspect", "compaction": "trim", "threshold": 0.9, "preserve": 0.8}`

use serde::{Deserialize, Serialize};

use super::{
    Applied, CallPoint, Change, CondenseAction, CondenserConfig, Prompt, Strategy, StrategySpec,
};
use crate::error::{Error, Result};
use crate::history::{Item, Role, Unit};
use crate::llm::{Llm, LlmRequest};

/// Which of Inspect's compaction strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InspectCompaction {
    /// `CompactionSummary`.
    Summary,
    /// `CompactionTrim`.
    Trim,
    /// `CompactionEdit`.
    Edit,
    /// `CompactionNative`.
    Native,
}

fn default_threshold() -> f64 {
    0.9
}

fn default_preserve() -> f64 {
    0.8
}

fn default_keep_tool_uses() -> usize {
    3
}

/// Parameters of [`Inspect`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectConfig {
    /// The compaction strategy.
    pub compaction: InspectCompaction,
    /// Share of the window over which it compacts.
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// `trim`: the share of the conversation's messages kept.
    #[serde(default = "default_preserve")]
    pub preserve: f64,
    /// `edit`: the newest tool results kept.
    #[serde(default = "default_keep_tool_uses")]
    pub keep_tool_uses: usize,
}

impl InspectConfig {
    /// Inspect's defaults for `compaction`.
    #[must_use]
    pub fn new(compaction: InspectCompaction) -> Self {
        Self {
            compaction,
            threshold: default_threshold(),
            preserve: default_preserve(),
            keep_tool_uses: default_keep_tool_uses(),
        }
    }

    /// Inspect's `_resolve_threshold`: `int(threshold * window)`.
    #[must_use]
    pub fn trigger_tokens(&self, window: usize) -> usize {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let trigger = (self.threshold * window as f64) as usize;
        trigger
    }
}

impl StrategySpec for InspectConfig {
    /// Checks the parameters.
    /// When the threshold is outside (0, 1] or `preserve` outside [0, 1].
    fn validate(&self) -> Result<()> {
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(Error::Config(format!(
                "inspect threshold {} is outside (0, 1]",
                self.threshold
            )));
        }
        if !(0.0..=1.0).contains(&self.preserve) {
            return Err(Error::Config(format!(
                "inspect preserve {} is outside [0, 1]",
                self.preserve
            )));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Inspect::new(self.clone()))
    }

    fn budget(&self, context_window: usize) -> Option<usize> {
        Some(self.trigger_tokens(context_window))
    }
}

/// Inspect's size of an opaque compaction item, as ctxbench states it (no provider publishes one).
const OPAQUE_TOKENS: usize = 2_000;

/// A budget of user messages that keeps every one.
const EVERY_USER_MESSAGE: usize = 1_000_000_000;

/// The characters of each message the summarizer is shown: all of them.
const WHOLE_MESSAGES: usize = 1_000_000;

/// Inspect's placeholder for a tool result `CompactionEdit` removed.
pub const INSPECT_EDIT_PLACEHOLDER: &str = "(Tool result removed)";

/// The strategy; see the module docs.
pub struct Inspect {
    config: InspectConfig,
    /// Items of the sample's input (the request at the first call point), once seen.
    input: Option<usize>,
    /// The strategy a pass runs (`trim` is this module's own).
    pass: Option<Box<dyn Strategy>>,
    /// What the first call point sent outside the messages (tool schemas, unrecorded context): Inspect counts
    /// it once (`count_tool_tokens`) and uses it in every pass.
    first_fixed: Option<usize>,
    /// What the previous call point sent outside the messages: part of its usage, Inspect's baseline.
    previous_fixed: Option<usize>,
}

impl Inspect {
    /// The strategy for `config`.
    #[must_use]
    pub fn new(config: InspectConfig) -> Self {
        // Every unit after the input is summarized, one alone too (`max_units` 0: built here, never validated).
        let summarize = |unit, prompt| CondenserConfig {
            action: CondenseAction::Summarize,
            item_chars: WHOLE_MESSAGES,
            prompt,
            ..CondenserConfig::new(unit, 0, 0, 0)
        };
        let pass: Option<Box<dyn Strategy>> = match config.compaction {
            InspectCompaction::Summary => {
                Some(summarize(Unit::AgentTurns, Prompt::Inspect).build())
            }
            InspectCompaction::Native => Some(
                CondenserConfig {
                    keep_user_tokens: Some(EVERY_USER_MESSAGE),
                    opaque_tokens: Some(OPAQUE_TOKENS),
                    ..summarize(Unit::Items, Prompt::Ctxbench)
                }
                .build(),
            ),
            InspectCompaction::Trim | InspectCompaction::Edit => None,
        };
        Self {
            config,
            input: None,
            pass,
            first_fixed: None,
            previous_fixed: None,
        }
    }

    /// One pass of the compaction over `req`.
    fn compact(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        match (&mut self.pass, self.config.compaction) {
            (Some(pass), _) => pass.apply(at, req, llm),
            (None, InspectCompaction::Edit) => Ok(edit(req, self.config.keep_tool_uses)),
            (None, _) => Ok(trim(req, self.input.unwrap_or(0), self.config.preserve)),
        }
    }

    /// What Inspect holds against its threshold after a pass: the request, less its system messages for
    /// `native` (whose result the orchestrator counts before it puts them back).
    fn counted(&self, at: &CallPoint, req: &LlmRequest) -> usize {
        let tokens = at.measure(req) - at.fixed_tokens() + self.first_fixed.unwrap_or(0);
        if self.config.compaction != InspectCompaction::Native {
            return tokens;
        }
        let system: usize = req
            .contents
            .iter()
            .filter(|i| i.is_role(Role::System))
            .map(|i| at.tokenizer.count_item(i))
            .sum();
        tokens - system
    }
}

impl Strategy for Inspect {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        // The sample's input: what comes before the first assistant turn when the strategy first sees the
        // request (at a replay's first call point, all of it).
        self.input.get_or_insert_with(|| {
            req.contents
                .iter()
                .position(Item::is_assistant_turn)
                .unwrap_or(req.contents.len())
        });
        let threshold = self.config.trigger_tokens(at.context_window);
        // The previous call's usage plus the messages added since: the request as counted now, with what the
        // previous call sent outside the messages in place of what this one does.
        let fixed = at.fixed_tokens();
        self.first_fixed.get_or_insert(fixed);
        let previous = self.previous_fixed.replace(fixed).unwrap_or(fixed);
        if at.input_tokens(req) - fixed + previous <= threshold {
            return Ok(Applied::unchanged());
        }
        // `_perform_compaction`: a pass, then up to 3 more while over and shrinking.
        let mut applied = self.compact(at, req, llm)?;
        let mut total = self.counted(at, req);
        for _ in 0..3 {
            if total <= threshold || applied.failures() > 0 {
                break;
            }
            let before = total;
            let pass = self.compact(&at.with_input_tokens(at.measure(req)), req, llm)?;
            applied.merge(pass);
            total = self.counted(at, req);
            if total >= before {
                break;
            }
        }
        if total > threshold && applied.failures() == 0 {
            applied.failure = Some(format!(
                "Inspect AI raises RuntimeError (not caught by react()): Compaction insufficient: {} tokens \
                 still exceeds threshold of {}",
                thousands(total),
                thousands(threshold)
            ));
        }
        Ok(applied)
    }
}

/// `n` with thousands separators, as Python's `{n:,}` writes it.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The name of the tool whose result `CompactionEdit` never clears (it carries tool definitions).
const TOOL_SEARCH_NAME: &str = "tool_search";

/// `edit.py`'s `CompactionEdit.compact`: every tool use (a call and the first tool result with its id after
/// it, in the calls' order) but the newest `keep` (all of them with 0) has its result replaced by '(Tool
/// result removed)', the call kept. Only tool results are: a user message is not one to Inspect, an
/// observation neither (it is sent as a user message).
fn edit(req: &mut LlmRequest, keep: usize) -> Applied {
    let items = &req.contents;
    let mut uses: Vec<usize> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Item::ToolCall { id, name, .. } = item else {
            continue;
        };
        if **name == *TOOL_SEARCH_NAME {
            continue;
        }
        let result = items[i + 1..]
            .iter()
            .position(|r| matches!(r, Item::ToolResult { .. }) && r.call_id() == Some(&**id));
        uses.extend(result.map(|r| i + 1 + r));
    }
    let cleared = if keep == 0 {
        &uses[..]
    } else {
        &uses[..uses.len().saturating_sub(keep)]
    };
    let mut edited: Vec<usize> = cleared
        .iter()
        .copied()
        .filter(|&r| items[r].text() != INSPECT_EDIT_PLACEHOLDER)
        .collect();
    edited.sort_unstable();
    edited.dedup();
    let Some(&first) = edited.first() else {
        return Applied::unchanged();
    };
    for &r in &edited {
        if let Item::ToolResult { content, .. } = &mut req.contents[r] {
            *content = INSPECT_EDIT_PLACEHOLDER.into();
        }
    }
    Applied {
        compacted_items: edited.len(),
        ..Applied::new(Change::Rewrote { kept_prefix: first })
    }
}

/// Where each message of `items[from..]` starts, as Inspect's chat messages: an assistant turn's text starts
/// one and its calls join it; every other item is one.
fn message_starts(items: &[Item], from: usize) -> Vec<usize> {
    (from..items.len())
        .filter(|&i| {
            let item = &items[i];
            !item.is_assistant_turn()
                || item.is_role(Role::Assistant)
                || i == from
                || !items[i - 1].is_assistant_turn()
        })
        .collect()
}

/// `_trim.py`'s `trim_messages(messages, preserve)` over a request whose first `input` items are the sample's
/// input: the kept items, dropped from the request.
fn trim(req: &mut LlmRequest, input: usize, preserve: f64) -> Applied {
    let items = &req.contents;
    let input = input.min(items.len());
    // System messages after the input stay (partition_messages puts them with the system ones; ctxbench keeps
    // them in place: agents do not send any there).
    let starts: Vec<usize> = message_starts(items, input)
        .into_iter()
        .filter(|&i| !items[i].is_role(Role::System))
        .collect();
    let end_of = |k: usize| {
        let next = starts.get(k + 1).copied().unwrap_or(items.len());
        // A system message between two conversation messages ends the first.
        (starts[k]..next)
            .find(|&i| i > starts[k] && items[i].is_role(Role::System))
            .unwrap_or(next)
    };
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let start = (starts.len() as f64 * (1.0 - preserve)) as usize;
    let mut keep: Vec<bool> = items
        .iter()
        .enumerate()
        .map(|(i, item)| i < input || item.is_role(Role::System))
        .collect();
    // Tool messages whose call is in the assistant message before them; user messages reset it.
    let mut active: Vec<&str> = Vec::new();
    let mut kept_messages: Vec<usize> = Vec::new();
    for k in start..starts.len() {
        let first = &items[starts[k]];
        let range = starts[k]..end_of(k);
        let keep_it = if first.is_assistant_turn() {
            active = items[range.clone()]
                .iter()
                .filter_map(|i| match i {
                    Item::ToolCall { id, .. } => Some(&**id),
                    _ => None,
                })
                .collect();
            true
        } else if matches!(first, Item::ToolResult { .. }) {
            first.call_id().is_some_and(|id| active.contains(&id))
        } else {
            active.clear();
            true
        };
        if keep_it {
            kept_messages.push(k);
            keep[range].fill(true);
        }
    }
    // Calls whose result is not kept go.
    let answered: Vec<&str> = (0..items.len())
        .filter(|&i| keep[i] && matches!(items[i], Item::ToolResult { .. }))
        .filter_map(|i| items[i].call_id())
        .collect();
    for (i, item) in items.iter().enumerate() {
        if let Item::ToolCall { id, .. } = item {
            if keep[i] && !answered.contains(&&**id) {
                keep[i] = false;
            }
        }
    }
    // A trailing assistant message goes.
    if let Some(&k) = kept_messages.last() {
        if items[starts[k]].is_assistant_turn() {
            let range = starts[k]..end_of(k);
            keep[range].fill(false);
        }
    }
    let dropped = keep.iter().filter(|&&k| !k).count();
    if dropped == 0 {
        return Applied::unchanged();
    }
    let mut flags = keep.iter();
    req.contents.retain(|_| *flags.next().unwrap_or(&true));
    Applied {
        dropped_items: dropped,
        ..Applied::new(Change::Dropped(keep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::presets::testing::agent_run;
    use crate::strategy::testing::{mock, run, state};

    fn strategy(compaction: InspectCompaction) -> Inspect {
        Inspect::new(InspectConfig::new(compaction))
    }

    #[test]
    fn trim_forgets_a_fifth_in_floating_point_as_inspect() {
        // 35 messages: int(35 * (1 - 0.8)) is 6 in floating point (0.19999999999999996), not 7.
        assert_eq!((35.0 * (1.0 - 0.8)) as usize, 6);
        let mut s = strategy(InspectCompaction::Trim);
        let mut r = agent_run(17, 50); // task + 34 conversation messages, + one user message = 35
        r.contents.push(Item::user("and the docs"));
        let tokens = state(0).measure(&r);
        // Just over the threshold: one pass.
        let st = state(tokens * 10 / 9 - 5);
        let a = run(&mut s, &st, &mut r, &mock());
        assert_eq!(a.dropped_items, 6, "c0 r0 c1 r1 c2 r2");
        assert_eq!(r.contents[2].text(), "{\"i\":3}");
        assert!(a.failure.is_none());
    }

    #[test]
    fn the_input_is_every_message_before_the_first_assistant_turn() {
        let mut s = strategy(InspectCompaction::Trim);
        let mut r = LlmRequest::from_contents(vec![
            Item::system("sys"),
            Item::user("task"),
            Item::user("more of the task"),
        ]);
        run(&mut s, &state(1_000_000), &mut r, &mock());
        r.contents
            .extend(agent_run(10, 50).contents.into_iter().skip(2));
        let tokens = state(0).measure(&r);
        run(&mut s, &state(tokens * 10 / 9 - 5), &mut r, &mock());
        assert_eq!(r.contents[2].text(), "more of the task");
        assert_eq!(r.contents[3].text(), "{\"i\":2}");
    }

    /// One agent turn after the task (a trace's first turn, or the first after a summary) is summarized too.
    #[test]
    fn summary_takes_a_single_turn() {
        let mut s = strategy(InspectCompaction::Summary);
        let mut r = agent_run(1, 400);
        r.contents.push(Item::user("and then this"));
        let tokens = state(0).measure(&r);
        let a = run(&mut s, &state(tokens), &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        assert!(a.failure.is_none(), "{:?}", a.failure);
        assert_eq!(texts_of(&r)[..2], ["sys", "task"]);
        assert!(r.contents[2]
            .text()
            .starts_with("[CONTEXT COMPACTION SUMMARY]"));
        assert_eq!(r.contents.len(), 3);
    }

    fn texts_of(r: &LlmRequest) -> Vec<&str> {
        r.contents.iter().map(Item::text).collect()
    }

    /// Inspect's count after the first call point is the previous call's usage plus the messages since: what
    /// the previous call sent outside the messages stands in for what this one sends.
    #[test]
    fn the_count_is_the_previous_usage_plus_the_messages_since() {
        let mut s = strategy(InspectCompaction::Edit);
        let mut r = agent_run(4, 50);
        let messages = state(0).measure(&r);
        let at = |unrecorded: usize| CallPoint {
            unrecorded_tokens: unrecorded,
            ..state(20_000)
        };
        // 18,000 is the threshold: 17,000 + the messages is under it at the first call point.
        assert_eq!(
            run(&mut s, &at(17_000), &mut r, &mock()),
            Applied::unchanged()
        );
        // Now 19,000 is sent outside the messages, but Inspect counts the previous call's 17,000: under.
        assert_eq!(
            run(&mut s, &at(19_000), &mut r, &mock()),
            Applied::unchanged()
        );
        // The next call point counts this one's 19,000: over.
        let a = run(&mut s, &at(19_000), &mut r, &mock());
        assert!(a.compacted_items > 0, "{a:?}");
        assert!(messages < 1_000);
    }

    #[test]
    fn a_request_no_pass_brings_under_fails_as_inspect_raises() {
        let mut s = strategy(InspectCompaction::Edit);
        let mut r = agent_run(2, 2_000);
        let tokens = state(0).measure(&r);
        let a = run(&mut s, &state(tokens / 2), &mut r, &mock());
        let failure = a.failure.expect("Inspect raises here");
        assert!(
            failure.contains("Compaction insufficient")
                && failure.contains("still exceeds threshold of"),
            "{failure}"
        );
        // Under the threshold nothing happens, and nothing fails.
        let mut s = strategy(InspectCompaction::Edit);
        let mut r = agent_run(2, 10);
        let a = run(&mut s, &state(1_000_000), &mut r, &mock());
        assert_eq!(a, Applied::unchanged());
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
