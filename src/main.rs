//! The `ctxbench` binary: parse arguments, run, map the result to an exit code.
#![allow(clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;

// The system allocator: mimalloc was 3% faster on a run of the bundled dataset (90.8 against 94.0 ms, 31
// interleaved runs, 2026-12-05) but kept freed pages for later, and its peak memory grew with the number of
// episodes (37 MB, then 54-64 MB for 8 to 32 times the bundled dataset) where the system allocator's stays flat
// (33 to 37 MB, scripts/rss_check.sh); purging at once (MIMALLOC_PURGE_DELAY=0 or 1) made it slower than
// the system allocator.
//
// Two malloc arenas, shared by every thread: glibc gives each thread that allocates an arena of its own (up to
// eight per core), and the pages each keeps for reuse add up (39 MB peak on the bundled run, 34.5-37 MB with two).
// One arena saves a little more memory but costs 15% more CPU in lock waits (median of 12 interleaved runs:
// 367 ms against 316 ms of CPU); two cost nothing measurable (300 against 302 ms).
fn main() -> ExitCode {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
    let cli = ctxbench::cli::Cli::parse();
    match ctxbench::cli::run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            if err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}
