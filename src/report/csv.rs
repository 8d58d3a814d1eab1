//! CSV tables: `steps.csv`, `episodes.csv` and `findings.csv` (the loss ledger), which grow row by row as
//! episodes finish, and `timings.csv`. The first two take their columns from the metric catalog ([`Catalog`]),
//! after each row's identity.

use std::sync::Arc;

use serde_json::Value;

use crate::metrics::needs::LedgerRow;

use super::{Exporter, RowExporter, RunReport};
use crate::error::{Error, Result};
use crate::metrics::{Catalog, EpisodeResult};

fn serialize_error(e: impl std::fmt::Display) -> Error {
    Error::Serialize {
        what: "csv",
        message: e.to_string(),
    }
}

/// Writes one cell as the csv crate's serializer writes the value: integers and floats as `itoa` and `ryu`
/// format them, null as an empty cell.
fn write_value(w: &mut ::csv::Writer<Vec<u8>>, v: &Value) -> ::csv::Result<()> {
    match v {
        Value::Null => w.write_field([]),
        Value::Bool(b) => w.write_field(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => w.write_field(itoa::Buffer::new().format(u)),
            (None, Some(i), _) => w.write_field(itoa::Buffer::new().format(i)),
            (None, None, Some(f)) => w.write_field(ryu::Buffer::new().format(f)),
            (None, None, None) => w.write_field([]),
        },
        Value::String(s) => w.write_field(s),
        other => w.write_field(other.to_string()),
    }
}

/// CSV bytes of records, each its identity (leading text fields) then its values.
fn to_bytes<'a, const N: usize>(
    records: impl IntoIterator<Item = ([&'a str; N], &'a [usize], &'a [Value])>,
) -> Result<Vec<u8>> {
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    let record = || -> ::csv::Result<()> {
        for (identity, numbers, values) in records {
            for field in identity {
                w.write_field(field)?;
            }
            for &n in numbers {
                w.write_field(itoa::Buffer::new().format(n))?;
            }
            for v in values {
                write_value(&mut w, v)?;
            }
            w.write_record(None::<&[u8]>)?;
        }
        Ok(())
    };
    record().map_err(serialize_error)?;
    w.into_inner().map_err(serialize_error)
}

/// The header line of `names`.
fn header<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<u8>> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(names).map_err(serialize_error)?;
    w.into_inner().map_err(serialize_error)
}

/// `steps.csv`: one row per call point of each episode under each strategy.
pub struct StepsCsv {
    catalog: Arc<Catalog>,
}

impl StepsCsv {
    /// The table of `catalog`'s step columns.
    #[must_use]
    pub fn new(catalog: &Arc<Catalog>) -> Self {
        Self {
            catalog: Arc::clone(catalog),
        }
    }
}

impl RowExporter for StepsCsv {
    fn file_name(&self) -> &'static str {
        "steps.csv"
    }

    fn header(&self) -> Result<Vec<u8>> {
        let identity = ["episode", "strategy", "step", "item_index"];
        header(
            identity
                .into_iter()
                .chain(self.catalog.step_columns().iter().map(|c| c.name.as_str())),
        )
    }

    fn rows(&self, episode: &EpisodeResult) -> Result<Vec<u8>> {
        let rows: Vec<([&str; 2], [usize; 2], &[Value])> = episode
            .steps
            .iter()
            .flat_map(|(strategy, rows)| {
                rows.iter().map(move |row| {
                    (
                        [episode.episode.as_str(), strategy.as_str()],
                        [row.step, row.item_index],
                        &row.values[..],
                    )
                })
            })
            .collect();
        to_bytes(rows.iter().map(|(id, n, v)| (*id, &n[..], *v)))
    }
}

/// `episodes.csv`: one row per episode under each strategy.
pub struct EpisodesCsv {
    catalog: Arc<Catalog>,
}

impl EpisodesCsv {
    /// The table of `catalog`'s episode columns.
    #[must_use]
    pub fn new(catalog: &Arc<Catalog>) -> Self {
        Self {
            catalog: Arc::clone(catalog),
        }
    }
}

