//! OpenHands: an event-stream JSON array, eval output JSONL (one record per instance with `history`), or the
//! older flattened resolver output (bare `{action…}` / `{observation…}` items, paired by order).
//!
//! Where an action keeps the model's reply (`tool_call_metadata.model_response`), its text and the arguments
//! the model wrote are used, not the action's runtime fields (`is_input`, `blocking`, `cwd`…); the system
//! event's tool schemas (`args.tools`) become the episode's tools; an observation whose `cause` names no
//! action is an observation of its own.
//!
//! Content reaches the model as the CodeAct agent builds its messages ([`render`]): a command's output with
//! its suffixes (`[Current working directory: …]`, `[Command finished with exit code N]`), an error with
//! `[Error occurred in processing last action]`, the workspace `recall` as a `<RUNTIME_INFORMATION>` user
//! message, two newlines before a user message that follows another. For a model without native function
//! calling (decided from the record's `llm_config`: `native_tool_calling`, else the model against OpenHands'
//! function-calling patterns; an event stream without a config is taken as native), the conversation is the
//! text one OpenHands' converter writes ([`text_calls`]), and the episode has no API tools.

mod render;
mod text_calls;

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    arguments_of, bad, episode, parse_json, parse_jsonl, sure, text_of, Conversation, Importer,
    Sniff,
};
use crate::error::Result;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::{Episode, Role};

/// Actions that are bookkeeping, not part of the model's context.
const SKIP_ACTIONS: [&str; 4] = ["change_agent_state", "recall", "null", "pause"];
/// Observations that are bookkeeping.
const SKIP_OBSERVATIONS: [&str; 4] = ["agent_state_changed", "null", "recall", "user_rejected"];
/// An action's runtime fields, which OpenHands adds and the model never wrote (kept only where the model's own
/// arguments are not recorded).
const RUNTIME_FIELDS: [&str; 13] = [
    "action",
    "action_risk",
    "is_confirmed",
    "images_urls",
    "wait_for_response",
    "keep_prompt",
    "is_input",
    "blocking",
    "hidden",
    "confirmation_state",
    "impl_source",
    "translated_ipython_code",
    "kernel_init_code",
];

/// What an event stream converts to: the conversation, the tool schemas of its system event, and the
/// provider's usage of each model response it records.
struct Converted {
    conv: Conversation,
    tools: Vec<Value>,
    /// Per model call, in order: the usage its response records, or why there is none.
    usage: Vec<std::result::Result<CallUsage, String>>,
    /// Whether the run used OpenHands' text-based function calling.
    text: bool,
    /// The model the record's `llm_config` names, if any.
    model: String,
}

/// Why an agent's message has no usage: OpenHands keeps a response only on the actions of its tool calls.
const NO_METADATA: &str =
    "an agent message without `tool_call_metadata` (OpenHands keeps a response's usage only on tool calls)";

/// The model's own reply behind an action (`tool_call_metadata.model_response`), when recorded: its id, its
/// text, its usage, and the arguments it gave the call `tool_call_id`.
struct ModelReply<'a> {
    id: String,
    /// The model the response names.
    model: Option<&'a str>,
    text: String,
    usage: Option<&'a Value>,
    arguments: Option<String>,
}

fn model_reply(meta: &Value) -> Option<ModelReply<'_>> {
    let response = meta.get("model_response")?;
    let message = response.pointer("/choices/0/message")?;
    let call_id = meta.get("tool_call_id").and_then(Value::as_str);
    let arguments = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .and_then(|calls| {
            calls
                .iter()
                .find(|c| c.get("id").and_then(Value::as_str) == call_id)
        })
        .and_then(|c| c.pointer("/function/arguments"))
        .map(arguments_of);
    Some(ModelReply {
        id: response
            .get("id")
            .map_or_else(String::new, ToString::to_string),
        model: response.get("model").and_then(Value::as_str),
        text: message.get("content").map_or_else(String::new, text_of),
        usage: response.get("usage"),
        arguments,
    })
}

