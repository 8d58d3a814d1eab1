//! Charts as SVG and PNG (text in the bundled DejaVu Sans), drawn from precomputed series (no metric is computed here). The per-step charts show the
//! episode with the largest baseline context, where the strategies differ most.
//!
//! - `context_tokens.svg`: tokens sent at each call point of one episode, per strategy, with the window;
//! - `retention_over_steps.svg`: retention at each call point of the same episode;
//! - `cumulative_cost.svg`: the cumulative cost of the same episode;
//! - `retention_vs_savings.svg`: every strategy's savings against its retention at need, Pareto frontier marked;
//! - `llm_calls.svg`: the strategies' LLM calls and LLM time over the dataset.
//!
//! A chart with nothing to show (no finding in the episode, no price, no LLM call, no retention at need) is
//! left out, and the reports say why in its place ([`left_out`]). Shares are drawn on 0–100%, dollars with
//! the digits their ticks need.

use plotters::coord::Shift;
use plotters::prelude::*;
use rayon::prelude::*;

use super::RunReport;
use crate::error::{Error, Result};
use crate::metrics::series::{ChartData, StepSeries};

mod frontier;
mod llm_calls;
mod steps;
mod style;
mod sweep;

pub use style::{kind_hex, reference_hex};
pub use sweep::sweep_charts;

pub(super) fn err<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::Serialize {
        what,
        message: e.to_string(),
    }
}

/// Chart size in pixels.
pub(super) const SIZE: (u32, u32) = (900, 600);

/// The font every chart's text uses, shipped with the project (DejaVu Sans, see `assets/fonts`).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

pub(super) fn register_font() -> Result<()> {
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

/// The charts of a run, by file stem.
pub const CHARTS: [&str; 5] = [
    "context_tokens",
    "retention_over_steps",
    "cumulative_cost",
    "retention_vs_savings",
    "llm_calls",
];

/// Why chart `name` (one of [`CHARTS`]) has nothing to show for `run`, whose per-step charts draw `data`; `None`
/// when it is drawn.
#[must_use]
pub fn left_out(name: &str, run: &RunReport, data: &ChartData) -> Option<String> {
    use crate::metrics::fields as field;
    let none = |values: &dyn Fn(&StepSeries) -> bool| !data.series.iter().any(values);
    match name {
        "retention_over_steps" if none(&|s| s.retention.iter().any(Option::is_some)) => Some(format!(
            "Findings retained per call point is left out: `{}`, the episode the per-call-point charts show, \
             introduces no finding, so there is no retention to draw.",
            data.episode
        )),
        "cumulative_cost" if none(&|s| s.cumulative_cost_usd.iter().any(Option::is_some)) => Some(
            "Cumulative cost is left out: the models are in neither price table, so there is no cost to \
             draw."
                .to_owned(),
        ),
        "llm_calls" if run.strategies.iter().all(|s| s.count(field::STRATEGY_CALLS).unwrap_or_default() == 0) => Some(
            "Strategy LLM calls is left out: no strategy called an LLM.".to_owned(),
        ),
        "retention_vs_savings"
            if run
                .strategies
                .iter()
                .all(|s| s.number(field::RETENTION_AT_NEED).is_none()) =>
        {
            Some(
                "Retention at need against savings is left out: no finding the agent found was needed at a \
                 call point, so retention at need measured nothing."
                    .to_owned(),
            )
        }
        _ => None,
    }
}

/// The charts of `run` that have something to show, by file stem.
fn drawn<'a>(run: &'a RunReport, data: &'a ChartData) -> impl Iterator<Item = &'static str> + 'a {
    CHARTS
        .iter()
        .copied()
        .filter(move |name| left_out(name, run, data).is_none())
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
    let baseline = run
        .strategies
        .iter()
        .find(|s| s.baseline)
        .map(|s| s.strategy.as_str());
    let lines = |title, y_desc, values, hline, axis| steps::Lines {
        title,
        y_desc,
        values,
        hline,
        axis,
        baseline,
    };
    match name {
        "context_tokens" => steps::step_lines(
            root,
            data,
            &lines(
                "Context tokens sent per call point",
                "tokens sent",
                &tokens,
                Some((window, "context window")),
                steps::Axis::Count,
            ),
        ),
        "retention_over_steps" => steps::step_lines(
            root,
            data,
            &lines(
                "Findings retained per call point",
                "retained (% of findings so far)",
                &retention,
                None,
                steps::Axis::Percent,
            ),
        ),
        "cumulative_cost" => steps::step_lines(
            root,
            data,
            &lines(
                "Cumulative cost (agent + strategy calls)",
                "USD",
                &cost,
                None,
                steps::Axis::Dollars,
            ),
        ),
        "llm_calls" => llm_calls::llm_calls(root, run),
        _ => frontier::retention_vs_savings(root, run),
    }
}

