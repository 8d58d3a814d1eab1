//! `ctxbench usage`: the replay's baseline against the usage imported traces record, as Markdown tables that fit
//! 100 columns (long episode ids shortened in the middle; each per-call table is headed by the full id) and
//! notes wrapped at 100 columns.

use std::io::Write;

use anyhow::{Context, Result};

use super::console::{hanging, markdown};
use crate::run::usage::EpisodeUsage;

/// The width every line fits.
const WIDTH: usize = 100;

/// A count, or `–` when the trace does not say.
fn dash<T: ToString>(n: Option<T>) -> String {
    n.map_or_else(|| "–".to_owned(), |n| n.to_string())
}

pub(super) fn cmd_usage(
    stdout: &mut impl Write,
    dataset: &std::path::Path,
    tokens: &super::args::TokenizerArgs,
    unrecorded: crate::run::UnrecordedMode,
    per_call: bool,
) -> Result<bool> {
    let tokenizer = tokens.tokenizer()?;
    let counted_with = tokenizer.name();
    let rows = crate::run::usage::compare(dataset, &tokenizer, unrecorded)
        .with_context(|| format!("failed to compare '{}'", dataset.display()))?;
    if rows.is_empty() {
        writeln!(
            stdout,
            "{}",
            hanging(
                &format!(
                    "no episode of '{}' records its provider usage (import traces that do: SWE-agent, \
                     mini-swe-agent, OpenHands, Claude Code, aider, smolagents)",
                    dataset.display()
                ),
                WIDTH,
                2
            )
        )?;
        return Ok(true);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.episode.clone(),
                r.format().to_owned(),
                r.call_points.to_string(),
                format!(
                    "{}{}",
                    dash(r.recorded_calls),
                    if r.unrecorded.is_empty() {
                        String::new()
                    } else {
                        format!(" + {} no usage", r.unrecorded.len())
                    }
                ),
                r.replay_input_tokens.to_string(),
                if r.unrecorded_tokens > 0 {
                    crate::report::pct(Some(r.unrecorded_share()))
                } else if r.leaves_out.is_some() {
                    "not added".into()
                } else {
                    "–".into()
                },
                format!(
                    "{}{}",
                    if r.approximate { "~" } else { "" },
                    dash(r.recorded_input_tokens)
                ),
                dash(r.ratio.map(|x| format!("{x:.3}"))),
            ]
        })
        .collect();
    write!(
        stdout,
        "{}",
        markdown(
            2,
            &[
                "episode",
                "format",
                "call points",
                "recorded calls",
                "replayed",
                "unrecorded",
                "recorded",
                "ratio"
            ],
            &table,
            WIDTH
        )
    )?;
    writeln!(
        stdout,
        "\n{}",
        hanging(
            &format!(
                "Input tokens: replayed, what the baseline replay sends ({counted_with}; where the agent \
                 compacted its own context, what it sent: as_recorded); unrecorded, the share \
                 of it that is context the trace left out and import added (\"not added\": the trace leaves \
                 some out, imported with `--unrecorded ignore`); recorded, the provider's prompt tokens as the \
                 trace records them (~ rounded); ratio, replayed / recorded. Recorded calls without usage are \
                 counted apart (no usage)."

            ),
            WIDTH,
            0
        )
    )?;
    // Where each format's figures come from, once per format.
    let mut from: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.format(), r.recorded_from.as_str()))
        .collect();
    from.sort_unstable();
    from.dedup();
    let sources: Vec<String> = from.iter().map(|(f, s)| format!("{f}: {s}")).collect();
    writeln!(
        stdout,
        "{}",
        hanging(&format!("Recorded from: {}.", sources.join("; ")), WIDTH, 2)
    )?;
    // What a reader must know to read the table: calls without usage and failed calls, by name, the same
    // failure of an episode said once with its count.
    for r in &rows {
        for u in &r.unrecorded {
            writeln!(
                stdout,
                "\n{}",
                hanging(
                    &format!(
                        "{}: call point {} has no recorded usage ({})",
                        r.episode, u.call_point, u.why
                    ),
                    WIDTH,
                    2
                )
            )?;
        }
        let mut failed: Vec<(&str, usize)> = Vec::new();
        for why in &r.failed {
            match failed.iter_mut().find(|(w, _)| *w == why.as_str()) {
                Some((_, n)) => *n += 1,
                None => failed.push((why, 1)),
            }
        }
        for (why, n) in failed {
            let what = if n == 1 {
                "a failed call, not a call point".to_owned()
            } else {
                format!("{n} failed calls, not call points")
            };
            writeln!(
                stdout,
                "\n{}",
                hanging(&format!("{}: {what} ({why})", r.episode), WIDTH, 2)
            )?;
        }
    }
    if per_call {
        write_per_format(stdout, &rows)?;
        writeln!(
            stdout,
            "\n{}",
            hanging(
                "Per call: input tokens replayed and recorded, of the recorded input the cache reads and \
                 writes, the recorded output tokens, and replayed / recorded.",
                WIDTH,
                0
            )
        )?;
        for r in &rows {
            write_per_call(stdout, r, &counted_with)?;
        }
    }
    Ok(true)
}