/// The provider's count of one model response, from its OpenAI-form `usage` (litellm's, with Anthropic's cache
/// fields beside).
fn call_usage(u: &Value) -> CallUsage {
    let n = |p: &str| u.pointer(p).and_then(Value::as_u64);
    let prompt = n("/prompt_tokens").unwrap_or(0);
    let (read, write) = (
        n("/cache_read_input_tokens").unwrap_or(0),
        n("/cache_creation_input_tokens").unwrap_or(0),
    );
    // litellm's Anthropic `prompt_tokens` has counted cache reads but not cache writes in some versions, and
    // neither in others: the prompt is every token the provider read.
    let input = if prompt >= read + write {
        prompt
    } else if prompt >= read {
        prompt + write
    } else {
        prompt + read + write
    };
    CallUsage {
        input_tokens: input,
        output_tokens: n("/completion_tokens").unwrap_or(0),
        cache_read_tokens: n("/cache_read_input_tokens")
            .or_else(|| n("/prompt_tokens_details/cached_tokens")),
        cache_write_tokens: n("/cache_creation_input_tokens"),
        ..CallUsage::default()
    }
}

/// How the run called its model: natively with tools, or with OpenHands' text-based function calling.
#[derive(Debug, Clone, Default)]
struct Mode {
    /// Text-based function calling (the model lacks native function calling).
    text: bool,
    /// The model, as the config names it.
    model: String,
}

impl Mode {
    /// The mode a record's `metadata.llm_config` says; native when it says nothing.
    fn of(record: &Value) -> Self {
        let Some(config) = record
            .pointer("/metadata/llm_config")
            .filter(|c| c.is_object())
        else {
            return Self::default();
        };
        let model = config
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let set = config.get("native_tool_calling").and_then(Value::as_bool);
        Self {
            text: !model.is_empty() && !text_calls::native(&model, set),
            model,
        }
    }
}

fn convert(events: &[Value], origin: &Path, at: &str, mode: &Mode) -> Result<Converted> {
    let mut c = Converter {
        mode,
        conv: Conversation::default(),
        after_user: false,
        first_user: true,
        called: HashMap::new(),
        tools: Vec::new(),
        usage: Vec::new(),
        by_event: HashMap::new(),
        // The flattened resolver form has no event ids: an observation answers the last action.
        flattened: events.iter().all(|e| e.get("id").is_none()),
        last_call: None,
        last_response: None,
        seen_message: false,
    };
    for (i, e) in events.iter().enumerate() {
        let Some(obj) = e.as_object() else {
            return Err(bad(
                origin,
                1,
                format!("at `{at}[{i}]`: expected an event object"),
            ));
        };
        if let Some(action) = obj.get("action").and_then(Value::as_str) {
            c.action(obj, action);
        } else if let Some(observation) = obj.get("observation").and_then(Value::as_str) {
            c.observation(e, obj, observation);
        }
    }
    if mode.text {
        // The tools went into the system prompt; none is sent as an API tool.
        c.tools.clear();
    }
    Ok(Converted {
        conv: c.conv,
        tools: c.tools,
        usage: c.usage,
        text: mode.text,
        model: mode.model.clone(),
    })
}

/// One pass over an event stream: the conversation so far and what later events need to find their place.
struct Converter<'m> {
    mode: &'m Mode,
    conv: Conversation,
    /// Whether the last message sent was the user's (OpenHands puts two newlines between two in a row).
    after_user: bool,
    first_user: bool,
    /// Event id → the function an action called, for the text-based results.
    called: HashMap<String, String>,
    tools: Vec<Value>,
    usage: Vec<std::result::Result<CallUsage, String>>,
    /// Event id → tool call id, so an observation finds its action through `cause`.
    by_event: HashMap<String, String>,
    /// The flattened resolver form (no event ids): an observation answers the last action.
    flattened: bool,
    last_call: Option<String>,
    last_response: Option<String>,
    seen_message: bool,
}

