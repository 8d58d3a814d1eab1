//! Google ADK's events compaction, call for call: the sliding window its Runner runs after every invocation
//! (google-adk 2.15.0, `google/adk/apps/compaction.py` `_run_compaction_for_sliding_window_config`, called by
//! `runners.py` `Runner._run_post_invocation_compaction`) and the compaction events as its contents request
//! processor applies them (`flows/llm_flows/context/_compaction.py` `_process_compaction_events`).
//!
//! ## What it does
//! The history is ADK's session: every item received, none dropped, read as ADK's events (an assistant turn's
//! text and calls one model event, a turn's tool results one event, each user message and observation one; a
//! user message starts an invocation). When an invocation has ended (before the next user message joins),
//! once `compaction_interval` invocations have events newer than the last summary's range, the range from
//! `overlap_size` invocations before the first of them to the end of the last is summarized: trimmed to its
//! longest prefix that leaves no call unanswered (a call no response ever answers, outside the newest
//! invocation, does not hold it back), and skipped when an empty summary of it would not remove more
//! characters from the request (as ADK sizes content: its JSON) than the previous summary has. Every request
//! is then the system prompt, and the session's events with every summary no later one contains put as the
//! agent's own turn (an assistant message, the summary's text alone) at its range's end, and the events any
//! summary's range covers left out: summaries whose ranges only overlap are both sent.
//!
//! A failed summary call leaves the session as it was (ADK logs it and goes on).
//!
//! ## Count
//! None: it counts invocations, not tokens.
//!
//! ## Parameters
//! - `compaction_interval` (3), `overlap_size` (1): ADK's `EventsCompactionConfig`.
//!
//! ## Example
//! `{"type": "adk"}` or `{"type": "adk", "compaction_interval": 5, "overlap_size": 2}`

use std::collections::HashSet;

mod events;

use serde::{Deserialize, Serialize};

use super::prompt::Prompt;
use super::{Applied, CallPoint, LlmCall, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::transcript::Transcript;
use crate::llm::{Llm, LlmRequest};
use events::{
    content_chars, longest_self_contained_prefix, processed, retained, summary_chars, Compaction,
    Entry, Event, Kind, EMPTY_SUMMARY_CHARS,
};

/// The characters of a tool call's arguments and a tool result ADK's summarizer is shown
/// (`LlmEventSummarizer._MAX_TOOL_CONTENT_CHARS`).
const TOOL_CHARS: usize = 2_000;

/// The characters of a message the summarizer is shown: all of them.
const WHOLE_TEXTS: usize = 1_000_000;

fn default_interval() -> usize {
    3
}

fn default_overlap() -> usize {
    1
}

/// Parameters of [`Adk`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdkConfig {
    /// Summarize once this many invocations are newer than the last summary.
    #[serde(default = "default_interval")]
    pub compaction_interval: usize,
    /// Invocations before the first new one that the next summary covers again.
    #[serde(default = "default_overlap")]
    pub overlap_size: usize,
}

impl Default for AdkConfig {
    fn default() -> Self {
        Self {
            compaction_interval: default_interval(),
            overlap_size: default_overlap(),
        }
    }
}

impl StrategySpec for AdkConfig {
    /// Checks that `compaction_interval` is above 0.
    fn validate(&self) -> Result<()> {
        if self.compaction_interval == 0 {
            return Err(Error::Config(
                "adk compaction_interval must be above 0".into(),
            ));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Adk::new(self.clone()))
    }
}

/// The strategy; see the module docs.
pub struct Adk {
    config: AdkConfig,
    /// The session: every item received, none dropped.
    history: Vec<Item>,
    /// The arrival number of each item of `history` (its timestamp), from 1.
    arrival: Vec<u64>,
    next_arrival: u64,
    /// The contents as this strategy last left them.
    sent: Vec<Item>,
    /// The compaction events, in the order they were appended.
    compactions: Vec<Compaction>,
}

impl Adk {
    /// The strategy for `config`.
    #[must_use]
    pub fn new(config: AdkConfig) -> Self {
        Self {
            config,
            history: Vec::new(),
            arrival: Vec::new(),
            next_arrival: 1,
            sent: Vec::new(),
            compactions: Vec::new(),
        }
    }

    /// The items in front of every request: the leading system messages (the agent's instruction) and what is
    /// not sent among them.
    fn lead(&self) -> usize {
        self.history
            .iter()
            .take_while(|i| i.is_role(Role::System) || !i.is_sent())
            .count()
    }

