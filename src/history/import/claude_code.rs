//! Claude Code session JSONL: one entry per line; the conversation is the `parentUuid` chain from the last
//! non-sidechain leaf back to the root. Consecutive assistant lines of one API message share `message.id`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::{anthropic, bad, episode, parse_jsonl, sure, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::Episode;

/// Imports one session.
///
/// # Errors
/// Malformed JSON lines, a broken parent chain, or no conversation entry.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let lines = parse_jsonl(text, origin)?;
    let mut by_uuid: HashMap<String, usize> = HashMap::new();
    let mut last = None;
    for (k, (_, e)) in lines.iter().enumerate() {
        let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "user" | "assistant") {
            continue;
        }
        if let Some(u) = e.get("uuid").and_then(Value::as_str) {
            by_uuid.insert(u.to_owned(), k);
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
    let mut guard = 0;
    while let Some(parent) = lines[k].1.get("parentUuid").and_then(Value::as_str) {
        guard += 1;
        let Some(&p) = by_uuid.get(parent) else {
            // The parent is bookkeeping (e.g. a summary entry): the chain starts here.
            break;
        };
        if guard > lines.len() {
            return Err(bad(origin, lines[k].0, "the parentUuid chain has a cycle"));
        }
        chain.push(p);
        k = p;
    }
    chain.reverse();
    let mut conv = Conversation::default();
    let mut prompt_tokens: Vec<Value> = Vec::new();
    let mut last_message_id: Option<String> = None;
    for k in chain {
        let (line, e) = &lines[k];
        if e.get("isMeta").and_then(Value::as_bool) == Some(true) {
            continue;
        }
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
            let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
            if id.is_some() && id != last_message_id {
                if let Some(u) = message.get("usage") {
                    let n: u64 = [
                        "input_tokens",
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                    ]
                    .iter()
                    .filter_map(|f| u.get(f).and_then(Value::as_u64))
                    .sum();
                    prompt_tokens.push(n.into());
                }
            }
            last_message_id = id;
        }
    }
    let mut ep = episode(origin, None, "claude-code", conv.into_items());
    if !prompt_tokens.is_empty() {
        ep.meta
            .insert("provider_prompt_tokens".into(), Value::Array(prompt_tokens));
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
