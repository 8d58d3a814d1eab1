//! As recorded: what the agent itself sent, where its trace shows it compacted its own context.
//!
//! ## What it does
//! An imported trace whose agent compacted its context (Claude Code after an auto-compact or `/compact`, Inspect
//! AI with a compaction strategy) keeps its uncompacted history as the episode's items and what the agent sent
//! at each call point as `meta.recorded_compaction` ([`RecordedCompaction`]). At each call point this strategy
//! sends that: the recorded request, call by call, in place of the live one; where the agent sent the history
//! as recorded (before its first compaction), the history. On an episode without such a record it changes
//! nothing. Runs on a dataset with such episodes add it by themselves, as the row `as_recorded`
//! ([`crate::run`]), so that the agent's own compaction is measured as every strategy is (savings, cost,
//! retention at need), against the same baseline.
//!
//! ## Trade-offs
//! It is no strategy one could pick: it reproduces what one agent did on one trace. The agent's summarizer calls
//! are not made again: each compaction's call is reported with the usage the trace records for it (Inspect's
//! summarizer model event; Claude Code's `preTokens` in and its summary out, at 4 bytes a token), so that its
//! cost is counted as a summarizing strategy's is; a compaction without an LLM call (Inspect's trim, edit)
//! reports none.
//!
//! ## Parameters
//! None.
//!
//! ## Example
//! `{"type": "as_recorded"}`

use serde::{Deserialize, Serialize};

use super::{Applied, CallPoint, Change, LlmCall, Strategy, StrategySpec};
use crate::error::Result;
use crate::history::recorded::RecordedCompaction;
use crate::history::{Episode, Item};
use crate::llm::{Llm, LlmRequest};

/// Parameters of [`AsRecorded`]: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AsRecordedConfig {}

impl StrategySpec for AsRecordedConfig {
    /// Without an episode there is nothing recorded: it changes nothing.
    fn build(&self) -> Box<dyn Strategy> {
        Box::new(AsRecorded::default())
    }

    fn build_for(&self, episode: &Episode) -> Box<dyn Strategy> {
        Box::new(AsRecorded::of(episode))
    }
}

/// The as-recorded strategy; see the module docs.
#[derive(Debug, Clone, Default)]
pub struct AsRecorded {
    /// The episode's items.
    items: Vec<Item>,
    /// Its call points.
    points: Vec<usize>,
    /// What the agent sent, when it compacted.
    recorded: Option<RecordedCompaction>,
    /// Whether a request was replaced since the history was last sent as recorded.
    replaced: bool,
}

impl AsRecorded {
    /// The strategy that replays what `episode`'s agent sent.
    #[must_use]
    pub fn of(episode: &Episode) -> Self {
        match RecordedCompaction::of(episode) {
            Some(recorded) => Self {
                items: episode.items.clone(),
                points: episode.call_points(),
                recorded: Some(recorded),
                replaced: false,
            },
            None => Self::default(),
        }
    }
}

/// What turned `before` into `after`: nothing, dropped items, or a rewrite after their common start.
fn change(before: &[Item], after: &[Item]) -> Change {
    let common = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    if common == before.len() && common == after.len() {
        return Change::Unchanged;
    }
    // `after` a subsequence of `before`: items dropped.
    let mut kept = vec![false; before.len()];
    let mut next = 0;
    for item in after {
        match before[next..].iter().position(|b| b == item) {
            Some(k) => {
                kept[next + k] = true;
                next += k + 1;
            }
            None => {
                return Change::Rewrote {
                    kept_prefix: common,
                }
            }
        }
    }
    Change::Dropped(kept)
}