/// Every chart of a run that has something to show ([`left_out`]) as SVG: (file name, SVG text).
///
/// # Errors
/// When drawing fails.
pub fn render(run: &RunReport, data: &ChartData) -> Result<Vec<(String, String)>> {
    register_font()?;
    drawn(run, data)
        .collect::<Vec<_>>()
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

/// Every chart of a run that has something to show as PNG, each handed to `done` (file name, PNG bytes) as soon
/// as it is encoded, so that it can be written while the others are drawn.
///
/// # Errors
/// When drawing or encoding fails.
pub fn render_png(
    run: &RunReport,
    data: &ChartData,
    done: &(dyn Fn(String, Vec<u8>) + Sync),
) -> Result<()> {
    register_font()?;
    drawn(run, data)
        .collect::<Vec<_>>()
        .par_iter()
        .try_for_each(|name| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Exporter as _;

    #[test]
    fn a_chart_with_nothing_to_show_is_left_out_and_the_reports_say_why() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/example");
        let mut run = crate::report::rebuild::load(&dir).expect("reports/example is a run");
        assert!(CHARTS
            .iter()
            .all(|c| left_out(c, &run, &run.charts).is_none()));
        // An episode without findings, and models without prices.
        for s in &mut run.charts.series {
            s.retention.iter_mut().for_each(|r| *r = None);
            s.cumulative_cost_usd.iter_mut().for_each(|c| *c = None);
        }
        let drawn: Vec<String> = render(&run, &run.charts)
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            drawn,
            [
                "context_tokens.svg",
                "retention_vs_savings.svg",
                "llm_calls.svg"
            ]
        );
        let why = left_out("retention_over_steps", &run, &run.charts).unwrap();
        assert!(why.contains("introduces no finding"), "{why}");
        let html =
            String::from_utf8(crate::report::html::HtmlReport.serialize(&run).unwrap()).unwrap();
        assert!(html.contains("<p class=\"left-out\" id=\"retention_over_steps\">"));
        assert!(html.contains("<p class=\"left-out\" id=\"cumulative_cost\">"));
        let md = String::from_utf8(
            crate::report::markdown::MarkdownReport
                .serialize(&run)
                .unwrap(),
        )
        .unwrap();
        assert!(md.contains("Cumulative cost is left out") && !md.contains("cumulative_cost.svg"));
    }

    /// The `<text>` elements of an SVG: (x, y, font size, text).
    fn texts(svg: &str) -> Vec<(f64, f64, f64, String)> {
        let attr = |tag: &str, name: &str| -> f64 {
            tag.split(&format!(" {name}=\"")).nth(1).map_or(0.0, |r| {
                r.split('"').next().unwrap_or("0").parse().unwrap_or(0.0)
            })
        };
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let (tag, rest) = t.split_once('>').unwrap();
                let text = rest.split("</text>").next().unwrap_or("").to_owned();
                (attr(tag, "x"), attr(tag, "y"), attr(tag, "font-size"), text)
            })
            .collect()
    }

    /// Every chart's text is at least 11 px where a report 900 px wide shows it (868 px of page), and nothing
    /// in the plot reaches into the title, with the example's five strategies and with 30 (long names); on the
    /// frontier, strategies with the same figures are drawn round their place and the legend says so.
    #[test]
    fn chart_text_is_readable_at_900_px_and_off_the_title() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let example = crate::report::rebuild::load(&root.join("reports/example")).unwrap();
        let mut many = example.clone();
        for i in 0..25 {
            let mut s = many.strategies[1 + i % 4].clone();
            s.strategy = format!("openhands_observation_masking_{i}");
            many.strategies.push(s);
        }
        for (name, run) in [("example", &example), ("30 strategies", &many)] {
            for (file, svg) in render(run, &run.charts).unwrap() {
                let texts = texts(&svg);
                assert!(texts.len() > 5, "{name}/{file}");
                let shown = 868.0 / f64::from(SIZE.0);
                for (_, _, size, text) in &texts {
                    assert!(
                        size * shown >= 11.0,
                        "{name}/{file}: '{text}' is {:.1} px at 900 px",
                        size * shown
                    );
                }
                // The title is the first text; the plot's texts (left of the legend) start below it.
                let (_, title_y, title_size, _) = texts[0];
                let plot_right = f64::from(SIZE.0 - style::LEGEND_WIDTH);
                for (x, y, _, text) in &texts[1..] {
                    assert!(
                        *x >= plot_right || *y >= title_y + title_size,
                        "{name}/{file}: '{text}' at y {y} reaches the title (y {title_y}, {title_size} px)"
                    );
                }
            }
        }
        let (_, svg) = render(&many, &many.charts)
            .unwrap()
            .into_iter()
            .find(|(f, _)| f == "retention_vs_savings.svg")
            .unwrap();
        assert!(svg.contains("points at one place: on a ring round it"));
        let (_, svg) = render(&example, &example.charts)
            .unwrap()
            .into_iter()
            .find(|(f, _)| f == "retention_vs_savings.svg")
            .unwrap();
        assert!(!svg.contains("on a ring"));
    }
}
