//! `report.md`: the tables, the charts, the configuration and the notes, in Markdown.

use std::fmt::Write as _;

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
        if let Some(r) = &run.recommendation {
            let _ = writeln!(out, "## What to pick\n\n{}\n", r.text);
        }
        let reading = super::table::reading(run);
        if !reading.is_empty() {
            out.push_str("## Reading\n\n");
            for line in reading {
                let _ = writeln!(out, "- {line}");
            }
            out.push('\n');
        }
        for (i, t) in tables(run).iter().enumerate() {
            let _ = writeln!(out, "## {}\n\n{}", t.title, t.to_markdown());
            if let Some(n) = &t.note {
                let _ = writeln!(out, "{n}\n");
            }
            if i == 0 && !run.charts.series.is_empty() {
                let _ = writeln!(
                    out,
                    "## Charts\n\nPer call point of the episode with the largest baseline context, `{}`:\n\n\
                     ![context tokens](charts/context_tokens.svg)\n\n![retention over steps](charts/retention_over_steps.svg)\n\n\
                     ![cumulative cost](charts/cumulative_cost.svg)\n\nOver the dataset:\n\n![retention against savings](charts/retention_vs_savings.svg)\n\n![strategy LLM calls](charts/llm_calls.svg)\n",
                    run.charts.episode
                );
            }
        }
        if !run.examples.is_empty() {
            out.push_str("## What the summarizing strategies' model wrote\n\nOne example per strategy: its first summary, in dataset order (every call is in llm_calls.jsonl).\n\n");
            for e in &run.examples {
                let _ = writeln!(
                    out,
                    "**{}**, episode `{}`, {} ({}):\n\n```text\n{}\n```\n",
                    e.strategy,
                    e.episode,
                    e.step.map_or_else(
                        || "after the last call point".to_owned(),
                        |s| format!("call point {s}")
                    ),
                    e.model,
                    e.text.replace("```", "'''")
                );
            }
        }
        let _ = writeln!(out, "## Glossary\n\n{}", super::glossary::markdown());
        out.push_str("## Configuration\n\n```json\n");
        out.push_str(&serde_json::to_string_pretty(&run.config).unwrap_or_default());
        out.push_str("\n```\n\n## Notes\n\n");
        for n in &run.notes {
            let _ = writeln!(out, "- {n}");
        }
        Ok(out.into_bytes())
    }
}
