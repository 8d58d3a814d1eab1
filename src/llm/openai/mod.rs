//! An [`Llm`] for any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, llama.cpp's server, Ollama,
//! OpenRouter. One file per job: `config` (the settings, the key), `body` (the request body, written
//! without a JSON tree, into the text sent or a hash), `wire` (one HTTP attempt,
//! what a response means, `Retry-After`), `retry` (the one retry loop and its backoff), `limits` (concurrency
//! and rate), `budget` (`--max-cost`), `flight` (identical requests in flight sent once), `key` (the cache key, hashed as
//! the body is written, from where a request that starts alike left off) and `cache` (answers
//! on disk).
//!
//! - The API key is read from the environment variable the config names (`api_key_env`); it is sent in the
//!   `Authorization` header and nowhere else: never logged, cached or put in an error.
//! - Calls are tasks of one tokio runtime (two threads, whatever the concurrency): a replay waits only for
//!   the calls whose answer it needs ([`Llm::generate`]: a strategy's summary); probes and the judge's grades
//!   are started ([`Llm::start`]) and read when the episode ends. At most `max_concurrency` requests are in
//!   flight, a freed place going first to a call a replay waits for, and at most `requests_per_minute` start
//!   per minute; a thread that starts a call waits while `4 × max_concurrency` started calls hold their
//!   request (`limits`). The body, its hash and the cache read are the calling thread's work; a call the cache
//!   cannot answer keeps its request's items (shared texts), not the body, until it is sent, and its body is
//!   written again, on the runtime, for each attempt (the same bytes).
//! - The key's variable must be set, unless `api_key_env = ""` (a key-less local server): an unset one is an
//!   error before any request.
//! - [`OpenAiLlm::preflight`] checks endpoint, model and key with one small request before the first request
//!   the cache cannot answer (before anything is written, for a run with an empty cache); a fully cached
//!   re-run sends nothing.
//! - 429, 5xx, connection errors and timeouts are retried `max_retries` times with exponential backoff and
//!   jitter, waiting what the server asks (`retry-after-ms`, `Retry-After` in seconds or as an HTTP date,
//!   LiteLLM's `llm_provider-retry-after`); a 429 that says nothing backs off `rate_limit_backoff_s`
//!   (10 s) doubling to 60 s, long enough for a per-minute limit. A 429 pauses every request of the client
//!   for the wait it implies (one shared back-off, not one per request); a call keeps its place in flight over
//!   its retries, and when a pause ends the calls it refused go again before any other is sent. Other 4xx (a refused key, an unknown model)
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

mod body;
mod budget;
mod cache;
mod call;
mod config;
mod flight;
mod key;
mod limits;
mod retry;
mod wire;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use serde_json::Value;

pub use budget::{Budget, Reservation};
pub use config::{OpenAiConfig, ResponseFormat};

use super::pricing::Price;
use super::{Llm, LlmRequest, LlmResponse, Pending};
use crate::error::{Error, Result};
use crate::tokens::Tokenizer;
use cache::Cache;
use flight::Flights;
use key::Keys;
use limits::{Backlog, Limits, Priority};

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
    /// Requests on the wire on average, from the first request's start to the last one's end, as the endpoint
    /// sees them (the preflight check apart).
    pub mean_in_flight: Option<f64>,
    /// The concurrency limit.
    pub max_concurrency: usize,
    /// USD spent on the calls sent, when the model is priced.
    pub spent_usd: Option<f64>,
}

/// Started calls that may hold their request per place in flight ([`limits::Backlog`]).
const BACKLOG_PER_PLACE: usize = 4;

/// The runtime every client's calls run on: two worker threads, whatever the concurrency (they wait on
/// sockets; a run's CPU work stays on its replay workers), made once and kept for the process.
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("ctxbench-llm")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Llm(format!("cannot start the LLM client's runtime: {e}")))
}

/// The client; see the module docs.
pub struct OpenAiLlm {
    client: Arc<Client>,
}

/// What the client's calls share, with the tasks that send them.
struct Client {
    config: OpenAiConfig,
    api_key: Option<String>,
    http: reqwest::Client,
    runtime: &'static tokio::runtime::Runtime,
    limits: Limits,
    backlog: Backlog,
    tokenizer: Option<Arc<Tokenizer>>,
    /// The run's budget, shared with its other clients.
    budget: Option<Arc<Budget>>,
    /// The price, to report the spend, when known.
    price: Option<Price>,
    flights: Flights,
    /// The cache keys, and where earlier requests' hashes left off.
    keys: Keys,
    cache: Cache,
    stats: Mutex<LlmStats>,
    /// The preflight check's outcome, once it ran.
    checked: tokio::sync::OnceCell<std::result::Result<(), String>>,
    /// The name and JSON schema replies must follow, for the schema response formats.
    schema: Option<(String, Value)>,
}

