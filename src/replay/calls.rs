//! Every LLM call of a replay, recorded in the order the replay makes them: what was asked for (a strategy's
//! summary, a probe's answer), how the call went and what the model said. A strategy's call is waited for; a
//! probe's and the judge's are started ([`Recorder::start`]) and take their place in the record when their
//! answer comes, so that the record is the same whenever the answers come. The replay fails an episode in
//! which a call failed, whatever the strategy made of the failure, with the first failed call in that order,
//! so a failed call never ends up inside a figure; the calls' wall time is kept apart from the strategy's own
//! compute time.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::llm::{EpisodeHint, Llm, LlmRequest, LlmResponse, Pending};

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
/// the judge too, whose calls it records the same way ([`Recorder::judge`], [`Recorder::start`]).
pub(super) struct Recorder<'l> {
    inner: &'l dyn Llm,
    judge: &'l dyn Llm,
    /// (purpose, step) of the calls about to be made.
    now: Mutex<(Purpose, Option<usize>)>,
    calls: Mutex<Slots>,
    /// Wall time spent in calls since it was last taken.
    wall: Mutex<Duration>,
}

/// The record, and what it takes to tell at once that nothing failed and nothing is pending (the mock's
/// every call point).
#[derive(Default)]
struct Slots {
    list: Vec<Slot>,
    /// Slots [`Slot::Waiting`].
    waiting: usize,
    /// The first slot of a failed call, when one is.
    failed: Option<usize>,
}

impl Slots {
    /// Puts `slot` at `i` (`len`: at the end), keeping the counts.
    fn set(&mut self, i: usize, slot: Slot) {
        if let Slot::Done(c) = &slot {
            if c.error.is_some() && self.failed.is_none_or(|f| i < f) {
                self.failed = Some(i);
            }
        }
        self.waiting += usize::from(matches!(slot, Slot::Waiting(..)));
        if i == self.list.len() {
            self.list.push(slot);
        } else {
            let old = std::mem::replace(&mut self.list[i], slot);
            self.waiting -= usize::from(matches!(old, Slot::Waiting(..)));
        }
    }

    /// Takes the slot at `i` when it is waiting (leaving a kept place until it is put back).
    fn take_waiting(&mut self, i: usize) -> Option<(Pending, Call)> {
        if !matches!(self.list[i], Slot::Waiting(..)) {
            return None;
        }
        self.waiting -= 1;
        match std::mem::replace(&mut self.list[i], Slot::Kept) {
            Slot::Waiting(pending, call) => Some((pending, call)),
            _ => None,
        }
    }
}

/// A call's place in the record.
enum Slot {
    /// Answered (or failed).
    Done(CallRecord),
    /// Started, not answered yet.
    Waiting(Pending, Call),
    /// Kept for a call made once another's answer has come (the judge's grading of a probe's answer).
    Kept,
}

/// What is recorded of a started call besides its answer.
#[derive(Clone, Copy)]
pub(super) struct Call {
    pub(super) purpose: Purpose,
    pub(super) step: Option<usize>,
}

/// A call's place in the record: its answer is read with [`Recorder::answer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ticket(usize);

