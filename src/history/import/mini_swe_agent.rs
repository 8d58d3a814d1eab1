//! mini-swe-agent trajectories: the legacy bare list of messages, or `mini-swe-agent-1.1` with the provider's
//! usage for each call.

use std::path::Path;

use serde_json::Value;

use super::openai::{convert, messages_of, Dialect};
use super::{episode, parse_json, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::{Episode, SentBack};

/// mini-swe-agent: the legacy bare list, or `mini-swe-agent-1.1` with per-call provider usage.
///
/// The agent keeps each model reply as the provider returned it and sends the whole history back, so an
/// assistant's `reasoning_content` (deepseek-reasoner) goes back too, and DeepSeek takes it within its turn:
/// with each tool result, until a new user message ([`SentBack::Turn`]). Every user message after the task is
/// the output of the agent's command (the legacy and text-based runs answer with user messages). The run ends
/// with its submission (`exit`): no call follows.
fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let (messages, at) = messages_of(&v, origin)?;
    let dialect = Dialect {
        reasoning: SentBack::Turn,
        observations: true,
    };
    let conv = convert(messages, origin, at, dialect)?;
    let mut ep = episode(origin, None, "mini-swe-agent", conv.into_items());
    ep.stopped = true;
    // Ground truth: the provider's count for each call, from the raw responses.
    let calls: Vec<CallUsage> = messages
        .iter()
        .filter_map(|m| m.pointer("/extra/response/usage"))
        .map(|u| {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64);
            CallUsage {
                input_tokens: n("/prompt_tokens").unwrap_or(0),
                output_tokens: n("/completion_tokens").unwrap_or(0),
                cache_read_tokens: n("/prompt_tokens_details/cached_tokens")
                    .or_else(|| n("/prompt_cache_hit_tokens")),
                ..CallUsage::default()
            }
        })
        .collect();
    let mut usage = if calls.is_empty() {
        ProviderUsage::default()
    } else {
        ProviderUsage::from_calls("messages[].extra.response.usage", calls)
    };
    if let Some(info) = v.get("info") {
        for key in ["exit_status", "mini_version"] {
            if let Some(x) = info.get(key) {
                ep.meta.insert(key.into(), x.clone());
            }
        }
        // The tool-calling models send their one tool with every call; the trajectory does not record it.
        let model_type = info
            .pointer("/config/model_type")
            .and_then(Value::as_str)
            .unwrap_or("");
        let calls_tools = messages
            .iter()
            .any(|m| m.get("tool_calls").is_some_and(Value::is_array));
        if calls_tools && sends_bash_tool(model_type) {
            ep.tools = vec![bash_tool()];
            ep.meta.insert(
                "tools_from".into(),
                "mini-swe-agent's BASH_TOOL (src/minisweagent/models/utils/actions_toolcall.py, v2.2.7, \
                 6f1b196), sent with every call by its tool-calling models"
                    .into(),
            );
        }
        if usage.calls.is_empty() {
            if let Some(n) = info
                .pointer("/model_stats/api_calls")
                .and_then(Value::as_u64)
            {
                usage.source = "info.model_stats".into();
                usage.api_calls = Some(n);
            }
        }
    }
    usage.store(&mut ep);
    // The model the run was configured with, and the one each raw response names (a dated id where the
    // provider gives one), call by call.
    let replies: Vec<Option<String>> = messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .map(|m| {
            m.pointer("/extra/response/model")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    ep.set_models(
        v.pointer("/info/config/model/model_name")
            .and_then(Value::as_str),
        &replies,
    );
    if let Some(id) = v.get("instance_id").and_then(Value::as_str) {
        ep.meta
            .insert("instance_id".into(), Value::String(id.into()));
    }
    Ok(vec![ep])
}

/// Whether a mini-swe-agent model class sends `BASH_TOOL` with every call (2.0 to 2.4.6: the litellm,
/// OpenRouter, Portkey and Requesty models; not the text-based ones, and the Responses API ones send another
/// form).
fn sends_bash_tool(model_type: &str) -> bool {
    let class = model_type.rsplit('.').next().unwrap_or("");
    [
        "LitellmModel",
        "OpenRouterModel",
        "PortkeyModel",
        "RequestyModel",
    ]
    .contains(&class)
}

/// mini-swe-agent's `BASH_TOOL`, key for key in its order (the order changes its tokens).
fn bash_tool() -> Value {
    serde_json::json!({"type": "function", "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {"type": "object",
                       "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
                       "required": ["command"]}}})
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
