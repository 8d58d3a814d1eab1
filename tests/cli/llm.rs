//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1, scripted per test: realistic
//! answers, 429 with Retry-After, 500s, slow answers, malformed JSON; the response cache; a whole run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctxbench::llm::openai::{OpenAiConfig, OpenAiLlm};
use ctxbench::llm::LlmRequest;
use ctxbench::Item;

use crate::{ctxbench, ctxbench_run, run_args, subset, text};

/// One scripted answer.
#[derive(Clone)]
pub(crate) struct Reply {
    status: u16,
    headers: &'static str,
    body: String,
    delay: Duration,
}

pub(crate) fn ok(text: &str) -> Reply {
    Reply {
        status: 200,
        headers: "",
        body: format!(
            r#"{{"id":"chatcmpl-1","object":"chat.completion","model":"test-model","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":57,"completion_tokens":9,"total_tokens":66}}}}"#,
            serde_json::to_string(text).unwrap()
        ),
        delay: Duration::ZERO,
    }
}

fn status(code: u16, headers: &'static str) -> Reply {
    Reply {
        status: code,
        headers,
        body: r#"{"error":{"message":"try again","type":"server_error"}}"#.into(),
        delay: Duration::ZERO,
    }
}

/// What the server saw.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) requests: usize,
    authorization: Vec<String>,
    bodies: Vec<String>,
}

/// Serves the scripted replies in order, then the last one forever; returns the base URL and what it saw.
pub(crate) fn server(script: Vec<Reply>) -> (String, Arc<Mutex<Seen>>) {
    server_fn(move |n, _| Some(script[n.min(script.len() - 1)].clone()))
}

/// Serves what `respond` makes of each request (its number and body); `None` hangs up without an answer, as
/// a server that was killed. Returns the base URL and what it saw.
fn server_fn(
    respond: impl Fn(usize, &str) -> Option<Reply> + Send + Sync + 'static,
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
                    seen.authorization.push(auth);
                    seen.bodies.push(body.clone());
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

fn client(url: &str, key_env: &str, cache: &std::path::Path) -> OpenAiConfig {
    OpenAiConfig {
        base_url: url.into(),
        model: "test-model".into(),
        api_key_env: key_env.into(),
        max_retries: 3,
        backoff_ms: 20,
        timeout_s: 5.0,
        cache_dir: cache.to_owned(),
        // The client alone, request by request: no preflight request before the first.
        preflight: false,
        ..OpenAiConfig::default()
    }
}

fn request(question: &str) -> LlmRequest {
    LlmRequest {
        instructions: vec!["You are terse.".into()],
        contents: vec![
            Item::user("Fix the build"),
            Item::tool_call("c1", "run", r#"{"cmd":"make"}"#),
            Item::tool_result("c1", "run", "error: missing header foo.h"),
            Item::user(question),
        ],
    }
}

const SECRET: &str = "sk-test-do-not-print-4242";

#[test]
fn answers_with_usage_and_honours_retry_after() {
    std::env::set_var("CTXBENCH_TEST_KEY_A", SECRET);
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server(vec![
        status(429, "Retry-After: 1\r\n"),
        ok("foo.h is missing"),
    ]);
    let llm = OpenAiLlm::new(client(&url, "CTXBENCH_TEST_KEY_A", cache.path())).unwrap();
    let started = Instant::now();
    let r = llm.complete(&request("Which header?")).unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After: 1 was honoured"
    );
    assert_eq!(r.text, "foo.h is missing");
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (57, 9));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.requests, 2);
    assert_eq!(seen.authorization[1], format!("Bearer {SECRET}"));
    // The history goes out in the chat format, tool call and result paired.
    let body: serde_json::Value = serde_json::from_str(&seen.bodies[1]).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["name"],
        "run"
    );
    // An assistant turn with only tool calls has an empty content, not null: llama-cpp-python's server
    // refuses null.
    assert_eq!(body["messages"][2]["content"], "");
    assert_eq!(body["messages"][3]["tool_call_id"], "c1");
    assert!(!format!("{llm:?}").contains(SECRET));
}

