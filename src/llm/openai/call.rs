//! One call, from the replay's thread to the endpoint and back: what the calling thread does (the body, its
//! hash, the identical request in flight, the cache, the backlog) and what the task does (the preflight, the
//! budget, the retry loop, the answer on disk), and the preflight check itself.

use std::sync::{Arc, PoisonError};

use serde_json::json;
use sha2::Sha256;
use tokio::sync::oneshot;

use super::body::{self, Hashing, Out};
use super::budget::Reservation;
use super::cache::{Cached, Hit};
use super::flight::{Joined, Leader};
use super::limits::Priority;
use super::retry::{self, Outcome, Policy};
use super::wire::{self, Answer};
use super::{Client, LlmStats};
use crate::error::{Error, Result};
use crate::history::Item;
use crate::llm::{CallMeta, LlmRequest, LlmResponse, Pending, Usage};

/// A call sent by a task: what the calling thread computed of it, and the request, whose body is written
/// again for each attempt: a started call waiting for its place holds the request's items (shared texts), not
/// the body (the whole context as JSON, 140 KB on average on the bundled run), which held 97 of the 163 MB of
/// heap at the peak of a run of 200 generated episodes at `max_concurrency` 64.
struct Outgoing {
    request: LlmRequest,
    digest: sha2::digest::Output<Sha256>,
    /// The body's length in bytes.
    len: usize,
    key: String,
    input: Option<u64>,
    priority: Priority,
}

/// Gives a backlog place back when the task that held it ends, however it ends.
struct Backlogged(Arc<Client>);

impl Drop for Backlogged {
    fn drop(&mut self) {
        self.0.backlog.leave();
    }
}