    /// The session's events.
    fn events(&self) -> Vec<Event> {
        let mut out: Vec<Event> = Vec::new();
        let mut open: Option<Kind> = None;
        let mut invocation = 0usize;
        for (i, item) in self.history.iter().enumerate().skip(self.lead()) {
            if !item.is_sent() {
                // Travels with the event before it.
                if let Some(e) = out.last_mut() {
                    e.last = i;
                    e.ts = self.arrival[i];
                    continue;
                }
            }
            let kind = if item.is_assistant_turn() {
                Kind::Model
            } else if matches!(item, Item::ToolResult { .. }) {
                Kind::Results
            } else {
                Kind::Single
            };
            if item.is_role(Role::User) || invocation == 0 {
                invocation += 1;
            }
            let joins = kind != Kind::Single && open == Some(kind) && !out.is_empty();
            if joins {
                let e = out.last_mut().expect("an open event");
                e.last = i;
                e.ts = self.arrival[i];
            } else {
                out.push(Event {
                    first: i,
                    last: i,
                    ts: self.arrival[i],
                    invocation,
                    calls: Vec::new(),
                    responses: Vec::new(),
                    chars: 0,
                });
            }
            open = Some(kind);
            let e = out.last_mut().expect("an event");
            match item {
                Item::ToolCall { id, .. } => e.calls.push(id.to_string()),
                Item::ToolResult { call_id, .. } => e.responses.push(call_id.to_string()),
                _ => {}
            }
        }
        out
    }

    /// `events` with their sizes (measured only where a compaction is weighed).
    fn sized(&self, mut events: Vec<Event>) -> Vec<Event> {
        for e in &mut events {
            e.chars = content_chars(&self.history[e.first..=e.last]);
        }
        events
    }

    /// Adds what the replay appended to the live request since the last call point to the session, running
    /// the Runner's compaction wherever an invocation ended (before each new user message).
    fn receive(&mut self, live: &[Item], llm: &dyn Llm, calls: &mut Vec<LlmCall>) -> usize {
        if !live.starts_with(&self.sent) {
            // The replay took the reasoning of ended turns out.
            self.sent.retain(|i| !i.is_turn_reasoning());
            let keep: Vec<bool> = self
                .history
                .iter()
                .map(|i| !i.is_turn_reasoning())
                .collect();
            let mut k = keep.iter();
            self.history
                .retain(|_| *k.next().expect("one flag an item"));
            let mut k = keep.iter();
            self.arrival
                .retain(|_| *k.next().expect("one flag an item"));
        }
        let new: Vec<Item> = if live.starts_with(&self.sent) {
            live[self.sent.len()..].to_vec()
        } else {
            // A live request of another shape: the session starts anew from it.
            self.history.clear();
            self.arrival.clear();
            self.compactions.clear();
            live.to_vec()
        };
        let mut summarized = 0;
        for item in new {
            let lead = self.lead();
            if item.is_role(Role::User) && self.history.len() > lead {
                summarized += self.compact(llm, calls);
            }
            self.history.push(item);
            self.arrival.push(self.next_arrival);
            self.next_arrival += 1;
        }
        summarized
    }

    /// `_run_compaction_for_sliding_window_config` after an invocation: the items it summarized.
    fn compact(&mut self, llm: &dyn Llm, calls: &mut Vec<LlmCall>) -> usize {
        let events = self.events();
        if events.is_empty() {
            return 0;
        }
        let last_end = self.compactions.last().map_or(0, |c| c.end);
        // Invocations in the order they first appear, with their latest timestamps.
        let mut invocations: Vec<(usize, u64)> = Vec::new();
        for e in &events {
            match invocations.iter_mut().find(|(i, _)| *i == e.invocation) {
                Some((_, ts)) => *ts = (*ts).max(e.ts),
                None => invocations.push((e.invocation, e.ts)),
            }
        }
        // Newer than the last range's end (0 before any; arrival numbers start at 1).
        let new: Vec<usize> = invocations
            .iter()
            .filter(|(_, ts)| *ts > last_end)
            .map(|(i, _)| *i)
            .collect();
        if new.len() < self.config.compaction_interval {
            return 0;
        }
        let end_invocation = *new.last().expect("new invocations");
        let first_new = invocations
            .iter()
            .position(|(i, _)| *i == new[0])
            .expect("a known invocation");
        let start_invocation = invocations[first_new.saturating_sub(self.config.overlap_size)].0;
        let (Some(from), Some(to)) = (
            events.iter().position(|e| e.invocation == start_invocation),
            events.iter().rposition(|e| e.invocation == end_invocation),
        ) else {
            return 0;
        };
        if from > to {
            return 0;
        }
        let range = longest_self_contained_prefix(&events[from..=to], &events);
        let Some((first, last)) = range.first().zip(range.last()) else {
            return 0;
        };
        let (start, end) = (first.ts, last.ts);
        if !self.worth_compacting(&self.sized(events.clone()), start, end) {
            return 0;
        }
        let items: Vec<Item> = range
            .iter()
            .flat_map(|e| self.history[e.first..=e.last].iter())
            .filter(|i| i.is_sent())
            .cloned()
            .collect();
        let transcript = Transcript::of_items(&items, WHOLE_TEXTS, TOOL_CHARS);
        let request = Prompt::Ctxbench.summary_request(&transcript, "");
        match super::summarization::ask(llm, &request) {
            Ok((summary, call)) => {
                calls.push(call);
                self.compactions.push(Compaction {
                    start,
                    end,
                    summary,
                });
                items.len()
            }
            Err(failed) => {
                // ADK logs the failure and goes on with the history uncompacted.
                calls.push(failed);
                0
            }
        }
    }

