//! A model's own tokenizer: a Hugging Face `tokenizer.json` (the `tokenizers` crate) and, optionally, the
//! model's chat template (a Jinja file, rendered with `minijinja` and Python's string methods as Hugging Face
//! renders it). Without a template, messages are counted with OpenAI's per-message accounting over the model's
//! tokens; with one, each message is the tokens of the template rendered around it alone, less those of an
//! empty conversation, so that a request's tokens are the reply priming (the template's beginning and generation
//! prompt) plus its messages' and its tools'. That is exact where the template renders each message on its own
//! (DeepSeek-V3.2's does, but for the end-of-turn token of an assistant turn whose text and tool calls ctxbench
//! holds as two items, and the wrapper around several results of one turn's parallel calls).

use std::path::Path;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::history::Item;

/// A model's tokenizer and chat template.
pub struct ModelTokenizer {
    tokenizer: tokenizers::Tokenizer,
    template: Option<Template>,
    name: String,
    /// Tokens of an empty conversation with the generation prompt: what every request costs besides its messages.
    reply: usize,
    /// Tokens of an empty conversation without it: what each message's count leaves out.
    empty: usize,
    /// What a message costs besides its content (the template's frame around an empty assistant message).
    overhead: usize,
    /// The first render that failed: every count after it is void, and [`ModelTokenizer::check`] says why.
    failure: OnceLock<Failure>,
}

/// A render of the chat template that failed: where and why, for [`Error::Template`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    file: String,
    line: Option<usize>,
    message: String,
    what: String,
}

impl Failure {
    fn error(&self) -> Error {
        Error::Template {
            file: self.file.clone(),
            line: self.line,
            message: self.message.clone(),
            what: self.what.clone(),
        }
    }
}

/// A chat template and the special-token strings it is rendered with.
struct Template {
    env: minijinja::Environment<'static>,
    /// The file it was read from, as errors name it (and the name it is registered under).
    file: String,
    bos: String,
    eos: String,
}

/// The OpenAI accounting the model's tokens are counted with when no template is given.
const PER_MESSAGE: usize = 3;

impl ModelTokenizer {
    /// Loads `tokenizer` (a `tokenizer.json`) and, when given, `template` (a Jinja chat template, or a
    /// `tokenizer_config.json` whose `chat_template`, `bos_token` and `eos_token` it takes).
    ///
    /// # Errors
    /// A file that cannot be read or parsed, naming it and what is wrong.
    pub fn load(tokenizer: &Path, template_file: Option<&Path>) -> Result<Self> {
        let tok = tokenizers::Tokenizer::from_file(tokenizer).map_err(|e| {
            Error::Config(format!(
                "cannot load the tokenizer '{}': {e} (give a Hugging Face tokenizer.json)",
                tokenizer.display()
            ))
        })?;
        let template = template_file
            .map(|path| Template::load(path, &tok))
            .transpose()?;
        let name = match template.as_ref().and(template_file) {
            Some(t) => format!("{} with {}", file_name(tokenizer), file_name(t)),
            None => file_name(tokenizer),
        };
        let mut model = Self {
            tokenizer: tok,
            template,
            name,
            reply: PER_MESSAGE,
            empty: 0,
            overhead: PER_MESSAGE,
            failure: OnceLock::new(),
        };
        if model.template.is_some() {
            let at_load = |f: Failure| f.error();
            model.empty = model.render_count(&[], &[], false).map_err(at_load)?;
            model.reply = model.render_count(&[], &[], true).map_err(at_load)?;
            model.overhead = model
                .render_count(&[json!({"role": "assistant", "content": ""})], &[], false)
                .map_err(at_load)?
                .saturating_sub(model.empty);
        }
        Ok(model)
    }

    /// What reports call it: the tokenizer file, and its template's.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tokens of `text`, special-token text included as the model reads it.
    #[must_use]
    pub fn count_text(&self, text: &str) -> usize {
        self.tokenizer
            .encode(text, false)
            .map_or(0, |e| e.get_ids().len())
    }

