//! One chart per parameter of a sweep grid: savings and retention against the parameter's values.

use plotters::prelude::*;

use super::style::{legend, style, Entry, LEGEND_WIDTH, REFERENCE, TEXT};
use super::{err, register_font, SIZE};
use crate::error::Result;
use crate::metrics::series::SweepPoint;
use crate::metrics::{fields as field, StrategyMetrics};

/// A labelled line of a sweep chart: (parameter index, savings %, retention %) points.
type SweepLine = (String, Vec<(usize, f64, f64)>);

/// One SVG per grid parameter of a sweep: savings and retention at need against the parameter's values, one
/// line per combination of the grid's other parameters, the retention target dashed.
///
/// # Errors
/// When drawing fails.
pub fn sweep_charts(
    points: &[SweepPoint],
    metrics: &std::collections::BTreeMap<&str, &StrategyMetrics>,
    min_retention: f64,
) -> Result<Vec<(String, String)>> {
    register_font()?;
    let mut out = Vec::new();
    let mut grids: Vec<&str> = points.iter().map(|p| p.grid.as_str()).collect();
    grids.dedup();
    for grid in grids {
        let members: Vec<&SweepPoint> = points.iter().filter(|p| p.grid == grid).collect();
        let Some(first) = members.first() else {
            continue;
        };
        for (k, (param, _)) in first.values.iter().enumerate() {
            let (xs, lines) = parameter_lines(&members, k, metrics);
            let short = param.rsplit('/').next().unwrap_or(param);
            let svg = draw(&Axis { grid, param, short }, &xs, &lines, min_retention)?;
            out.push((format!("sweep_{grid}_{short}.svg"), svg));
        }
    }
    Ok(out)
}

/// The parameter a chart is drawn against: its grid, its full and short names.
struct Axis<'a> {
    grid: &'a str,
    param: &'a str,
    short: &'a str,
}

/// The distinct values of parameter `k`, in grid order (the x axis), and one line per combination of the
/// other parameters: at each value, savings and retention at need in percent.
fn parameter_lines(
    members: &[&SweepPoint],
    k: usize,
    metrics: &std::collections::BTreeMap<&str, &StrategyMetrics>,
) -> (Vec<String>, Vec<SweepLine>) {
    let mut xs: Vec<String> = Vec::new();
    for p in members {
        let v = p.values[k].1.clone();
        if !xs.contains(&v) {
            xs.push(v);
        }
    }
    let mut lines: Vec<SweepLine> = Vec::new();
    for p in members {
        let others: Vec<String> = p
            .values
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, (n, v))| format!("{}={v}", n.rsplit('/').next().unwrap_or(n)))
            .collect();
        let key = others.join(" ");
        let m = metrics[p.strategy.as_str()];
        let value = p.values[k].1.clone();
        let x = xs.iter().position(|v| *v == value).unwrap_or(0);
        let point = (
            x,
            m.number(field::SAVINGS).unwrap_or(0.0) * 100.0,
            m.number(field::RETENTION_AT_NEED).unwrap_or(1.0) * 100.0,
        );
        match lines.iter_mut().find(|(k2, _)| *k2 == key) {
            Some((_, pts)) => pts.push(point),
            None => lines.push((key, vec![point])),
        }
    }
    (xs, lines)
}

/// The chart of one parameter: the retention target dashed, each line's savings solid and retention dotted,
/// the legend beside.
fn draw(axis: &Axis<'_>, xs: &[String], lines: &[SweepLine], min_retention: f64) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err("chart"))?;
        let (plot, side) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        let mut entries = vec![Entry::Reference {
            name: "retention target".into(),
            dashed: true,
        }];
        let max_x = xs.len().saturating_sub(1).max(1);
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                format!(
                    "Sweep {}: savings (solid) and retention (dotted) by {}",
                    axis.grid, axis.short
                ),
                ("sans-serif", TEXT + 4),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(0usize..max_x, 0.0..105.0)
            .map_err(err("chart"))?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", TEXT))
            .axis_desc_style(("sans-serif", TEXT))
            .x_labels(xs.len())
            .x_label_formatter(&|i| xs.get(*i).cloned().unwrap_or_default())
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_desc(axis.param)
            .y_desc("%")
            .draw()
            .map_err(err("chart"))?;
        chart
            .draw_series(DashedLineSeries::new(
                [(0, min_retention * 100.0), (max_x, min_retention * 100.0)],
                6,
                4,
                REFERENCE.stroke_width(2),
            ))
            .map_err(err("chart"))?;
        for (i, (key, pts)) in lines.iter().enumerate() {
            let c = style(i + 1).0;
            let label = Some(key)
                .filter(|k| !k.is_empty())
                .map_or_else(String::new, |k| format!(" ({k})"));
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.0, p.1)),
                    c.stroke_width(2),
                ))
                .map_err(err("chart"))?;
            entries.push(Entry::Series {
                index: i + 1,
                name: format!("savings{label} (solid)"),
                line: true,
            });
            chart
                .draw_series(DashedLineSeries::new(
                    pts.iter().map(|p| (p.0, p.2)),
                    2,
                    3,
                    c.stroke_width(2),
                ))
                .map_err(err("chart"))?;
            entries.push(Entry::Series {
                index: i + 1,
                name: format!("retention{label} (dotted)"),
                line: false,
            });
            chart
                .draw_series(pts.iter().map(|p| Circle::new((p.0, p.2), 3, c.filled())))
                .map_err(err("chart"))?;
        }
        legend(&side, &entries)?;
        root.present().map_err(err("chart"))?;
    }
    Ok(svg)
}
