//! What a trace records about the provider's usage: per call where it says (the prompt and completion
//! tokens the provider counted for each model call), or only a run's totals. Importers write it into an
//! episode's `meta.usage` in one form, whatever the trace's own; `ctxbench usage` and `validate` read it back.

use serde::{Deserialize, Serialize};

use super::Episode;

/// The key under `meta` that holds a [`ProviderUsage`].
pub const META_KEY: &str = "usage";

/// The provider's count for one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallUsage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens (reasoning included where the provider counts it so).
    pub output_tokens: u64,
    /// Of the prompt tokens, those read from the provider's cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Of the prompt tokens, those written to the provider's cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

/// What a trace records about the provider's usage over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderUsage {
    /// Where in the trace it comes from (`model_stats`, `extra.response.usage`, …).
    pub source: String,
    /// One entry per model call, in order, when the trace records each call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallUsage>,
    /// Model calls the run made, when the trace says (it may count calls whose reply is not in the history,
    /// such as retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_calls: Option<u64>,
    /// Prompt tokens over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Whether the trace's figures are rounded (aider writes `5.8k`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
}

impl ProviderUsage {
    /// Usage from per-call records; the totals are their sums.
    #[must_use]
    pub fn from_calls(source: &str, calls: Vec<CallUsage>) -> Self {
        Self {
            source: source.to_owned(),
            api_calls: Some(calls.len() as u64),
            input_tokens: Some(calls.iter().map(|c| c.input_tokens).sum()),
            output_tokens: Some(calls.iter().map(|c| c.output_tokens).sum()),
            calls,
            approximate: false,
        }
    }

    /// Writes it into `episode.meta` (nothing when it holds no figure).
    pub fn store(&self, episode: &mut Episode) {
        if self.calls.is_empty() && self.input_tokens.is_none() && self.api_calls.is_none() {
            return;
        }
        if let Ok(v) = serde_json::to_value(self) {
            episode.meta.insert(META_KEY.into(), v);
        }
    }

    /// What `episode.meta` holds, when it holds a well-formed record.
    #[must_use]
    pub fn of(episode: &Episode) -> Option<Self> {
        serde_json::from_value(episode.meta.get(META_KEY)?.clone()).ok()
    }

    /// The number of model calls the trace records, when it says.
    #[must_use]
    pub fn recorded_calls(&self) -> Option<usize> {
        if self.calls.is_empty() {
            self.api_calls.and_then(|n| usize::try_from(n).ok())
        } else {
            Some(self.calls.len())
        }
    }
}
