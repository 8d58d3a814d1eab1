//! The subcommands' work: each turns parsed arguments into library calls and terminal output.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::args::RunArgs;
use super::progress::{progress_bar, Bar};
use crate::history::validate::validate_path;
use crate::report::table::comparison_table;
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
        no_cache,
        resume,
        keep_going,
        dry_run,
        max_cost,
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
    if max_cost.is_some_and(|c| !c.is_finite() || c < 0.0) {
        bail!("--max-cost must be a number of USD, 0 or more");
    }
    if dry_run {
        let estimate = run::dry_run(&config, dataset)?;
        write!(stdout, "{}", estimate.to_markdown())?;
        return Ok(true);
    }
    let out = out.unwrap_or_else(|| PathBuf::from("reports").join(&name));
    let bar = progress_bar();
    let options = run::RunOptions {
        resume,
        keep_going,
        max_cost,
    };
    let outcome = match run::run(&config, dataset, &out, &name, &Bar(bar.clone()), &options) {
        Ok(outcome) => outcome,
        Err(e) if out.join(run::journal::JOURNAL).exists() => {
            return Err(anyhow::Error::new(e).context(format!(
                "run '{name}' stopped; the episodes it finished are in '{}' (`ctxbench run --resume` with the \
                 same arguments continues it)",
                out.display()
            )))
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("run '{name}' failed"))),
    };
    bar.finish_and_clear();
    let r = &outcome.report;
    writeln!(
        stdout,
        "{} episodes, {} items, window {} tokens, agent model {}\n",
        r.dataset.episodes, r.dataset.items, config.context_window, config.pricing.agent_model
    )?;
    write!(stdout, "{}", comparison_table(&r.strategies))?;
    writeln!(stdout)?;
    for line in crate::report::table::reading(r) {
        writeln!(stdout, "{}", line.replace('`', ""))?;
    }
    writeln!(stdout)?;
    for t in &r.timings {
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
    if !r.failed.is_empty() {
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

pub(super) fn cmd_usage(
    stdout: &mut impl Write,
    dataset: &std::path::Path,
    encoding: crate::tokens::Encoding,
    per_call: bool,
) -> Result<bool> {
    let tokenizer = std::sync::Arc::new(crate::tokens::Tokenizer::new(
        encoding,
        crate::tokens::Backend::default(),
    )?);
    let rows = crate::run::usage::compare(dataset, &tokenizer)
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
        "| episode | source | recorded from | call points | recorded calls | replayed input | recorded input | replay / recorded |"
    )?;
    writeln!(stdout, "|---|---|---|---:|---:|---:|---:|---:|")?;
    for r in &rows {
        writeln!(
            stdout,
            "| {} | {} | {} | {} | {} | {} | {}{} | {} |",
            r.episode,
            r.source,
            r.recorded_from,
            r.call_points,
            r.recorded_calls
                .map_or_else(|| "–".into(), |n| n.to_string()),
            r.replay_input_tokens,
            r.recorded_input_tokens
                .map_or_else(|| "–".into(), |n| n.to_string()),
            if r.approximate { " (rounded)" } else { "" },
            r.ratio.map_or_else(|| "–".into(), |x| format!("{x:.3}")),
        )?;
    }
    if per_call {
        for r in &rows {
            if r.calls.is_empty() {
                writeln!(
                    stdout,
                    "\n{}: no per-call comparison ({})",
                    r.episode,
                    if r.recorded_calls.is_some_and(|n| n != r.call_points) {
                        "the trace records a different number of calls than the replay has call points"
                    } else {
                        "the trace records only the run's totals"
                    }
                )?;
                continue;
            }
            writeln!(stdout, "\n{} (encoding {})\n", r.episode, encoding.as_str())?;
            writeln!(
                stdout,
                "| call | replayed input | recorded input | of which cache read | of which cache write | recorded output | replay / recorded |"
            )?;
            writeln!(stdout, "|---:|---:|---:|---:|---:|---:|---:|")?;
            let dash = |n: Option<u64>| n.map_or_else(|| "–".to_owned(), |n| n.to_string());
            for (i, (replayed, call)) in r.calls.iter().enumerate() {
                #[allow(clippy::cast_precision_loss)]
                let ratio = if call.input_tokens > 0 {
                    format!("{:.3}", *replayed as f64 / call.input_tokens as f64)
                } else {
                    "–".to_owned()
                };
                writeln!(
                    stdout,
                    "| {i} | {replayed} | {} | {} | {} | {} | {ratio} |",
                    call.input_tokens,
                    dash(call.cache_read_tokens),
                    dash(call.cache_write_tokens),
                    call.output_tokens,
                )?;
            }
        }
    }
    Ok(true)
}
