//! Charts as SVG and PNG (text in the bundled DejaVu Sans), drawn from precomputed series (no metric is computed here). The per-step charts show the
//! episode with the largest baseline context, where the strategies differ most.
//!
//! - `context_tokens.svg`: tokens sent at each call point of one episode, per strategy, with the window;
//! - `retention_over_steps.svg`: retention at each call point of the same episode;
//! - `cumulative_cost.svg`: the cumulative cost of the same episode;
//! - `retention_vs_savings.svg`: every strategy's savings against its final retention, Pareto frontier marked.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RunReport;
use crate::error::{Error, Result};

/// Per-step series of one episode under one strategy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepSeries {
    /// The strategy.
    pub strategy: String,
    /// Tokens sent at each call point.
    pub tokens_sent: Vec<usize>,
    /// Retention at each call point (`None` before the first finding).
    pub retention: Vec<Option<f64>>,
    /// Cumulative cost in USD after each call point (`None` when prices are unknown).
    pub cumulative_cost_usd: Vec<Option<f64>>,
}

/// The series the charts need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartData {
    /// The episode drawn per step.
    pub episode: String,
    /// The context window in tokens.
    pub context_window: usize,
    /// One series per strategy.
    pub series: Vec<StepSeries>,
}

const COLORS: [RGBColor; 8] = [
    RGBColor(0x33, 0x33, 0x33),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

fn err<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::Serialize {
        what,
        message: e.to_string(),
    }
}

/// Indices of the strategies on the Pareto frontier of (savings, retention): no other strategy is at least as
/// good on both and better on one.
#[must_use]
pub fn pareto_frontier(points: &[(f64, f64)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (s, r) = points[i];
            !points
                .iter()
                .any(|&(s2, r2)| s2 >= s && r2 >= r && (s2 > s || r2 > r))
        })
        .collect()
}

/// Chart size in pixels.
const SIZE: (u32, u32) = (960, 540);

/// The font every chart's text uses, shipped with the project (DejaVu Sans, see `assets/fonts`).
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

fn register_font() -> Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Serialize {
            what: "chart",
            message: "the bundled font could not be loaded".into(),
        })
    }
}

/// A line chart of one value per call point and strategy.
fn step_lines<DB: DrawingBackend>(
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

/// Savings against final retention for every strategy, with the Pareto frontier drawn.
fn retention_vs_savings<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
) -> Result<()> {
    let points: Vec<(f64, f64)> = run
        .strategies
        .iter()
        .map(|s| (s.savings * 100.0, s.final_retention.unwrap_or(1.0) * 100.0))
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
            .y_desc("findings retained at the end (%)")
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

/// The charts of a run, by file stem.
pub const CHARTS: [&str; 4] = [
    "context_tokens",
    "retention_over_steps",
    "cumulative_cost",
    "retention_vs_savings",
];

/// Draws chart `name` (one of [`CHARTS`]) on any backend.
fn draw<DB: DrawingBackend>(
    name: &str,
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
    data: &ChartData,
) -> Result<()> {
    #[allow(clippy::cast_precision_loss)]
    let window = data.context_window as f64;
    #[allow(clippy::cast_precision_loss)]
    let tokens = |s: &StepSeries| s.tokens_sent.iter().map(|&t| Some(t as f64)).collect();
    let retention = |s: &StepSeries| s.retention.iter().map(|r| r.map(|r| r * 100.0)).collect();
    let cost = |s: &StepSeries| s.cumulative_cost_usd.clone();
    match name {
        "context_tokens" => step_lines(
            root,
            "Context tokens sent per call point",
            "tokens sent",
            data,
            &tokens,
            Some((window, "context window")),
        ),
        "retention_over_steps" => step_lines(
            root,
            "Findings retained per call point",
            "retained (%)",
            data,
            &retention,
            None,
        ),
        "cumulative_cost" => step_lines(
            root,
            "Cumulative cost (agent + strategy calls)",
            "USD",
            data,
            &cost,
            None,
        ),
        _ => retention_vs_savings(root, run),
    }
}

/// Every chart of a run as SVG: (file name, SVG text).
///
/// # Errors
/// When drawing fails.
pub fn render(run: &RunReport, data: &ChartData) -> Result<Vec<(String, String)>> {
    register_font()?;
    CHARTS
        .iter()
        .map(|name| {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
                draw(name, &root, run, data)?;
                root.present().map_err(err("chart"))?;
            }
            Ok((format!("{name}.svg"), svg))
        })
        .collect()
}

/// Every chart of a run as PNG: (file name, PNG bytes).
///
/// # Errors
/// When drawing or encoding fails.
pub fn render_png(run: &RunReport, data: &ChartData) -> Result<Vec<(String, Vec<u8>)>> {
    register_font()?;
    CHARTS
        .iter()
        .map(|name| {
            let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
                draw(name, &root, run, data)?;
                root.present().map_err(err("chart"))?;
            }
            let mut bytes = Vec::new();
            {
                let mut enc = png::Encoder::new(&mut bytes, SIZE.0, SIZE.1);
                enc.set_color(png::ColorType::Rgb);
                enc.set_depth(png::BitDepth::Eight);
                let mut w = enc.write_header().map_err(err("png"))?;
                w.write_image_data(&rgb).map_err(err("png"))?;
            }
            Ok((format!("{name}.png"), bytes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontier_keeps_only_undominated_points() {
        let pts = [
            (0.0, 100.0),
            (60.0, 70.0),
            (30.0, 95.0),
            (50.0, 60.0),
            (85.0, 69.0),
        ];
        assert_eq!(pareto_frontier(&pts), vec![0, 1, 2, 4]);
    }
}
