//! Importers from agents' own trace formats into [`Episode`]s, with format detection.
//!
//! One file per format, each `fn import(text, origin) -> Result<Vec<Episode>>` (a file may hold several
//! episodes, e.g. an eval-output JSONL). What a source records about real usage (provider prompt tokens per
//! call, cost, exit status) is kept in the episode's `meta`. Malformed input gives an error naming the file
//! and the position (line, or JSON path), never a panic.

pub mod aider;
pub mod anthropic;
pub mod claude_code;
pub mod findings;
pub mod openai;
pub mod openhands;
pub mod smolagents;
pub mod swe_agent;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::{Episode, Item, Role};
use crate::error::{Error, Result};

/// A trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Detect from the content.
    Auto,
    /// ctxbench's own JSONL (copied through).
    Native,
    /// OpenAI chat messages (a list, or an object with `messages`), with `tool_calls`.
    Openai,
    /// Anthropic Messages (`tool_use` / `tool_result` blocks).
    Anthropic,
    /// SWE-agent `.traj`.
    SweAgent,
    /// mini-swe-agent trajectory (legacy list or `mini-swe-agent-1.1`).
    MiniSweAgent,
    /// OpenHands event stream, eval output JSONL or resolver output.
    Openhands,
    /// Claude Code session JSONL.
    ClaudeCode,
    /// tau-bench result.
    TauBench,
    /// aider chat history markdown.
    Aider,
    /// smolagents benchmark run JSONL.
    Smolagents,
}

/// Parse error at a line, for importers.
pub(crate) fn bad(origin: &Path, line: usize, message: impl Into<String>) -> Error {
    Error::Parse {
        path: origin.to_owned(),
        line,
        message: message.into(),
    }
}

/// Parses a whole-file JSON document, naming the line of a syntax error.
pub(crate) fn parse_json(text: &str, origin: &Path) -> Result<Value> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text).map_err(|e| {
        let what = if e.is_eof() {
            format!("truncated JSON ({e})")
        } else {
            e.to_string()
        };
        bad(origin, e.line().max(1), what)
    })
}

/// Parses every non-blank line of a JSONL file.
pub(crate) fn parse_jsonl(text: &str, origin: &Path) -> Result<Vec<(usize, Value)>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l.trim_end_matches('\r'))
                .map(|v| (i + 1, v))
                .map_err(|e| {
                    bad(
                        origin,
                        i + 1,
                        if e.is_eof() {
                            format!("truncated JSON ({e})")
                        } else {
                            e.to_string()
                        },
                    )
                })
        })
        .collect()
}

/// The text of a content value: a string, a list of parts (`{type: text, text}` or nested `content`), or null.
#[must_use]
pub fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::Object(o) => o
                    .get("text")
                    .or_else(|| o.get("content"))
                    .map_or_else(String::new, text_of),
                other => text_of(other),
            })
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(o) => o
            .get("text")
            .or_else(|| o.get("content"))
            .map_or_else(|| v.to_string(), text_of),
        other => other.to_string(),
    }
}

/// Arguments as JSON text: a string is kept as is, anything else is serialized.
#[must_use]
pub fn arguments_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

/// Builds a valid conversation: remembers call ids and turns a result with no known call into a user message
/// (the model saw the output, but no call introduced it).
#[derive(Debug, Default)]
pub struct Conversation {
    items: Vec<Item>,
    /// Recorded call id → the id it was given in the dataset (the same, unless the trace reused it).
    calls: HashMap<String, String>,
    /// Ids given so far.
    used: HashSet<String>,
    synthetic: usize,
}

impl Conversation {
    /// Appends a message, skipping empty ones.
    pub fn message(&mut self, role: Role, content: impl Into<String>) {
        let content = content.into();
        if !content.trim().is_empty() {
            self.items.push(Item::message(role, content));
        }
    }

