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

    /// Sends one request and blocks until its answer: a strategy's call, whose answer the next request of its
    /// replay depends on (a summary that replaces part of the history).
    ///
    /// # Errors
    /// Fails when the model cannot answer; strategies then leave the context as it was.
    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse>;

    /// Starts one request whose answer the replay does not wait for (a probe's question, the judge's grading),
    /// and returns at once: a client that answers over the network sends it while the replay goes on, and its
    /// answer is read later ([`Pending::wait`]). The default answers on the calling thread, as
    /// [`Llm::generate`] (the mock: its answer is ready at once).
    fn start(&self, request: &LlmRequest) -> Pending {
        Pending::ready(self.generate(request))
    }

    /// A hint, on the thread that is about to replay an episode under every strategy, of what the episode's
    /// probes will ask, so that a model that indexes what it reads (the mock) may index only what those
    /// questions can look for. Any request may still come, and must be answered as if the hint had not been
    /// given. The default ignores it.
    fn start_episode(&self, hint: &EpisodeHint<'_>) {
        let _ = hint;
    }
}

/// A call started with [`Llm::start`]: its answer, now or later.
#[must_use = "a started call's answer is read with `wait` or `try_take`"]
#[derive(Debug)]
pub struct Pending(Answer);

#[derive(Debug)]
enum Answer {
    /// Answered on the calling thread.
    Ready(Result<LlmResponse>),
    /// Sent by a task; its answer comes through the channel.
    Later(tokio::sync::oneshot::Receiver<Result<LlmResponse>>),
}

impl Pending {
    /// A call already answered.
    pub fn ready(result: Result<LlmResponse>) -> Self {
        Self(Answer::Ready(result))
    }

    /// A call whose answer the task that sends it will put into the channel.
    pub fn later(answer: tokio::sync::oneshot::Receiver<Result<LlmResponse>>) -> Self {
        Self(Answer::Later(answer))
    }

    /// The answer when it has come, else the call still pending.
    ///
    /// # Errors
    /// The call still pending, given back.
    pub fn try_take(self) -> std::result::Result<Result<LlmResponse>, Self> {
        use tokio::sync::oneshot::error::TryRecvError;
        match self.0 {
            Answer::Ready(result) => Ok(result),
            Answer::Later(mut rx) => match rx.try_recv() {
                Ok(result) => Ok(result),
                Err(TryRecvError::Empty) => Err(Self(Answer::Later(rx))),
                Err(TryRecvError::Closed) => Ok(Err(abandoned())),
            },
        }
    }

    /// Waits for the answer, blocking the calling thread (never a task's).
    ///
    /// # Errors
    /// The call's error.
    pub fn wait(self) -> Result<LlmResponse> {
        match self.0 {
            Answer::Ready(result) => result,
            Answer::Later(rx) => rx.blocking_recv().unwrap_or_else(|_| Err(abandoned())),
        }
    }
}

/// The error of a call whose task ended without an answer (its runtime shut down).
fn abandoned() -> crate::error::Error {
    crate::error::Error::Llm("the call ended without an answer (its task stopped)".into())
}

/// What [`Llm::start_episode`] is told of the episode about to be replayed.
#[derive(Debug, Clone, Copy)]
pub struct EpisodeHint<'a> {
    /// The questions of the episode's probes.
    pub questions: &'a [&'a str],
}