#[test]
fn gives_up_after_the_last_retry_with_a_clear_error_and_no_key() {
    std::env::set_var("CTXBENCH_TEST_KEY_B", SECRET);
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server(vec![status(500, "")]);
    let llm = OpenAiLlm::new(client(&url, "CTXBENCH_TEST_KEY_B", cache.path())).unwrap();
    let err = llm.complete(&request("q")).unwrap_err().to_string();
    assert!(
        err.contains("HTTP 500") && err.contains("after 4 attempts") && err.contains(&url),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
    assert_eq!(seen.lock().unwrap().requests, 4);
    assert_eq!(
        std::fs::read_dir(cache.path()).map_or(0, Iterator::count),
        0,
        "no failure is cached"
    );
}

#[test]
fn malformed_json_is_not_retried_and_a_slow_answer_times_out() {
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server(vec![Reply {
        body: "{\"choices\": [".into(),
        ..ok("")
    }]);
    let llm = OpenAiLlm::new(client(&url, "", cache.path())).unwrap();
    let err = llm.complete(&request("q")).unwrap_err().to_string();
    assert!(
        err.contains("not JSON") && err.contains("after 1 attempt"),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().requests, 1);
    assert_eq!(
        seen.lock().unwrap().authorization[0],
        "",
        "no key with `api_key_env = \"\"`"
    );

    let (url, seen) = server(vec![Reply {
        delay: Duration::from_secs(3),
        ..ok("late")
    }]);
    let mut config = client(&url, "", cache.path());
    config.timeout_s = 0.3;
    config.max_retries = 1;
    let err = OpenAiLlm::new(config)
        .unwrap()
        .complete(&request("q"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("timed out") && err.contains("after 2 attempts"),
        "{err}"
    );
    assert_eq!(seen.lock().unwrap().requests, 2);
}

#[test]
fn the_cache_answers_a_repeat_and_no_cache_bypasses_it() {
    std::env::set_var("CTXBENCH_TEST_KEY_C", SECRET);
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server(vec![ok("first"), ok("second")]);
    let config = client(&url, "CTXBENCH_TEST_KEY_C", cache.path());
    let llm = OpenAiLlm::new(config.clone()).unwrap();
    assert_eq!(llm.complete(&request("q")).unwrap().text, "first");
    assert_eq!(llm.complete(&request("q")).unwrap().text, "first");
    assert_eq!(
        seen.lock().unwrap().requests,
        1,
        "the repeat came from the cache"
    );
    assert_eq!(llm.complete(&request("other")).unwrap().text, "second");
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        let stored = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!stored.contains(SECRET));
    }
    let fresh = OpenAiLlm::new(OpenAiConfig {
        use_cache: false,
        ..config
    })
    .unwrap();
    fresh.complete(&request("q")).unwrap();
    assert_eq!(seen.lock().unwrap().requests, 3);
}

/// Writes `DIR/NAME.toml`: a run with a 4k window, `none` and a summarizing pipeline, whose LLM is the test
/// server at `url` with its own cache `DIR/cache-NAME`, plus `llm_extra` lines in `[llm]`.
pub(crate) fn llm_config(
    dir: &std::path::Path,
    name: &str,
    url: &str,
    llm_extra: &str,
) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "context_window = 4000\n[llm]\nbase_url = \"{url}\"\nmodel = \"test-model\"\napi_key_env = \"\"\n\
             cache_dir = \"{}\"\n{llm_extra}\
             [[strategies]]\nname = \"none\"\ntype = \"none\"\n[[strategies]]\nname = \"summarize\"\ntype = \"pipeline\"\n\
             threshold = 0.5\n[[strategies.stages]]\ntype = \"summarization\"\n",
            dir.join(format!("cache-{name}")).display()
        ),
    )
    .unwrap();
    path
}

