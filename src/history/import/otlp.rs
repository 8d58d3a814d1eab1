//! OTLP/JSON as an OpenTelemetry Collector's `file` exporter writes it: one `ExportTraceServiceRequest`,
//! `ExportLogsServiceRequest` or `ExportMetricsServiceRequest` per line (`resourceSpans`, `resourceLogs`,
//! `resourceMetrics`), side by side in one file or in a file per signal. Shared by the OpenTelemetry GenAI and
//! OpenInference importers, which read spans and log records from it; metrics are counted and left.
//!
//! Attribute values (`AnyValue`: `stringValue`, `intValue` as a string or a number, `kvlistValue`, …) become
//! plain JSON. Trace and span ids are compared as written (hex, as the OTLP/JSON spec and the Collector write
//! them, or base64 from a protobuf JSON encoder that does not follow the spec): only their equality matters.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{bad, parse_jsonl, utf8, Importer, Sniff};
use crate::error::Result;
use crate::history::Episode;

/// A convention of recording model calls in OTLP (OpenTelemetry GenAI, OpenInference): every one is an
/// [`Importer`] that reads the files of one export together.
pub trait Convention: Sync {
    /// The name `--format` takes.
    fn name(&self) -> &'static str;
    /// What it reads, in a sentence.
    fn about(&self) -> &'static str;
    /// How sure it is that an OTLP/JSON text follows it.
    fn sniff(&self, sniff: &Sniff<'_>) -> Option<u8>;
    /// The episodes of one export's spans and log records.
    ///
    /// # Errors
    /// No call recorded with its messages, naming the first file.
    fn episodes(&self, export: &Export) -> Result<Vec<Episode>>;
}

impl<T: Convention> Importer for T {
    fn name(&self) -> &'static str {
        Convention::name(self)
    }

    fn about(&self) -> &'static str {
        Convention::about(self)
    }

    fn sniff(&self, sniff: &Sniff<'_>) -> Option<u8> {
        Convention::sniff(self, sniff)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        self.import_files(&[(origin.to_owned(), text.as_bytes().to_vec())])
    }

    fn joins_files(&self) -> bool {
        true
    }

    fn import_files(&self, files: &[(PathBuf, Vec<u8>)]) -> Result<Vec<Episode>> {
        self.episodes(&read(files)?)
    }
}

/// Where a record was read: the file (an index into the files read) and the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct At {
    /// Which file.
    pub file: usize,
    /// Its line, from 1.
    pub line: usize,
}

/// One span.
#[derive(Debug, Clone)]
pub struct Span {
    /// Where it was read.
    pub at: At,
    /// Its trace.
    pub trace_id: String,
    /// Its id.
    pub span_id: String,
    /// Its name.
    pub name: String,
    /// When it started (Unix nanoseconds).
    pub start: u64,
    /// Its attributes, as plain JSON.
    pub attributes: Map<String, Value>,
    /// Its span events: name and attributes.
    pub events: Vec<(String, Map<String, Value>)>,
}

/// One log record (an event, when it has an event name).
#[derive(Debug, Clone)]
pub struct LogRecord {
    /// Where it was read.
    pub at: At,
    /// The trace and span it belongs to (empty when not recorded).
    pub trace_id: String,
    /// The span.
    pub span_id: String,
    /// `eventName`, or the older `event.name` attribute.
    pub event_name: String,
    /// Its attributes, as plain JSON.
    pub attributes: Map<String, Value>,
    /// Its body, as plain JSON.
    pub body: Value,
}

/// Every span and log record of the files read together, in file and line order.
#[derive(Debug, Default)]
pub struct Export {
    /// The files, in the order given.
    pub files: Vec<PathBuf>,
    /// Spans.
    pub spans: Vec<Span>,
    /// Log records.
    pub logs: Vec<LogRecord>,
}

impl Export {
    /// The file a record was read from.
    #[must_use]
    pub fn file(&self, at: At) -> &Path {
        &self.files[at.file]
    }
}

/// Whether `s` is OTLP/JSON: its first line a request with `resourceSpans`, `resourceLogs` or
/// `resourceMetrics`.
#[must_use]
pub fn is_otlp(s: &Sniff<'_>) -> bool {
    s.first_line.as_ref().is_some_and(|o| {
        ["resourceSpans", "resourceLogs", "resourceMetrics"]
            .iter()
            .any(|k| o.contains_key(*k))
    })
}

/// The plain JSON of an OTLP `AnyValue`.
#[must_use]
pub fn any_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return match i {
            Value::String(s) => s.parse::<i64>().map_or_else(|_| i.clone(), Value::from),
            other => other.clone(),
        };
    }
    for key in ["boolValue", "doubleValue", "bytesValue"] {
        if let Some(x) = o.get(key) {
            return x.clone();
        }
    }
    if let Some(a) = o.get("arrayValue") {
        let values = a.get("values").and_then(Value::as_array);
        return Value::Array(
            values
                .map(|v| v.iter().map(any_value).collect())
                .unwrap_or_default(),
        );
    }
    if let Some(kv) = o.get("kvlistValue") {
        return Value::Object(key_values(kv.get("values")));
    }
    Value::Null
}