    /// `_is_range_worth_compacting`: whether an empty summary of `start..=end` removes more characters from
    /// the request than the newest summary has.
    fn worth_compacting(&self, events: &[Event], start: u64, end: u64) -> bool {
        let mut with = self.compactions.clone();
        with.push(Compaction {
            start,
            end,
            summary: String::new(),
        });
        let size = |compactions: &[Compaction]| -> usize {
            processed(events, compactions)
                .iter()
                .map(|e| match e {
                    Entry::Event(k) => events[*k].chars,
                    Entry::Summary(c) => summary_chars(&compactions[*c].summary),
                })
                .sum()
        };
        let weightless = with.len() - 1;
        let size_with = |cs: &[Compaction]| -> usize {
            processed(events, cs)
                .iter()
                .map(|e| match e {
                    Entry::Event(k) => events[*k].chars,
                    Entry::Summary(c) if *c == weightless => EMPTY_SUMMARY_CHARS,
                    Entry::Summary(c) => summary_chars(&cs[*c].summary),
                })
                .sum()
        };
        #[allow(clippy::cast_possible_wrap)]
        let removable = size(&self.compactions) as i64 - size_with(&with) as i64;
        let previous = retained(&self.compactions)
            .last()
            .map_or(0, |&c| summary_chars(&self.compactions[c].summary));
        #[allow(clippy::cast_possible_wrap)]
        let worth = removable > previous as i64;
        worth
    }

    /// The request's contents: the lead, then the session's events with the compactions applied.
    fn contents(&self) -> Vec<Item> {
        let lead = self.lead();
        let events = self.events();
        let mut out: Vec<Item> = self.history[..lead].to_vec();
        for entry in processed(&events, &self.compactions) {
            match entry {
                Entry::Event(k) => {
                    let e = &events[k];
                    out.extend_from_slice(&self.history[e.first..=e.last]);
                }
                Entry::Summary(c) => out.push(Item::assistant(self.compactions[c].summary.clone())),
            }
        }
        // `drop_orphaned_function_calls` (flows/llm_flows/tools/_rearranger.py): a call no response among
        // what is sent answers is left out.
        let answered: HashSet<&str> = out
            .iter()
            .filter_map(|i| match i {
                Item::ToolResult { call_id, .. } => Some(call_id.as_ref()),
                _ => None,
            })
            .collect();
        let orphaned: Vec<bool> = out
            .iter()
            .map(|i| matches!(i, Item::ToolCall { id, .. } if !id.is_empty() && !answered.contains(id.as_ref())))
            .collect();
        let mut k = orphaned.iter();
        out.retain(|_| !*k.next().expect("one flag an item"));
        out
    }
}

