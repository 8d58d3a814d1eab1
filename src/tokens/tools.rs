//! Tool definitions as OpenAI's chat models are given them, and the tokens they add to a request.
//!
//! ## Accounting
//! The API does not send the JSON schemas to the model: it renders them as TypeScript declarations in a
//! `namespace functions { … }` block of the system prompt. The rendering and the overheads below are those of
//! hmarr/openai-chat-tokens (MIT), which were inferred from, and checked against, the API's `prompt_tokens`
//! (its test vectors are pinned in this module's tests):
//! - the block: `namespace functions {`, a blank line, then for each function its description as a `//`
//!   comment, `type NAME = (_: { … }) => any;` (or `() => any;` without parameters) and a blank line, then
//!   `} // namespace functions`; each parameter on a line of its own (`name: type,`, or `name?: type,` when not
//!   required) after its description comment; strings, numbers, booleans, nulls, enums (`"a" | "b"`), arrays
//!   (`type[]`) and nested objects (indented by two spaces per level);
//! - the block's tokens plus 9;
//! - 4 fewer when the request has a system message (the block joins it instead of opening one), and the first
//!   system message counted with a trailing newline.
//!
//! A parameter of a type the rendering does not know (`anyOf`, a missing `type`) is rendered as `any`. Tools
//! are given as the provider APIs take them: `{"type": "function", "function": {…}}`, a bare function
//! `{name, description, parameters}`, or Anthropic's `{name, description, input_schema}`.

use serde_json::{Map, Value};

use super::Tokenizer;

/// Tokens the tool definitions add to a request beyond their rendered block.
pub const TOOLS_OVERHEAD: usize = 9;
/// Tokens the definitions add fewer when the request already has a system message.
pub const SYSTEM_DISCOUNT: usize = 4;

/// The function of a tool definition: its name, description and parameter schema.
fn function(tool: &Value) -> Option<(&str, Option<&str>, Option<&Value>)> {
    let f = tool.get("function").unwrap_or(tool);
    let name = f.get("name")?.as_str()?;
    let description = f.get("description").and_then(Value::as_str);
    let parameters = f.get("parameters").or_else(|| f.get("input_schema"));
    Some((name, description, parameters))
}

/// The `namespace functions` block the model is given for `tools` (definitions without a name are left out).
#[must_use]
pub fn render(tools: &[Value]) -> String {
    let mut lines = vec!["namespace functions {".to_owned(), String::new()];
    for (name, description, parameters) in tools.iter().filter_map(function) {
        if let Some(d) = description.filter(|d| !d.is_empty()) {
            lines.push(format!("// {d}"));
        }
        match parameters
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object)
            .filter(|p| !p.is_empty())
        {
            Some(_) => {
                lines.push(format!("type {name} = (_: {{"));
                lines.push(properties(parameters.unwrap_or(&Value::Null), 0));
                lines.push("}) => any;".to_owned());
            }
            None => lines.push(format!("type {name} = () => any;")),
        }
        lines.push(String::new());
    }
    lines.push("} // namespace functions".to_owned());
    lines.join("\n")
}

