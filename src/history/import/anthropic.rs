//! Anthropic Messages: `{system?, messages: [{role, content: string | blocks}]}` or a bare list of messages.

use std::path::Path;

use serde_json::Value;

use super::{bad, episode, parse_json, sure, text_of, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::CallUsage;
use crate::history::{Episode, Role, SentBack};

/// Appends one Anthropic message (`text`, `tool_use`, `tool_result` and `thinking` blocks) of `model` (when the
/// trace names it) to `conv`; its thinking is reasoning sent back as [`thinking_kept`] says.
pub fn push_message(conv: &mut Conversation, role: &str, content: &Value, model: Option<&str>) {
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
                conv.reasoning(
                    b.get("thinking").map_or_else(String::new, text_of),
                    thinking_kept(model),
                );
            }
            Some("redacted_thinking") => {}
            _ => conv.message(role, text_of(b)),
        }
    }
}

/// Which later requests carry a Claude model's thinking blocks, as Anthropic's extended-thinking guide says: the
/// thinking of the assistant turn in a tool-use loop goes back with the tool results and counts as input, and
/// the API strips earlier turns' ([`SentBack::Turn`]), but Claude Opus 4.5 and later Opus models, and Claude
/// Sonnet 4.6 and later Sonnet models, keep every earlier turn's ([`SentBack::Always`]). A model the trace does
/// not name is taken as the first kind.
#[must_use]
pub fn thinking_kept(model: Option<&str>) -> SentBack {
    let Some(model) = model else {
        return SentBack::Turn;
    };
    // `claude-opus-4-5-20251101`, `claude-sonnet-4-6`: the family, then major and minor.
    let version = |family: &str| -> Option<(u32, u32)> {
        let rest = model.split(family).nth(1)?;
        let mut parts = rest.split('-').map(str::parse::<u32>);
        // A date right after the family (`claude-3-7-sonnet-20250219`) is no version: the version came first.
        let major = parts.next()?.ok().filter(|m| *m < 100)?;
        // A date (`20250514`) where a minor would be is no minor.
        let minor = parts
            .next()
            .and_then(Result::ok)
            .filter(|m| *m < 100)
            .unwrap_or(0);
        Some((major, minor))
    };
    let keeps = version("opus-").is_some_and(|v| v >= (4, 5))
        || version("sonnet-").is_some_and(|v| v >= (4, 6));
    if keeps {
        SentBack::Always
    } else {
        SentBack::Turn
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
        cache_write_1h_tokens: u
            .pointer("/cache_creation/ephemeral_1h_input_tokens")
            .and_then(Value::as_u64),
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
        let model = v.get("model").and_then(Value::as_str);
        push_message(
            &mut conv,
            role,
            m.get("content").unwrap_or(&Value::Null),
            model,
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Opus from 4.5 and Sonnet from 4.6 keep every turn's thinking; earlier models, Haiku through 4.5, a dated
    /// id without a minor and an unnamed model keep only the turn in progress.
    #[test]
    fn which_claude_models_keep_earlier_thinking() {
        for (model, kept) in [
            ("claude-opus-4-5-20251101", SentBack::Always),
            ("claude-opus-4-6", SentBack::Always),
            ("claude-opus-5", SentBack::Always),
            ("claude-sonnet-4-6", SentBack::Always),
            ("claude-opus-4-1-20250805", SentBack::Turn),
            ("claude-opus-4-20250514", SentBack::Turn),
            ("claude-sonnet-4-5-20250929", SentBack::Turn),
            ("claude-3-7-sonnet-20250219", SentBack::Turn),
            ("claude-haiku-4-5-20251001", SentBack::Turn),
        ] {
            assert_eq!(thinking_kept(Some(model)), kept, "{model}");
        }
        assert_eq!(thinking_kept(None), SentBack::Turn);
    }
}
