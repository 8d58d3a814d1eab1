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
//! - `min_tokens` (0: off): only results of more tokens than this (the run's tokenizer, counted as the message
//!   they are) are compacted, as Strands' offloader measures them.
//! - `placeholder` (none): the text written instead, its `{name}`, `{id}` (the call's), `{chars}`, `{lines}`,
//!   `{tokens}`, `{ref}`, `{head}` (the first `head_chars` characters) and `{tail}` (the last `tail_chars`)
//!   filled in; `{chars:,}` and `{tokens:,}` with thousands separators, as Python's format writes them.
//!
//! ## Example
//! `{"type": "compaction", "keep_last": 10, "mode": "stub"}`

use std::collections::{HashMap, HashSet};

use rustc_hash::FxBuildHasher;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3Default;

use super::{Applied, CallPoint, Change, Strategy, StrategySpec};
use crate::error::Result;
use crate::history::{Item, Text, Unit};
use crate::llm::{Llm, LlmRequest};
use crate::tokens::item_hash;

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
    /// What `keep_last` counts: tool results (default), items (an attention window) or agent turns.
    #[serde(skip_serializing_if = "is_tool_results")]
    pub unit: Unit,
    /// Stub text instead of the default reference stub; `{name}`, `{chars}`, `{lines}` and `{ref}` are
    /// filled in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Tools whose results and arguments are never compacted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude_tools: Vec<String>,
    /// Compact only when the unedited request (the live one plus every token compaction saved so far) is
    /// over this many tokens, as a server-side editor that sees the whole history would.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_tokens: Option<usize>,
    /// Compact only when this round would save at least this many tokens.
    #[serde(skip_serializing_if = "is_zero")]
    pub clear_at_least: usize,
    /// Compact only results of more tokens than this (0: any size).
    #[serde(skip_serializing_if = "is_zero")]
    pub min_tokens: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_tool_results(unit: &Unit) -> bool {
    *unit == Unit::ToolResults
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &usize) -> bool {
    *n == 0
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
            unit: Unit::ToolResults,
            placeholder: None,
            exclude_tools: Vec::new(),
            trigger_tokens: None,
            clear_at_least: 0,
            min_tokens: 0,
        }
    }
}

impl StrategySpec for CompactionConfig {
    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Compaction::new(self.clone()))
    }
}

/// Identifies a compacted text: a tool call's arguments or a tool result, by call id (hashed: no allocation
/// per lookup).
type Key = u64;

/// The key of an observation, which has no call id: its original content (observations with the same content
/// share a key, and a stub).
fn observation_key(content: &str) -> Key {
    let mut h = Xxh3Default::new();
    h.update(&[2]);
    h.update(content.as_bytes());
    h.digest()
}

/// The key of an item compaction may shorten, from its original text; `None` for any other item.
fn original_key(item: &Item) -> Option<Key> {
    match item {
        Item::ToolResult { call_id, .. } => Some(key(false, call_id)),
        Item::ToolCall { id, .. } => Some(key(true, id)),
        Item::Observation { content, .. } => Some(observation_key(content)),
        _ => None,
    }
}

fn key(is_call: bool, id: &str) -> Key {
    // The flag is hashed with the id, not used as a seed: XXH3 mixes a seed into short inputs linearly, so
    // seeds 0 and 1 make ids such as "c13" and "c14" collide.
    let mut h = Xxh3Default::new();
    h.update(&[u8::from(is_call)]);
    h.update(id.as_bytes());
    h.digest()
}

/// What a placeholder may name of the text it replaces.
struct Original<'a> {
    /// The tool's name.
    name: &'a str,
    /// The call's id ("" for an observation).
    id: &'a str,
    /// The text.
    text: &'a str,
    /// Its tokens, when they were counted.
    tokens: Option<usize>,
}

/// The byte offset of character `n` of `text` (its length when it has fewer).
fn char_start(text: &str, n: usize) -> usize {
    if text.is_ascii() {
        return n.min(text.len());
    }
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// `n` with a comma every three digits (Python's `{n:,}`).
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

/// The compaction strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct Compaction {
    config: CompactionConfig,
    /// Compacted item → (replacement, original).
    store: HashMap<Key, (Text, Text), FxBuildHasher>,
    /// Old items found not worth compacting: never examined again.
    settled: HashSet<Key, FxBuildHasher>,
    /// Items before this index were settled by an earlier round; the hash of the item just before it checks
    /// that the request still starts the same way.
    watermark: Option<(usize, u128)>,
    next_ref: usize,
    /// Tokens saved by every compaction so far (tracked only when a trigger needs them).
    saved_tokens: usize,
}

