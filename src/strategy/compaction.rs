//! Compaction: replace older tool outputs (and long tool-call arguments) by short references, reversibly.
//!
//! ## What it does
//! At every call point, every tool result older than the newest `keep_last` ones whose content is longer than
//! `min_chars` is replaced: by a one-line stub naming a reference (`mode = "stub"`, observation masking), or by
//! its first `head_chars` and last `tail_chars` characters around a marker (`mode = "truncate"`). Tool-call
//! arguments longer than `args_max_chars` in those older turns get the same treatment. The originals go into
//! the strategy's store, so [`Compaction::restore`] gives back the exact original request.
//!
//! ## Trade-offs
//! Deterministic, no LLM call, nothing lost for good (an agent could ask for a reference back). It bounds only
//! tool output: tool results are most of an agent's tokens, but the messages themselves still grow, so on very
//! long runs compaction alone does not stay under a window. Findings buried in masked outputs are not retained
//! unless truncation happens to keep them.
//!
//! ## Parameters
//! - `keep_last` (3): newest tool results kept intact (the observation-masking window M).
//! - `min_chars` (200): shorter results are left alone; a stub would not save much.
//! - `args_max_chars` (500): longer tool-call arguments are compacted too; `0` turns that off.
//! - `mode` (`stub`), `head_chars` (300), `tail_chars` (300): truncation keeps head and tail.
//!
//! ## Example
//! `{"type": "compaction", "keep_last": 10, "mode": "stub"}`

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Applied, ReplayState, Strategy};
use crate::error::Result;
use crate::history::Item;
use crate::llm::{Llm, LlmRequest};

/// How an old output is shortened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionMode {
    /// Replace the whole content by a reference stub (observation masking).
    #[default]
    Stub,
    /// Keep the head and the tail around a reference marker.
    Truncate,
}

/// Parameters of [`Compaction`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionConfig {
    /// Newest tool results kept intact.
    pub keep_last: usize,
    /// Results of at most this many characters are left alone.
    pub min_chars: usize,
    /// Tool-call arguments longer than this are compacted in older turns; 0 leaves arguments alone.
    pub args_max_chars: usize,
    /// Stub or truncate.
    pub mode: CompactionMode,
    /// Characters kept at the start in truncate mode.
    pub head_chars: usize,
    /// Characters kept at the end in truncate mode.
    pub tail_chars: usize,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            keep_last: 3,
            min_chars: 200,
            args_max_chars: 500,
            mode: CompactionMode::Stub,
            head_chars: 300,
            tail_chars: 300,
        }
    }
}

/// The compaction strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct Compaction {
    config: CompactionConfig,
    /// Replacement text → original text. Replacements carry a unique reference number, so they are unique.
    store: HashMap<String, String>,
    next_ref: usize,
}

impl Compaction {
    /// A compaction strategy with an empty store.
    #[must_use]
    pub fn new(config: CompactionConfig) -> Self {
        Self {
            config,
            store: HashMap::new(),
            next_ref: 1,
        }
    }

    /// Number of originals held in the store.
    #[must_use]
    pub fn stored(&self) -> usize {
        self.store.len()
    }

    /// Gives back the exact original of every compacted item in `req`.
    pub fn restore(&self, req: &mut LlmRequest) {
        for item in &mut req.contents {
            let text = match item {
                Item::ToolResult { content, .. } => content,
                Item::ToolCall { arguments, .. } => arguments,
                Item::Message { .. } => continue,
            };
            if let Some(original) = self.store.get(text.as_str()) {
                text.clone_from(original);
            }
        }
    }

    fn shorten(&mut self, what: &str, name: &str, text: &str) -> String {
        let reference = self.next_ref;
        self.next_ref += 1;
        let chars = text.chars().count();
        let lines = text.lines().count();
        let replacement = match self.config.mode {
            CompactionMode::Stub => {
                format!("[compacted {what} of '{name}': {chars} chars, {lines} lines; ref #{reference}]")
            }
            CompactionMode::Truncate => {
                let head: String = text.chars().take(self.config.head_chars).collect();
                let tail: String = {
                    let skip = chars
                        .saturating_sub(self.config.tail_chars)
                        .max(self.config.head_chars);
                    text.chars().skip(skip).collect()
                };
                let elided = chars - head.chars().count() - tail.chars().count();
                format!("{head}\n[... {elided} chars elided; ref #{reference} ...]\n{tail}")
            }
        };
        self.store.insert(replacement.clone(), text.to_owned());
        replacement
    }

