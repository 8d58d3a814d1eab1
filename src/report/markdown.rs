//! `report.md`: the tables, the charts, the configuration and the notes, in Markdown.

use std::fmt::Write as _;

use super::document::{Kind, Table};
use super::explorer::{self, EpisodeRef};
use super::table::tables;
use super::{Exporter, RunReport};
use crate::error::Result;

/// The Markdown report.
pub struct MarkdownReport;

impl Exporter for MarkdownReport {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        let mut out = String::new();
        head(&mut out, run);
        pick_and_reading(&mut out, run);
        page_links(&mut out, run);
        for (i, t) in tables(run).iter().enumerate() {
            let _ = writeln!(out, "## {}\n\n{}", t.title, aligned(&linked(run, t)));
            if let Some(n) = &t.note {
                let _ = writeln!(out, "{n}\n");
            }
            if i == 0 && !run.charts.series.is_empty() {
                charts_section(&mut out, run);
            }
        }
        examples(&mut out, run);
        glossary_config_notes(&mut out, run);
        Ok(out.into_bytes())
    }
}

/// The title, whether the run is complete, the dataset, and the episodes a failed call left out.
fn head(out: &mut String, run: &RunReport) {
    let _ = writeln!(out, "# ctxbench report: {}\n", run.run);
    if !run.complete {
        out.push_str(
            "> **Incomplete run**: these results cover only the episodes that finished.\n\n",
        );
    }
    let _ = writeln!(out, "{}\n", super::dataset_line(run));
    if !run.failed.is_empty() {
        let _ = writeln!(
            out,
            "> **{} episode(s) left out of every figure**: an LLM call failed after its retries \
             (`--keep-going`). `ctxbench run --resume` tries them again.\n",
            run.failed.len()
        );
        for f in &run.failed {
            let _ = writeln!(out, "> - `{}`: {}", f.episode, f.error);
        }
        out.push('\n');
    }
}

/// What to pick (the pick or why nothing is, then each strategy's verdict), and how to read the comparison
/// (with where each strategy lost most).
fn pick_and_reading(out: &mut String, run: &RunReport) {
    if let Some(r) = &run.recommendation {
        let _ = writeln!(out, "## What to pick\n\n{}\n", r.text);
        if !r.verdicts.is_empty() {
            let _ = writeln!(out, "{}", aligned(&super::recommend::verdict_table(r)));
        }
    }
    let reading = super::reading::reading(run);
    if !reading.is_empty() {
        out.push_str("## Reading\n\n");
        let worst = explorer::worst(run);
        for line in reading {
            let _ = write!(out, "- {}", line.text);
            if let Some((_, at, what)) = worst
                .iter()
                .find(|(s, _, _)| line.strategy.as_deref() == Some(s.as_str()))
            {
                let _ = write!(out, " It lost most in {} ({what}).", link(at));
            }
            out.push('\n');
        }
        out.push('\n');
        if explorer::pages_missing(run) {
            let _ = writeln!(out, "{}\n", explorer::SHOW_HINT);
        }
    }
}

/// The episode pages written, linked.
fn page_links(out: &mut String, run: &RunReport) {
    let pages = super::page_list(run);
    if !pages.is_empty() {
        out.push_str("## Episode pages\n\nWhat each strategy sent, call point by call point:\n\n");
        for (episode, href, shows) in &pages {
            let _ = writeln!(out, "- [`{episode}`]({href}): {shows}");
        }
        out.push('\n');
    }
}

/// The charts' images, each left out said why.
fn charts_section(out: &mut String, run: &RunReport) {
    let episode = EpisodeRef::new(run, &run.charts.episode, "", "");
    let _ = writeln!(
        out,
        "## Charts\n\nPer call point of the episode with the largest baseline context, {}:\n",
        link(&episode)
    );
    let charts = [
        ("context_tokens", "context tokens"),
        ("retention_over_steps", "retention over steps"),
        ("cumulative_cost", "cumulative cost"),
        ("retention_vs_savings", "retention against savings"),
        ("llm_calls", "strategy LLM calls"),
    ];
    for (k, (name, alt)) in charts.iter().enumerate() {
        if k == 3 {
            out.push_str("Over the dataset:\n\n");
        }
        match super::charts::left_out(name, run, &run.charts) {
            Some(why) => {
                let _ = writeln!(out, "{why}\n");
            }
            None => {
                let _ = writeln!(out, "![{alt}](charts/{name}.svg)\n");
            }
        }
    }
}

/// One summary per summarizing strategy, quoted as its model wrote it.
fn examples(out: &mut String, run: &RunReport) {
    if !run.examples.is_empty() {
        out.push_str("## What the summarizing strategies' model wrote\n\nOne example per strategy: its first summary, in dataset order (every call is in llm_calls.jsonl).\n\n");
        for e in &run.examples {
            // Quoted line by line: the summary's own headings stay inside the quote.
            let quoted: String = e
                .text
                .lines()
                .map(|l| {
                    if l.is_empty() {
                        ">\n".to_owned()
                    } else {
                        format!("> {l}\n")
                    }
                })
                .collect();
            let _ = writeln!(
                out,
                "**{}**, episode {}, {} ({}):\n\n{quoted}",
                e.strategy,
                link(&explorer::EpisodeRef::new(run, &e.episode, &e.strategy, "")),
                e.step.map_or_else(
                    || "after the last call point".to_owned(),
                    |s| format!("call point {s}")
                ),
                super::example_model(run, &e.model),
            );
        }
    }
}

/// The glossary, the configuration and the notes.
fn glossary_config_notes(out: &mut String, run: &RunReport) {
    let _ = writeln!(out, "## Glossary\n\n{}", super::glossary::markdown());
    let _ = write!(
        out,
        "## Columns of the files\n\n{}",
        super::glossary::file_columns_markdown()
    );
    out.push_str("## Configuration\n\n```json\n");
    out.push_str(&serde_json::to_string_pretty(&run.config).unwrap_or_default());
    out.push_str("\n```\n\n## Notes\n\n");
    for n in &run.notes {
        let _ = writeln!(out, "- {n}");
    }
}

/// `table` as Markdown, its columns of figures aligned to the right and the others to the left.
fn aligned(table: &Table) -> String {
    let figures = table.figure_columns();
    let mut out = format!("| {} |\n|", table.headers.join(" | "));
    for f in figures {
        out.push_str(if f { "---:|" } else { "---|" });
    }
    out.push('\n');
    for row in &table.rows {
        let _ = writeln!(out, "| {} |", super::document::texts(row).join(" | "));
    }
    out
}

/// An episode as Markdown: its id in code, linked to its page when there is one.
fn link(at: &EpisodeRef) -> String {
    match &at.link {
        Some(l) => format!("[`{}`]({l})", at.episode),
        None => format!("`{}`", at.episode),
    }
}

/// `table` with each episode cell linked to the episode's page (at the cell's strategy and finding), where the
/// page exists.
fn linked(run: &RunReport, table: &Table) -> Table {
    let mut out = table.clone();
    for cell in out.rows.iter_mut().flatten() {
        if let Kind::Episode { strategy, finding } = &cell.kind {
            let at = EpisodeRef::new(run, &cell.text, strategy, finding);
            if at.link.is_some() {
                cell.text = link(&at);
            }
        }
    }
    out
}
