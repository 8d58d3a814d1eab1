//! OpenHands' text-based function calling, for models without native function calling: its
//! `fn_call_converter.convert_fncall_messages_to_non_fncall_messages`, with the converter's own texts shipped in
//! `assets/openhands/fn_call_prompts.json` (written from openhands-ai 0.62.0 by
//! `scripts/make_openhands_fixture.sh`). The tool descriptions are appended to the system prompt, the in-context
//! example wraps the first user message, a call is written as `<function=…><parameter=…>` text after the
//! assistant's, a result is a user message `EXECUTION RESULT of [name]:`, and no API tools are sent.

use std::sync::OnceLock;

use serde_json::Value;

/// The converter's texts.
struct Prompts {
    suffix_template: String,
    tool_names: serde_json::Map<String, Value>,
    examples: serde_json::Map<String, Value>,
    head: String,
    tail: String,
    example_suffix: String,
    patterns: Vec<String>,
}

fn prompts() -> &'static Prompts {
    static P: OnceLock<Prompts> = OnceLock::new();
    P.get_or_init(|| {
        let v: Value = serde_json::from_str(include_str!(
            "../../../../assets/openhands/fn_call_prompts.json"
        ))
        .expect("shipped OpenHands converter texts are JSON");
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        Prompts {
            suffix_template: s("system_prompt_suffix_template"),
            tool_names: v["tool_names"].as_object().cloned().unwrap_or_default(),
            examples: v["tool_examples"].as_object().cloned().unwrap_or_default(),
            head: s("example_head"),
            tail: s("example_tail"),
            example_suffix: s("example_suffix"),
            patterns: v["function_calling_patterns"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(str::to_lowercase))
                        .collect()
                })
                .unwrap_or_default(),
        }
    })
}

