//! OpenTelemetry GenAI spans and events, as an OpenTelemetry Collector's `file` exporter writes them (OTLP/JSON,
//! [`otlp`](super::otlp)), from `opentelemetry-instrumentation-openai-v2` and anything else that follows the GenAI
//! semantic conventions.
//!
//! One episode per conversation (`gen_ai.conversation.id`, else the trace), one call point per chat span
//! (`gen_ai.operation.name` `chat`, `text_completion` or `generate_content`) in start order. A chat span's
//! messages come from, in this order:
//! - the latest experimental convention, on the span: `gen_ai.input.messages`, `gen_ai.output.messages` and
//!   `gen_ai.system_instructions` (JSON text or structured), messages of `parts` (`text`, `tool_call`,
//!   `tool_call_response`, `reasoning`);
//! - the same on its `gen_ai.client.inference.operation.details` event (a log record or a span event);
//! - the v1.30 convention: log records `gen_ai.system.message`, `gen_ai.user.message`,
//!   `gen_ai.assistant.message`, `gen_ai.tool.message` (the input) and `gen_ai.choice` (the output, choice 0),
//!   joined to the span by trace and span id. These drop an assistant message's text when it has tool calls;
//!   the `gen_ai.choice` of the call that wrote it still has it, and the conversation keeps it.
//!
//! Usage from `gen_ai.usage.input_tokens` / `output_tokens` (cache reads from
//! `gen_ai.usage.cache_read.input_tokens`); tool definitions from `gen_ai.tool.definitions` where recorded
//! (`opentelemetry-instrumentation-openai-v2` does not: give them with `ctxbench import --tools`). An
//! `execute_tool` span (`gen_ai.tool.call.id`, `gen_ai.tool.call.result`) adds the result of a call no later
//! chat span shows answered (the agent stopped after running its tools).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::calls::{Call, Groups, Msg, ToolCall, ToolRun};
use super::otlp::{self, count, json_attribute, Convention, Export, LogRecord};
use super::{arguments_of, bad, sure, text_of, Sniff};
use crate::error::Result;
use crate::history::usage::CallUsage;
use crate::history::Episode;

const DETAILS: &str = "gen_ai.client.inference.operation.details";

/// A latest-convention message (`{role, parts: [...]}`).
fn part_message(v: &Value) -> Msg {
    let mut m = Msg {
        role: v
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user")
            .to_owned(),
        ..Msg::default()
    };
    let mut texts = Vec::new();
    for part in v
        .get("parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = part.get("id").and_then(Value::as_str).map(str::to_owned);
        match part.get("type").and_then(Value::as_str).unwrap_or("text") {
            "tool_call" => m.calls.push(ToolCall {
                id,
                name: part
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool")
                    .to_owned(),
                arguments: part
                    .get("arguments")
                    .map_or_else(|| "{}".into(), arguments_of),
            }),
            "tool_call_response" => {
                m.call_id = id;
                texts.push(part.get("response").map_or_else(String::new, text_of));
            }
            "reasoning" => m.reasoning = part.get("content").map_or_else(String::new, text_of),
            "text" => texts.push(part.get("content").map_or_else(String::new, text_of)),
            // `blob`, `uri`, `file`: media the replay cannot count as text.
            _ => {}
        }
    }
    m.text = texts.join("\n");
    m
}

/// A call's messages from latest-convention attributes (on the span or on its details event).
fn latest(attributes: &Map<String, Value>) -> Option<(Vec<Msg>, Option<Msg>)> {
    let input = attributes
        .get("gen_ai.input.messages")
        .map(json_attribute)?;
    let mut messages = Vec::new();
    if let Some(system) = attributes
        .get("gen_ai.system_instructions")
        .map(json_attribute)
    {
        let text = match &system {
            Value::Array(parts) => parts
                .iter()
                .map(|p| p.get("content").map_or_else(String::new, text_of))
                .collect::<Vec<_>>()
                .join("\n"),
            other => text_of(other),
        };
        messages.push(Msg {
            role: "system".into(),
            text,
            ..Msg::default()
        });
    }
    messages.extend(input.as_array().into_iter().flatten().map(part_message));
    let output = attributes
        .get("gen_ai.output.messages")
        .map(json_attribute)
        .and_then(|o| o.as_array().and_then(|a| a.first()).map(part_message));
    Some((messages, output))
}

/// An OpenAI-shaped message of the v1.30 events (`{content, tool_calls, id}`) with `role`.
fn legacy_message(role: &str, body: &Value) -> Msg {
    Msg {
        role: role.to_owned(),
        text: body.get("content").map_or_else(String::new, text_of),
        calls: body
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let f = c.get("function").unwrap_or(c);
                ToolCall {
                    id: c.get("id").and_then(Value::as_str).map(str::to_owned),
                    name: f
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("tool")
                        .to_owned(),
                    arguments: f.get("arguments").map_or_else(|| "{}".into(), arguments_of),
                }
            })
            .collect(),
        call_id: (role == "tool")
            .then(|| body.get("id").and_then(Value::as_str).map(str::to_owned))
            .flatten(),
        ..Msg::default()
    }
}

