//! The subcommands' work: each turns parsed arguments into library calls and terminal output.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::args::{MergeArgs, RunArgs, SweepArgs};
use super::console::{comparison, count, paragraph};
use super::progress::{progress_bar, Bar};
use super::summary::{self, View};
use crate::history::validate::validate_path;
use crate::run::{self, RunConfig};

pub(super) fn cmd_validate(stdout: &mut impl Write, paths: &[PathBuf]) -> Result<bool> {
    let mut ok = true;
    for path in paths {
        note_bundled(path);
        let v = validate_path(path)?;
        for p in &v.problems {
            writeln!(stdout, "{p}")?;
        }
        for w in &v.warnings {
            writeln!(stdout, "warning: {w}")?;
        }
        let line = format!(
            "{}: {}",
            path.display(),
            [
                count(v.files, "file", "files"),
                count(v.episodes, "episode", "episodes"),
                count(v.items, "item", "items"),
                count(v.findings, "finding", "findings"),
                count(v.probes, "probe", "probes"),
                count(v.problems.len(), "problem", "problems"),
                count(v.warnings.len(), "warning", "warnings"),
            ]
            .join(", ")
        );
        writeln!(stdout, "{}", super::console::hanging(&line, 100, 2))?;
        ok &= v.is_ok();
    }
    Ok(ok)
}

