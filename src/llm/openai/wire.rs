//! What goes on the wire and what comes back: one HTTP attempt (the body it sends is [`super::body`]'s), and
//! what a response means (an answer, or a failure that retrying may or may not fix, with the wait the server
//! asked for).

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::config::OpenAiConfig;
use crate::llm::Usage;

/// Why one attempt failed, and whether another may succeed.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Failure {
    /// Another attempt may succeed (429, 5xx, a connection error, a timeout, a body cut short).
    pub retry: bool,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The wait the server asked for.
    pub retry_after: Option<Duration>,
    /// What went wrong, naming no key.
    pub message: String,
}

/// What one successful attempt brought back.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answer {
    pub text: String,
    /// The response's `usage`, when it has one.
    pub usage: Option<Usage>,
    pub status: u16,
}

/// One HTTP attempt: POSTs `body` (moved into the request, not copied) to the config's endpoint, with the key in the `Authorization` header.
pub(super) async fn attempt(
    http: &reqwest::Client,
    config: &OpenAiConfig,
    api_key: Option<&str>,
    body: String,
) -> Result<Answer, Failure> {
    let mut request = http
        .post(config.endpoint())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        // Not reqwest's reusable body, which keeps the text until the answer (to follow a redirect with it):
        // a streamed one is freed once written, not held through the endpoint's latency (64 requests in
        // flight held 36 MB of the heap's 102 MB peak, 400 generated episodes at `max_concurrency` 64). A
        // retry writes the body again; a 307 or 308 is not followed.
        .body(reqwest::Body::wrap(body));
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| Failure {
        retry: e.is_timeout() || e.is_connect() || e.is_request(),
        status: None,
        retry_after: None,
        // reqwest's error names the URL, never the headers.
        message: if e.is_timeout() {
            format!("timed out after {} s", config.timeout_s)
        } else if e.is_connect() {
            format!(
                "cannot connect ({e}): is the server running at {}?",
                config.base_url
            )
        } else {
            format!("request failed: {e}")
        },
    })?;
    let status = response.status().as_u16();
    let wait = retry_after(response.headers(), SystemTime::now());
    let text = response.text().await.map_err(|e| Failure {
        retry: true,
        status: Some(status),
        retry_after: None,
        message: format!("cannot read the response: {e}"),
    })?;
    read(status, wait, &text, &config.api_key_env)
}

/// What a response of `status` with `text` means: an answer, or a failure (retried for 429 and 5xx, waiting
/// `wait` when the server named one; a refused key, an unknown route or model, a body that is not a chat
/// completion are not).
pub(super) fn read(
    status: u16,
    wait: Option<Duration>,
    text: &str,
    api_key_env: &str,
) -> Result<Answer, Failure> {
    let failure = |retry: bool, message: String| Failure {
        retry,
        status: Some(status),
        retry_after: if retry { wait } else { None },
        message,
    };
    if !(200..300).contains(&status) {
        let advice = match status {
            401 | 403 => format!(
                " (the key was refused: check the key in {}, or set `api_key_env = \"\"` for a server that \
                 needs none)",
                if api_key_env.is_empty() {
                    "(none: api_key_env is empty)"
                } else {
                    api_key_env
                }
            ),
            404 => " (no such route or model: base_url should end in /v1, and the model must be one the server \
                    serves)"
                .to_owned(),
            _ => String::new(),
        };
        let reason = reqwest::StatusCode::from_u16(status)
            .map_or_else(|_| status.to_string(), |s| s.to_string());
        return Err(failure(
            status == 429 || (500..600).contains(&status),
            format!("HTTP {reason}: {}{advice}", snippet(text)),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        failure(
            false,
            format!("the response is not JSON ({e}): {}", snippet(text)),
        )
    })?;
    let content = value
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            failure(
                false,
                format!(
                    "the response has no choices[0].message.content: {}",
                    snippet(text)
                ),
            )
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
        status,
    })
}

/// The wait a response asks for before a retry: `retry-after-ms`, `Retry-After` (seconds or an HTTP date,
/// counted from `now`) or LiteLLM's `llm_provider-retry-after`, in that order, at most 10 minutes.
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
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
                    Some(at.duration_since(now).map_or(0.0, |d| d.as_secs_f64()))
                })
            })
        })
        .or_else(|| get("llm_provider-retry-after").and_then(seconds))?;
    Some(Duration::from_secs_f64(wait.min(600.0)))
}

