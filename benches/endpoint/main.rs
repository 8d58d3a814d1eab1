//! A real-model run against a stand-in endpoint ([`stand_in`]: 127.0.0.1, a fixed latency, an optional share of
//! 429s), started here. Reports, at `max_concurrency` 16, 64 and 256 on the bundled dataset with
//! `--strategies none,summarization`:
//! - the mean requests in flight measured at the endpoint, over the span of the run's calls (from the first
//!   call's arrival to the last answer, the preflight check apart: it is one request before the run starts),
//!   and the console's figure beside it;
//! - the span of the calls and the run's wall time against calls × latency / concurrency, and against the
//!   critical path: the longest chain of calls of one replay each waiting for the one before (its summaries in
//!   order, then a question asked after the last one), in latencies;
//! - the run's peak memory.
//!
//! Then the same run with a share of 429s (every call answered, the retries counted, the same figures), and
//! peak memory over 100 and 1,000 generated episodes.
//!
//! `cargo bench --bench endpoint` runs it all (a few minutes); `cargo bench --bench endpoint -- --test` (what
//! `cargo bench -- --test` runs in CI) one short run. Parts: `-- concurrency`, `-- refusals`, `-- memory`.

mod stand_in;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stand_in::{occupancy, Settings, StandIn};

const BIN: &str = env!("CARGO_BIN_EXE_ctxbench");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One run of ctxbench against a stand-in.
struct Run {
    wall: Duration,
    peak_rss_kib: Option<u64>,
    stdout: String,
    out: PathBuf,
    served: Vec<stand_in::Served>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let work = Path::new(ROOT).join("target/endpoint-bench");
    std::fs::create_dir_all(&work).expect("target/endpoint-bench is writable");
    if args.iter().any(|a| a == "--test") {
        quick(&work);
        return;
    }
    let parts: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |part: &str| parts.is_empty() || parts.contains(&part);
    let latency = Duration::from_millis(300);
    let bundled = Path::new(ROOT).join("datasets/default.jsonl");
    if wants("concurrency") {
        println!(
            "\nThe bundled dataset, --strategies none,summarization, the stand-in answering in {} ms:\n",
            latency.as_millis()
        );
        print_header();
        for concurrency in [16, 64, 256] {
            let run = run(&work, &bundled, concurrency, stand_in(latency, 0.0));
            print_row(concurrency, latency, &run);
        }
    }
    if wants("refusals") {
        refusals(&work, &bundled, latency);
    }
    if wants("memory") {
        memory(&work, latency);
    }
}

fn stand_in(latency: Duration, refused: f64) -> Settings {
    Settings {
        latency,
        refused,
        retry_after: Duration::from_millis(500),
    }
}

/// CI's short run: 6 episodes, 50 ms a call, concurrency 16; the figures printed, not checked.
fn quick(work: &Path) {
    let bundled = std::fs::read_to_string(Path::new(ROOT).join("datasets/default.jsonl"))
        .expect("the bundled dataset reads");
    let data = work.join("quick.jsonl");
    let lines: Vec<&str> = bundled.lines().take(6).collect();
    std::fs::write(&data, lines.join("\n") + "\n").expect("writes the quick dataset");
    let latency = Duration::from_millis(50);
    print_header();
    let run = run(work, &data, 16, stand_in(latency, 0.05));
    print_row(16, latency, &run);
}

/// Runs ctxbench on `data` with `--strategies none,summarization` against a fresh stand-in, its cache empty.
fn run(work: &Path, data: &Path, concurrency: usize, settings: Settings) -> Run {
    let endpoint = StandIn::start(settings).expect("the stand-in starts");
    let name = format!(
        "c{concurrency}-{}-r{}",
        data.file_stem().unwrap().to_string_lossy(),
        (settings.refused * 100.0).round()
    );
    let cache = work.join(format!("cache-{name}"));
    let _ = std::fs::remove_dir_all(&cache);
    let config = work.join(format!("{name}.toml"));
    let default = std::fs::read_to_string(Path::new(ROOT).join("configs/default.toml"))
        .expect("configs/default.toml reads");
    std::fs::write(
        &config,
        format!(
            "{default}\n[llm]\nbase_url = \"{}\"\nmodel = \"stand-in\"\napi_key_env = \"\"\ncache_dir = \"{}\"\n\
             max_concurrency = {concurrency}\nmax_retries = 5\ntimeout_s = 60\n",
            endpoint.url,
            cache.display()
        ),
    )
    .expect("writes the config");
    let out = work.join(format!("out-{name}"));
    let stdout_path = work.join(format!("{name}.txt"));
    let (wall, peak_rss_kib) = spawn_measured(
        Command::new(BIN)
            .args(["run", "--strategies", "none,summarization", "--dataset"])
            .arg(data)
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(&out)
            .stdout(std::fs::File::create(&stdout_path).expect("stdout file"))
            .stderr(Stdio::inherit()),
    );
    let _ = std::fs::remove_dir_all(&cache);
    Run {
        wall,
        peak_rss_kib,
        stdout: std::fs::read_to_string(&stdout_path).unwrap_or_default(),
        out,
        served: endpoint.served(),
    }
}

