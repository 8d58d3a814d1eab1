//! smolagents benchmark runs (one JSONL line per run): `intermediate_steps` is the agent's memory as chat
//! messages with roles `system`, `user`, `assistant`, `tool-call` and `tool-response`.
//!
//! smolagents sends its memory as text: a `tool-call` message ("Calling tools: [{'id': …, 'function': …}]")
//! goes to the model as assistant text and a `tool-response` ("Observation: …") as a user message. So they are
//! imported as what the model reads — the call as part of the assistant's turn, the response as an
//! observation named after the tool — not as structured calls the wire never carried. The run ends with its
//! final answer; `token_counts` is its usage.

use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::{bad, episode, parse_jsonl, sure, text_of, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::ProviderUsage;
use crate::history::{Episode, Role};

/// Imports every run of the file.
///
/// # Errors
/// Malformed JSON lines or a run without `intermediate_steps`.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let name_re = Regex::new(r"'name':\s*'([^']+)'").expect("static pattern");
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
        let mut tool = String::new();
        for (i, m) in steps.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("");
            let content = m.get("content").map_or_else(String::new, text_of);
            match role {
                "system" => conv.message(Role::System, content),
                "user" => conv.message(Role::User, content),
                "assistant" => conv.message(Role::Assistant, content),
                "tool-call" => {
                    tool = name_re
                        .captures(&content)
                        .and_then(|c| c.get(1))
                        .map_or_else(String::new, |m| m.as_str().to_owned());
                    conv.message(Role::Assistant, content);
                }
                "tool-response" => conv.observation(&tool, content),
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
        ep.stopped = true;
        for key in [
            "model_id",
            "agent_action_type",
            "source",
            "true_answer",
            "answer",
        ] {
            if let Some(x) = run.get(key).filter(|x| !x.is_null()) {
                ep.meta.insert(key.into(), x.clone());
            }
        }
        let count = |k: &str| {
            run.pointer(&format!("/token_counts/{k}"))
                .and_then(Value::as_u64)
        };
        if let Some(input) = count("input_tokens") {
            ProviderUsage {
                source: "token_counts".into(),
                input_tokens: Some(input),
                output_tokens: count("output_tokens"),
                ..ProviderUsage::default()
            }
            .store(&mut ep);
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