    /// Token ids of `text`.
    #[must_use]
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default()
    }

    /// Tokens every request costs besides its messages and tools: the template's beginning and generation
    /// prompt (OpenAI's 3 of reply priming without a template).
    #[must_use]
    pub fn reply_tokens(&self) -> usize {
        self.reply
    }

    /// Tokens a message costs besides its content.
    #[must_use]
    pub fn message_overhead(&self) -> usize {
        self.overhead
    }

    /// Tokens of a message of `role` saying `content`.
    #[must_use]
    pub fn count_message(&self, role: &str, content: &str) -> usize {
        if self.template.is_none() {
            return PER_MESSAGE + self.count_text(role) + self.count_text(content);
        }
        self.count_rendered(&json!({"role": role, "content": content}))
    }

    /// Tokens of one item, sent as the chat message it is.
    #[must_use]
    pub fn count_item(&self, item: &Item) -> usize {
        if self.template.is_none() {
            return match item {
                Item::ToolCall {
                    name, arguments, ..
                } => {
                    PER_MESSAGE
                        + self.count_text("assistant")
                        + self.count_text(arguments)
                        + self.count_text(name)
                        + super::TOKENS_PER_CALL
                }
                Item::Unrecorded { tokens, .. } => *tokens,
                other => self.count_message(other.wire_role(), other.text()),
            };
        }
        match item {
            Item::Unrecorded { tokens, .. } => *tokens,
            // What the reasoning adds to its assistant message (DeepSeek-V3.2's thinking encoding:
            // `REASONING</think>` before the reply); the message's own frame is counted with its text or call.
            Item::Reasoning { .. } => self
                .count_rendered(&message(item))
                .saturating_sub(self.overhead),
            other => self.count_rendered(&message(other)),
        }
    }

    /// Tokens `tools` add to a request: the template rendered with them, less without (a system message
    /// holds them where the template renders them into it); without a template, their JSON's tokens.
    #[must_use]
    pub fn count_tools(&self, tools: &[Value]) -> usize {
        if tools.is_empty() {
            return 0;
        }
        if self.template.is_none() {
            return self.count_text(&Value::from(tools.to_vec()).to_string());
        }
        let system = [json!({"role": "system", "content": ""})];
        let with = self.counted(self.render_count(&system, tools, false));
        let without = self.counted(self.render_count(&system, &[], false));
        with.saturating_sub(without)
    }

    /// The template's tokens around `message` alone, less an empty conversation's.
    fn count_rendered(&self, message: &Value) -> usize {
        self.counted(self.render_count(std::slice::from_ref(message), &[], false))
            .saturating_sub(self.empty)
    }

    /// A count, or 0 when the template failed to render: the failure is kept, and [`ModelTokenizer::check`]
    /// stops whatever counted with it.
    fn counted(&self, count: std::result::Result<usize, Failure>) -> usize {
        count.unwrap_or_else(|failure| {
            let _ = self.failure.set(failure);
            0
        })
    }

    /// An error naming the template's file, line and message when a render failed since it was loaded: every
    /// count made with it since then is void (a failed render counts nothing, never a request as 0 tokens).
    ///
    /// # Errors
    /// [`Error::Template`], for the first render that failed.
    pub fn check(&self) -> Result<()> {
        self.failure.get().map_or(Ok(()), |f| Err(f.error()))
    }

    /// Tokens of the template rendered over `messages` and `tools`.
    fn render_count(
        &self,
        messages: &[Value],
        tools: &[Value],
        generation: bool,
    ) -> std::result::Result<usize, Failure> {
        let t = self
            .template
            .as_ref()
            .expect("render_count is called with a template");
        Ok(self.count_text(&t.render(messages, tools, generation)?))
    }
}

impl Template {
    fn load(path: &Path, tokenizer: &tokenizers::Tokenizer) -> Result<Self> {
        let text = crate::bundled::read_to_string(path)?;
        // A tokenizer_config.json carries the template and the special tokens' strings.
        let (source, bos, eos) = match serde_json::from_str::<Value>(&text) {
            Ok(config) if config.is_object() => {
                let token = |key: &str| match &config[key] {
                    Value::String(s) => s.clone(),
                    Value::Object(o) => o
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    _ => String::new(),
                };
                let Some(source) = config["chat_template"].as_str() else {
                    return Err(Error::Config(format!(
                        "'{}' has no `chat_template` string (give the model's tokenizer_config.json, or its \
                         template as a Jinja file)",
                        path.display()
                    )));
                };
                (source.to_owned(), token("bos_token"), token("eos_token"))
            }
            _ => {
                let (bos, eos) = special_tokens(tokenizer);
                (text, bos, eos)
            }
        };
        let mut env = minijinja::Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // Hugging Face's `tojson` is Python's json.dumps: ", " and ": " between items, non-ASCII kept.
        env.add_filter("tojson", |v: minijinja::Value| -> String {
            py_json(&serde_json::to_value(&v).unwrap_or(Value::Null))
        });
        // As Hugging Face registers it (transformers' chat template utilities): the template stops with its
        // own message.
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    message,
                ))
            },
        );
        let file = file_name(path);
        env.add_template_owned(file.clone(), source).map_err(|e| {
            Error::Config(format!(
                "'{}' is not a chat template minijinja can read: {e}",
                path.display()
            ))
        })?;
        Ok(Self {
            env,
            file,
            bos,
            eos,
        })
    }

    fn render(
        &self,
        messages: &[Value],
        tools: &[Value],
        generation: bool,
    ) -> std::result::Result<String, Failure> {
        let failure = |e: &minijinja::Error| Failure {
            file: self.file.clone(),
            line: e.line(),
            message: e
                .detail()
                .map_or_else(|| e.kind().to_string(), str::to_owned),
            what: rendering(messages, tools),
        };
        let template = self.env.get_template(&self.file).map_err(|e| failure(&e))?;
        template
            .render(minijinja::context! {
                messages => minijinja::Value::from(minijinja::value::Serde(messages)),
                tools => minijinja::Value::from(minijinja::value::Serde(tools)),
                bos_token => self.bos.clone(),
                eos_token => self.eos.clone(),
                add_generation_prompt => generation,
            })
            .map_err(|e| failure(&e))
    }
}

