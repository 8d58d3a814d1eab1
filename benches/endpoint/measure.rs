//! How the bench measures a run of ctxbench: through a fresh copy of itself ([`measure_child`]), so that
//! `wait4`'s peak memory is the run's own, with its `VmHWM` polled beside it; a control of both
//! ([`control`]); and the bench's own CPU time.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// This process's CPU time so far (user and system, every thread: the stand-in's), where `getrusage` has it.
pub fn own_cpu() -> Option<Duration> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: an all-zero rusage is a valid value, written by the kernel.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: the pointer is to a live local.
        (unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0).then(|| cpu_time(&usage))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn cpu_time(usage: &libc::rusage) -> Duration {
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// What [`spawn_measured`] measured of a child: its wall time, peak resident memory, CPU time, and its resident
/// memory over time (sampled).
pub struct Measured {
    pub wall: Duration,
    pub peak_rss_kib: Option<u64>,
    pub cpu: Option<Duration>,
    /// The highest `VmHWM` of /proc/PID/status read while the child ran (every 10 ms), and every 10th sample
    /// of `VmRSS` (ms since the start, KiB).
    pub polled_hwm_kib: Option<u64>,
    pub rss: Vec<(u64, u64)>,
}

/// Runs ctxbench with `args` to its end, its stdout to `stdout`, through a copy of this bench started as
/// [`measure_child`]: its wall time, peak resident memory and CPU time (`wait4`'s), and its `VmHWM` polled.
///
/// Not `wait4` here: Linux keeps, at exec, the high-water mark of the memory the process had before (with
/// `posix_spawn`, this process's), so a child of this bench, which holds the generated dataset, would read as
/// at least the bench's own peak. A fresh process holds a few MB: its child's `ru_maxrss` is the child's own
/// (see [`control`]).
pub fn spawn_measured(program: &str, args: &[std::ffi::OsString], stdout: Stdio) -> Measured {
    let report = tempfile_path();
    let started = Instant::now();
    let status = Command::new(std::env::current_exe().expect("the bench's own path"))
        .arg("--measure-child")
        .arg(&report)
        .arg(program)
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .status()
        .expect("the measuring wrapper starts");
    let wall = started.elapsed();
    assert!(status.success(), "{program} failed ({status})");
    let text = std::fs::read_to_string(&report).expect("the wrapper's report");
    let _ = std::fs::remove_file(&report);
    let mut fields = text.lines();
    let mut next = || fields.next().unwrap_or_default().to_owned();
    let number = |s: String| s.trim().parse::<u64>().ok();
    let peak_rss_kib = number(next());
    let cpu = number(next()).map(Duration::from_micros);
    let child_wall = number(next()).map(Duration::from_micros);
    let polled_hwm_kib = number(next());
    let rss = next()
        .split_whitespace()
        .filter_map(|p| {
            let (t, k) = p.split_once(':')?;
            Some((t.parse().ok()?, k.parse().ok()?))
        })
        .collect();
    Measured {
        wall: child_wall.unwrap_or(wall),
        peak_rss_kib,
        cpu,
        polled_hwm_kib,
        rss,
    }
}

/// The wrapper's side of [`spawn_measured`] (`--measure-child REPORT PROGRAM ARGS...`): runs the program, its
/// stdout and stderr this process's, polls its /proc/PID/status every 10 ms, waits for it with `wait4`, and
/// writes to REPORT, a line each: `ru_maxrss` (KiB), CPU time (µs), wall time (µs), the highest `VmHWM` polled
/// (KiB), and `ms:KiB` samples of `VmRSS`. Exits with the program's status.
pub fn measure_child(args: &[String]) -> ! {
    let [report, program, rest @ ..] = args else {
        panic!("--measure-child REPORT PROGRAM ARGS...")
    };
    let started = Instant::now();
    // ENDPOINT_BENCH_WRAP="perf record -g -o FILE --": the program run under a profiler (its CPU time and
    // memory then include the profiler's).
    let wrap = std::env::var("ENDPOINT_BENCH_WRAP").unwrap_or_default();
    let mut words: Vec<&str> = wrap.split_whitespace().collect();
    words.push(program);
    let child = Command::new(words[0])
        .args(&words[1..])
        .args(rest)
        .spawn()
        .expect("the measured program starts");
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let status = format!("/proc/{pid}/status");
            let field = |text: &str, name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            };
            let (mut hwm, mut samples, mut n) = (None::<u64>, Vec::new(), 0u64);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(text) = std::fs::read_to_string(&status) {
                    if let Some(h) = field(&text, "VmHWM:") {
                        hwm = Some(hwm.map_or(h, |m| m.max(h)));
                    }
                    if n % 10 == 0 {
                        if let Some(r) = field(&text, "VmRSS:") {
                            samples.push((started.elapsed().as_millis(), r));
                        }
                    }
                    n += 1;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            (hwm, samples)
        })
    };
    let (status, peak, cpu) = wait_usage(child);
    let wall = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (hwm, samples) = poller.join().expect("the poller");
    let samples: Vec<String> = samples.iter().map(|(t, k)| format!("{t}:{k}")).collect();
    let text = format!(
        "{}\n{}\n{}\n{}\n{}\n",
        peak.map_or_else(String::new, |p| p.to_string()),
        cpu.map_or_else(String::new, |c| c.as_micros().to_string()),
        wall.as_micros(),
        hwm.map_or_else(String::new, |h| h.to_string()),
        samples.join(" ")
    );
    std::fs::write(report, text).expect("writes the report");
    std::process::exit(status);
}

