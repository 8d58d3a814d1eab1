//! An [`Llm`] for any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, llama.cpp's server, Ollama,
//! OpenRouter.
//!
//! - The API key is read from the environment variable the config names (`api_key_env`); it is sent in the
//!   `Authorization` header and nowhere else: never logged, cached or put in an error.
//! - At most `max_concurrency` requests are in flight, and at most `requests_per_minute` start per minute.
//! - 429, 5xx, connection errors and timeouts are retried `max_retries` times with exponential backoff and
//!   jitter, waiting what `Retry-After` asks when the server says; after the last attempt the error names the
//!   endpoint, the status and the start of the body.
//! - Responses are cached on disk by a SHA-256 of the model, the parameters and the request, so a re-run costs
//!   nothing and gives the same results; entries are written atomically. `use_cache = false` bypasses it.
//! - Usage tokens come from the response's `usage`; latency is measured (a cached answer reports the latency
//!   of the call that filled it).

use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{Llm, LlmRequest, LlmResponse, Usage};
use crate::error::{Error, Result};
use crate::history::{Item, Role};

/// Settings of an OpenAI-compatible endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Base URL, up to and including `/v1`.
    pub base_url: String,
    /// Model name sent with every request (and priced).
    pub model: String,
    /// Environment variable holding the API key; unset or empty sends no key (local servers).
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
    /// Timeout of one attempt, in seconds.
    pub timeout_s: f64,
    /// Response cache directory.
    pub cache_dir: PathBuf,
    /// Read and fill the cache.
    pub use_cache: bool,
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
            timeout_s: 120.0,
            cache_dir: PathBuf::from(".ctxbench-cache"),
            use_cache: true,
        }
    }
}

/// A counting semaphore and a start-spacing limiter, shared by the rayon workers.
struct Limits {
    in_flight: Mutex<usize>,
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

    fn release(&self) {
        let mut n = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *n -= 1;
        self.freed.notify_one();
    }
}

/// The client; see the module docs.
pub struct OpenAiLlm {
    config: OpenAiConfig,
    api_key: Option<String>,
    http: reqwest::blocking::Client,
    limits: Limits,
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
}

/// Why one attempt failed, and whether another may succeed.
struct Failure {
    retry: bool,
    retry_after: Option<Duration>,
    message: String,
}