impl Client {
    pub(super) fn count(&self, f: impl FnOnce(&mut LlmStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The cache key of `body`: a SHA-256 of the endpoint and the body (also the backoff's jitter seed).
    fn digest(&self, body: &str) -> sha2::digest::Output<Sha256> {
        let mut hashing = Hashing::new(&self.config.base_url);
        hashing.put(body.as_bytes());
        hashing.finish().0
    }

    fn input_estimate(&self, req: &LlmRequest) -> Option<u64> {
        self.tokenizer
            .as_ref()
            .map(|t| t.count_request(&req.instructions, &req.contents) as u64)
    }

    /// Starts `req`: answered at once from the disk cache, else by the identical request in flight, else sent
    /// by a task of the runtime. On the calling thread: the body, its hash and its token count (CPU work
    /// stays on the replay's thread), the cache read, and the wait for a backlog place of a call at
    /// [`Priority::Background`].
    pub(super) fn begin(self: &Arc<Self>, req: &LlmRequest, priority: Priority) -> Pending {
        // Hashed as it is written, from where an earlier request that starts alike left off (the cache key,
        // the backoff's jitter); the text is written again, the same bytes, for each attempt.
        let (digest, len) = self.keys.key(&self.config, self.schema.as_ref(), req);
        let key = format!("{digest:x}");
        self.count(|s| s.calls += 1);
        let leader = match self.flights.join(&key) {
            Joined::Lead(leader) => leader,
            Joined::Wait(flight) => {
                self.count(|s| s.shared += 1);
                let (tx, rx) = oneshot::channel();
                self.runtime.spawn(async move {
                    let shared = flight.wait().await.map(|r| LlmResponse {
                        meta: CallMeta {
                            attempts: 0,
                            ..r.meta
                        },
                        ..r
                    });
                    let _ = tx.send(shared.map_err(Error::Llm));
                });
                return Pending::later(rx);
            }
        };
        if let Some(hit) = self.cache.get(&key) {
            self.count(|s| {
                if hit.this_run {
                    s.shared += 1;
                } else {
                    s.unique += 1;
                    s.cached += 1;
                }
            });
            let response = answered(hit, &key);
            leader.land(Ok(response.clone()));
            return Pending::ready(Ok(response));
        }
        self.count(|s| s.unique += 1);
        let backlogged = (priority == Priority::Background).then(|| {
            self.backlog.enter();
            Backlogged(Arc::clone(self))
        });
        let outgoing = Outgoing {
            request: req.clone(),
            digest,
            len,
            key,
            input: self.input_estimate(req),
            priority,
        };
        let (tx, rx) = oneshot::channel();
        self.runtime
            .spawn(Arc::clone(self).sent(outgoing, leader, backlogged, tx));
        Pending::later(rx)
    }

    /// The task of a call [`Client::begin`] could not answer: sends it, puts its answer on disk, lands its
    /// flight and answers the caller, in that order: a later identical request finds the answer on disk, and
    /// nothing of the call is left in memory once the caller has it.
    async fn sent(
        self: Arc<Self>,
        call: Outgoing,
        leader: Leader,
        backlogged: Option<Backlogged>,
        answer: oneshot::Sender<Result<LlmResponse>>,
    ) {
        let key = call.key.clone();
        let result = match self.send(call).await {
            Ok((response, entry)) => {
                let writer = Arc::clone(&self);
                let _ = tokio::task::spawn_blocking(move || writer.cache.put(&key, entry)).await;
                Ok(response)
            }
            Err(e) => {
                self.count(|s| s.failed += 1);
                Err(e)
            }
        };
        leader.land(match &result {
            Ok(r) => Ok(r.clone()),
            Err(Error::Llm(m)) => Err(m.clone()),
            Err(e) => Err(e.to_string()),
        });
        drop(backlogged);
        let _ = answer.send(result);
    }

    /// The first of identical requests, not on disk: checked (the preflight, once), within the budget, with
    /// retries. Its response, and its entry for the cache.
    async fn send(&self, call: Outgoing) -> Result<(LlmResponse, Cached)> {
        // Nothing goes on the wire before the endpoint, model and key were checked.
        self.checked().await?;
        let output = u64::from(self.config.max_tokens.unwrap_or(1000));
        // Reserved before a place is asked for: a call that waits for the budget holds no place that the
        // calls holding reservations need for their retries.
        let reservation = self.reserve(call.input.unwrap_or(0), output).await?;
        let Outcome {
            result,
            attempts,
            latency_ms,
        } = self
            .send_retrying(
                || body::body_text(&self.config, self.schema.as_ref(), &call.request, call.len),
                &call.digest,
                (Policy::Call, call.priority),
            )
            .await;
        drop(call.request);
        let answer = result.map_err(|f| {
            Error::Llm(format!(
                "POST {} (model {}): {} (after {attempts} attempt{})",
                self.config.endpoint(),
                self.config.model,
                f.message,
                if attempts == 1 { "" } else { "s" }
            ))
        })?;
        let (usage, estimated) = self.spend(&answer, call.input, reservation);
        let entry = Cached {
            text: answer.text.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            latency_ms,
            estimated,
            status: Some(answer.status),
            run: String::new(),
        };
        let response = LlmResponse {
            text: answer.text,
            usage,
            latency_ms,
            meta: CallMeta {
                request_hash: Some(call.key),
                status: Some(answer.status),
                attempts,
                cached: false,
                estimated,
            },
        };
        Ok((response, entry))
    }

    /// Sends the body `body` writes through the retry loop, counting the attempts: written for each attempt
    /// (the same bytes), and moved into the request sent.
    async fn send_retrying(
        &self,
        body: impl Fn() -> String,
        seed: &[u8],
        how: (Policy, Priority),
    ) -> Outcome {
        let outcome = retry::retrying(&self.config, &self.limits, how, seed, || {
            self.count(|s| s.sent += 1);
            wire::attempt(&self.http, &self.config, self.api_key.as_deref(), body())
        })
        .await;
        self.count(|s| s.retries += u64::from(outcome.attempts - 1));
        outcome
    }

    /// Reserves what a call of `input` tokens and at most `output` completion tokens may cost, with a budget
    /// (waiting for calls in flight to settle while it would fit without what they hold).
    async fn reserve(&self, input: u64, output: u64) -> Result<Option<Reservation>> {
        match (&self.budget, self.price) {
            (Some(budget), Some(price)) => budget
                .reserve_waiting(price.cost_usd_no_cache(input, output))
                .await
                .map(Some),
            _ => Ok(None),
        }
    }

    /// The usage of `answer` (counted with the tokenizer when the response had none: estimated), its cost
    /// counted and settled against `reservation`.
    fn spend(
        &self,
        answer: &Answer,
        input_estimate: Option<u64>,
        reservation: Option<Reservation>,
    ) -> (Usage, bool) {
        let (usage, estimated) = match (answer.usage, &self.tokenizer) {
            (Some(u), _) => (u, false),
            (None, Some(t)) => (
                Usage {
                    input_tokens: input_estimate.unwrap_or(0),
                    output_tokens: t.count_text(&answer.text) as u64,
                },
                true,
            ),
            (None, None) => (Usage::default(), true),
        };
        let usd = self
            .price
            .map(|p| p.cost_usd_no_cache(usage.input_tokens, usage.output_tokens));
        self.count(|s| {
            s.estimated += u64::from(estimated);
            if let Some(usd) = usd {
                *s.spent_usd.get_or_insert(0.0) += usd;
            }
        });
        if let Some(r) = reservation {
            r.settle(usd.unwrap_or(0.0));
        }
        (usage, estimated)
    }

    /// The preflight's outcome: run the first time it is asked (when the config asks for one), and given every
    /// time after.
    pub(super) async fn checked(&self) -> Result<()> {
        if !self.config.preflight {
            return Ok(());
        }
        self.checked
            .get_or_init(|| async {
                self.preflight().await.map_err(|e| match e {
                    Error::Llm(m) => m,
                    other => other.to_string(),
                })
            })
            .await
            .clone()
            .map_err(Error::Llm)
    }

    /// Checks endpoint, model and key with one small request, uncached; its cost counts against the budget.
    pub(super) async fn preflight(&self) -> Result<()> {
        const MAX_TOKENS: u32 = 8;
        let req = LlmRequest::from_contents(vec![Item::user("Reply with the word OK.")]);
        let mut body = body::body(&self.config, self.schema.as_ref(), &req);
        body["max_tokens"] = json!(MAX_TOKENS);
        // OpenAI refuses JSON mode for a prompt that does not ask for JSON: the check asks for a word.
        if let Some(fields) = body.as_object_mut() {
            fields.remove("response_format");
        }
        let body = body.to_string();
        let failed = |why: String, advice: &str| {
            Error::Llm(format!(
                "the preflight request to {} (model {}) failed: {why} — nothing was run: {advice}",
                self.config.endpoint(),
                self.config.model,
            ))
        };
        let input = self.input_estimate(&req);
        let reservation = self
            .reserve(input.unwrap_or(0), u64::from(MAX_TOKENS))
            .await
            .map_err(|e| failed(e.to_string(), "raise --max-cost"))?;
        let outcome = self
            .send_retrying(
                || body.clone(),
                &self.digest(&body),
                (Policy::Preflight, Priority::Waited),
            )
            .await;
        let answer = outcome.result.map_err(|f| {
            failed(
                f.message,
                "fix the [llm] settings (base_url, model, api_key_env) or start the server, then run again",
            )
        })?;
        self.spend(&answer, input, reservation);
        Ok(())
    }
}

/// A response from an answer on disk: an earlier run's is `cached`; this run's is shared, as if the request
/// had waited for the identical one in flight.
fn answered(hit: Hit, key: &str) -> LlmResponse {
    let Hit { entry, this_run } = hit;
    LlmResponse {
        text: entry.text,
        usage: Usage {
            input_tokens: entry.input_tokens,
            output_tokens: entry.output_tokens,
        },
        latency_ms: entry.latency_ms,
        meta: CallMeta {
            request_hash: Some(key.to_owned()),
            status: entry.status.filter(|_| this_run),
            attempts: 0,
            cached: !this_run,
            estimated: entry.estimated,
        },
    }
}
