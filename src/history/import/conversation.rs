//! What every importer shares: parsing whole-file JSON and JSONL with line-naming errors, the text of a
//! content value, and a [`Conversation`] that keeps tool calls and results paired as it is built.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::history::{Episode, Item, Role, SentBack};

/// Parse error at a line, for importers.
pub fn bad(origin: &Path, line: usize, message: impl Into<String>) -> Error {
    Error::Parse {
        path: origin.to_owned(),
        line,
        message: message.into(),
    }
}

/// Parses a whole-file JSON document, naming the line of a syntax error.
pub fn parse_json(text: &str, origin: &Path) -> Result<Value> {
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
pub fn parse_jsonl(text: &str, origin: &Path) -> Result<Vec<(usize, Value)>> {
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

/// Builds a valid conversation: remembers call ids, and turns a result that answers no recorded call, or a
/// call already answered, into an observation (the model saw the output, but it answers no call of its own).
#[derive(Debug, Default)]
pub struct Conversation {
    items: Vec<Item>,
    /// Recorded call id → the id it was given in the dataset (the same, unless the trace reused it).
    calls: HashMap<String, String>,
    /// Ids given so far.
    used: HashSet<String>,
    /// Given ids that have their result.
    answered: HashSet<String>,
    synthetic: usize,
    /// (item index, model): the turns from that item on were the model's ([`Conversation::model`]).
    models: Vec<(usize, String)>,
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

    /// Appends a tool result; one with no known call, or for a call already answered, becomes an
    /// observation.
    pub fn result(&mut self, call_id: Option<&str>, name: &str, content: String, is_error: bool) {
        match call_id
            .and_then(|id| self.calls.get(id))
            .filter(|id| !self.answered.contains(*id))
        {
            Some(id) => {
                self.answered.insert(id.clone());
                self.items.push(Item::ToolResult {
                    call_id: id.as_str().into(),
                    name: name.into(),
                    content: content.into(),
                    is_error,
                });
            }
            None => self.observation(name, content),
        }
    }

    /// Whether the recorded call `id` has its result.
    #[must_use]
    pub fn is_answered(&self, id: &str) -> bool {
        self.calls
            .get(id)
            .is_some_and(|id| self.answered.contains(id))
    }

    /// Appends environment output sent as a user message, skipping empty output.
    pub fn observation(&mut self, name: &str, content: impl Into<String>) {
        let content = content.into();
        if !content.trim().is_empty() {
            self.items.push(Item::observation(name, content));
        }
    }

    /// Appends recorded reasoning, carried by the later requests `sent_back` says, skipping empty text.
    pub fn reasoning(&mut self, content: impl Into<String>, sent_back: SentBack) {
        let content = content.into();
        if !content.trim().is_empty() {
            self.items.push(Item::Reasoning {
                content: content.into(),
                sent_back,
            });
        }
    }

    /// Marks that the turns appended from here on are `model`'s (the model a trace names for a reply, or a
    /// switch it announces); the same model again, an empty name or Claude Code's `<synthetic>` (a message it
    /// wrote itself, no call) add nothing.
    pub fn model(&mut self, model: &str) {
        let model = model.trim();
        if model.is_empty() || model == "<synthetic>" {
            return;
        }
        let at = self.items.len();
        // A later mark at the same item replaces the earlier one: no turn was the earlier model's.
        if self.models.last().is_some_and(|(from, _)| *from == at) {
            self.models.pop();
        }
        if self.models.last().is_some_and(|(_, m)| m == model) {
            return;
        }
        self.models.push((at, model.to_owned()));
    }

    /// The models' marks so far ([`Conversation::model`]), for [`Episode::set_model_marks`].
    #[must_use]
    pub fn model_marks(&self) -> &[(usize, String)] {
        &self.models
    }

    /// The number of items appended so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item was appended yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The last item appended.
    #[must_use]
    pub fn last(&self) -> Option<&Item> {
        self.items.last()
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
pub fn episode(origin: &Path, suffix: Option<String>, format: &str, items: Vec<Item>) -> Episode {
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
        ..Episode::default()
    }
}
