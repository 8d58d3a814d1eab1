//! OpenAI chat messages, which mini-swe-agent, tau-bench and SWE-agent build on ([`convert`]).

use std::path::Path;

use serde_json::Value;

use super::{arguments_of, bad, episode, parse_json, sure, text_of, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::{Episode, Role, SentBack};

/// How an agent's OpenAI-form messages map onto items.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dialect {
    /// Which later requests carry an assistant message's `reasoning_content`: within its turn where the agent
    /// keeps the provider's message as it came and the provider takes it back (mini-swe-agent with
    /// deepseek-reasoner), else none (output only).
    pub reasoning: SentBack,
    /// User messages after the first are environment output (an agent that runs commands from its text and
    /// answers with their output as user messages).
    pub observations: bool,
}

/// Converts a list of OpenAI chat messages; `at` names the list in errors (e.g. `messages`).
///
/// Roles: `system`/`developer`, `user`, `assistant` (`reasoning_content`, text, then `tool_calls`),
/// `tool`/`function` (a result, matched by `tool_call_id`, or SWE-agent's `tool_call_ids`). `exit`
/// (mini-swe-agent's submission) is not part of the context and is skipped. The Responses API's input items
/// are read too ([`response_item`]).
///
/// # Errors
/// An unknown role or a message that is not an object, naming its index.
pub fn convert(
    messages: &[Value],
    origin: &Path,
    at: &str,
    dialect: Dialect,
) -> Result<Conversation> {
    let mut conv = Conversation::default();
    let mut users = 0;
    for (i, m) in messages.iter().enumerate() {
        let Some(obj) = m.as_object() else {
            return Err(bad(
                origin,
                1,
                format!("at `{at}[{i}]`: expected a message object, found {m}"),
            ));
        };
        if response_item(&mut conv, obj) {
            continue;
        }
        let role = obj.get("role").and_then(Value::as_str).unwrap_or("");
        let content = obj.get("content").map_or_else(String::new, text_of);
        match role {
            "system" | "developer" => conv.message(Role::System, content),
            "user" | "human" => {
                users += 1;
                if dialect.observations && users > 1 {
                    conv.observation("", content);
                } else {
                    conv.message(Role::User, content);
                }
            }
            "assistant" | "ai" => {
                if let Some(reasoning) = obj.get("reasoning_content").and_then(Value::as_str) {
                    conv.reasoning(reasoning, dialect.reasoning);
                }
                conv.message(Role::Assistant, content);
                let calls = obj.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                for (j, tc) in calls.iter().enumerate() {
                    let f = tc.get("function").unwrap_or(tc);
                    let Some(name) = f.get("name").and_then(Value::as_str) else {
                        return Err(bad(
                            origin,
                            1,
                            format!("at `{at}[{i}].tool_calls[{j}]`: tool call has no function name"),
                        ));
                    };
                    let args = f.get("arguments").map_or_else(|| "{}".into(), arguments_of);
                    conv.call(tc.get("id").and_then(Value::as_str), name, args);
                }
            }
            "tool" | "function" => {
                let id = obj
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .or_else(|| obj.get("tool_call_ids").and_then(|v| v.get(0)).and_then(Value::as_str));
                let name = obj
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| id.and_then(|id| conv.call_name(id)))
                    .unwrap_or_else(|| "tool".into());
                conv.result(id, &name, content, false);
            }
            "exit" => {}
            other => {
                return Err(bad(
                    origin,
                    1,
                    format!("at `{at}[{i}].role`: unknown role '{other}' (expected system, user, assistant or tool)"),
                ))
            }
        }
    }
    Ok(conv)
}

/// Appends an input item of OpenAI's Responses API that is not a chat message (`reasoning`, `function_call`,
/// `function_call_output`) and says whether it was one. A reasoning item's text is its `content` where the
/// trace keeps it, else its `summary` (its `encrypted_content` is opaque and not counted); the API takes
/// reasoning items back within their turn and drops those of earlier turns ([`SentBack::Turn`]).
fn response_item(conv: &mut Conversation, obj: &serde_json::Map<String, Value>) -> bool {
    let texts = |key: &str| -> String {
        obj.get(key)
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("reasoning") => {
            let content = texts("content");
            let text = if content.is_empty() {
                texts("summary")
            } else {
                content
            };
            conv.reasoning(text, SentBack::Turn);
        }
        Some("function_call") => {
            let name = obj.get("name").and_then(Value::as_str).unwrap_or("tool");
            let args = obj
                .get("arguments")
                .map_or_else(|| "{}".into(), arguments_of);
            conv.call(obj.get("call_id").and_then(Value::as_str), name, args);
        }
        Some("function_call_output") => {
            let id = obj.get("call_id").and_then(Value::as_str);
            let name = id
                .and_then(|id| conv.call_name(id))
                .unwrap_or_else(|| "tool".into());
            let output = obj.get("output").map_or_else(String::new, text_of);
            conv.result(id, &name, output, false);
        }
        _ => return false,
    }
    true
}

pub(super) fn array<'a>(v: &'a Value, key: &str, origin: &Path) -> Result<&'a Vec<Value>> {
    v.get(key).and_then(Value::as_array).ok_or_else(|| {
        bad(
            origin,
            1,
            format!("at `{key}`: expected a list of messages"),
        )
    })
}

/// The messages of a bare list, or of an object's `messages` (a Responses API request's `input`), with their
/// JSON path for errors.
pub(super) fn messages_of<'a>(
    v: &'a Value,
    origin: &Path,
) -> Result<(&'a Vec<Value>, &'static str)> {
    match v {
        Value::Array(a) => Ok((a, ".")),
        _ if v.get("input").is_some_and(Value::is_array) => {
            Ok((array(v, "input", origin)?, "input"))
        }
        _ => Ok((array(v, "messages", origin)?, "messages")),
    }
}

/// A list of messages, or an object with `messages` (a chat-completions request body, with its `tools`). A
/// request body is a call about to be made: when it ends after the last assistant turn, that call is a call
/// point ([`Episode::stopped`] is left unset).
///
/// # Errors
/// Malformed JSON or messages.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let (messages, at) = messages_of(&v, origin)?;
    let conv = convert(messages, origin, at, Dialect::default())?;
    let mut items = conv.into_items();
    // A Responses API request's instructions are its system message.
    if let Some(instructions) = v.get("instructions").and_then(Value::as_str) {
        items.insert(0, crate::history::Item::system(instructions));
    }
    let mut ep = episode(origin, None, "openai", items);
    // A request body names the model it is for: every call point's.
    ep.set_models(v.get("model").and_then(Value::as_str), &[]);
    ep.tools = tools_of(&v);
    Ok(vec![ep])
}

/// The tool definitions a request body or a trace records at its top level (`tools`).
#[must_use]
pub fn tools_of(v: &Value) -> Vec<Value> {
    v.get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The openai format.
pub struct OpenAi;

impl Importer for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn about(&self) -> &'static str {
        "OpenAI chat messages (with tool_calls), a list or an object with messages; a Responses API input"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        match &s.document {
            Some(Value::Object(o)) if o.contains_key("messages") => Some(sure::GENERIC),
            Some(Value::Object(o)) if o.get("input").is_some_and(Value::is_array) => {
                Some(sure::GENERIC)
            }
            Some(Value::Array(a))
                if a.first()
                    .is_some_and(|m| m.get("role").is_some() || m.get("type").is_some()) =>
            {
                Some(sure::GENERIC)
            }
            _ => None,
        }
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