impl Compaction {
    /// A compaction strategy with an empty store.
    #[must_use]
    pub fn new(config: CompactionConfig) -> Self {
        Self {
            config,
            store: HashMap::default(),
            settled: HashSet::default(),
            watermark: None,
            next_ref: 1,
            saved_tokens: 0,
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
            let (key, text) = match item {
                Item::ToolResult {
                    call_id, content, ..
                } => (Some(key(false, call_id)), content),
                Item::ToolCall { id, arguments, .. } => (Some(key(true, id)), arguments),
                // An observation's key is its original content: its stub is found by the stub itself.
                Item::Observation { content, .. } => (None, content),
                _ => continue,
            };
            let stored = match key {
                Some(key) => self.store.get(&key),
                None => self
                    .store
                    .values()
                    .find(|(replacement, _)| std::sync::Arc::ptr_eq(replacement, text)),
            };
            if let Some((replacement, original)) = stored {
                if *text == *replacement {
                    text.clone_from(original);
                }
            }
        }
    }

    fn shorten(&mut self, what: &str, original: &Original<'_>) -> String {
        let reference = self.next_ref;
        self.next_ref += 1;
        let text = original.text;
        let chars = text.chars().count();
        let lines = crate::history::text::line_count(text);
        // The first `head_chars` characters and the last `tail_chars` after them, cut where characters start
        // (a copy of each slice, not a string built character by character).
        let head = &text[..char_start(text, self.config.head_chars)];
        let tail = {
            let skip = chars
                .saturating_sub(self.config.tail_chars)
                .max(self.config.head_chars);
            &text[char_start(text, skip)..]
        };
        if let Some(template) = &self.config.placeholder {
            let tokens = original.tokens.unwrap_or(0);
            return template
                .replace("{name}", original.name)
                .replace("{id}", original.id)
                .replace("{chars:,}", &thousands(chars))
                .replace("{chars}", &chars.to_string())
                .replace("{tokens:,}", &thousands(tokens))
                .replace("{tokens}", &tokens.to_string())
                .replace("{lines}", &lines.to_string())
                .replace("{ref}", &reference.to_string())
                // Last: the output's own text may hold braces.
                .replace("{head}", head)
                .replace("{tail}", tail);
        }
        match self.config.mode {
            CompactionMode::Stub => {
                format!(
                    "[compacted {what} of '{}': {chars} chars, {lines} lines; ref #{reference}]",
                    original.name
                )
            }
            CompactionMode::Truncate => {
                let elided = chars - head.chars().count() - tail.chars().count();
                format!("{head}\n[... {elided} chars elided; ref #{reference} ...]\n{tail}")
            }
        }
    }

    /// Whether shortening `text` would save anything in the current mode.
    fn worth(&mut self, key: Key, text: &str, min_chars: usize) -> bool {
        if self.store.contains_key(&key) || self.settled.contains(&key) {
            return false;
        }
        // Longer than `n` characters, counting at most n + 1 of them.
        let longer = |n: usize| text.len() > n && text.chars().nth(n).is_some();
        let worth = longer(min_chars)
            && (self.config.mode == CompactionMode::Stub
                || self.config.placeholder.is_some()
                || longer(self.config.head_chars + self.config.tail_chars + 64));
        if !worth {
            self.settled.insert(key);
        }
        worth
    }

    /// Where the old part of `items` ends: the start of the last `keep_last` units (0 when there are fewer).
    fn cut(&self, items: &[Item]) -> usize {
        if self.config.keep_last == 0 {
            return items.len();
        }
        self.config
            .unit
            .start_of_last(items, self.config.keep_last)
            .unwrap_or(0)
    }

    /// Where this round's scan starts: the watermark, if the request still holds the item it was left at.
    fn scan_start(&self, items: &[Item]) -> usize {
        match self.watermark {
            Some((done, fingerprint))
                if done > 0
                    && done <= items.len()
                    && item_hash(&items[done - 1]) == fingerprint =>
            {
                done
            }
            _ => 0,
        }
    }

    /// The reduction itself, synchronous: returns the number of items compacted.
    pub fn reduce(&mut self, state: &CallPoint, req: &mut LlmRequest) -> usize {
        self.reduce_from(state, req).0
    }

