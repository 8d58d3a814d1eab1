//! An [`Llm`] for any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, llama.cpp's server, Ollama,
//! OpenRouter.
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
//!   (10 s) doubling to 60 s, long enough for a per-minute limit. Other 4xx (a refused key, an unknown model) are not retried. After the last
//!   attempt the error names the endpoint, the status and the start of the body.
//! - Identical requests are sent once: a request already answered or in flight in this run waits for that
//!   answer. Responses are cached on disk by a SHA-256 of the endpoint and the request, so a re-run costs
//!   nothing and gives the same results; entries are written atomically. `use_cache = false` bypasses the
//!   disk cache (not the in-run sharing).
//! - Usage tokens come from the response's `usage`; a response without it is counted with the tokenizer and
//!   marked estimated, never 0. Latency is measured per call (a cached answer reports the latency of the call
//!   that filled it).
//! - With a budget ([`OpenAiLlm::with_budget`]), a call that could take the spend past it is not sent.
//! - Assistant turns go out as one message each: its text (and reasoning) as `content` — an empty string, not
//!   `null`, when there is none — and its tool calls as `tool_calls`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::pricing::Price;
use super::{CallMeta, Llm, LlmRequest, LlmResponse, Usage};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::tokens::Tokenizer;

/// Settings of an OpenAI-compatible endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Base URL, up to and including `/v1`.
    pub base_url: String,
    /// Model name sent with every request (and priced).
    pub model: String,
    /// Environment variable holding the API key; must be set unless this is empty (a key-less local server).
    pub api_key_env: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// Most completion tokens per call.
    pub max_tokens: Option<u32>,
    /// Requests in flight at once.
    pub max_concurrency: usize,
    /// Requests started per minute; 0 = unlimited.
    pub requests_per_minute: u32,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff, in milliseconds (doubled per attempt, with jitter).
    pub backoff_ms: u64,
    /// First backoff after a 429 that names no wait, in seconds (doubled per attempt, at most 60 s): long
    /// enough that a per-minute limit has room again within the retries.
    pub rate_limit_backoff_s: f64,
    /// Timeout of one attempt, in seconds.
    pub timeout_s: f64,
    /// Response cache directory.
    pub cache_dir: PathBuf,
    /// Read and fill the cache.
    pub use_cache: bool,
    /// Check endpoint, model and key with one small request before the first request the cache cannot
    /// answer.
    pub preflight: bool,
    /// The `response_format` asked for: for a judge whose model strays from the JSON it is asked for.
    pub response_format: ResponseFormat,
}

