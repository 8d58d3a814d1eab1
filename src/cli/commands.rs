//! The subcommands' work: each turns parsed arguments into library calls and terminal output.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::args::RunArgs;
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
        writeln!(
            stdout,
            "{}: {} files, {} episodes, {} items, {} findings, {} probes, {} problems, {} warnings",
            path.display(),
            v.files,
            v.episodes,
            v.items,
            v.findings,
            v.probes,
            v.problems.len(),
            v.warnings.len()
        )?;
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
        writeln!(stdout, "{} ({mb:.1} MB)", p.path.display())?;
    }
    Ok(())
}

pub(super) fn cmd_show(stdout: &mut impl Write, args: super::args::ShowArgs) -> Result<bool> {
    let options = run::show::ShowOptions {
        episodes: args.episodes,
        strategies: args.strategies,
        dataset: args.dataset,
        call_llm: args.call_llm,
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

pub(super) fn cmd_usage(
    stdout: &mut impl Write,
    dataset: &std::path::Path,
    tokens: &super::args::TokenizerArgs,
    unrecorded: crate::run::UnrecordedMode,
    per_call: bool,
) -> Result<bool> {
    let tokenizer = tokens.tokenizer()?;
    let rows = crate::run::usage::compare(dataset, &tokenizer, unrecorded)
        .with_context(|| format!("failed to compare '{}'", dataset.display()))?;
    if rows.is_empty() {
        writeln!(
            stdout,
            "no episode of '{}' records its provider usage (import traces that do: SWE-agent, mini-swe-agent, \
             OpenHands, Claude Code, aider, smolagents)",
            dataset.display()
        )?;
        return Ok(true);
    }
    writeln!(
        stdout,
        "| episode | source | recorded from | call points | recorded calls | replayed input | not recorded | recorded input | replay / recorded |"
    )?;
    writeln!(stdout, "|---|---|---|---:|---:|---:|---:|---:|---:|")?;
    for r in &rows {
        writeln!(
            stdout,
            "| {} | {} | {} | {} | {}{} | {} | {} | {}{} | {} |",
            r.episode,
            r.source,
            r.recorded_from,
            r.call_points,
            r.recorded_calls
                .map_or_else(|| "–".into(), |n| n.to_string()),
            if r.unrecorded.is_empty() {
                String::new()
            } else {
                format!(" + {} without usage", r.unrecorded.len())
            },
            r.replay_input_tokens,
            if r.unrecorded_tokens > 0 {
                crate::report::pct(Some(r.unrecorded_share()))
            } else if r.leaves_out.is_some() {
                "not added".into()
            } else {
                "–".into()
            },
            r.recorded_input_tokens
                .map_or_else(|| "–".into(), |n| n.to_string()),
            if r.approximate { " (rounded)" } else { "" },
            r.ratio.map_or_else(|| "–".into(), |x| format!("{x:.3}")),
        )?;
    }
    // What a reader must know to read the table: calls without usage and failed calls, by name.
    for r in &rows {
        for u in &r.unrecorded {
            writeln!(
                stdout,
                "\n{}: call point {} has no recorded usage ({})",
                r.episode, u.call_point, u.why
            )?;
        }
        for why in &r.failed {
            writeln!(
                stdout,
                "\n{}: a failed call, not a call point ({why})",
                r.episode
            )?;
        }
    }
    if per_call {
        write_per_format(stdout, &rows)?;
        for r in &rows {
            write_per_call(stdout, r, &tokenizer.name())?;
        }
    }
    Ok(true)
}

/// `usage --per-call`: per format, call points against the calls the traces show, and the worst per-call
/// ratio (over every call, and after each episode's first).
fn write_per_format(
    stdout: &mut impl Write,
    rows: &[crate::run::usage::EpisodeUsage],
) -> Result<()> {
    writeln!(
        stdout,
        "\n| format | episodes | call points = calls shown | call points | recorded calls | without usage | failed calls | worst call (replay / recorded) | worst after the first call |"
    )?;
    writeln!(stdout, "|---|---:|---:|---:|---:|---:|---:|---|---|")?;
    let worst = |w: &Option<(String, usize, f64)>| {
        w.as_ref().map_or_else(
            || "–".to_owned(),
            |(ep, at, r)| format!("{r:.3} ({ep}, call {at})"),
        )
    };
    for (format, f) in crate::run::usage::by_format(rows) {
        writeln!(
            stdout,
            "| {format} | {} | {} | {} | {} | {} | {} | {} | {} |",
            f.episodes,
            if f.counted == 0 {
                "– (totals only)".to_owned()
            } else {
                format!("{} of {}", f.matching, f.counted)
            },
            f.call_points,
            f.recorded_calls,
            f.unrecorded,
            f.failed,
            worst(&f.worst),
            worst(&f.worst_after_first),
        )?;
    }
    Ok(())
}

/// `usage --per-call`: one episode's calls, replayed against recorded.
fn write_per_call(
    stdout: &mut impl Write,
    r: &crate::run::usage::EpisodeUsage,
    counted_with: &str,
) -> Result<()> {
    if r.calls.is_empty() {
        writeln!(
            stdout,
            "\n{}: no per-call comparison ({})",
            r.episode,
            if r.calls_match() == Some(false) {
                "the trace shows a different number of calls than the replay has call points"
            } else {
                "the trace records only the run's totals"
            }
        )?;
        return Ok(());
    }
    writeln!(stdout, "\n{} (counted with {counted_with})\n", r.episode)?;
    writeln!(
        stdout,
        "| call | replayed input | recorded input | of which cache read | of which cache write | recorded output | replay / recorded |"
    )?;
    writeln!(stdout, "|---:|---:|---:|---:|---:|---:|---:|")?;
    let dash = |n: Option<u64>| n.map_or_else(|| "–".to_owned(), |n| n.to_string());
    for c in &r.calls {
        writeln!(
            stdout,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.call_point,
            c.replayed,
            c.recorded.input_tokens,
            dash(c.recorded.cache_read_tokens),
            dash(c.recorded.cache_write_tokens),
            if r.output_unrecorded {
                "–".to_owned()
            } else {
                c.recorded.output_tokens.to_string()
            },
            c.ratio()
                .map_or_else(|| "–".to_owned(), |x| format!("{x:.3}")),
        )?;
    }
    Ok(())
}

/// The files `import` reads for `paths`: a file as given, a directory's regular files (recursively, sorted,
/// hidden ones and `*.md` notes named README or MANIFEST left out), each marked whether it came from a
/// directory (then a file in no known format is skipped with a warning rather than an error).
fn import_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push((path.clone(), false));
            continue;
        }
        let mut found = Vec::new();
        let mut dirs = vec![path.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir)
                .with_context(|| format!("failed to read the directory '{}'", dir.display()))?
            {
                let entry = entry?;
                let p = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let stem = name.split('.').next().unwrap_or("").to_ascii_uppercase();
                if name.starts_with('.') || stem == "README" || stem == "MANIFEST" {
                    continue;
                }
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    found.push(p);
                }
            }
        }
        found.sort();
        out.extend(found.into_iter().map(|p| (p, true)));
    }
    Ok(out)
}

