//! Bars of the strategies' own LLM calls over the dataset.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, err};
use crate::error::Result;
use crate::report::RunReport;

/// Bars of the strategies' LLM calls over the dataset, each labelled with its total LLM time.
pub(super) fn llm_calls<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
) -> Result<()> {
    root.fill(&WHITE).map_err(err("chart"))?;
    let n = run.strategies.len().max(1);
    #[allow(clippy::cast_precision_loss)]
    let max_y = run
        .strategies
        .iter()
        .map(|s| s.count("strategy_calls"))
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.2;
    let names: Vec<String> = run.strategies.iter().map(|s| s.strategy.clone()).collect();
    #[allow(clippy::cast_precision_loss)]
    let mut chart = ChartBuilder::on(root)
        .caption(
            "Strategy LLM calls over the dataset (label: total LLM time)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..n as f64, 0.0..max_y)
        .map_err(err("chart"))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            // Label the bar centres (i + 0.5) with the strategy names.
            let centre = x - 0.5;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let i = centre.round() as usize;
            if (centre - centre.round()).abs() < 1e-6 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("strategy")
        .y_desc("LLM calls")
        .draw()
        .map_err(err("chart"))?;
    for (i, s) in run.strategies.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let (x, calls) = (i as f64, s.count("strategy_calls") as f64);
        chart
            .draw_series([Rectangle::new(
                [(x + 0.2, 0.0), (x + 0.8, calls)],
                color(i).filled(),
            )])
            .map_err(err("chart"))?;
        chart
            .draw_series([Text::new(
                format!(
                    "{} calls, {:.1} s",
                    s.count("strategy_calls"),
                    s.number("strategy_llm_ms").unwrap_or(0.0) / 1000.0
                ),
                (x + 0.22, calls + max_y * 0.03),
                ("sans-serif", 13).into_font().color(&BLACK),
            )])
            .map_err(err("chart"))?;
    }
    Ok(())
}
