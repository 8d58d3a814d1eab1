//! Every LLM call of a replay, recorded as it is made: what was asked for (a strategy's summary, a probe's
//! answer), how the call went and what the model said. The replay fails an episode in which a call failed,
//! whatever the strategy made of the failure, so a failed call never ends up inside a figure; the calls'
//! wall time is kept apart from the strategy's own compute time.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::llm::{EpisodeHint, Llm, LlmRequest, LlmResponse};

/// Why a call was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A strategy's own call (a summary).
    #[default]
    Strategy,
    /// A probe's question.
    Probe,
    /// The judge's grading of a probe's answer.
    Judge,
}

/// One LLM call of a replay: a line of `llm_calls.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call point it was made at (`None`: after the last one).
    pub step: Option<usize>,
    /// Why.
    pub purpose: Purpose,
    /// The model.
    pub model: String,
    /// SHA-256 of the endpoint and request body (real endpoints only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_hash: Option<String>,
    /// HTTP status of the last attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Attempts made (0: answered from the cache, by an identical request, or by the mock).
    pub attempts: u32,
    /// Answered from the response cache.
    pub cached: bool,
    /// Latency as the client measured it (modelled by the mock), in milliseconds.
    pub latency_ms: f64,
    /// Prompt tokens as reported.
    pub input_tokens: u64,
    /// Completion tokens as reported.
    pub output_tokens: u64,
    /// The usage was counted with the tokenizer: the response had none.
    pub estimated: bool,
    /// The error, when the call failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the model said.
    pub text: String,
}

/// An [`Llm`] that passes every call through and records it, with the real time the calls took; it holds
/// the judge too, whose calls it records the same way ([`Recorder::judge`]).
pub(super) struct Recorder<'l> {
    inner: &'l dyn Llm,
    judge: &'l dyn Llm,
    /// (purpose, step) of the calls about to be made.
    now: Mutex<(Purpose, Option<usize>)>,
    calls: Mutex<Vec<CallRecord>>,
    /// Wall time spent in calls since it was last taken.
    wall: Mutex<Duration>,
}

impl<'l> Recorder<'l> {
    pub(super) fn new(inner: &'l dyn Llm, judge: &'l dyn Llm) -> Self {
        Self {
            inner,
            judge,
            now: Mutex::new((Purpose::Strategy, None)),
            calls: Mutex::new(Vec::new()),
            wall: Mutex::new(Duration::ZERO),
        }
    }

    /// The calls from here on are for `purpose` at call point `step`.
    pub(super) fn expect(&self, purpose: Purpose, step: Option<usize>) {
        *lock(&self.now) = (purpose, step);
    }

    /// The wall time spent in calls since the last time this was asked.
    pub(super) fn take_wall(&self) -> Duration {
        std::mem::take(&mut *lock(&self.wall))
    }

    /// The first failed call recorded, if any.
    pub(super) fn failure(&self) -> Option<CallRecord> {
        lock(&self.calls)
            .iter()
            .find(|c| c.error.is_some())
            .cloned()
    }

    /// Every call recorded.
    pub(super) fn finish(self) -> Vec<CallRecord> {
        self.calls
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Recorder<'_> {
    /// The judge, its calls recorded as [`Purpose::Judge`].
    pub(super) fn judge(&self) -> JudgeOf<'_, '_> {
        JudgeOf(self)
    }

    fn record(&self, purpose: Purpose, llm: &dyn Llm, request: &LlmRequest) -> Result<LlmResponse> {
        let step = lock(&self.now).1;
        let started = Instant::now();
        let result = llm.generate(request);
        *lock(&self.wall) += started.elapsed();
        let record = match &result {
            Ok(r) => CallRecord {
                step,
                purpose,
                model: llm.model().to_owned(),
                request_hash: r.meta.request_hash.clone(),
                status: r.meta.status,
                attempts: r.meta.attempts,
                cached: r.meta.cached,
                latency_ms: r.latency_ms,
                input_tokens: r.usage.input_tokens,
                output_tokens: r.usage.output_tokens,
                estimated: r.meta.estimated,
                error: None,
                text: r.text.clone(),
            },
            Err(e) => CallRecord {
                step,
                purpose,
                model: llm.model().to_owned(),
                request_hash: None,
                status: None,
                attempts: 0,
                cached: false,
                latency_ms: started.elapsed().as_secs_f64() * 1e3,
                input_tokens: 0,
                output_tokens: 0,
                estimated: false,
                error: Some(match e {
                    crate::error::Error::Llm(message) => message.clone(),
                    other => other.to_string(),
                }),
                text: String::new(),
            },
        };
        lock(&self.calls).push(record);
        result
    }
}

impl Llm for Recorder<'_> {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        let purpose = lock(&self.now).0;
        self.record(purpose, self.inner, request)
    }

    fn start_episode(&self, hint: &EpisodeHint<'_>) {
        self.inner.start_episode(hint);
    }
}

/// The judge as seen through a [`Recorder`].
pub(super) struct JudgeOf<'r, 'l>(&'r Recorder<'l>);

impl Llm for JudgeOf<'_, '_> {
    fn model(&self) -> &str {
        self.0.judge.model()
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        self.0.record(Purpose::Judge, self.0.judge, request)
    }
}
