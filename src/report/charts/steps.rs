//! Line charts of one value per call point of one episode, per strategy (context tokens, retention,
//! cumulative cost).

use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::err;
use super::style::{
    dash, draw_marker, legend, style, thousands, Entry, LEGEND_WIDTH, REFERENCE, TEXT,
};
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

/// What a line chart of one value per call point and strategy draws: its title and y axis, the value, a
/// reference line, the axis, and the baseline's name (drawn last, dashed, so that a strategy that sends what it
/// sends cannot hide it).
pub(super) struct Lines<'a> {
    pub title: &'a str,
    pub y_desc: &'a str,
    pub values: &'a dyn Fn(&StepSeries) -> Vec<Option<f64>>,
    pub hline: Option<(f64, &'a str)>,
    pub axis: Axis,
    pub baseline: Option<&'a str>,
}

/// A line chart of one value per call point and strategy, the legend beside it.
pub(super) fn step_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ChartData,
    lines: &Lines<'_>,
) -> Result<()> {
    let Lines {
        title,
        y_desc,
        values,
        hline,
        axis,
        baseline,
    } = *lines;
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
        .caption(
            caption(title, &data.episode, plot.dim_in_pixel().0),
            ("sans-serif", TEXT + 4),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(84)
        .build_cartesian_2d(0usize..max_x, min_y..max_y)
        .map_err(err("chart"))?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", TEXT))
        .axis_desc_style(("sans-serif", TEXT))
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
    draw_lines(&mut chart, &plot, data, (values, baseline), &mut entries)?;
    legend(&side, &entries)
}

/// `title — episode`, the episode's id shortened in its middle (`…`) so that the caption fits `width` pixels
/// (a character of the caption's font is about 10 pixels wide).
fn caption(title: &str, episode: &str, width: u32) -> String {
    let room = usize::try_from(width / 10)
        .unwrap_or(60)
        .saturating_sub(title.chars().count() + 3)
        .max(12);
    let chars: Vec<char> = episode.chars().collect();
    if chars.len() <= room {
        return format!("{title} — {episode}");
    }
    let head = (room - 1).div_ceil(2);
    let tail = room - 1 - head;
    let short: String = chars[..head]
        .iter()
        .chain(std::iter::once(&'…'))
        .chain(&chars[chars.len() - tail..])
        .collect();
    format!("{title} — {short}")
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

/// The value of each call point of a series, and the baseline's name.
type Values<'a> = (&'a dyn Fn(&StepSeries) -> Vec<Option<f64>>, Option<&'a str>);

/// One line per strategy (solid or dashed by its style), a few markers on each so the legend's shapes find
/// their lines, and its legend entry; the baseline last, on top of every other line, dashed.
fn draw_lines<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordusize, RangedCoordf64>>,
    plot: &DrawingArea<DB, Shift>,
    data: &ChartData,
    (values, baseline): Values<'_>,
    entries: &mut Vec<Entry>,
) -> Result<()> {
    let is_base = |i: usize| baseline == Some(data.series[i].strategy.as_str());
    let mut order: Vec<usize> = (0..data.series.len()).collect();
    order.sort_by_key(|&i| is_base(i));
    let points = |i: usize| -> Vec<(usize, f64)> {
        values(&data.series[i])
            .into_iter()
            .enumerate()
            .filter_map(|(x, v)| v.map(|v| (x, v)))
            .collect()
    };
    let under = hidden_under(&order, &points, &is_base);
    for &i in &order {
        let (c, _) = style(i);
        let pts = points(i);
        let dashed = if is_base(i) {
            Some(BASELINE_DASH)
        } else {
            dash(i)
        };
        // A line drawn over by another with the same values is drawn wide, so that it shows on both sides.
        let stroke = if under[i].is_some() { 7 } else { 2 };
        match dashed {
            None => chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(stroke)))
                .map(|_| ()),
            Some(d) => {
                let gap = if is_base(i) { BASELINE_DASH } else { 3 };
                chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        d,
                        gap,
                        c.stroke_width(stroke),
                    ))
                    .map(|_| ())
            }
        }
        .map_err(err("chart"))?;
        let every = (pts.len() / 6).max(1);
        for p in pts.iter().skip(i % every).step_by(every) {
            draw_marker(plot, chart.backend_coord(p), i, 3)?;
        }
    }
    // The legend in the strategies' order, the baseline's line dashed as drawn, a line under another (drawn
    // wide) with the one over it.
    for (i, s) in data.series.iter().enumerate() {
        let mut name = if is_base(i) {
            format!("{} (baseline, dashed)", s.strategy)
        } else {
            s.strategy.clone()
        };
        if let Some(j) = under[i] {
            let other = &data.series[j].strategy;
            name = if name.chars().count() + other.chars().count() <= UNDER_CHARS {
                format!("{name} (under {other})")
            } else {
                format!("{name} (wide)")
            };
        }
        entries.push(Entry::Series {
            index: i,
            name,
            line: !is_base(i),
        });
    }
    if under.iter().any(Option::is_some) {
        entries.push(Entry::Note(
            "wide: under a line of the same values".to_owned(),
        ));
    }
    Ok(())
}