pub(super) fn cmd_import(
    stdout: &mut impl Write,
    format: &str,
    paths: &[PathBuf],
    out: &std::path::Path,
    tools: Option<&std::path::Path>,
    tokens: &super::args::TokenizerArgs,
    unrecorded: crate::run::UnrecordedMode,
) -> Result<bool> {
    let tokenizer = tokens.tokenizer()?;
    let mut calibrated = Vec::new();
    let tools = tools
        .map(|t| {
            crate::history::import::read_tools(t)
                .map(|defs| (t, defs))
                .context("failed to read the tool definitions")
        })
        .transpose()?;
    let mut episodes = Vec::new();
    let (mut given_tools, mut skipped, mut without_findings) = (0, 0, 0);
    // Each file alone, except the files of one OpenTelemetry export (spans, logs), which are read together.
    for imported in crate::history::import::import_paths(&import_inputs(paths)?, Some(format)) {
        let (f, in_dir) = (imported.path, imported.in_dir);
        let mut eps = match imported.episodes {
            Ok(eps) => eps,
            Err(e) if in_dir => {
                writeln!(stdout, "warning: skipped '{}': {e}", f.display())?;
                skipped += 1;
                continue;
            }
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("failed to import '{}'", f.display()))
                )
            }
        };
        for ep in &mut eps {
            // Tools ctxbench ships for a format (tau-bench's, `meta.tools_from`) give way to the user's.
            let shipped = ep.meta.contains_key("tools_from");
            if let Some((_, defs)) = tools.as_ref().filter(|_| ep.tools.is_empty() || shipped) {
                ep.tools.clone_from(defs);
                ep.meta.remove("tools_from");
                given_tools += 1;
            }
            if unrecorded == crate::run::UnrecordedMode::Keep {
                if let Ok(c) = crate::replay::unrecorded::calibrate(ep, &tokenizer)? {
                    calibrated.push(c);
                }
            }
        }
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
            let detected = ep
                .meta
                .get("format")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(format);
            writeln!(
                stdout,
                "{}: {detected} trace, episode '{}', {} items, {} findings, {} probes",
                f.display(),
                ep.id,
                ep.items.len(),
                ep.findings.len(),
                ep.probes.len()
            )?;
            if ep.findings.is_empty() {
                without_findings += 1;
                writeln!(
                    stdout,
                    "warning: episode '{}' has no findings: none could be found automatically, so retention \
                     is not measured on it (add findings by hand: README, Dataset format)",
                    ep.id
                )?;
            }
        }
        episodes.extend(eps);
    }
    if episodes.is_empty() {
        bail!(
            "nothing was imported from {}{}; '{}' was not written",
            paths
                .iter()
                .map(|p| format!("'{}'", p.display()))
                .collect::<Vec<_>>()
                .join(", "),
            if skipped > 0 {
                format!(" ({skipped} files in no known format)")
            } else {
                String::new()
            },
            out.display()
        );
    }
    if let Some((path, defs)) = &tools {
        writeln!(
            stdout,
            "gave the {} tool definitions of {} to {given_tools} of {} episodes (the others record their own)",
            defs.len(),
            path.display(),
            episodes.len()
        )?;
    }
    write_calibrated(stdout, &calibrated, &tokenizer)?;
    let mut bytes = Vec::new();
    crate::history::dataset::write_episodes(&mut bytes, &episodes)?;
    crate::files::write_atomic(out, &bytes)?;
    writeln!(
        stdout,
        "wrote {} episodes to {} ({without_findings} without findings{})",
        episodes.len(),
        out.display(),
        if skipped > 0 {
            format!(", {skipped} files skipped")
        } else {
            String::new()
        }
    )?;
    Ok(true)
}