/// A call's messages from the v1.30 log records of its span, in the order they were emitted.
fn legacy(records: &[&LogRecord]) -> Option<(Vec<Msg>, Option<Msg>)> {
    let mut input = Vec::new();
    let mut output = None;
    for r in records {
        match r.event_name.as_str() {
            "gen_ai.system.message" => input.push(legacy_message("system", &r.body)),
            "gen_ai.user.message" => input.push(legacy_message("user", &r.body)),
            "gen_ai.assistant.message" => input.push(legacy_message("assistant", &r.body)),
            "gen_ai.tool.message" => input.push(legacy_message("tool", &r.body)),
            "gen_ai.choice" if r.body.get("index").and_then(Value::as_u64).unwrap_or(0) == 0 => {
                let message = r.body.get("message").unwrap_or(&Value::Null);
                output = Some(legacy_message("assistant", message));
            }
            _ => {}
        }
    }
    (!input.is_empty() || output.is_some()).then_some((input, output))
}

fn is_chat(attributes: &Map<String, Value>) -> bool {
    matches!(
        attributes
            .get("gen_ai.operation.name")
            .and_then(Value::as_str),
        Some("chat" | "text_completion" | "generate_content")
    )
}

fn usage(attributes: &Map<String, Value>) -> Option<CallUsage> {
    Some(CallUsage {
        input_tokens: count(attributes, "gen_ai.usage.input_tokens")?,
        output_tokens: count(attributes, "gen_ai.usage.output_tokens").unwrap_or(0),
        cache_read_tokens: count(attributes, "gen_ai.usage.cache_read.input_tokens"),
        cache_write_tokens: count(attributes, "gen_ai.usage.cache_creation.input_tokens"),
        ..CallUsage::default()
    })
}

/// The tool definitions a span records (`gen_ai.tool.definitions`), as the chat API takes them.
fn tools(attributes: &Map<String, Value>) -> Vec<Value> {
    attributes
        .get("gen_ai.tool.definitions")
        .map(json_attribute)
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// An `execute_tool` span's call id, tool and result, when it records them.
fn tool_run(a: &Map<String, Value>) -> Option<ToolRun> {
    let id = a.get("gen_ai.tool.call.id").and_then(Value::as_str)?;
    let result = a.get("gen_ai.tool.call.result")?;
    Some(ToolRun {
        call_id: id.to_owned(),
        name: a
            .get("gen_ai.tool.name")
            .and_then(Value::as_str)
            .unwrap_or("tool")
            .to_owned(),
        result: text_of(result),
    })
}

/// A chat span's call: its messages (from the span's attributes, its details event or log record, or the
/// older per-message log records), usage, tools and model; nothing when it records no messages.
fn chat_call(span: &otlp::Span, records: &[&LogRecord]) -> Option<Call> {
    let a = &span.attributes;
    let details = records
        .iter()
        .find(|r| r.event_name == DETAILS)
        .map(|r| &r.attributes)
        .or_else(|| {
            span.events
                .iter()
                .find(|(name, _)| name == DETAILS)
                .map(|(_, attributes)| attributes)
        });
    let (input, output) = latest(a)
        .or_else(|| details.and_then(latest))
        .or_else(|| legacy(records))?;
    Some(Call {
        input,
        output,
        usage: usage(a),
        tools: tools(a),
        model: a
            .get("gen_ai.response.model")
            .or_else(|| a.get("gen_ai.request.model"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// Imports the files of one recording.
///
/// # Errors
/// Malformed OTLP/JSON, or no chat span with its messages, naming the file.
fn import_export(export: &Export) -> Result<Vec<Episode>> {
    let mut by_span: HashMap<(&str, &str), Vec<&LogRecord>> = HashMap::new();
    for r in &export.logs {
        by_span
            .entry((r.trace_id.as_str(), r.span_id.as_str()))
            .or_default()
            .push(r);
    }
    let mut spans: Vec<&otlp::Span> = export.spans.iter().collect();
    spans.sort_by_key(|s| (s.start, s.at));
    let mut groups = Groups::default();
    let mut chats = 0;
    for span in spans {
        let a = &span.attributes;
        let key = a
            .get("gen_ai.conversation.id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("trace-{}", span.trace_id), str::to_owned);
        let (calls, runs) = groups.of(key, span.at);
        if a.get("gen_ai.operation.name").and_then(Value::as_str) == Some("execute_tool") {
            runs.extend(tool_run(a));
            continue;
        }
        if !is_chat(a) {
            continue;
        }
        chats += 1;
        let records = by_span
            .get(&(span.trace_id.as_str(), span.span_id.as_str()))
            .map_or(&[][..], Vec::as_slice);
        calls.extend(chat_call(span, records));
    }
    let out = groups.episodes(export, "otel", "gen_ai.usage.input_tokens");
    if out.is_empty() {
        let first = export
            .files
            .first()
            .map_or(Path::new("otel"), PathBuf::as_path);
        let what = if chats == 0 {
            "no GenAI chat span (`gen_ai.operation.name` chat) in the OTLP export".to_owned()
        } else {
            format!(
                "{chats} chat spans but none records its messages: capture content \
                 (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) and export the log records beside the spans"
            )
        };
        return Err(bad(first, 1, what));
    }
    Ok(out)
}

/// The otel format.
pub struct OTel;

impl Convention for OTel {
    fn name(&self) -> &'static str {
        "otel"
    }

    fn about(&self) -> &'static str {
        "OpenTelemetry GenAI spans and events (OTLP/JSON lines, as an OTel Collector's file exporter writes them; \
         spans, logs and metrics files read together)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        if !otlp::is_otlp(s) {
            return None;
        }
        match (
            s.text.contains("\"gen_ai."),
            s.text.contains("openinference.span.kind"),
        ) {
            (true, false) => Some(sure::CERTAIN),
            (true, true) => Some(sure::LIKELY),
            _ => Some(sure::GENERIC),
        }
    }

    fn episodes(&self, export: &Export) -> Result<Vec<Episode>> {
        import_export(export)
    }
}
