//! mini-swe-agent trajectories: the legacy bare list of messages, or `mini-swe-agent-1.1` with the provider's
//! usage for each call.

use std::path::Path;

use serde_json::Value;

use super::openai::{convert, messages_of};
use super::{episode, parse_json, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::Episode;

/// mini-swe-agent: the legacy bare list, or `mini-swe-agent-1.1` with per-call provider usage.
///
/// # Errors
/// Malformed JSON or messages.
fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
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

/// The mini-swe-agent format.
pub struct MiniSweAgent;

impl Importer for MiniSweAgent {
    fn name(&self) -> &'static str {
        "mini-swe-agent"
    }

    fn about(&self) -> &'static str {
        "mini-swe-agent trajectory (legacy list, or mini-swe-agent-1.1 with per-call usage)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        if let Some(o) = s.object() {
            let tagged = o.contains_key("trajectory_format")
                || (o.contains_key("messages")
                    && o.get("info")
                        .is_some_and(|i| i.get("mini_version").is_some()));
            return tagged.then_some(sure::CERTAIN);
        }
        let list = s.list()?;
        let marked = list.first().is_some_and(|m| m.get("role").is_some())
            && list.iter().any(|m| {
                m.get("content")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains("mswea_bash_command") || c.contains("<returncode>"))
            });
        marked.then_some(sure::LIKELY)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
