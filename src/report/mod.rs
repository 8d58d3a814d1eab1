//! Reports: what a run writes, one exporter per format, and the manager that writes every file.
//!
//! Exporters only read metrics — a [`RunReport`] for whole files, an [`EpisodeResult`] for the tables that
//! grow row by row as episodes finish — and return bytes; [`ExportManager`] does all the I/O. Whole files are
//! written to a temporary name and renamed, so a file on disk is always complete, and rewritten as a run goes,
//! so a run that fails midway keeps what it finished. Wall-clock measurements go only to `timings.csv`: every
//! other file is byte-identical between two mock runs.
//!
//! **Adding an exporter**: one file implementing [`Exporter`] (or [`RowExporter`]), its `pub mod` line, and one
//! line in [`ExportManager::standard`] (a row exporter is then merged from shards too).

pub mod analysis;
pub mod charts;
pub mod console;
pub mod csv;
mod detail;
pub mod explorer;
pub mod glossary;
pub mod html;
pub mod json;
pub mod markdown;
#[cfg(test)]
mod readers;
pub mod reading;
pub mod rebuild;
pub mod recommend;
pub mod table;

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

pub mod document;
mod run_report;
pub use run_report::{DatasetInfo, FailedEpisode, RunReport, Settings, Timing, TokenizerInfo};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::files::{write_atomic, write_atomic_with};
use crate::metrics::needs::LostFinding;

use crate::metrics::EpisodeResult;

/// The findings listed per strategy in [`RunReport::most_lost`].
pub const MOST_LOST: usize = 5;

/// Adds `lost` to `list` when it is among its strategy's [`MOST_LOST`] findings lost at the most needs so far
/// (an earlier finding stays ahead of a later one that lost as many).
pub fn keep_most_lost(list: &mut Vec<LostFinding>, lost: &LostFinding) {
    let rank = |l: &LostFinding| (std::cmp::Reverse(l.lost), std::cmp::Reverse(l.needs));
    let same: Vec<usize> = (0..list.len())
        .filter(|&i| list[i].strategy == lost.strategy)
        .collect();
    if same.len() >= MOST_LOST {
        let worst = *same.last().unwrap_or(&0);
        if rank(lost) >= rank(&list[worst]) {
            return;
        }
        list.remove(worst);
    }
    let at = (0..list.len())
        .find(|&i| list[i].strategy == lost.strategy && rank(lost) < rank(&list[i]))
        .or_else(|| {
            (0..list.len())
                .rev()
                .find(|&i| list[i].strategy == lost.strategy)
                .map(|i| i + 1)
        })
        .unwrap_or(list.len());
    list.insert(at, lost.clone());
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
         request as sent (case-insensitive, white space folded), or, in a text a model wrote (a summary, the \
         agent's own turn), when all its identifying tokens (identifiers, paths, numbers, quoted strings) do. \
         Retention at need checks each finding where the agent needs it; final retention at the last call point."
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

    /// The files this exporter writes, by path under the run directory: by default one, its
    /// [`Exporter::file_name`] with [`Exporter::serialize`]'s bytes.
    ///
    /// # Errors
    /// When serialization fails.
    fn files(&self, run: &RunReport) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(vec![(self.file_name().to_owned(), self.serialize(run)?)])
    }
}

/// A table that grows by the rows of each finished episode (`steps.csv`, `episodes.csv`); no I/O. Its rows
/// start with the episode id, by which a resumed run keeps the rows of the episodes it finished.
pub trait RowExporter: Send + Sync {
    /// The file name under the run directory.
    fn file_name(&self) -> &'static str;
    /// The header line.
    ///
    /// # Errors
    /// When serialization fails.
    fn header(&self) -> Result<Vec<u8>>;
    /// The rows of one finished episode.
    ///
    /// # Errors
    /// When serialization fails.
    fn rows(&self, episode: &EpisodeResult) -> Result<Vec<u8>>;

    /// Whether the table is JSON Lines (each line an object with an `episode` field) rather than CSV.
    fn json_lines(&self) -> bool {
        false
    }
}

