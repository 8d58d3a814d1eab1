//! The subcommands' work: each turns parsed arguments into library calls and terminal output.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::args::RunArgs;
use super::console::count;
use super::progress::{progress_bar, Bar};
use crate::history::validate::validate_path;
use crate::run::{self, RunConfig};

pub(super) fn cmd_validate(stdout: &mut impl Write, paths: &[PathBuf]) -> Result<bool> {
    let mut ok = true;
    for path in paths {
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
    let RunArgs {
        dataset,
        config: config_path,
        strategies,
        out,
        name,
        window,
        min_retention,
        min_needs,
        recommend_without_retention,
        unrecorded,
        tokens,
        verbose,
        wide,
        explore,
        no_cache,
        resume,
        keep_going,
        dry_run,
        max_cost,
        shard,
        calls,
    } = args;
    let shard = shard
        .map(|s| run::shard::Shard::parse(&s, |k| std::env::var(k).ok()))
        .transpose()?;
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
    if let Some(m) = min_retention {
        config.min_retention = m;
    }
    if let Some(n) = min_needs {
        config.min_needs = n;
    }
    config.recommend_without_retention |= recommend_without_retention;
    if let Some(u) = unrecorded {
        config.unrecorded = u;
    }
    config.tokenizer = tokens.apply(config.tokenizer);
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
    if max_cost.is_some_and(|c| !c.is_finite() || c < 0.0) {
        bail!("--max-cost must be a number of USD, 0 or more");
    }
    if dry_run {
        let estimate = run::dry_run(&config, dataset)?;
        write!(stdout, "{}", estimate.to_markdown())?;
        return Ok(true);
    }
    for w in config.warnings() {
        eprintln!("warning: {w}");
    }
    let out = out.unwrap_or_else(|| PathBuf::from("reports").join(&name));
    let bar = progress_bar(dataset);
    if let Ok(staging) = run::staging::staging_dir(&out) {
        // The command as typed, each argument quoted where a shell would split or expand it.
        let command: Vec<String> = std::env::args()
            .filter(|a| a != "--resume")
            .map(|a| {
                if a.is_empty()
                    || a.contains(|c: char| c.is_whitespace() || "'\"$`\\*?".contains(c))
                {
                    format!("'{}'", a.replace('\'', "'\\''"))
                } else {
                    a
                }
            })
            .collect();
        super::progress::on_interrupt(command.join(" "), &staging);
    }
    let options = run::RunOptions {
        resume,
        keep_going,
        max_cost,
        shard,
        calls,
    };
    let outcome = match run::run(&config, dataset, &out, &name, &Bar(bar.clone()), &options) {
        Ok(outcome) => outcome,
        Err(e) => {
            let staging = run::staging::staging_dir(&out).unwrap_or_else(|_| out.clone());
            let finished = run::staging::finished_in(&staging);
            let context = if matches!(e, crate::error::Error::Config(_)) {
                // Refused before any episode ran (a bad config, an interrupted run in the way, no episode).
                format!("run '{name}' did not start{}", previous(&out))
            } else if finished > 0 {
                format!(
                    "run '{name}' stopped; the {finished} episode(s) it finished are in '{}' (`ctxbench run \
                     --resume` with the same arguments continues it){}",
                    staging.display(),
                    previous(&out)
                )
            } else {
                format!(
                    "run '{name}' failed before finishing an episode{}",
                    previous(&out)
                )
            };
            return Err(anyhow::Error::new(e).context(context));
        }
    };
    bar.finish_and_clear();
    let r = &outcome.report;
    writeln!(
        stdout,
        "{} episodes, {} items, window {} tokens, agent model {}\n",
        r.dataset.episodes, r.dataset.items, config.context_window, config.pricing.agent_model
    )?;
    let width = super::console::width();
    write!(
        stdout,
        "{}",
        super::console::comparison(&r.strategies, wide || verbose, width)
    )?;
    writeln!(stdout)?;
    if let Some(pick) = &r.recommendation {
        writeln!(
            stdout,
            "{}\n",
            super::console::paragraph(
                &format!("What to pick: {}", pick.text.replace('`', "")),
                width
            )
        )?;
    }
    for line in crate::report::table::reading(r) {
        writeln!(
            stdout,
            "{}",
            super::console::paragraph(&line.replace('`', ""), width)
        )?;
    }
    writeln!(stdout)?;
    for t in r.timings.iter().filter(|_| verbose) {
        write!(
            stdout,
            "strategy compute {}: p50 {:.0} µs, p95 {:.0} µs",
            t.strategy, t.compute_p50_us, t.compute_p95_us
        )?;
        if t.llm_calls > 0 {
            write!(
                stdout,
                "; {} LLM calls: p50 {:.0} ms, p95 {:.0} ms",
                t.llm_calls, t.llm_p50_ms, t.llm_p95_ms
            )?;
        }
        writeln!(stdout)?;
    }
    for (name, stats) in [("LLM", &outcome.llm), ("Judge", &outcome.judge)] {
        let Some(s) = stats else { continue };
        writeln!(
            stdout,
            "\n{name}: {} calls, {} distinct requests: {} from the cache, {} shared with an identical one; {} HTTP \
             requests sent ({} retries), {} failed, {} without usage (counted){}{}",
            s.calls,
            s.unique,
            s.cached,
            s.shared,
            s.sent,
            s.retries,
            s.failed,
            s.estimated,
            s.mean_in_flight.map_or_else(String::new, |m| format!(
                "; {m:.2} of {} in flight on average ({:.0}%)",
                s.max_concurrency,
                100.0 * m / s.max_concurrency as f64
            )),
            s.spent_usd
                .map_or_else(String::new, |usd| format!("; ${usd:.4} spent")),
        )?;
    }
    writeln!(stdout, "\nwrote {}", outcome.dir.display())?;
    if r.complete && r.failed.is_empty() {
        match explore {
            Some(n) if n > 0 => {
                let episodes = run::show::most_informative(&outcome.dir, n)?;
                let options = run::show::ShowOptions {
                    episodes,
                    ..run::show::ShowOptions::default()
                };
                let pages = run::show::show(&outcome.dir, &options)
                    .context("failed to write the episode pages (--explore)")?;
                print_pages(stdout, &pages)?;
            }
            _ => writeln!(
                stdout,
                "what each strategy sent, episode by episode: ctxbench show {}",
                outcome.dir.display()
            )?,
        }
    }
    if !r.failed.is_empty() {
        writeln!(
            stdout,
            "the run is incomplete, so it stays in '{}'{}; `ctxbench run --resume` retries the episodes left out",
            outcome.dir.display(),
            previous(&out)
        )?;
        writeln!(
            stdout,
            "\n{} episode(s) left out of every figure because an LLM call failed (see the report):",
            r.failed.len()
        )?;
        for f in &r.failed {
            writeln!(stdout, "  {}: {}", f.episode, f.error)?;
        }
        return Ok(false);
    }
    Ok(true)
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
        tokenizer: (args.tokenizer, args.chat_template),
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
fn previous(out: &std::path::Path) -> String {
    if out.join("summary.json").exists() {
        format!(
            "; the previous complete run in '{}' is untouched",
            out.display()
        )
    } else {
        String::new()
    }
}
