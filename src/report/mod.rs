//! Reports: what a run writes, one exporter per format, and the manager that writes files atomically.
//!
//! Exporters only read a [`RunReport`] (metrics, never replay internals) and return bytes; [`ExportManager`]
//! does the I/O. Files are written to a temporary name and renamed, so a file on disk is always complete, and
//! rewritten after each finished batch of episodes, so a run that fails midway keeps what it finished.
//! Wall-clock measurements go only to `timings.csv`: every other file is byte-identical between two mock runs.

pub mod charts;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod rebuild;

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::metrics::StrategyMetrics;

/// Everything a report needs about a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Format version of `summary.json`.
    pub version: u32,
    /// The ctxbench version that wrote it.
    pub tool_version: String,
    /// The run's name.
    pub run: String,
    /// Whether every episode finished.
    pub complete: bool,
    /// The dataset.
    pub dataset: DatasetInfo,
    /// The full configuration, so the run can be repeated.
    pub config: serde_json::Value,
    /// Per-strategy results, in configuration order.
    pub strategies: Vec<StrategyMetrics>,
    /// Known limits of these numbers.
    pub notes: Vec<String>,
    /// Strategy compute time per strategy: (p50, p95) in microseconds (written to `timings.csv` only).
    #[serde(skip)]
    pub timings: Vec<(String, f64, f64)>,
    /// Per-step series for the charts (of the episode with the largest baseline context).
    #[serde(skip)]
    pub charts: charts::ChartData,
}

/// The dataset a run read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetInfo {
    /// Path as given.
    pub path: String,
    /// SHA-256 of the dataset files' bytes, in file order.
    pub sha256: String,
    /// Episodes replayed.
    pub episodes: usize,
    /// Items in those episodes.
    pub items: usize,
}

/// The notes every report carries.
#[must_use]
pub fn standard_notes() -> Vec<String> {
    vec![
        "Open-loop replay: the recorded future does not depend on the reduced context. A strategy can change what \
         an agent does next (LLM summaries made SWE-agent runs 13-15% longer in the Complexity Trap study); \
         closed-loop replay with a real LLM is the way to measure that."
            .into(),
        "Retention counts a finding as kept when every evidence string occurs in one item or instruction of the \
         request as sent (case-insensitive, white space folded)."
            .into(),
        "Cost prices the prefix shared with the previous request as cached input; strategy compute times vary \
         between runs and are in timings.csv only."
            .into(),
    ]
}

/// Turns a report into the bytes of one file; no I/O.
pub trait Exporter: Send + Sync {
    /// The file name under the run directory.
    fn file_name(&self) -> &'static str;
    /// The file's content.
    ///
    /// # Errors
    /// When serialization fails.
    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>>;

    /// Whether the file is rewritten after every batch of episodes (cheap tables), or only when the run ends
    /// (pages with charts, which take longer to draw).
    fn per_batch(&self) -> bool {
        true
    }
}

/// Writes every exporter's file under one directory, atomically.
pub struct ExportManager {
    dir: PathBuf,
    exporters: Vec<Box<dyn Exporter>>,
}

impl ExportManager {
    /// A manager writing the standard files (`timings.csv`, `summary.json`, `report.md`, `report.html`,
    /// `charts/*.svg|png`); the runner streams `steps.csv` and `episodes.csv` itself ([`csv::RowsWriter`]).
    #[must_use]
    pub fn standard(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            exporters: vec![
                Box::new(csv::TimingsCsv),
                Box::new(json::SummaryJson),
                Box::new(markdown::MarkdownReport),
                Box::new(html::HtmlReport),
            ],
        }
    }

    /// Writes the files: the tables after every batch, and the charts and the HTML page once the run is
    /// complete (`ctxbench report` draws them for an interrupted run).
    ///
    /// # Errors
    /// Names the file that could not be written.
    pub fn write_all(&self, run: &RunReport) -> Result<()> {
        // Each file is independent of the others: they are drawn in parallel, and each is written as soon as
        // it is drawn, while the others still are.
        std::thread::scope(|scope| {
            let writes = Writes::new(scope);
            let tables = || {
                self.exporters
                    .par_iter()
                    .filter(|e| run.complete || e.per_batch())
                    .try_for_each(|e| {
                        writes.start(self.dir.join(e.file_name()), e.serialize(run)?);
                        Ok(())
                    })
            };
            let (tables, charts) = if run.complete {
                rayon::join(tables, || draw_charts(&self.dir, run, &writes))
            } else {
                (tables(), Ok(()))
            };
            let written = writes.finish();
            tables.and(charts).and(written)
        })
    }
}