    /// Appends a tool call; a missing id gets a synthetic one, which is returned.
    pub fn call(&mut self, id: Option<&str>, name: &str, arguments: String) -> String {
        let id = match id.filter(|s| !s.is_empty()) {
            Some(id) => id.to_owned(),
            None => {
                self.synthetic += 1;
                format!("ctxbench_call_{}", self.synthetic)
            }
        };
        // Some agents reuse a call id (SWE-agent's demonstrations do): the reuse gets its own id, and the
        // results that follow answer the latest call with the recorded id.
        let mut given = id.clone();
        let mut n = 1;
        while self.used.contains(&given) {
            n += 1;
            given = format!("{id}#{n}");
        }
        self.used.insert(given.clone());
        self.calls.insert(id, given.clone());
        self.items
            .push(Item::tool_call(given.clone(), name, arguments));
        given
    }

    /// Appends a tool result; with no known call it becomes a user message.
    pub fn result(&mut self, call_id: Option<&str>, name: &str, content: String, is_error: bool) {
        match call_id.and_then(|id| self.calls.get(id)) {
            Some(id) => self.items.push(Item::ToolResult {
                call_id: id.as_str().into(),
                name: name.into(),
                content: content.into(),
                is_error,
            }),
            None => self.message(Role::User, content),
        }
    }

    /// The name of the call with `id`, if it was recorded.
    #[must_use]
    pub fn call_name(&self, id: &str) -> Option<String> {
        let id = self.calls.get(id).map_or(id, String::as_str);
        self.items.iter().rev().find_map(|i| match i {
            Item::ToolCall { id: cid, name, .. } if **cid == *id => Some(name.to_string()),
            _ => None,
        })
    }

    /// The items.
    #[must_use]
    pub fn into_items(self) -> Vec<Item> {
        self.items
    }
}

/// A new episode named after `origin` (plus `suffix` for multi-episode files).
pub(crate) fn episode(
    origin: &Path,
    suffix: Option<String>,
    format: &str,
    items: Vec<Item>,
) -> Episode {
    let stem = origin
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("trace");
    let mut meta = serde_json::Map::new();
    meta.insert("format".into(), Value::String(format.into()));
    meta.insert("origin".into(), Value::String(origin.display().to_string()));
    let task = items
        .iter()
        .find(|i| i.is_role(Role::User))
        .map(|i| i.text().chars().take(200).collect())
        .unwrap_or_default();
    Episode {
        id: match suffix {
            Some(s) => format!("{stem}#{s}"),
            None => stem.to_owned(),
        },
        source: format!("import/{format}"),
        task,
        items,
        findings: Vec::new(),
        probes: Vec::new(),
        meta,
    }
}