impl OpenAiLlm {
    /// A client for `config`, reading the key from its environment variable.
    ///
    /// # Errors
    /// When the HTTP client cannot be built or a limit is zero.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        if config.max_concurrency == 0 {
            return Err(Error::Config("llm max_concurrency must be above 0".into()));
        }
        if config.timeout_s.is_nan() || config.timeout_s <= 0.0 {
            return Err(Error::Config("llm timeout_s must be above 0".into()));
        }
        let api_key = std::env::var(&config.api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty());
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
                freed: Condvar::new(),
                max: config.max_concurrency,
                next_start: Mutex::new(Instant::now()),
                spacing,
            },
            config,
            api_key,
            http,
        })
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        )
    }

    /// The request body: instructions as system messages, tool calls and results in the chat format.
    fn body(&self, req: &LlmRequest) -> Value {
        let mut messages: Vec<Value> = req
            .instructions
            .iter()
            .map(|s| json!({"role": "system", "content": s}))
            .collect();
        for item in &req.contents {
            messages.push(match item {
                Item::Message { role, content } => json!({"role": role.as_str(), "content": content}),
                Item::ToolCall { id, name, arguments } => json!({
                    "role": Role::Assistant.as_str(),
                    "content": null,
                    "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}],
                }),
                Item::ToolResult { call_id, content, .. } => {
                    json!({"role": "tool", "tool_call_id": call_id, "content": content})
                }
                Item::Observation { content, .. } => json!({"role": "user", "content": content}),
                Item::Reasoning { content, .. } => json!({"role": "assistant", "content": content}),
            });
        }
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
        });
        if let Some(max) = self.config.max_tokens {
            body["max_tokens"] = json!(max);
        }
        body
    }

    fn attempt(&self, body: &str) -> std::result::Result<(String, Usage), Failure> {
        let mut request = self
            .http
            .post(self.endpoint())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_owned());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| Failure {
            retry: e.is_timeout() || e.is_connect() || e.is_request(),
            retry_after: None,
            // reqwest's error names the URL, never the headers.
            message: if e.is_timeout() {
                format!("timed out after {} s", self.config.timeout_s)
            } else {
                format!("request failed: {e}")
            },
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|s| Duration::from_secs_f64(s.clamp(0.0, 600.0)));
        let text = response.text().map_err(|e| Failure {
            retry: true,
            retry_after: None,
            message: format!("cannot read the response: {e}"),
        })?;
        if !status.is_success() {
            return Err(Failure {
                retry: status.as_u16() == 429 || status.is_server_error(),
                retry_after,
                message: format!("HTTP {status}: {}", snippet(&text)),
            });
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| Failure {
            retry: false,
            retry_after: None,
            message: format!("the response is not JSON ({e}): {}", snippet(&text)),
        })?;
        let content = value
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure {
                retry: false,
                retry_after: None,
                message: format!(
                    "the response has no choices[0].message.content: {}",
                    snippet(&text)
                ),
            })?;
        let usage = Usage {
            input_tokens: value
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            output_tokens: value
                .pointer("/usage/completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        };
        Ok((content.to_owned(), usage))
    }

    /// The backoff before retry `n` (1-based): exponential, with jitter derived from the request, so that
    /// concurrent workers spread out while a run stays reproducible.
    fn backoff(&self, n: u32, seed: &[u8]) -> Duration {
        let base = self
            .config
            .backoff_ms
            .saturating_mul(1 << n.min(16).saturating_sub(1));
        let jitter =
            u64::from(seed.first().copied().unwrap_or(0) ^ u8::try_from(n % 256).unwrap_or(0));
        Duration::from_millis(base + base * jitter / 512)
    }

    /// Sends `req`, from the cache when it holds the answer.
    ///
    /// # Errors
    /// After the last retry, or at once for an answer that retrying cannot fix.
    pub fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        // Serialized once: the same text is hashed (cache key, backoff jitter) and sent on every attempt.
        let body = self.body(req).to_string();
        let key = Sha256::digest(format!("{}\n{body}", self.config.base_url).as_bytes());
        let path = self.config.cache_dir.join(format!("{key:x}.json"));
        if self.config.use_cache {
            if let Ok(bytes) = std::fs::read(&path) {
                if let Ok(c) = serde_json::from_slice::<Cached>(&bytes) {
                    return Ok(LlmResponse {
                        text: c.text,
                        usage: Usage {
                            input_tokens: c.input_tokens,
                            output_tokens: c.output_tokens,
                        },
                        latency_ms: c.latency_ms,
                    });
                }
            }
        }
        let mut attempt = 0;
        let (text, usage, latency_ms) = loop {
            self.limits.acquire();
            let started = Instant::now();
            let result = self.attempt(&body);
            let latency_ms = started.elapsed().as_secs_f64() * 1e3;
            self.limits.release();
            match result {
                Ok((text, usage)) => break (text, usage, latency_ms),
                Err(f) if f.retry && attempt < self.config.max_retries => {
                    attempt += 1;
                    std::thread::sleep(
                        f.retry_after.unwrap_or_else(|| self.backoff(attempt, &key)),
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
        if self.config.use_cache {
            let entry = Cached {
                text: text.clone(),
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                latency_ms,
            };
            // A cache that cannot be written costs money on the next run, not correctness now.
            if let Ok(bytes) = serde_json::to_vec(&entry) {
                let _ = crate::files::write_atomic(&path, &bytes);
            }
        }
        Ok(LlmResponse {
            text,
            usage,
            latency_ms,
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

#[async_trait]
impl Llm for OpenAiLlm {
    fn model(&self) -> &str {
        &self.config.model
    }

    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        self.complete(request)
    }
}