/// Writes every chart of `run` as SVG and PNG under `dir/charts` (nothing when there is no series).
///
/// # Errors
/// Names the directory or file that could not be written.
pub fn write_charts(dir: &Path, run: &RunReport) -> Result<()> {
    std::thread::scope(|scope| {
        let writes = Writes::new(scope);
        let drawn = draw_charts(dir, run, &writes);
        let written = writes.finish();
        drawn.and(written)
    })
}

/// Draws every chart of `run` and starts writing each under `dir/charts` (which this creates) as soon as it
/// is drawn.
fn draw_charts(dir: &Path, run: &RunReport, writes: &Writes<'_, '_>) -> Result<()> {
    if run.charts.series.is_empty() {
        return Ok(());
    }
    let dir = dir.join("charts");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    let (svg, png) = rayon::join(
        || {
            for (name, svg) in charts::render(run, &run.charts)? {
                writes.start(dir.join(name), svg.into_bytes());
            }
            Ok(())
        },
        || {
            charts::render_png(run, &run.charts, &|name, bytes| {
                writes.start(dir.join(name), bytes)
            })
        },
    );
    svg.and(png)
}

/// Files being written with [`write_atomic`], each on a thread of its own: writing one is mostly waiting for
/// the disk (every file is synced), so the waits overlap each other and the drawing of the files not yet
/// drawn, instead of taking rayon's workers (one per core) a core's worth at a time.
struct Writes<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    started: std::sync::Mutex<Vec<(PathBuf, std::thread::ScopedJoinHandle<'scope, Result<()>>)>>,
}

impl<'scope, 'env> Writes<'scope, 'env> {
    fn new(scope: &'scope std::thread::Scope<'scope, 'env>) -> Self {
        Self {
            scope,
            started: std::sync::Mutex::default(),
        }
    }

    /// Starts writing `bytes` to `path`.
    fn start(&self, path: PathBuf, bytes: Vec<u8>) {
        let target = path.clone();
        let write = self.scope.spawn(move || write_atomic(&target, &bytes));
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((path, write));
    }

    /// Waits for every write; the first error in path order, if any.
    fn finish(self) -> Result<()> {
        let mut started = self
            .started
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        started.sort_by(|a, b| a.0.cmp(&b.0));
        started
            .into_iter()
            .map(|(path, write)| {
                write.join().unwrap_or_else(|_| {
                    Err(Error::io(
                        "write",
                        &path,
                        std::io::Error::other("the writing thread panicked"),
                    ))
                })
            })
            .fold(Ok(()), Result::and)
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so `path` is never half-written.
///
/// # Errors
/// Names the file and the I/O error (disk full, permission denied…); the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// [`write_atomic`] for content written piece by piece by `write`, never held whole in memory.
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        write(&mut f)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("write", path, e)
    })
}

/// One sentence naming the dataset and the tool version.
#[must_use]
pub fn dataset_line(run: &RunReport) -> String {
    format!(
        "Dataset {} ({} episodes, {} items, sha256 {}), ctxbench {}.",
        run.dataset.path,
        run.dataset.episodes,
        run.dataset.items,
        &run.dataset.sha256[..run.dataset.sha256.len().min(16)],
        run.tool_version
    )
}

/// Formats an optional share as a percentage with one decimal, or `–`.
#[must_use]
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1}%", v * 100.0))
}
