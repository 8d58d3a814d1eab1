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

/// A row table's bytes, written without the csv crate's per-field state machine: every field the tables hold
/// is a number, a bool, null or a text, and only a text can need quotes. The bytes are the csv crate's default
/// writer's (`QuoteStyle::Necessary`, `\n` records), which a test compares on every kind of field: integers and
/// floats as `itoa` and `ryu` format them, null as an empty cell, a text quoted (its quotes doubled) when it holds
/// a comma, a quote, `\r` or `\n`.
#[derive(Default)]
struct Rows {
    out: Vec<u8>,
    /// Whether the record being written has a field yet.
    started: bool,
}

impl Rows {
    fn separate(&mut self) {
        if self.started {
            self.out.push(b',');
        }
        self.started = true;
    }

    fn text(&mut self, field: &str) {
        self.separate();
        let bytes = field.as_bytes();
        if !bytes
            .iter()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
        {
            self.out.extend_from_slice(bytes);
            return;
        }
        self.out.push(b'"');
        for part in field.split_inclusive('"') {
            self.out.extend_from_slice(part.as_bytes());
            if part.ends_with('"') {
                self.out.push(b'"');
            }
        }
        self.out.push(b'"');
    }

    fn number(&mut self, n: impl itoa::Integer) {
        self.separate();
        self.out
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }

    /// One cell as the csv crate's serializer writes the value.
    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.separate(),
            Value::Bool(b) => self.text(if *b { "true" } else { "false" }),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => self.number(u),
                (None, Some(i), _) => self.number(i),
                (None, None, Some(f)) => self.text(ryu::Buffer::new().format(f)),
                (None, None, None) => self.separate(),
            },
            Value::String(s) => self.text(s),
            other => self.text(&other.to_string()),
        }
    }

    fn end(&mut self) {
        self.out.push(b'\n');
        self.started = false;
    }
}

/// CSV bytes of records, each its identity (leading text fields) then its values.
fn to_bytes<'a, const N: usize>(
    records: impl IntoIterator<Item = ([&'a str; N], &'a [usize], &'a [Value])>,
) -> Vec<u8> {
    let mut rows = Rows::default();
    for (identity, numbers, values) in records {
        for field in identity {
            rows.text(field);
        }
        for &n in numbers {
            rows.number(n);
        }
        for v in values {
            rows.value(v);
        }
        rows.end();
    }
    rows.out
}

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
        Ok(to_bytes(rows.iter().map(|(id, n, v)| (*id, &n[..], *v))))
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
        Ok(to_bytes(episode.strategies.iter().zip(&rows).map(
            |(m, values)| {
                (
                    [m.episode.as_str(), m.source.as_str(), m.strategy.as_str()],
                    &[][..],
                    &values[..],
                )
            },
        )))
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
        let mut rows = Rows::default();
        for row in &episode.ledger {
            for (_, value) in FINDINGS {
                rows.value(&value(&episode.episode, row));
            }
            rows.end();
        }
        Ok(rows.out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The csv crate's default writer, as the tables were written before [`Rows`] (flexible, so that the
    /// random records may differ in length; it changes no byte).
    fn by_csv_crate(records: &[(Vec<String>, Vec<usize>, Vec<Value>)]) -> Vec<u8> {
        let mut w = ::csv::WriterBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_writer(Vec::new());
        for (texts, numbers, values) in records {
            for t in texts {
                w.write_field(t).unwrap();
            }
            for n in numbers {
                w.write_field(n.to_string()).unwrap();
            }
            for v in values {
                match v {
                    Value::Null => w.write_field([]).unwrap(),
                    Value::Bool(b) => w.write_field(b.to_string()).unwrap(),
                    Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                        (Some(u), _, _) => w.write_field(u.to_string()).unwrap(),
                        (None, Some(i), _) => w.write_field(i.to_string()).unwrap(),
                        (None, None, Some(f)) => {
                            w.write_field(ryu::Buffer::new().format(f)).unwrap();
                        }
                        (None, None, None) => w.write_field([]).unwrap(),
                    },
                    Value::String(s) => w.write_field(s).unwrap(),
                    other => w.write_field(other.to_string()).unwrap(),
                }
            }
            w.write_record(None::<&[u8]>).unwrap();
        }
        w.into_inner().unwrap()
    }

    /// [`to_bytes`] of records whose identity is two texts.
    fn plain(records: &[(Vec<String>, Vec<usize>, Vec<Value>)]) -> Vec<u8> {
        to_bytes(
            records
                .iter()
                .map(|(t, n, v)| ([t[0].as_str(), t[1].as_str()], &n[..], &v[..])),
        )
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[a-z,\"\r\n é]{0,12}".prop_map(Value::from),
            Just(serde_json::json!({"a": [1, "x,y"]})),
        ]
    }

    #[test]
    fn plain_rows_are_the_csv_crates_on_every_kind_of_field() {
        let records = vec![
            (
                vec!["ep-1".to_owned(), "say \"hi\", then\nleave".to_owned()],
                vec![0, 17],
                vec![
                    Value::Null,
                    Value::from(0.1),
                    Value::from(-3),
                    Value::from(1e-9),
                    Value::from(""),
                    Value::Bool(true),
                    Value::from("\r"),
                    Value::from("\"\""),
                ],
            ),
            (
                vec![String::new(), "x".to_owned()],
                vec![],
                vec![Value::Null, Value::Null],
            ),
        ];
        assert_eq!(
            String::from_utf8(plain(&records)).unwrap(),
            String::from_utf8(by_csv_crate(&records)).unwrap()
        );
    }

    proptest! {
        #[test]
        fn plain_rows_equal_the_csv_crates(
            records in proptest::collection::vec(
                (
                    proptest::collection::vec("[a-z,\"\r\n é-]{0,10}", 2),
                    proptest::collection::vec(any::<usize>(), 0..3),
                    proptest::collection::vec(value(), 1..6),
                ),
                0..5,
            )
        ) {
            prop_assert_eq!(plain(&records), by_csv_crate(&records));
        }
    }
}
