//! Retention against savings over the dataset, every strategy a point, the Pareto frontier marked.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use super::style::{draw_marker, legend, Entry, LEGEND_WIDTH};
use crate::error::Result;
use crate::metrics::fields as field;
use crate::metrics::series::pareto_frontier;
use crate::report::RunReport;

/// Savings against retention at need for every strategy, with the Pareto frontier drawn; each point is
/// numbered, and the legend beside the plot names it (★ on the frontier); the axes fit the points.
pub(super) fn retention_vs_savings<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
) -> Result<()> {
    let points: Vec<(f64, f64)> = run
        .strategies
        .iter()
        .map(|s| {
            (
                s.number(field::SAVINGS).unwrap_or(0.0) * 100.0,
                s.number(field::RETENTION_AT_NEED).unwrap_or(1.0) * 100.0,
            )
        })
        .collect();
    let frontier = pareto_frontier(&points);
    root.fill(&WHITE).map_err(err("chart"))?;
    let (width, _) = root.dim_in_pixel();
    let (plot, side) = root.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    // Axes fitted to the points, with a margin, within 0–100%.
    let (lo_x, hi_x) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    let (lo_y, _) = points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    let x_range = (lo_x - 5.0).clamp(-5.0, 90.0)..(hi_x + 8.0).clamp(10.0, 105.0);
    let y_range = (lo_y - 5.0).clamp(0.0, 95.0)..101.5;
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            "Retention at need against savings (★ Pareto frontier)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range)
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
    for (i, p) in points.iter().enumerate() {
        let at = chart.backend_coord(p);
        draw_marker(&plot, at, i, if frontier.contains(&i) { 7 } else { 5 })?;
    }
    let markers: Vec<(i32, i32)> = points.iter().map(|p| chart.backend_coord(p)).collect();
    number_points(&plot, &markers, &frontier)?;
    let mut entries: Vec<Entry> = run
        .strategies
        .iter()
        .enumerate()
        .map(|(i, s)| Entry::Series {
            index: i,
            name: format!(
                "{} {}{}",
                i + 1,
                s.strategy,
                if frontier.contains(&i) { " ★" } else { "" }
            ),
            line: false,
        })
        .collect();
    entries.push(Entry::Note("★ on the Pareto frontier (dashed):".into()));
    entries.push(Entry::Note("no other saves more and keeps more".into()));
    legend(&side, &entries)
}

/// Numbers every point as in the legend: each number goes to the first of eight places around its point where it
/// overlaps no number placed before (frontier points first) and no marker, so close points stay readable.
fn number_points<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Shift>,
    markers: &[(i32, i32)],
    frontier: &[usize],
) -> Result<()> {
    let mut order: Vec<usize> = (0..markers.len()).collect();
    order.sort_by_key(|i| !frontier.contains(i));
    let mut placed: Vec<(i32, i32, i32, i32)> = Vec::new();
    for i in order {
        let (x, y) = markers[i];
        let label = (i + 1).to_string();
        let w = 8 * i32::try_from(label.len()).unwrap_or(2);
        let h = 12;
        let offsets = [
            (8, -18),
            (8, 6),
            (-8 - w, -18),
            (-8 - w, 6),
            (-w / 2, -24),
            (-w / 2, 10),
            (14, -6),
            (-14 - w, -6),
        ];
        let free = |bx: i32, by: i32| {
            placed
                .iter()
                .all(|&(px, py, pw, ph)| bx + w < px || px + pw < bx || by + h < py || py + ph < by)
                && markers.iter().all(|&(mx, my)| {
                    (mx - (bx + w / 2)).abs() > w / 2 + 4 || (my - (by + h / 2)).abs() > h / 2 + 4
                })
        };
        let (dx, dy) = offsets
            .iter()
            .copied()
            .find(|&(dx, dy)| free(x + dx, y + dy))
            .unwrap_or(offsets[0]);
        placed.push((x + dx, y + dy, w, h));
        plot.draw(&Text::new(
            label,
            (x + dx, y + dy),
            ("sans-serif", 12).into_font().color(&BLACK),
        ))
        .map_err(err("chart"))?;
    }
    Ok(())
}
