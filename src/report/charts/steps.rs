//! Line charts of one value per call point of one episode, per strategy (context tokens, retention,
//! cumulative cost).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, err};
use crate::error::Result;
use crate::metrics::series::{ChartData, StepSeries};

/// A line chart of one value per call point and strategy.
pub(super) fn step_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    data: &ChartData,
    values: &dyn Fn(&StepSeries) -> Vec<Option<f64>>,
    hline: Option<(f64, &str)>,
) -> Result<()> {
    {
        root.fill(&WHITE).map_err(err("chart"))?;
        let max_x = data
            .series
            .iter()
            .map(|s| s.tokens_sent.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let max_y = data
            .series
            .iter()
            .flat_map(|s| values(s).into_iter().flatten())
            .chain(hline.map(|h| h.0))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.08;
        let mut chart = ChartBuilder::on(root)
            .caption(format!("{title} — {}", data.episode), ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(84)
            .build_cartesian_2d(0usize..max_x, 0.0..max_y)
            .map_err(err("chart"))?;
        chart
            .configure_mesh()
            .x_desc("call point (step)")
            .y_desc(y_desc)
            .y_label_formatter(&|v| {
                if max_y > 100.0 {
                    format!("{v:.0}")
                } else {
                    format!("{v:.2}")
                }
            })
            .draw()
            .map_err(err("chart"))?;
        if let Some((y, label)) = hline {
            chart
                .draw_series(LineSeries::new([(0, y), (max_x, y)], RED.stroke_width(1)))
                .map_err(err("chart"))?
                .label(label.to_string())
                .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], RED));
        }
        for (i, s) in data.series.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(usize, f64)> = values(s)
                .into_iter()
                .enumerate()
                .filter_map(|(x, v)| v.map(|v| (x, v)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err("chart"))?
                .label(s.strategy.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(err("chart"))?;
    }
    Ok(())
}