/// The properties of an object schema, one line each (after its description), indented by `indent`.
fn properties(object: &Value, indent: usize) -> String {
    let empty = Map::new();
    let props = object
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut lines = Vec::new();
    for (name, param) in props {
        if let Some(d) = param.get("description").and_then(Value::as_str) {
            if !d.is_empty() {
                lines.push(format!("// {d}"));
            }
        }
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        lines.push(format!("{name}{optional}: {},", type_of(param, indent)));
    }
    let pad = " ".repeat(indent);
    lines
        .iter()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A parameter's type as TypeScript.
fn type_of(param: &Value, indent: usize) -> String {
    let listed = |quote: bool| {
        param.get("enum").and_then(Value::as_array).map(|values| {
            values
                .iter()
                .map(|v| match v {
                    Value::String(s) if quote => format!("\"{s}\""),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" | ")
        })
    };
    match param.get("type").and_then(Value::as_str) {
        Some("string") => listed(true).unwrap_or_else(|| "string".into()),
        Some("number" | "integer") => listed(false).unwrap_or_else(|| "number".into()),
        Some("boolean") => "boolean".into(),
        Some("null") => "null".into(),
        Some("object") => format!("{{\n{}\n}}", properties(param, indent + 2)),
        Some("array") => match param.get("items") {
            Some(items) => format!("{}[]", type_of(items, indent)),
            None => "any[]".into(),
        },
        _ => "any".into(),
    }
}

impl Tokenizer {
    /// Tokens `tools` add to a request without a system message: the rendered block and its overhead (0
    /// without tools); at the tokenizer's k, scaled as one block.
    #[must_use]
    pub fn count_tools(&self, tools: &[Value]) -> usize {
        let own = if let Some(m) = self.model() {
            m.count_tools(tools)
        } else if tools.is_empty() {
            0
        } else {
            self.own_text(&render(tools)) + TOOLS_OVERHEAD
        };
        self.scaled(own)
    }

    /// Tokens tools of [`Tokenizer::count_tools`] `tools` add to a request whose first system message is
    /// `first_system` (`None`: it has none); at the tokenizer's k, what the system message changes of them is
    /// scaled as one figure.
    #[must_use]
    pub fn tools_in_request(&self, tools: usize, first_system: Option<&str>) -> usize {
        match first_system {
            _ if tools == 0 => 0,
            // A template renders them as it does whatever the system message says.
            _ if self.model().is_some() => tools,
            None => tools,
            Some(text) => {
                let padded = self.own_text(&format!("{text}\n"));
                let less = SYSTEM_DISCOUNT + self.own_text(text);
                if self.k().is_none() {
                    (tools + padded).saturating_sub(less)
                } else if padded >= less {
                    tools + self.scaled(padded - less)
                } else {
                    tools.saturating_sub(self.scaled(less - padded))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tokens::{Backend, Encoding, TOKENS_PER_REPLY};
    use crate::Item;

    /// hmarr/openai-chat-tokens' test vectors (gpt-3.5-turbo, cl100k_base; the last one checked against the
    /// API): the prompt tokens of messages with functions.
    #[test]
    fn prompt_tokens_of_the_published_vectors() {
        let tok = Tokenizer::new(Encoding::Cl100kBase, Backend::Bpe).unwrap();
        let user = |t: &str| Item::user(t);
        let f = |v: Value| vec![v];
        let cases: Vec<(Vec<Item>, Vec<Value>, usize)> = vec![
            (
                vec![user("hello")],
                f(json!({"name": "foo", "parameters": {"type": "object", "properties": {}}})),
                31,
            ),
            (
                vec![user("hello")],
                f(
                    json!({"name": "foo", "description": "Do a foo", "parameters": {"type": "object", "properties": {}}}),
                ),
                36,
            ),
            (
                vec![user("hello")],
                f(json!({"name": "bing_bong", "description": "Do a bing bong",
                         "parameters": {"type": "object", "properties": {"foo": {"type": "string"}}}})),
                49,
            ),
            (
                vec![user("hello")],
                f(json!({"name": "bing_bong", "description": "Do a bing bong",
                         "parameters": {"type": "object", "properties": {
                             "foo": {"type": "string"},
                             "bar": {"type": "number", "description": "A number"}}}})),
                57,
            ),
            (
                vec![user("hello")],
                f(json!({"name": "bing_bong", "description": "Do a bing bong",
                         "parameters": {"type": "object", "properties": {
                             "foo": {"type": "object", "properties": {
                                 "bar": {"type": "string", "enum": ["a", "b", "c"]},
                                 "baz": {"type": "boolean"}}}}}})),
                68,
            ),
            (
                vec![Item::system("Hello"), user("Hi there")],
                f(json!({"name": "do_stuff", "parameters": {"type": "object", "properties": {}}})),
                35,
            ),
            (
                vec![Item::system("Hello:"), user("Hi there")],
                f(json!({"name": "do_stuff", "parameters": {"type": "object", "properties": {}}})),
                35,
            ),
            (
                vec![
                    Item::system("Hello:"),
                    Item::system("Hello"),
                    user("Hi there"),
                ],
                f(json!({"name": "do_stuff", "parameters": {"type": "object", "properties": {}}})),
                40,
            ),
            (
                vec![user("hello")],
                f(
                    json!({"type": "function", "function": {"name": "get_recipe", "parameters": {
                    "type": "object",
                    "required": ["ingredients", "instructions", "time_to_cook"],
                    "properties": {
                        "ingredients": {"type": "array", "items": {
                            "type": "object", "required": ["name", "unit", "amount"],
                            "properties": {
                                "name": {"type": "string"},
                                "unit": {"enum": ["grams", "ml", "cups", "pieces", "teaspoons"], "type": "string"},
                                "amount": {"type": "number"}}}},
                        "instructions": {"type": "array", "items": {"type": "string"},
                                         "description": "Steps to prepare the recipe (no numbering)"},
                        "time_to_cook": {"type": "number",
                                         "description": "Total time to prepare the recipe in minutes"}}}}}),
                ),
                106,
            ),
        ];
        for (messages, tools, expected) in cases {
            let first_system = messages.iter().find_map(|i| match i {
                Item::Message {
                    role: crate::Role::System,
                    content,
                } => Some(&**content),
                _ => None,
            });
            let counted = TOKENS_PER_REPLY
                + messages.iter().map(|m| tok.count_item(m)).sum::<usize>()
                + tok.tools_in_request(tok.count_tools(&tools), first_system);
            assert_eq!(counted, expected, "{tools:?}");
        }
    }

    /// hmarr/openai-chat-tokens' vectors of a call the model made (`function_call`): its name and arguments,
    /// with 3 tokens of its own, in a message of its own.
    #[test]
    fn prompt_tokens_of_a_call() {
        let tok = Tokenizer::new(Encoding::Cl100kBase, Backend::Bpe).unwrap();
        for (arguments, expected) in [
            ("{\"foo\": \"bar\", \"baz\": 1.5}", 26),
            ("{\"foo\":\"bar\", \"baz\":\n\n 1.5}", 25),
        ] {
            let call = Item::tool_call("c1", "do_stuff", arguments);
            assert_eq!(
                TOKENS_PER_REPLY + tok.count_item(&call),
                expected,
                "{arguments}"
            );
        }
    }

    #[test]
    fn renders_the_namespace_block() {
        let tools = [
            json!({"type": "function", "function": {
            "name": "bash", "description": "Run a command.",
            "parameters": {"type": "object", "required": ["command"],
                           "properties": {"command": {"type": "string", "description": "The command"},
                                          "timeout": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}}}),
            json!({"name": "ls", "input_schema": {"type": "object", "properties": {}}}),
            json!({"description": "no name"}),
        ];
        assert_eq!(
            render(&tools),
            "namespace functions {\n\n// Run a command.\ntype bash = (_: {\n// The command\ncommand: string,\n\
             timeout?: any,\n}) => any;\n\ntype ls = () => any;\n\n} // namespace functions"
        );
        let tok = Tokenizer::shared_default().unwrap();
        assert_eq!(tok.count_tools(&[]), 0);
        assert_eq!(tok.tools_in_request(0, Some("sys")), 0);
    }
}