    /// Whether shortening `text` would save anything in the current mode.
    fn worth(&self, text: &str, min_chars: usize) -> bool {
        let chars = text.chars().count();
        chars > min_chars
            && (self.config.mode == CompactionMode::Stub
                || chars > self.config.head_chars + self.config.tail_chars + 64)
            && !self.store.contains_key(text)
    }

    /// The reduction itself, synchronous: returns the number of items compacted.
    pub fn reduce(&mut self, req: &mut LlmRequest) -> usize {
        let results: Vec<usize> = req
            .contents
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i, Item::ToolResult { .. }))
            .map(|(i, _)| i)
            .collect();
        let old = results.len().saturating_sub(self.config.keep_last);
        let old_results: Vec<usize> = results[..old].to_vec();
        let old_calls: HashSet<String> = old_results
            .iter()
            .filter_map(|&i| match &req.contents[i] {
                Item::ToolResult { call_id, .. } => Some(call_id.clone()),
                _ => None,
            })
            .collect();
        let mut compacted = 0;
        for i in 0..req.contents.len() {
            let (what, name, text, limit) = match &req.contents[i] {
                Item::ToolResult { name, content, .. } if old_results.binary_search(&i).is_ok() => {
                    (
                        "output",
                        name.clone(),
                        content.clone(),
                        self.config.min_chars,
                    )
                }
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                } if self.config.args_max_chars > 0 && old_calls.contains(id) => (
                    "arguments",
                    name.clone(),
                    arguments.clone(),
                    self.config.args_max_chars,
                ),
                _ => continue,
            };
            if !self.worth(&text, limit) {
                continue;
            }
            let replacement = self.shorten(what, &name, &text);
            match &mut req.contents[i] {
                Item::ToolResult { content, .. } => *content = replacement,
                Item::ToolCall { arguments, .. } => *arguments = replacement,
                Item::Message { .. } => unreachable!("only tool items are selected above"),
            }
            compacted += 1;
        }
        compacted
    }
}

#[async_trait]
impl Strategy for Compaction {
    async fn apply(
        &mut self,
        _: &ReplayState,
        req: &mut LlmRequest,
        _: &dyn Llm,
    ) -> Result<Applied> {
        let compacted = self.reduce(req);
        Ok(Applied {
            changed: compacted > 0,
            compacted_items: compacted,
            ..Applied::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> LlmRequest {
        let mut items = vec![Item::user("go")];
        for i in 0..6 {
            items.push(Item::tool_call(
                format!("c{i}"),
                "read",
                format!("{{\"path\":\"{}\"}}", "p".repeat(600)),
            ));
            items.push(Item::tool_result(
                format!("c{i}"),
                "read",
                format!("line {i}\n").repeat(100),
            ));
        }
        LlmRequest::from_contents(items)
    }

    #[test]
    fn masks_all_but_the_last_m_and_restores_exactly() {
        let original = req();
        let mut r = original.clone();
        let mut c = Compaction::new(CompactionConfig::default());
        let n = c.reduce(&mut r);
        assert_eq!(n, 6, "3 old results and their 3 long arguments");
        assert!(r.contents[2]
            .text()
            .starts_with("[compacted output of 'read'"));
        assert_eq!(r.contents[12], original.contents[12]);
        // Applying again changes nothing: stubs are not compacted twice.
        assert_eq!(c.reduce(&mut r), 0);
        c.restore(&mut r);
        assert_eq!(r, original);
    }

    #[test]
    fn truncate_keeps_head_and_tail() {
        let original = req();
        let mut r = original.clone();
        let mut c = Compaction::new(CompactionConfig {
            mode: CompactionMode::Truncate,
            head_chars: 20,
            tail_chars: 20,
            ..CompactionConfig::default()
        });
        c.reduce(&mut r);
        let text = r.contents[2].text();
        assert!(text.starts_with("line 0\nline 0\n"), "{text}");
        assert!(text.contains("chars elided; ref #"), "{text}");
        c.restore(&mut r);
        assert_eq!(r, original);
    }
}
