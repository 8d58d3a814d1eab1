//! Anthropic Messages: `{system?, messages: [{role, content: string | blocks}]}` or a bare list of messages.

use std::path::Path;

use serde_json::Value;

use super::{bad, episode, parse_json, sure, text_of, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::CallUsage;
use crate::history::{Episode, Role};

/// Appends one Anthropic message (`text`, `tool_use`, `tool_result` and `thinking` blocks) to `conv`.
///
/// Thinking is reasoning the agent does not send back as context: the API strips the thinking blocks of
/// earlier assistant turns from the prompt (and counts only those of the turn in progress during a tool loop,
/// which this leaves out).
pub fn push_message(conv: &mut Conversation, role: &str, content: &Value) {
    let role = if role == "assistant" {
        Role::Assistant
    } else {
        Role::User
    };
    let Some(blocks) = content.as_array() else {
        conv.message(role, text_of(content));
        return;
    };
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let name = b.get("name").and_then(Value::as_str).unwrap_or("tool");
                let input = b.get("input").map_or_else(|| "{}".into(), Value::to_string);
                conv.call(b.get("id").and_then(Value::as_str), name, input);
            }
            Some("tool_result") => {
                let id = b.get("tool_use_id").and_then(Value::as_str);
                let name = id
                    .and_then(|id| conv.call_name(id))
                    .unwrap_or_else(|| "tool".into());
                let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                conv.result(
                    id,
                    &name,
                    b.get("content").map_or_else(String::new, text_of),
                    is_error,
                );
            }
            Some("thinking") => {
                conv.reasoning(b.get("thinking").map_or_else(String::new, text_of), false)
            }
            Some("redacted_thinking") => {}
            _ => conv.message(role, text_of(b)),
        }
    }
}

/// The provider's count of one API call from an Anthropic `usage`: the prompt is its input tokens with the
/// cache's.
#[must_use]
pub fn call_usage(u: &Value) -> CallUsage {
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let (read, write) = (
        n("cache_read_input_tokens"),
        n("cache_creation_input_tokens"),
    );
    CallUsage {
        input_tokens: n("input_tokens").unwrap_or(0) + read.unwrap_or(0) + write.unwrap_or(0),
        output_tokens: n("output_tokens").unwrap_or(0),
        cache_read_tokens: read,
        cache_write_tokens: write,
    }
}

/// Imports one conversation.
///
/// # Errors
/// Malformed JSON, or messages without a role.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let messages = match &v {
        Value::Array(a) => a,
        _ => v
            .get("messages")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(origin, 1, "at `messages`: expected a list of messages"))?,
    };
    let mut conv = Conversation::default();
    if let Some(system) = v.get("system") {
        conv.message(Role::System, text_of(system));
    }
    for (i, m) in messages.iter().enumerate() {
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(origin, 1, format!("at `messages[{i}].role`: missing role")))?;
        if !matches!(role, "user" | "assistant") {
            return Err(bad(
                origin,
                1,
                format!(
                    "at `messages[{i}].role`: unknown role '{role}' (expected user or assistant)"
                ),
            ));
        }
        push_message(&mut conv, role, m.get("content").unwrap_or(&Value::Null));
    }
    let mut ep = episode(origin, None, "anthropic", conv.into_items());
    // A request body names the model it is for: every call point's.
    ep.set_models(v.get("model").and_then(Value::as_str), &[]);
    ep.tools = super::openai::tools_of(&v);
    Ok(vec![ep])
}

/// Whether a list of messages holds an Anthropic `tool_use` or `tool_result` block.
fn has_blocks(messages: &Value) -> bool {
    messages.as_array().is_some_and(|a| {
        a.iter().any(|m| {
            m.get("content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| {
                    blocks.iter().any(|b| {
                        matches!(
                            b.get("type").and_then(Value::as_str),
                            Some("tool_use" | "tool_result")
                        )
                    })
                })
        })
    })
}

/// The anthropic format.
pub struct Anthropic;

impl Importer for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn about(&self) -> &'static str {
        "Anthropic Messages (tool_use and tool_result blocks), an object with messages or a list"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        let messages = match &s.document {
            Some(Value::Object(o)) => o.get("messages")?,
            Some(list @ Value::Array(_)) => list,
            _ => return None,
        };
        has_blocks(messages).then_some(sure::LIKELY)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
