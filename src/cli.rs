//! The command-line interface: argument parsing and terminal output over the library.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::PathBuf;

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
    /// Replay a dataset through strategies (the mock LLM, or a real one from the config's `[llm]`) and write
    /// a report.
    Run(RunArgs),
    /// Run a grid of strategy settings and recommend the cheapest one that keeps enough findings.
    Sweep {
        /// Dataset file or directory of .jsonl files.
        #[arg(long, default_value = "datasets")]
        dataset: PathBuf,
        /// Run config (window, tokenizer, pricing); its strategies are replaced by the grid.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Sweep grid (TOML); default: the built-in configs/sweep.toml.
        #[arg(long)]
        grid: Option<PathBuf>,
        /// The lowest acceptable final retention, overriding the grid file's.
        #[arg(long)]
        min_retention: Option<f64>,
        /// Output directory; default reports/<name>.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run name.
        #[arg(long, default_value = "sweep")]
        name: String,
    },
    /// Re-create report.md, report.html and the charts of a run directory from its saved records.
    Report {
        /// The run directory (holding summary.json and steps.csv).
        run_dir: PathBuf,
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

/// Arguments of `ctxbench run`.
#[derive(Debug, clap::Args)]
struct RunArgs {
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
    /// With a real LLM (`[llm]` in the config): ignore the response cache and call the endpoint again.
    #[arg(long)]
    no_cache: bool,
    /// Continue the interrupted run in the output directory (same config and dataset), skipping the episodes
    /// it finished.
    #[arg(long)]
    resume: bool,
}

struct Bar(indicatif::ProgressBar);

/// A spinner counting finished episodes on stderr; indicatif hides it when stderr is not a terminal.
fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner().with_message("episodes replayed");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

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
        Command::Run(args) => cmd_run(&mut stdout, args),
        Command::Validate { paths } => cmd_validate(&mut stdout, &paths),
        Command::Report { run_dir } => {
            let run = crate::report::rebuild::rebuild(&run_dir).with_context(|| {
                format!("failed to rebuild the report of '{}'", run_dir.display())
            })?;
            write!(stdout, "{}", comparison_table(&run.strategies))?;
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
            let bar = progress_bar();
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
                rec.text,
                out.display()
            )?;
            Ok(true)
        }
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
            writeln!(stdout, "Built-in strategies (the default comparison):")?;
            for s in crate::strategy::defaults() {
                writeln!(
                    stdout,
                    "  {:<16} {}",
                    s.name,
                    serde_json::to_string(&s.config)?
                )?;
            }
            writeln!(
                stdout,
                "\nPeer presets (`--strategies NAME`, or `--strategies presets` for all):"
            )?;
            for p in crate::strategy::presets::presets() {
                writeln!(stdout, "  {}", p.name)?;
                writeln!(stdout, "      source: {}", p.source)?;
                writeln!(stdout, "      does:   {}", p.note)?;
                writeln!(
                    stdout,
                    "      config: {}",
                    serde_json::to_string(&p.config)?
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

fn cmd_run(stdout: &mut impl Write, args: RunArgs) -> Result<bool> {
    let RunArgs {
        dataset,
        config: config_path,
        strategies,
        out,
        name,
        window,
        no_cache,
        resume,
    } = args;
    let (dataset, config_path) = (dataset.as_path(), config_path.as_deref());
    let mut config = match config_path {
        Some(p) => RunConfig::from_file(p)?,
        None => RunConfig::default(),
    };
    if no_cache {
        if let Some(llm) = &mut config.llm {
            llm.use_cache = false;
        }
    }
    if let Some(w) = window {
        config.context_window = w;
    }
    if !strategies.is_empty() {
        config.select(&strategies)?;
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
    let bar = progress_bar();
    let outcome = runner::run(&config, dataset, &out, &name, &Bar(bar.clone()), resume)
        .with_context(|| {
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