pub(super) fn cmd_run(stdout: &mut impl Write, args: RunArgs) -> Result<bool> {
    let (config, name) = configured(&args)?;
    let dataset = args.dataset.as_path();
    crate::history::dataset::dataset_files(dataset)
        .with_context(|| format!("run '{name}' did not start"))?;
    note_bundled(dataset);
    if args.dry_run {
        write!(stdout, "{}", run::dry_run(&config, dataset)?.to_markdown())?;
        return Ok(true);
    }
    for w in config.warnings() {
        eprintln!(
            "{}",
            super::console::hanging(&format!("warning: {w}"), 100, 2)
        );
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports").join(&name));
    let shard = args
        .shard
        .as_deref()
        .map(|s| run::shard::Shard::parse(s, |k| std::env::var(k).ok()))
        .transpose()?;
    if let Ok(staging) = run::staging::staging_dir(&out) {
        super::progress::on_interrupt(typed_command(), &staging);
    }
    let options = run::RunOptions {
        resume: args.resume,
        keep_going: args.keep_going,
        max_cost: args.max_cost,
        shard,
        calls: args.calls,
    };
    let bar = progress_bar(dataset);
    let outcome = run::run(&config, dataset, &out, &name, &Bar(bar.clone()), &options)
        .map_err(|e| stopped(e, &name, &out))?;
    bar.finish_and_clear();
    summary::run(stdout, &outcome, View::new(args.wide, args.verbose))?;
    writeln!(stdout, "\nwrote {}", outcome.dir.display())?;
    finish(stdout, &outcome, args.explore, &out)
}

/// The configuration a run's arguments give (the config file's, with the options over it) and the run's name.
fn configured(args: &RunArgs) -> Result<(RunConfig, String)> {
    let config_path = args.config.as_deref();
    config_path.inspect(|p| note_bundled(p));
    let mut config = match config_path {
        Some(p) => RunConfig::from_file(p)?,
        None => RunConfig::default(),
    };
    config.apply(&args.overrides())?;
    let name = args
        .name
        .clone()
        .or_else(|| {
            config_path
                .and_then(|p| p.file_stem())
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "default".into());
    if name.contains(['/', '\\']) || name.starts_with('.') {
        bail!("run name '{name}' must not contain a path separator or start with '.'");
    }
    if args.max_cost.is_some_and(|c| !c.is_finite() || c < 0.0) {
        bail!("--max-cost must be a number of USD, 0 or more");
    }
    Ok((config, name))
}

/// The command as typed, without `--resume`, each argument quoted where a shell would split or expand it:
/// what an interrupted run says to type to continue.
fn typed_command() -> String {
    std::env::args()
        .filter(|a| a != "--resume")
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\*?".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A run's error with what became of its output: refused before it started, stopped with finished episodes
/// to resume from, or failed before finishing one.
fn stopped(e: crate::error::Error, name: &str, out: &Path) -> anyhow::Error {
    let staging = run::staging::staging_dir(out).unwrap_or_else(|_| out.to_path_buf());
    let finished = run::staging::finished_in(&staging);
    let context = if matches!(e, crate::error::Error::Config(_)) {
        // Refused before any episode ran (a bad config, an interrupted run in the way, no episode).
        format!("run '{name}' did not start{}", previous(out))
    } else if finished > 0 {
        format!(
            "run '{name}' stopped; the {finished} episode(s) it finished are in '{}' (`ctxbench run --resume` \
             with the same arguments continues it){}",
            staging.display(),
            previous(out)
        )
    } else {
        format!(
            "run '{name}' failed before finishing an episode{}",
            previous(out)
        )
    };
    anyhow::Error::new(e).context(context)
}

/// After a run's summary: the explorer pages (`--explore`) or how to write them, or the episodes a failed
/// call left out; `Ok(false)` when the run is incomplete.
fn finish(
    stdout: &mut impl Write,
    outcome: &run::RunOutcome,
    explore: Option<usize>,
    out: &Path,
) -> Result<bool> {
    let r = &outcome.report;
    if r.failed.is_empty() {
        if !r.complete {
            return Ok(true);
        }
        match explore.filter(|&n| n > 0) {
            Some(n) => {
                let options = run::show::ShowOptions {
                    episodes: run::show::most_informative(&outcome.dir, n)?,
                    ..run::show::ShowOptions::default()
                };
                let pages = run::show::show(&outcome.dir, &options)
                    .context("failed to write the episode pages (--explore)")?;
                print_pages(stdout, &pages)?;
            }
            None => writeln!(
                stdout,
                "what each strategy sent, episode by episode: ctxbench show {}",
                outcome.dir.display()
            )?,
        }
        return Ok(true);
    }
    writeln!(
        stdout,
        "the run is incomplete, so it stays in '{}'{}; `ctxbench run --resume` retries the episodes left out",
        outcome.dir.display(),
        previous(out)
    )?;
    writeln!(
        stdout,
        "\n{} episode(s) left out of every figure because an LLM call failed (see the report):",
        r.failed.len()
    )?;
    for f in &r.failed {
        writeln!(stdout, "  {}: {}", f.episode, f.error)?;
    }
    Ok(false)
}

/// Prints each page written and its size.
pub(super) fn print_pages(stdout: &mut impl Write, pages: &[run::show::Page]) -> Result<()> {
    for p in pages {
        #[allow(clippy::cast_precision_loss)]
        let mb = p.bytes as f64 / 1e6;
        let mut line = format!("{} ({mb:.1} MB)", p.path.display());
        if let Some((names, full)) = &p.narrow {
            line.push_str(&format!(": {} beside the baseline", names.join(", ")));
            if let Some(full) = full {
                line.push_str(&format!(
                    ", written beside the page with every strategy ({}), which is kept",
                    full.display()
                ));
            }
        }
        writeln!(stdout, "{}", super::console::hanging(&line, 100, 2))?;
    }
    Ok(())
}

pub(super) fn cmd_show(stdout: &mut impl Write, args: super::args::ShowArgs) -> Result<bool> {
    let options = run::show::ShowOptions {
        episodes: args.episodes,
        strategies: args.strategies,
        dataset: args.dataset,
        call_llm: args.call_llm,
        tokenizer: run::TokenizerOverride {
            file: args.tokenizer,
            chat_template: args.chat_template,
            ..run::TokenizerOverride::default()
        },
        max_cost: args.max_cost,
    };
    let pages = run::show::show(&args.run_dir, &options).with_context(|| {
        format!(
            "failed to write the episode pages of '{}'",
            args.run_dir.display()
        )
    })?;
    print_pages(stdout, &pages)?;
    Ok(true)
}

/// What a stopped or incomplete run says about the output directory it did not replace.
fn previous(out: &Path) -> String {
    if out.join("summary.json").exists() {
        format!(
            "; the previous complete run in '{}' is untouched",
            out.display()
        )
    } else {
        String::new()
    }
}

/// `ctxbench report`: the pages of a run directory rebuilt from its records.
pub(super) fn cmd_report(stdout: &mut impl Write, run_dir: &Path, wide: bool) -> Result<bool> {
    let run = crate::report::rebuild::rebuild(run_dir)
        .with_context(|| format!("failed to rebuild the report of '{}'", run_dir.display()))?;
    let view = View::new(wide, false);
    write!(stdout, "{}", comparison(&run, view.wide, view.width))?;
    writeln!(
        stdout,
        "\nrewrote report.md, report.html and charts in {}",
        run_dir.display()
    )?;
    Ok(true)
}

/// `ctxbench sweep`: the grid run over the config, and its recommendation.
pub(super) fn cmd_sweep(stdout: &mut impl Write, args: &SweepArgs) -> Result<bool> {
    for path in [&args.config, &args.grid].into_iter().flatten() {
        note_bundled(path);
    }
    let mut base = match &args.config {
        Some(p) => RunConfig::from_file(p)?,
        None => RunConfig::default(),
    };
    base.apply(&crate::run::Overrides {
        window: args.window,
        min_needs: args.min_needs,
        min_episodes: args.min_episodes,
        ..crate::run::Overrides::default()
    })?;
    let mut sweep = match &args.grid {
        Some(p) => {
            let text = crate::bundled::read_to_string(p)?;
            crate::sweep::SweepConfig::parse(&text, &p.display().to_string())?
        }
        None => crate::sweep::SweepConfig::parse(crate::sweep::BUILTIN, "configs/sweep.toml")?,
    };
    if let Some(m) = args.min_retention {
        if !(0.0..=1.0).contains(&m) {
            bail!("--min-retention {m} is outside [0, 1]");
        }
        sweep.min_retention = m;
    }
    note_bundled(&args.dataset);
    let name = &args.name;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports").join(name));
    let bar = progress_bar(&args.dataset);
    let (outcome, rec) =
        crate::sweep::run(&base, &sweep, &args.dataset, &out, name, &Bar(bar.clone()))
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
        paragraph(&rec.text, super::console::width()),
        out.display()
    )?;
    Ok(true)
}

/// `ctxbench gen`: a generated dataset; only seed 42 may write the bundled one.
pub(super) fn cmd_gen(stdout: &mut impl Write, seed: u64, out: &Path) -> Result<bool> {
    let bundled = Path::new(crate::bundled::DATASET);
    if seed != crate::bundled::DATASET_SEED && out.ends_with(bundled) {
        bail!(
            "seed {seed} would overwrite the bundled dataset '{}', which is seed 42's: give --out, e.g. --out \
             datasets/seed-{seed}.jsonl",
            out.display()
        );
    }
    let episodes = crate::gen::generate(seed);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("failed to create '{}'", dir.display()))?;
    }
    let mut bytes = Vec::new();
    crate::history::dataset::write_episodes(&mut bytes, &episodes)?;
    crate::files::write_atomic(out, &bytes)?;
    let items: usize = episodes.iter().map(|e| e.items.len()).sum();
    writeln!(
        stdout,
        "wrote {} episodes ({items} items) to {}",
        episodes.len(),
        out.display()
    )?;
    Ok(true)
}