/// What a render was of, for its error: the message's role (`a tool message`), the tool schemas, or an empty
/// conversation.
fn rendering(messages: &[Value], tools: &[Value]) -> String {
    match messages.first() {
        _ if !tools.is_empty() => format!("the tool schemas ({})", tools.len()),
        Some(m) => format!(
            "a message of role `{}`{}",
            m.get("role").and_then(Value::as_str).unwrap_or(""),
            if m.get("tool_calls").is_some() {
                " with a tool call"
            } else {
                ""
            }
        ),
        None => "an empty conversation".to_owned(),
    }
}

/// The beginning- and end-of-sequence strings of `tokenizer`'s special tokens, by their usual names (for a
/// Jinja template given without its tokenizer_config.json).
fn special_tokens(tokenizer: &tokenizers::Tokenizer) -> (String, String) {
    let added = tokenizer.get_added_tokens_decoder();
    let find = |names: &[&str]| {
        added
            .values()
            .filter(|t| t.special)
            .find(|t| names.iter().any(|n| t.content.contains(n)))
            .map(|t| t.content.clone())
            .unwrap_or_default()
    };
    (
        find(&[
            "begin▁of▁sentence",
            "begin_of_text",
            "<s>",
            "<|startoftext|>",
        ]),
        find(&["end▁of▁sentence", "<|endoftext|>", "</s>", "<|eot_id|>"]),
    )
}

/// An item as the chat message the template renders (`{role, content, tool_calls?, tool_call_id?}`), the
/// arguments of a tool call as the JSON object they are where they parse as one.
fn message(item: &Item) -> Value {
    match item {
        Item::Message { role, content } => json!({"role": role.as_str(), "content": &**content}),
        Item::ToolCall {
            id,
            name,
            arguments,
        } => {
            let args = serde_json::from_str::<Value>(arguments)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| Value::from(&**arguments));
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": &**id, "type": "function", "function": {"name": &**name, "arguments": args}}
            ]})
        }
        Item::ToolResult {
            call_id,
            name,
            content,
            ..
        } => {
            json!({"role": "tool", "tool_call_id": &**call_id, "name": &**name, "content": &**content})
        }
        Item::Observation { content, .. } => json!({"role": "user", "content": &**content}),
        Item::Reasoning { content, .. } => {
            json!({"role": "assistant", "content": "", "reasoning_content": &**content})
        }
        Item::Unrecorded { .. } => json!({"role": "system", "content": ""}),
    }
}

