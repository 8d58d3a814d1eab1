//! Retention against savings over the dataset, every strategy a point, the Pareto frontier marked.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use super::style::{draw_marker, legend, Entry, LEGEND_WIDTH, TEXT};
use crate::error::Result;
use crate::metrics::fields as field;
use crate::metrics::series::pareto_frontier;
use crate::report::RunReport;

/// Savings against retention at need for every strategy, with the Pareto frontier drawn; each point is
/// numbered, and the legend beside the plot names it (★ on the frontier); the axes fit the points. Points that
/// fall on one another are drawn on a small ring round their place, each outlined, and the legend says so;
/// numbers stay inside the plot, off the title, the markers and each other.
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
    let y_range = (lo_y - 5.0).clamp(0.0, 95.0)..103.0;
    let mut chart = ChartBuilder::on(&plot)
        .caption(
            "Retention at need against savings (★ Pareto frontier)",
            ("sans-serif", TEXT + 5),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range)
        .map_err(err("chart"))?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", TEXT))
        .axis_desc_style(("sans-serif", TEXT))
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
    let (markers, side_by_side) = apart(
        &points
            .iter()
            .map(|p| chart.backend_coord(p))
            .collect::<Vec<_>>(),
    );
    for (i, &at) in markers.iter().enumerate() {
        let size = if frontier.contains(&i) { 7 } else { 5 };
        // A white ring, so that a marker beside another stays whole.
        plot.draw(&Circle::new(at, size + 3, WHITE.filled()))
            .map_err(err("chart"))?;
        draw_marker(&plot, at, i, size)?;
    }
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    number_points(&plot, &markers, &frontier, (xs, ys))?;
    legend(&side, &entries(run, &frontier, side_by_side))
}

/// The legend: each strategy by its number (★ on the frontier), what the frontier is, and whether points at
/// one place were drawn round it.
fn entries(run: &RunReport, frontier: &[usize], side_by_side: bool) -> Vec<Entry> {
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
    if side_by_side {
        entries.push(Entry::Note(
            "points at one place: on a ring round it".into(),
        ));
    }
    entries
}

/// The markers at `at`, where several fall on one place (within 12 pixels of one another: two strategies with
/// the same figures) set on a small ring around it (at most 24 pixels from where their figures put them), and
/// whether any was.
fn apart(at: &[(i32, i32)]) -> (Vec<(i32, i32)>, bool) {
    // Groups of markers that overlap, each by its first member.
    let mut group: Vec<usize> = (0..at.len()).collect();
    for i in 0..at.len() {
        for j in 0..i {
            if (at[i].0 - at[j].0).abs() < 12 && (at[i].1 - at[j].1).abs() < 12 {
                group[i] = group[j];
                break;
            }
        }
    }
    let mut out = at.to_vec();
    let mut moved = false;
    for g in 0..at.len() {
        let members: Vec<usize> = (0..at.len()).filter(|&i| group[i] == g).collect();
        if members.len() < 2 {
            continue;
        }
        moved = true;
        #[allow(clippy::cast_precision_loss)]
        let k = members.len() as f64;
        let radius = (3.0 * k).clamp(9.0, 24.0);
        let (cx, cy) = at[g];
        for (n, &i) in members.iter().enumerate() {
            #[allow(clippy::cast_precision_loss)]
            let angle = std::f64::consts::TAU * n as f64 / k - std::f64::consts::FRAC_PI_2;
            #[allow(clippy::cast_possible_truncation)]
            let offset = (
                (radius * angle.cos()).round() as i32,
                (radius * angle.sin()).round() as i32,
            );
            out[i] = (cx + offset.0, cy + offset.1);
        }
    }
    (out, moved)
}

/// Numbers every point as in the legend: each number goes to the first of eight places around its point where it
/// overlaps no number placed before (frontier points first) and no marker, so close points stay readable.
fn number_points<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Shift>,
    markers: &[(i32, i32)],
    frontier: &[usize],
    (xs, ys): (std::ops::Range<i32>, std::ops::Range<i32>),
) -> Result<()> {
    let mut order: Vec<usize> = (0..markers.len()).collect();
    order.sort_by_key(|i| !frontier.contains(i));
    let mut placed: Vec<(i32, i32, i32, i32)> = Vec::new();
    for i in order {
        let (x, y) = markers[i];
        let label = (i + 1).to_string();
        let w = 9 * i32::try_from(label.len()).unwrap_or(2);
        let h = 14;
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
        let inside = |bx: i32, by: i32| {
            bx >= xs.start && bx + w <= xs.end && by >= ys.start && by + h <= ys.end
        };
        let free = |bx: i32, by: i32| {
            inside(bx, by)
                && placed.iter().all(|&(px, py, pw, ph)| {
                    bx + w < px || px + pw < bx || by + h < py || py + ph < by
                })
                && markers.iter().all(|&(mx, my)| {
                    (mx - (bx + w / 2)).abs() > w / 2 + 4 || (my - (by + h / 2)).abs() > h / 2 + 4
                })
        };
        let (dx, dy) = offsets
            .iter()
            .copied()
            .find(|&(dx, dy)| free(x + dx, y + dy))
            .or_else(|| {
                offsets
                    .iter()
                    .copied()
                    .find(|&(dx, dy)| inside(x + dx, y + dy))
            })
            .unwrap_or(offsets[1]);
        placed.push((x + dx, y + dy, w, h));
        plot.draw(&Text::new(
            label,
            (x + dx, y + dy),
            ("sans-serif", TEXT).into_font().color(&BLACK),
        ))
        .map_err(err("chart"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::apart;

    #[test]
    fn points_at_one_place_are_drawn_round_it() {
        let (at, moved) = apart(&[(100, 50), (100, 50), (104, 52), (300, 50)]);
        assert!(moved);
        for (i, a) in at.iter().enumerate() {
            for b in &at[i + 1..] {
                assert!((a.0 - b.0).abs() >= 12 || (a.1 - b.1).abs() >= 12, "{at:?}");
            }
            assert!((a.0 - [100, 100, 104, 300][i]).abs() <= 24, "{at:?}");
        }
        assert_eq!(at[3], (300, 50));
        assert!(!apart(&[(100, 50), (200, 50)]).1);
    }
}
