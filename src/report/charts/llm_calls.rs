//! Bars of the strategies' own LLM calls over the dataset.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use super::style::{style, thousands, TEXT};
use crate::error::Result;
use crate::metrics::fields as field;
use crate::report::RunReport;

/// Horizontal bars of the strategies' LLM calls over the dataset, one row per strategy with its name beside
/// it (never cut, however many), each labelled with its calls and total LLM time.
pub(super) fn llm_calls<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
) -> Result<()> {
    root.fill(&WHITE).map_err(err("chart"))?;
    let n = run.strategies.len().max(1);
    #[allow(clippy::cast_precision_loss)]
    let max_x = run
        .strategies
        .iter()
        .filter_map(|s| s.count(field::STRATEGY_CALLS))
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.35;
    let longest = run
        .strategies
        .iter()
        .map(|s| s.strategy.chars().count())
        .max()
        .unwrap_or(8);
    let label_width = u32::try_from(longest * 9 + 24)
        .unwrap_or(240)
        .clamp(80, 340);
    let names: Vec<String> = run.strategies.iter().map(|s| s.strategy.clone()).collect();
    #[allow(clippy::cast_precision_loss)]
    let mut chart = ChartBuilder::on(root)
        .caption(
            "Strategy LLM calls over the dataset (label: calls, total LLM time)",
            ("sans-serif", TEXT + 4),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0.0..max_x, 0.0..n as f64)
        .map_err(err("chart"))?;
    let font_size = i32::try_from(TEXT).unwrap_or(15);
    chart
        .configure_mesh()
        .label_style(("sans-serif", TEXT))
        .axis_desc_style(("sans-serif", TEXT))
        .disable_y_mesh()
        .y_labels(n * 2 + 1)
        .y_label_style(("sans-serif", font_size))
        .y_label_formatter(&|y| {
            // Rows run top down: row i is centred at n − i − 0.5.
            let centre = y - 0.5;
            if (centre - centre.round()).abs() < 1e-6 {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let row = centre.round() as usize;
                n.checked_sub(row + 1)
                    .and_then(|i| names.get(i).cloned())
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|v| thousands(*v))
        .x_desc("LLM calls")
        .draw()
        .map_err(err("chart"))?;
    draw_bars(root, &mut chart, run, font_size)
}

/// Each strategy's bar of calls, top down, labelled with its calls and total LLM time.
fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    run: &RunReport,
    font_size: i32,
) -> Result<()> {
    let n = run.strategies.len().max(1);
    for (i, s) in run.strategies.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        // A strategy whose results lack the count draws no bar.
        let calls = s.count(field::STRATEGY_CALLS).unwrap_or_default() as f64;
        let y = (n - i - 1) as f64;
        let (c, _) = style(i);
        chart
            .draw_series([Rectangle::new(
                [(0.0, y + 0.2), (calls, y + 0.8)],
                c.filled(),
            )])
            .map_err(err("chart"))?;
        let (x, y) = chart.backend_coord(&(calls, y + 0.5));
        root.draw(&Text::new(
            format!(
                "{} calls, {:.1} s",
                thousands(calls),
                s.number(field::STRATEGY_LLM_MS).unwrap_or(0.0) / 1000.0
            ),
            (x + 6, y - font_size / 2),
            ("sans-serif", font_size).into_font().color(&BLACK),
        ))
        .map_err(err("chart"))?;
    }
    Ok(())
}