/// A whole run with `[llm]`: strategies and probes call the server; a re-run costs no request; `--no-cache`
/// calls again.
#[test]
fn a_run_with_a_real_llm_is_served_from_the_cache_on_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 2);
    let (url, seen) = server(vec![ok("foo.h")]);
    let cfg = llm_config(dir.path(), "real", &url, "backoff_ms = 10\n");
    let run = |extra: &[&str]| {
        let out = ctxbench_run(&data, Some(&cfg), &dir.path().join("out"), extra, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let first = run(&[]);
    let calls = seen.lock().unwrap().requests;
    assert!(calls > 0, "probes and summaries went to the server");
    assert!(crate::console_row(&first, "summarize"), "{first}");
    let second = run(&[]);
    assert_eq!(
        seen.lock().unwrap().requests,
        calls,
        "the re-run sent nothing: every call came from the cache"
    );
    let table = |s: &str| {
        s.lines()
            .filter(|l| l.contains('%') && !l.contains(':'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(table(&first), table(&second));
    assert!(
        first.contains(" unknown ") && first.contains("[pricing.models.\"test-model\"]"),
        "an unpriced model's cost is unknown, never 0, and the table to add is named: {first}"
    );
    // Without the cache every call goes out (the first run may have served a few repeats from the cache).
    run(&["--no-cache"]);
    assert!(seen.lock().unwrap().requests >= 2 * calls);
}

/// A run killed midway and resumed with `--resume` repeats no finished episode and ends with the same tables
/// as a run that was never interrupted.
#[test]
fn a_killed_run_resumes_without_repeating_finished_episodes() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 8);
    let (url, seen) = server(vec![Reply {
        delay: Duration::from_millis(30),
        ..ok("foo.h")
    }]);
    let config = |name: &str| llm_config(dir.path(), name, &url, "max_concurrency = 1\n");
    let args = |cfg: &std::path::Path, out: &std::path::Path| run_args(&data, Some(cfg), out, &[]);
    // The reference: one uninterrupted run.
    let reference = dir.path().join("reference");
    let out = ctxbench(
        &args(&config("reference"), &reference)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        Some(1),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !reference.join("resume.jsonl").exists(),
        "a completed run leaves no journal"
    );

    // The same run, killed once its first batch (4 episodes) is journaled and the tables are written: at least
    // 40 probe calls of 30 ms each, so the batch ends after the run's first second, when tables are due.
    let cfg = config("killed");
    let killed = dir.path().join("killed");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxbench"))
        .args(args(&cfg, &killed))
        .current_dir(crate::root())
        .env("RAYON_NUM_THREADS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Until it completes, a run is in OUT.partial.
    let staging = dir.path().join("killed.partial");
    let journal = staging.join("resume.jsonl");
    let started = Instant::now();
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 5
        || !staging.join("summary.json").exists()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the first batch never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let summary = std::fs::read_to_string(staging.join("summary.json")).unwrap();
    assert!(summary.contains("\"complete\": false"), "{summary}");
    assert!(!killed.exists(), "an incomplete run is not swapped in");
    let finished = std::fs::read_to_string(&journal).unwrap().lines().count() - 1;
    assert!(
        (4..8).contains(&finished),
        "{finished} episodes finished before the kill"
    );

    let before = seen.lock().unwrap().requests;
    let mut resume_args = args(&cfg, &killed);
    resume_args.push("--resume".into());
    let out = ctxbench(
        &resume_args.iter().map(String::as_str).collect::<Vec<_>>(),
        Some(1),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!staging.exists() && killed.join("summary.json").exists());
    // Only the unfinished episodes called the LLM again (the reference run made the same calls for all 8).
    let reference_calls = before / 2; // the reference and the killed run each sent their own calls
    assert!(
        seen.lock().unwrap().requests - before < reference_calls,
        "finished episodes were not repeated"
    );
    // Everything but the measured latency of the real calls is the same as without the kill.
    let without_latency = |path: std::path::PathBuf| -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let skip = header.iter().position(|h| *h == "strategy_llm_ms");
        text.lines()
            .map(|l| {
                l.split(',')
                    .enumerate()
                    .filter(|(i, _)| Some(*i) != skip)
                    .map(|(_, f)| f)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    };
    for file in ["steps.csv", "episodes.csv"] {
        let (a, b) = (
            without_latency(reference.join(file)),
            without_latency(killed.join(file)),
        );
        assert_eq!(a.len(), b.len(), "{file}: row count");
        if let Some((x, y)) = a.iter().zip(&b).find(|(x, y)| x != y) {
            panic!("{file} differs from the uninterrupted run:\n{x}\n{y}");
        }
    }
    let resumed = std::fs::read_to_string(killed.join("summary.json")).unwrap();
    assert!(resumed.contains("\"complete\": true"));
    assert!(resumed.contains("\"episodes\": 8"), "{resumed}");
    // Nothing left to resume.
    let out = ctxbench(
        &resume_args.iter().map(String::as_str).collect::<Vec<_>>(),
        Some(1),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nothing to resume"),
        "{}",
        text(&out.stderr)
    );
}

/// The text and usage marks of a server reply without `usage`.
fn no_usage(text: &str) -> Reply {
    Reply {
        body: format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":{}}}}}]}}"#,
            serde_json::to_string(text).unwrap()
        ),
        ..ok(text)
    }
}

/// An unset key variable is an error before any request; a refused key stops the run at its preflight
/// request, not retried, with exit 2 and the endpoint named; a dead endpoint likewise, and nothing is written.
#[test]
fn unset_keys_refused_keys_and_dead_endpoints_stop_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 2);
    let (url, seen) = server(vec![status(401, "")]);
    let cfg = llm_config(dir.path(), "refused", &url, "");
    let keyed = std::fs::read_to_string(&cfg).unwrap().replace(
        "api_key_env = \"\"",
        "api_key_env = \"CTXBENCH_TEST_NEVER_SET\"",
    );
    std::fs::write(&cfg, keyed).unwrap();
    let out = ctxbench_run(&data, Some(&cfg), &dir.path().join("a"), &[], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("CTXBENCH_TEST_NEVER_SET is not set"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(seen.lock().unwrap().requests, 0);

    let cfg = llm_config(dir.path(), "refused", &url, "");
    let out = ctxbench_run(&data, Some(&cfg), &dir.path().join("b"), &[], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("preflight") && err.contains("401") && err.contains(&url),
        "{err}"
    );
    assert_eq!(
        seen.lock().unwrap().requests,
        1,
        "a refused key is not retried"
    );
    assert!(!dir.path().join("b").exists(), "nothing is written");

    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/v1", dead.local_addr().unwrap());
    drop(dead);
    let cfg = llm_config(dir.path(), "dead", &dead_url, "max_retries = 0\n");
    let out = ctxbench_run(&data, Some(&cfg), &dir.path().join("c"), &[], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot connect") && err.contains(&dead_url),
        "{err}"
    );
}

/// A server that goes away mid-run: the episode fails, the run stops with exit 2 and keeps its journal, and
/// `--resume` finishes it once the server is back; under `--keep-going` the failed episodes are left out,
/// named, and the run exits 1.
#[test]
fn a_server_lost_mid_run_stops_the_run_and_resume_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 6);
    let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (url, _) = {
        let (up, served) = (Arc::clone(&up), Arc::clone(&served));
        server_fn(move |_, _| {
            // Down after 40 answers, as if killed, until put back up.
            let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            (up.load(std::sync::atomic::Ordering::SeqCst) && n < 40 || n >= 1_000_000)
                .then(|| ok("foo.h"))
        })
    };
    let cfg = llm_config(
        dir.path(),
        "lost",
        &url,
        "max_retries = 1\nbackoff_ms = 5\nmax_concurrency = 1\n",
    );
    let out_dir = dir.path().join("out");
    let out = ctxbench_run(&data, Some(&cfg), &out_dir, &[], Some(1));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("call failed") && err.contains("--resume"),
        "{err}"
    );
    let staging = dir.path().join("out.partial");
    assert!(
        staging.join("resume.jsonl").exists(),
        "the journal stays for --resume"
    );
    assert!(!out_dir.exists());
    let summary = std::fs::read_to_string(staging.join("summary.json")).unwrap();
    assert!(summary.contains("\"complete\": false"), "{summary}");

    // Back up: --resume finishes the run.
    served.store(1_000_000, std::sync::atomic::Ordering::SeqCst);
    let out = ctxbench_run(&data, Some(&cfg), &out_dir, &["--resume"], Some(1));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    assert!(summary.contains("\"complete\": true") && summary.contains("\"episodes\": 6"));

    // --keep-going: the episodes whose calls fail are named and left out; exit 1.
    let (url, _) =
        server_fn(|_, body| (!body.contains("upgrading attrs to 1.2")).then(|| ok("foo.h")));
    let cfg = llm_config(dir.path(), "keep", &url, "max_retries = 0\n");
    let kept = dir.path().join("kept");
    let kept_staging = dir.path().join("kept.partial");
    let out = ctxbench_run(&data, Some(&cfg), &kept, &["--keep-going"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("left out of every figure") && stdout.contains("coding-01"),
        "{stdout}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kept_staging.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["dataset"]["episodes"], 5, "{}", summary["failed"]);
    assert_eq!(summary["failed"][0]["episode"], "coding-01");
    assert_eq!(summary["complete"], false);
    let report = std::fs::read_to_string(kept_staging.join("report.md")).unwrap();
    assert!(
        report.contains("coding-01"),
        "the report names the failed episode"
    );
    // The journal stays: --resume tries the failed episode again (here it fails again, and is named again).
    assert!(kept_staging.join("resume.jsonl").exists() && !kept.exists());
    let out = ctxbench_run(
        &data,
        Some(&cfg),
        &kept,
        &["--keep-going", "--resume"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("coding-01"));
}

/// Rate limits: LiteLLM's `llm_provider-retry-after`, an HTTP-date `Retry-After`, and a 429 that names no
/// wait (backing off `rate_limit_backoff_s`).
#[test]
fn rate_limits_are_waited_out() {
    let cache = tempfile::tempdir().unwrap();
    for (headers, extra_ms) in [
        ("llm_provider-retry-after: 1\r\n".to_owned(), 950),
        (
            format!(
                "Retry-After: {}\r\n",
                httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3))
            ),
            1000,
        ),
        (String::new(), 280),
    ] {
        let headers: &'static str = Box::leak(headers.into_boxed_str());
        let (url, seen) = server(vec![status(429, headers), ok("fine")]);
        let mut config = client(&url, "", cache.path());
        config.use_cache = false;
        config.rate_limit_backoff_s = 0.3;
        let llm = OpenAiLlm::new(config).unwrap();
        let started = Instant::now();
        assert_eq!(llm.complete(&request("q")).unwrap().text, "fine");
        assert!(
            started.elapsed() >= Duration::from_millis(extra_ms),
            "{headers:?}: waited {:?}",
            started.elapsed()
        );
        assert_eq!(seen.lock().unwrap().requests, 2);
    }
}

/// A response without `usage` is counted with the tokenizer and marked estimated, never 0; identical
/// requests in flight together are sent once.
#[test]
fn missing_usage_is_estimated_and_identical_requests_are_sent_once() {
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server(vec![Reply {
        delay: Duration::from_millis(200),
        ..no_usage("foo.h is missing")
    }]);
    let llm = OpenAiLlm::new(client(&url, "", cache.path()))
        .unwrap()
        .with_tokenizer(ctxbench::Tokenizer::shared_default().unwrap());
    let answers: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| llm.complete(&request("Which header?")).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(seen.lock().unwrap().requests, 1, "sent once");
    for a in &answers {
        assert!(a.meta.estimated);
        assert!(
            a.usage.input_tokens > 20 && a.usage.output_tokens > 2,
            "{:?}",
            a.usage
        );
    }
    assert_eq!(answers.iter().filter(|a| a.meta.attempts == 1).count(), 1);
    let stats = llm.stats();
    assert_eq!(
        (
            stats.calls,
            stats.unique,
            stats.shared,
            stats.sent,
            stats.estimated
        ),
        (4, 1, 3, 1, 1)
    );
}

/// What the model said is in llm_calls.jsonl, one line per call; --dry-run sends nothing and prints the
/// bill; --max-cost stops a run before it would pass the sum, resumably.
#[test]
fn llm_calls_are_recorded_the_bill_comes_first_and_the_budget_holds() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 3);
    let (url, seen) = server(vec![ok("foo.h")]);
    let priced =
        "[pricing.models.\"test-model\"]\ninput = 1000.0\ncached_input = 1000.0\noutput = 1000.0\n";
    let cfg = llm_config(dir.path(), "calls", &url, "");
    let with_price = std::fs::read_to_string(&cfg).unwrap() + priced;
    std::fs::write(&cfg, with_price).unwrap();

    let out = ctxbench_run(
        &data,
        Some(&cfg),
        &dir.path().join("dry"),
        &["--dry-run"],
        None,
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("Dry run") && stdout.contains("| total |"),
        "{stdout}"
    );
    assert_eq!(seen.lock().unwrap().requests, 0, "a dry run sends nothing");
    assert!(!dir.path().join("dry").exists());

    let run_dir = dir.path().join("run");
    let out = ctxbench_run(&data, Some(&cfg), &run_dir, &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(run_dir.join("llm_calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines
        .iter()
        .any(|l| l["purpose"] == "probe" && l["text"] == "foo.h"));
    // Without [judge], the mock's stand-in grades open probes, under its own name.
    assert!(lines.iter().all(|l| l["episode"].is_string()
        && l["model"]
            == if l["purpose"] == "judge" {
                "stand-in-judge"
            } else {
                "test-model"
            }));
    assert!(lines
        .iter()
        .any(|l| l["attempts"] == 1 && l["status"] == 200));
    // Every call is a line; the server saw one request per distinct call, and the preflight.
    let distinct: std::collections::HashSet<&str> = lines
        .iter()
        .filter_map(|l| l["request_hash"].as_str())
        .collect();
    assert_eq!(seen.lock().unwrap().requests, distinct.len() + 1);

    // A budget below one call's estimate: nothing is sent past the preflight, the run stops resumably.
    let before = seen.lock().unwrap().requests;
    let tight = dir.path().join("tight");
    let out = ctxbench_run(
        &data,
        Some(&cfg),
        &tight,
        &["--no-cache", "--max-cost", "0.01"],
        None,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--max-cost"), "{err}");
    assert_eq!(
        seen.lock().unwrap().requests,
        before + 1,
        "only the preflight was sent"
    );
}

/// With `[judge]`, open probes are graded by that model: its calls are in llm_calls.jsonl as `judge`, its
/// grades in summary.json, its cost apart; the dry run counts its calls; and the judge's version is part of
/// what a resumed run must match.
#[test]
fn a_judge_grades_open_probes() {
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 2);
    let judge_bodies = Arc::new(Mutex::new(Vec::<String>::new()));
    let bodies = Arc::clone(&judge_bodies);
    let (url, seen) = server_fn(move |_, body| {
        Some(if body.contains("Reference answer:") {
            bodies.lock().unwrap().push(body.to_owned());
            ok(
                r#"{"accuracy": 4, "context_awareness": 4, "artifact_trail": 3, "completeness": 4, "continuity": 4, "instruction_following": 5, "overall": 4}"#,
            )
        } else {
            ok("foo.h")
        })
    });
    let cfg = llm_config(dir.path(), "judged", &url, "");
    let judge = format!(
        "[judge]\nbase_url = \"{url}\"\nmodel = \"judge-model\"\napi_key_env = \"\"\ncache_dir = \"{}\"\n\
         response_format = \"json_schema\"\n\
         [pricing.models.\"judge-model\"]\ninput = 1.0\ncached_input = 1.0\noutput = 2.0\n",
        dir.path().join("cache-judge").display()
    );
    let with_judge = std::fs::read_to_string(&cfg).unwrap().replacen(
        "[[strategies]]",
        &format!("{judge}[[strategies]]"),
        1,
    );
    std::fs::write(&cfg, with_judge).unwrap();

    let out = ctxbench_run(
        &data,
        Some(&cfg),
        &dir.path().join("dry"),
        &["--dry-run"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("| judge |"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(seen.lock().unwrap().requests, 0);

    let run = dir.path().join("run");
    let out = ctxbench_run(&data, Some(&cfg), &run, &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Judge:"),
        "{}",
        text(&out.stdout)
    );
    let calls: Vec<serde_json::Value> = std::fs::read_to_string(run.join("llm_calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let judged: Vec<_> = calls.iter().filter(|c| c["purpose"] == "judge").collect();
    // The judge's requests hold its replies to the grades' schema; the agent model's do not.
    let bodies = judge_bodies.lock().unwrap();
    assert!(!bodies.is_empty());
    for body in bodies.iter() {
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        let format = &body["response_format"];
        assert_eq!(format["type"], "json_schema", "{format}");
        assert_eq!(format["json_schema"]["strict"], true);
        assert_eq!(
            format["json_schema"]["schema"]["required"]
                .as_array()
                .map(Vec::len),
            Some(7)
        );
    }
    assert!(!judged.is_empty());
    assert!(judged.iter().all(|c| c["model"] == "judge-model"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let none = &summary["strategies"][0];
    assert_eq!(none["judge_score"], 4.0);
    assert_eq!(none["judge_score_by_dimension"]["artifact_trail"], 3.0);
    assert!(none["judge_graded"].as_u64().unwrap() > 0);
    assert!(none["judge_cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(
        summary["config"]["judge_digest"].as_str().map(str::len),
        Some(64),
        "the judge's version is recorded"
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("## Open probes graded by the judge") && report.contains("digest"));
}