impl Strategy for Adk {
    fn apply(&mut self, _at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        let mut calls = Vec::new();
        let summarized = self.receive(&req.contents, llm, &mut calls);
        let out = self.contents();
        let mut applied = Applied::replaced(req, out);
        if applied.changed() {
            applied.summarized_items = summarized;
        }
        applied.llm_calls = calls;
        self.sent.clone_from(&req.contents);
        Ok(applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::{mock, run, state};

    /// A system message and `n` invocations: a question, a call and its result, an answer.
    fn chat(n: usize) -> Vec<Item> {
        let mut items = vec![Item::system("sys")];
        for i in 0..n {
            items.push(Item::user(format!("question {i}")));
            items.push(Item::tool_call(format!("c{i}"), "look", "{}"));
            items.push(Item::tool_result(
                format!("c{i}"),
                "look",
                format!("fact {i} ").repeat(20),
            ));
            items.push(Item::assistant(format!("answer {i}")));
        }
        items
    }

    /// Replays `items` call point by call point (before every assistant turn) and returns each request.
    fn replay(config: AdkConfig, items: &[Item]) -> Vec<Vec<Item>> {
        let mut s = config.build();
        let st = state(1_000_000);
        let llm = mock();
        let mut live: Vec<Item> = Vec::new();
        let mut out = Vec::new();
        let mut next = 0;
        for at in crate::history::call_points(items) {
            live.extend_from_slice(&items[next..at]);
            let mut req = LlmRequest {
                instructions: Vec::new(),
                contents: live.clone(),
            };
            run(s.as_mut(), &st, &mut req, &llm);
            out.push(req.contents.clone());
            live = req.contents;
            let end = (at..items.len())
                .find(|&k| !items[k].is_assistant_turn())
                .unwrap_or(items.len());
            live.extend_from_slice(&items[at..end]);
            next = end;
        }
        out
    }

    fn texts(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                Item::Message {
                    role: Role::Assistant,
                    ..
                } if i.text().starts_with("answer") => i.text().to_owned(),
                Item::Message {
                    role: Role::Assistant,
                    ..
                } => "SUMMARY".to_owned(),
                _ => i.text().chars().take(10).collect(),
            })
            .collect()
    }

    #[test]
    fn three_invocations_become_one_summary_when_the_fourth_starts() {
        let requests = replay(AdkConfig::default(), &chat(4));
        // Two call points an invocation; the 4th invocation's first request holds the summary.
        assert_eq!(requests.len(), 8);
        assert_eq!(requests[5].len(), 1 + 3 * 4 - 1);
        assert_eq!(texts(&requests[6]), ["sys", "SUMMARY", "question 3"]);
    }

    #[test]
    fn overlapping_summaries_are_both_sent_at_their_ranges_ends() {
        // Invocations 0-2 summarized when 3 starts; 2-5 (overlap 1) when 6 starts: the two ranges overlap
        // at invocation 2 and neither contains the other, so both summaries are sent.
        let requests = replay(AdkConfig::default(), &chat(7));
        assert_eq!(
            texts(&requests[12]),
            ["sys", "SUMMARY", "SUMMARY", "question 6"]
        );
    }

    /// A strategy whose session is `items` (arrival numbers from 1).
    fn session(items: Vec<Item>) -> Adk {
        let mut s = Adk::new(AdkConfig::default());
        s.arrival = (1..=items.len() as u64).collect();
        s.next_arrival = items.len() as u64 + 1;
        s.history = items;
        s
    }

    #[test]
    fn a_range_that_removes_less_than_the_last_summary_is_not_summarized() {
        // Invocations 0-2 summarized (arrival numbers 2-13); 3-5 new. A summary of 3-5 would remove their
        // 1,000-odd characters: worth it after a short summary, not after one of 5,000 characters.
        let mut s = session(chat(6));
        let events = s.sized(s.events());
        let (start, end) = (events[12].ts, events[events.len() - 1].ts);
        for (summary, worth) in [("short".to_owned(), true), ("x".repeat(5_000), false)] {
            s.compactions = vec![Compaction {
                start: 2,
                end: 13,
                summary,
            }];
            assert_eq!(s.worth_compacting(&events, start, end), worth);
        }
    }

    #[test]
    fn a_call_left_open_ends_the_range_until_it_is_provably_dead() {
        // Invocation 2's call is never answered.
        let mut items = chat(3);
        items.remove(11);
        let s = session(items.clone());
        let events = s.events();
        let prefix = longest_self_contained_prefix(&events, &events);
        // Its invocation is the newest: the range ends before the call's event, at "question 2".
        assert_eq!(s.history[prefix.last().unwrap().last].text(), "question 2");
        // Once another invocation has started, the call can never be answered: the range goes past it.
        items.push(Item::user("question 3"));
        let s = session(items);
        let events = s.events();
        let prefix = longest_self_contained_prefix(&events[..events.len() - 1], &events);
        assert_eq!(s.history[prefix.last().unwrap().last].text(), "answer 2");
    }

    #[test]
    fn an_unanswered_call_is_not_sent() {
        let mut items = chat(1);
        items.remove(3);
        let s = session(items);
        assert_eq!(texts(&s.contents()), ["sys", "question 0", "answer 0"]);
    }
}
