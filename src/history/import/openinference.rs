//! OpenInference spans (Arize Phoenix's conventions, written by the `openinference-instrumentation-*`
//! packages), in OTLP/JSON as an OpenTelemetry Collector's `file` exporter writes them ([`otlp`](super::otlp)).
//!
//! One episode per session (`session.id`, else the trace), one call point per LLM span
//! (`openinference.span.kind` `LLM`) in start order. A span's input is its flattened messages
//! `llm.input_messages.N.message.*` (`role`, `content` or `contents.K.message_content.text`, `name`,
//! `tool_call_id`, `tool_calls.M.tool_call.{id, function.name, function.arguments}`), its output
//! `llm.output_messages.0.message.*`; its tools `llm.tools.N.tool.json_schema`; its usage
//! `llm.token_count.prompt` / `completion` (cache reads from `llm.token_count.prompt_details.cache_read`). A
//! `TOOL` span with `tool.id` (the call it answers) and `output.value` adds the result of a call no later LLM
//! span shows answered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::calls::{Call, Groups, Msg, ToolCall, ToolRun};
use super::otlp::{self, count, json_attribute, Convention, Export};
use super::{arguments_of, bad, sure, text_of, Sniff};
use crate::error::Result;
use crate::history::usage::CallUsage;
use crate::history::Episode;

/// The entries `PREFIX.N.rest` of flattened attributes, grouped by N in numeric order, each as `rest → value`.
fn indexed(attributes: &Map<String, Value>, prefix: &str) -> Vec<Map<String, Value>> {
    let mut by_index: BTreeMap<usize, Map<String, Value>> = BTreeMap::new();
    for (key, value) in attributes {
        let Some(rest) = key.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some((n, field)) = rest.split_once('.') else {
            continue;
        };
        if let Ok(n) = n.parse::<usize>() {
            by_index
                .entry(n)
                .or_default()
                .insert(field.to_owned(), value.clone());
        }
    }
    by_index.into_values().collect()
}

fn str_of(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// One flattened message (`message.role`, `message.content`, …).
fn message(m: &Map<String, Value>) -> Msg {
    let mut text = m.get("message.content").map_or_else(String::new, text_of);
    if text.is_empty() {
        text = indexed(m, "message.contents")
            .iter()
            .filter_map(|c| str_of(c, "message_content.text"))
            .collect::<Vec<_>>()
            .join("\n");
    }
    Msg {
        role: str_of(m, "message.role").unwrap_or_else(|| "user".into()),
        text,
        calls: indexed(m, "message.tool_calls")
            .iter()
            .map(|c| ToolCall {
                id: str_of(c, "tool_call.id"),
                name: str_of(c, "tool_call.function.name").unwrap_or_else(|| "tool".into()),
                arguments: c
                    .get("tool_call.function.arguments")
                    .map_or_else(|| "{}".into(), arguments_of),
            })
            .collect(),
        call_id: str_of(m, "message.tool_call_id"),
        name: str_of(m, "message.name"),
        reasoning: String::new(),
    }
}

fn usage(a: &Map<String, Value>) -> Option<CallUsage> {
    Some(CallUsage {
        input_tokens: count(a, "llm.token_count.prompt")?,
        output_tokens: count(a, "llm.token_count.completion").unwrap_or(0),
        cache_read_tokens: count(a, "llm.token_count.prompt_details.cache_read"),
        cache_write_tokens: count(a, "llm.token_count.prompt_details.cache_write"),
        ..CallUsage::default()
    })
}

fn kind(a: &Map<String, Value>) -> &str {
    a.get("openinference.span.kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn import_export(export: &Export) -> Result<Vec<Episode>> {
    let mut spans: Vec<&otlp::Span> = export.spans.iter().collect();
    spans.sort_by_key(|s| (s.start, s.at));
    let mut groups = Groups::default();
    let mut llm_spans = 0;
    for span in spans {
        let a = &span.attributes;
        let key = str_of(a, "session.id").unwrap_or_else(|| format!("trace-{}", span.trace_id));
        let (calls, runs) = groups.of(key, span.at);
        match kind(a).to_ascii_uppercase().as_str() {
            "TOOL" => {
                if let (Some(id), Some(result)) = (str_of(a, "tool.id"), a.get("output.value")) {
                    runs.push(ToolRun {
                        call_id: id,
                        name: str_of(a, "tool.name").unwrap_or_else(|| span.name.clone()),
                        result: text_of(result),
                    });
                }
            }
            "LLM" => {
                llm_spans += 1;
                let input: Vec<Msg> = indexed(a, "llm.input_messages")
                    .iter()
                    .map(message)
                    .collect();
                let output = indexed(a, "llm.output_messages").first().map(message);
                if input.is_empty() && output.is_none() {
                    continue;
                }
                calls.push(Call {
                    input,
                    output,
                    usage: usage(a),
                    tools: indexed(a, "llm.tools")
                        .iter()
                        .filter_map(|t| t.get("tool.json_schema").map(json_attribute))
                        .filter(Value::is_object)
                        .collect(),
                    model: str_of(a, "llm.model_name"),
                });
            }
            _ => {}
        }
    }
    let out = groups.episodes(export, "openinference", "llm.token_count.prompt");
    if out.is_empty() {
        let first = export
            .files
            .first()
            .map_or(Path::new("openinference"), PathBuf::as_path);
        let what = if llm_spans == 0 {
            "no OpenInference LLM span (`openinference.span.kind` LLM) in the OTLP export"
                .to_owned()
        } else {
            format!(
                "{llm_spans} LLM spans but none records `llm.input_messages` (inputs hidden by OPENINFERENCE_HIDE_INPUTS or OPENINFERENCE_HIDE_INPUT_MESSAGES?)"
            )
        };
        return Err(bad(first, 1, what));
    }
    Ok(out)
}

/// The openinference format.
pub struct OpenInference;

impl Convention for OpenInference {
    fn name(&self) -> &'static str {
        "openinference"
    }

    fn about(&self) -> &'static str {
        "OpenInference LLM spans (Arize Phoenix), as OTLP/JSON lines"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        (otlp::is_otlp(s) && s.text.contains("openinference.span.kind")).then_some(sure::CERTAIN)
    }

    fn episodes(&self, export: &Export) -> Result<Vec<Episode>> {
        import_export(export)
    }
}