impl Strategy for AsRecorded {
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        let Some(recorded) = &self.recorded else {
            return Ok(Applied::unchanged());
        };
        let sent = match recorded.request(&self.items, at.step) {
            Some(sent) => {
                self.replaced = true;
                sent
            }
            None if self.replaced => {
                // The history as recorded again, after a compacted request.
                self.replaced = false;
                let end = self
                    .points
                    .get(at.step)
                    .copied()
                    .unwrap_or(self.items.len());
                self.items[..end]
                    .iter()
                    .filter(|i| i.is_sent())
                    .cloned()
                    .collect()
            }
            None => return Ok(Applied::unchanged()),
        };
        let change = change(&req.contents, &sent);
        let dropped = match &change {
            Change::Dropped(kept) => kept.iter().filter(|k| !**k).count(),
            _ => 0,
        };
        req.contents = sent;
        // The agent's own summarizer calls, as the trace records them (none is made here).
        let llm_calls = recorded
            .compactions
            .iter()
            .filter(|c| c.call_point == at.step && c.llm_input_tokens.is_some())
            .map(|c| LlmCall {
                input_tokens: c.llm_input_tokens.unwrap_or(0),
                output_tokens: c.llm_output_tokens.unwrap_or(0),
                latency_ms: 0.0,
                error: None,
            })
            .collect();
        Ok(Applied {
            dropped_items: dropped,
            llm_calls,
            ..Applied::new(change)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::recorded::Compaction;
    use crate::strategy::testing::{mock, run, state};

    #[test]
    fn each_call_point_sends_what_was_recorded_and_nothing_changes_without_a_record() {
        let items = vec![
            Item::system("sys"),
            Item::user("task"),
            Item::tool_call("c1", "ls", "{}"),
            Item::tool_result("c1", "ls", "a b"),
            Item::tool_call("c2", "cat", "{}"),
            Item::tool_result("c2", "cat", "text"),
            Item::assistant("done"),
        ];
        let mut ep = Episode {
            items: items.clone(),
            stopped: true,
            ..Episode::default()
        };
        assert_eq!(ep.call_points(), vec![2, 4, 6]);
        let summary = Item::user("[CONTEXT COMPACTION SUMMARY]\n\nls shows a and b");
        let requests = vec![
            None,
            Some(vec![items[0].clone(), items[1].clone(), summary.clone()]),
            Some(vec![
                items[0].clone(),
                items[1].clone(),
                summary.clone(),
                items[4].clone(),
                items[5].clone(),
            ]),
        ];
        let compactions = vec![Compaction {
            call_point: 1,
            kind: "summary".into(),
            ..Compaction::default()
        }];
        RecordedCompaction::from_requests("test", compactions, &items, &requests).store(&mut ep);
        let mut s = AsRecordedConfig::default().build_for(&ep);
        let llm = mock();
        let mut live = LlmRequest::from_contents(items[..2].to_vec());
        let mut at = state(100_000);
        assert!(!run(s.as_mut(), &at, &mut live, &llm).changed());
        live.contents.extend(items[2..4].iter().cloned());
        at.step = 1;
        let a = run(s.as_mut(), &at, &mut live, &llm);
        assert_eq!(a.change, Change::Rewrote { kept_prefix: 2 });
        assert_eq!(Some(live.contents.clone()), requests[1]);
        live.contents.extend(items[4..6].iter().cloned());
        at.step = 2;
        run(s.as_mut(), &at, &mut live, &llm);
        assert_eq!(Some(live.contents.clone()), requests[2]);
        // An episode without a record: nothing happens.
        let mut s = AsRecordedConfig::default().build_for(&Episode {
            items: items.clone(),
            ..Episode::default()
        });
        let mut live = LlmRequest::from_contents(items[..4].to_vec());
        assert!(!run(s.as_mut(), &at, &mut live, &llm).changed());
    }

    #[test]
    fn a_request_that_only_drops_items_declares_what_it_kept() {
        let a = [Item::user("a"), Item::user("b"), Item::user("c")];
        assert_eq!(
            change(&a, &[a[0].clone(), a[2].clone()]),
            Change::Dropped(vec![true, false, true])
        );
        assert_eq!(change(&a, &a), Change::Unchanged);
        assert_eq!(
            change(&a, &[a[0].clone(), Item::user("x")]),
            Change::Rewrote { kept_prefix: 1 }
        );
    }
}