/// Waits for `child`: its exit code (1 when it did not exit), `ru_maxrss` (KiB) and CPU time, where `wait4`
/// has them.
// The child is waited for by `wait4`, which clippy does not see.
#[allow(clippy::zombie_processes)]
pub fn wait_usage(child: std::process::Child) -> (i32, Option<u64>, Option<Duration>) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value, and the pointers are to live locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: waits for our own child; status and usage are written by the kernel.
        let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(waited, pid, "wait4");
        let code = if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            1
        };
        (
            code,
            u64::try_from(usage.ru_maxrss).ok(),
            Some(cpu_time(&usage)),
        )
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let mut child = child;
        let status = child.wait().expect("the program ends");
        (status.code().unwrap_or(1), None, None)
    }
}

/// A control of [`spawn_measured`]: a child that touches a known amount of memory (`--allocate MB`, this bench
/// started again), run from this process while it holds `held` MB of its own. What each way reads.
pub fn control(held_mb: usize) {
    let held = vec![1u8; held_mb << 20];
    println!("\nControl: the bench holding {held_mb} MB, a child touching N MB:\n");
    println!("| N | wait4 of the wrapper's child | VmHWM polled | wait4 from the bench itself |");
    println!("|---:|---:|---:|---:|");
    let me = std::env::current_exe().expect("the bench's own path");
    let mb = |k: Option<u64>| {
        k.map_or_else(
            || "–".to_owned(),
            |k| format!("{:.1} MB", k as f64 / 1024.0),
        )
    };
    for n in [0usize, 50, 200] {
        let m = spawn_measured(
            me.to_str().expect("a UTF-8 path"),
            &["--allocate".into(), n.to_string().into()],
            Stdio::null(),
        );
        let child = Command::new(&me)
            .args(["--allocate", &n.to_string()])
            .spawn()
            .expect("starts");
        let (_, direct, _) = wait_usage(child);
        println!(
            "| {n} MB | {} | {} | {} |",
            mb(m.peak_rss_kib),
            mb(m.polled_hwm_kib),
            mb(direct)
        );
    }
    std::hint::black_box(&held);
}

/// `--allocate MB`: touches MB of memory, holds it 300 ms (for the poller to see), and exits.
pub fn allocate(mb: usize) -> ! {
    let v = vec![1u8; mb << 20];
    std::thread::sleep(Duration::from_millis(300));
    std::hint::black_box(&v);
    std::process::exit(0);
}

pub fn tempfile_path() -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "endpoint-bench-{}-{}.measure",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}