/// The first 200 characters of a body, on one line.
pub(super) fn snippet(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    fn wait(pairs: &[(&str, &str)]) -> Option<Duration> {
        retry_after(&headers(pairs), SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_litellms_header() {
        assert_eq!(wait(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            wait(&[("Retry-After", " 1.5 ")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            wait(&[("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            wait(&[("llm_provider-retry-after", "7")]),
            Some(Duration::from_secs(7))
        );
        // The most precise one wins: milliseconds, then Retry-After, then LiteLLM's.
        assert_eq!(
            wait(&[
                ("retry-after", "9"),
                ("retry-after-ms", "20"),
                ("llm_provider-retry-after", "5")
            ]),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            wait(&[("retry-after", "9"), ("llm_provider-retry-after", "5")]),
            Some(Duration::from_secs(9))
        );
        // At most 10 minutes.
        assert_eq!(
            wait(&[("retry-after", "86400")]),
            Some(Duration::from_secs(600))
        );
    }

    #[test]
    fn retry_after_as_an_http_date_counts_from_now() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(42));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &later)]), now),
            Some(Duration::from_secs(42))
        );
        // A date already past: retry at once.
        let past = httpdate::fmt_http_date(now - Duration::from_secs(42));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)]), now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn a_wait_that_is_not_one_is_ignored() {
        assert_eq!(wait(&[]), None);
        for bad in ["-1", "soon", "NaN", "inf", ""] {
            assert_eq!(wait(&[("retry-after", bad)]), None, "{bad:?}");
            assert_eq!(wait(&[("retry-after-ms", bad)]), None, "{bad:?}");
        }
        // An unreadable millisecond header falls through to the next.
        assert_eq!(
            wait(&[("retry-after-ms", "x"), ("retry-after", "2")]),
            Some(Duration::from_secs(2))
        );
    }

    const OK: &str = r#"{"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#;

    #[test]
    fn an_answer_with_and_without_usage() {
        let a = read(200, None, OK, "K").unwrap();
        assert_eq!(
            (a.text.as_str(), a.status, a.usage),
            (
                "hi",
                200,
                Some(Usage {
                    input_tokens: 5,
                    output_tokens: 1
                })
            )
        );
        let bare = r#"{"choices":[{"message":{"content":"hi"}}]}"#;
        assert_eq!(read(200, None, bare, "K").unwrap().usage, None);
        // Half a usage is none: it is counted with the tokenizer.
        let half = r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":5}}"#;
        assert_eq!(read(200, None, half, "K").unwrap().usage, None);
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried_with_their_wait() {
        let wait = Some(Duration::from_secs(2));
        for status in [429, 500, 502, 503, 504, 599] {
            let f = read(status, wait, "busy", "K").unwrap_err();
            assert!(f.retry, "{status}");
            assert_eq!((f.status, f.retry_after), (Some(status), wait));
            assert!(
                f.message.starts_with(&format!("HTTP {status}")),
                "{}",
                f.message
            );
        }
        let f = read(503, None, "busy", "K").unwrap_err();
        assert!(
            f.message.contains("503 Service Unavailable: busy"),
            "{}",
            f.message
        );
    }

    #[test]
    fn refused_keys_unknown_models_and_bad_bodies_are_not_retried() {
        for status in [400, 401, 403, 404, 422] {
            let f = read(status, Some(Duration::from_secs(1)), "no", "MY_KEY").unwrap_err();
            assert!(!f.retry, "{status}");
            assert_eq!(f.retry_after, None);
        }
        let refused = read(401, None, "bad key", "MY_KEY").unwrap_err().message;
        assert!(refused.contains("check the key in MY_KEY"), "{refused}");
        let keyless = read(403, None, "", "").unwrap_err().message;
        assert!(keyless.contains("api_key_env is empty"), "{keyless}");
        let missing = read(404, None, "", "K").unwrap_err().message;
        assert!(missing.contains("base_url should end in /v1"), "{missing}");
        for body in [
            "<html>",
            r#"{"choices":[]}"#,
            r#"{"choices":[{"message":{"content":null}}]}"#,
        ] {
            let f = read(200, None, body, "K").unwrap_err();
            assert!(!f.retry && f.status == Some(200), "{body}: {f:?}");
        }
    }

    #[test]
    fn a_snippet_is_one_line_of_at_most_200_characters() {
        assert_eq!(snippet("a\n  b\tc"), "a b c");
        let long = "é".repeat(300);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), 201);
        assert!(s.ends_with('…'));
    }
}
