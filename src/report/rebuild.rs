//! Re-creating a run's reports and charts from its saved records (`ctxbench report RUN_DIR`), without replaying.
//!
//! `summary.json` gives the configuration and per-strategy results; `steps.csv` gives the per-step series of
//! the charts. `report.md`, `report.html` and `charts/*` are rewritten; the records themselves are not touched.

use std::path::Path;

use serde::Deserialize;

use super::{ExportManager, RunReport};
use crate::error::{Error, Result};
use crate::metrics::series::{ChartData, StepSeries};

#[derive(Deserialize)]
struct StepIn {
    episode: String,
    strategy: String,
    tokens_sent: usize,
    findings_introduced: usize,
    findings_retained: usize,
    cost_usd: Option<f64>,
}

/// Reads a run directory back into a report (with the chart series of its largest episode).
///
/// # Errors
/// Names the file that is missing or malformed.
pub fn load(dir: &Path) -> Result<RunReport> {
    let summary_path = dir.join("summary.json");
    let text =
        std::fs::read_to_string(&summary_path).map_err(|e| Error::io("read", &summary_path, e))?;
    let mut run: RunReport = serde_json::from_str(&text).map_err(|e| Error::Parse {
        path: summary_path.clone(),
        line: e.line(),
        message: e.to_string(),
    })?;
    run.settings = super::Settings::from_config(&run.config);
    let steps_path = dir.join("steps.csv");
    let mut reader = csv::Reader::from_path(&steps_path).map_err(|e| Error::Parse {
        path: steps_path.clone(),
        line: 1,
        message: e.to_string(),
    })?;
    // Series per (episode, strategy), in file order.
    let mut series: Vec<(String, StepSeries)> = Vec::new();
    for (i, row) in reader.deserialize::<StepIn>().enumerate() {
        let row = row.map_err(|e| Error::Parse {
            path: steps_path.clone(),
            line: i + 2,
            message: e.to_string(),
        })?;
        let fresh = series
            .last()
            .is_none_or(|(ep, s)| *ep != row.episode || s.strategy != row.strategy);
        if fresh {
            series.push((
                row.episode.clone(),
                StepSeries {
                    strategy: row.strategy.clone(),
                    ..StepSeries::default()
                },
            ));
        }
        series.last_mut().expect("pushed above").1.push(
            row.tokens_sent,
            row.findings_introduced,
            row.findings_retained,
            row.cost_usd,
        );
    }
    // The episode with the largest context sent by any strategy (the baseline's, when it ran).
    let largest = series
        .iter()
        .max_by_key(|(_, s)| s.tokens_sent.iter().max().copied().unwrap_or(0))
        .map(|(ep, _)| ep.clone());
    if let Some(ep) = largest {
        run.charts = ChartData {
            episode: ep.clone(),
            context_window: run.settings.context_window,
            series: series
                .into_iter()
                .filter(|(e, _)| *e == ep)
                .map(|(_, s)| s)
                .collect(),
        };
    }
    run.pages = pages(dir, &run);
    Ok(run)
}

/// The explorer pages in `dir/episodes/`, by file name: each as it describes itself, or, for a page an earlier
/// version wrote, the page of an episode the report names with every strategy.
fn pages(dir: &Path, run: &RunReport) -> Vec<super::explorer::PageFile> {
    use std::io::Read as _;
    let Ok(entries) = std::fs::read_dir(dir.join("episodes")) else {
        return Vec::new();
    };
    let named = super::explorer::named_episodes(run);
    let mut out: Vec<super::explorer::PageFile> = entries
        .filter_map(|e| {
            let path = e.ok()?.path();
            let file = path.file_name()?.to_str()?.to_owned();
            if !file.ends_with(".html") {
                return None;
            }
            let mut head = vec![0u8; 4096];
            let n = std::fs::File::open(&path).ok()?.read(&mut head).ok()?;
            let head = String::from_utf8_lossy(&head[..n]);
            super::explorer::read_page_file(&file, &head).or_else(|| {
                let episode = named
                    .iter()
                    .find(|id| super::explorer::page_file(id) == file)?;
                Some(super::explorer::PageFile {
                    file,
                    episode: episode.clone(),
                    strategies: Vec::new(),
                    every: true,
                })
            })
        })
        .collect();
    // By episode, its page with every strategy first.
    out.sort_by(|a, b| (&a.episode, !a.every, &a.file).cmp(&(&b.episode, !b.every, &b.file)));
    out
}

/// Rewrites `report.md` and `report.html` of the run in `dir` (and not its charts), so that they link the
/// episode pages now in `dir/episodes/`.
///
/// # Errors
/// As [`load`], or a file that cannot be written.
pub fn relink(dir: &Path) -> Result<RunReport> {
    let run = load(dir)?;
    ExportManager::new(dir)
        .with_pages()
        .write_everything(&run)?;
    Ok(run)
}

/// Rewrites `report.md`, `report.html` and the charts of the run in `dir`.
///
/// # Errors
/// As [`load`], or a file that cannot be written.
pub fn rebuild(dir: &Path) -> Result<RunReport> {
    let run = load(dir)?;
    ExportManager::new(dir)
        .with_pages()
        .with_charts()
        .write_everything(&run)?;
    Ok(run)
}