    /// Writes `edits` into the request; when tracking what it saves, the tokens saved, or `None` (the edits
    /// undone) when that is under `clear_at_least`: not worth breaking the prompt cache.
    fn apply_edits(
        &mut self,
        state: &CallPoint,
        req: &mut LlmRequest,
        edits: &[(usize, Text)],
        track: bool,
    ) -> Option<usize> {
        let originals: Vec<Item> = if track {
            edits
                .iter()
                .map(|(i, _)| req.contents[*i].clone())
                .collect()
        } else {
            Vec::new()
        };
        for (i, replacement) in edits {
            match &mut req.contents[*i] {
                Item::ToolResult { content, .. } | Item::Observation { content, .. } => {
                    content.clone_from(replacement);
                }
                Item::ToolCall { arguments, .. } => arguments.clone_from(replacement),
                _ => unreachable!("only tool output and tool calls are selected"),
            }
        }
        if !track {
            return Some(0);
        }
        let tok = &state.tokenizer;
        let saved = originals
            .iter()
            .zip(edits)
            .map(|(before, (i, _))| {
                tok.count_item(before)
                    .saturating_sub(tok.count_item(&req.contents[*i]))
            })
            .sum();
        if saved < self.config.clear_at_least {
            for (original, (i, _)) in originals.into_iter().zip(edits) {
                let Some(key) = original_key(&original) else {
                    continue;
                };
                self.store.remove(&key);
                req.contents[*i] = original;
            }
            return None;
        }
        Some(saved)
    }

    /// One pass over the old part `range` of `items`: which results may be compacted (by index), the calls
    /// they answer, and every call answered at all (excluded tools included).
    #[allow(clippy::type_complexity)]
    fn old_part<'i>(
        &self,
        items: &'i [Item],
        range: std::ops::Range<usize>,
    ) -> (
        Vec<usize>,
        HashSet<&'i str, FxBuildHasher>,
        HashSet<&'i str, FxBuildHasher>,
    ) {
        let mut old_results: Vec<usize> = Vec::new();
        let mut old_calls: HashSet<&str, FxBuildHasher> = HashSet::default();
        let mut answered: HashSet<&str, FxBuildHasher> = HashSet::default();
        let excluded = |name: &str| self.config.exclude_tools.iter().any(|t| t == name);
        let start = range.start;
        for (i, item) in items[range].iter().enumerate() {
            match item {
                Item::ToolResult { call_id, name, .. } => {
                    answered.insert(call_id);
                    if !excluded(name) {
                        old_results.push(start + i);
                        old_calls.insert(call_id);
                    }
                }
                Item::Observation { name, .. } if !excluded(name) => old_results.push(start + i),
                _ => {}
            }
        }
        (old_results, old_calls, answered)
    }

    /// Whether an output's tokens are needed: for `min_tokens`, or a placeholder that says them.
    fn counts_tokens(&self) -> bool {
        self.config.min_tokens > 0
            || self
                .config
                .placeholder
                .as_deref()
                .is_some_and(|p| p.contains("{tokens"))
    }

    /// [`Compaction::reduce`], also returning the index of the first item it changed.
    fn reduce_from(&mut self, state: &CallPoint, req: &mut LlmRequest) -> (usize, Option<usize>) {
        let track = self.config.trigger_tokens.is_some() || self.config.clear_at_least > 0;
        if let Some(trigger) = self.config.trigger_tokens {
            if state.input_tokens(req) + self.saved_tokens <= trigger {
                return (0, None);
            }
        }
        // Items before the watermark were settled in an earlier round (compacted, too short, excluded, or
        // not tool output) and stay so: each round examines only what aged since, so a replay stays linear.
        let start = self.scan_start(&req.contents).min(req.contents.len());
        let cut = self.cut(&req.contents).max(start);
        // One pass over the old part: which results may be compacted (by index), the calls they answer,
        // and every call answered at all (excluded tools included).
        let (old_results, old_calls, answered) = self.old_part(&req.contents, start..cut);
        // A call whose result is not old yet is not settled: the next round starts at it.
        let done = (start..cut)
            .find(|&i| matches!(&req.contents[i], Item::ToolCall { id, .. } if !answered.contains(&**id)))
            .unwrap_or(cut);
        let mut edits: Vec<(usize, Text)> = Vec::new();
        let count_tokens = self.counts_tokens();
        for i in start..cut {
            let (what, key, name, id, text, limit) = match &req.contents[i] {
                Item::ToolResult {
                    call_id,
                    name,
                    content,
                    ..
                } if old_results.binary_search(&i).is_ok() => (
                    "output",
                    key(false, call_id),
                    &**name,
                    &**call_id,
                    content,
                    self.config.min_chars,
                ),
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                } if self.config.args_max_chars > 0 && old_calls.contains(&**id) => (
                    "arguments",
                    key(true, id),
                    &**name,
                    &**id,
                    arguments,
                    self.config.args_max_chars,
                ),
                Item::Observation { name, content } if old_results.binary_search(&i).is_ok() => {
                    let key = observation_key(content);
                    // Another observation with this content was compacted already: the same stub.
                    if let Some((replacement, original)) = self.store.get(&key) {
                        if *content == *original {
                            edits.push((i, replacement.clone()));
                        }
                        continue;
                    }
                    let name: &str = if name.is_empty() { "observation" } else { name };
                    ("output", key, name, "", content, self.config.min_chars)
                }
                _ => continue,
            };
            if !self.worth(key, text, limit) {
                continue;
            }
            let tokens = (count_tokens && what == "output")
                .then(|| state.tokenizer.count_item(&req.contents[i]));
            if what == "output" && tokens.is_some_and(|t| t <= self.config.min_tokens) {
                // Under the size that counts: settled, as a short text is.
                self.settled.insert(key);
                continue;
            }
            let original = Original {
                name,
                id,
                text,
                tokens,
            };
            let replacement: Text = self.shorten(what, &original).into();
            self.store.insert(key, (replacement.clone(), text.clone()));
            edits.push((i, replacement));
        }
        drop((old_calls, answered));
        let Some(saved) = self.apply_edits(state, req, &edits, track) else {
            return (0, None);
        };
        self.saved_tokens += saved;
        self.watermark = (done > 0).then(|| (done, item_hash(&req.contents[done - 1])));
        (edits.len(), edits.first().map(|(i, _)| *i))
    }
}