/// Guesses the format of `text` (read from `origin`).
///
/// # Errors
/// When nothing matches, naming the file.
pub fn detect(text: &str, origin: &Path) -> Result<Format> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with("# aider chat started at")
        || text.contains("\n# aider chat started at")
        || text.contains("class=\"chat-transcript\"")
    {
        return Ok(Format::Aider);
    }
    let first_line = trimmed.lines().next().unwrap_or("");
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(first_line) {
        if o.contains_key("intermediate_steps") {
            return Ok(Format::Smolagents);
        }
        if o.contains_key("parentUuid")
            || o.get("type").and_then(Value::as_str) == Some("queue-operation")
        {
            return Ok(Format::ClaudeCode);
        }
        if o.contains_key("history")
            && (o.contains_key("instance_id")
                || o.contains_key("instruction")
                || o.contains_key("issue"))
        {
            return Ok(Format::Openhands);
        }
        if o.contains_key("items") && o.contains_key("source") && o.contains_key("id") {
            return Ok(Format::Native);
        }
    }
    let Ok(v) = serde_json::from_str::<Value>(trimmed) else {
        return Err(bad(
            origin,
            1,
            "cannot detect the format: not JSON, JSONL, or aider markdown (use --format)",
        ));
    };
    let format = match &v {
        Value::Object(o)
            if o.contains_key("trajectory_format")
                || (o.contains_key("messages")
                    && o.get("info")
                        .is_some_and(|i| i.get("mini_version").is_some())) =>
        {
            Format::MiniSweAgent
        }
        Value::Object(o)
            if o.contains_key("history")
                && (o.contains_key("trajectory")
                    || o.contains_key("info")
                    || o.get("history").is_some_and(Value::is_array)) =>
        {
            Format::SweAgent
        }
        Value::Object(o) if o.contains_key("traj") => Format::TauBench,
        Value::Object(o) if o.get("messages").is_some_and(has_anthropic_blocks) => {
            Format::Anthropic
        }
        Value::Object(o) if o.contains_key("messages") => Format::Openai,
        Value::Array(a)
            if a.first()
                .is_some_and(|e| e.get("action").is_some() || e.get("observation").is_some()) =>
        {
            Format::Openhands
        }
        Value::Array(_) if has_anthropic_blocks(&v) => Format::Anthropic,
        Value::Array(a) if a.first().is_some_and(|e| e.get("role").is_some()) => {
            if a.iter().any(|m| {
                m.get("content")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains("mswea_bash_command") || c.contains("<returncode>"))
            }) {
                Format::MiniSweAgent
            } else {
                Format::Openai
            }
        }
        _ => {
            return Err(bad(
                origin,
                1,
                "cannot detect the format of this JSON (use --format)",
            ))
        }
    };
    Ok(format)
}

fn has_anthropic_blocks(messages: &Value) -> bool {
    messages.as_array().is_some_and(|a| {
        a.iter().any(|m| {
            m.get("content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| {
                    blocks.iter().any(|b| {
                        matches!(
                            b.get("type").and_then(Value::as_str),
                            Some("tool_use" | "tool_result")
                        )
                    })
                })
        })
    })
}

/// Imports one file in `format` (detected when `Auto`), adding automatic findings to episodes that have none.
///
/// # Errors
/// Names the file and the position of what is malformed.
pub fn import_file(path: &Path, format: Format) -> Result<Vec<Episode>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        bad(
            path,
            line,
            format!("invalid UTF-8 at byte {valid} of the file"),
        )
    })?;
    import_text(&text, path, format)
}

/// Imports text read from `origin`.
///
/// # Errors
/// As [`import_file`].
pub fn import_text(text: &str, origin: &Path, format: Format) -> Result<Vec<Episode>> {
    if text.trim().is_empty() {
        return Err(bad(origin, 1, "the file is empty"));
    }
    let format = if format == Format::Auto {
        detect(text, origin)?
    } else {
        format
    };
    let mut episodes = match format {
        Format::Auto => unreachable!("resolved above"),
        Format::Native => {
            let reader = super::dataset::DatasetReader::new(text.as_bytes(), origin);
            reader
                .map(|r| r.map(|(_, e)| e))
                .collect::<Result<Vec<_>>>()?
        }
        Format::Openai => openai::import(text, origin)?,
        Format::Anthropic => anthropic::import(text, origin)?,
        Format::SweAgent => swe_agent::import(text, origin)?,
        Format::MiniSweAgent => openai::import_mini_swe_agent(text, origin)?,
        Format::TauBench => openai::import_tau_bench(text, origin)?,
        Format::Openhands => openhands::import(text, origin)?,
        Format::ClaudeCode => claude_code::import(text, origin)?,
        Format::Aider => aider::import(text, origin)?,
        Format::Smolagents => smolagents::import(text, origin)?,
    };
    for ep in &mut episodes {
        if ep.items.is_empty() {
            return Err(bad(
                origin,
                1,
                format!("episode '{}' has no message, call or result", ep.id),
            ));
        }
        if ep.findings.is_empty() {
            findings::extract(ep);
        }
    }
    Ok(episodes)
}
