//! tau-bench results: a customer-service agent's OpenAI messages (`traj`), its reward and its task.

use std::path::Path;

use serde_json::Value;

use super::openai::{array, convert, Dialect};
use super::{episode, parse_json, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::Episode;

/// tau-bench: one result with `traj` (OpenAI messages), `reward` and `info.task`; the tools the agent had are
/// not in the result.
///
/// # Errors
/// Malformed JSON or messages.
fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let v = parse_json(text, origin)?;
    let conv = convert(
        array(&v, "traj", origin)?,
        origin,
        "traj",
        Dialect::default(),
    )?;
    let mut ep = episode(origin, None, "tau-bench", conv.into_items());
    // The simulated customer ends the conversation (`###STOP###`): the agent is not called again.
    ep.stopped = true;
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

/// The tau-bench format.
pub struct TauBench;

impl Importer for TauBench {
    fn name(&self) -> &'static str {
        "tau-bench"
    }

    fn about(&self) -> &'static str {
        "tau-bench result (traj, reward, info.task)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        s.object()?.contains_key("traj").then_some(sure::LIKELY)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