impl Converter<'_> {
    /// `text` as the user's next message: two newlines before it when it follows another.
    fn spaced(&self, text: String) -> String {
        if self.after_user {
            format!("\n\n{text}")
        } else {
            text
        }
    }

    /// An action event: a message, the system prompt, a finish, or a tool call; the usage of the model reply
    /// behind it counted once per reply.
    fn action(&mut self, obj: &Map<String, Value>, action: &str) {
        if SKIP_ACTIONS.contains(&action) {
            return;
        }
        // The flattened form has no `source`: its first message is the user's task.
        let source = obj
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or(if self.seen_message { "agent" } else { "user" });
        let args: Map<String, Value> = obj
            .get("args")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| {
                // The flattened form keeps the arguments at the top level.
                obj.iter()
                    .filter(|(k, _)| !RUNTIME_FIELDS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            });
        let meta = obj.get("tool_call_metadata").filter(|m| !m.is_null());
        let reply = meta.and_then(model_reply);
        // One model response may carry several actions: its text and usage count once.
        let fresh = reply
            .as_ref()
            .is_some_and(|r| self.last_response.as_deref() != Some(r.id.as_str()));
        if let Some(r) = reply.as_ref().filter(|_| fresh) {
            self.last_response = Some(r.id.clone());
            self.conv.model(r.model.unwrap_or(""));
            self.usage.push(
                r.usage
                    .map(call_usage)
                    .ok_or_else(|| "a model response without `usage`".to_owned()),
            );
        }
        match action {
            "message" => self.message(obj, &args, source, meta.is_some()),
            "system" => self.system(&args),
            // A finish the model called as a tool (the trace keeps its call) is that call, with no result; the
            // text OpenHands shows the user afterwards is not the model's.
            "finish" if meta.is_none() => {
                let text = match reply.as_ref().filter(|_| fresh) {
                    Some(r) if !r.text.trim().is_empty() => r.text.clone(),
                    _ => args
                        .get("final_thought")
                        .or_else(|| args.get("thought"))
                        .or_else(|| args.get("outputs").and_then(|o| o.get("content")))
                        .map_or_else(String::new, text_of),
                };
                self.conv.message(Role::Assistant, text);
            }
            _ => self.tool_call(obj, action, args, meta, reply.as_ref(), fresh),
        }
    }

    /// A message of the user or the agent (the first user message with the text-mode tool instructions).
    fn message(
        &mut self,
        obj: &Map<String, Value>,
        args: &Map<String, Value>,
        source: &str,
        has_meta: bool,
    ) {
        let content = args.get("content").map_or_else(
            || text_of(obj.get("message").unwrap_or(&Value::Null)),
            text_of,
        );
        let role = if source == "user" {
            Role::User
        } else {
            Role::Assistant
        };
        if role == Role::Assistant && !has_meta && !content.trim().is_empty() {
            self.usage.push(Err(NO_METADATA.to_owned()));
        }
        let content = if role == Role::User && self.mode.text && self.first_user {
            text_calls::first_user(&content, &self.tools, &self.mode.model)
        } else {
            content
        };
        if role == Role::User {
            self.first_user = false;
        }
        let content = if role == Role::User {
            self.spaced(content)
        } else {
            content
        };
        self.after_user = role == Role::User;
        self.conv.message(role, content);
        self.seen_message = true;
    }

    /// The system event: the prompt, its tool schemas (in text mode, written into the prompt).
    fn system(&mut self, args: &Map<String, Value>) {
        if let Some(t) = args.get("tools").and_then(Value::as_array) {
            self.tools.clone_from(t);
        }
        let content = args.get("content").map_or_else(String::new, text_of);
        let content = if self.mode.text {
            content + &text_calls::system_suffix(&self.tools)
        } else {
            content
        };
        self.conv.message(Role::System, content);
        self.after_user = false;
    }

    /// A tool call: the model's own text and arguments when the trace keeps its reply, else the action's; in
    /// text mode, the call written into the assistant's message.
    fn tool_call(
        &mut self,
        obj: &Map<String, Value>,
        action: &str,
        mut args: Map<String, Value>,
        meta: Option<&Value>,
        reply: Option<&ModelReply<'_>>,
        fresh: bool,
    ) {
        let (text, arguments) = match reply {
            Some(r) => (fresh.then(|| r.text.clone()), r.arguments.clone()),
            None => (args.get("thought").map(text_of), None),
        };
        let name = meta
            .and_then(|m| m.get("function_name"))
            .and_then(Value::as_str)
            .unwrap_or(action);
        let arguments = arguments.unwrap_or_else(|| {
            args.remove("thought");
            args.retain(|k, _| !RUNTIME_FIELDS.contains(&k.as_str()));
            Value::Object(args).to_string()
        });
        self.after_user = false;
        if self.mode.text {
            // The call is text in the assistant's message; its result a user message.
            let written = text_calls::call(name, &arguments).unwrap_or(arguments);
            let text = text.unwrap_or_default();
            self.conv.message(
                Role::Assistant,
                text_calls::assistant_with_call(&text, &written),
            );
            if let Some(eid) = obj.get("id") {
                self.called.insert(eid.to_string(), name.to_owned());
            }
            return;
        }
        if let Some(text) = text {
            self.conv.message(Role::Assistant, text);
        }
        let id = self.conv.call(
            meta.and_then(|m| m.get("tool_call_id"))
                .and_then(Value::as_str),
            name,
            arguments,
        );
        if let Some(eid) = obj.get("id") {
            self.by_event.insert(eid.to_string(), id.clone());
        }
        self.last_call = Some(id);
    }

    /// An observation: the workspace recall, a tool's result (rendered as CodeAct does), or an observation of
    /// its own where it answers no call.
    fn observation(&mut self, e: &Value, obj: &Map<String, Value>, observation: &str) {
        let extras = obj.get("extras").and_then(Value::as_object);
        if observation == "recall" {
            // The workspace context reaches the model as a user message of its own.
            let recall = extras
                .filter(|x| {
                    x.get("recall_type").and_then(Value::as_str) == Some("workspace_context")
                })
                .and_then(render::workspace_context);
            if let Some(text) = recall {
                let text = self.spaced(text);
                self.conv.observation("recall", text);
                self.after_user = true;
            }
            return;
        }
        if SKIP_OBSERVATIONS.contains(&observation) {
            return;
        }
        let content = obj.get("content").map_or_else(String::new, text_of);
        let content = match observation {
            "run" => render::command_output(&content, extras),
            "run_ipython" => render::ipython_output(&content),
            "error" => render::error(&content),
            "edit" => render::file_edit(&content, extras),
            _ => content,
        };
        if self.mode.text {
            self.text_result(e, obj, observation, content);
            return;
        }
        let call = match obj.get("cause").filter(|c| !c.is_null()) {
            Some(cause) => self.by_event.get(&cause.to_string()).cloned(),
            None if self.flattened => self
                .last_call
                .take()
                .filter(|id| !self.conv.is_answered(id)),
            // An observation that answers no action (an error the runtime raised on its own) reaches the model
            // as a message of its own, not as a second result of an earlier call.
            None => None,
        };
        let is_error = observation == "error" || obj.get("success") == Some(&Value::Bool(false));
        // A result answers a call; anything else is a user message of its own.
        let answers = call.as_ref().is_some_and(|id| !self.conv.is_answered(id));
        let content = if answers {
            content
        } else {
            self.spaced(content)
        };
        self.after_user = !answers;
        self.conv
            .result(call.as_deref(), observation, content, is_error);
    }

    /// In text mode, a call's result as the text OpenHands writes for it, or an observation of its own.
    fn text_result(
        &mut self,
        e: &Value,
        obj: &Map<String, Value>,
        observation: &str,
        content: String,
    ) {
        let cause = obj
            .get("cause")
            .filter(|c| !c.is_null())
            .map(ToString::to_string);
        if let Some(name) = cause.and_then(|c| self.called.remove(&c)) {
            let name = e
                .pointer("/tool_call_metadata/function_name")
                .and_then(Value::as_str)
                .unwrap_or(&name)
                .to_owned();
            self.conv
                .observation(&name, text_calls::result(&name, &content));
            self.after_user = false;
        } else {
            let text = self.spaced(content);
            self.conv.observation(observation, text);
            self.after_user = true;
        }
    }
}

