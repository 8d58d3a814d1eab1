//! Claude Code session JSONL: one entry per line; the conversation is the `parentUuid` chain from the last
//! non-sidechain leaf back to the root. Consecutive assistant lines of one API message share `message.id`.
//!
//! Claude Code 2.1 threads the chain through bookkeeping records too (`progress`, `system` records such as
//! `stop_hook_summary`), which the walk passes through. After an auto-compact or `/compact`, a
//! `compact_boundary` record (`parentUuid` null, `logicalParentUuid` the last message before it) starts the
//! chain again with the summary Claude Code sent in place of the conversation (a user record with
//! `isCompactSummary`): the walk follows `logicalParentUuid` back, so that the episode holds the whole
//! uncompacted history, and what Claude Code sent after each boundary (the summary, then what followed it) is
//! kept as `meta.recorded_compaction`, replayed as the row `as_recorded`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::{
    anthropic, bad, compacted, episode, parse_jsonl, sure, text_of, Conversation, Importer, Sniff,
};
use crate::error::Result;
use crate::history::recorded::Compaction;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::{Episode, Item};

/// Imports one session.
///
/// The conversation is the `parentUuid` chain from the last non-sidechain entry back to the root, plus the
/// results of parallel tool calls: Claude Code records the results of one message's calls on branches of
/// their own (each result's parent is its own call), so every result of a call on the chain is taken too.
/// Meta entries (`isMeta`, such as stop-hook feedback) are messages the model was sent, and are kept. Each API
/// call is one `message.id`; its `usage` (input, cache creation and cache read tokens) is the prompt the
/// provider counted (its `output_tokens` are streaming placeholders, so completions are not recorded). Sessions
/// record neither the system prompt nor the tool schemas Claude Code sends (`import --tools` adds the latter).
///
/// # Errors
/// Malformed JSON lines, a broken parent chain, or no conversation entry.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let lines = parse_jsonl(text, origin)?;
    let (mut chain, mut boundaries) = walk(&lines, origin)?;
    add_side_results(&lines, &mut chain);
    // The session file is written in order: file order is conversation order, but for the results of one
    // message's parallel calls, which Claude Code 2.1 writes each right after its call: they follow the message.
    chain.sort_unstable();
    let chain = calls_then_results(&lines, chain);
    boundaries.sort_unstable();
    let mut conv = Conversation::default();
    let mut calls: Vec<CallUsage> = Vec::new();
    let mut last_message_id: Option<&str> = None;
    // Each compaction: where the history stood (item index), its boundary record, and the summary sent.
    let mut compacted: Vec<(usize, usize, String)> = Vec::new();
    for k in chain {
        let (line, e) = &lines[k];
        let message = e
            .get("message")
            .ok_or_else(|| bad(origin, *line, "at `message`: missing message"))?;
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        let content = message.get("content").unwrap_or(&Value::Null);
        if e.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            // What Claude Code sent in place of the conversation: not part of the history.
            let boundary = boundaries
                .iter()
                .rev()
                .find(|&&b| b < k)
                .copied()
                .unwrap_or(k);
            compacted.push((conv.len(), boundary, text_of(content)));
            continue;
        }
        let model = message.get("model").and_then(Value::as_str);
        if role == "assistant" {
            // Each API message names the model that wrote it: a session may call another for a side task.
            conv.model(model.unwrap_or(""));
        }
        anthropic::push_message(&mut conv, role, content, model);
        if role == "assistant" {
            let id = message.get("id").and_then(Value::as_str);
            if id.is_some() && id != last_message_id {
                if let Some(u) = message.get("usage") {
                    calls.push(anthropic::call_usage(u));
                }
            }
            last_message_id = id;
        }
    }
    let marks = conv.model_marks().to_vec();
    let mut ep = episode(origin, None, "claude-code", conv.into_items());
    // The session ends where the agent or its user stopped: no call follows.
    ep.stopped = true;
    ep.set_model_marks(None, &marks);
    if !calls.is_empty() {
        // Claude Code writes each block as it streams, with the usage of the stream's start: its
        // `output_tokens` (1 to 26 in the public sessions) are placeholders, never the completion's count.
        for c in &mut calls {
            c.output_tokens = 0;
        }
        let mut usage = ProviderUsage::from_calls("message.usage", calls);
        usage.output_tokens = None;
        usage.output_unrecorded = true;
        usage.leaves_out = Some("Claude Code's system prompt and tool schemas".into());
        usage.store(&mut ep);
    }
    if !compacted.is_empty() {
        record_compactions(&mut ep, &lines, &compacted);
    }
    Ok(vec![ep])
}

