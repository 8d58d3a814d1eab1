//! `ctxbench usage`: the replay's baseline against the usage imported traces record, as Markdown tables that fit
//! 100 columns (long episode ids shortened in the middle; each per-call table is headed by the full id) and
//! notes wrapped at 100 columns.

use std::io::Write;

use anyhow::{Context, Result};

use super::args::UsageArgs;
use super::console::{hanging, markdown};
use crate::run::usage::EpisodeUsage;

/// The width every line fits.
const WIDTH: usize = 100;

/// A count, or `–` when the trace does not say.
fn dash<T: ToString>(n: Option<T>) -> String {
    n.map_or_else(|| "–".to_owned(), |n| n.to_string())
}

pub(super) fn cmd_usage(stdout: &mut impl Write, args: &UsageArgs) -> Result<bool> {
    let dataset = &args.dataset;
    let tokenizer = args.tokens.overrides().build()?;
    let counted_with = tokenizer.name();
    let rows = crate::run::usage::compare(dataset, &tokenizer, args.unrecorded)
        .with_context(|| format!("failed to compare '{}'", dataset.display()))?;
    if rows.is_empty() {
        let line = format!(
            "no episode of '{}' records its provider usage (import traces that do: SWE-agent, mini-swe-agent, \
             OpenHands, Claude Code, aider, smolagents)",
            dataset.display()
        );
        writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
        return Ok(true);
    }
    write_episodes(stdout, &rows, &counted_with)?;
    write_gaps(stdout, &rows, &counted_with)?;
    if args.per_call {
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

/// An episode's row: its calls, the input tokens replayed, unrecorded and recorded, and their ratio.
fn episode_row(r: &EpisodeUsage) -> Vec<String> {
    let no_usage = if r.unrecorded.is_empty() {
        String::new()
    } else {
        format!(" + {} no usage", r.unrecorded.len())
    };
    let unrecorded = if r.unrecorded_tokens > 0 {
        crate::report::pct(Some(r.unrecorded_share()))
    } else if r.leaves_out.is_some() {
        "not added".into()
    } else {
        "–".into()
    };
    vec![
        r.episode.clone(),
        r.format().to_owned(),
        r.call_points.to_string(),
        format!("{}{no_usage}", dash(r.recorded_calls)),
        r.replay_input_tokens.to_string(),
        unrecorded,
        format!(
            "{}{}",
            if r.approximate { "~" } else { "" },
            dash(r.recorded_input_tokens)
        ),
        format!(
            "{}{}",
            dash(r.ratio.map(|x| format!("{x:.3}"))),
            if r.unrecorded_tokens > 0 { "*" } else { "" }
        ),
        r.fit
            .as_ref()
            .and_then(|f| f.worst().map(|(_, w)| (w, f.flagged(), f.by_construction)))
            .map_or_else(
                || "–".to_owned(),
                |(w, flagged, built)| {
                    format!(
                        "{}{}",
                        signed_pct(w),
                        if built {
                            "*"
                        } else if flagged {
                            "!"
                        } else {
                            ""
                        }
                    )
                },
            ),
    ]
}

/// Where the agent sent summaries of older turns that the trace does not hold (aider's): a clause of the fit
/// sentence's U, or nothing.
fn summaries_phrase(at: &[usize]) -> String {
    match at {
        [] => String::new(),
        [at] => format!(
            ", holding from call {at} on the summary of older turns the agent sent in their place, which \
             the trace does not hold"
        ),
        many => format!(
            ", holding from each of calls {} on the summary of older turns the agent sent in their place, \
             which the trace does not hold",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// How the fit's k was found, in words.
fn k_phrase(f: &crate::replay::fit::Fit) -> String {
    if let Some(free) = f.k_held_from {
        format!(
            "k = {:.3} (the model's tokens per token counted, held at the end of {}–{}: least squares gave \
             {free:.3})",
            f.k,
            crate::replay::fit::K_RANGE.0,
            crate::replay::fit::K_RANGE.1
        )
    } else if f.k_fitted {
        format!(
            "k = {:.3} (the model's tokens per token counted, fitted)",
            f.k
        )
    } else if let Some(by) = &f.record_counted_by {
        format!(
            "k = {} (given: the record is the agent's own count with {by}, the tokenizer counting here)",
            f.k
        )
    } else if f.k_given {
        format!(
            "k = {} (given: counted with the model's own tokenizer)",
            f.k
        )
    } else {
        "k = 1 (not fitted: no segment has two recorded calls to fit it from)".to_owned()
    }
}

/// What an episode's fit found, in a sentence.
fn fit_sentence(
    f: &crate::replay::fit::Fit,
    leaves_out: Option<&str>,
    changes_unshown: Option<&str>,
) -> String {
    let k = k_phrase(f);
    #[allow(clippy::cast_possible_truncation)]
    let tokens = |u: Option<f64>| {
        u.map_or_else(
            || "unknown (no record)".to_owned(),
            |u| (u.round() as i64).to_string(),
        )
    };
    let u = if f.constant() {
        format!(
            "U = {} tokens, constant: {}",
            tokens(f.segments[0].1),
            leaves_out.unwrap_or("the context the trace left out")
        )
    } else {
        let parts: Vec<String> = f
            .segments
            .iter()
            .map(|(from, u)| format!("{} from call {from}", tokens(*u)))
            .collect();
        let grows = match f.edits {
            0 => String::new(),
            1 => ", growing by k × the size of the 1 applied edit the trace shows".to_owned(),
            n => format!(", growing by k × the sizes of the {n} applied edits the trace shows"),
        };
        let summaries = summaries_phrase(&f.unseen_summaries);
        format!(
            "U = {} tokens (the context the trace left out{}{grows}{summaries})",
            parts.join(", "),
            if f.segments.len() > 1 {
                ", changing where the trace shows it does"
            } else if f.flagged() {
                ", not constant: the fit leaves more than 3% on a call"
            } else {
                ""
            }
        )
    };
    let worst = f.worst().map_or_else(String::new, |(k, w)| {
        format!("; its worst residual {} at call {k}", signed_pct(w))
    });
    let flag = if f.by_construction {
        "; as many parameters as calls: the residual is 0 by construction and says nothing"
    } else if f.flagged() {
        &match changes_unshown {
            Some(c) => format!(
                "; flagged: more than 3% on a call (what can change without the trace showing it: {c})"
            ),
            None => "; flagged: more than 3% on a call".to_owned(),
        }
    } else {
        ""
    };
    let counted = f.counted_at.map_or_else(String::new, |at| {
        format!(
            "; replayed in the model's tokens: every item and every text a strategy writes counted as {at:.3} × \
             the tokenizer's count (import's fit)"
        )
    });
    format!("recorded ≈ U + k × replayed with {k}, {u}{worst}{flag}{counted}")
}

/// A residual as a signed percentage (`+0.4%`, `-3.1%`).
fn signed_pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * x)
}

/// The table of episodes, how to read it, and where each format's recorded figures come from.
fn write_episodes(
    stdout: &mut impl Write,
    rows: &[EpisodeUsage],
    counted_with: &str,
) -> Result<()> {
    let table: Vec<Vec<String>> = rows.iter().map(episode_row).collect();
    let header = [
        "episode",
        "format",
        "call points",
        "recorded calls",
        "replayed",
        "unrecorded",
        "recorded",
        "ratio",
        "fit",
    ];
    write!(stdout, "{}", markdown(2, &header, &table, WIDTH))?;
    let legend = format!(
        "Input tokens: replayed, what the baseline replay sends ({counted_with}, at k × its count where import \
         fitted k: the model's tokens; where the agent compacted its own context, what it sent: as_recorded); \
         unrecorded, the share of it that is context the trace left \
         out and import added (\"not added\": the trace leaves some out, imported with `--unrecorded ignore`); \
         recorded, the provider's prompt tokens as the trace records them \
         (~ rounded); ratio, replayed / recorded (* 1 by construction: the blocks of unrecorded context are sized \
         from the record). fit: where the trace leaves context out, the worst call's residual of recorded ≈ U + k \
         × replayed, fitted per episode (U the context left out, constant between the changes the trace shows; \
         k the tokenizers' ratio): the fidelity figure (! past 3%; * as many parameters as calls, so 0 by \
         construction). Recorded calls without usage are counted apart (no usage)."
    );
    writeln!(stdout, "\n{}", hanging(&legend, WIDTH, 0))?;
    // Where each format's figures come from, once per format.
    let mut from: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.format(), r.recorded_from.as_str()))
        .collect();
    from.sort_unstable();
    from.dedup();
    let sources: Vec<String> = from.iter().map(|(f, s)| format!("{f}: {s}")).collect();
    let line = format!("Recorded from: {}.", sources.join("; "));
    writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
    Ok(())
}

/// What a reader must know to read the table: calls without usage and failed calls, by name, the same
/// failure of an episode said once with its count.
fn write_gaps(stdout: &mut impl Write, rows: &[EpisodeUsage], counted_with: &str) -> Result<()> {
    for r in rows {
        if let Some(f) = &r.fit {
            let line = format!(
                "{}: {}",
                r.episode,
                fit_sentence(f, r.leaves_out.as_deref(), r.changes_unshown.as_deref())
            );
            writeln!(stdout, "\n{}", hanging(&line, WIDTH, 2))?;
        }
        if let Some(from) = &r.resized_from {
            let line = format!(
                "{}: its blocks of unrecorded context were sized with {from} at import, and are sized again \
                 with {counted_with} here (the record less this replay): sizes from another tokenizer would \
                 carry its error",
                r.episode
            );
            writeln!(stdout, "\n{}", hanging(&line, WIDTH, 2))?;
        }
        for u in &r.unrecorded {
            let line = format!(
                "{}: call point {} has no recorded usage ({})",
                r.episode, u.call_point, u.why
            );
            writeln!(stdout, "\n{}", hanging(&line, WIDTH, 2))?;
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
            let line = format!("{}: {what} ({why})", r.episode);
            writeln!(stdout, "\n{}", hanging(&line, WIDTH, 2))?;
        }
    }
    Ok(())
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
            &match r.fit.as_ref().and_then(|f| f.counted_at) {
                Some(k) => format!(
                    "{} (counted with {counted_with} at k = {k:.3}: the model's tokens)",
                    r.episode
                ),
                None => format!("{} (counted with {counted_with})", r.episode),
            },
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
                dash(
                    r.fit
                        .as_ref()
                        .and_then(|f| f.residuals.get(c.call_point).copied().flatten())
                        .map(signed_pct),
                ),
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
                "ratio",
                "fit"
            ],
            &table,
            WIDTH
        )
    )?;
    Ok(())
}
