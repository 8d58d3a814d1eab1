//! What an agent's own compaction sent: a trace whose agent compacted its context (Claude Code's auto-compact or
//! `/compact`, Inspect AI's compaction strategies) holds the history before each compaction and after it. An
//! importer keeps the history whole and uncompacted as the episode's items (the agent's summaries are not part of
//! it, so every strategy starts from the same history) and what the agent sent at each call point as a
//! [`RecordedCompaction`] in `meta.recorded_compaction`: ranges of the episode's items and the items the history
//! does not hold (the agent's summaries, the outputs it edited), once each. The `as_recorded` strategy
//! ([`crate::strategy::as_recorded`]) replays it, so that the agent's own compaction is measured as every
//! strategy is.

use serde::{Deserialize, Serialize};

use super::{Episode, Item};

/// The key under `meta` that holds a [`RecordedCompaction`].
pub const META_KEY: &str = "recorded_compaction";

/// One compaction the trace records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// The first call point that sent the compacted request.
    pub call_point: usize,
    /// What the trace calls it (`summary`, `trim`, `edit`; `auto`, `manual`).
    pub kind: String,
    /// The tokens before, when the trace says (Inspect's `tokens_before`, Claude Code's `preTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    /// The tokens after, when the trace says (Inspect's `tokens_after`, without tool schemas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// The prompt tokens of the agent's own summarizer call, when it made one and the trace says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_input_tokens: Option<u64>,
    /// The completion tokens of that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_output_tokens: Option<u64>,
    /// Whether the summary the agent sent from here on is not in the trace (aider's summary of older turns):
    /// the recorded request leaves it out, and its size is part of the context the trace left out, which
    /// changes here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unseen_summary: bool,
}

/// A part of a recorded request: a range of the episode's items, or an item the history does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Part {
    /// The episode's items `[from, to)` (those the agent sends: no unrecorded block, no unsent reasoning).
    Items {
        /// `[from, to)`.
        items: [usize; 2],
    },
    /// [`RecordedCompaction::added`]`[added]`.
    Added {
        /// Its index in `added`.
        added: usize,
    },
}

/// What an agent's own compaction sent, call point by call point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedCompaction {
    /// The agent and its compaction (`inspect CompactionSummary`, `claude-code auto-compact`).
    pub by: String,
    /// Each compaction, in order.
    pub compactions: Vec<Compaction>,
    /// The items the agent sent that the history does not hold: its summaries, the outputs it edited.
    pub added: Vec<Item>,
    /// Per call point, what the agent sent; `None` where it sent the history as recorded.
    pub requests: Vec<Option<Vec<Part>>>,
}

impl RecordedCompaction {
    /// `requests[k]`, the items the agent sent at call point `k` (`None`: the history as recorded), laid out
    /// against `history` (the episode's items): the ranges of it each holds, the other items added once.
    #[must_use]
    pub fn from_requests(
        by: impl Into<String>,
        compactions: Vec<Compaction>,
        history: &[Item],
        requests: &[Option<Vec<Item>>],
    ) -> Self {
        let mut out = Self {
            by: by.into(),
            compactions,
            ..Self::default()
        };
        for request in requests {
            let Some(items) = request else {
                out.requests.push(None);
                continue;
            };
            let mut parts: Vec<Part> = Vec::new();
            let mut next = 0;
            for item in items {
                // The item at or after the last one placed, or an item of its own.
                match history[next.min(history.len())..]
                    .iter()
                    .position(|h| h == item)
                {
                    Some(k) => {
                        let at = next + k;
                        match parts.last_mut() {
                            Some(Part::Items { items: [_, to] }) if *to == at => *to = at + 1,
                            _ => parts.push(Part::Items {
                                items: [at, at + 1],
                            }),
                        }
                        next = at + 1;
                    }
                    None => {
                        let added = match out.added.iter().position(|a| a == item) {
                            Some(k) => k,
                            None => {
                                out.added.push(item.clone());
                                out.added.len() - 1
                            }
                        };
                        parts.push(Part::Added { added });
                    }
                }
            }
            out.requests.push(Some(parts));
        }
        out
    }

