//! SWE-agent `.traj`: `history[]` is the exact LLM message list (OpenAI form, function-calling or text
//! actions); `info.model_stats` holds the run's real usage.

use std::path::Path;

use serde_json::Value;

use super::{bad, episode, openai, parse_json, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::Episode;

/// Imports one trajectory.
///
/// # Errors
/// Malformed JSON or a history that is not a message list.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let history = v
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(origin, 1, "at `history`: expected a list of messages"))?;
    let conv = openai::convert(history, origin, "history")?;
    let mut ep = episode(origin, None, "swe-agent", conv.into_items());
    if let Some(info) = v.get("info") {
        for key in ["exit_status", "model_stats"] {
            if let Some(x) = info.get(key) {
                ep.meta.insert(key.into(), x.clone());
            }
        }
    }
    let demos = history
        .iter()
        .filter(|m| m.get("is_demo").and_then(Value::as_bool) == Some(true))
        .count();
    if demos > 0 {
        ep.meta.insert("demo_messages".into(), demos.into());
    }
    Ok(vec![ep])
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