impl<'l> Recorder<'l> {
    pub(super) fn new(inner: &'l dyn Llm, judge: &'l dyn Llm) -> Self {
        Self {
            inner,
            judge,
            now: Mutex::new((Purpose::Strategy, None)),
            calls: Mutex::new(Slots::default()),
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

    /// The first failed call in the record, if any has failed: the calls before it that are still pending are
    /// waited for, so that it is the same first failure whenever the answers come. A call still pending when
    /// no answered one failed is not waited for.
    pub(super) fn failure(&self) -> Option<CallRecord> {
        self.poll();
        let failed = lock(&self.calls).failed?;
        for i in 0..failed {
            self.resolve(Ticket(i), true);
        }
        let calls = lock(&self.calls);
        match calls.failed.map(|i| &calls.list[i]) {
            Some(Slot::Done(c)) => Some(c.clone()),
            _ => None,
        }
    }

    /// Every call recorded (each started one waited for; a place kept for a call never made is left out).
    pub(super) fn finish(self) -> Vec<CallRecord> {
        let n = lock(&self.calls).list.len();
        for i in 0..n {
            self.resolve(Ticket(i), true);
        }
        self.calls
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .list
            .into_iter()
            .filter_map(|s| match s {
                Slot::Done(c) => Some(c),
                _ => None,
            })
            .collect()
    }

    /// Starts a call of `call.purpose` (the judge's to the judge, others to the model) without waiting for it,
    /// in `place` when one was kept for it, else next in the record.
    pub(super) fn start(&self, call: Call, request: &LlmRequest, place: Option<Ticket>) -> Ticket {
        let llm = if call.purpose == Purpose::Judge {
            self.judge
        } else {
            self.inner
        };
        let slot = match llm.start(request).try_take() {
            Ok(result) => Slot::Done(record(call, llm.model(), &result, Duration::ZERO)),
            Err(pending) => Slot::Waiting(pending, call),
        };
        let mut calls = lock(&self.calls);
        let i = place.map_or(calls.list.len(), |Ticket(i)| i);
        calls.set(i, slot);
        Ticket(i)
    }

    /// Keeps the next place in the record for a call made later ([`Recorder::start`] with it).
    pub(super) fn keep(&self) -> Ticket {
        let mut calls = lock(&self.calls);
        let i = calls.list.len();
        calls.set(i, Slot::Kept);
        Ticket(i)
    }

    /// The answer of the call at `ticket` (its text, or its error), once it has come: waiting for it when
    /// `wait`. `None` while it has not, or for a place kept and never used.
    pub(super) fn answer(&self, ticket: Ticket, wait: bool) -> Option<Result<String, String>> {
        self.resolve(ticket, wait);
        match &lock(&self.calls).list[ticket.0] {
            Slot::Done(c) => Some(match &c.error {
                Some(e) => Err(e.clone()),
                None => Ok(c.text.clone()),
            }),
            _ => None,
        }
    }

    /// Records the answers that have come, without waiting.
    pub(super) fn poll(&self) {
        let n = {
            let calls = lock(&self.calls);
            if calls.waiting == 0 {
                return;
            }
            calls.list.len()
        };
        for i in 0..n {
            self.resolve(Ticket(i), false);
        }
    }

    /// Records the answer of the call at `ticket` when it has come (waiting for it when `wait`, with no lock
    /// held).
    fn resolve(&self, ticket: Ticket, wait: bool) {
        let Some((pending, call)) = lock(&self.calls).take_waiting(ticket.0) else {
            return;
        };
        let llm = if call.purpose == Purpose::Judge {
            self.judge
        } else {
            self.inner
        };
        let slot = if wait {
            Slot::Done(record(call, llm.model(), &pending.wait(), Duration::ZERO))
        } else {
            match pending.try_take() {
                Ok(result) => Slot::Done(record(call, llm.model(), &result, Duration::ZERO)),
                Err(pending) => Slot::Waiting(pending, call),
            }
        };
        lock(&self.calls).set(ticket.0, slot);
    }
}

/// The record of a call of `model` made for `call` that ended with `result` (`elapsed`: the time a failed
/// call took, as far as the caller saw it).
fn record(call: Call, model: &str, result: &Result<LlmResponse>, elapsed: Duration) -> CallRecord {
    let Call { purpose, step } = call;
    match result {
        Ok(r) => CallRecord {
            step,
            purpose,
            model: model.to_owned(),
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
            model: model.to_owned(),
            request_hash: None,
            status: None,
            attempts: 0,
            cached: false,
            latency_ms: elapsed.as_secs_f64() * 1e3,
            input_tokens: 0,
            output_tokens: 0,
            estimated: false,
            error: Some(match e {
                crate::error::Error::Llm(message) => message.clone(),
                other => other.to_string(),
            }),
            text: String::new(),
        },
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
        let elapsed = started.elapsed();
        *lock(&self.wall) += elapsed;
        let record = record(Call { purpose, step }, llm.model(), &result, elapsed);
        let mut calls = lock(&self.calls);
        let i = calls.list.len();
        calls.set(i, Slot::Done(record));
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
