//! CSV tables: `steps.csv` and `episodes.csv`, streamed by the runner as episodes finish ([`RowsWriter`]), and
//! the `timings.csv` exporter.

use serde::Serialize;

use super::{Exporter, RunReport};
use crate::error::{Error, Result};
use crate::metrics::{ratio, EpisodeMetrics, Prices};
use crate::replay::StepRecord;

/// One row of `steps.csv`: one call point of one episode under one strategy.
#[derive(Debug, Serialize)]
pub struct StepRow<'a> {
    episode: &'a str,
    strategy: &'a str,
    step: usize,
    item_index: usize,
    items_sent: usize,
    instructions_sent: usize,
    tokens_before: usize,
    tokens_sent: usize,
    cached_tokens: usize,
    output_tokens: usize,
    over_window: bool,
    strategy_calls: usize,
    strategy_failures: usize,
    strategy_input_tokens: u64,
    strategy_output_tokens: u64,
    strategy_llm_ms: f64,
    summarized_items: usize,
    compacted_items: usize,
    dropped_items: usize,
    findings_introduced: usize,
    findings_retained: usize,
    retention: Option<f64>,
    cost_usd: Option<f64>,
    tokens_system: usize,
    tokens_user: usize,
    tokens_assistant_text: usize,
    tokens_tool_call: usize,
    tokens_tool_result: usize,
    tokens_summary: usize,
}

impl<'a> StepRow<'a> {
    /// The row of step `s`.
    #[must_use]
    pub fn new(episode: &'a str, strategy: &'a str, s: &StepRecord, prices: &Prices) -> Self {
        let k = s.tokens_by_kind;
        Self {
            episode,
            strategy,
            step: s.step,
            item_index: s.item_index,
            items_sent: s.items_sent,
            instructions_sent: s.instructions_sent,
            tokens_before: s.tokens_before,
            tokens_sent: s.tokens_sent,
            cached_tokens: s.cached_tokens,
            output_tokens: s.output_tokens,
            over_window: s.over_window,
            strategy_calls: s.strategy_calls,
            strategy_failures: s.strategy_failures,
            strategy_input_tokens: s.strategy_input_tokens,
            strategy_output_tokens: s.strategy_output_tokens,
            strategy_llm_ms: s.strategy_llm_ms,
            summarized_items: s.summarized_items,
            compacted_items: s.compacted_items,
            dropped_items: s.dropped_items,
            findings_introduced: s.findings_introduced,
            findings_retained: s.findings_retained,
            retention: ratio(s.findings_retained, s.findings_introduced),
            cost_usd: prices.step_cost(s),
            tokens_system: k[0],
            tokens_user: k[1],
            tokens_assistant_text: k[2],
            tokens_tool_call: k[3],
            tokens_tool_result: k[4],
            tokens_summary: k[5],
        }
    }
}

/// One row of `episodes.csv`: one episode under one strategy.
#[derive(Debug, Serialize)]
pub struct EpisodeRow<'a> {
    episode: &'a str,
    source: &'a str,
    strategy: &'a str,
    items: usize,
    steps: usize,
    input_tokens: usize,
    baseline_input_tokens: usize,
    savings: f64,
    peak_tokens: usize,
    steps_over_window: usize,
    cached_tokens: usize,
    output_tokens: usize,
    strategy_calls: usize,
    strategy_failures: usize,
    strategy_input_tokens: u64,
    strategy_output_tokens: u64,
    strategy_llm_ms: f64,
    cost_usd: Option<f64>,
    findings: usize,
    final_retention: Option<f64>,
    mean_retention: Option<f64>,
    retention_recall: Option<f64>,
    retention_artifact: Option<f64>,
    retention_decision: Option<f64>,
    retention_continuation: Option<f64>,
    probes: usize,
    probes_correct: usize,
    probe_accuracy: Option<f64>,
}

impl<'a> From<&'a EpisodeMetrics> for EpisodeRow<'a> {
    fn from(m: &'a EpisodeMetrics) -> Self {
        let k = m.retention_by_kind.map(|(i, r)| ratio(r, i));
        Self {
            episode: &m.episode,
            source: &m.source,
            strategy: &m.strategy,
            items: m.items,
            steps: m.steps,
            input_tokens: m.input_tokens,
            baseline_input_tokens: m.baseline_input_tokens,
            savings: m.savings,
            peak_tokens: m.peak_tokens,
            steps_over_window: m.steps_over_window,
            cached_tokens: m.cached_tokens,
            output_tokens: m.output_tokens,
            strategy_calls: m.strategy_calls,
            strategy_failures: m.strategy_failures,
            strategy_input_tokens: m.strategy_input_tokens,
            strategy_output_tokens: m.strategy_output_tokens,
            strategy_llm_ms: m.strategy_llm_ms,
            cost_usd: m.cost_usd,
            findings: m.findings,
            final_retention: m.final_retention,
            mean_retention: m.mean_retention,
            retention_recall: k[0],
            retention_artifact: k[1],
            retention_decision: k[2],
            retention_continuation: k[3],
            probes: m.probes,
            probes_correct: m.probes_correct,
            probe_accuracy: ratio(m.probes_correct, m.probes),
        }
    }
}