/// The `response_format` of a request. The schema ones constrain the reply to the client's schema (the judge's
/// grades, [`OpenAiLlm::with_schema`]); a client without one asks for a JSON object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// None: the server's default, text.
    #[default]
    Text,
    /// `{"type": "json_object"}`: any JSON object (OpenAI, vLLM, llama.cpp).
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`: OpenAI's structured
    /// outputs, also vLLM's.
    JsonSchema,
    /// `{"type": "json_object", "schema": …}`: llama-cpp-python's server, which turns the schema into a
    /// grammar.
    JsonObjectSchema,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            temperature: 0.0,
            max_tokens: None,
            max_concurrency: 4,
            requests_per_minute: 0,
            max_retries: 5,
            backoff_ms: 500,
            rate_limit_backoff_s: 10.0,
            timeout_s: 120.0,
            cache_dir: PathBuf::from(".ctxbench-cache"),
            use_cache: true,
            preflight: true,
            response_format: ResponseFormat::Text,
        }
    }
}

/// A counting semaphore and a start-spacing limiter, shared by the rayon workers; it also measures how many
/// requests were in flight over time.
struct Limits {
    in_flight: Mutex<usize>,
    /// (time-weighted in-flight sum in seconds, when the count last changed, when the first request started).
    occupancy: Mutex<(f64, Option<Instant>, Option<Instant>)>,
    freed: Condvar,
    max: usize,
    next_start: Mutex<Instant>,
    spacing: Option<Duration>,
}

impl Limits {
    fn acquire(&self) {
        let mut n = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n >= self.max {
            n = self
                .freed
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        self.note(*n);
        *n += 1;
        drop(n);
        if let Some(spacing) = self.spacing {
            let wait = {
                let mut next = self
                    .next_start
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let now = Instant::now();
                let start = (*next).max(now);
                *next = start + spacing;
                start - now
            };
            std::thread::sleep(wait);
        }
    }

    /// Adds the time since the count last changed, at `n` in flight.
    fn note(&self, n: usize) {
        let mut o = self
            .occupancy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if let Some(last) = o.1 {
            #[allow(clippy::cast_precision_loss)]
            let weighted = (now - last).as_secs_f64() * n as f64;
            o.0 += weighted;
        }
        o.1 = Some(now);
        o.2.get_or_insert(now);
    }

    /// The mean requests in flight from the first start to the last end.
    fn mean_in_flight(&self) -> Option<f64> {
        let o = self
            .occupancy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let span = (o.1? - o.2?).as_secs_f64();
        (span > 0.0).then(|| o.0 / span)
    }

    fn release(&self) {
        let mut n = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.note(*n);
        *n -= 1;
        self.freed.notify_one();
    }
}

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

/// The most a run may spend, shared by its clients (the model's and the judge's), and what they spent.
#[derive(Debug, Default)]
pub struct Budget {
    /// The most USD to spend.
    pub max_usd: f64,
    spent: Mutex<f64>,
}

impl Budget {
    /// A budget of `max_usd`.
    #[must_use]
    pub fn new(max_usd: f64) -> Arc<Self> {
        Arc::new(Self {
            max_usd,
            spent: Mutex::new(0.0),
        })
    }

    /// What the clients spent so far.
    #[must_use]
    pub fn spent(&self) -> f64 {
        *self
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, usd: f64) {
        *self
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += usd;
    }
}

/// One request of this run, done or in flight: later identical requests wait for its answer.
#[derive(Default)]
struct Flight {
    answer: Mutex<Option<std::result::Result<LlmResponse, String>>>,
    done: Condvar,
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
    flights: Mutex<HashMap<String, Arc<Flight>>>,
    stats: Mutex<LlmStats>,
    /// The preflight check's outcome, once it ran.
    checked: std::sync::OnceLock<std::result::Result<(), String>>,
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

/// A cached answer.
#[derive(Serialize, Deserialize)]
struct Cached {
    text: String,
    input_tokens: u64,
    output_tokens: u64,
    latency_ms: f64,
    #[serde(default)]
    estimated: bool,
}

/// Why one attempt failed, and whether another may succeed.
struct Failure {
    retry: bool,
    status: Option<u16>,
    retry_after: Option<Duration>,
    message: String,
}

/// What one successful attempt brought back.
struct Answer {
    text: String,
    usage: Option<Usage>,
    status: u16,
}

/// The wait a response asks for before a retry: `retry-after-ms`, `Retry-After` (seconds or an HTTP date) or
/// LiteLLM's `llm_provider-retry-after`, at most 10 minutes.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |v: &str| v.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
    let wait = get("retry-after-ms")
        .and_then(seconds)
        .map(|ms| ms / 1000.0)
        .or_else(|| {
            get("retry-after").and_then(|v| {
                seconds(v).or_else(|| {
                    let at = httpdate::parse_http_date(v).ok()?;
                    Some(
                        at.duration_since(std::time::SystemTime::now())
                            .map_or(0.0, |d| d.as_secs_f64()),
                    )
                })
            })
        })
        .or_else(|| get("llm_provider-retry-after").and_then(seconds))?;
    Some(Duration::from_secs_f64(wait.min(600.0)))
}

impl OpenAiLlm {
    /// A client for `config`, reading the key from its environment variable.
    ///
    /// # Errors
    /// When the key's variable is unset, the HTTP client cannot be built or a limit is zero.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        if config.max_concurrency == 0 {
            return Err(Error::Config("llm max_concurrency must be above 0".into()));
        }
        if config.timeout_s.is_nan() || config.timeout_s <= 0.0 {
            return Err(Error::Config("llm timeout_s must be above 0".into()));
        }
        if !config.rate_limit_backoff_s.is_finite() || config.rate_limit_backoff_s < 0.0 {
            return Err(Error::Config(
                "llm rate_limit_backoff_s must be a number of seconds, 0 or more".into(),
            ));
        }
        let api_key = if config.api_key_env.is_empty() {
            None
        } else {
            Some(
                std::env::var(&config.api_key_env)
                    .ok()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| {
                        Error::Config(format!(
                            "the API key variable {} is not set: export it, or set `api_key_env = \"\"` in \
                             [llm] for a server that needs no key",
                            config.api_key_env
                        ))
                    })?,
            )
        };
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs_f64(config.timeout_s))
            .build()
            .map_err(|e| Error::Llm(format!("cannot build the HTTP client: {e}")))?;
        if config.use_cache {
            // Created once here, not before every write; a cache that cannot be written is skipped.
            let _ = std::fs::create_dir_all(&config.cache_dir);
        }
        let spacing = (config.requests_per_minute > 0)
            .then(|| Duration::from_secs_f64(60.0 / f64::from(config.requests_per_minute)));
        Ok(Self {
            limits: Limits {
                in_flight: Mutex::new(0),
                occupancy: Mutex::new((0.0, None, None)),
                freed: Condvar::new(),
                max: config.max_concurrency,
                next_start: Mutex::new(Instant::now()),
                spacing,
            },
            stats: Mutex::new(LlmStats {
                max_concurrency: config.max_concurrency,
                ..LlmStats::default()
            }),
            config,
            api_key,
            http,
            tokenizer: None,
            budget: None,
            price: None,
            flights: Mutex::new(HashMap::new()),
            checked: std::sync::OnceLock::new(),
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
        self.config.use_cache
            && std::fs::read_dir(&self.config.cache_dir).is_ok_and(|mut d| {
                d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
            })
    }

    /// Counts the usage of responses that report none with `tokenizer`.
    #[must_use]
    pub fn with_tokenizer(mut self, tokenizer: Arc<Tokenizer>) -> Self {
        self.tokenizer = Some(tokenizer);
        self
    }

    /// Prices the calls with `price` (to report the spend), and with `budget` sends no call that could take
    /// the run's spend past it (its input tokens, and `max_tokens` or 1,000 output tokens, at the uncached
    /// price); a budget needs a price.
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
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        s.mean_in_flight = self.limits.mean_in_flight();
        s
    }

    fn count(&self, f: impl FnOnce(&mut LlmStats)) {
        f(&mut self
            .stats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    /// The request's messages: instructions as system messages; each assistant turn (its text, reasoning and
    /// tool calls) as one assistant message; tool results as `tool` messages; observations as user messages.
    fn messages(req: &LlmRequest) -> Vec<Value> {
        let mut messages: Vec<Value> = req
            .instructions
            .iter()
            .map(|s| json!({"role": "system", "content": s}))
            .collect();
        // The assistant message being built: (content, tool calls).
        let mut turn: Option<(String, Vec<Value>)> = None;
        let flush = |turn: &mut Option<(String, Vec<Value>)>, messages: &mut Vec<Value>| {
            if let Some((content, calls)) = turn.take() {
                let mut m = json!({"role": Role::Assistant.as_str(), "content": content});
                if !calls.is_empty() {
                    m["tool_calls"] = Value::Array(calls);
                }
                messages.push(m);
            }
        };
        for item in &req.contents {
            match item {
                Item::Message {
                    role: Role::Assistant,
                    content,
                }
                | Item::Reasoning { content, .. } => {
                    let (text, calls) = turn.get_or_insert_with(Default::default);
                    if !calls.is_empty() {
                        // Text after tool calls starts another turn.
                        flush(&mut turn, &mut messages);
                        turn = Some((content.to_string(), Vec::new()));
                    } else {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(content);
                    }
                }
                Item::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    turn.get_or_insert_with(Default::default).1.push(json!({
                        "id": id, "type": "function", "function": {"name": name, "arguments": arguments}
                    }));
                }
                other => {
                    flush(&mut turn, &mut messages);
                    messages.push(match other {
                        Item::Message { role, content } => {
                            json!({"role": role.as_str(), "content": content})
                        }
                        Item::ToolResult {
                            call_id, content, ..
                        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
                        Item::Observation { content, .. } => {
                            json!({"role": "user", "content": content})
                        }
                        _ => unreachable!("assistant turns are handled above"),
                    });
                }
            }
        }
        flush(&mut turn, &mut messages);
        messages
    }

    /// The request body.
    fn body(&self, req: &LlmRequest) -> Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": Self::messages(req),
            "temperature": self.config.temperature,
        });
        if let Some(max) = self.config.max_tokens {
            body["max_tokens"] = json!(max);
        }
        let format = match (self.config.response_format, &self.schema) {
            (ResponseFormat::Text, _) => None,
            (ResponseFormat::JsonSchema, Some((name, schema))) => Some(json!({
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": true},
            })),
            (ResponseFormat::JsonObjectSchema, Some((_, schema))) => {
                Some(json!({"type": "json_object", "schema": schema}))
            }
            _ => Some(json!({"type": "json_object"})),
        };
        if let Some(format) = format {
            body["response_format"] = format;
        }
        body
    }

    fn attempt(&self, body: &str) -> std::result::Result<Answer, Failure> {
        let mut request = self
            .http
            .post(self.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_owned());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        self.count(|s| s.sent += 1);
        let response = request.send().map_err(|e| Failure {
            retry: e.is_timeout() || e.is_connect() || e.is_request(),
            status: None,
            retry_after: None,
            // reqwest's error names the URL, never the headers.
            message: if e.is_timeout() {
                format!("timed out after {} s", self.config.timeout_s)
            } else if e.is_connect() {
                format!(
                    "cannot connect ({e}): is the server running at {}?",
                    self.config.base_url
                )
            } else {
                format!("request failed: {e}")
            },
        })?;
        let status = response.status();
        let wait = retry_after(response.headers());
        let text = response.text().map_err(|e| Failure {
            retry: true,
            status: Some(status.as_u16()),
            retry_after: None,
            message: format!("cannot read the response: {e}"),
        })?;
        if !status.is_success() {
            let advice = match status.as_u16() {
                401 | 403 => format!(
                    " (the key was refused: check the key in {}, or set `api_key_env = \"\"` for a server \
                     that needs none)",
                    if self.config.api_key_env.is_empty() {
                        "(none: api_key_env is empty)"
                    } else {
                        &self.config.api_key_env
                    }
                ),
                404 => " (no such route or model: base_url should end in /v1, and the model must be one the \
                        server serves)"
                    .to_owned(),
                _ => String::new(),
            };
            return Err(Failure {
                retry: status.as_u16() == 429 || status.is_server_error(),
                status: Some(status.as_u16()),
                retry_after: wait,
                message: format!("HTTP {status}: {}{advice}", snippet(&text)),
            });
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| Failure {
            retry: false,
            status: Some(status.as_u16()),
            retry_after: None,
            message: format!("the response is not JSON ({e}): {}", snippet(&text)),
        })?;
        let content = value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure {
                retry: false,
                status: Some(status.as_u16()),
                retry_after: None,
                message: format!(
                    "the response has no choices[0].message.content: {}",
                    snippet(&text)
                ),
            })?;
        let n = |p: &str| value.pointer(p).and_then(Value::as_u64);
        let usage = n("/usage/prompt_tokens")
            .zip(n("/usage/completion_tokens"))
            .map(|(input_tokens, output_tokens)| Usage {
                input_tokens,
                output_tokens,
            });
        Ok(Answer {
            text: content.to_owned(),
            usage,
            status: status.as_u16(),
        })
    }

    /// The backoff before retry `n` (1-based): exponential, with jitter derived from the request, so that
    /// concurrent workers spread out while a run stays reproducible. A 429 that named no wait backs off at
    /// least `rate_limit_backoff_s`, doubling to 60 s: a per-minute limit has room again within the retries.
    fn backoff(&self, n: u32, seed: &[u8], status: Option<u16>) -> Duration {
        let base = self
            .config
            .backoff_ms
            .saturating_mul(1 << n.min(16).saturating_sub(1));
        let jitter =
            u64::from(seed.first().copied().unwrap_or(0) ^ u8::try_from(n % 256).unwrap_or(0));
        let wait = Duration::from_millis(base + base * jitter / 512);
        if status == Some(429) {
            let first = self.config.rate_limit_backoff_s.max(0.0);
            let floor =
                (first * f64::from(1u32 << n.min(6).saturating_sub(1))).min(60.0_f64.max(first));
            wait.max(Duration::from_secs_f64(floor))
        } else {
            wait
        }
    }

    /// Checks endpoint, model and key with one small request, uncached (see [`OpenAiLlm::preflight_once`]).
    ///
    /// # Errors
    /// Names the endpoint, the status or socket error, and what to do.
    pub fn preflight(&self) -> Result<()> {
        let req = LlmRequest::from_contents(vec![Item::user("Reply with the word OK.")]);
        let mut body = self.body(&req);
        body["max_tokens"] = json!(8);
        // OpenAI refuses JSON mode for a prompt that does not ask for JSON: the check asks for a word.
        if let Some(fields) = body.as_object_mut() {
            fields.remove("response_format");
        }
        let body = body.to_string();
        // A rate limit or a server error may pass; a refused key, an unknown model or nothing listening
        // will not.
        let mut attempt = 0;
        let outcome = loop {
            self.limits.acquire();
            let result = self.attempt(&body);
            self.limits.release();
            match result {
                Err(f) if f.retry && f.status.is_some() && attempt < self.config.max_retries => {
                    attempt += 1;
                    self.count(|s| s.retries += 1);
                    std::thread::sleep(
                        f.retry_after
                            .unwrap_or_else(|| self.backoff(attempt, body.as_bytes(), f.status)),
                    );
                }
                other => break other,
            }
        };
        outcome.map(|_| ()).map_err(|f| {
            Error::Llm(format!(
                "the preflight request to {} (model {}) failed: {} — nothing was run: fix the [llm] settings \
                 (base_url, model, api_key_env) or start the server, then run again",
                self.endpoint(),
                self.config.model,
                f.message
            ))
        })
    }

    /// Sends `req`, from the cache when it holds the answer, and once for identical requests of this run.
    ///
    /// # Errors
    /// After the last retry, at once for an answer that retrying cannot fix, or when the call could take the
    /// spend past the budget.
    pub fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        // Serialized once: the same text is hashed (cache key, backoff jitter) and sent on every attempt.
        let body = self.body(req).to_string();
        let digest = Sha256::digest(format!("{}\n{body}", self.config.base_url).as_bytes());
        let key = format!("{digest:x}");
        self.count(|s| s.calls += 1);
        let (flight, first) = {
            let mut flights = self
                .flights
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match flights.get(&key) {
                Some(f) => (Arc::clone(f), false),
                None => {
                    let f = Arc::new(Flight::default());
                    flights.insert(key.clone(), Arc::clone(&f));
                    (f, true)
                }
            }
        };
        if !first {
            let mut answer = flight
                .answer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            while answer.is_none() {
                answer = flight
                    .done
                    .wait(answer)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            self.count(|s| s.shared += 1);
            return match answer.as_ref() {
                Some(Ok(r)) => Ok(LlmResponse {
                    meta: CallMeta {
                        attempts: 0,
                        ..r.meta.clone()
                    },
                    ..r.clone()
                }),
                Some(Err(e)) => Err(Error::Llm(e.clone())),
                None => unreachable!("waited until answered"),
            };
        }
        self.count(|s| s.unique += 1);
        let result = self.send(req, &body, &digest, &key);
        if result.is_err() {
            self.count(|s| s.failed += 1);
        }
        *flight
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(match &result {
            Ok(r) => Ok(r.clone()),
            Err(Error::Llm(m)) => Err(m.clone()),
            Err(e) => Err(e.to_string()),
        });
        flight.done.notify_all();
        result
    }

    /// The first of identical requests: the disk cache, else the endpoint with retries.
    fn send(&self, req: &LlmRequest, body: &str, digest: &[u8], key: &str) -> Result<LlmResponse> {
        let path = self.config.cache_dir.join(format!("{key}.json"));
        if self.config.use_cache {
            if let Ok(bytes) = std::fs::read(&path) {
                if let Ok(c) = serde_json::from_slice::<Cached>(&bytes) {
                    self.count(|s| s.cached += 1);
                    return Ok(LlmResponse {
                        text: c.text,
                        usage: Usage {
                            input_tokens: c.input_tokens,
                            output_tokens: c.output_tokens,
                        },
                        latency_ms: c.latency_ms,
                        meta: CallMeta {
                            request_hash: Some(key.to_owned()),
                            cached: true,
                            estimated: c.estimated,
                            ..CallMeta::default()
                        },
                    });
                }
            }
        }
        // Nothing goes on the wire before the endpoint, model and key were checked.
        self.preflight_once()?;
        let input_estimate = self
            .tokenizer
            .as_ref()
            .map(|t| t.count_request(&req.instructions, &req.contents) as u64);
        if let (Some(budget), Some(price)) = (&self.budget, self.price) {
            let (spent, max) = (budget.spent(), budget.max_usd);
            let output = u64::from(self.config.max_tokens.unwrap_or(1000));
            let next = price.cost_usd_no_cache(input_estimate.unwrap_or(0), output);
            if spent + next > max {
                return Err(Error::Llm(format!(
                    "not sent: this call (about ${next:.4}) could take the spend from ${spent:.4} past \
                     --max-cost ${max:.4}"
                )));
            }
        }
        let mut attempt = 0;
        let (answer, latency_ms) = loop {
            self.limits.acquire();
            let started = Instant::now();
            let result = self.attempt(body);
            let latency_ms = started.elapsed().as_secs_f64() * 1e3;
            self.limits.release();
            match result {
                Ok(answer) => break (answer, latency_ms),
                Err(f) if f.retry && attempt < self.config.max_retries => {
                    attempt += 1;
                    self.count(|s| s.retries += 1);
                    std::thread::sleep(
                        f.retry_after
                            .unwrap_or_else(|| self.backoff(attempt, digest, f.status)),
                    );
                }
                Err(f) => {
                    return Err(Error::Llm(format!(
                        "POST {} (model {}): {} (after {} attempt{})",
                        self.endpoint(),
                        self.config.model,
                        f.message,
                        attempt + 1,
                        if attempt == 0 { "" } else { "s" }
                    )))
                }
            }
        };
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
        self.count(|s| {
            s.estimated += u64::from(estimated);
            if let Some(p) = self.price {
                let usd = p.cost_usd_no_cache(usage.input_tokens, usage.output_tokens);
                *s.spent_usd.get_or_insert(0.0) += usd;
                if let Some(b) = &self.budget {
                    b.add(usd);
                }
            }
        });
        if self.config.use_cache {
            let entry = Cached {
                text: answer.text.clone(),
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                latency_ms,
                estimated,
            };
            // A cache that cannot be written costs money on the next run, not correctness now.
            if let Ok(bytes) = serde_json::to_vec(&entry) {
                let _ = crate::files::write_atomic(&path, &bytes);
            }
        }
        Ok(LlmResponse {
            text: answer.text,
            usage,
            latency_ms,
            meta: CallMeta {
                request_hash: Some(key.to_owned()),
                status: Some(answer.status),
                attempts: attempt + 1,
                cached: false,
                estimated,
            },
        })
    }
}

/// The first 200 characters of a body, on one line.
fn snippet(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
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
