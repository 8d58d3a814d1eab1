//! The request body: the messages a request becomes, and their JSON written without a tree, into the text sent
//! or into a hash that keeps none of it ([`Hashing`], the cache key).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::config::{OpenAiConfig, ResponseFormat};
use crate::history::{Item, Role};
use crate::llm::LlmRequest;

/// One message of a request body, borrowing the request's texts: the fields in the order they are sent
/// (`role`, then a tool result's `tool_call_id`, `content`, and an assistant turn's `tool_calls`).
#[derive(Debug, Serialize)]
pub(super) struct Message<'a> {
    role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    content: Cow<'a, str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall<'a>>,
}

impl<'a> Message<'a> {
    fn new(role: &'a str, content: &'a str) -> Self {
        Self {
            role,
            tool_call_id: None,
            content: Cow::Borrowed(content),
            tool_calls: Vec::new(),
        }
    }
}

/// An assistant turn's tool call: `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Debug, Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// The request's messages: instructions as system messages; each assistant turn (its text, reasoning and
/// tool calls) as one assistant message; tool results as `tool` messages; observations as user messages.
pub(super) fn messages(req: &LlmRequest) -> Vec<Message<'_>> {
    let mut messages: Vec<Message<'_>> = req
        .instructions
        .iter()
        .map(|s| Message::new("system", s))
        .collect();
    // The assistant message being built: (content, tool calls).
    let mut turn: Option<(String, Vec<ToolCall<'_>>)> = None;
    fn flush<'a>(turn: &mut Option<(String, Vec<ToolCall<'a>>)>, messages: &mut Vec<Message<'a>>) {
        if let Some((content, calls)) = turn.take() {
            messages.push(Message {
                content: Cow::Owned(content),
                tool_calls: calls,
                ..Message::new(Role::Assistant.as_str(), "")
            });
        }
    }
    for item in &req.contents {
        match item {
            Item::Message {
                role: Role::Assistant,
                content,
            }
            | Item::Reasoning { content, .. } => {
                let (text, calls) = turn.get_or_insert_with(Default::default);
                if !calls.is_empty() {
                    // Text after tool calls starts another turn.
                    flush(&mut turn, &mut messages);
                    turn = Some((content.to_string(), Vec::new()));
                } else {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(content);
                }
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => {
                turn.get_or_insert_with(Default::default).1.push(ToolCall {
                    id,
                    kind: "function",
                    function: Function { name, arguments },
                });
            }
            other => {
                flush(&mut turn, &mut messages);
                messages.push(match other {
                    Item::Message { role, content } => Message::new(role.as_str(), content),
                    Item::ToolResult {
                        call_id, content, ..
                    } => Message {
                        tool_call_id: Some(call_id),
                        ..Message::new("tool", content)
                    },
                    Item::Observation { content, .. } => Message::new("user", content),
                    _ => unreachable!("assistant turns are handled above"),
                });
            }
        }
    }
    flush(&mut turn, &mut messages);
    messages
}

/// A request body, borrowing the request's texts, its fields in the order they are sent.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    pub messages: Vec<Message<'a>>,
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

pub(super) fn body_of<'a>(
    config: &'a OpenAiConfig,
    schema: Option<&(String, Value)>,
    req: &'a LlmRequest,
) -> Body<'a> {
    let response_format = match (config.response_format, schema) {
        (ResponseFormat::Text, _) => None,
        (ResponseFormat::JsonSchema, Some((name, schema))) => Some(json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": true},
        })),
        (ResponseFormat::JsonObjectSchema, Some((_, schema))) => {
            Some(json!({"type": "json_object", "schema": schema}))
        }
        _ => Some(json!({"type": "json_object"})),
    };
    Body {
        model: &config.model,
        messages: messages(req),
        temperature: config.temperature,
        max_tokens: config.max_tokens,
        response_format,
    }
}

/// The request body: the model, the messages, the sampling settings and the `response_format` (with the
/// client's `schema`, its name and JSON schema, for the schema formats).
pub(super) fn body(
    config: &OpenAiConfig,
    schema: Option<&(String, Value)>,
    req: &LlmRequest,
) -> Value {
    serde_json::to_value(body_of(config, schema, req)).unwrap_or(Value::Null)
}

/// Where a body is written: the bytes sent, or a hash that keeps none of them ([`Hashing`]).
pub(super) trait Out {
    fn put(&mut self, bytes: &[u8]);
}