fn to_bytes<T: Serialize>(rows: impl IntoIterator<Item = T>) -> Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    for row in rows {
        w.serialize(row).map_err(|e| Error::Serialize {
            what: "csv row",
            message: e.to_string(),
        })?;
    }
    w.into_inner().map_err(|e| Error::Serialize {
        what: "csv",
        message: e.to_string(),
    })
}

/// `timings.csv`: strategy compute time per strategy (wall clock, varies between runs).
pub struct TimingsCsv;

#[derive(Serialize)]
struct TimingRow<'a> {
    strategy: &'a str,
    compute_p50_us: f64,
    compute_p95_us: f64,
}

impl Exporter for TimingsCsv {
    fn file_name(&self) -> &'static str {
        "timings.csv"
    }
    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        to_bytes(run.timings.iter().map(|(s, p50, p95)| TimingRow {
            strategy: s,
            compute_p50_us: (p50 * 10.0).round() / 10.0,
            compute_p95_us: (p95 * 10.0).round() / 10.0,
        }))
    }
}

/// Writes a table (`steps.csv`, `episodes.csv`) row by row as episodes finish: memory does not grow with the
/// number of episodes. The first column names the episode.
pub struct RowsWriter {
    inner: ::csv::Writer<std::io::BufWriter<std::fs::File>>,
    path: std::path::PathBuf,
}

impl RowsWriter {
    /// Creates (truncates) the file.
    ///
    /// # Errors
    /// Names the file.
    pub fn create(path: &std::path::Path) -> Result<Self> {
        let f = std::fs::File::create(path).map_err(|e| Error::io("create", path, e))?;
        Ok(Self {
            inner: ::csv::Writer::from_writer(std::io::BufWriter::new(f)),
            path: path.to_owned(),
        })
    }

    /// Continues the file of an interrupted run: keeps the header and the rows of the `finished` episodes
    /// (a row of an episode that did not finish, even a half-written one, goes), then appends.
    ///
    /// # Errors
    /// Names the file.
    pub fn resume(
        path: &std::path::Path,
        finished: &std::collections::HashSet<String>,
    ) -> Result<Self> {
        let bad = |e: ::csv::Error| Error::Parse {
            path: path.to_owned(),
            line: e
                .position()
                .map_or(1, |p| usize::try_from(p.line()).unwrap_or(usize::MAX)),
            message: e.to_string(),
        };
        let mut reader = ::csv::ReaderBuilder::new()
            .flexible(true)
            .from_path(path)
            .map_err(bad)?;
        let headers = reader.headers().map_err(bad)?.clone();
        // Row by row into the new file: a long run's table is not held in memory.
        super::write_atomic_with(path, |file| {
            let mut kept = ::csv::Writer::from_writer(std::io::BufWriter::new(file));
            kept.write_record(&headers)?;
            for record in reader.records() {
                let Ok(record) = record else { break };
                if record.get(0).is_some_and(|ep| finished.contains(ep)) {
                    kept.write_record(&record)?;
                }
            }
            kept.flush()
        })?;
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io("open", path, e))?;
        Ok(Self {
            inner: ::csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(std::io::BufWriter::new(f)),
            path: path.to_owned(),
        })
    }

    /// Appends one row.
    ///
    /// # Errors
    /// Names the file.
    pub fn write(&mut self, row: &impl Serialize) -> Result<()> {
        self.inner.serialize(row).map_err(|e| match e.into_kind() {
            ::csv::ErrorKind::Io(io) => Error::io("write", &self.path, io),
            other => Error::Serialize {
                what: "csv row",
                message: format!("{other:?}"),
            },
        })
    }

    /// Flushes what was written so far to disk.
    ///
    /// # Errors
    /// Names the file.
    pub fn flush(&mut self) -> Result<()> {
        self.inner
            .flush()
            .map_err(|e| Error::io("write", &self.path, e))
    }
}
