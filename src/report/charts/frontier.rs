//! Retention against savings over the dataset, every strategy a point, the Pareto frontier marked.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, err};
use crate::error::Result;
use crate::metrics::series::pareto_frontier;
use crate::report::RunReport;

/// Savings against retention at need for every strategy, with the Pareto frontier drawn.
pub(super) fn retention_vs_savings<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
) -> Result<()> {
    let points: Vec<(f64, f64)> = run
        .strategies
        .iter()
        .map(|s| {
            (
                s.number("savings").unwrap_or(0.0) * 100.0,
                s.number("retention_at_need").unwrap_or(1.0) * 100.0,
            )
        })
        .collect();
    let frontier = pareto_frontier(&points);
    {
        root.fill(&WHITE).map_err(err("chart"))?;
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Retention against savings (Pareto frontier dashed)",
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-5.0..105.0, 0.0..105.0)
            .map_err(err("chart"))?;
        chart
            .configure_mesh()
            .x_desc("token savings vs baseline (%)")
            .y_desc("findings retained where needed (%)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(err("chart"))?;
        let mut front: Vec<(f64, f64)> = frontier.iter().map(|&i| points[i]).collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(DashedLineSeries::new(front, 6, 4, BLACK.stroke_width(1)))
            .map_err(err("chart"))?;
        for (i, (s, p)) in run.strategies.iter().zip(&points).enumerate() {
            let c = color(i);
            let on_front = frontier.contains(&i);
            chart
                .draw_series([Circle::new(*p, if on_front { 7 } else { 5 }, c.filled())])
                .map_err(err("chart"))?;
            chart
                .draw_series([Text::new(
                    format!("{}{}", s.strategy, if on_front { " ★" } else { "" }),
                    (p.0 + 1.2, p.1 - 1.5),
                    ("sans-serif", 14).into_font().color(&c),
                )])
                .map_err(err("chart"))?;
        }
    }
    Ok(())
}
