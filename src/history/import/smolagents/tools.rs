//! A ToolCallingAgent's tool schemas, rebuilt from the tool list its system prompt renders:
//!
//! ```text
//! - web_search: Performs a google web search for your query then returns a string of the top search results.
//!     Takes inputs: {'query': {'type': 'string', 'description': 'The search query to perform.'}}
//!     Returns an output of type: string
//! ```
//!
//! `Takes inputs` is the repr of the tool's `inputs` dict (a Python literal); the schema is what smolagents'
//! `get_tool_json_schema` builds from it.

use serde_json::{json, Map, Value};

/// A Python literal (the repr of a dict of str, bool, None, numbers and lists) as JSON, or `None` when the text
/// is not one.
pub(super) fn python_literal(text: &str) -> Option<Value> {
    let mut p = Parser {
        chars: text.chars().collect(),
        at: 0,
    };
    let v = p.value()?;
    p.space();
    (p.at == p.chars.len()).then_some(v)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn space(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.space();
        let ok = self.chars.get(self.at) == Some(&c);
        self.at += usize::from(ok);
        ok
    }

    fn value(&mut self) -> Option<Value> {
        self.space();
        match *self.chars.get(self.at)? {
            '{' => self.items('{', '}', true),
            '[' => self.items('[', ']', false),
            '(' => self.items('(', ')', false),
            q @ ('\'' | '"') => self.string(q).map(Value::String),
            _ => self.word(),
        }
    }

    /// A dict (`keyed`) or a list, from `open` to `close`.
    fn items(&mut self, open: char, close: char, keyed: bool) -> Option<Value> {
        self.eat(open);
        let (mut map, mut list) = (Map::new(), Vec::new());
        while !self.eat(close) {
            if keyed {
                let key = match self.value()? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                if !self.eat(':') {
                    return None;
                }
                map.insert(key, self.value()?);
            } else {
                list.push(self.value()?);
            }
            if !self.eat(',') && !self.eat(close) {
                return None;
            } else if self.chars.get(self.at - 1) == Some(&close) {
                break;
            }
        }
        Some(if keyed {
            Value::Object(map)
        } else {
            Value::Array(list)
        })
    }

    fn string(&mut self, quote: char) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let c = *self.chars.get(self.at)?;
            self.at += 1;
            match c {
                '\\' => {
                    let e = *self.chars.get(self.at)?;
                    self.at += 1;
                    out.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                }
                c if c == quote => return Some(out),
                c => out.push(c),
            }
        }
    }

    fn word(&mut self) -> Option<Value> {
        let start = self.at;
        while self
            .chars
            .get(self.at)
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
        {
            self.at += 1;
        }
        let word: String = self.chars[start..self.at].iter().collect();
        match word.as_str() {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" => Some(Value::Null),
            w => serde_json::from_str::<serde_json::Number>(w)
                .ok()
                .map(Value::Number),
        }
    }
}

/// The tool schemas a ToolCallingAgent sent, from its system prompt's tool list; empty when there is none.
pub(super) fn from_system_prompt(prompt: &str) -> Vec<Value> {
    let Some(start) = prompt.find("You only have access to these tools:\n") else {
        return Vec::new();
    };
    let list = &prompt[start + "You only have access to these tools:\n".len()..];
    let mut tools = Vec::new();
    let mut rest = list;
    while let Some(entry) = rest.strip_prefix("- ") {
        let Some((name, after)) = entry.split_once(": ") else {
            break;
        };
        let Some((description, after)) = after.split_once("\n    Takes inputs: ") else {
            break;
        };
        let Some((inputs, after)) = after.split_once("\n    Returns an output of type: ") else {
            break;
        };
        let Some(Value::Object(mut properties)) = python_literal(inputs) else {
            break;
        };
        let mut required = Vec::new();
        for (key, p) in &mut properties {
            if p.get("type").and_then(Value::as_str) == Some("any") {
                p["type"] = "string".into();
            }
            if p.get("nullable") != Some(&Value::Bool(true)) {
                required.push(Value::String(key.clone()));
            }
        }
        tools.push(json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {"type": "object", "properties": properties, "required": required},
            },
        }));
        rest = after.split_once('\n').map_or("", |(_, r)| r);
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs_become_json() {
        let v = python_literal(
            r#"{'code': {'type': 'string', 'description': "Only ['re', 'math']. It's fine.", 'nullable': True}, 'n': [1, 2.5, None, False]}"#,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"code": {"type": "string", "description": "Only ['re', 'math']. It's fine.", "nullable": true},
                   "n": [1, 2.5, null, false]})
        );
        assert_eq!(python_literal("{'a': }"), None);
    }

    #[test]
    fn tools_as_get_tool_json_schema_builds_them() {
        let prompt = "x\nYou only have access to these tools:\n- web_search: Searches.\n    Takes inputs: {'query': {'type': 'string', 'description': 'Q.'}, 'filter_year': {'type': 'integer', 'description': 'Y.', 'nullable': True}}\n    Returns an output of type: string\n- final_answer: Provides a final answer.\n    Takes inputs: {'answer': {'type': 'any', 'description': 'The answer'}}\n    Returns an output of type: any\n\nHere are the rules";
        let tools = from_system_prompt(prompt);
        assert_eq!(tools.len(), 2);
        assert_eq!(
            tools[0]["function"]["parameters"]["required"],
            json!(["query"])
        );
        assert_eq!(
            tools[1]["function"]["parameters"]["properties"]["answer"]["type"],
            "string"
        );
        assert_eq!(
            tools[1]["function"]["description"],
            "Provides a final answer."
        );
    }
}
