//! Line charts of one value per call point of one episode, per strategy (context tokens, retention,
//! cumulative cost).

use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use super::style::{dash, draw_marker, legend, style, thousands, Entry, LEGEND_WIDTH, REFERENCE};
use crate::error::Result;
use crate::metrics::series::{ChartData, StepSeries};

/// What a step chart's y axis holds, which sets its range and its labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Axis {
    /// A count from 0 (tokens), with thousands separators.
    Count,
    /// A share in percent: always 0–100%.
    Percent,
    /// Dollars from 0, with as many decimals as the ticks need to differ.
    Dollars,
}

/// The decimals that tell apart ticks about `step` apart (a tenth of the range): 2 at least, for cents.
fn dollar_digits(step: f64) -> usize {
    if step <= 0.0 || !step.is_finite() {
        return 2;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let digits = (-step.log10()).ceil().max(0.0) as usize;
    digits.clamp(2, 8)
}

/// An axis label of `v` for `axis`, `digits` decimals for dollars.
fn label(axis: Axis, v: f64, digits: usize) -> String {
    match axis {
        Axis::Count => thousands(v),
        Axis::Percent => format!("{v:.0}%"),
        Axis::Dollars => format!("${v:.digits$}"),
    }
}

/// A line chart of one value per call point and strategy, the legend beside it, on an `axis`.
pub(super) fn step_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    data: &ChartData,
    values: &dyn Fn(&StepSeries) -> Vec<Option<f64>>,
    hline: Option<(f64, &str)>,
    axis: Axis,
) -> Result<()> {
    root.fill(&WHITE).map_err(err("chart"))?;
    let (width, _) = root.dim_in_pixel();
    let (plot, side) = root.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    // The last call point, so that the x axis ends where the data does.
    let max_x = data
        .series
        .iter()
        .map(|s| s.tokens_sent.len().saturating_sub(1))
        .max()
        .unwrap_or(1)
        .max(1);
    let (min_y, max_y) = y_range(data, values, hline, axis);
    let digits = dollar_digits((max_y - min_y) / 10.0);
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
        .y_label_formatter(&|v| label(axis, *v, digits))
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
    draw_lines(&mut chart, &plot, data, values, &mut entries)?;
    legend(&side, &entries)
}

/// The y axis: 0–100 for percentages, else from 0 to a little above the largest value (or the reference).
fn y_range(
    data: &ChartData,
    values: &dyn Fn(&StepSeries) -> Vec<Option<f64>>,
    hline: Option<(f64, &str)>,
    axis: Axis,
) -> (f64, f64) {
    let all: Vec<f64> = data
        .series
        .iter()
        .flat_map(|s| values(s).into_iter().flatten())
        .chain(hline.map(|h| h.0))
        .collect();
    match axis {
        Axis::Percent => (0.0, 100.0),
        Axis::Count | Axis::Dollars => (
            0.0,
            all.iter().copied().fold(0.0f64, f64::max).max(1e-9) * 1.06,
        ),
    }
}

/// One line per strategy (solid or dashed by its style), a few markers on each so the legend's shapes find
/// their lines, and its legend entry.
fn draw_lines<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordusize, RangedCoordf64>>,
    plot: &DrawingArea<DB, Shift>,
    data: &ChartData,
    values: &dyn Fn(&StepSeries) -> Vec<Option<f64>>,
    entries: &mut Vec<Entry>,
) -> Result<()> {
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
        let every = (pts.len() / 6).max(1);
        for p in pts.iter().skip(i % every).step_by(every) {
            draw_marker(plot, chart.backend_coord(p), i, 3)?;
        }
        entries.push(Entry::Series {
            index: i,
            name: s.strategy.clone(),
            line: true,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_costs_get_the_digits_that_tell_their_ticks_apart() {
        // Ticks a thousandth of a dollar apart: $0.012, $0.013, not $0.01 twice.
        assert_eq!(
            label(Axis::Dollars, 0.0123, dollar_digits(0.0015)),
            "$0.012"
        );
        assert_eq!(label(Axis::Dollars, 42.5, dollar_digits(5.0)), "$42.50");
        assert_eq!(label(Axis::Percent, 100.0, 0), "100%");
        assert_eq!(label(Axis::Count, 12_000.0, 0), "12,000");
    }
}