/// `[{key, value}]` as a map of plain JSON.
fn key_values(list: Option<&Value>) -> Map<String, Value> {
    list.and_then(Value::as_array)
        .map(|kvs| {
            kvs.iter()
                .filter_map(|kv| {
                    let key = kv.get("key")?.as_str()?;
                    Some((
                        key.to_owned(),
                        kv.get("value").map_or(Value::Null, any_value),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn string(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A Unix-nanosecond time, written as a string (JSON's 64-bit integers) or a number.
fn nanos(v: &Value, key: &str) -> u64 {
    match v.get(key) {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(n) => n.as_u64().unwrap_or(0),
        None => 0,
    }
}

/// Reads every line of `files` (spans, log records; metrics are skipped).
///
/// # Errors
/// A line that is not JSON or not an OTLP request, or a span without its ids, naming the file and line.
pub fn read(files: &[(PathBuf, Vec<u8>)]) -> Result<Export> {
    let mut out = Export {
        files: files.iter().map(|(p, _)| p.clone()).collect(),
        ..Export::default()
    };
    for (file, (path, bytes)) in files.iter().enumerate() {
        for (line, request) in parse_jsonl(utf8(bytes, path)?, path)? {
            let at = At { file, line };
            read_request(&request, at, path, &mut out)?;
        }
    }
    Ok(out)
}

fn read_request(request: &Value, at: At, path: &Path, out: &mut Export) -> Result<()> {
    let Some(o) = request.as_object() else {
        return Err(bad(
            path,
            at.line,
            "expected an OTLP/JSON export request object",
        ));
    };
    if !["resourceSpans", "resourceLogs", "resourceMetrics"]
        .iter()
        .any(|k| o.contains_key(*k))
    {
        return Err(bad(
            path,
            at.line,
            "not an OTLP/JSON export request: no `resourceSpans`, `resourceLogs` or `resourceMetrics` (an \
             OpenTelemetry Collector `file` exporter writes one per line)",
        ));
    }
    for (r, resource) in list(request, "resourceSpans").iter().enumerate() {
        for (s, scope) in list(resource, "scopeSpans").iter().enumerate() {
            for (k, span) in list(scope, "spans").iter().enumerate() {
                let (trace_id, span_id) = (string(span, "traceId"), string(span, "spanId"));
                if trace_id.is_empty() || span_id.is_empty() {
                    return Err(bad(
                        path,
                        at.line,
                        format!(
                            "at `resourceSpans[{r}].scopeSpans[{s}].spans[{k}]`: a span needs its `traceId` and \
                             `spanId`"
                        ),
                    ));
                }
                out.spans.push(Span {
                    at,
                    trace_id,
                    span_id,
                    name: string(span, "name"),
                    start: nanos(span, "startTimeUnixNano"),
                    attributes: key_values(span.get("attributes")),
                    events: list(span, "events")
                        .iter()
                        .map(|e| (string(e, "name"), key_values(e.get("attributes"))))
                        .collect(),
                });
            }
        }
    }
    for resource in list(request, "resourceLogs") {
        for scope in list(resource, "scopeLogs") {
            for record in list(scope, "logRecords") {
                let attributes = key_values(record.get("attributes"));
                let event_name = match string(record, "eventName") {
                    name if name.is_empty() => attributes
                        .get("event.name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    name => name,
                };
                out.logs.push(LogRecord {
                    at,
                    trace_id: string(record, "traceId"),
                    span_id: string(record, "spanId"),
                    event_name,
                    attributes,
                    body: record.get("body").map_or(Value::Null, any_value),
                });
            }
        }
    }
    Ok(())
}

/// A JSON value recorded as an attribute: structured already, or as JSON text (a string that does not parse
/// is kept as a string).
#[must_use]
pub fn json_attribute(v: &Value) -> Value {
    match v {
        Value::String(s) if s.trim_start().starts_with(['[', '{']) => {
            serde_json::from_str(s).unwrap_or_else(|_| v.clone())
        }
        other => other.clone(),
    }
}

/// A count attribute (`gen_ai.usage.input_tokens`, `llm.token_count.prompt`).
#[must_use]
pub fn count(attributes: &Map<String, Value>, key: &str) -> Option<u64> {
    match attributes.get(key)? {
        Value::String(s) => s.parse().ok(),
        n => n.as_u64(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn any_values_become_plain_json() {
        let v = json!({"kvlistValue": {"values": [
            {"key": "n", "value": {"intValue": "42"}},
            {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "x"}, {"boolValue": true}]}}},
            {"key": "e", "value": {}}
        ]}});
        assert_eq!(any_value(&v), json!({"n": 42, "a": ["x", true], "e": null}));
    }

    #[test]
    fn detection_tells_the_conventions_apart() {
        let span = |attrs: &str| {
            format!(
                r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"t","spanId":"s","attributes":[{attrs}]}}]}}]}}]}}"#
            )
        };
        let genai = span(r#"{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}"#);
        let oi = span(r#"{"key":"openinference.span.kind","value":{"stringValue":"LLM"}}"#);
        let metrics = r#"{"resourceMetrics":[]}"#.to_owned();
        for (text, want) in [
            (genai.clone(), "otel"),
            (oi.clone(), "openinference"),
            (format!("{oi}\n{genai}"), "openinference"),
            (metrics, "otel"),
        ] {
            assert_eq!(
                super::super::detect(&text, Path::new("t")).unwrap().name(),
                want,
                "{text}"
            );
        }
    }

    #[test]
    fn a_line_that_is_no_request_names_its_line() {
        let files = vec![(
            PathBuf::from("x.jsonl"),
            b"{\"resourceMetrics\":[]}\n{\"spans\":[]}\n".to_vec(),
        )];
        let err = read(&files).unwrap_err().to_string();
        assert!(
            err.contains("x.jsonl") && err.contains("line 2") && err.contains("resourceSpans"),
            "{err}"
        );
    }
}