impl Out for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A SHA-256 fed as a body is written, through a small buffer (a body is written in many short pieces): the
/// cache key without the body's text (a copy of every body, 9.1 MB at the peak of 1,000 generated episodes
/// at `max_concurrency` 64, written only to be hashed), and the body's length, to size the text sent.
pub(super) struct Hashing {
    hasher: Sha256,
    buffer: Vec<u8>,
    len: usize,
}

impl Hashing {
    const BUFFER: usize = 16 * 1024;

    /// A cache key's hash: the endpoint `base_url` and a newline, then what is written.
    pub(super) fn new(base_url: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(base_url.as_bytes());
        hasher.update(b"\n");
        Self {
            hasher,
            buffer: Vec::with_capacity(Self::BUFFER),
            len: 0,
        }
    }

    /// Goes on from a state [`Hashing::state`] gave.
    pub(super) fn resume((hasher, len): (Sha256, usize)) -> Self {
        Self {
            hasher,
            buffer: Vec::with_capacity(Self::BUFFER),
            len,
        }
    }

    /// The hash so far and its length, to go on from later ([`Hashing::resume`]).
    pub(super) fn state(&mut self) -> (Sha256, usize) {
        self.hasher.update(&self.buffer);
        self.buffer.clear();
        (self.hasher.clone(), self.len)
    }

    /// The hash, and how many bytes were written after the endpoint's line.
    pub(super) fn finish(mut self) -> (sha2::digest::Output<Sha256>, usize) {
        self.hasher.update(&self.buffer);
        (self.hasher.finalize(), self.len)
    }
}

impl Out for Hashing {
    fn put(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        if self.buffer.len() + bytes.len() > Self::BUFFER {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
            if bytes.len() >= Self::BUFFER {
                self.hasher.update(bytes);
                return;
            }
        }
        self.buffer.extend_from_slice(bytes);
    }
}

/// Writes [`body`]'s JSON to `out` from the request's texts, without a JSON tree in between (a request carries
/// the whole context: the tree's copy of every message was a tenth of a real-model run's CPU at
/// `max_concurrency` 256) and escaping its strings eight bytes at a time where nothing needs escaping
/// (serde_json's escaping, a byte at a time, was 29% of the CPU of the same run). The same bytes as
/// [`body`]`.to_string()`, pinned by tests: the cache key is their hash.
pub(super) fn write_body(
    out: &mut impl Out,
    config: &OpenAiConfig,
    schema: Option<&(String, Value)>,
    req: &LlmRequest,
) {
    let body = body_of(config, schema, req);
    write_head(out, &body);
    for (i, m) in body.messages.iter().enumerate() {
        write_message(out, i, m);
    }
    write_tail(out, &body);
}

/// The body up to its first message.
pub(super) fn write_head(out: &mut impl Out, body: &Body<'_>) {
    out.put(b"{\"model\":");
    json_string(out, body.model);
    out.put(b",\"messages\":[");
}

/// The message at `index` of the body's messages.
pub(super) fn write_message(out: &mut impl Out, index: usize, m: &Message<'_>) {
    if index > 0 {
        out.put(b",");
    }
    out.put(b"{\"role\":");
    json_string(out, m.role);
    if let Some(id) = m.tool_call_id {
        out.put(b",\"tool_call_id\":");
        json_string(out, id);
    }
    out.put(b",\"content\":");
    json_string(out, &m.content);
    if !m.tool_calls.is_empty() {
        out.put(b",\"tool_calls\":[");
        for (j, call) in m.tool_calls.iter().enumerate() {
            if j > 0 {
                out.put(b",");
            }
            out.put(b"{\"id\":");
            json_string(out, call.id);
            out.put(b",\"type\":");
            json_string(out, call.kind);
            out.put(b",\"function\":{\"name\":");
            json_string(out, call.function.name);
            out.put(b",\"arguments\":");
            json_string(out, call.function.arguments);
            out.put(b"}}");
        }
        out.put(b"]");
    }
    out.put(b"}");
}

/// The body after its last message.
pub(super) fn write_tail(out: &mut impl Out, body: &Body<'_>) {
    out.put(b"],\"temperature\":");
    out.put(json_value(&body.temperature).as_bytes());
    if let Some(n) = body.max_tokens {
        out.put(b",\"max_tokens\":");
        out.put(n.to_string().as_bytes());
    }
    if let Some(format) = &body.response_format {
        out.put(b",\"response_format\":");
        out.put(json_value(format).as_bytes());
    }
    out.put(b"}");
}

