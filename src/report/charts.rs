//! Charts as SVG and PNG (text in the bundled DejaVu Sans), drawn from precomputed series (no metric is computed here). The per-step charts show the
//! episode with the largest baseline context, where the strategies differ most.
//!
//! - `context_tokens.svg`: tokens sent at each call point of one episode, per strategy, with the window;
//! - `retention_over_steps.svg`: retention at each call point of the same episode;
//! - `cumulative_cost.svg`: the cumulative cost of the same episode;
//! - `retention_vs_savings.svg`: every strategy's savings against its final retention, Pareto frontier marked;
//! - `llm_calls.svg`: the strategies' LLM calls and LLM time over the dataset.

use plotters::coord::Shift;
use plotters::prelude::*;
use rayon::prelude::*;

use super::RunReport;
use crate::error::{Error, Result};

/// Per-step series of one episode under one strategy.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

impl StepSeries {
    /// Appends one call point: tokens sent, findings introduced and retained, and the step's cost (which
    /// extends the running total; an unknown cost makes the rest of the total unknown).
    pub fn push(
        &mut self,
        tokens_sent: usize,
        introduced: usize,
        retained: usize,
        cost_usd: Option<f64>,
    ) {
        let total = self
            .cumulative_cost_usd
            .last()
            .copied()
            .unwrap_or(Some(0.0));
        self.tokens_sent.push(tokens_sent);
        self.retention
            .push(crate::metrics::ratio(retained, introduced));
        self.cumulative_cost_usd
            .push(total.zip(cost_usd).map(|(a, b)| a + b));
    }
}

/// The series the charts need.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
pub const CHARTS: [&str; 5] = [
    "context_tokens",
    "retention_over_steps",
    "cumulative_cost",
    "retention_vs_savings",
    "llm_calls",
];

/// Bars of the strategies' LLM calls over the dataset, each labelled with its total LLM time.
fn llm_calls<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunReport) -> Result<()> {
    root.fill(&WHITE).map_err(err("chart"))?;
    let n = run.strategies.len().max(1);
    #[allow(clippy::cast_precision_loss)]
    let max_y = run
        .strategies
        .iter()
        .map(|s| s.strategy_calls)
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.2;
    let names: Vec<String> = run.strategies.iter().map(|s| s.strategy.clone()).collect();
    #[allow(clippy::cast_precision_loss)]
    let mut chart = ChartBuilder::on(root)
        .caption(
            "Strategy LLM calls over the dataset (label: total LLM time)",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..n as f64, 0.0..max_y)
        .map_err(err("chart"))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            // Label the bar centres (i + 0.5) with the strategy names.
            let centre = x - 0.5;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let i = centre.round() as usize;
            if (centre - centre.round()).abs() < 1e-6 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("strategy")
        .y_desc("LLM calls")
        .draw()
        .map_err(err("chart"))?;
    for (i, s) in run.strategies.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let (x, calls) = (i as f64, s.strategy_calls as f64);
        chart
            .draw_series([Rectangle::new(
                [(x + 0.2, 0.0), (x + 0.8, calls)],
                color(i).filled(),
            )])
            .map_err(err("chart"))?;
        chart
            .draw_series([Text::new(
                format!(
                    "{} calls, {:.1} s",
                    s.strategy_calls,
                    s.strategy_llm_ms / 1000.0
                ),
                (x + 0.22, calls + max_y * 0.03),
                ("sans-serif", 13).into_font().color(&BLACK),
            )])
            .map_err(err("chart"))?;
    }
    Ok(())
}

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
        "llm_calls" => llm_calls(root, run),
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
        .par_iter()
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

/// Every chart of a run as PNG, each handed to `done` (file name, PNG bytes) as soon as it is encoded, so
/// that it can be written while the others are drawn.
///
/// # Errors
/// When drawing or encoding fails.
pub fn render_png(
    run: &RunReport,
    data: &ChartData,
    done: &(dyn Fn(String, Vec<u8>) + Sync),
) -> Result<()> {
    register_font()?;
    CHARTS.par_iter().try_for_each(|name| {
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
        done(format!("{name}.png"), bytes);
        Ok(())
    })
}

/// A labelled line of a sweep chart: (parameter index, savings %, retention %) points.
type SweepLine = (String, Vec<(usize, f64, f64)>);