/// Runs `command` to its end: its wall time and peak resident memory (`wait4`'s, where there is one).
// The child is waited for by `wait4`, which clippy does not see.
#[allow(clippy::zombie_processes)]
fn spawn_measured(command: &mut Command) -> (Duration, Option<u64>) {
    let started = Instant::now();
    let child = command.spawn().expect("ctxbench starts");
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value, and the pointers are to live locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: waits for our own child; status and usage are written by the kernel.
        let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(waited, pid, "wait4 on ctxbench");
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "ctxbench failed ({status})"
        );
        (started.elapsed(), u64::try_from(usage.ru_maxrss).ok())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let mut child = child;
        assert!(
            child.wait().expect("ctxbench ends").success(),
            "ctxbench failed"
        );
        (started.elapsed(), None)
    }
}

fn print_header() {
    println!(
        "| max_concurrency | calls | 429s | in flight at the endpoint | console | calls × latency / C | critical path | span of the calls | wall time | peak RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

fn print_row(concurrency: usize, latency: Duration, run: &Run) {
    let answered = run
        .served
        .iter()
        .filter(|s| s.status == 200 && !s.preflight)
        .count();
    let refused = run.served.iter().filter(|s| s.status == 429).count();
    let (mean, span) = occupancy(&run.served, false).unwrap_or_default();
    #[allow(clippy::cast_precision_loss)]
    let ideal = latency.as_secs_f64() * answered as f64 / concurrency as f64;
    let chain = critical_path(&run.out);
    #[allow(clippy::cast_precision_loss)]
    let share = 100.0 * mean / concurrency as f64;
    let console = run
        .stdout
        .lines()
        .find(|l| l.starts_with("LLM:"))
        .and_then(|l| l.split("; ").find(|p| p.contains("in flight")))
        .and_then(|p| p.split(' ').next())
        .unwrap_or("–");
    println!(
        "| {concurrency} | {answered} | {refused} | {mean:.1} ({share:.0}%) | {console} | {ideal:.2} s | {chain} × {} ms = {:.2} s | {:.2} s | {:.2} s | {} |",
        latency.as_millis(),
        f64::from(chain) * latency.as_secs_f64(),
        span.as_secs_f64(),
        run.wall.as_secs_f64(),
        run.peak_rss_kib
            .map_or_else(|| "–".to_owned(), |k| format!("{:.0} MB", k as f64 / 1024.0)),
    );
}

/// The longest chain of calls of one replay that each wait for the one before: its strategy's calls in
/// order, then one more when a question is asked at or after the last of them (the judge here is the mock's
/// stand-in, which sends nothing).
fn critical_path(out: &Path) -> u32 {
    let calls = std::fs::read_to_string(out.join("llm_calls.jsonl")).unwrap_or_default();
    // (episode, strategy) -> (strategy calls, the last one's step, a question asked at or after it)
    let mut chains: HashMap<(String, String), (u32, i64, bool)> = HashMap::new();
    for line in calls.lines() {
        let call: serde_json::Value = serde_json::from_str(line).expect("llm_calls.jsonl line");
        if call["model"] != "stand-in" {
            continue;
        }
        let key = (
            call["episode"].as_str().unwrap_or_default().to_owned(),
            call["strategy"].as_str().unwrap_or_default().to_owned(),
        );
        let step = call["step"].as_i64().unwrap_or(i64::MAX);
        let chain = chains.entry(key).or_insert((0, -1, false));
        if call["purpose"] == "strategy" {
            *chain = (chain.0 + 1, step, false);
        } else if step >= chain.1 {
            chain.2 = true;
        }
    }
    chains
        .values()
        .map(|&(n, _, after)| n + u32::from(after))
        .max()
        .unwrap_or(0)
}

/// The run with a share of 429s against the run without: every call answered, the retries counted, the same
/// figures (every row of steps.csv, episodes.csv and findings.csv but the measured latencies, and every
/// answer of llm_calls.jsonl).
fn refusals(work: &Path, data: &Path, latency: Duration) {
    println!("\nWith 429s (10% of first attempts, retry-after-ms: 500), max_concurrency 64:\n");
    print_header();
    let plain = run(work, data, 64, stand_in(latency, 0.0));
    print_row(64, latency, &plain);
    let refused = run(work, data, 64, stand_in(latency, 0.10));
    print_row(64, latency, &refused);
    let line = |r: &Run| {
        r.stdout
            .lines()
            .find(|l| l.starts_with("LLM:"))
            .unwrap_or_default()
            .to_owned()
    };
    println!("\nwithout: {}\nwith:    {}", line(&plain), line(&refused));
    let mut same = true;
    for file in ["steps.csv", "episodes.csv", "findings.csv"] {
        let equal = without_ms(&plain.out.join(file)) == without_ms(&refused.out.join(file));
        same &= equal;
        println!("{file}: {}", if equal { "the same" } else { "DIFFERENT" });
    }
    let equal = answers(&plain.out) == answers(&refused.out);
    same &= equal;
    println!(
        "llm_calls.jsonl answers: {}",
        if equal { "the same" } else { "DIFFERENT" }
    );
    assert!(same, "the run with 429s differs from the run without");
}

/// A CSV file without its columns of measured milliseconds.
fn without_ms(path: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::Reader::from_path(path).expect("a CSV file of the run");
    let header = reader.headers().expect("a header").clone();
    let kept: Vec<usize> = (0..header.len())
        .filter(|&i| !header[i].ends_with("_ms"))
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.expect("a CSV row");
            kept.iter().map(|&i| r[i].to_owned()).collect()
        })
        .collect()
}

