//! CSV tables: `steps.csv` and `episodes.csv`, which grow row by row as episodes finish, and `timings.csv`.
//! Their columns are the metric catalog's ([`Catalog`]), after each row's identity.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::{Exporter, RowExporter, RunReport};
use crate::error::{Error, Result};
use crate::metrics::{Catalog, EpisodeResult};

fn serialize_error(e: impl std::fmt::Display) -> Error {
    Error::Serialize {
        what: "csv",
        message: e.to_string(),
    }
}

/// CSV bytes of records, each an identity (leading fields) and values, written as they come.
fn to_bytes<'a, const N: usize>(
    records: impl IntoIterator<Item = ([Value; N], Vec<&'a Value>)>,
) -> Result<Vec<u8>> {
    let mut w = ::csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for (identity, values) in records {
        let record: Vec<&Value> = identity.iter().chain(values).collect();
        w.serialize(record).map_err(serialize_error)?;
    }
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
        to_bytes(episode.steps.iter().map(|row| {
            let identity = [
                Value::from(episode.episode.as_str()),
                Value::from(row.strategy.as_str()),
                Value::from(row.step),
                Value::from(row.item_index),
            ];
            (identity, row.values.iter().collect())
        }))
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
        to_bytes(episode.strategies.iter().map(|m| {
            let identity = [
                Value::from(m.episode.as_str()),
                Value::from(m.source.as_str()),
                Value::from(m.strategy.as_str()),
            ];
            (identity, self.catalog.episode_row(m).collect())
        }))
    }
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
        let mut w = ::csv::Writer::from_writer(Vec::new());
        for (s, p50, p95) in &run.timings {
            w.serialize(TimingRow {
                strategy: s,
                compute_p50_us: (p50 * 10.0).round() / 10.0,
                compute_p95_us: (p95 * 10.0).round() / 10.0,
            })
            .map_err(serialize_error)?;
        }
        w.into_inner().map_err(serialize_error)
    }
}