/// Python's `json.dumps(v, ensure_ascii=False)`: `", "` and `": "` separators, keys in their order.
#[must_use]
pub fn py_json(v: &Value) -> String {
    struct Python;
    impl serde_json::ser::Formatter for Python {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
        ) -> std::io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Python);
    if v.serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word-level tokenizer.json: every word and every run of punctuation one token, `<s>` a special token.
    fn words(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("tokenizer.json");
        let json = json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false,
                              "rstrip": false, "normalized": false, "special": true}],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"<s>": 0, "[UNK]": 1}, "unk_token": "[UNK]"}
        });
        std::fs::write(&path, json.to_string()).unwrap();
        path
    }

    /// Counted by hand: `<|user|>hello world` is `<|`, `user`, `|>`, `hello`, `world`; an empty conversation
    /// is `<s>` (1), with the generation prompt `<s><|assistant|>` (4). A request is then 4 + its messages.
    #[test]
    fn a_template_counts_each_message_in_its_frame() {
        let dir = tempfile::tempdir().unwrap();
        let tok = words(dir.path());
        let template = dir.path().join("chat.jinja");
        std::fs::write(
            &template,
            "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\
             {% if m.tool_calls %}{{ m.tool_calls[0].function.arguments | tojson }}{% endif %}{% endfor %}\
             {% if tools %}{{ tools | tojson }}{% endif %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
        )
        .unwrap();
        let m = ModelTokenizer::load(&tok, Some(&template)).unwrap();
        assert_eq!(m.name(), "tokenizer.json with chat.jinja");
        assert_eq!((m.empty, m.reply_tokens()), (1, 4));
        assert_eq!(m.count_message("user", "hello world"), 5);
        // `<|assistant|>{"cmd": "ls"}`, the arguments as Python writes them: `<|`, `assistant`, `|>{"`, `cmd`,
        // `":`, `"`, `ls`, `"}`.
        let call = Item::tool_call("c1", "bash", r#"{"cmd":"ls"}"#);
        assert_eq!(m.count_item(&call), 8);
        assert_eq!(py_json(&json!({"a": [1, "é"]})), r#"{"a": [1, "é"]}"#);
        // Tools: the template with them less without, around an empty system message: `<|system|>[{"name":
        // "t"}]` is `<|`, `system`, `|>[{"`, `name`, `":`, `"`, `t`, `"}]` against `<|`, `system`, `|>`.
        let tools = [json!({"name": "t"})];
        assert_eq!(m.count_tools(&tools), 5);
        // Without a template, OpenAI's accounting over the model's tokens.
        let plain = ModelTokenizer::load(&tok, None).unwrap();
        assert_eq!(plain.count_message("user", "hello world"), 3 + 1 + 2);
        assert_eq!(plain.reply_tokens(), 3);
    }

    /// A template that raises on tool messages (`raise_exception`, as Hugging Face registers it): a user message
    /// counts, a tool result stops the count with the file, the line and the template's own message, and
    /// every count after it stands void until checked.
    #[test]
    fn a_template_that_fails_stops_the_count_with_its_file_line_and_message() {
        let dir = tempfile::tempdir().unwrap();
        let tok = words(dir.path());
        let template = dir.path().join("strict.jinja");
        std::fs::write(
            &template,
            "{{ bos_token }}{% for m in messages %}\n             {% if m.role == 'tool' %}{{ raise_exception('tool messages are not supported') }}{% endif %}\n             <|{{ m.role }}|>{{ m.content }}{% endfor %}",
        )
        .unwrap();
        let m = ModelTokenizer::load(&tok, Some(&template)).unwrap();
        // `<|user|>hello` is `<|`, `user`, `|>`, `hello`.
        assert_eq!(m.count_message("user", "hello"), 4);
        assert!(m.check().is_ok());
        let result = Item::tool_result("c1", "ls", "a.txt");
        assert_eq!(m.count_item(&result), 0, "a failed render counts nothing");
        let e = m.check().unwrap_err();
        assert!(
            matches!(&e, Error::Template { file, line: Some(2), message, what }
                if file == "strict.jinja" && message == "tool messages are not supported"
                    && what == "a message of role `tool`"),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(
                "the chat template 'strict.jinja' failed to render at line 2: tool messages are not supported"
            ),
            "{text}"
        );
        // The first failure is the one said, whatever counted after it.
        let _ = m.count_message("user", "again");
        assert_eq!(m.check().unwrap_err().to_string(), text);
        // One that fails on an empty conversation fails at load, naming the file.
        let broken = dir.path().join("broken.jinja");
        std::fs::write(&broken, "{{ raise_exception('no conversation') }}").unwrap();
        let e = ModelTokenizer::load(&tok, Some(&broken)).err().unwrap();
        assert!(
            e.to_string().starts_with(
                "the chat template 'broken.jinja' failed to render at line 1: no conversation"
            ),
            "{e}"
        );
    }

    /// A template without its tokenizer, or one that does not parse, is refused naming the file.
    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let tok = words(dir.path());
        let bad = dir.path().join("bad.jinja");
        std::fs::write(&bad, "{% for %}").unwrap();
        let e = ModelTokenizer::load(&tok, Some(&bad))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("bad.jinja"), "{e}");
        let e = ModelTokenizer::load(&dir.path().join("none.json"), None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("none.json") && e.contains("tokenizer.json"),
            "{e}"
        );
    }
}
