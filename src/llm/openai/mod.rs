//! An [`Llm`] for any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, llama.cpp's server, Ollama,
//! OpenRouter. One file per job: `config` (the settings, the key), `wire` (the request body, one HTTP attempt,
//! what a response means, `Retry-After`), `retry` (the one retry loop and its backoff), `limits` (concurrency
//! and rate), `budget` (`--max-cost`), `flight` (identical requests in flight sent once) and `cache` (answers
//! on disk).
//!
//! - The API key is read from the environment variable the config names (`api_key_env`); it is sent in the
//!   `Authorization` header and nowhere else: never logged, cached or put in an error.
//! - At most `max_concurrency` requests are in flight, and at most `requests_per_minute` start per minute.
//! - The key's variable must be set, unless `api_key_env = ""` (a key-less local server): an unset one is an
//!   error before any request.
//! - [`OpenAiLlm::preflight`] checks endpoint, model and key with one small request before the first request
//!   the cache cannot answer (before anything is written, for a run with an empty cache); a fully cached
//!   re-run sends nothing.
//! - 429, 5xx, connection errors and timeouts are retried `max_retries` times with exponential backoff and
//!   jitter, waiting what the server asks (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date,
//!   LiteLLM's `llm_provider-retry-after`); a 429 that says nothing backs off `rate_limit_backoff_s`
//!   (10 s) doubling to 60 s, long enough for a per-minute limit. Other 4xx (a refused key, an unknown model)
//!   are not retried. After the last attempt the error names the endpoint, the status and the start of the
//!   body. The preflight goes through the same loop, retrying only what the server answered.
//! - Identical requests are sent once: a request in flight is waited for, one already answered in this run is
//!   read back from disk (a failed one is sent again). Responses are cached on disk by a SHA-256 of the
//!   endpoint and the request, so a re-run costs nothing and gives the same results; entries are written
//!   atomically. `use_cache = false` bypasses the config's cache: answers then go to a directory private to
//!   the run, removed after it. No answer is kept in memory once its request is done.
//! - Usage tokens come from the response's `usage`; a response without it is counted with the tokenizer and
//!   marked estimated, never 0. Latency is measured per call (a cached answer reports the latency of the call
//!   that filled it).
//! - With a budget ([`OpenAiLlm::with_budget`]), a call (the preflight too) reserves what it may cost before it
//!   is sent and settles what it cost when done; a call that could take the spend past the budget is not sent.
//! - Assistant turns go out as one message each: its text (and reasoning) as `content` — an empty string, not
//!   `null`, when there is none — and its tool calls as `tool_calls`.

mod budget;
mod cache;
mod config;
mod flight;
mod limits;
mod retry;
mod wire;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub use budget::{Budget, Reservation};
pub use config::{OpenAiConfig, ResponseFormat};

use super::pricing::Price;
use super::{CallMeta, Llm, LlmRequest, LlmResponse, Usage};
use crate::error::{Error, Result};
use crate::history::Item;
use crate::tokens::Tokenizer;
use cache::{Cache, Cached, Hit};
use flight::{Flights, Joined};
use limits::Limits;
use retry::{Outcome, Policy};
use wire::Answer;

/// What the client did over a run: requests sent and why not more.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmStats {
    /// Calls made by the replay.
    pub calls: u64,
    /// Distinct requests among them.
    pub unique: u64,
    /// Calls answered from the disk cache.
    pub cached: u64,
    /// Calls answered by an identical request of this run (done or in flight).
    pub shared: u64,
    /// HTTP requests sent (attempts, retries included).
    pub sent: u64,
    /// Of those, retries.
    pub retries: u64,
    /// Calls that failed after their retries.
    pub failed: u64,
    /// Responses without usage, counted with the tokenizer.
    pub estimated: u64,
    /// Requests in flight on average while any was, and the limit.
    pub mean_in_flight: Option<f64>,
    /// The concurrency limit.
    pub max_concurrency: usize,
    /// USD spent on the calls sent, when the model is priced.
    pub spent_usd: Option<f64>,
}

/// The client; see the module docs.
pub struct OpenAiLlm {
    config: OpenAiConfig,
    api_key: Option<String>,
    http: reqwest::blocking::Client,
    limits: Limits,
    tokenizer: Option<Arc<Tokenizer>>,
    /// The run's budget, shared with its other clients.
    budget: Option<Arc<Budget>>,
    /// The price, to report the spend, when known.
    price: Option<Price>,
    flights: Flights,
    cache: Cache,
    stats: Mutex<LlmStats>,
    /// The preflight check's outcome, once it ran.
    checked: OnceLock<std::result::Result<(), String>>,
    /// The name and JSON schema replies must follow, for the schema response formats.
    schema: Option<(String, Value)>,
}