/// A glob (`*`, `?`) match, as Python's `fnmatch` on lowercased names.
fn glob(text: &str, pattern: &str) -> bool {
    let (t, p): (Vec<char>, Vec<char>) = (text.chars().collect(), pattern.chars().collect());
    let (mut ti, mut pi, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            ti += 1;
            pi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Whether OpenHands calls `model` with native function calling: `native_tool_calling` when the config sets
/// it, else whether the model matches OpenHands' function-calling patterns (`model_features.py`: a pattern
/// with a provider against the whole name, others against the name after the last `/`, an Ollama `:tag` and a
/// `-gguf` suffix removed).
pub(super) fn native(model: &str, native_tool_calling: Option<bool>) -> bool {
    if let Some(set) = native_tool_calling {
        return set;
    }
    let raw = model.trim().to_lowercase();
    let mut name = match raw.rsplit_once('/') {
        Some((_, base)) => base.split(':').next().unwrap_or(base).to_owned(),
        None => raw.clone(),
    };
    if let Some(n) = name.strip_suffix("-gguf") {
        name = n.to_owned();
    }
    prompts().patterns.iter().any(|p| {
        if p.contains('/') {
            glob(&raw, p)
        } else {
            glob(&name, p)
        }
    })
}

/// The tool descriptions appended to the system prompt (`convert_tools_to_description` in the template).
pub(super) fn system_suffix(tools: &[Value]) -> String {
    let mut d = String::new();
    for (i, tool) in tools.iter().enumerate() {
        let f = tool.get("function").unwrap_or(tool);
        let name = f["name"].as_str().unwrap_or_default();
        if i > 0 {
            d.push('\n');
        }
        d.push_str(&format!("---- BEGIN FUNCTION #{}: {name} ----\n", i + 1));
        d.push_str(&format!("Description: {}\n", py_str(&f["description"])));
        match f.get("parameters") {
            Some(params) => {
                d.push_str("Parameters:\n");
                let required: Vec<&str> = params["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let empty = serde_json::Map::new();
                let props = params["properties"].as_object().unwrap_or(&empty);
                for (j, (pname, info)) in props.iter().enumerate() {
                    let status = if required.contains(&pname.as_str()) {
                        "required"
                    } else {
                        "optional"
                    };
                    let ty = info.get("type").map_or_else(|| "string".to_owned(), py_str);
                    let mut desc = info
                        .get("description")
                        .map_or_else(|| "No description provided".to_owned(), py_str);
                    if let Some(values) = info.get("enum").and_then(Value::as_array) {
                        let values: Vec<String> =
                            values.iter().map(|v| format!("`{}`", py_str(v))).collect();
                        desc.push_str(&format!("\nAllowed values: [{}]", values.join(", ")));
                    }
                    d.push_str(&format!("  ({}) {pname} ({ty}, {status}): {desc}\n", j + 1));
                }
            }
            None => d.push_str("No parameters are required for this function.\n"),
        }
        d.push_str(&format!("---- END FUNCTION #{} ----\n", i + 1));
    }
    prompts().suffix_template.replace("{description}", &d)
}

/// The in-context example for the tools (`get_example_for_tools`), empty when none of its tools is there.
fn example(tools: &[Value]) -> String {
    let p = prompts();
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .collect();
    let has = |key: &str| {
        p.tool_names
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|n| names.contains(&n))
    };
    let part = |tool: &str, step: &str| {
        p.examples[tool][step]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let (bash, editor, browser, finish, edit) = (
        has("execute_bash"),
        has("str_replace_editor"),
        has("browser"),
        has("finish"),
        has("edit_file"),
    );
    if !(bash || editor || browser || finish || edit) {
        return String::new();
    }
    let mut e = p.head.clone();
    if bash {
        e += &part("execute_bash", "check_dir");
    }
    if editor {
        e += &part("str_replace_editor", "create_file");
    } else if edit {
        e += &part("edit_file", "create_file");
    }
    if bash {
        e += &part("execute_bash", "run_server");
    }
    if browser {
        e += &part("browser", "view_page");
    }
    if bash {
        e += &part("execute_bash", "kill_server");
    }
    if editor {
        e += &part("str_replace_editor", "edit_file");
    } else if edit {
        e += &part("edit_file", "edit_file");
    }
    if bash {
        e += &part("execute_bash", "run_server_again");
    }
    if finish {
        e += &part("finish", "example");
    }
    e += &p.tail;
    e.trim_start().to_owned()
}

/// The first user message wrapped in the in-context example (unchanged when the tools have none, or for
/// `openhands-lm` and `devstral`, which OpenHands sends without it).
pub(super) fn first_user(content: &str, tools: &[Value], model: &str) -> String {
    let e = example(tools);
    if e.is_empty() || model.contains("openhands-lm") || model.contains("devstral") {
        return content.to_owned();
    }
    format!("{e}{content}{}", prompts().example_suffix)
}

/// A call as text (`convert_tool_call_to_string`); `None` when its arguments are not a JSON object.
pub(super) fn call(name: &str, arguments: &str) -> Option<String> {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return None;
    };
    let mut s = format!("<function={name}>\n");
    for (k, v) in &args {
        let multiline = v.as_str().is_some_and(|t| t.contains('\n'));
        s.push_str(&format!("<parameter={k}>"));
        if multiline {
            s.push('\n');
        }
        s.push_str(&match v {
            Value::Array(_) | Value::Object(_) => py_json_dumps(v),
            other => py_str(other),
        });
        if multiline {
            s.push('\n');
        }
        s.push_str("</parameter>\n");
    }
    s.push_str("</function>");
    Some(s)
}

/// The assistant's message with its call written in: `content + "\n\n" + call`, leading space removed.
pub(super) fn assistant_with_call(content: &str, call: &str) -> String {
    format!("{content}\n\n{call}").trim_start().to_owned()
}

/// A tool's result as the user message it becomes.
pub(super) fn result(name: &str, content: &str) -> String {
    format!("EXECUTION RESULT of [{name}]:\n{content}")
}

/// A value as Python's `str()` prints it (`True`, `None`, `1.0`).
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            if f.fract() == 0.0 && f.abs() < 1e16 {
                format!("{f:.1}")
            } else {
                f.to_string()
            }
        }
        other => py_json_dumps(other),
    }
}

/// `json.dumps` with Python's defaults: `", "` and `": "` separators, non-ASCII escaped.
fn py_json_dumps(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(py_json_dumps).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    py_json_dumps(&Value::String(k.clone())),
                    py_json_dumps(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::String(s) => {
            let mut out = String::from("\"");
            for c in serde_json::to_string(s)
                .unwrap_or_default()
                .trim_matches('"')
                .chars()
            {
                if c.is_ascii() {
                    out.push(c);
                } else {
                    let mut buf = [0u16; 2];
                    for u in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
            }
            out.push('"');
            out
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_without_native_function_calling() {
        assert!(native("anthropic/claude-3-7-sonnet-20250219", None));
        assert!(native("gpt-4o-2024-08-06", None));
        assert!(!native(
            "openrouter/meta-llama/llama-3.3-70b-instruct",
            None
        ));
        assert!(!native("gpt-4o", Some(false)));
        assert!(native("ollama/qwen3-coder:30b", None));
    }

    #[test]
    fn a_call_as_text() {
        assert_eq!(
            call("execute_bash", r#"{"command": "ls\n-la", "timeout": 1.0, "flag": true, "xs": ["é"]}"#).unwrap(),
            "<function=execute_bash>\n<parameter=command>\nls\n-la\n</parameter>\n<parameter=timeout>1.0</parameter>\n<parameter=flag>True</parameter>\n<parameter=xs>[\"\\u00e9\"]</parameter>\n</function>"
        );
        assert!(glob("claude-3-5-sonnet-20241022", "claude-3-5-sonnet*"));
        assert!(!glob("gpt-4.1-mini", "gpt-4.1"));
    }
}
