//! smolagents benchmark runs (one JSONL line per run): `intermediate_steps` is the agent's memory as chat
//! messages with roles `system`, `user`, `assistant`, `tool-call` and `tool-response`. Tool calls are
//! serialized as Python-literal text ("Calling tools: [{'id': …, 'function': {'name': …, 'arguments': …}}]"),
//! so id and name are read with patterns and the arguments kept as text.

use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::{bad, episode, parse_jsonl, sure, text_of, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::{Episode, Role};

/// Imports every run of the file.
///
/// # Errors
/// Malformed JSON lines or a run without `intermediate_steps`.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let id_re = Regex::new(r"'id':\s*'([^']+)'").expect("static pattern");
    let name_re = Regex::new(r"'name':\s*'([^']+)'").expect("static pattern");
    let args_re = Regex::new(r"(?s)'arguments':\s*(.*)\}\s*\}\s*\]\s*$").expect("static pattern");
    let mut out = Vec::new();
    for (line, run) in parse_jsonl(text, origin)? {
        let steps = run
            .get("intermediate_steps")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                bad(
                    origin,
                    line,
                    "at `intermediate_steps`: expected a list of messages",
                )
            })?;
        let mut conv = Conversation::default();
        let mut pending: Option<(String, String)> = None;
        for (i, m) in steps.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("");
            let content = m.get("content").map_or_else(String::new, text_of);
            match role {
                "system" => conv.message(Role::System, content),
                "user" => conv.message(Role::User, content),
                "assistant" => conv.message(Role::Assistant, content),
                "tool-call" => {
                    let name = name_re
                        .captures(&content)
                        .map_or("tool", |c| c.get(1).map_or("tool", |m| m.as_str()));
                    let args = args_re
                        .captures(&content)
                        .and_then(|c| c.get(1))
                        .map_or_else(|| content.clone(), |m| m.as_str().trim().to_owned());
                    let id = conv.call(
                        id_re
                            .captures(&content)
                            .and_then(|c| c.get(1))
                            .map(|m| m.as_str()),
                        name,
                        args,
                    );
                    pending = Some((id, name.to_owned()));
                }
                "tool-response" => {
                    let (id, name) = pending
                        .take()
                        .map_or((None, "tool".to_owned()), |(i, n)| (Some(i), n));
                    conv.result(id.as_deref(), &name, content, false);
                }
                other => {
                    return Err(bad(
                        origin,
                        line,
                        format!("at `intermediate_steps[{i}].role`: unknown role '{other}'"),
                    ))
                }
            }
        }
        let mut ep = episode(
            origin,
            Some(format!("line{line}")),
            "smolagents",
            conv.into_items(),
        );
        for key in [
            "model_id",
            "agent_action_type",
            "source",
            "token_counts",
            "true_answer",
            "answer",
        ] {
            if let Some(x) = run.get(key).filter(|x| !x.is_null()) {
                ep.meta.insert(key.into(), x.clone());
            }
        }
        if let Some(q) = run.get("question").and_then(Value::as_str) {
            ep.task = q.chars().take(200).collect();
        }
        out.push(ep);
    }
    Ok(out)
}

/// The smolagents format.
pub struct Smolagents;

impl Importer for Smolagents {
    fn name(&self) -> &'static str {
        "smolagents"
    }

    fn about(&self) -> &'static str {
        "smolagents benchmark run JSONL (intermediate_steps)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        s.first_line
            .as_ref()?
            .contains_key("intermediate_steps")
            .then_some(sure::CERTAIN)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
