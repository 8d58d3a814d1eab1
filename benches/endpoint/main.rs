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
//! peak memory over 100, 200, 400 and 1,000 generated episodes at 64 and 16. Every run is measured through a
//! fresh copy of this bench ([`measure`]): the peak memory is ctxbench's own, not this process's.
//!
//! `cargo bench --bench endpoint` runs it all (about 15 minutes); `cargo bench --bench endpoint -- --test`
//! (what `cargo bench -- --test` runs in CI) one short run. Parts: `-- concurrency`, `-- refusals`,
//! `-- control` (what the memory measurement reads of a child touching a known amount), `-- memory`, and, not
//! in the whole, `-- at256` (rounds of one run at 256 and the same run answered at once, against the run's lower
//! bounds; `ENDPOINT_BENCH_ROUNDS`, 3; `ENDPOINT_BENCH_BINS`, comma-separated builds run in turn in each
//! round). Environment:
//! `ENDPOINT_BENCH_BIN` (another ctxbench, to compare builds), `ENDPOINT_BENCH_WRAP` (a command the run is
//! started under, e.g. `perf record -g -o FILE --`), `ENDPOINT_BENCH_EPISODES` and `ENDPOINT_BENCH_CONCURRENCY`
//! (the memory part's sizes and levels, comma-separated), `ENDPOINT_BENCH_DATASETS` (more datasets the memory
//! part runs at each level, comma-separated paths).

mod measure;
mod stand_in;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use measure::{allocate, control, measure_child, own_cpu, spawn_measured};
use stand_in::{occupancy, Settings, StandIn};

const BUILT: &str = env!("CARGO_BIN_EXE_ctxbench");

/// The ctxbench measured: the one built with the bench, or `ENDPOINT_BENCH_BIN` (to compare two builds).
fn bin() -> String {
    std::env::var("ENDPOINT_BENCH_BIN").unwrap_or_else(|_| BUILT.to_owned())
}
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One run of ctxbench against a stand-in.
struct Run {
    wall: Duration,
    /// The run's own peak resident memory (`wait4`'s `ru_maxrss` through a fresh process), and the highest
    /// `VmHWM` polled while it ran.
    peak_rss_kib: Option<u64>,
    polled_hwm_kib: Option<u64>,
    /// Its resident memory over time: (ms since it started, KiB).
    rss: Vec<(u64, u64)>,
    /// The run's CPU time (user and system), and the stand-in's (this process's, over the run).
    cpu: Option<Duration>,
    stand_in_cpu: Option<Duration>,
    /// When ctxbench was started and when it ended.
    spawned: Instant,
    stdout: String,
    out: PathBuf,
    served: Vec<stand_in::Served>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--measure-child") => measure_child(&args[1..]),
        Some("--allocate") => allocate(args[1].parse().expect("MB")),
        _ => {}
    }
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
        let mut runs = Vec::new();
        for concurrency in [16, 64, 256] {
            let run = run(&work, &bundled, concurrency, stand_in(latency, 0.0));
            print_row(concurrency, latency, &run);
            runs.push((concurrency, run));
        }
        let mock = mock_wall(&work, &bundled);
        println!(
            "\nWhere the time goes (the same runs; the same run with the mock LLM takes {:.2} s):\n",
            mock.as_secs_f64()
        );
        print_time_header();
        for (concurrency, run) in &runs {
            print_time_row(&concurrency.to_string(), run);
        }
        // The answers put in a cache private to the run, written without waiting for the disk (fsync).
        let private = run_with(
            &work,
            &bundled,
            256,
            stand_in(latency, 0.0),
            "use_cache = false\n",
        );
        print_time_row("256, use_cache = false", &private);
        // The floor: the same run with every answer at once, the run's own work and nothing waited for.
        let instant = run_with(
            &work,
            &bundled,
            256,
            stand_in(Duration::ZERO, 0.0),
            "# answered at once\n",
        );
        print_time_row("256, answered at once", &instant);
    }
    if parts.contains(&"at256") {
        // At 256 against its lower bounds (`-- at256`, not part of the whole): to profile, or to compare builds.
        at256(&work, &bundled, latency);
    }
    if wants("refusals") {
        refusals(&work, &bundled, latency);
    }
    if wants("control") {
        control(200);
    }
    if wants("memory") {
        memory(&work, latency);
    }
}

/// The one-minute load average (/proc/loadavg), or `–`.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "–".to_owned())
}

