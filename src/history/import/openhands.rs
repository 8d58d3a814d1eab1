//! OpenHands: an event-stream JSON array, eval output JSONL (one record per instance with `history`), or the
//! older flattened resolver output (bare `{action…}` / `{observation…}` items, paired by order).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{bad, episode, parse_json, parse_jsonl, sure, text_of, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::{Episode, Role};

/// Actions that are bookkeeping, not part of the model's context.
const SKIP_ACTIONS: [&str; 4] = ["change_agent_state", "recall", "null", "pause"];
/// Observations that are bookkeeping.
const SKIP_OBSERVATIONS: [&str; 4] = ["agent_state_changed", "null", "recall", "user_rejected"];

fn convert(events: &[Value], origin: &Path, at: &str) -> Result<Conversation> {
    let mut conv = Conversation::default();
    // Event id → tool call id, so an observation finds its action through `cause`.
    let mut by_event: HashMap<String, String> = HashMap::new();
    let mut last_call: Option<String> = None;
    let mut seen_message = false;
    for (i, e) in events.iter().enumerate() {
        let Some(obj) = e.as_object() else {
            return Err(bad(
                origin,
                1,
                format!("at `{at}[{i}]`: expected an event object"),
            ));
        };
        // The flattened resolver form has no `source`: its first message is the user's task.
        let source = obj
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or(if seen_message { "agent" } else { "user" });
        if let Some(action) = obj.get("action").and_then(Value::as_str) {
            if SKIP_ACTIONS.contains(&action) {
                continue;
            }
            let args: Map<String, Value> = obj
                .get("args")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(|| {
                    // The flattened form keeps the arguments at the top level.
                    obj.iter()
                        .filter(|(k, _)| {
                            !matches!(
                                k.as_str(),
                                "action"
                                    | "action_risk"
                                    | "is_confirmed"
                                    | "images_urls"
                                    | "wait_for_response"
                                    | "keep_prompt"
                            )
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                });
            match action {
                "message" => {
                    let content = args.get("content").map_or_else(
                        || text_of(obj.get("message").unwrap_or(&Value::Null)),
                        text_of,
                    );
                    let role = if source == "user" {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    conv.message(role, content);
                    seen_message = true;
                }
                "system" => conv.message(
                    Role::System,
                    args.get("content").map_or_else(String::new, text_of),
                ),
                "finish" => {
                    let text = args
                        .get("final_thought")
                        .or_else(|| args.get("thought"))
                        .or_else(|| args.get("outputs").and_then(|o| o.get("content")))
                        .map_or_else(String::new, text_of);
                    conv.message(Role::Assistant, text);
                }
                _ => {
                    if let Some(thought) = args.get("thought").map(text_of) {
                        conv.message(Role::Assistant, thought);
                    }
                    let meta = obj.get("tool_call_metadata");
                    let name = meta
                        .and_then(|m| m.get("function_name"))
                        .and_then(Value::as_str)
                        .unwrap_or(action);
                    let mut call_args = args.clone();
                    call_args.remove("thought");
                    let id = conv.call(
                        meta.and_then(|m| m.get("tool_call_id"))
                            .and_then(Value::as_str),
                        name,
                        Value::Object(call_args).to_string(),
                    );
                    if let Some(eid) = obj.get("id") {
                        by_event.insert(eid.to_string(), id.clone());
                    }
                    last_call = Some(id);
                }
            }
        } else if let Some(observation) = obj.get("observation").and_then(Value::as_str) {
            if SKIP_OBSERVATIONS.contains(&observation) {
                continue;
            }
            let content = obj.get("content").map_or_else(String::new, text_of);
            let call = obj
                .get("cause")
                .and_then(|c| by_event.get(&c.to_string()).cloned())
                .or_else(|| last_call.take());
            let is_error =
                observation == "error" || obj.get("success") == Some(&Value::Bool(false));
            conv.result(call.as_deref(), observation, content, is_error);
        }
    }
    Ok(conv)
}

/// Imports an event array, or an eval/resolver output JSONL with one `history` per record.
///
/// # Errors
/// Malformed JSON, or events that are not objects.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('[') {
        let v = parse_json(text, origin)?;
        let events = v.as_array().map(Vec::as_slice).unwrap_or_default();
        let conv = convert(events, origin, ".")?;
        return Ok(vec![episode(origin, None, "openhands", conv.into_items())]);
    }
    let mut out = Vec::new();
    for (line, record) in parse_jsonl(text, origin)? {
        let history = record
            .get("history")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(origin, line, "at `history`: expected a list of events"))?;
        let conv = convert(history, origin, "history").map_err(|e| match e {
            crate::Error::Parse { path, message, .. } => crate::Error::Parse {
                path,
                line,
                message,
            },
            other => other,
        })?;
        let id = record
            .get("instance_id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("line{line}"), str::to_owned);
        let mut ep = episode(origin, Some(id), "openhands", conv.into_items());
        if let Some(metrics) = record.get("metrics").filter(|m| !m.is_null()) {
            ep.meta.insert("metrics".into(), metrics.clone());
        }
        if let Some(instruction) = record.get("instruction").and_then(Value::as_str) {
            ep.task = instruction.chars().take(200).collect();
        }
        out.push(ep);
    }
    Ok(out)
}

/// The openhands format.
pub struct OpenHands;

impl Importer for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }

    fn about(&self) -> &'static str {
        "OpenHands event stream, eval output JSONL or resolver output"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        if let Some(o) = &s.first_line {
            if o.contains_key("history")
                && (o.contains_key("instance_id")
                    || o.contains_key("instruction")
                    || o.contains_key("issue"))
            {
                return Some(sure::CERTAIN);
            }
        }
        let first = s.list()?.first()?;
        (first.get("action").is_some() || first.get("observation").is_some())
            .then_some(sure::LIKELY)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