    /// What `episode.meta` holds, when it holds a well-formed record.
    #[must_use]
    pub fn of(episode: &Episode) -> Option<Self> {
        serde_json::from_value(episode.meta.get(META_KEY)?.clone()).ok()
    }

    /// Writes it into `episode.meta` (nothing when no call point sent a compacted request).
    pub fn store(&self, episode: &mut Episode) {
        if self.requests.iter().all(Option::is_none) {
            return;
        }
        if let Ok(v) = serde_json::to_value(self) {
            episode.meta.insert(META_KEY.into(), v);
        }
    }

    /// The items the agent sent at call point `k`, of the episode's `items`; `None` where it sent the
    /// history as recorded.
    #[must_use]
    pub fn request(&self, items: &[Item], k: usize) -> Option<Vec<Item>> {
        let parts = self.requests.get(k)?.as_ref()?;
        let mut out = Vec::new();
        for part in parts {
            match *part {
                // Clamped: a dataset's record is input, and a bad one sends less, never panics.
                Part::Items { items: [from, to] } => out.extend(
                    items
                        .get(from..to.min(items.len()))
                        .unwrap_or_default()
                        .iter()
                        .filter(|i| i.is_sent())
                        .cloned(),
                ),
                Part::Added { added } => out.extend(self.added.get(added).cloned()),
            }
        }
        Some(out)
    }

    /// Moves every item index `i` to `to(i)`, as the episode's items move (blocks of unrecorded context
    /// inserted before call points).
    pub fn shift(&mut self, to: impl Fn(usize) -> usize) {
        for part in self.requests.iter_mut().flatten().flatten() {
            if let Part::Items { items } = part {
                *items = [to(items[0]), to(items[1])];
            }
        }
    }

    /// Whether `episode` holds a record of its agent's own compaction.
    #[must_use]
    pub fn is_in(episode: &Episode) -> bool {
        episode.meta.contains_key(META_KEY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_ranges_of_the_history_and_added_items_once() {
        let history = vec![
            Item::system("sys"),
            Item::user("task"),
            Item::tool_call("c1", "ls", "{}"),
            Item::tool_result("c1", "ls", "a b"),
            Item::tool_call("c2", "cat", "{}"),
            Item::tool_result("c2", "cat", "text"),
        ];
        let summary = Item::user("[CONTEXT COMPACTION SUMMARY]\n\nran ls");
        let edited = Item::tool_result("c1", "ls", "(Tool result removed)");
        let requests = vec![
            None,
            Some(vec![
                history[0].clone(),
                history[1].clone(),
                summary.clone(),
            ]),
            Some(vec![
                history[0].clone(),
                history[1].clone(),
                summary.clone(),
                history[4].clone(),
                history[5].clone(),
            ]),
            Some(vec![
                history[0].clone(),
                history[2].clone(),
                edited.clone(),
                history[4].clone(),
            ]),
        ];
        let r = RecordedCompaction::from_requests("test", vec![], &history, &requests);
        assert_eq!(r.added, [summary.clone(), edited]);
        assert_eq!(
            r.requests[2],
            Some(vec![
                Part::Items { items: [0, 2] },
                Part::Added { added: 0 },
                Part::Items { items: [4, 6] }
            ])
        );
        for (k, request) in requests.iter().enumerate() {
            assert_eq!(&r.request(&history, k), request, "call point {k}");
        }
        // Stored and read back; indices move with the items.
        let mut ep = Episode {
            items: history.clone(),
            ..Episode::default()
        };
        r.store(&mut ep);
        let mut back = RecordedCompaction::of(&ep).unwrap();
        assert_eq!(back, r);
        // A range out of order or past the items sends what it can.
        back.requests[2] = Some(vec![
            Part::Items { items: [5, 2] },
            Part::Items { items: [4, 99] },
        ]);
        assert_eq!(back.request(&history, 2).unwrap(), history[4..].to_vec());
        back.requests[2] = r.requests[2].clone();
        back.shift(|i| i + usize::from(i >= 4));
        let mut moved = history.clone();
        moved.insert(4, Item::unrecorded(10, None));
        assert_eq!(back.request(&moved, 2), requests[2]);
    }
}
