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
// One malloc arena per thread that allocates while episodes replay (each worker, the writer, the reader), not
// glibc's default of up to eight per core: the pages each arena keeps for reuse add up (39 MB peak on the
// bundled run with the default). Fewer arenas than threads make the threads queue on the arenas' locks, as
// episodes parsed on the reader are freed on a worker and results made on a worker freed by the writer: with
// two arenas on 2 cores, 7,000-10,000 context switches and 1.91-1.94 s of CPU for a 69 MB generated dataset,
// against 2,000-3,600 and 1.64-1.83 s with four (perf stat, 2 x 5 runs each, 2026-12-06), for 0.6-1.2 MB more
// peak memory. One arena saves a little more memory but costs 15% more CPU in lock waits.
fn main() -> ExitCode {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let arenas = i32::try_from(threads + 2).unwrap_or(i32::MAX);
        // SAFETY: mallopt only sets a parameter of the allocator, before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
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
            eprint!("{}", ctxbench::cli::describe_error(&err));
            ExitCode::from(2)
        }
    }
}
