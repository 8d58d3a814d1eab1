//! smolagents benchmark runs (one JSONL line per run): `intermediate_steps` is the agent's memory as chat
//! messages with roles `system`, `user`, `assistant`, `tool-call` and `tool-response`.
//!
//! smolagents sends its memory as text: a `tool-call` message ("Calling tools: [{'id': …, 'function': …}]")
//! goes to the model as assistant text and a `tool-response` ("Observation: …") as a user message. So they are
//! imported as what the model reads — the call as part of the assistant's turn, the response as an
//! observation named after the tool — not as structured calls the wire never carried. The run ends with its
//! final answer; `token_counts` is its usage.
//!
//! A ToolCallingAgent sends its tools as API schemas (`get_tool_json_schema` of each tool): they are rebuilt
//! from the tool list its system prompt renders (name, description, inputs; `any` sent as `string`, inputs not
//! `nullable` required). A run that reaches its step limit makes one more call, `provide_final_answer`: the
//! `final_answer` pre-messages as system text, the memory without its system prompt, and the post-messages
//! naming the task; its reply is the run's `answer`. That call is kept (a user message with the
//! post-messages, then the answer); the "Reached max steps." error is written to memory only after it, and
//! is left out. The episode cannot swap the system prompt for one call, so the replay of that call counts
//! the system prompt where smolagents sent the one-line pre-messages (read at smolagents 8a3687c, the commit
//! of the public runs).

mod tools;

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
        let max_steps = steps.last().is_some_and(is_max_steps_error);
        let mut conv = conversation(steps, &name_re, origin, line)?;
        if max_steps {
            final_answer_call(&mut conv, steps, &run);
        }
        let mut ep = episode(
            origin,
            Some(format!("line{line}")),
            "smolagents",
            conv.into_items(),
        );
        ep.tools = run_tools(&run, steps);
        ep.stopped = true;
        if max_steps {
            ep.meta.insert(
                "final_answer_call".into(),
                "provide_final_answer after max steps".into(),
            );
        }
        keep_run_fields(&mut ep, &run);
        out.push(ep);
    }
    Ok(out)
}

/// The error smolagents writes as the last step of a run that hit its step limit.
fn is_max_steps_error(m: &Value) -> bool {
    m.get("role").and_then(Value::as_str) == Some("tool-response")
        && m.get("content")
            .map(text_of)
            .is_some_and(|t| t.starts_with("Error:\nReached max steps."))
}

/// The run's messages (the max-steps error, written after the final call, left out), each tool response
/// named by the tool its call named.
fn conversation(
    steps: &[Value],
    name_re: &Regex,
    origin: &Path,
    line: usize,
) -> Result<Conversation> {
    let mut conv = Conversation::default();
    let mut tool = String::new();
    for (i, m) in steps.iter().enumerate() {
        if i + 1 == steps.len() && is_max_steps_error(m) {
            continue;
        }
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
    Ok(conv)
}

/// A run that hit its step limit makes one more call for the final answer (the error is written after it):
/// its prompt and the answer.
fn final_answer_call(conv: &mut Conversation, steps: &[Value], run: &Value) {
    let task = steps
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(text_of)
        .unwrap_or_default();
    let task = task.strip_prefix("New task:\n").unwrap_or(&task);
    conv.message(
        Role::User,
        format!("Based on the above, please provide an answer to the following user task:\n{task}"),
    );
    let answer = run.get("answer").map_or_else(String::new, |a| match a {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    conv.message(Role::Assistant, answer);
}

/// A tool-calling agent's tools, from its system prompt; a code agent sends none.
fn run_tools(run: &Value, steps: &[Value]) -> Vec<Value> {
    if run.get("agent_action_type").and_then(Value::as_str) != Some("tool-calling") {
        return Vec::new();
    }
    steps
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
        .and_then(|m| m.get("content"))
        .map(|c| tools::from_system_prompt(&text_of(c)))
        .unwrap_or_default()
}

/// The run's model (`model_id`), its agent type, source and answers into the episode's meta, its token counts as its
/// provider usage, and its question as the task.
fn keep_run_fields(ep: &mut Episode, run: &Value) {
    ep.set_models(run.get("model_id").and_then(Value::as_str), &[]);
    for key in ["agent_action_type", "source", "true_answer", "answer"] {
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
        .store(ep);
    }
    if let Some(q) = run.get("question").and_then(Value::as_str) {
        ep.task = q.chars().take(200).collect();
    }
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