/// `usage --per-call`: per format, call points against the calls the traces show, and the worst per-call
/// ratio (over every call, and after each episode's first), with where it was.
fn write_per_format(stdout: &mut impl Write, rows: &[EpisodeUsage]) -> Result<()> {
    let formats = crate::run::usage::by_format(rows);
    let ratio = |w: &Option<(String, usize, f64)>| dash(w.as_ref().map(|w| format!("{:.3}", w.2)));
    let table: Vec<Vec<String>> = formats
        .iter()
        .map(|(format, f)| {
            vec![
                format.clone(),
                f.episodes.to_string(),
                if f.counted == 0 {
                    "– (totals)".to_owned()
                } else {
                    format!("{} of {}", f.matching, f.counted)
                },
                f.call_points.to_string(),
                f.recorded_calls.to_string(),
                f.unrecorded.to_string(),
                f.failed.to_string(),
                ratio(&f.worst),
                ratio(&f.worst_after_first),
            ]
        })
        .collect();
    writeln!(stdout)?;
    write!(
        stdout,
        "{}",
        markdown(
            1,
            &[
                "format",
                "episodes",
                "matching",
                "call points",
                "calls",
                "no usage",
                "failed",
                "worst",
                "worst after 1st"
            ],
            &table,
            WIDTH
        )
    )?;
    let mut notes = vec![
        "Matching: episodes whose call points equal the calls the trace shows; calls: those it records \
         usage for. Worst: the per-call replayed / recorded ratio farthest from 1, over every call and after \
         each episode's first:"
            .to_owned(),
    ];
    let at = |w: &Option<(String, usize, f64)>| {
        w.as_ref()
            .map(|(ep, call, r)| format!("{r:.3} ({ep}, call {call})"))
    };
    for (format, f) in &formats {
        if let (Some(worst), after) = (at(&f.worst), at(&f.worst_after_first)) {
            notes.push(format!(
                "- {format}: {worst}{}",
                after.map_or_else(String::new, |a| format!("; after the first, {a}"))
            ));
        }
    }
    writeln!(stdout)?;
    for n in notes {
        writeln!(stdout, "{}", hanging(&n, WIDTH, 2))?;
    }
    Ok(())
}

/// `usage --per-call`: one episode's calls, replayed against recorded.
fn write_per_call(stdout: &mut impl Write, r: &EpisodeUsage, counted_with: &str) -> Result<()> {
    if r.calls.is_empty() {
        let why = if r.calls_match() == Some(false) {
            "the trace shows a different number of calls than the replay has call points"
        } else {
            "the trace records only the run's totals"
        };
        writeln!(
            stdout,
            "\n{}",
            hanging(
                &format!("{}: no per-call comparison ({why})", r.episode),
                WIDTH,
                2
            )
        )?;
        return Ok(());
    }
    writeln!(
        stdout,
        "\n{}\n",
        hanging(
            &format!("{} (counted with {counted_with})", r.episode),
            WIDTH,
            2
        )
    )?;
    let table: Vec<Vec<String>> = r
        .calls
        .iter()
        .map(|c| {
            vec![
                c.call_point.to_string(),
                c.replayed.to_string(),
                c.recorded.input_tokens.to_string(),
                dash(c.recorded.cache_read_tokens),
                dash(c.recorded.cache_write_tokens),
                if r.output_unrecorded {
                    "–".to_owned()
                } else {
                    c.recorded.output_tokens.to_string()
                },
                dash(c.ratio().map(|x| format!("{x:.3}"))),
            ]
        })
        .collect();
    write!(
        stdout,
        "{}",
        markdown(
            0,
            &[
                "call",
                "replayed",
                "recorded",
                "cache read",
                "cache write",
                "output",
                "ratio"
            ],
            &table,
            WIDTH
        )
    )?;
    Ok(())
}
