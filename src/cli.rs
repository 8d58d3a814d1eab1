//! The command-line interface: argument parsing and terminal output over the library.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use crate::history::dataset::write_episodes;
use crate::history::validate::validate_path;
use crate::report::markdown::comparison_table;
use crate::runner::{self, Progress, RunConfig};

/// Replay recorded AI-agent histories through context-reduction strategies and measure savings, cost and
/// retention of key findings.
#[derive(Debug, Parser)]
#[command(name = "ctxbench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay a dataset through strategies with the mock LLM and write a report.
    Run {
        /// Dataset file or directory of .jsonl files.
        #[arg(long, default_value = "datasets")]
        dataset: PathBuf,
        /// TOML config (strategies, window, tokenizer, pricing, mock model).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Strategies to compare, by name (comma-separated or repeated); default: all in the config.
        #[arg(long, value_delimiter = ',')]
        strategies: Vec<String>,
        /// Output directory; default reports/<name>.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run name; default: the config file's stem, or "default".
        #[arg(long)]
        name: Option<String>,
        /// Override the context window, in tokens.
        #[arg(long)]
        window: Option<usize>,
    },
    /// Check dataset files and report every problem with file, line, episode and field.
    Validate {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Generate the bundled default dataset (seeded, byte-identical on every machine).
    Gen {
        /// Seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Output file.
        #[arg(long, short, default_value = "datasets/default.jsonl")]
        out: PathBuf,
    },
    /// List the built-in strategies with their configuration.
    Strategies,
    /// Convert agent traces (OpenAI, Anthropic, SWE-agent, mini-swe-agent, OpenHands, Claude Code, tau-bench,
    /// aider, smolagents) into a ctxbench dataset, adding automatic findings where there are none.
    Import {
        /// The trace format.
        #[arg(long, short, value_enum, default_value = "auto")]
        format: crate::history::import::Format,
        /// Trace files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output dataset (JSONL).
        #[arg(long, short)]
        out: PathBuf,
    },
}

struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

/// Runs the parsed command; `Ok(false)` means a check failed (exit code 1).
///
/// # Errors
/// Any harness error, with context.
pub fn run(cli: Cli) -> Result<bool> {
    let mut stdout = std::io::stdout().lock();
    match cli.command {
        Command::Run {
            dataset,
            config,
            strategies,
            out,
            name,
            window,
        } => cmd_run(
            &mut stdout,
            &dataset,
            config.as_deref(),
            &strategies,
            out,
            name,
            window,
        ),
        Command::Validate { paths } => cmd_validate(&mut stdout, &paths),
        Command::Gen { seed, out } => {
            let episodes = crate::gen::generate(seed);
            if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("failed to create '{}'", dir.display()))?;
            }
            let mut bytes = Vec::new();
            write_episodes(&mut bytes, &episodes)?;
            crate::report::write_atomic(&out, &bytes)?;
            let items: usize = episodes.iter().map(|e| e.items.len()).sum();
            writeln!(
                stdout,
                "wrote {} episodes ({items} items) to {}",
                episodes.len(),
                out.display()
            )?;
            Ok(true)
        }
        Command::Import { format, files, out } => {
            let mut episodes = Vec::new();
            for f in &files {
                let eps = crate::history::import::import_file(f, format)
                    .with_context(|| format!("failed to import '{}'", f.display()))?;
                for ep in &eps {
                    if let Some(issue) = crate::history::validate::check_episode(ep)
                        .into_iter()
                        .next()
                    {
                        bail!(
                            "imported episode '{}' from '{}' is invalid: {}: {}",
                            ep.id,
                            f.display(),
                            issue.field,
                            issue.message
                        );
                    }
                    writeln!(
                        stdout,
                        "{}: episode '{}', {} items, {} findings",
                        f.display(),
                        ep.id,
                        ep.items.len(),
                        ep.findings.len()
                    )?;
                }
                episodes.extend(eps);
            }
            let mut bytes = Vec::new();
            write_episodes(&mut bytes, &episodes)?;
            crate::report::write_atomic(&out, &bytes)?;
            writeln!(
                stdout,
                "wrote {} episodes to {}",
                episodes.len(),
                out.display()
            )?;
            Ok(true)
        }
        Command::Strategies => {
            for s in crate::strategy::defaults() {
                writeln!(
                    stdout,
                    "{:<16} {}",
                    s.name,
                    serde_json::to_string(&s.config)?
                )?;
            }
            Ok(true)
        }
    }
}

fn cmd_validate(stdout: &mut impl Write, paths: &[PathBuf]) -> Result<bool> {
    let mut ok = true;
    for path in paths {
        let v = validate_path(path)?;
        for p in &v.problems {
            writeln!(stdout, "{p}")?;
        }
        writeln!(
            stdout,
            "{}: {} files, {} episodes, {} items, {} findings, {} probes, {} problems",
            path.display(),
            v.files,
            v.episodes,
            v.items,
            v.findings,
            v.probes,
            v.problems.len()
        )?;
        ok &= v.is_ok();
    }
    Ok(ok)
}

fn cmd_run(
    stdout: &mut impl Write,
    dataset: &Path,
    config_path: Option<&Path>,
    strategies: &[String],
    out: Option<PathBuf>,
    name: Option<String>,
    window: Option<usize>,
) -> Result<bool> {
    let mut config = match config_path {
        Some(p) => RunConfig::from_file(p)?,
        None => RunConfig::default(),
    };
    if let Some(w) = window {
        config.context_window = w;
    }
    if !strategies.is_empty() {
        config.select(strategies)?;
    }
    config.validate()?;
    let name = name
        .or_else(|| {
            config_path
                .and_then(|p| p.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "default".into());
    if name.contains(['/', '\\']) || name.starts_with('.') {
        bail!("run name '{name}' must not contain a path separator or start with '.'");
    }
    let out = out.unwrap_or_else(|| PathBuf::from("reports").join(&name));
    let bar = indicatif::ProgressBar::new_spinner().with_message("episodes replayed");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let outcome =
        runner::run(&config, dataset, &out, &name, &Bar(bar.clone())).with_context(|| {
            format!(
                "run '{name}' failed; finished episodes are in '{}'",
                out.display()
            )
        })?;
    bar.finish_and_clear();
    let r = &outcome.report;
    writeln!(
        stdout,
        "{} episodes, {} items, window {} tokens, agent model {}\n",
        r.dataset.episodes, r.dataset.items, config.context_window, config.pricing.agent_model
    )?;
    write!(stdout, "{}", comparison_table(&r.strategies))?;
    writeln!(stdout)?;
    for (s, p50, p95) in &r.timings {
        writeln!(
            stdout,
            "strategy compute {s}: p50 {p50:.0} µs, p95 {p95:.0} µs"
        )?;
    }
    writeln!(stdout, "\nwrote {}", outcome.dir.display())?;
    Ok(true)
}
