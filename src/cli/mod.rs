//! The command-line interface: argument parsing and terminal output over the library.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod console;
mod import;
mod progress;
mod strategies;
mod usage;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::files::write_atomic;
use crate::history::dataset::write_episodes;
use crate::run::RunConfig;
pub use args::Cli;
use args::Command;
use commands::{cmd_run, cmd_validate};
use progress::{progress_bar, Bar};

/// Runs the parsed command; `Ok(false)` means a check failed (exit code 1).
///
/// # Errors
/// Any harness error, with context.
pub fn run(cli: Cli) -> Result<bool> {
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Run(args) => cmd_run(&mut stdout, args),
        Command::Validate { paths } => cmd_validate(&mut stdout, &paths),
        Command::Report { run_dir, wide } => {
            let run = crate::report::rebuild::rebuild(&run_dir).with_context(|| {
                format!("failed to rebuild the report of '{}'", run_dir.display())
            })?;
            write!(
                stdout,
                "{}",
                console::comparison(&run.strategies, wide, console::width())
            )?;
            writeln!(
                stdout,
                "\nrewrote report.md, report.html and charts in {}",
                run_dir.display()
            )?;
            Ok(true)
        }
        Command::Sweep {
            dataset,
            config,
            grid,
            min_retention,
            out,
            name,
        } => {
            let base = match &config {
                Some(p) => RunConfig::from_file(p)?,
                None => RunConfig::default(),
            };
            let mut sweep = match &grid {
                Some(p) => {
                    let text = std::fs::read_to_string(p)
                        .with_context(|| format!("failed to read '{}'", p.display()))?;
                    crate::sweep::SweepConfig::parse(&text, &p.display().to_string())?
                }
                None => {
                    crate::sweep::SweepConfig::parse(crate::sweep::BUILTIN, "configs/sweep.toml")?
                }
            };
            if let Some(m) = min_retention {
                if !(0.0..=1.0).contains(&m) {
                    bail!("--min-retention {m} is outside [0, 1]");
                }
                sweep.min_retention = m;
            }
            let out = out.unwrap_or_else(|| PathBuf::from("reports").join(&name));
            let bar = progress_bar(&dataset);
            let (outcome, rec) =
                crate::sweep::run(&base, &sweep, &dataset, &out, &name, &Bar(bar.clone()))
                    .with_context(|| {
                        format!(
                            "sweep '{name}' failed; finished episodes are in '{}'",
                            out.display()
                        )
                    })?;
            bar.finish_and_clear();
            writeln!(
                stdout,
                "{} settings on {} episodes\n\n{}\n\nwrote {}",
                outcome.report.strategies.len() - 1,
                outcome.report.dataset.episodes,
                console::paragraph(&rec.text, console::width()),
                out.display()
            )?;
            Ok(true)
        }
        Command::Gen { seed, out } => {
            // The bundled dataset is the one seed 42 makes; another seed goes to a file of its own.
            let bundled = std::path::Path::new("datasets/default.jsonl");
            if seed != 42 && out.ends_with(bundled) {
                bail!(
                    "seed {seed} would overwrite the bundled dataset '{}', which is seed 42's: give --out, \
                     e.g. --out datasets/seed-{seed}.jsonl",
                    out.display()
                );
            }
            let episodes = crate::gen::generate(seed);
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("failed to create '{}'", dir.display()))?;
            }
            let mut bytes = Vec::new();
            write_episodes(&mut bytes, &episodes)?;
            write_atomic(&out, &bytes)?;
            let items: usize = episodes.iter().map(|e| e.items.len()).sum();
            writeln!(
                stdout,
                "wrote {} episodes ({items} items) to {}",
                episodes.len(),
                out.display()
            )?;
            Ok(true)
        }
        Command::Import {
            format,
            files,
            out,
            tools,
            tokens,
            unrecorded,
        } => import::cmd_import(
            &mut stdout,
            &format,
            &files,
            &out,
            tools.as_deref(),
            &tokens,
            unrecorded,
        ),
        Command::Show(args) => commands::cmd_show(&mut stdout, args),
        Command::Merge {
            dirs,
            out,
            name,
            wide,
        } => {
            let outcome = crate::run::shard::merge(&dirs, &out, &name)
                .with_context(|| format!("failed to merge into '{}'", out.display()))?;
            let r = &outcome.report;
            writeln!(
                stdout,
                "merged {} shard runs: {} episodes, {} items\n",
                dirs.len(),
                r.dataset.episodes,
                r.dataset.items
            )?;
            let width = console::width();
            write!(
                stdout,
                "{}",
                console::comparison(&r.strategies, wide, width)
            )?;
            if let Some(pick) = &r.recommendation {
                writeln!(
                    stdout,
                    "\n{}",
                    console::paragraph(
                        &format!("What to pick: {}", pick.text.replace('`', "")),
                        width
                    )
                )?;
            }
            writeln!(stdout, "\nwrote {}", outcome.dir.display())?;
            Ok(true)
        }
        Command::Usage {
            dataset,
            tokens,
            unrecorded,
            per_call,
        } => usage::cmd_usage(&mut stdout, &dataset, &tokens, unrecorded, per_call),
        Command::Strategies { verbose } => {
            strategies::list(&mut stdout, verbose)?;
            Ok(true)
        }
    }
}