/// Every call of llm_calls.jsonl without how it went: where, why, and what the model said.
fn answers(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("llm_calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let c: serde_json::Value = serde_json::from_str(l).expect("llm_calls.jsonl line");
            format!(
                "{} {} {} {} {}",
                c["episode"], c["strategy"], c["step"], c["purpose"], c["text"]
            )
        })
        .collect()
}

/// Peak memory over 100 and 1,000 generated episodes (seeds 1 to 24 of `ctxbench gen`, ids made unique).
fn memory(work: &Path, latency: Duration) {
    let all = work.join("generated-1008.jsonl");
    if !all.exists() {
        let mut lines = String::new();
        for seed in 1..=24 {
            let path = work.join(format!("seed{seed}.jsonl"));
            let ok = Command::new(BIN)
                .args(["gen", "--seed", &seed.to_string(), "--out"])
                .arg(&path)
                .stdout(Stdio::null())
                .status()
                .expect("ctxbench gen");
            assert!(ok.success());
            for line in std::fs::read_to_string(&path).expect("generated").lines() {
                let mut episode: serde_json::Value =
                    serde_json::from_str(line).expect("an episode");
                let id = format!("s{seed}-{}", episode["id"].as_str().unwrap_or_default());
                episode["id"] = serde_json::Value::from(id);
                writeln!(lines, "{episode}").expect("a string");
            }
            let _ = std::fs::remove_file(&path);
        }
        std::fs::write(&all, lines).expect("writes the generated dataset");
    }
    let text = std::fs::read_to_string(&all).expect("the generated dataset");
    let mut peaks = BTreeMap::new();
    println!("\nGenerated episodes, max_concurrency 64:\n");
    print_header();
    for n in [100, 1000] {
        let data = work.join(format!("generated-{n}.jsonl"));
        let lines: Vec<&str> = text.lines().take(n).collect();
        std::fs::write(&data, lines.join("\n") + "\n").expect("writes the dataset");
        let run = run(work, &data, 64, stand_in(latency, 0.0));
        print_row(64, latency, &run);
        peaks.insert(n, run.peak_rss_kib);
    }
    if let (Some(Some(small)), Some(Some(large))) = (peaks.get(&100), peaks.get(&1000)) {
        #[allow(clippy::cast_precision_loss)]
        let ratio = *large as f64 / *small as f64;
        println!("\npeak RSS, 1,000 episodes against 100: {ratio:.2}×");
    }
}