/// An episode from a converted event stream: its tools, its usage (from the records' own `token_usages`
/// when given, else from the model responses the events keep), stopped at the end of the stream.
fn finish(
    origin: &Path,
    suffix: Option<String>,
    converted: Converted,
    token_usages: Option<&Value>,
) -> Episode {
    let marks = converted.conv.model_marks().to_vec();
    let mut ep = episode(origin, suffix, "openhands", converted.conv.into_items());
    ep.tools = converted.tools;
    if converted.text {
        ep.meta.insert(
            "function_calling".into(),
            "text (OpenHands fn_call_converter)".into(),
        );
    }
    // The agent finished, or gave the user the turn: no call follows the last event.
    ep.stopped = true;
    // The configured model, and the one each recorded response names.
    ep.set_model_marks(Some(converted.model.as_str()), &marks);
    let recorded: Vec<CallUsage> = token_usages
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|u| {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64);
                    CallUsage {
                        input_tokens: n("prompt_tokens").unwrap_or(0),
                        output_tokens: n("completion_tokens").unwrap_or(0),
                        cache_read_tokens: n("cache_read_tokens"),
                        cache_write_tokens: n("cache_write_tokens"),
                        ..CallUsage::default()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let mut usage = if !recorded.is_empty() {
        ProviderUsage::from_calls("metrics.token_usages", recorded)
    } else if converted.usage.iter().any(std::result::Result::is_ok) {
        ProviderUsage::from_call_points("tool_call_metadata.model_response.usage", converted.usage)
    } else {
        return ep;
    };
    // Streams from before OpenHands recorded its `system` event hold neither the system prompt nor the tool
    // schemas the agent sent.
    if !ep.items.iter().any(|i| i.is_role(Role::System)) {
        usage.leaves_out =
            Some("OpenHands' system prompt and tool schemas (no `system` event)".into());
    }
    usage.store(&mut ep);
    ep
}

/// Imports an event array, or an eval/resolver output JSONL with one `history` per record.
///
/// # Errors
/// Malformed JSON, or events that are not objects.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('[') {
        let v = parse_json(text, origin)?;
        let events = v.as_array().map(Vec::as_slice).unwrap_or_default();
        let converted = convert(events, origin, ".", &Mode::default())?;
        return Ok(vec![finish(origin, None, converted, None)]);
    }
    let mut out = Vec::new();
    for (line, record) in parse_jsonl(text, origin)? {
        let history = record
            .get("history")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(origin, line, "at `history`: expected a list of events"))?;
        let mode = Mode::of(&record);
        let converted = convert(history, origin, "history", &mode).map_err(|e| match e {
            crate::Error::Parse { path, message, .. } => crate::Error::Parse {
                path,
                line,
                message,
            },
            other => other,
        })?;
        let id = record
            .get("instance_id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("line{line}"), str::to_owned);
        let metrics = record.get("metrics").filter(|m| !m.is_null());
        let mut ep = finish(
            origin,
            Some(id),
            converted,
            metrics.and_then(|m| m.get("token_usages")),
        );
        if let Some(cost) = metrics.and_then(|m| m.get("accumulated_cost")) {
            ep.meta.insert("accumulated_cost".into(), cost.clone());
        }
        if let Some(instruction) = record.get("instruction").and_then(Value::as_str) {
            ep.task = instruction.chars().take(200).collect();
        }
        out.push(ep);
    }
    Ok(out)
}

/// The openhands format.
pub struct OpenHands;

impl Importer for OpenHands {
    fn name(&self) -> &'static str {
        "openhands"
    }

    fn about(&self) -> &'static str {
        "OpenHands event stream, eval output JSONL or resolver output"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        if let Some(o) = &s.first_line {
            if o.contains_key("history")
                && (o.contains_key("instance_id")
                    || o.contains_key("instruction")
                    || o.contains_key("issue"))
            {
                return Some(sure::CERTAIN);
            }
        }
        let first = s.list()?.first()?;
        (first.get("action").is_some() || first.get("observation").is_some())
            .then_some(sure::LIKELY)
    }

    fn refuse(&self, s: &Sniff<'_>) -> Option<String> {
        let o = s.object()?;
        let events = o.get("events")?.as_str()?;
        (o.contains_key("openhands_ai") && o.contains_key("native")).then(|| {
            format!(
                "the messages openhands-ai builds from the events in '{events}' \
                 (scripts/make_openhands_fixture.sh writes them to check the import against); import '{events}'"
            )
        })
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}
