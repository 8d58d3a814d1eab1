//! `ctxbench usage`: the replay's baseline against what a trace records about the provider's usage, per
//! episode and per call, so that a user can see how faithfully an imported trace replays before trusting what
//! a strategy saves on it.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::error::Result;
use crate::history::dataset::stream;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::replay::Replayer;
use crate::strategy::{NamedStrategy, StrategyConfig};
use crate::tokens::Tokenizer;

/// One episode's replay against its recorded usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeUsage {
    /// The episode.
    pub episode: String,
    /// Its source (`import/<format>`).
    pub source: String,
    /// Where its figures come from in the trace.
    pub recorded_from: String,
    /// The replay's call points.
    pub call_points: usize,
    /// The model calls the trace records, when it says.
    pub recorded_calls: Option<usize>,
    /// Input tokens the baseline replay sends over every call point.
    pub replay_input_tokens: usize,
    /// The prompt tokens the provider counted, when the trace says.
    pub recorded_input_tokens: Option<u64>,
    /// replay / recorded.
    pub ratio: Option<f64>,
    /// Whether the recorded figures are rounded.
    pub approximate: bool,
    /// Per call, when the trace records each call and there are as many as call points: the replay's input
    /// tokens and the provider's record (prompt, completion and cache figures).
    pub calls: Vec<(usize, CallUsage)>,
}

/// Replays the baseline of every episode of `dataset` that records its usage and compares.
///
/// # Errors
/// A dataset that cannot be read, or a replay fault.
pub fn compare(dataset: &Path, tokenizer: &Arc<Tokenizer>) -> Result<Vec<EpisodeUsage>> {
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(tokenizer));
    let replayer = Replayer::new(Arc::clone(tokenizer), &llm, usize::MAX);
    let baseline = NamedStrategy::new("none", StrategyConfig::None);
    let mut out = Vec::new();
    for entry in stream(dataset)? {
        let (_, _, mut episode) = entry?;
        let Some(usage) = ProviderUsage::of(&episode) else {
            continue;
        };
        // Probes do not change what the baseline sends.
        episode.probes.clear();
        let replay = replayer.replay(&episode, &baseline)?;
        let sent: Vec<usize> = replay.steps.iter().map(|s| s.tokens_sent).collect();
        let replay_input_tokens = sent.iter().sum();
        #[allow(clippy::cast_precision_loss)]
        let ratio = usage
            .input_tokens
            .filter(|&n| n > 0)
            .map(|n| replay_input_tokens as f64 / n as f64);
        let calls = if usage.calls.len() == sent.len() {
            sent.iter()
                .zip(&usage.calls)
                .map(|(&r, c)| (r, *c))
                .collect()
        } else {
            Vec::new()
        };
        out.push(EpisodeUsage {
            episode: episode.id.clone(),
            source: episode.source.clone(),
            recorded_from: usage.source.clone(),
            call_points: sent.len(),
            recorded_calls: usage.recorded_calls(),
            replay_input_tokens,
            recorded_input_tokens: usage.input_tokens,
            ratio,
            approximate: usage.approximate,
            calls,
        });
    }
    Ok(out)
}