/// The line numbers of the conversation's messages, from the last non-sidechain message back to the root
/// (through bookkeeping records, and back over each compaction boundary by its `logicalParentUuid`), and those
/// of the boundaries crossed.
fn walk(lines: &[(usize, Value)], origin: &Path) -> Result<(Vec<usize>, Vec<usize>)> {
    let kind = |e: &Value| {
        e.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut last = None;
    for (k, (_, e)) in lines.iter().enumerate() {
        if let Some(u) = e.get("uuid").and_then(Value::as_str) {
            by_uuid.insert(u, k);
        }
        if matches!(kind(e).as_str(), "user" | "assistant")
            && e.get("isSidechain").and_then(Value::as_bool) != Some(true)
        {
            last = Some(k);
        }
    }
    let Some(mut k) = last else {
        return Err(bad(
            origin,
            1,
            "no user or assistant entry in this Claude Code session",
        ));
    };
    let mut chain = vec![k];
    let mut boundaries: Vec<usize> = Vec::new();
    let mut walked = 0;
    loop {
        let e = &lines[k].1;
        let parent = e.get("parentUuid").and_then(Value::as_str).or_else(|| {
            (e.get("subtype").and_then(Value::as_str) == Some("compact_boundary"))
                .then(|| e.get("logicalParentUuid").and_then(Value::as_str))
                .flatten()
        });
        let Some(&p) = parent.and_then(|parent| by_uuid.get(parent)) else {
            // No parent, or one the file does not hold: the chain starts here.
            break;
        };
        walked += 1;
        if walked > lines.len() {
            return Err(bad(origin, lines[k].0, "the parentUuid chain has a cycle"));
        }
        match kind(&lines[p].1).as_str() {
            "user" | "assistant" => chain.push(p),
            "system"
                if lines[p].1.get("subtype").and_then(Value::as_str)
                    == Some("compact_boundary") =>
            {
                boundaries.push(p);
            }
            _ => {}
        }
        k = p;
    }
    Ok((chain, boundaries))
}

/// Adds to `chain` the results of calls on it that sit on side branches (parallel tool calls).
fn add_side_results(lines: &[(usize, Value)], chain: &mut Vec<usize>) {
    let on_chain: HashSet<usize> = chain.iter().copied().collect();
    let blocks = |e: &Value, kind: &str, field: &str| -> Vec<String> {
        e.pointer("/message/content")
            .and_then(Value::as_array)
            .map(|b| {
                b.iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some(kind))
                    .filter_map(|b| b.get(field).and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let called: HashSet<String> = chain
        .iter()
        .flat_map(|&k| blocks(&lines[k].1, "tool_use", "id"))
        .collect();
    let mut answered: HashSet<String> = chain
        .iter()
        .flat_map(|&k| blocks(&lines[k].1, "tool_result", "tool_use_id"))
        .collect();
    for (k, (_, e)) in lines.iter().enumerate() {
        if on_chain.contains(&k)
            || e.get("type").and_then(Value::as_str) != Some("user")
            || e.get("isSidechain").and_then(Value::as_bool) == Some(true)
        {
            continue;
        }
        let results = blocks(e, "tool_result", "tool_use_id");
        if !results.is_empty()
            && results
                .iter()
                .all(|id| called.contains(id) && !answered.contains(id))
        {
            answered.extend(results);
            chain.push(k);
        }
    }
}

/// `chain` (file order) with the tool results that fall between the lines of one assistant message (its parallel
/// calls, one line each, sharing `message.id`) moved after its last line.
fn calls_then_results(lines: &[(usize, Value)], chain: Vec<usize>) -> Vec<usize> {
    let id = |k: usize| lines[k].1.pointer("/message/id").and_then(Value::as_str);
    let only_results = |k: usize| {
        lines[k]
            .1
            .pointer("/message/content")
            .and_then(Value::as_array)
            .is_some_and(|b| {
                !b.is_empty()
                    && b.iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
    };
    let mut out = Vec::with_capacity(chain.len());
    let mut held: Vec<usize> = Vec::new();
    let mut message: Option<&str> = None;
    for k in chain {
        let assistant = lines[k].1.get("type").and_then(Value::as_str) == Some("assistant");
        if assistant && message.is_some() && id(k) == message {
            out.push(k);
        } else if !assistant && message.is_some() && only_results(k) {
            held.push(k);
        } else {
            out.append(&mut held);
            out.push(k);
            message = if assistant { id(k) } else { None };
        }
    }
    out.append(&mut held);
    out
}

/// Keeps what Claude Code sent after each compaction (`compacted`: where the history stood, the boundary's
/// record, the summary): at every call point after one, the summary and what followed it.
fn record_compactions(
    ep: &mut Episode,
    lines: &[(usize, Value)],
    compacted: &[(usize, usize, String)],
) {
    let points = ep.call_points();
    let mut compactions = Vec::new();
    let sent: Vec<Option<Vec<Item>>> = points
        .iter()
        .map(|&at| {
            let (from, _, summary) = compacted.iter().rev().find(|(from, _, _)| *from <= at)?;
            let mut request = vec![Item::user(summary.as_str())];
            request.extend(ep.items[*from..at].iter().filter(|i| i.is_sent()).cloned());
            Some(request)
        })
        .collect();
    for (from, boundary, summary) in compacted {
        let Some(call_point) = points.iter().position(|&at| at >= *from) else {
            continue;
        };
        let meta = lines[*boundary].1.get("compactMetadata");
        let n = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_u64);
        compactions.push(Compaction {
            call_point,
            kind: meta
                .and_then(|m| m.get("trigger"))
                .and_then(Value::as_str)
                .unwrap_or("compaction")
                .to_owned(),
            tokens_before: n("preTokens"),
            tokens_after: n("postTokens"),
            // Claude Code's summarizer read the conversation (`preTokens`) and wrote the summary (its own file
            // holds the call; its size here at 4 bytes a token).
            llm_input_tokens: n("preTokens"),
            llm_output_tokens: Some(summary.len().div_ceil(4) as u64),
            unseen_summary: false,
        });
    }
    compacted::store("claude-code compaction", compactions, ep, &sent);
}

/// The claude-code format.
pub struct ClaudeCode;

impl Importer for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn about(&self) -> &'static str {
        "Claude Code session JSONL (following the parentUuid chain)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        let o = s.first_line.as_ref()?;
        // Claude Code 2.1 may open a session with a file-history snapshot or a queue operation; older
        // versions with the summary of the session it continues.
        let kind = o.get("type").and_then(serde_json::Value::as_str);
        if o.contains_key("parentUuid")
            || matches!(kind, Some("queue-operation" | "file-history-snapshot"))
        {
            return Some(sure::CERTAIN);
        }
        (kind == Some("summary") && o.contains_key("leafUuid")).then_some(sure::LIKELY)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::history::recorded::RecordedCompaction;

    /// A session written by hand in Claude Code 2.1's shape (the public ones are 2.7 MB and more: the real ones
    /// are checked in tests/cli/compaction.rs): a file-history snapshot first, progress records on the chain,
    /// one message's two parallel calls with each result written right after its call, and an auto-compact's
    /// boundary and summary.
    #[test]
    fn the_walk_crosses_progress_records_and_the_boundary_and_keeps_what_was_sent_apart() {
        let usage = |n: u64| json!({"input_tokens": n, "output_tokens": 1});
        let lines = [
            json!({"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}}),
            json!({"type": "user", "uuid": "u1", "parentUuid": null, "message": {"role": "user", "content": "Fix the build."}}),
            json!({"type": "progress", "uuid": "p1", "parentUuid": "u1"}),
            json!({"type": "assistant", "uuid": "a1", "parentUuid": "p1", "message": {"id": "msg_1", "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}], "usage": usage(100)}}),
            json!({"type": "user", "uuid": "r1", "parentUuid": "a1", "message": {"role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "error: zlib_inflate_init"}]}}),
            json!({"type": "assistant", "uuid": "a2", "parentUuid": "r1", "message": {"id": "msg_1", "role": "assistant",
                "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}], "usage": usage(100)}}),
            json!({"type": "user", "uuid": "r2", "parentUuid": "a2", "message": {"role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Makefile src"}]}}),
            json!({"type": "system", "subtype": "stop_hook_summary", "uuid": "s1", "parentUuid": "r2"}),
            json!({"type": "assistant", "uuid": "a3", "parentUuid": "s1", "message": {"id": "msg_2", "role": "assistant",
                "content": [{"type": "text", "text": "Link with -lz."}], "usage": usage(300)}}),
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": null,
                "logicalParentUuid": "a3", "compactMetadata": {"trigger": "auto", "preTokens": 320}}),
            json!({"type": "user", "uuid": "c1", "parentUuid": "b1", "isCompactSummary": true, "message": {"role": "user",
                "content": "This session is being continued from a previous conversation that ran out of context. Summary: -lz."}}),
            json!({"type": "user", "uuid": "u2", "parentUuid": "c1", "message": {"role": "user", "content": "Now run the tests."}}),
            json!({"type": "assistant", "uuid": "a4", "parentUuid": "u2", "message": {"id": "msg_3", "role": "assistant",
                "content": [{"type": "text", "text": "They pass."}], "usage": usage(80)}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let sniff = Sniff::new(&text);
        assert_eq!(ClaudeCode.sniff(&sniff), Some(sure::CERTAIN));
        let ep = import(&text, Path::new("s.jsonl")).unwrap().remove(0);
        let texts: Vec<&str> = ep.items.iter().map(Item::text).collect();
        // The two parallel calls are one turn, their results after it; the summary is not in the history.
        assert_eq!(
            texts,
            [
                "Fix the build.",
                "{\"command\":\"make\"}",
                "{\"command\":\"ls\"}",
                "error: zlib_inflate_init",
                "Makefile src",
                "Link with -lz.",
                "Now run the tests.",
                "They pass."
            ]
        );
        assert_eq!(ep.call_points(), vec![1, 5, 7]);
        let recorded = RecordedCompaction::of(&ep).unwrap();
        assert_eq!(recorded.compactions[0].call_point, 2);
        assert_eq!(recorded.compactions[0].kind, "auto");
        assert_eq!(recorded.request(&ep.items, 1), None);
        let after: Vec<String> = recorded
            .request(&ep.items, 2)
            .unwrap()
            .iter()
            .map(|i| i.text().to_owned())
            .collect();
        assert!(after[0].starts_with("This session is being continued"));
        assert_eq!(after[1..], ["Now run the tests."]);
    }

    /// Each API message's `model`: a side call to a smaller model is a switch and back; a message Claude Code
    /// wrote itself (`<synthetic>`) names no model.
    #[test]
    fn each_call_keeps_the_model_that_answered_it() {
        let line = |uuid: &str, parent: &str, role: &str, id: &str, model: &str, text: &str| {
            let mut message = json!({"role": role, "content": text});
            if role == "assistant" {
                message["id"] = json!(id);
                message["model"] = json!(model);
            }
            json!({"type": role, "uuid": uuid, "parentUuid": parent, "message": message})
                .to_string()
        };
        let text = [
            line("u1", "", "user", "", "", "a"),
            line(
                "a1",
                "u1",
                "assistant",
                "m1",
                "claude-opus-4-5-20251101",
                "1",
            ),
            line("u2", "a1", "user", "", "", "b"),
            line(
                "a2",
                "u2",
                "assistant",
                "m2",
                "claude-haiku-4-5-20251001",
                "2",
            ),
            line("u3", "a2", "user", "", "", "c"),
            line("a3", "u3", "assistant", "m3", "<synthetic>", "3"),
            line("u4", "a3", "user", "", "", "d"),
            line(
                "a4",
                "u4",
                "assistant",
                "m4",
                "claude-opus-4-5-20251101",
                "4",
            ),
        ]
        .join("\n");
        let ep = import(&text, Path::new("s.jsonl")).unwrap().remove(0);
        assert_eq!(ep.model.as_deref(), Some("claude-opus-4-5-20251101"));
        assert_eq!(
            (0..4).map(|k| ep.model_at(k)).collect::<Vec<_>>(),
            [
                Some("claude-opus-4-5-20251101"),
                Some("claude-haiku-4-5-20251001"),
                Some("claude-haiku-4-5-20251001"),
                Some("claude-opus-4-5-20251101")
            ]
        );
    }
}