/// `ctxbench merge`: the shard runs combined, and the comparison they make.
pub(super) fn cmd_merge(stdout: &mut impl Write, args: &MergeArgs) -> Result<bool> {
    let outcome = run::shard::merge(&args.dirs, &args.out, &args.name, args.dataset.as_deref())
        .with_context(|| format!("failed to merge into '{}'", args.out.display()))?;
    let r = &outcome.report;
    writeln!(
        stdout,
        "merged {} shard runs: {} episodes, {} items\n",
        args.dirs.len(),
        r.dataset.episodes,
        r.dataset.items
    )?;
    summary::comparison_and_pick(stdout, r, View::new(args.wide, false))?;
    writeln!(stdout, "\nwrote {}", outcome.dir.display())?;
    Ok(true)
}

/// `ctxbench init`: a starting configuration, the bundled one, written where the user will edit it.
pub(super) fn cmd_init(stdout: &mut impl Write, args: &super::args::InitArgs) -> Result<bool> {
    use super::args::InitKind;
    let (bundled, default_out, next) = match args.kind {
        InitKind::Run => (
            "configs/default.toml",
            "ctxbench.toml",
            "ctxbench run --config",
        ),
        InitKind::Sweep => ("configs/sweep.toml", "sweep.toml", "ctxbench sweep --grid"),
        InitKind::SweepPresets => (
            "configs/sweep_presets.toml",
            "sweep_presets.toml",
            "ctxbench sweep --grid",
        ),
    };
    let text = crate::bundled::FILES
        .iter()
        .find_map(|(name, text)| (*name == bundled).then_some(*text))
        .context("the bundled configurations hold every kind `init` writes")?;
    let out = args.out.clone().unwrap_or_else(|| default_out.into());
    if out.exists() && !args.force {
        return Err(super::Hinted::new(
            format!(
                "'{}' already exists, and `init` replaces no file",
                out.display()
            ),
            "give another file with --out, or --force to replace it",
        )
        .into());
    }
    crate::files::write_atomic(&out, text.as_bytes())?;
    writeln!(stdout, "wrote {} (the bundled {bundled})", out.display())?;
    writeln!(stdout, "edit it, then: {next} {}", out.display())?;
    Ok(true)
}

/// Says on stderr where the bundled dataset or a bundled configuration is read from memory, because no file
/// is at its path here.
pub(super) fn note_bundled(path: &Path) {
    if crate::bundled::is_generated_dataset(path) {
        eprintln!(
            "note: no {} here: the bundled dataset is generated in memory (`ctxbench gen` writes it)",
            path.display()
        );
    } else if crate::bundled::embedded(path).is_some() {
        eprintln!(
            "note: no {} here: ctxbench reads its bundled copy (`ctxbench init` writes one to edit)",
            path.display()
        );
    }
}