/// The run at 256 against the two things it cannot finish before, in rounds (`ENDPOINT_BENCH_ROUNDS`, 3), the
/// two runs of a round in alternating order with the load average read before each:
/// - its longest chain of dependent calls, in latencies: the preflight check (no call starts before its
///   answer), then the longest chain of one replay (its summaries in order, a question after the last);
/// - its own work on these cores: the same run with every answer at once (the wall time of a run that waits
///   for nothing: the process, the dataset, every body written and hashed, every answer parsed and cached,
///   the tables written, spread over the cores as the run spreads it, under the load of the moment).
///
/// The wall time is given against the larger of the two (a bound no schedule can beat) and against their sum
/// (the run if none of its work overlapped a wait).
fn at256(work: &Path, bundled: &Path, latency: Duration) {
    let rounds: usize = std::env::var("ENDPOINT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    // ENDPOINT_BENCH_BINS="old,new": each round runs each build in turn (its run and its floor), the order
    // turning from round to round, so that the builds compared see the same minutes of the machine.
    let bins: Vec<String> = std::env::var("ENDPOINT_BENCH_BINS").map_or_else(
        |_| vec![bin()],
        |v| v.split(',').map(str::to_owned).collect(),
    );
    let name = |bin: &str| {
        Path::new(bin)
            .file_name()
            .map_or_else(|| bin.to_owned(), |n| n.to_string_lossy().into_owned())
    };
    let mut rows = Vec::new();
    for round in 0..rounds {
        for b in 0..bins.len() {
            let bin = &bins[(round + b) % bins.len()];
            let mut pair: [Option<(String, Run)>; 2] = [None, None];
            for k in 0..2 {
                // Alternating which goes first: both see the same machine.
                let instant = (round + k) % 2 == 1;
                let before = load();
                let run = if instant {
                    run_with_bin(
                        bin,
                        work,
                        bundled,
                        256,
                        stand_in(Duration::ZERO, 0.0),
                        "# answered at once\n",
                    )
                } else {
                    run_with_bin(bin, work, bundled, 256, stand_in(latency, 0.0), "")
                };
                pair[usize::from(instant)] = Some((before, run));
            }
            let [Some((load_run, run)), Some((load_floor, floor))] = pair else {
                unreachable!("both runs of a round ran")
            };
            let chain = 1 + critical_path(&run.out);
            let waits = latency * chain;
            let work_floor = floor.wall;
            let bound = waits.max(work_floor);
            let sum = waits + work_floor;
            let secs = |d: Duration| format!("{:.2} s", d.as_secs_f64());
            let cpu = |d: Option<Duration>| d.map_or_else(|| "–".to_owned(), secs);
            rows.push(format!(
                "| {} | {} | {load_run} / {load_floor} | {} | {chain} × {} ms = {} | {} ({} CPU) | {} | {:.2}× | {} | {:.2}× | {} |",
                round + 1,
                name(bin),
                secs(run.wall),
                latency.as_millis(),
                secs(waits),
                secs(work_floor),
                cpu(floor.cpu),
                secs(bound),
                run.wall.as_secs_f64() / bound.as_secs_f64(),
                secs(sum),
                run.wall.as_secs_f64() / sum.as_secs_f64(),
                cpu(run.cpu),
            ));
            // Read now: the next runs write the same folders.
            println!("\nRound {}, {}:\n", round + 1, name(bin));
            print_header();
            print_row(256, latency, &run);
            print_time_header();
            print_time_row("256", &run);
            print_time_row("256, answered at once", &floor);
        }
    }
    println!(
        "\nmax_concurrency 256, the stand-in at {} ms, against what the run cannot finish before:\n",
        latency.as_millis()
    );
    println!(
        "| round | build | load before (run / floor) | wall time | chain of dependent calls (preflight + longest replay chain) | the run answered at once (its own work) | the larger | wall / larger | sum | wall / sum | ctxbench CPU |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        println!("{row}");
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
    run_with(work, data, concurrency, settings, "")
}

/// [`run`] with `llm_extra` lines in `[llm]`.
fn run_with(
    work: &Path,
    data: &Path,
    concurrency: usize,
    settings: Settings,
    llm_extra: &str,
) -> Run {
    run_with_bin(&bin(), work, data, concurrency, settings, llm_extra)
}

/// [`run_with`] of the ctxbench at `bin`.
fn run_with_bin(
    bin: &str,
    work: &Path,
    data: &Path,
    concurrency: usize,
    settings: Settings,
    llm_extra: &str,
) -> Run {
    let endpoint = StandIn::start(settings).expect("the stand-in starts");
    let name = format!(
        "c{concurrency}-{}-r{}-l{}{}",
        data.file_stem().unwrap().to_string_lossy(),
        (settings.refused * 100.0).round(),
        settings.latency.as_millis(),
        if llm_extra.is_empty() { "" } else { "-x" }
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
             max_concurrency = {concurrency}\nmax_retries = 5\ntimeout_s = 60\n{llm_extra}",
            endpoint.url,
            cache.display()
        ),
    )
    .expect("writes the config");
    let out = work.join(format!("out-{name}"));
    // What an interrupted earlier bench left would make the run refuse to start.
    let _ = std::fs::remove_dir_all(work.join(format!("out-{name}.partial")));
    let stdout_path = work.join(format!("{name}.txt"));
    let stand_in_before = own_cpu();
    let spawned = Instant::now();
    let measured = spawn_measured(
        bin,
        &run_args(data, Some(&config), &out),
        std::fs::File::create(&stdout_path)
            .expect("stdout file")
            .into(),
    );
    let stand_in_cpu = own_cpu()
        .zip(stand_in_before)
        .map(|(after, before)| after.saturating_sub(before));
    let _ = std::fs::remove_dir_all(&cache);
    Run {
        wall: measured.wall,
        peak_rss_kib: measured.peak_rss_kib,
        polled_hwm_kib: measured.polled_hwm_kib,
        rss: measured.rss,
        cpu: measured.cpu,
        stand_in_cpu,
        spawned,
        stdout: std::fs::read_to_string(&stdout_path).unwrap_or_default(),
        out,
        served: endpoint.served(),
    }
}

/// `ctxbench run` of `none,summarization` on `data` into `out`, with `config` (else the bundled one).
fn run_args(data: &Path, config: Option<&Path>, out: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "--strategies".into(),
        "none,summarization".into(),
        "--dataset".into(),
        data.into(),
    ];
    if let Some(config) = config {
        args.extend(["--config".into(), config.into()]);
    }
    args.extend(["--out".into(), out.into()]);
    args
}