/// One SVG per grid parameter of a sweep: savings and final retention against the parameter's values, one
/// line per combination of the grid's other parameters, the retention target dashed.
///
/// # Errors
/// When drawing fails.
pub fn sweep_charts(
    points: &[crate::sweep::Point],
    metrics: &std::collections::BTreeMap<&str, &crate::metrics::StrategyMetrics>,
    min_retention: f64,
) -> Result<Vec<(String, String)>> {
    register_font()?;
    let mut out = Vec::new();
    let mut grids: Vec<&str> = points.iter().map(|p| p.grid.as_str()).collect();
    grids.dedup();
    for grid in grids {
        let members: Vec<&crate::sweep::Point> = points.iter().filter(|p| p.grid == grid).collect();
        let Some(first) = members.first() else {
            continue;
        };
        for (k, (param, _)) in first.values.iter().enumerate() {
            // The distinct values of this parameter, in grid order: the x axis.
            let mut xs: Vec<String> = Vec::new();
            for p in &members {
                let v = p.values[k].1.to_string();
                if !xs.contains(&v) {
                    xs.push(v);
                }
            }
            // Lines: one per combination of the other parameters.
            let mut lines: Vec<SweepLine> = Vec::new();
            for p in &members {
                let others: Vec<String> = p
                    .values
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .map(|(_, (n, v))| format!("{}={v}", n.rsplit('/').next().unwrap_or(n)))
                    .collect();
                let key = others.join(" ");
                let m = metrics[p.strategy.name.as_str()];
                let value = p.values[k].1.to_string();
                let x = xs.iter().position(|v| *v == value).unwrap_or(0);
                let point = (
                    x,
                    m.savings * 100.0,
                    m.final_retention.unwrap_or(1.0) * 100.0,
                );
                match lines.iter_mut().find(|(k2, _)| *k2 == key) {
                    Some((_, pts)) => pts.push(point),
                    None => lines.push((key, vec![point])),
                }
            }
            let short = param.rsplit('/').next().unwrap_or(param);
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
                root.fill(&WHITE).map_err(err("chart"))?;
                let max_x = xs.len().saturating_sub(1).max(1);
                let mut chart = ChartBuilder::on(&root)
                    .caption(
                        format!("Sweep {grid}: savings (solid) and retention (dotted) by {short}"),
                        ("sans-serif", 18),
                    )
                    .margin(16)
                    .x_label_area_size(44)
                    .y_label_area_size(60)
                    .build_cartesian_2d(0usize..max_x, 0.0..105.0)
                    .map_err(err("chart"))?;
                let labels = xs.clone();
                chart
                    .configure_mesh()
                    .x_labels(xs.len())
                    .x_label_formatter(&|i| labels.get(*i).cloned().unwrap_or_default())
                    .y_label_formatter(&|v| format!("{v:.0}"))
                    .x_desc(param.as_str())
                    .y_desc("%")
                    .draw()
                    .map_err(err("chart"))?;
                chart
                    .draw_series(DashedLineSeries::new(
                        [(0, min_retention * 100.0), (max_x, min_retention * 100.0)],
                        6,
                        4,
                        RED.stroke_width(1),
                    ))
                    .map_err(err("chart"))?
                    .label("retention target")
                    .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], RED));
                for (i, (key, pts)) in lines.iter().enumerate() {
                    let c = color(i + 1);
                    let label = if key.is_empty() {
                        String::new()
                    } else {
                        format!(" ({key})")
                    };
                    chart
                        .draw_series(LineSeries::new(
                            pts.iter().map(|p| (p.0, p.1)),
                            c.stroke_width(2),
                        ))
                        .map_err(err("chart"))?
                        .label(format!("savings{label}"))
                        .legend(move |(x, y)| {
                            PathElement::new([(x, y), (x + 18, y)], c.stroke_width(2))
                        });
                    chart
                        .draw_series(DashedLineSeries::new(
                            pts.iter().map(|p| (p.0, p.2)),
                            2,
                            3,
                            c.stroke_width(2),
                        ))
                        .map_err(err("chart"))?
                        .label(format!("retention{label}"))
                        .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], c));
                    chart
                        .draw_series(pts.iter().map(|p| Circle::new((p.0, p.2), 3, c.filled())))
                        .map_err(err("chart"))?;
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerLeft)
                    .border_style(BLACK)
                    .background_style(WHITE.mix(0.85))
                    .draw()
                    .map_err(err("chart"))?;
                root.present().map_err(err("chart"))?;
            }
            out.push((format!("sweep_{grid}_{short}.svg"), svg));
        }
    }
    Ok(out)
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