/// The longest pair of names a legend line "A (under B)" holds within the legend's width.
const UNDER_CHARS: usize = 22;

/// For each series, the series drawn after it (in `order`) whose points are the same, which hides it; the
/// baseline, drawn last and dashed, hides none (a line under it shows between its dashes).
fn hidden_under(
    order: &[usize],
    points: &dyn Fn(usize) -> Vec<(usize, f64)>,
    is_base: &dyn Fn(usize) -> bool,
) -> Vec<Option<usize>> {
    let all: Vec<Vec<(usize, f64)>> = (0..order.len()).map(points).collect();
    let same = |a: &[(usize, f64)], b: &[(usize, f64)]| {
        !a.is_empty()
            && a.len() == b.len()
            && a.iter().zip(b).all(|(p, q)| {
                p.0 == q.0 && (p.1 - q.1).abs() <= 1e-9 * p.1.abs().max(q.1.abs()).max(1.0)
            })
    };
    let mut under = vec![None; order.len()];
    for (at, &i) in order.iter().enumerate() {
        if is_base(i) {
            continue;
        }
        under[i] = order[at + 1..]
            .iter()
            .rev()
            .copied()
            .find(|&j| !is_base(j) && same(&all[i], &all[j]));
    }
    under
}

/// The dash of the baseline's line, in pixels: long, so that a strategy's line under it shows between dashes.
const BASELINE_DASH: u32 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_under_another_with_the_same_values_is_named() {
        let lines = [
            vec![(0, 5.0), (1, 9.0)],
            vec![(0, 5.0), (1, 4.0)],
            vec![(0, 3.0), (1, 2.0)],
            vec![(0, 3.0), (1, 2.0)],
            vec![(0, 5.0), (1, 9.0)],
        ];
        let points = |i: usize| lines[i].clone();
        // Series 0 is the baseline, drawn last; 2 lies under 3, and 4 under the baseline's dashes (not said).
        let under = hidden_under(&[1, 2, 3, 4, 0], &points, &|i| i == 0);
        assert_eq!(under, vec![None, None, Some(3), None, None]);
    }

    #[test]
    fn a_long_episode_id_is_shortened_to_fit_the_caption() {
        let long = "chat-history__session0288__2024-08-09T16-16-42.md";
        let c = caption("Context tokens sent per call point", long, 610);
        assert_eq!(c.chars().count(), 61, "{c}");
        assert!(
            c.starts_with("Context tokens sent per call point — chat-hist") && c.ends_with("42.md")
        );
        assert_eq!(caption("Tokens", "coding-13", 610), "Tokens — coding-13");
    }

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
