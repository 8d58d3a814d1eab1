//! `report.md` and the comparison table printed by `ctxbench run`.

use std::fmt::Write as _;

use super::{pct, Exporter, RunReport};
use crate::error::Result;
use crate::metrics::{finding_kind_names, item_kind_names, StrategyMetrics};

/// The Markdown report.
pub struct MarkdownReport;

fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |v| format!("${v:.4}"))
}

/// The main comparison table, in Markdown (also printed to the terminal).
#[must_use]
pub fn comparison_table(strategies: &[StrategyMetrics]) -> String {
    let mut out = String::from(
        "| strategy | savings | input tokens | peak | steps over window | LLM calls | cost | cost saved | final retention | mean retention | probe accuracy |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for s in strategies {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.strategy,
            pct(Some(s.savings)),
            s.input_tokens,
            s.peak_tokens,
            s.steps_over_window,
            s.strategy_calls,
            usd(s.cost_usd),
            pct(s.cost_savings),
            pct(s.final_retention),
            pct(s.mean_retention),
            pct(s.probe_accuracy),
        );
    }
    out
}

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
        let _ = writeln!(
            out,
            "Dataset `{}` ({} episodes, {} items, sha256 `{}`), ctxbench {}.\n",
            run.dataset.path,
            run.dataset.episodes,
            run.dataset.items,
            &run.dataset.sha256[..run.dataset.sha256.len().min(16)],
            run.tool_version
        );
        out.push_str("## Comparison\n\n");
        out.push_str(&comparison_table(&run.strategies));
        out.push_str(
            "\nSavings = 1 − input tokens / baseline input tokens over all call points. Cost includes the agent's \
             calls (cached prefix priced as cached input) and the strategy's own LLM calls.\n\n",
        );
        if !run.charts.series.is_empty() {
            let _ = writeln!(
                out,
                "## Charts\n\nPer call point of the episode with the largest baseline context, `{}`:\n\n\
                 ![context tokens](charts/context_tokens.svg)\n\n![retention over steps](charts/retention_over_steps.svg)\n\n\
                 ![cumulative cost](charts/cumulative_cost.svg)\n\nOver the dataset:\n\n![retention against savings](charts/retention_vs_savings.svg)\n",
                run.charts.episode
            );
        }
        out.push_str("## Retention by finding kind (at the last call point)\n\n| strategy |");
        for k in finding_kind_names() {
            let _ = write!(out, " {k} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(4));
        out.push('\n');
        for s in &run.strategies {
            let _ = write!(out, "| {} |", s.strategy);
            for v in s.retention_by_kind {
                let _ = write!(out, " {} |", pct(v));
            }
            out.push('\n');
        }
        out.push_str("\n## Token share by item type (of all input tokens sent)\n\n| strategy |");
        for k in item_kind_names() {
            let _ = write!(out, " {k} |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(6));
        out.push('\n');
        for s in &run.strategies {
            let _ = write!(out, "| {} |", s.strategy);
            for v in s.token_share {
                let _ = write!(out, " {} |", pct(Some(v)));
            }
            out.push('\n');
        }
        out.push_str("\n## Strategy LLM use\n\n| strategy | calls | failures | input tokens | output tokens | LLM time (s) |\n|---|---:|---:|---:|---:|---:|\n");
        for s in &run.strategies {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.1} |",
                s.strategy,
                s.strategy_calls,
                s.strategy_failures,
                s.strategy_input_tokens,
                s.strategy_output_tokens,
                s.strategy_llm_ms / 1000.0
            );
        }
        out.push_str("\n## Configuration\n\n```json\n");
        out.push_str(&serde_json::to_string_pretty(&run.config).unwrap_or_default());
        out.push_str("\n```\n\n## Notes\n\n");
        for n in &run.notes {
            let _ = writeln!(out, "- {n}");
        }
        Ok(out.into_bytes())
    }
}
