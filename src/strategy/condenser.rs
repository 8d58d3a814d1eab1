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
//! ## Trade-offs
//! Unit counts are cheap to check and independent of the tokenizer, but blind to size: a hundred short events
//! trigger a condensation that a few huge tool outputs never will. Halving (keep far fewer than `max_units`)
//! amortizes the cost: the context grows back for many steps between two condensations and keeps its prompt
//! cache meanwhile.
//!
//! ## Parameters
//! - `unit` (`items`), `max_units` (required), `keep_first` (0), `keep_last` (required).
//! - `action` (`drop`), `rolling` (true), `shadow_prompt` (none), `item_chars` (10000: the formatter's cut).
//!
//! ## Example
//! `{"type": "condenser", "unit": "items", "max_units": 100, "keep_first": 1, "keep_last": 49}`

use serde::{Deserialize, Serialize};

use super::summarization::request_summary;
use super::{paired, retain_paired, Applied, CallPoint, Change, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role, Unit, SUMMARY_PREFIX};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        let to = if self.config.keep_last == 0 {
            items.len()
        } else {
            starts[n - self.config.keep_last]
        };
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

impl Strategy for Condenser {
    fn apply(&mut self, _: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        let Some(forgotten) = self.forgotten(&req.contents) else {
            return Ok(Applied::unchanged());
        };
        let keep: Vec<bool> = forgotten.iter().map(|f| !f).collect();
        let mut summary_items = Vec::new();
        let mut call = None;
        let mut summarized_items = 0;
        if self.config.action == CondenseAction::Summarize {
            let mut previous = Vec::new();
            let mut history = Vec::new();
            for (i, item) in req.contents.iter().enumerate() {
                if !forgotten[i] {
                    continue;
                }
                match item.text().strip_prefix(SUMMARY_PREFIX) {
                    Some(summary) if item.is_summary() => previous.push(summary),
                    _ if self.is_summary_part(&req.contents, i) => {}
                    _ => history.push(item.clone()),
                }
            }
            let transcript =
                Transcript::of_items(&history, self.config.item_chars, self.config.item_chars)
                    .after(
                        (!previous.is_empty())
                            .then(|| previous.join("\n"))
                            .as_deref(),
                    );
            match request_summary(llm, &transcript) {
                Ok((summary, done)) => {
                    call = Some(done);
                    summarized_items = history.len();
                    let summary = format!("{SUMMARY_PREFIX}{summary}");
                    summary_items = match &self.config.shadow_prompt {
                        Some(shadow) => vec![Item::user(shadow.clone()), Item::assistant(summary)],
                        None => vec![Item::user(summary)],
                    };
                }
                // The request stays exactly as it was.
                Err(failed) => return Ok(Applied::unchanged().with_call(failed)),
            }
        }
        let first_forgotten = forgotten.iter().position(|&f| f).unwrap_or(0);
        let keep = paired(&req.contents, &keep);
        let insert_at = keep[..first_forgotten].iter().filter(|&&k| k).count();
        let kept = retain_paired(&mut req.contents, &keep);
        let removed = kept.iter().filter(|&&k| !k).count();
        let forgotten_items = forgotten.iter().filter(|&&f| f).count();
        let change = if summary_items.is_empty() {
            Change::Dropped(kept)
        } else {
            // The items before the first one dropped, and before the summary, are as they were.
            let first_dropped = kept.iter().position(|&k| !k).unwrap_or(kept.len());
            Change::Rewrote {
                kept_prefix: first_dropped.min(insert_at),
            }
        };
        let mut applied = Applied::new(change);
        applied.llm_calls.extend(call);
        applied.summarized_items = summarized_items;
        applied.dropped_items = if summary_items.is_empty() {
            removed
        } else {
            removed - forgotten_items
        };
        req.contents.splice(insert_at..insert_at, summary_items);
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state, Failing};

    fn config(max_units: usize, keep_first: usize, keep_last: usize) -> CondenserConfig {
        CondenserConfig {
            unit: Unit::Items,
            max_units,
            keep_first,
            keep_last,
            action: CondenseAction::Drop,
            rolling: true,
            shadow_prompt: None,
            item_chars: 10_000,
        }
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
    fn invalid_limits_are_named() {
        let err = config(4, 2, 3).validate().unwrap_err();
        assert!(err.to_string().contains("max_units 4"), "{err}");
    }
}