/// What import added of the context the traces did not record: per episode, its share of the input.
fn write_calibrated(
    stdout: &mut impl Write,
    calibrated: &[crate::replay::unrecorded::Calibration],
    tokenizer: &crate::tokens::Tokenizer,
) -> Result<()> {
    if calibrated.is_empty() {
        return Ok(());
    }
    writeln!(
        stdout,
        "{} of the episodes record each call's prompt tokens but not all of each prompt: before each call \
         point, a block of unrecorded context (its size, no text) now makes up the difference, counted with {}; \
         every strategy keeps it (`run --unrecorded ignore` leaves it out):",
        calibrated.len(),
        tokenizer.name()
    )?;
    for c in calibrated {
        writeln!(
            stdout,
            "  {}: {} of the input was not recorded ({} tokens over {} call point{}: {}){}{}",
            c.episode,
            crate::report::pct(Some(c.unrecorded_share())),
            c.unrecorded_tokens,
            c.call_points,
            if c.call_points == 1 { "" } else { "s" },
            c.leaves_out,
            if c.estimated > 0 {
                format!(
                    "; {} call point{} without usage took the nearest recorded call's block",
                    c.estimated,
                    if c.estimated == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            },
            if c.over > 0 {
                format!(
                    "; at {} call point{} the replay already exceeds the record (the tokenizer counts more)",
                    c.over,
                    if c.over == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}