/// An open table and its exporter.
struct OpenTable {
    exporter: Box<dyn RowExporter>,
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

/// Writes every file of a run directory: the row tables as episodes finish, the other files atomically.
pub struct ExportManager {
    dir: PathBuf,
    exporters: Vec<Box<dyn Exporter>>,
    tables: Vec<OpenTable>,
    charts: bool,
}

impl ExportManager {
    /// A manager writing the standard files of a run: `steps.csv`, `episodes.csv`, `findings.csv` and
    /// `llm_calls.jsonl` row by row, and
    /// `timings.csv`, `summary.json`, `report.md`, `report.html` and `charts/*.svg|png`.
    #[must_use]
    pub fn standard(dir: &Path, catalog: &std::sync::Arc<crate::metrics::Catalog>) -> Self {
        Self::new(dir)
            .with_table(Box::new(csv::StepsCsv::new(catalog)))
            .with_table(Box::new(csv::EpisodesCsv::new(catalog)))
            .with_table(Box::new(csv::FindingsCsv))
            .with_table(Box::new(json::LlmCallsJsonl))
            .with(Box::new(csv::TimingsCsv))
            .with(Box::new(json::SummaryJson))
            .with_pages()
            .with_charts()
    }

    /// The same, with the pages a reader opens (`report.md`, `report.html`): what `ctxbench report` and
    /// `show`'s relinking rewrite from a run's records.
    #[must_use]
    pub fn with_pages(self) -> Self {
        self.with(Box::new(markdown::MarkdownReport))
            .with(Box::new(html::HtmlReport))
    }

    /// A manager writing nothing yet under `dir`.
    #[must_use]
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            exporters: Vec::new(),
            tables: Vec::new(),
            charts: false,
        }
    }

    /// The same manager, writing one more whole file.
    #[must_use]
    pub fn with(mut self, exporter: Box<dyn Exporter>) -> Self {
        self.exporters.push(exporter);
        self
    }

    /// The same manager, writing one more row table.
    #[must_use]
    pub fn with_table(mut self, exporter: Box<dyn RowExporter>) -> Self {
        self.tables.push(OpenTable {
            path: self.dir.join(exporter.file_name()),
            exporter,
            file: None,
        });
        self
    }

    /// The row tables this manager appends to, in order: what `merge` interleaves from shards.
    pub fn row_tables(&self) -> impl Iterator<Item = &dyn RowExporter> + '_ {
        self.tables.iter().map(|t| t.exporter.as_ref())
    }

    /// The same manager, drawing the charts when the run is complete.
    #[must_use]
    pub fn with_charts(mut self) -> Self {
        self.charts = true;
        self
    }

    /// Opens the row tables as `tables` says they are: new ones, the tables of an interrupted run with the rows
    /// of its finished episodes kept (a row of an episode that did not finish, even a half-written one, goes),
    /// or tables that already hold every row.
    ///
    /// # Errors
    /// Names the file that cannot be created or read.
    pub fn open_tables(&mut self, tables: &Tables<'_>) -> Result<()> {
        for t in &mut self.tables {
            let file = match tables {
                Tables::New => {
                    let header = t.exporter.header()?;
                    write_atomic(&t.path, &header)?;
                    std::fs::OpenOptions::new().append(true).open(&t.path)
                }
                Tables::Resumed(finished) if t.exporter.json_lines() => {
                    keep_lines(&t.path, finished)?;
                    std::fs::OpenOptions::new().append(true).open(&t.path)
                }
                Tables::Resumed(finished) => {
                    keep_rows(&t.path, finished)?;
                    std::fs::OpenOptions::new().append(true).open(&t.path)
                }
                Tables::Complete => std::fs::OpenOptions::new().append(true).open(&t.path),
            }
            .map_err(|e| Error::io("open", &t.path, e))?;
            t.file = Some(std::io::BufWriter::new(file));
        }
        Ok(())
    }

    /// Appends one finished episode's rows to every table.
    ///
    /// # Errors
    /// Names the file that cannot be written.
    pub fn append(&mut self, episode: &EpisodeResult) -> Result<()> {
        for t in &mut self.tables {
            let rows = t.exporter.rows(episode)?;
            if let Some(file) = &mut t.file {
                file.write_all(&rows)
                    .map_err(|e| Error::io("write", &t.path, e))?;
            }
        }
        Ok(())
    }

    /// Hands the rows appended so far to the operating system (a killed process loses none of them; the
    /// journal that vouches for them is synced after this).
    ///
    /// # Errors
    /// Names the file that cannot be written.
    pub fn flush_tables(&mut self) -> Result<()> {
        for t in &mut self.tables {
            if let Some(file) = &mut t.file {
                file.flush().map_err(|e| Error::io("write", &t.path, e))?;
            }
        }
        Ok(())
    }

    /// Writes the whole files: the tables after every batch, and the charts and the pages once the run is
    /// complete (`ctxbench report` draws them for an interrupted run).
    ///
    /// # Errors
    /// Names the file that could not be written.
    pub fn write_all(&self, run: &RunReport) -> Result<()> {
        self.write(run, run.complete)
    }

    /// Writes every whole file and the charts, complete run or not (`ctxbench report` of an interrupted run).
    ///
    /// # Errors
    /// Names the file that could not be written.
    pub fn write_everything(&self, run: &RunReport) -> Result<()> {
        self.write(run, true)
    }

    fn write(&self, run: &RunReport, everything: bool) -> Result<()> {
        // Each file is independent of the others: they are drawn in parallel, and each is written as soon as
        // it is drawn, while the others still are.
        std::thread::scope(|scope| {
            let writes = Writes::new(scope);
            let tables = || {
                self.exporters
                    .par_iter()
                    .filter(|e| everything || e.per_batch())
                    .try_for_each(|e| {
                        for (file, bytes) in e.files(run)? {
                            let path = self.dir.join(file);
                            if let Some(parent) = path.parent() {
                                std::fs::create_dir_all(parent)
                                    .map_err(|e| Error::io("create", parent, e))?;
                            }
                            writes.start(path, bytes);
                        }
                        Ok(())
                    })
            };
            let (tables, charts) = if everything && self.charts {
                rayon::join(tables, || draw_charts(&self.dir, run, &writes))
            } else {
                (tables(), Ok(()))
            };
            let written = writes.finish();
            tables.and(charts).and(written)
        })
    }
}