/// Feeds `hasher` with everything [`write_message`] writes of `m`, each field with its length: two messages
/// fed alike are written alike (a fingerprint of the messages, not of their JSON).
pub(super) fn feed_message(hasher: &mut xxhash_rust::xxh3::Xxh3, m: &Message<'_>) {
    let mut field = |bytes: &[u8]| {
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(m.role.as_bytes());
    match m.tool_call_id {
        Some(id) => {
            field(b"1");
            field(id.as_bytes());
        }
        None => field(b"0"),
    }
    field(m.content.as_bytes());
    field(&(m.tool_calls.len() as u64).to_le_bytes());
    for call in &m.tool_calls {
        field(call.id.as_bytes());
        field(call.kind.as_bytes());
        field(call.function.name.as_bytes());
        field(call.function.arguments.as_bytes());
    }
}

/// A small value as serde_json writes it (a number, the response format).
fn json_value(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// What a byte becomes in a JSON string, as serde_json writes it: 0 for itself, else the letter after the
/// backslash (`u` for `\u00XX`).
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Whether any of the eight bytes of `x` needs escaping (below 0x20, a quote, a backslash): exact, since each
/// test below only finds a byte where one is.
fn any_escape(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    (below | zero(x ^ (ONES * u64::from(b'"'))) | zero(x ^ (ONES * u64::from(b'\\')))) != 0
}

/// `s` as a JSON string, the same bytes as serde_json's.
fn json_string(out: &mut impl Out, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.put(b"\"");
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let x = u64::from_le_bytes(word.try_into().unwrap_or_default());
            if !any_escape(x) {
                i += 8;
                continue;
            }
        }
        let escape = ESCAPE[usize::from(bytes[i])];
        if escape == 0 {
            i += 1;
            continue;
        }
        out.put(&bytes[start..i]);
        if escape == b'u' {
            let b = bytes[i];
            out.put(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
        } else {
            out.put(&[b'\\', escape]);
        }
        i += 1;
        start = i;
    }
    out.put(&bytes[start..]);
    out.put(b"\"");
}

/// [`body`] as the text sent ([`write_body`]), in a buffer of `len` bytes when the length is known.
pub(super) fn body_text(
    config: &OpenAiConfig,
    schema: Option<&(String, Value)>,
    req: &LlmRequest,
    len: usize,
) -> String {
    let mut out = Vec::with_capacity(len);
    write_body(&mut out, config, schema, req);
    // Every piece is a &str or ASCII: valid UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_turns_are_one_message_with_their_tool_calls() {
        let req = LlmRequest {
            instructions: vec!["Be terse.".into()],
            contents: vec![
                Item::user("Fix it"),
                Item::assistant("Looking."),
                Item::tool_call("c1", "run", "{}"),
                Item::tool_call("c2", "read", "{}"),
                Item::tool_result("c1", "run", "ok"),
                Item::tool_result("c2", "read", "text"),
                Item::assistant("Done."),
            ],
        };
        let m = serde_json::to_value(messages(&req)).unwrap();
        let m = m.as_array().unwrap();
        let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "tool", "assistant"]
        );
        assert_eq!(m[2]["content"], "Looking.");
        assert_eq!(m[2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(m[4]["tool_call_id"], "c2");
        assert!(m[5].get("tool_calls").is_none());
    }

    #[test]
    fn the_text_sent_is_the_bodys_json_byte_for_byte() {
        let req = LlmRequest {
            instructions: vec!["Be terse.".into(), "Say \"why\".".into()],
            contents: vec![
                Item::user("Fix it\n\tnow é \u{1}"),
                Item::assistant("Looking."),
                Item::tool_call("c1", "run", "{\"cmd\": \"ls\"}"),
                Item::tool_result("c1", "run", "ok"),
                Item::assistant("Then."),
                Item::tool_call("c2", "read", "{}"),
                Item::assistant("After the call."),
                Item::tool_result("c2", "read", "text"),
                Item::assistant("Done."),
            ],
        };
        let schema = (
            "grades".to_owned(),
            json!({"type": "object", "b": [1, 2.5]}),
        );
        for format in [
            ResponseFormat::Text,
            ResponseFormat::JsonObject,
            ResponseFormat::JsonSchema,
            ResponseFormat::JsonObjectSchema,
        ] {
            for (max_tokens, temperature) in [(None, 0.0), (Some(9), 0.7)] {
                let config = OpenAiConfig {
                    response_format: format,
                    max_tokens,
                    temperature,
                    ..OpenAiConfig::default()
                };
                for schema in [None, Some(&schema)] {
                    assert_eq!(
                        body_text(&config, schema, &req, 0),
                        body(&config, schema, &req).to_string()
                    );
                }
            }
        }
        // What the tree held before the body was written without one: the key of every cached answer.
        let config = OpenAiConfig {
            model: "m".into(),
            ..OpenAiConfig::default()
        };
        assert_eq!(
            body_text(&config, None, &req, 0),
            r#"{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"system","content":"Say \"why\"."},{"role":"user","content":"Fix it\n\tnow é \u0001"},{"role":"assistant","content":"Looking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"run","arguments":"{\"cmd\": \"ls\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"},{"role":"assistant","content":"Then.","tool_calls":[{"id":"c2","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"assistant","content":"After the call."},{"role":"tool","tool_call_id":"c2","content":"text"},{"role":"assistant","content":"Done."}],"temperature":0.0}"#
        );
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut cases: Vec<String> = (0u32..0x80)
            .chain([0xe9, 0x2028, 0x1f600])
            .filter_map(char::from_u32)
            .map(String::from)
            .collect();
        // Every escape at every place of the eight-byte words, in texts of every length up to 40.
        let mut seed = 7u64;
        for len in 0..40 {
            for _ in 0..50 {
                let text: String = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        match (seed >> 33) % 12 {
                            0 => '"',
                            1 => '\\',
                            2 => '\n',
                            3 => char::from(((seed >> 40) % 0x20) as u8),
                            4 => 'é',
                            5 => '\u{7f}',
                            _ => char::from(b'a' + ((seed >> 40) % 26) as u8),
                        }
                    })
                    .collect();
                cases.push(text);
            }
        }
        cases.push("x".repeat(100) + "\"" + &"y".repeat(100));
        for case in &cases {
            let mut out = Vec::new();
            json_string(&mut out, case);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(case).unwrap(),
                "{case:?}"
            );
        }
    }

    #[test]
    fn a_body_hashed_as_it_is_written_has_the_hash_of_its_text() {
        let text = |n: usize| "line \"one\"\n".repeat(n);
        for n in [0, 1, 1_500, 5_000] {
            let req = LlmRequest {
                instructions: vec![text(n)],
                contents: vec![Item::user(text(n / 3)), Item::assistant("ok")],
            };
            let config = OpenAiConfig::default();
            let sent = body_text(&config, None, &req, 0);
            let mut whole = Sha256::new();
            whole.update(format!("{}\n{sent}", config.base_url));
            let mut hashing = Hashing::new(&config.base_url);
            write_body(&mut hashing, &config, None, &req);
            assert_eq!(hashing.finish(), (whole.finalize(), sent.len()), "{n}");
        }
        // One piece longer than the buffer, after a short one.
        let mut hashing = Hashing::new("u");
        let long = vec![b'z'; 40_000];
        hashing.put(b"ab");
        hashing.put(&long);
        hashing.put(b"c");
        let mut whole = Sha256::new();
        whole.update(b"u\nab");
        whole.update(&long);
        whole.update(b"c");
        assert_eq!(hashing.finish(), (whole.finalize(), 40_003));
    }

    #[test]
    fn the_body_asks_for_the_format_configured() {
        let req = LlmRequest::from_contents(vec![Item::user("q")]);
        let schema = ("grades".to_owned(), json!({"type": "object"}));
        let with = |format, schema: Option<&(String, Value)>| {
            let config = OpenAiConfig {
                response_format: format,
                max_tokens: Some(9),
                ..OpenAiConfig::default()
            };
            body(&config, schema, &req)
        };
        let text = with(ResponseFormat::Text, Some(&schema));
        assert!(text.get("response_format").is_none());
        assert_eq!(text["max_tokens"], 9);
        assert_eq!(
            with(ResponseFormat::JsonSchema, Some(&schema))["response_format"]["json_schema"]
                ["name"],
            "grades"
        );
        assert_eq!(
            with(ResponseFormat::JsonObjectSchema, Some(&schema))["response_format"]["schema"]
                ["type"],
            "object"
        );
        // A schema format without a schema asks for any JSON object.
        assert_eq!(
            with(ResponseFormat::JsonSchema, None)["response_format"],
            json!({"type": "json_object"})
        );
    }
}
