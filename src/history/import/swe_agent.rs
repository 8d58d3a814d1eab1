//! SWE-agent `.traj`: `history[]` is the exact LLM message list (OpenAI form, function-calling or text
//! actions); `info.model_stats` holds the run's real usage.

use std::path::Path;

use serde_json::Value;

use super::openai::{self, Dialect};
use super::{bad, episode, parse_json, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::ProviderUsage;
use crate::history::{Episode, Item, Role, SentBack};

/// Imports one trajectory.
///
/// - `history[]` is what the model was sent. Its demonstrations (`is_demo`) are part of the fixed prompt and
///   become system messages, so that the task is the first user message and no strategy drops them.
/// - The first other user message is the task; every later one is the output of the agent's command (text
///   mode), an observation named after the command.
/// - Function-calling runs answer with `tool` messages (`tool_call_ids`), tool results.
/// - The run ends with its submission. When the last step of `trajectory[]` is not in the history (some
///   versions stop the history before the final `submit`), its reply is appended: that call was made.
/// - `info.model_stats` (`tokens_sent`, `tokens_received`, `api_calls`) is the run's usage.
///
/// # Errors
/// Malformed JSON or a history that is not a message list.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let history = v
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(origin, 1, "at `history`: expected a list of messages"))?;
    let mut demos = 0;
    let mut messages: Vec<Value> = Vec::with_capacity(history.len());
    for m in history {
        if m.get("is_demo").and_then(Value::as_bool) == Some(true) {
            demos += 1;
            let mut m = m.clone();
            m["role"] = "system".into();
            messages.push(m);
        } else {
            messages.push(m.clone());
        }
    }
    let dialect = Dialect {
        reasoning: SentBack::Never,
        observations: true,
    };
    let conv = openai::convert(&messages, origin, "history", dialect)?;
    let mut items = conv.into_items();
    name_observations(&mut items);
    // The final step, when the history stops short of it.
    let replies = history
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .count();
    if let Some(steps) = v.get("trajectory").and_then(Value::as_array) {
        for step in steps.iter().skip(replies) {
            let reply = step
                .get("response")
                .and_then(Value::as_str)
                .filter(|r| !r.trim().is_empty())
                .or_else(|| step.get("action").and_then(Value::as_str))
                .unwrap_or("");
            if !reply.trim().is_empty() {
                items.push(Item::assistant(reply));
            }
        }
    }
    let mut ep = episode(origin, None, "swe-agent", items);
    ep.stopped = true;
    if let Some(info) = v.get("info") {
        if let Some(x) = info.get("exit_status") {
            ep.meta.insert("exit_status".into(), x.clone());
        }
        let stat = |k: &str| {
            info.pointer(&format!("/model_stats/{k}"))
                .and_then(Value::as_u64)
        };
        // Demonstration trajectories were replayed, not sent: their stats are zeros.
        if stat("tokens_sent").is_some_and(|n| n > 0) {
            ProviderUsage {
                source: "info.model_stats".into(),
                api_calls: stat("api_calls"),
                input_tokens: stat("tokens_sent"),
                output_tokens: stat("tokens_received"),
                ..ProviderUsage::default()
            }
            .store(&mut ep);
        }
        if let Some(cost) = info.pointer("/model_stats/instance_cost") {
            ep.meta.insert("instance_cost".into(), cost.clone());
        }
    }
    if demos > 0 {
        ep.meta.insert("demo_messages".into(), demos.into());
    }
    ep.set_models(model_of(&v).as_deref(), &[]);
    Ok(vec![ep])
}

/// The model the run was configured with: `replay_config.agent.model.name` (SWE-agent 1.x writes the
/// configuration as an object, 0.7 as a JSON string).
fn model_of(v: &Value) -> Option<String> {
    let config = v.get("replay_config")?;
    let parsed;
    let config = match config {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).ok()?;
            &parsed
        }
        other => other,
    };
    config
        .pointer("/agent/model/name")
        .or_else(|| config.pointer("/agent/model/model_name"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Names each observation after the command that produced it: the first word of the action in the reply
/// before it (a fenced block's first line, or the reply's last line).
fn name_observations(items: &mut [Item]) {
    let mut command = String::new();
    for item in items.iter_mut() {
        match item {
            Item::Message {
                role: Role::Assistant,
                content,
            } => command = command_of(content),
            Item::Observation { name, .. } if name.is_empty() && !command.is_empty() => {
                *name = command.as_str().into();
            }
            _ => {}
        }
    }
}

/// The command a text-mode reply runs: the first word of its last fenced block (after a language tag on the
/// fence's own line, if any), else of its last line.
fn command_of(reply: &str) -> String {
    let block = reply.rsplit("```").nth(1);
    let line = block
        .and_then(|b| {
            b.lines().filter(|l| !l.trim().is_empty()).nth(usize::from(
                b.starts_with(|c: char| !c.is_whitespace()) && b.lines().count() > 1,
            ))
        })
        .or_else(|| reply.lines().rev().find(|l| !l.trim().is_empty()));
    line.and_then(|l| l.split_whitespace().next())
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
                .collect()
        })
        .unwrap_or_default()
}

/// The swe-agent format.
pub struct SweAgent;

impl Importer for SweAgent {
    fn name(&self) -> &'static str {
        "swe-agent"
    }

    fn about(&self) -> &'static str {
        "SWE-agent trajectory (.traj: history and trajectory)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        let o = s.object()?;
        (o.contains_key("history")
            && (o.contains_key("trajectory")
                || o.contains_key("info")
                || o.get("history").is_some_and(Value::is_array)))
        .then_some(sure::LIKELY)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_of_a_reply() {
        assert_eq!(command_of("Let me look.\n```\nfile release\n```"), "file");
        assert_eq!(
            command_of("Run it:\n```bash\npython3 x.py\n```\n"),
            "python3"
        );
        assert_eq!(command_of("submit"), "submit");
        assert_eq!(command_of(""), "");
    }
}
