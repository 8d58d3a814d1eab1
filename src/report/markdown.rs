//! `report.md`, and the tables every human-readable report shares.

use std::fmt::Write as _;

use super::{pct, Exporter, RunReport};
use crate::error::Result;
use crate::metrics::{finding_kind_names, item_kind_names, StrategyMetrics};

/// A titled table of text cells, rendered by the Markdown and HTML exporters alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Section title.
    pub title: String,
    /// Column headers; the first column is left-aligned, the others are numbers.
    pub headers: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
    /// A sentence under the table.
    pub note: Option<String>,
}

impl Table {
    /// The table as Markdown.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        let mut out = format!("| {} |\n|---|", self.headers.join(" | "));
        out.push_str(&"---:|".repeat(self.headers.len().saturating_sub(1)));
        out.push('\n');
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out
    }
}

fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |v| format!("${v:.4}"))
}

fn strings<const N: usize>(v: [&str; N]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The main comparison.
#[must_use]
pub fn comparison(strategies: &[StrategyMetrics]) -> Table {
    Table {
        title: "Comparison".into(),
        headers: strings([
            "strategy", "savings", "input tokens", "peak", "steps over window", "LLM calls", "cost", "cost saved",
            "final retention", "mean retention", "probe accuracy",
        ]),
        rows: strategies
            .iter()
            .map(|s| {
                vec![
                    s.strategy.clone(),
                    pct(Some(s.savings)),
                    s.input_tokens.to_string(),
                    s.peak_tokens.to_string(),
                    s.steps_over_window.to_string(),
                    s.strategy_calls.to_string(),
                    usd(s.cost_usd),
                    pct(s.cost_savings),
                    pct(s.final_retention),
                    pct(s.mean_retention),
                    pct(s.probe_accuracy),
                ]
            })
            .collect(),
        note: Some(
            "Savings = 1 − input tokens / baseline input tokens over all call points. Cost includes the agent's \
             calls (cached prefix priced as cached input) and the strategy's own LLM calls."
                .into(),
        ),
    }
}

/// Every table of a run report, in order.
#[must_use]
pub fn tables(run: &RunReport) -> Vec<Table> {
    let mut kinds = vec!["strategy".to_owned()];
    kinds.extend(finding_kind_names().map(str::to_owned));
    let mut items = vec!["strategy".to_owned()];
    items.extend(item_kind_names().map(str::to_owned));
    vec![
        comparison(&run.strategies),
        Table {
            title: "Retention by finding kind (at the last call point)".into(),
            headers: kinds,
            rows: run
                .strategies
                .iter()
                .map(|s| std::iter::once(s.strategy.clone()).chain(s.retention_by_kind.iter().map(|v| pct(*v))).collect())
                .collect(),
            note: Some("Artifact trails (a file and what was done to it) are where compressors are weakest.".into()),
        },
        Table {
            title: "Token share by item type (of all input tokens sent)".into(),
            headers: items,
            rows: run
                .strategies
                .iter()
                .map(|s| std::iter::once(s.strategy.clone()).chain(s.token_share.iter().map(|v| pct(Some(*v)))).collect())
                .collect(),
            note: Some("Tool results are most of an agent's tokens: they bound what masking can save.".into()),
        },
        Table {
            title: "Strategy LLM use".into(),
            headers: strings(["strategy", "calls", "failures", "input tokens", "output tokens", "LLM time (s)"]),
            rows: run
                .strategies
                .iter()
                .map(|s| {
                    vec![
                        s.strategy.clone(),
                        s.strategy_calls.to_string(),
                        s.strategy_failures.to_string(),
                        s.strategy_input_tokens.to_string(),
                        s.strategy_output_tokens.to_string(),
                        format!("{:.1}", s.strategy_llm_ms / 1000.0),
                    ]
                })
                .collect(),
            note: None,
        },
    ]
}

/// The main comparison table, in Markdown (also printed to the terminal).
#[must_use]
pub fn comparison_table(strategies: &[StrategyMetrics]) -> String {
    comparison(strategies).to_markdown()
}

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
        out.push_str("## Configuration\n\n```json\n");
        out.push_str(&serde_json::to_string_pretty(&run.config).unwrap_or_default());
        out.push_str("\n```\n\n## Notes\n\n");
        for n in &run.notes {
            let _ = writeln!(out, "- {n}");
        }
        Ok(out.into_bytes())
    }
}
