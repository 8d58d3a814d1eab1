//! A stand-in for an OpenAI-compatible endpoint on 127.0.0.1: every chat completion answered after a fixed
//! latency, an optional share of first attempts answered 429 with a wait, and a log of when each request
//! arrived and left, from which the requests in flight are measured as the endpoint sees them.
//!
//! Written on tokio with HTTP/1.1 by hand (keep-alive, `Content-Length` bodies: what the client sends), so that
//! it costs little CPU next to the run it serves on the same cores, and waits precisely. Its answers are
//! a function of the request body alone (the text, the usage, and whether the first attempt is refused), so
//! that runs with and without 429s get the same answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the stand-in answers.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The time from a request's last byte read to its answer's first byte written.
    pub latency: Duration,
    /// The share of distinct requests whose first attempt is answered 429 (at once), in 0..=1.
    pub refused: f64,
    /// The wait a 429 asks for, as `retry-after-ms`.
    pub retry_after: Duration,
}

/// One request the stand-in served.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    pub arrived: Instant,
    pub left: Instant,
    pub status: u16,
    /// The client's preflight check ("Reply with the word OK.").
    pub preflight: bool,
    /// The first request of its connection: when the connection was accepted (a later request of the same
    /// connection reuses it).
    pub accepted: Option<Instant>,
}

/// A running stand-in: its base URL, and what it served.
pub struct StandIn {
    pub url: String,
    log: Arc<Mutex<Vec<Served>>>,
    _runtime: tokio::runtime::Runtime,
}

impl StandIn {
    /// Starts a stand-in answering as `settings` say, on a free port of 127.0.0.1.
    pub fn start(settings: Settings) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("stand-in")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = Arc::new(State {
            settings,
            log: Arc::clone(&log),
            attempts: Mutex::new(HashMap::new()),
        });
        runtime.spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, Instant::now(), Arc::clone(&state)));
            }
        });
        Ok(Self {
            url,
            log,
            _runtime: runtime,
        })
    }

    /// What it served so far, in the order requests left.
    pub fn served(&self) -> Vec<Served> {
        self.log.lock().unwrap().clone()
    }
}

struct State {
    settings: Settings,
    log: Arc<Mutex<Vec<Served>>>,
    /// Attempts seen per request body (by hash).
    attempts: Mutex<HashMap<u64, u32>>,
}

/// Serves the requests of one connection, one after the other (HTTP/1.1 keep-alive).
async fn serve(mut stream: TcpStream, accepted: Instant, state: Arc<State>) {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut accepted = Some(accepted);
    loop {
        let Some((head, body_at, length)) = read_head(&mut stream, &mut buf).await else {
            return;
        };
        while buf.len() < body_at + length {
            let mut chunk = [0u8; 64 * 1024];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let arrived = Instant::now();
        let body = &buf[body_at..body_at + length];
        let (status, response) = answer(&state, &head, body).await;
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
        state.log.lock().unwrap().push(Served {
            arrived,
            left: Instant::now(),
            status,
            preflight: contains(body, b"Reply with the word OK."),
            accepted: accepted.take(),
        });
        buf.drain(..body_at + length);
    }
}

/// Reads up to the end of a request's head: the head, where the body starts, and its `Content-Length`.
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, usize, usize)> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.trim()
                        .eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            return Some((head, end + 4, length));
        }
        let mut chunk = [0u8; 16 * 1024];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// FNV-1a: the request's identity, stable across runs.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The response to one request: a 429 at once for the first attempt of a refused request, else a chat
/// completion after the latency.
async fn answer(state: &State, head: &str, body: &[u8]) -> (u16, String) {
    if !head.starts_with("POST ") || !head.contains("/chat/completions") {
        return (404, response(404, "Not Found", "", "{}"));
    }
    let id = hash(body);
    let attempt = {
        let mut attempts = state.attempts.lock().unwrap();
        let n = attempts.entry(id).or_insert(0);
        *n += 1;
        *n
    };
    #[allow(clippy::cast_precision_loss)]
    let refused = (id % 10_000) as f64 / 10_000.0 < state.settings.refused;
    if refused && attempt == 1 {
        let wait = format!(
            "retry-after-ms: {}\r\n",
            state.settings.retry_after.as_millis()
        );
        let error = r#"{"error":{"message":"rate limited","type":"rate_limit_error"}}"#;
        return (429, response(429, "Too Many Requests", &wait, error));
    }
    tokio::time::sleep(state.settings.latency).await;
    let text = format!(
        "Stand-in answer {:016x}: the failing test is test_leap in tests/test_dates.py, and the fix is in \
         src/dates.py.",
        id
    );
    let completion = format!(
        r#"{{"id":"chatcmpl-{id:x}","object":"chat.completion","model":"stand-in","choices":[{{"index":0,"message":{{"role":"assistant","content":"{text}"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{}}}}}"#,
        body.len() / 4,
        text.split_whitespace().count(),
        body.len() / 4 + text.split_whitespace().count()
    );
    (200, response(200, "OK", "", &completion))
}

fn response(status: u16, reason: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{headers}\r\n{body}",
        body.len()
    )
}

/// Requests in flight at the endpoint on average, over the span from the first request's arrival to the
/// last one's answer, and that span: of every request, or of those that are not the preflight check.
pub fn occupancy(served: &[Served], preflight: bool) -> Option<(f64, Duration)> {
    let kept: Vec<&Served> = served
        .iter()
        .filter(|s| preflight || !s.preflight)
        .collect();
    let first = kept.iter().map(|s| s.arrived).min()?;
    let last = kept.iter().map(|s| s.left).max()?;
    let span = last - first;
    let busy: f64 = kept
        .iter()
        .map(|s| (s.left - s.arrived).as_secs_f64())
        .sum();
    (span > Duration::ZERO).then(|| (busy / span.as_secs_f64(), span))
}
