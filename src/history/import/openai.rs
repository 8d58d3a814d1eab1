//! OpenAI chat messages, and the formats built on them: mini-swe-agent (legacy list and 1.1) and tau-bench.

use std::path::Path;

use serde_json::Value;

use super::{arguments_of, bad, episode, parse_json, text_of, Conversation};
use crate::error::Result;
use crate::history::{Episode, Role};

/// Converts a list of OpenAI chat messages; `at` names the list in errors (e.g. `messages`).
///
/// Roles: `system`/`developer`, `user`, `assistant` (text, then `tool_calls`), `tool`/`function` (a result,
/// matched by `tool_call_id`, or SWE-agent's `tool_call_ids`). `exit` (mini-swe-agent's submission) is not
/// part of the context and is skipped.
///
/// # Errors
/// An unknown role or a message that is not an object, naming its index.
pub fn convert(messages: &[Value], origin: &Path, at: &str) -> Result<Conversation> {
    let mut conv = Conversation::default();
    for (i, m) in messages.iter().enumerate() {
        let Some(obj) = m.as_object() else {
            return Err(bad(
                origin,
                1,
                format!("at `{at}[{i}]`: expected a message object, found {m}"),
            ));
        };
        let role = obj.get("role").and_then(Value::as_str).unwrap_or("");
        let content = obj.get("content").map_or_else(String::new, text_of);
        match role {
            "system" | "developer" => conv.message(Role::System, content),
            "user" | "human" => conv.message(Role::User, content),
            "assistant" | "ai" => {
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

fn array<'a>(v: &'a Value, key: &str, origin: &Path) -> Result<&'a Vec<Value>> {
    v.get(key).and_then(Value::as_array).ok_or_else(|| {
        bad(
            origin,
            1,
            format!("at `{key}`: expected a list of messages"),
        )
    })
}

/// The messages of a bare list, or of an object's `messages`, with their JSON path for errors.
fn messages_of<'a>(v: &'a Value, origin: &Path) -> Result<(&'a Vec<Value>, &'static str)> {
    match v {
        Value::Array(a) => Ok((a, ".")),
        _ => Ok((array(v, "messages", origin)?, "messages")),
    }
}

/// A list of messages, or an object with `messages` (a chat-completions request body).
///
/// # Errors
/// Malformed JSON or messages.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let (messages, at) = messages_of(&v, origin)?;
    let conv = convert(messages, origin, at)?;
    let mut ep = episode(origin, None, "openai", conv.into_items());
    if let Some(model) = v.get("model") {
        ep.meta.insert("model".into(), model.clone());
    }
    Ok(vec![ep])
}

/// mini-swe-agent: the legacy bare list, or `mini-swe-agent-1.1` with per-call provider usage.
///
/// # Errors
/// Malformed JSON or messages.
pub fn import_mini_swe_agent(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let (messages, at) = messages_of(&v, origin)?;
    let conv = convert(messages, origin, at)?;
    let mut ep = episode(origin, None, "mini-swe-agent", conv.into_items());
    // Ground truth: the provider's prompt tokens for each call, from the raw responses.
    let prompt_tokens: Vec<Value> = messages
        .iter()
        .filter_map(|m| m.pointer("/extra/response/usage/prompt_tokens").cloned())
        .collect();
    if !prompt_tokens.is_empty() {
        ep.meta
            .insert("provider_prompt_tokens".into(), Value::Array(prompt_tokens));
    }
    if let Some(info) = v.get("info") {
        for key in ["exit_status", "model_stats", "mini_version"] {
            if let Some(x) = info.get(key) {
                ep.meta.insert(key.into(), x.clone());
            }
        }
        if let Some(model) = info.pointer("/config/model/model_name") {
            ep.meta.insert("model".into(), model.clone());
        }
    }
    if let Some(id) = v.get("instance_id").and_then(Value::as_str) {
        ep.meta
            .insert("instance_id".into(), Value::String(id.into()));
    }
    Ok(vec![ep])
}

/// tau-bench: one result with `traj` (OpenAI messages), `reward` and `info.task`.
///
/// # Errors
/// Malformed JSON or messages.
pub fn import_tau_bench(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let conv = convert(array(&v, "traj", origin)?, origin, "traj")?;
    let mut ep = episode(origin, None, "tau-bench", conv.into_items());
    for key in ["task_id", "trial", "reward"] {
        if let Some(x) = v.get(key) {
            ep.meta.insert(key.into(), x.clone());
        }
    }
    if let Some(instruction) = v.pointer("/info/task/instruction").and_then(Value::as_str) {
        ep.task = instruction.chars().take(200).collect();
    }
    Ok(vec![ep])
}
