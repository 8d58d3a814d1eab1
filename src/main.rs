//! The `ctxbench` binary: parse arguments, run, map the result to an exit code.
#![allow(clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;

/// mimalloc: a comparison allocates and frees many short-lived strings and buffers; with the system allocator
/// a run spent a tenth of its time in malloc, free and page faults (a full comparison of the bundled dataset is
/// about 7% faster with it, interleaved runs). Built without its transparent huge pages (`no_thp`): a fault
/// in a huge-page region zeroes and keeps 2 MiB, and a run of the bundled dataset peaked at 102 MB with them,
/// 45 MB without, in the same time (21 interleaved runs: 98.7 and 98.0 ms).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
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