/// What a run directory's row tables hold when a writer opens them ([`ExportManager::open_tables`]).
pub enum Tables<'a> {
    /// Nothing yet: each is written anew, its header alone.
    New,
    /// An interrupted run's rows: those of the `finished` episodes are kept, the others dropped.
    Resumed(&'a HashSet<String>),
    /// Every row already, as a merge interleaved them from its shards: opened to append to, not read again.
    Complete,
}

/// Keeps the header of the table at `path` and the rows whose first field is a `finished` episode.
fn keep_rows(path: &Path, finished: &HashSet<String>) -> Result<()> {
    let bad = |e: ::csv::Error| Error::csv(path, &e);
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(bad)?;
    let headers = reader.headers().map_err(bad)?.clone();
    // Row by row into the new file: a long run's table is not held in memory.
    write_atomic_with(path, |file| {
        let mut kept = ::csv::Writer::from_writer(std::io::BufWriter::new(file));
        kept.write_record(&headers)?;
        for record in reader.records() {
            let Ok(record) = record else { break };
            if record.get(0).is_some_and(|ep| finished.contains(ep)) {
                kept.write_record(&record)?;
            }
        }
        kept.flush()
    })
}

/// Keeps the lines of a JSON Lines table whose `episode` is a finished one (a missing table is a new empty
/// one).
fn keep_lines(path: &Path, finished: &HashSet<String>) -> Result<()> {
    use std::io::BufRead as _;
    let Ok(file) = std::fs::File::open(path) else {
        return write_atomic(path, b"");
    };
    let lines = std::io::BufReader::new(file).lines();
    write_atomic_with(path, |out| {
        let mut out = std::io::BufWriter::new(out);
        for line in lines {
            let Ok(line) = line else { break };
            let episode = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| {
                    v.get("episode")
                        .and_then(serde_json::Value::as_str)
                        .map(str::to_owned)
                });
            if episode.is_some_and(|ep| finished.contains(&ep)) {
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
            }
        }
        out.flush()
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
    // A chart left out now may have been drawn before (`ctxbench report` of an older run): it goes.
    for name in charts::CHARTS {
        if charts::left_out(name, run, &run.charts).is_some() {
            for ext in ["svg", "png"] {
                let file = dir.join(format!("{name}.{ext}"));
                if file.exists() {
                    std::fs::remove_file(&file).map_err(|e| Error::io("remove", &file, e))?;
                }
            }
        }
    }
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
pub(crate) struct Writes<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    started: std::sync::Mutex<Vec<(PathBuf, std::thread::ScopedJoinHandle<'scope, Result<()>>)>>,
}

impl<'scope, 'env> Writes<'scope, 'env> {
    pub(crate) fn new(scope: &'scope std::thread::Scope<'scope, 'env>) -> Self {
        Self {
            scope,
            started: std::sync::Mutex::default(),
        }
    }

    /// Starts writing `bytes` to `path`.
    pub(crate) fn start(&self, path: PathBuf, bytes: Vec<u8>) {
        let target = path.clone();
        let write = self.scope.spawn(move || write_atomic(&target, &bytes));
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((path, write));
    }

    /// Waits for every write; the first error in path order, if any.
    pub(crate) fn finish(self) -> Result<()> {
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

/// One sentence naming the dataset and the tool version.
#[must_use]
pub fn dataset_line(run: &RunReport) -> String {
    let hash = match &run.dataset.lines_xxh3 {
        // A shard's: the hash of the lines it replayed.
        Some(lines) if run.dataset.sha256.is_empty() => {
            format!("its lines' xxh3 {}", lines.get(..16).unwrap_or(lines))
        }
        _ => format!(
            "sha256 {}",
            &run.dataset.sha256[..run.dataset.sha256.len().min(16)]
        ),
    };
    format!(
        "Dataset {} ({} episodes, {} items, {hash}), ctxbench {}.",
        run.dataset.path, run.dataset.episodes, run.dataset.items, run.tool_version
    )
}

/// The model an example summary names: the mock's name is the model it is priced as, not what wrote it.
#[must_use]
pub fn example_model(run: &RunReport, model: &str) -> String {
    if model == crate::llm::pricing::NO_MODEL {
        // An episode naming no model, and none configured: nothing to be priced as.
        if run.settings.real_llm {
            "unpriced: no model named".to_owned()
        } else {
            "the mock LLM, unpriced: no model named".to_owned()
        }
    } else if !run.settings.real_llm {
        format!("the mock LLM, priced as {model}")
    } else {
        model.to_owned()
    }
}

/// The explorer pages of `run` as the reports list them: (episode, link, what the page shows).
#[must_use]
pub fn page_list(run: &RunReport) -> Vec<(String, String, String)> {
    run.pages
        .iter()
        .map(|p| {
            let shows = if p.every {
                "every strategy".to_owned()
            } else {
                let others: Vec<&str> = p.strategies.iter().skip(1).map(String::as_str).collect();
                format!("{} beside the baseline", others.join(", "))
            };
            (p.episode.clone(), format!("episodes/{}", p.file), shows)
        })
        .collect()
}

/// Formats an optional share as a percentage with one decimal, or `–`.
#[must_use]
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(
        || "–".into(),
        |v| {
            let text = format!("{:.1}%", v * 100.0);
            // A share that rounds to nothing is 0.0%, whatever its sign: never "-0.0%".
            if text == "-0.0%" {
                "0.0%".to_owned()
            } else {
                text
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::FindingKind;

    fn lost(strategy: &str, finding: &str, needs: usize, lost: usize) -> LostFinding {
        LostFinding {
            strategy: strategy.into(),
            episode: "e".into(),
            finding: finding.into(),
            text: String::new(),
            kind: FindingKind::Recall,
            needs,
            lost,
            lost_by: "masked".into(),
        }
    }

    #[test]
    fn most_lost_keeps_the_top_per_strategy_in_order() {
        let mut list = Vec::new();
        for (f, n) in [
            ("a", 1),
            ("b", 3),
            ("c", 2),
            ("d", 3),
            ("e", 1),
            ("f", 1),
            ("g", 2),
        ] {
            keep_most_lost(&mut list, &lost("s", f, 3, n));
        }
        keep_most_lost(&mut list, &lost("t", "x", 1, 1));
        let names: Vec<(&str, &str)> = list
            .iter()
            .map(|l| (l.strategy.as_str(), l.finding.as_str()))
            .collect();
        // Most needs lost first; among equals, the earlier; five per strategy.
        assert_eq!(
            names,
            [
                ("s", "b"),
                ("s", "d"),
                ("s", "c"),
                ("s", "g"),
                ("s", "a"),
                ("t", "x")
            ]
        );
        // A finding lost at as many needs as the fifth does not push it out.
        keep_most_lost(&mut list, &lost("s", "h", 3, 1));
        assert_eq!(list[4].finding, "a");
    }
}
