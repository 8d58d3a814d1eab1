//! A scripted chat-completions server on 127.0.0.1 for the client's tests: realistic answers, statuses with
//! their headers, delays, and hang-ups.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: &'static str,
    pub body: String,
    pub delay: Duration,
}

pub fn ok(text: &str) -> Reply {
    ok_with_usage(text, 57, 9)
}

/// An answer that reports `prompt` and `completion` tokens.
pub fn ok_with_usage(text: &str, prompt: u64, completion: u64) -> Reply {
    Reply {
        status: 200,
        headers: "",
        body: format!(
            r#"{{"id":"chatcmpl-1","object":"chat.completion","model":"test-model","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}}}"#,
            serde_json::to_string(text).unwrap(),
            prompt + completion
        ),
        delay: Duration::ZERO,
    }
}

pub fn status(code: u16, headers: &'static str) -> Reply {
    Reply {
        status: code,
        headers,
        body: r#"{"error":{"message":"try again","type":"server_error"}}"#.into(),
        delay: Duration::ZERO,
    }
}

/// What the server saw.
#[derive(Default)]
pub struct Seen {
    pub requests: usize,
    pub authorization: Vec<String>,
    pub bodies: Vec<String>,
}

/// Serves the scripted replies in order, then the last one forever; returns the base URL and what it saw.
pub fn server(script: Vec<Reply>) -> (String, Arc<Mutex<Seen>>) {
    server_fn(move |n, _| Some(script[n.min(script.len() - 1)].clone()))
}

/// Serves what `respond` makes of each request (its number and body); `None` hangs up without an answer, as
/// a server that was killed. Returns the base URL and what it saw.
pub fn server_fn(
    respond: impl Fn(usize, &str) -> Option<Reply> + Send + Sync + 'static,
) -> (String, Arc<Mutex<Seen>>) {
    serve(respond, true)
}

/// As [`server_fn`], keeping only the number of requests of what it saw: for tests that measure the client's
/// memory over many requests.
pub fn server_unrecorded(
    respond: impl Fn(usize, &str) -> Option<Reply> + Send + Sync + 'static,
) -> (String, Arc<Mutex<Seen>>) {
    serve(respond, false)
}

fn serve(
    respond: impl Fn(usize, &str) -> Option<Reply> + Send + Sync + 'static,
    record: bool,
) -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = Arc::clone(&seen);
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let log = Arc::clone(&log);
            let respond = Arc::clone(&respond);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                let mut auth = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if lower.starts_with("authorization:") {
                        auth = line["authorization:".len()..].trim().to_owned();
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let body = String::from_utf8_lossy(&body).into_owned();
                let n = {
                    let mut seen = log.lock().unwrap();
                    seen.requests += 1;
                    if record {
                        seen.authorization.push(auth);
                        seen.bodies.push(body.clone());
                    }
                    seen.requests - 1
                };
                let Some(reply) = respond(n, &body) else {
                    return;
                };
                std::thread::sleep(reply.delay);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}",
                    reply.status,
                    reply.body.len(),
                    reply.headers,
                    reply.body
                );
            });
        }
    });
    (url, seen)
}

/// The text and usage marks of a server reply without `usage`.
pub fn no_usage(text: &str) -> Reply {
    Reply {
        body: format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":{}}}}}]}}"#,
            serde_json::to_string(text).unwrap()
        ),
        ..ok(text)
    }
}
