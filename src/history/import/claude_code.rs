//! Claude Code session JSONL: one entry per line; the conversation is the `parentUuid` chain from the last
//! non-sidechain leaf back to the root. Consecutive assistant lines of one API message share `message.id`.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::{anthropic, bad, episode, parse_jsonl, sure, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::Episode;

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
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut last = None;
    for (k, (_, e)) in lines.iter().enumerate() {
        let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "user" | "assistant") {
            continue;
        }
        if let Some(u) = e.get("uuid").and_then(Value::as_str) {
            by_uuid.insert(u, k);
        }
        if e.get("isSidechain").and_then(Value::as_bool) != Some(true) {
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
    while let Some(parent) = lines[k].1.get("parentUuid").and_then(Value::as_str) {
        let Some(&p) = by_uuid.get(parent) else {
            // The parent is bookkeeping (e.g. a summary entry): the chain starts here.
            break;
        };
        if chain.len() > lines.len() {
            return Err(bad(origin, lines[k].0, "the parentUuid chain has a cycle"));
        }
        chain.push(p);
        k = p;
    }
    // The results of calls on the chain that sit on side branches (parallel tool calls).
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
    // The session file is written in order: file order is conversation order.
    chain.sort_unstable();
    let mut conv = Conversation::default();
    let mut calls: Vec<CallUsage> = Vec::new();
    let mut last_message_id: Option<&str> = None;
    for k in chain {
        let (line, e) = &lines[k];
        let message = e
            .get("message")
            .ok_or_else(|| bad(origin, *line, "at `message`: missing message"))?;
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        anthropic::push_message(
            &mut conv,
            role,
            message.get("content").unwrap_or(&Value::Null),
        );
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
    let mut ep = episode(origin, None, "claude-code", conv.into_items());
    // The session ends where the agent or its user stopped: no call follows.
    ep.stopped = true;
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
    Ok(vec![ep])
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
        (o.contains_key("parentUuid")
            || o.get("type").and_then(serde_json::Value::as_str) == Some("queue-operation"))
        .then_some(sure::CERTAIN)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