/// The wall time of the same run with the mock LLM (no `[llm]`): the run's own work, no call waited for.
fn mock_wall(work: &Path, data: &Path) -> Duration {
    let out = work.join("out-mock");
    spawn_measured(&bin(), &run_args(data, None, &out), Stdio::null()).wall
}

fn print_header() {
    println!(
        "| max_concurrency | calls | 429s | in flight at the endpoint | console | calls × latency / C | critical path | span of the calls | wall time | peak RSS (VmHWM polled) |"
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
        mb(run.peak_rss_kib, run.polled_hwm_kib),
    );
}

/// A peak and its polled high-water mark, in MB.
#[allow(clippy::cast_precision_loss)]
fn mb(peak: Option<u64>, polled: Option<u64>) -> String {
    let mb =
        |k: Option<u64>| k.map_or_else(|| "–".to_owned(), |k| format!("{:.0}", k as f64 / 1024.0));
    format!("{} MB ({})", mb(peak), mb(polled))
}

/// A run's resident memory over time, a sample every few seconds: `s: MB`.
#[allow(clippy::cast_precision_loss)]
fn rss_line(run: &Run) -> String {
    let every = (run.rss.len() / 12).max(1);
    run.rss
        .iter()
        .step_by(every)
        .map(|(ms, k)| format!("{:.0} s: {:.0}", *ms as f64 / 1e3, *k as f64 / 1024.0))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_time_header() {
    println!(
        "| max_concurrency | wall time | before the first call | span of the calls | after the last answer | ctxbench CPU | stand-in CPU | connections | a call at the client | at the endpoint | a new connection's first request, accepted to read |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

/// Where a run's wall time goes: before the first call reaches the endpoint (the process starting, the
/// dataset read, the preflight check), the span of the calls, after the last answer (the tables written);
/// the CPU time of ctxbench and of the stand-in; the connections the endpoint accepted; a call's mean time
/// at the client (on the wire as the client counts it, llm_calls.jsonl's `latency_ms`) against at the
/// endpoint (from its last byte read to its answer written); and how long a new connection's first request
/// took from the connection's accept to its last byte read.
fn print_time_row(concurrency: &str, run: &Run) {
    let calls: Vec<&stand_in::Served> = run.served.iter().filter(|s| !s.preflight).collect();
    let (Some(first), Some(last)) = (
        calls.iter().map(|s| s.arrived).min(),
        calls.iter().map(|s| s.left).max(),
    ) else {
        return;
    };
    let ended = run.spawned + run.wall;
    let secs = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    let cpu = |d: Option<Duration>| d.map_or_else(|| "–".to_owned(), secs);
    let mean_ms = |v: &[f64]| {
        #[allow(clippy::cast_precision_loss)]
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        format!("{mean:.0} ms")
    };
    let at_endpoint: Vec<f64> = calls
        .iter()
        .map(|s| (s.left - s.arrived).as_secs_f64() * 1e3)
        .collect();
    let opened: Vec<f64> = run
        .served
        .iter()
        .filter_map(|s| s.accepted.map(|a| (s.arrived - a).as_secs_f64() * 1e3))
        .collect();
    println!(
        "| {concurrency} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        secs(run.wall),
        secs(first - run.spawned),
        secs(last - first),
        secs(ended.saturating_duration_since(last)),
        cpu(run.cpu),
        cpu(run.stand_in_cpu),
        opened.len(),
        mean_ms(&client_latencies(&run.out)),
        mean_ms(&at_endpoint),
        mean_ms(&opened),
    );
}

/// The time on the wire of every call the client sent, as it measured it (llm_calls.jsonl's `latency_ms`).
fn client_latencies(out: &Path) -> Vec<f64> {
    std::fs::read_to_string(out.join("llm_calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let call: serde_json::Value = serde_json::from_str(l).ok()?;
            (call["model"] == "stand-in" && call["attempts"].as_u64().unwrap_or(0) >= 1)
                .then(|| call["latency_ms"].as_f64())
                .flatten()
        })
        .collect()
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
            let ok = Command::new(bin())
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
    // A real-model run reads an episode while fewer calls are outstanding than twice the endpoint's places,
    // within a window of a worker's episode and a quarter more (80 at 64, 320 at 256), bounded in bytes too:
    // 200 and 400 show whether the peak still grows with the dataset; what does (the bodies on the wire, the
    // tokenizer's scratch before it was pooled) follows the largest requests a run meets at once.
    let mut peaks = BTreeMap::new();
    // ENDPOINT_BENCH_CONCURRENCY="64": only that concurrency.
    let levels: Vec<usize> = std::env::var("ENDPOINT_BENCH_CONCURRENCY").map_or_else(
        |_| vec![64, 16],
        |v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    );
    for concurrency in levels {
        println!("\nGenerated episodes, max_concurrency {concurrency}:\n");
        print_header();
        // ENDPOINT_BENCH_EPISODES="200": only those sizes (to profile one).
        let sizes: Vec<usize> = std::env::var("ENDPOINT_BENCH_EPISODES").map_or_else(
            |_| vec![100, 200, 400, 1000],
            |v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        );
        for &n in &sizes {
            let data = work.join(format!("generated-{n}.jsonl"));
            let lines: Vec<&str> = text.lines().take(n).collect();
            std::fs::write(&data, lines.join("\n") + "\n").expect("writes the dataset");
            let run = run(work, &data, concurrency, stand_in(latency, 0.0));
            print_row(concurrency, latency, &run);
            eprintln!("  RSS (MB) over the run: {}", rss_line(&run));
            peaks.insert((concurrency, n), run.peak_rss_kib);
        }
        // ENDPOINT_BENCH_DATASETS="a.jsonl,b.jsonl": other datasets at the same concurrency (e.g. the 100
        // largest of the 1,000 episodes: is the peak the number of episodes or the size of the largest?).
        for path in std::env::var("ENDPOINT_BENCH_DATASETS")
            .unwrap_or_default()
            .split(',')
            .filter(|p| !p.is_empty())
        {
            let run = run(work, Path::new(path), concurrency, stand_in(latency, 0.0));
            println!("{path}:");
            print_row(concurrency, latency, &run);
            eprintln!("  RSS (MB) over the run: {}", rss_line(&run));
        }
    }
    for (concurrency, small, large) in [
        (64, 100, 1000),
        (64, 200, 1000),
        (16, 100, 1000),
        (16, 200, 1000),
    ] {
        if let (Some(Some(a)), Some(Some(b))) = (
            peaks.get(&(concurrency, small)),
            peaks.get(&(concurrency, large)),
        ) {
            #[allow(clippy::cast_precision_loss)]
            let ratio = *b as f64 / *a as f64;
            println!("peak RSS at {concurrency}, {large} episodes against {small}: {ratio:.2}×");
        }
    }
}
