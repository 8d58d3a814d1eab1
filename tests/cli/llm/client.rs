//! The client alone, request by request, against the scripted server: retries, timeouts, the cache, rate
//! limits, single flight, the budget under concurrency, and memory over many calls.

use std::time::{Duration, Instant};

use ctxbench::llm::openai::{OpenAiConfig, OpenAiLlm};
use ctxbench::llm::LlmRequest;
use ctxbench::Item;

use ctxbench::llm::openai::Budget;
use ctxbench::llm::pricing::Price;

use super::server::{
    no_usage, ok, ok_with_usage, server, server_fn, server_unrecorded, status, Reply,
};

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

/// Rate limits: LiteLLM's `llm_provider-retry-after`, an HTTP-date `Retry-After`, and a 429 that names no
/// wait (backing off `rate_limit_backoff_s`).
#[test]
fn rate_limits_are_waited_out() {
    let cache = tempfile::tempdir().unwrap();
    // The HTTP date is written when its case starts (3 s ahead, to the second: at least 2 s), not before the
    // first case's wait.
    let date = || {
        format!(
            "Retry-After: {}\r\n",
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3))
        )
    };
    for (headers, extra_ms) in [
        (
            (|| "llm_provider-retry-after: 1\r\n".to_owned()) as fn() -> String,
            950,
        ),
        (date, 1000),
        (String::new, 280),
    ] {
        let headers = headers();
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

/// `--max-cost` against many workers at once: a call reserves what it may cost before it is sent, so calls in
/// flight together cannot all pass the check on the same spend. Two clients (the model's and the judge's, as
/// in a run) share one budget; 16 workers each send distinct requests that the server answers slowly, each
/// costing exactly what it reserves ($1: 100 completion tokens, `max_tokens = 100`, at $10,000 per million;
/// input free). A budget of $5.50 lets exactly 5 calls through, whatever the interleaving (the check-then-act
/// client let 36 through and spent $36).
#[test]
fn concurrent_workers_never_pass_the_budget() {
    const WORKERS: usize = 16;
    const MAX_USD: f64 = 5.5;
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server_fn(|_, _| {
        Some(Reply {
            delay: Duration::from_millis(150),
            ..ok_with_usage("done", 40, 100)
        })
    });
    let budget = Budget::new(MAX_USD);
    let clients: Vec<OpenAiLlm> = (0..2)
        .map(|_| {
            OpenAiLlm::new(OpenAiConfig {
                max_tokens: Some(100),
                max_concurrency: WORKERS,
                use_cache: false,
                ..client(&url, "", cache.path())
            })
            .unwrap()
            .with_budget(
                Some(Price::new(0.0, 0.0, 10_000.0)),
                Some(std::sync::Arc::clone(&budget)),
            )
        })
        .collect();
    let outcomes: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2 * WORKERS)
            .map(|w| {
                let llm = &clients[w % 2];
                s.spawn(move || {
                    (0..3)
                        .map(|i| {
                            llm.complete(&request(&format!("worker {w}, call {i}")))
                                .map(drop)
                                .map_err(|e| e.to_string())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let sent = outcomes.iter().filter(|o| o.is_ok()).count();
    let spent = budget.spent();
    eprintln!(
        "{} workers, {} calls, budget ${MAX_USD:.2}: {sent} sent, ${spent:.2} spent",
        2 * WORKERS,
        outcomes.len()
    );
    assert!(spent <= MAX_USD, "spent ${spent} past ${MAX_USD}");
    assert_eq!(sent, 5);
    assert_eq!(
        seen.lock().unwrap().requests,
        5,
        "refused calls are not sent"
    );
    assert!((spent - 5.0).abs() < 1e-9, "{spent}");
    assert_eq!(budget.reserved(), 0.0, "every reservation settled");
    for e in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert!(
            e.contains("not sent") && e.contains("--max-cost $5.5000"),
            "{e}"
        );
    }
    let stats: f64 = clients.iter().filter_map(|c| c.stats().spent_usd).sum();
    assert!((stats - spent).abs() < 1e-9, "{stats} against {spent}");
}

/// The environment variable that makes [`memory_over_many_calls`] run: it measures its process's memory, so it
/// runs alone, in a process of its own, started by [`memory_stays_flat_over_ten_thousand_calls`].
const MEMORY_CHILD: &str = "CTXBENCH_TEST_MEMORY_CHILD";

/// The client keeps no answer in memory once its request is done: over 10,000 distinct calls (4 workers,
/// answers of 4 KB) the single-flight map holds only what is in flight, and the resident memory after the
/// last call is within 8 MB of what it was after the first 1,000 (the client that kept every answer grew by
/// 39 MB).
#[test]
fn memory_stays_flat_over_ten_thousand_calls() {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("memory_stays_flat_over_ten_thousand_calls: skipped, no /proc/self/status to read RSS from");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "llm::client::memory_over_many_calls",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MEMORY_CHILD, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (crate::text(&out.stdout), crate::text(&out.stderr));
    eprintln!("{stderr}");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("RSS after"),
        "the child ran: {stdout}\n{stderr}"
    );
}

/// The resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
#[ignore = "run alone, in a process of its own, by memory_stays_flat_over_ten_thousand_calls"]
fn memory_over_many_calls() {
    const CALLS: usize = 10_000;
    const WORKERS: usize = 4;
    assert!(
        std::env::var_os(MEMORY_CHILD).is_some(),
        "run by memory_stays_flat_over_ten_thousand_calls"
    );
    let cache = tempfile::tempdir().unwrap();
    let (url, seen) = server_unrecorded(|n, _| Some(ok(&format!("{n:>8} {}", "x".repeat(4096)))));
    let llm = OpenAiLlm::new(OpenAiConfig {
        use_cache: false,
        max_concurrency: WORKERS,
        ..client(&url, "", cache.path())
    })
    .unwrap();
    let most_in_flight = std::sync::atomic::AtomicUsize::new(0);
    let calls = |from: usize, to: usize| {
        std::thread::scope(|s| {
            for w in 0..WORKERS {
                let (llm, most) = (&llm, &most_in_flight);
                s.spawn(move || {
                    for i in (from + w..to).step_by(WORKERS) {
                        llm.complete(&request(&format!("question {i}"))).unwrap();
                        most.fetch_max(
                            llm.requests_in_flight(),
                            std::sync::atomic::Ordering::SeqCst,
                        );
                    }
                });
            }
        });
    };
    calls(0, CALLS / 10);
    let warm = rss_kib();
    calls(CALLS / 10, CALLS);
    let end = rss_kib();
    let most = most_in_flight.into_inner();
    eprintln!(
        "{CALLS} calls, {WORKERS} workers: RSS after {} calls {warm} KiB, after {CALLS} {end} KiB ({:+} KiB); \
         most requests in flight seen after a call {most}, at the end {}",
        CALLS / 10,
        i128::from(end) - i128::from(warm),
        llm.requests_in_flight()
    );
    assert_eq!(seen.lock().unwrap().requests, CALLS);
    assert_eq!(llm.stats().unique, CALLS as u64);
    assert_eq!(llm.requests_in_flight(), 0);
    assert!(most < WORKERS, "{most}");
    assert!(end < warm + 8 * 1024, "RSS grew from {warm} to {end} KiB");
}

/// Calls started without waiting ([`Llm::start`], as the replay starts its probes) go out together up to
/// `max_concurrency` and no further, an identical one is sent once, and every answer comes back to its own
/// caller; the client's in-flight figure stays within the limit.
#[test]
fn started_calls_fill_the_limit_and_identical_ones_go_once() {
    use ctxbench::llm::Llm;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    const LIMIT: usize = 6;
    let cache = tempfile::tempdir().unwrap();
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (in_server, most_seen) = (Arc::clone(&now), Arc::clone(&most));
    let (url, seen) = server_fn(move |_, body| {
        let n = in_server.fetch_add(1, Ordering::SeqCst) + 1;
        most_seen.fetch_max(n, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(120));
        in_server.fetch_sub(1, Ordering::SeqCst);
        // The answer names the question it answers.
        let question = body
            .split("question ")
            .nth(1)
            .and_then(|s| s.split('"').next());
        Some(ok(&format!("answer to {}", question.unwrap_or("?"))))
    });
    let llm = OpenAiLlm::new(OpenAiConfig {
        max_concurrency: LIMIT,
        ..client(&url, "", cache.path())
    })
    .unwrap();
    // 24 distinct questions, then the first one 5 times more, all started before any answer is read.
    let questions: Vec<String> = (0..24)
        .chain(std::iter::repeat_n(0, 5))
        .map(|i| format!("question {i}"))
        .collect();
    let pending: Vec<_> = questions.iter().map(|q| llm.start(&request(q))).collect();
    for (q, p) in questions.iter().zip(pending) {
        let answer = p.wait().unwrap();
        assert_eq!(
            answer.text,
            format!("answer to {}", &q["question ".len()..])
        );
    }
    assert_eq!(most.load(Ordering::SeqCst), LIMIT, "the limit, and no more");
    assert_eq!(
        seen.lock().unwrap().requests,
        24,
        "the repeats were sent once"
    );
    let stats = llm.stats();
    assert_eq!(
        (stats.calls, stats.unique, stats.shared, stats.sent),
        (29, 24, 5, 24)
    );
    let mean = stats.mean_in_flight.unwrap();
    assert!(mean > 1.0 && mean <= LIMIT as f64, "{mean}");
    assert_eq!(llm.requests_in_flight(), 0);
}

/// A 429 pauses every request of the client for the wait it asks (`retry-after-ms`), not only the refused
/// one: the requests already on the wire finish, but no new one reaches the endpoint until the pause is over;
/// then every call is answered and the one retry counted.
#[test]
fn a_429_pauses_every_request_of_the_client() {
    use ctxbench::llm::Llm;
    use std::sync::{Arc, Mutex};
    let cache = tempfile::tempdir().unwrap();
    let arrivals = Arc::new(Mutex::new(Vec::<(usize, Instant)>::new()));
    let log = Arc::clone(&arrivals);
    let (url, seen) = server_fn(move |n, _| {
        log.lock().unwrap().push((n, Instant::now()));
        Some(if n == 0 {
            status(429, "retry-after-ms: 400\r\n")
        } else {
            Reply {
                delay: Duration::from_millis(60),
                ..ok("fine")
            }
        })
    });
    let llm = OpenAiLlm::new(OpenAiConfig {
        max_concurrency: 4,
        ..client(&url, "", cache.path())
    })
    .unwrap();
    let pending: Vec<_> = (0..12)
        .map(|i| llm.start(&request(&format!("question {i}"))))
        .collect();
    for p in pending {
        assert_eq!(p.wait().unwrap().text, "fine");
    }
    let arrivals = arrivals.lock().unwrap();
    let refused = arrivals.iter().find(|(n, _)| *n == 0).unwrap().1;
    // The first wave (4 requests, sent before the 429 came back) aside, every request arrives after the
    // pause: the refused call keeps its place through it and goes first.
    let early: Vec<Duration> = arrivals
        .iter()
        .filter(|(n, _)| *n >= 4)
        .map(|(_, at)| at.saturating_duration_since(refused))
        .filter(|d| *d < Duration::from_millis(390))
        .collect();
    assert!(
        early.is_empty(),
        "requests arrived during the pause: {early:?}"
    );
    assert_eq!(seen.lock().unwrap().requests, 13);
    let stats = llm.stats();
    assert_eq!(
        (stats.calls, stats.sent, stats.retries, stats.failed),
        (12, 13, 1, 0)
    );
}

/// A per-minute limit as LiteLLM's proxy keeps one (`rpm` on a model): at most `RATE` requests accepted in
/// each window of the clock (a minute there, 400 ms here), the others refused at once with 429 and only
/// `llm_provider-retry-after` (the window's length), the refused ones not counted. Started calls (probes) far
/// more than the window admits, `max_concurrency` under the limit and one retry: a refused call goes again
/// before any call not yet sent, so each is refused at most once and every call is answered, the refusals
/// counted as retries. (A refused call that queued behind newer calls after the pause found the window
/// spent by them and was refused again, to the last retry: `scripts/litellm_faults.sh` failed so.)
#[test]
fn a_refused_call_goes_again_before_newer_calls() {
    use ctxbench::llm::Llm;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    const RATE: usize = 4;
    const WINDOW: Duration = Duration::from_millis(400);
    const CALLS: usize = 24;
    let cache = tempfile::tempdir().unwrap();
    let start = Instant::now();
    // (window, accepted in it), and refusals per question.
    let window = Arc::new(Mutex::new((0u128, 0usize)));
    let refusals = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let (w, r) = (Arc::clone(&window), Arc::clone(&refusals));
    let (url, seen) = server_fn(move |_, body| {
        let question = body
            .split("question ")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or("?")
            .to_owned();
        let now = start.elapsed().as_millis() / WINDOW.as_millis();
        let accepted = {
            let mut w = w.lock().unwrap();
            if w.0 != now {
                *w = (now, 0);
            }
            w.1 += 1;
            w.1 <= RATE
        };
        Some(if accepted {
            Reply {
                delay: Duration::from_millis(20),
                ..ok(&format!("answer to {question}"))
            }
        } else {
            w.lock().unwrap().1 -= 1;
            *r.lock().unwrap().entry(question).or_default() += 1;
            Reply {
                body: r#"{"error":{"message":"litellm.RateLimitError: No deployments available for selected model","type":"None","code":"429"}}"#.into(),
                ..status(429, "llm_provider-retry-after: 0.4\r\n")
            }
        })
    });
    let llm = OpenAiLlm::new(OpenAiConfig {
        max_concurrency: 4,
        max_retries: 1,
        ..client(&url, "", cache.path())
    })
    .unwrap();
    let questions: Vec<String> = (0..CALLS).map(|i| format!("question {i}")).collect();
    let pending: Vec<_> = questions.iter().map(|q| llm.start(&request(q))).collect();
    let answers: Vec<_> = pending.into_iter().map(|p| p.wait()).collect();
    let refusals = refusals.lock().unwrap().clone();
    for (q, a) in questions.iter().zip(answers) {
        let a = a.unwrap_or_else(|e| panic!("{q}: {e} (refusals: {refusals:?})"));
        assert_eq!(a.text, format!("answer to {}", &q["question ".len()..]));
    }
    let refused: usize = refusals.values().sum();
    assert!(refused > 0, "the limit was reached");
    assert!(
        refusals.values().all(|&n| n == 1),
        "a call was refused more than once: {refusals:?}"
    );
    let stats = llm.stats();
    assert_eq!(
        (stats.calls, stats.failed, stats.retries, stats.sent),
        (CALLS as u64, 0, refused as u64, (CALLS + refused) as u64)
    );
    assert_eq!(seen.lock().unwrap().requests, CALLS + refused);
}
