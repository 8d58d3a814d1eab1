//! The command-line interface: argument parsing and terminal output over the library.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod console;
mod error;
mod import;
mod progress;
mod strategies;
mod summary;
mod usage;

use anyhow::Result;

pub use args::Cli;
use args::Command;
pub use error::Hinted;

/// Runs the parsed command; `Ok(false)` means a check failed (exit code 1).
///
/// # Errors
/// Any harness error, with context.
pub fn run(cli: Cli) -> Result<bool> {
    let mut stdout = std::io::stdout().lock();
    let out = &mut stdout;
    match cli.command {
        Command::Run(args) => commands::cmd_run(out, args),
        Command::Sweep(args) => commands::cmd_sweep(out, &args),
        Command::Report { run_dir, wide } => commands::cmd_report(out, &run_dir, wide),
        Command::Show(args) => commands::cmd_show(out, args),
        Command::Validate { paths } => commands::cmd_validate(out, &paths),
        Command::Init(args) => commands::cmd_init(out, &args),
        Command::Gen { seed, out: file } => commands::cmd_gen(out, seed, &file),
        Command::Strategies { verbose } => strategies::list(out, verbose).map(|()| true),
        Command::Sends(args) => strategies::sends(out, &args).map(|()| true),
        Command::Merge(args) => commands::cmd_merge(out, &args),
        Command::Usage(args) => usage::cmd_usage(out, &args),
        Command::Import(args) => import::cmd_import(out, &args),
    }
}

/// The message of a failed command, for stderr: what failed, each cause once, what to do; within 100 columns.
#[must_use]
pub fn describe_error(err: &anyhow::Error) -> String {
    error::describe(err, 100)
}