impl Strategy for Compaction {
    fn apply(&mut self, state: &CallPoint, req: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        Ok(match self.reduce_from(state, req) {
            (0, _) | (_, None) => Applied::unchanged(),
            (compacted, Some(first)) => Applied {
                compacted_items: compacted,
                truncated_items: if self.config.mode == CompactionMode::Truncate {
                    compacted
                } else {
                    0
                },
                ..Applied::new(Change::Rewrote { kept_prefix: first })
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::testing::state;

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
        let st = state(100_000);
        let mut r = original.clone();
        let mut c = Compaction::new(CompactionConfig::default());
        let n = c.reduce(&st, &mut r);
        assert_eq!(n, 6, "3 old results and their 3 long arguments");
        assert!(r.contents[2]
            .text()
            .starts_with("[compacted output of 'read'"));
        assert_eq!(r.contents[12], original.contents[12]);
        // Applying again changes nothing: stubs are not compacted twice.
        assert_eq!(c.reduce(&st, &mut r), 0);
        c.restore(&mut r);
        assert_eq!(r, original);
    }

    #[test]
    fn excluded_tools_keep_their_outputs_and_arguments() {
        let original = req();
        let mut r = original.clone();
        let mut c = Compaction::new(CompactionConfig {
            exclude_tools: vec!["read".into()],
            ..CompactionConfig::default()
        });
        assert_eq!(c.reduce(&state(100_000), &mut r), 0);
        assert_eq!(r, original);
    }

    #[test]
    fn char_start_counts_characters_not_bytes() {
        for text in ["", "abc", "é", "aé—z", "—— x", "日本語のテキスト"] {
            for n in 0..=text.chars().count() + 2 {
                let expected: String = text.chars().take(n).collect();
                assert_eq!(&text[..char_start(text, n)], expected, "{text:?} {n}");
                let rest: String = text.chars().skip(n).collect();
                assert_eq!(&text[char_start(text, n)..], rest, "{text:?} {n}");
            }
        }
    }

    #[test]
    fn keys_of_neighbouring_ids_differ() {
        assert_ne!(key(false, "c14"), key(true, "c13"));
        assert_ne!(key(false, "c1"), key(true, "c1"));
    }

    #[test]
    fn a_token_threshold_and_a_template_with_the_head() {
        let st = state(100_000);
        let mut r = req();
        r.contents
            .push(Item::tool_result("c9", "read", "x\n".repeat(10)));
        let mut c = Compaction::new(CompactionConfig {
            keep_last: 0,
            min_chars: 0,
            args_max_chars: 0,
            min_tokens: 150,
            head_chars: 14,
            placeholder: Some("[~{tokens:,} tokens, {chars:,} chars of {id}]\n{head}".into()),
            ..CompactionConfig::default()
        });
        // Six results of ~200 tokens each are over 150; the short one is not.
        assert_eq!(c.reduce(&st, &mut r), 6);
        let expected = format!(
            "[~{} tokens, 700 chars of c0]\nline 0\nline 0\n",
            st.tokenizer.count_item(&req().contents[2])
        );
        assert_eq!(r.contents[2].text(), expected);
        assert_eq!(r.contents[13].text(), "x\n".repeat(10));
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn truncate_keeps_head_and_tail() {
        let original = req();
        let st = state(100_000);
        let mut r = original.clone();
        let mut c = Compaction::new(CompactionConfig {
            mode: CompactionMode::Truncate,
            head_chars: 20,
            tail_chars: 20,
            ..CompactionConfig::default()
        });
        c.reduce(&st, &mut r);
        let text = r.contents[2].text();
        assert!(text.starts_with("line 0\nline 0\n"), "{text}");
        assert!(text.contains("chars elided; ref #"), "{text}");
        c.restore(&mut r);
        assert_eq!(r, original);
    }
}
