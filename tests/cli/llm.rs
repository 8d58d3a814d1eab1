//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1, scripted per test (`server`): the
//! client alone (`client`), and whole runs with `[llm]` and `[judge]` here.

mod client;
mod server;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{ctxbench, ctxbench_run, run_args, subset, text};
pub(crate) use server::{ok, server};
use server::{server_fn, status, Reply};

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
            "window = 4000\n[llm]\nbase_url = \"{url}\"\nmodel = \"test-model\"\napi_key_env = \"\"\n\
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
        assert!(
            out.status.success(),
            "{}",
            crate::unwrapped(&text(&out.stderr))
        );
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
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
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
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
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
        crate::unwrapped(&text(&out.stderr)).contains("nothing to resume"),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
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
        crate::unwrapped(&text(&out.stderr)).contains("CTXBENCH_TEST_NEVER_SET is not set"),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    assert_eq!(seen.lock().unwrap().requests, 0);

    let cfg = llm_config(dir.path(), "refused", &url, "");
    let out = ctxbench_run(&data, Some(&cfg), &dir.path().join("b"), &[], None);
    let err = crate::unwrapped(&text(&out.stderr));
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
    let err = crate::unwrapped(&text(&out.stderr));
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
    let err = crate::unwrapped(&text(&out.stderr));
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
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
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
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        crate::unwrapped(&text(&out.stderr))
    );
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
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    assert!(
        stdout.contains("Dry run") && stdout.contains("| total |"),
        "{stdout}"
    );
    assert_eq!(seen.lock().unwrap().requests, 0, "a dry run sends nothing");
    assert!(!dir.path().join("dry").exists());

    let run_dir = dir.path().join("run");
    let out = ctxbench_run(&data, Some(&cfg), &run_dir, &[], None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
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

    // A budget below one call's estimate: nothing is sent past the preflight (whose cost counts against it
    // too), the run stops resumably; a budget below the preflight's cost sends nothing at all.
    for (max_cost, sent) in [("0.5", 1), ("0.01", 0)] {
        let before = seen.lock().unwrap().requests;
        let out = ctxbench_run(
            &data,
            Some(&cfg),
            &dir.path().join(format!("tight-{max_cost}")),
            &["--no-cache", "--max-cost", max_cost],
            None,
        );
        let err = crate::unwrapped(&text(&out.stderr));
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("--max-cost"), "{err}");
        assert_eq!(
            seen.lock().unwrap().requests,
            before + sent,
            "--max-cost {max_cost}: {err}"
        );
    }
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
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
    assert!(
        text(&out.stdout).contains("| judge |"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(seen.lock().unwrap().requests, 0);

    let run = dir.path().join("run");
    let out = ctxbench_run(&data, Some(&cfg), &run, &[], None);
    assert!(
        out.status.success(),
        "{}",
        crate::unwrapped(&text(&out.stderr))
    );
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

/// The same answers give the same outputs whatever the concurrency: a server whose answers (and the time it
/// takes to give them) follow from the request alone, so that they come back in another order at every
/// concurrency; runs at `max_concurrency` 1 and 16 (the judge's too) agree on every row and every call but
/// their measured times, and re-runs served by the same cache agree byte for byte.
#[test]
fn the_same_answers_give_the_same_outputs_whatever_the_concurrency() {
    use std::hash::{Hash, Hasher};
    let dir = tempfile::tempdir().unwrap();
    let data = subset(dir.path(), 6);
    let (url, seen) = server_fn(|_, body| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut h);
        let h = h.finish();
        let text = if body.contains("Reference answer:") {
            format!(
                r#"{{"accuracy": {a}, "context_awareness": 4, "artifact_trail": 3, "completeness": 4, "continuity": 4, "instruction_following": 5, "overall": {a}}}"#,
                a = 1 + h % 5
            )
        } else if h.is_multiple_of(3) {
            "no idea".to_owned()
        } else {
            format!("foo.h is missing ({h:x})")
        };
        Some(Reply {
            delay: Duration::from_millis(h % 40),
            ..ok(&text)
        })
    });
    let config = |name: &str, concurrency: usize, cache: &str| {
        let cfg = llm_config(
            dir.path(),
            name,
            &url,
            &format!("max_concurrency = {concurrency}\n"),
        );
        let judge = format!(
            "[judge]\nbase_url = \"{url}\"\nmodel = \"judge-model\"\napi_key_env = \"\"\ncache_dir = \"{}\"\n\
             max_concurrency = {concurrency}\n",
            dir.path().join(format!("cache-judge-{cache}")).display()
        );
        let text = std::fs::read_to_string(&cfg)
            .unwrap()
            .replace(&format!("cache-{name}\""), &format!("cache-{cache}\""))
            .replacen("[[strategies]]", &format!("{judge}[[strategies]]"), 1);
        std::fs::write(&cfg, text).unwrap();
        cfg
    };
    let run = |name: &str, concurrency: usize, cache: &str| {
        let out_dir = dir.path().join(name);
        let out = ctxbench_run(
            &data,
            Some(&config(name, concurrency, cache)),
            &out_dir,
            &[],
            None,
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        out_dir
    };
    // Every row but its measured milliseconds, and every call but how it went (timing, sharing, the cache).
    let rows = |out: &std::path::Path, file: &str| -> Vec<Vec<String>> {
        let mut reader = csv::Reader::from_path(out.join(file)).unwrap();
        let header = reader.headers().unwrap().clone();
        let kept: Vec<usize> = (0..header.len())
            .filter(|&i| !header[i].ends_with("_ms"))
            .collect();
        reader
            .records()
            .map(|r| {
                kept.iter()
                    .map(|&i| r.as_ref().unwrap()[i].to_owned())
                    .collect()
            })
            .collect()
    };
    let calls = |out: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(out.join("llm_calls.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let c: serde_json::Value = serde_json::from_str(l).unwrap();
                [
                    "episode",
                    "strategy",
                    "step",
                    "purpose",
                    "model",
                    "request_hash",
                    "text",
                ]
                .iter()
                .map(|k| c[*k].to_string())
                .collect::<Vec<_>>()
                .join(" ")
            })
            .collect()
    };
    let one = run("one", 1, "a");
    let sent = seen.lock().unwrap().requests;
    let many = run("many", 16, "b");
    assert_eq!(seen.lock().unwrap().requests, 2 * sent, "the same requests");
    let judged = calls(&one)
        .iter()
        .filter(|c| c.contains("\"judge\""))
        .count();
    assert!(judged > 0, "the judge graded open probes");
    for file in ["steps.csv", "episodes.csv", "findings.csv"] {
        assert_eq!(rows(&one, file), rows(&many, file), "{file}");
    }
    assert_eq!(calls(&one), calls(&many));
    // From the same cache, at 16 and at 1: nothing sent, the same bytes.
    let again_many = run("again-many", 16, "a");
    let again_one = run("again-one", 1, "a");
    assert_eq!(
        seen.lock().unwrap().requests,
        2 * sent,
        "served by the cache"
    );
    for file in [
        "steps.csv",
        "episodes.csv",
        "findings.csv",
        "llm_calls.jsonl",
    ] {
        let read = |out: &std::path::Path| std::fs::read(out.join(file)).unwrap();
        assert!(read(&again_many) == read(&again_one), "{file} differs");
    }
}
