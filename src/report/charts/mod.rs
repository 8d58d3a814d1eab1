//! Charts as SVG and PNG (text in the bundled DejaVu Sans), drawn from precomputed series (no metric is computed here). The per-step charts show the
//! episode with the largest baseline context, where the strategies differ most.
//!
//! - `context_tokens.svg`: tokens sent at each call point of one episode, per strategy, with the window;
//! - `retention_over_steps.svg`: retention at each call point of the same episode;
//! - `cumulative_cost.svg`: the cumulative cost of the same episode;
//! - `retention_vs_savings.svg`: every strategy's savings against its retention at need, Pareto frontier marked;
//! - `llm_calls.svg`: the strategies' LLM calls and LLM time over the dataset.

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
pub(super) const SIZE: (u32, u32) = (1040, 560);

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
        "context_tokens" => steps::step_lines(
            root,
            "Context tokens sent per call point",
            "tokens sent",
            data,
            &tokens,
            Some((window, "context window")),
            true,
        ),
        "retention_over_steps" => steps::step_lines(
            root,
            "Findings retained per call point",
            "retained (%)",
            data,
            &retention,
            None,
            false,
        ),
        "cumulative_cost" => steps::step_lines(
            root,
            "Cumulative cost (agent + strategy calls)",
            "USD",
            data,
            &cost,
            None,
            true,
        ),
        "llm_calls" => llm_calls::llm_calls(root, run),
        _ => frontier::retention_vs_savings(root, run),
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