impl std::fmt::Debug for OpenAiLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.client;
        // The key is never printed, not even in debug output.
        f.debug_struct("OpenAiLlm")
            .field("base_url", &c.config.base_url)
            .field("model", &c.config.model)
            .field("api_key", &c.api_key.as_ref().map(|_| "(set)"))
            .finish_non_exhaustive()
    }
}

impl OpenAiLlm {
    /// A client for `config`, reading the key from its environment variable.
    ///
    /// # Errors
    /// When the key's variable is unset, the HTTP client or its runtime cannot be built or a limit is zero.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        config.validate()?;
        let api_key = config.api_key()?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs_f64(config.timeout_s))
            .build()
            .map_err(|e| Error::Llm(format!("cannot build the HTTP client: {e}")))?;
        let client = Client {
            runtime: runtime()?,
            limits: Limits::new(config.max_concurrency, config.requests_per_minute),
            backlog: Backlog::new(config.max_concurrency.saturating_mul(BACKLOG_PER_PLACE)),
            stats: Mutex::new(LlmStats {
                max_concurrency: config.max_concurrency,
                ..LlmStats::default()
            }),
            cache: Cache::new(&config),
            keys: Keys::new(
                &config.base_url,
                config
                    .max_concurrency
                    .saturating_mul(BACKLOG_PER_PLACE)
                    .max(64),
            ),
            config,
            api_key,
            http,
            tokenizer: None,
            budget: None,
            price: None,
            flights: Flights::default(),
            checked: tokio::sync::OnceCell::new(),
            schema: None,
        };
        Ok(Self {
            client: Arc::new(client),
        })
    }

    /// Sets up the client before its first call.
    ///
    /// # Panics
    /// When a call was started: a client is set up before it is used.
    fn set_up(mut self, f: impl FnOnce(&mut Client)) -> Self {
        match Arc::get_mut(&mut self.client) {
            Some(client) => f(client),
            None => panic!("an OpenAiLlm is set up before its first call"),
        }
        self
    }

    /// Runs the preflight check the first time it is asked, and gives its outcome every time: the check
    /// happens before the first request the cache cannot answer, and once.
    ///
    /// # Errors
    /// Names the endpoint, the status or socket error, and what to do.
    pub fn preflight_once(&self) -> Result<()> {
        self.client.runtime.block_on(self.client.checked())
    }

    /// Whether the response cache holds any answer (a re-run may then need no request at all).
    #[must_use]
    pub fn cache_has_answers(&self) -> bool {
        self.client.cache.has_answers()
    }

    /// Counts the usage of responses that report none with `tokenizer`.
    ///
    /// # Panics
    /// After the client's first call.
    #[must_use]
    pub fn with_tokenizer(self, tokenizer: Arc<Tokenizer>) -> Self {
        self.set_up(|c| c.tokenizer = Some(tokenizer))
    }

    /// Prices the calls with `price` (to report the spend), and with `budget` sends no call that could take
    /// the run's spend past it (its input tokens, and `max_tokens` or 1,000 output tokens, at the uncached
    /// price, reserved while it is in flight); a budget needs a price.
    ///
    /// # Panics
    /// After the client's first call.
    #[must_use]
    pub fn with_budget(self, price: Option<Price>, budget: Option<Arc<Budget>>) -> Self {
        self.set_up(|c| {
            c.price = price;
            c.budget = budget.filter(|_| price.is_some());
        })
    }

    /// The same client, asking replies to follow `schema` (named `name`) when its `response_format` is one
    /// of the schema formats.
    ///
    /// # Panics
    /// After the client's first call.
    #[must_use]
    pub fn with_schema(self, name: &str, schema: Value) -> Self {
        self.set_up(|c| c.schema = Some((name.to_owned(), schema)))
    }

    /// What the client did so far.
    #[must_use]
    pub fn stats(&self) -> LlmStats {
        let mut s = self
            .client
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        s.mean_in_flight = self.client.limits.mean_in_flight();
        s
    }

    /// Distinct requests in flight now: what the single-flight map holds (nothing once every call returned).
    #[must_use]
    pub fn requests_in_flight(&self) -> usize {
        self.client.flights.len()
    }

    /// Sends `req` and waits for its answer, from the cache when it holds the answer, and once for identical
    /// requests of this run; a call waited for goes before the started ones.
    ///
    /// # Errors
    /// After the last retry, at once for an answer that retrying cannot fix, or when the call could take the
    /// spend past the budget.
    pub fn complete(&self, req: &LlmRequest) -> Result<LlmResponse> {
        self.client.begin(req, Priority::Waited).wait()
    }
}

impl Llm for OpenAiLlm {
    fn model(&self) -> &str {
        &self.client.config.model
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        self.complete(request)
    }

    fn start(&self, request: &LlmRequest) -> Pending {
        self.client.begin(request, Priority::Background)
    }
}
