//! Line charts of one value per call point of one episode, per strategy (context tokens, retention,
//! cumulative cost).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use super::style::{dash, draw_marker, legend, style, thousands, Entry, LEGEND_WIDTH, REFERENCE};
use crate::error::Result;
use crate::metrics::series::{ChartData, StepSeries};

/// A line chart of one value per call point and strategy, the legend beside it. `from_zero`: the y axis starts
/// at 0 (tokens, cost); otherwise it fits the values (retention).
pub(super) fn step_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    data: &ChartData,
    values: &dyn Fn(&StepSeries) -> Vec<Option<f64>>,
    hline: Option<(f64, &str)>,
    from_zero: bool,
) -> Result<()> {
    root.fill(&WHITE).map_err(err("chart"))?;
    let (width, _) = root.dim_in_pixel();
    let (plot, side) = root.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    let max_x = data
        .series
        .iter()
        .map(|s| s.tokens_sent.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let all: Vec<f64> = data
        .series
        .iter()
        .flat_map(|s| values(s).into_iter().flatten())
        .chain(hline.map(|h| h.0))
        .collect();
    let max_y = all.iter().copied().fold(0.0f64, f64::max).max(1e-9) * 1.06;
    let min_y = if from_zero {
        0.0
    } else {
        let lo = all.iter().copied().fold(f64::MAX, f64::min);
        (lo - (max_y - lo) * 0.08).max(0.0).min(max_y * 0.95)
    };
    let mut chart = ChartBuilder::on(&plot)
        .caption(format!("{title} — {}", data.episode), ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(84)
        .build_cartesian_2d(0usize..max_x, min_y..max_y)
        .map_err(err("chart"))?;
    chart
        .configure_mesh()
        .x_desc("call point (step)")
        .y_desc(y_desc)
        .y_label_formatter(&|v| thousands(*v))
        .draw()
        .map_err(err("chart"))?;
    let mut entries = Vec::new();
    if let Some((y, label)) = hline {
        chart
            .draw_series(DashedLineSeries::new(
                [(0, y), (max_x, y)],
                8,
                5,
                REFERENCE.stroke_width(2),
            ))
            .map_err(err("chart"))?;
        entries.push(Entry::Reference {
            name: format!("{label} ({})", thousands(y)),
            dashed: true,
        });
    }
    for (i, s) in data.series.iter().enumerate() {
        let (c, _) = style(i);
        let pts: Vec<(usize, f64)> = values(s)
            .into_iter()
            .enumerate()
            .filter_map(|(x, v)| v.map(|v| (x, v)))
            .collect();
        match dash(i) {
            None => chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map(|_| ()),
            Some(d) => chart
                .draw_series(DashedLineSeries::new(pts.clone(), d, 3, c.stroke_width(2)))
                .map(|_| ()),
        }
        .map_err(err("chart"))?;
        // Markers on a few points, so that the legend's shapes find their lines.
        let every = (pts.len() / 6).max(1);
        for p in pts.iter().skip(i % every).step_by(every) {
            draw_marker(&plot, chart.backend_coord(p), i, 3)?;
        }
        entries.push(Entry::Series {
            index: i,
            name: s.strategy.clone(),
            line: true,
        });
    }
    legend(&side, &entries)
}