impl std::fmt::Debug for OpenAiLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed, not even in debug output.
        f.debug_struct("OpenAiLlm")
            .field("base_url", &self.config.base_url)
            .field("model", &self.config.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish_non_exhaustive()
    }
}

impl OpenAiLlm {
    /// A client for `config`, reading the key from its environment variable.
    ///
    /// # Errors
    /// When the key's variable is unset, the HTTP client cannot be built or a limit is zero.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        config.validate()?;
        let api_key = config.api_key()?;
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs_f64(config.timeout_s))
            .build()
            .map_err(|e| Error::Llm(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            limits: Limits::new(config.max_concurrency, config.requests_per_minute),
            stats: Mutex::new(LlmStats {
                max_concurrency: config.max_concurrency,
                ..LlmStats::default()
            }),
            cache: Cache::new(&config),
            config,
            api_key,
            http,
            tokenizer: None,
            budget: None,
            price: None,
            flights: Flights::default(),
            checked: OnceLock::new(),
            schema: None,
        })
    }

    /// Runs [`OpenAiLlm::preflight`] the first time it is asked, and gives its outcome every time: the check
    /// happens before the first request the cache cannot answer, and once.
    ///
    /// # Errors
    /// As [`OpenAiLlm::preflight`].
    pub fn preflight_once(&self) -> Result<()> {
        if !self.config.preflight {
            return Ok(());
        }
        self.checked
            .get_or_init(|| {
                self.preflight().map_err(|e| match e {
                    Error::Llm(m) => m,
                    other => other.to_string(),
                })
            })
            .clone()
            .map_err(Error::Llm)
    }

    /// Whether the response cache holds any answer (a re-run may then need no request at all).
    #[must_use]
    pub fn cache_has_answers(&self) -> bool {
        self.cache.has_answers()
    }

    /// Counts the usage of responses that report none with `tokenizer`.
    #[must_use]
    pub fn with_tokenizer(mut self, tokenizer: Arc<Tokenizer>) -> Self {
        self.tokenizer = Some(tokenizer);
        self
    }

    /// Prices the calls with `price` (to report the spend), and with `budget` sends no call that could take
    /// the run's spend past it (its input tokens, and `max_tokens` or 1,000 output tokens, at the uncached
    /// price, reserved while it is in flight); a budget needs a price.
    #[must_use]
    pub fn with_budget(mut self, price: Option<Price>, budget: Option<Arc<Budget>>) -> Self {
        self.price = price;
        self.budget = budget.filter(|_| price.is_some());
        self
    }

    /// The same client, asking replies to follow `schema` (named `name`) when its `response_format` is one
    /// of the schema formats.
    #[must_use]
    pub fn with_schema(mut self, name: &str, schema: Value) -> Self {
        self.schema = Some((name.to_owned(), schema));
        self
    }

    /// What the client did so far.
    #[must_use]
    pub fn stats(&self) -> LlmStats {
        let mut s = self
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        s.mean_in_flight = self.limits.mean_in_flight();
        s
    }

    /// Distinct requests in flight now: what the single-flight map holds (nothing once every call returned).
    #[must_use]
    pub fn requests_in_flight(&self) -> usize {
        self.flights.len()
    }

    fn count(&self, f: impl FnOnce(&mut LlmStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The cache key of `body`: a SHA-256 of the endpoint and the body (also the backoff's jitter seed).
    fn digest(&self, body: &str) -> sha2::digest::Output<Sha256> {
        Sha256::digest(format!("{}\n{body}", self.config.base_url).as_bytes())
    }

    /// Sends `body` through the retry loop, counting the attempts.
    fn send_retrying(&self, body: &str, seed: &[u8], policy: Policy) -> Outcome {
        let outcome = retry::retrying(&self.config, &self.limits, policy, seed, || {
            self.count(|s| s.sent += 1);
            wire::attempt(&self.http, &self.config, self.api_key.as_deref(), body)
        });
        self.count(|s| s.retries += u64::from(outcome.attempts - 1));
        outcome
    }

    /// Reserves what a call of `input` tokens and at most `output` completion tokens may cost, with a budget.
    fn reserve(&self, input: u64, output: u64) -> Result<Option<Reservation>> {
        match (&self.budget, self.price) {
            (Some(budget), Some(price)) => budget
                .reserve(price.cost_usd_no_cache(input, output))
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

    fn input_estimate(&self, req: &LlmRequest) -> Option<u64> {
        self.tokenizer
            .as_ref()
            .map(|t| t.count_request(&req.instructions, &req.contents) as u64)
    }

    /// Checks endpoint, model and key with one small request, uncached (see [`OpenAiLlm::preflight_once`]);
    /// its cost counts against the budget.
    ///
    /// # Errors
    /// Names the endpoint, the status or socket error, and what to do.
    pub fn preflight(&self) -> Result<()> {
        const MAX_TOKENS: u32 = 8;
        let req = LlmRequest::from_contents(vec![Item::user("Reply with the word OK.")]);
        let mut body = wire::body(&self.config, self.schema.as_ref(), &req);
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
            .map_err(|e| failed(e.to_string(), "raise --max-cost"))?;
        let outcome = self.send_retrying(&body, &self.digest(&body), Policy::Preflight);
        let answer = outcome.result.map_err(|f| {
            failed(
                f.message,
                "fix the [llm] settings (base_url, model, api_key_env) or start the server, then run again",
            )
        })?;
        self.spend(&answer, input, reservation);
        Ok(())
    }

    /// Sends `req`, from the cache when it holds the answer, and once for identical requests of this run.
    ///
    /// # Errors
    /// After the last retry, at once for an answer that retrying cannot fix, or when the call could take the
    /// spend past the budget.
    pub fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        // Serialized once: the same text is hashed (cache key, backoff jitter) and sent on every attempt.
        let body = wire::body(&self.config, self.schema.as_ref(), req).to_string();
        let digest = self.digest(&body);
        let key = format!("{digest:x}");
        self.count(|s| s.calls += 1);
        let leader = match self.flights.join(&key) {
            Joined::Lead(leader) => leader,
            Joined::Wait(flight) => {
                self.count(|s| s.shared += 1);
                return flight
                    .wait()
                    .map(|r| LlmResponse {
                        meta: CallMeta {
                            attempts: 0,
                            ..r.meta
                        },
                        ..r
                    })
                    .map_err(Error::Llm);
            }
        };
        let result = match self.cache.get(&key) {
            Some(hit) => {
                self.count(|s| {
                    if hit.this_run {
                        s.shared += 1;
                    } else {
                        s.unique += 1;
                        s.cached += 1;
                    }
                });
                Ok(answered(hit, &key))
            }
            None => {
                self.count(|s| s.unique += 1);
                let sent = self.send(req, &body, &digest, &key);
                if sent.is_err() {
                    self.count(|s| s.failed += 1);
                }
                sent
            }
        };
        leader.land(match &result {
            Ok(r) => Ok(r.clone()),
            Err(Error::Llm(m)) => Err(m.clone()),
            Err(e) => Err(e.to_string()),
        });
        result
    }

    /// The first of identical requests, not on disk: the endpoint, within the budget, with retries.
    fn send(&self, req: &LlmRequest, body: &str, digest: &[u8], key: &str) -> Result<LlmResponse> {
        // Nothing goes on the wire before the endpoint, model and key were checked.
        self.preflight_once()?;
        let input = self.input_estimate(req);
        let output = u64::from(self.config.max_tokens.unwrap_or(1000));
        let reservation = self.reserve(input.unwrap_or(0), output)?;
        let Outcome {
            result,
            attempts,
            latency_ms,
        } = self.send_retrying(body, digest, Policy::Call);
        let answer = result.map_err(|f| {
            Error::Llm(format!(
                "POST {} (model {}): {} (after {attempts} attempt{})",
                self.config.endpoint(),
                self.config.model,
                f.message,
                if attempts == 1 { "" } else { "s" }
            ))
        })?;
        let (usage, estimated) = self.spend(&answer, input, reservation);
        self.cache.put(
            key,
            Cached {
                text: answer.text.clone(),
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                latency_ms,
                estimated,
                status: Some(answer.status),
                run: String::new(),
            },
        );
        Ok(LlmResponse {
            text: answer.text,
            usage,
            latency_ms,
            meta: CallMeta {
                request_hash: Some(key.to_owned()),
                status: Some(answer.status),
                attempts,
                cached: false,
                estimated,
            },
        })
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

impl Llm for OpenAiLlm {
    fn model(&self) -> &str {
        &self.config.model
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        self.complete(request)
    }
}
