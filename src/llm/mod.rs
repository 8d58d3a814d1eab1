//! The LLM interface strategies and probes talk to: [`Llm`], [`LlmRequest`], [`LlmResponse`].

pub mod judge;
pub mod mock;
pub mod openai;
pub mod pricing;
pub mod transcript;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::history::Item;

/// A request as an agent sends it: instructions (system text) and contents (the history).
///
/// Strategies may append instructions (a summary) and rewrite contents, as in the book's listing 6.6.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmRequest {
    /// System-level text, sent before the contents.
    pub instructions: Vec<String>,
    /// The history.
    pub contents: Vec<Item>,
}

impl LlmRequest {
    /// A request with no instructions.
    #[must_use]
    pub fn from_contents(contents: Vec<Item>) -> Self {
        Self {
            instructions: Vec::new(),
            contents,
        }
    }

    /// Appends one instruction.
    pub fn append_instructions(&mut self, text: impl Into<String>) {
        self.instructions.push(text.into());
    }
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// What an LLM answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmResponse {
    /// The answer text.
    pub text: String,
    /// Token usage.
    pub usage: Usage,
    /// Time the call took (measured for a real LLM, modelled for the mock), in milliseconds.
    pub latency_ms: f64,
    /// How the call went on the wire, when it went on one.
    #[serde(default)]
    pub meta: CallMeta,
}

/// How a call to a real endpoint went: what `llm_calls.jsonl` records beside the answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallMeta {
    /// SHA-256 of the endpoint and the request body (the response cache's key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
    /// The HTTP status of the last attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Attempts made (0: answered from the cache or by another identical request in flight).
    #[serde(default)]
    pub attempts: u32,
    /// Answered from the response cache.
    #[serde(default)]
    pub cached: bool,
    /// The usage was counted with the tokenizer: the response had none.
    #[serde(default)]
    pub estimated: bool,
}

/// A chat model.
///
/// Implementations return the same response for the same request when they are deterministic (the mock), and
/// never put secrets into their errors.
pub trait Llm: Send + Sync {
    /// The model name, for reports and pricing.
    fn model(&self) -> &str;

    /// Sends one request and blocks until its answer: the run replays episodes on rayon workers, each
    /// waiting for its own calls, so there is no async layer to hide a blocking call in.
    ///
    /// # Errors
    /// Fails when the model cannot answer; strategies then leave the context as it was.
    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse>;

    /// A hint, on the thread that is about to replay an episode under every strategy, of what the episode's
    /// probes will ask, so that a model that indexes what it reads (the mock) may index only what those
    /// questions can look for. Any request may still come, and must be answered as if the hint had not been
    /// given. The default ignores it.
    fn start_episode(&self, hint: &EpisodeHint<'_>) {
        let _ = hint;
    }
}

/// What [`Llm::start_episode`] is told of the episode about to be replayed.
#[derive(Debug, Clone, Copy)]
pub struct EpisodeHint<'a> {
    /// The questions of the episode's probes.
    pub questions: &'a [&'a str],
}