impl RowExporter for EpisodesCsv {
    fn file_name(&self) -> &'static str {
        "episodes.csv"
    }

    fn header(&self) -> Result<Vec<u8>> {
        let identity = ["episode", "source", "strategy"];
        header(
            identity
                .into_iter()
                .chain(self.catalog.episode_columns().map(|c| c.name.as_str())),
        )
    }

    fn rows(&self, episode: &EpisodeResult) -> Result<Vec<u8>> {
        let rows: Vec<Vec<Value>> = episode
            .strategies
            .iter()
            .map(|m| self.catalog.episode_row(m).cloned().collect())
            .collect();
        to_bytes(episode.strategies.iter().zip(&rows).map(|(m, values)| {
            (
                [m.episode.as_str(), m.source.as_str(), m.strategy.as_str()],
                &[][..],
                &values[..],
            )
        }))
    }
}

/// `findings.csv`, the loss ledger: one row per finding, need and strategy (see [`crate::metrics::needs`]).
pub struct FindingsCsv;

impl RowExporter for FindingsCsv {
    fn file_name(&self) -> &'static str {
        "findings.csv"
    }

    fn header(&self) -> Result<Vec<u8>> {
        header(FINDINGS.map(|(name, _)| name))
    }

    fn rows(&self, episode: &EpisodeResult) -> Result<Vec<u8>> {
        let mut w = ::csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(Vec::new());
        for row in &episode.ledger {
            for (_, value) in FINDINGS {
                write_value(&mut w, &value(&episode.episode, row)).map_err(serialize_error)?;
            }
            w.write_record(None::<&[u8]>).map_err(serialize_error)?;
        }
        w.into_inner().map_err(serialize_error)
    }
}

/// A column of `findings.csv`: its header, and its value for a ledger row of an episode.
type FindingColumn = (&'static str, fn(&str, &LedgerRow) -> Value);

/// `findings.csv`'s columns, each declared once with its value.
const FINDINGS: [FindingColumn; 12] = [
    ("episode", |episode, _| Value::from(episode)),
    ("strategy", |_, r| Value::from(r.strategy.as_str())),
    ("finding", |_, r| Value::from(r.finding.as_str())),
    ("kind", |_, r| Value::from(r.kind.as_str())),
    ("from_task", |_, r| Value::Bool(r.from_task)),
    ("introduced_at", |_, r| Value::from(r.introduced_at)),
    ("need", |_, r| Value::from(r.need.ordinal)),
    ("needed_at", |_, r| {
        r.need.needed_at.map_or(Value::Null, Value::from)
    }),
    ("step", |_, r| Value::from(r.need.step)),
    ("retained", |_, r| Value::Bool(r.need.retained)),
    ("lost_at_step", |_, r| {
        r.need.lost_at_step.map_or(Value::Null, Value::from)
    }),
    ("lost_by", |_, r| {
        r.need.lost_by.as_deref().map_or(Value::Null, Value::from)
    }),
];

/// `timings.csv`: per strategy, its compute time per call point (its LLM calls' time left out) and its LLM
/// calls' latency (wall clock and network: varies between runs).
pub struct TimingsCsv;

impl Exporter for TimingsCsv {
    fn file_name(&self) -> &'static str {
        "timings.csv"
    }
    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let tenth = |x: f64| (x * 10.0).round() / 10.0;
        for t in &run.timings {
            w.serialize(super::Timing {
                strategy: t.strategy.clone(),
                compute_p50_us: tenth(t.compute_p50_us),
                compute_p95_us: tenth(t.compute_p95_us),
                llm_calls: t.llm_calls,
                llm_p50_ms: tenth(t.llm_p50_ms),
                llm_p95_ms: tenth(t.llm_p95_ms),
            })
            .map_err(serialize_error)?;
        }
        w.into_inner().map_err(serialize_error)
    }
}
