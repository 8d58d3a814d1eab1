//! Open probes an imported trace supports: questions with no single string answer, each with a reference
//! answer taken from what the trace records, graded by the judge (see [`crate::llm::judge`]).
//!
//! - **artifact**, after the last item: which files the agent changed and how — the files its editing tool
//!   calls name (a tool whose name has a word such as `edit`, `write`, `create`, `replace`), each with the tool
//!   and its command;
//! - **continuation**, after the last item: the last failure the agent saw — the last line that reports a
//!   failure (`FAILED …`, `KeyError: …`, `error[E0425]: …`) in the last tool result that has one, and the
//!   call that produced it;
//! - **continuation**, at the last call point: what the agent does next — its recorded last turn (its text, its
//!   tool calls).
//!
//! A probe whose reference names things (paths, identifiers, numbers: its identifying tokens) none of which the
//! history before it holds is left out: no request could answer it, whatever a strategy kept (a greeting's
//! reply, a turn that invents a value).

use crate::history::{turn_end, Episode, FindingKind, Item, Probe};

/// Tool names that change a file (matched as words of the name, case-insensitively).
const EDIT_WORDS: [&str; 10] = [
    "edit", "write", "create", "replace", "patch", "apply", "insert", "append", "save", "rename",
];

/// Argument keys that name the file a tool changes.
const PATH_KEYS: [&str; 6] = [
    "path",
    "file_path",
    "file",
    "filename",
    "target_file",
    "notebook_path",
];

/// How a line that reports a failure starts, as test runners, compilers and shells print it.
const FAILURE_STARTS: [&str; 7] = [
    "FAILED",
    "FAIL:",
    "ERROR",
    "Traceback",
    "error:",
    "error[",
    "fatal:",
];

/// Whether a line of a tool's output reports a failure: it starts with one of [`FAILURE_STARTS`], or with an
/// exception's name and a colon (`KeyError: 'x'`, `Error: payment declined`). A line of code that mentions an
/// error (`except KeyError:` in a file view, `console.error(...)`) does not.
fn reports_failure(line: &str) -> bool {
    let line = line.trim_start();
    if FAILURE_STARTS.iter().any(|s| line.starts_with(s)) {
        return true;
    }
    line.split_once(':').is_some_and(|(head, _)| {
        !head.is_empty()
            && !head.contains(char::is_whitespace)
            && (head.ends_with("Error") || head.ends_with("Exception"))
    })
}

/// Whether the reference of a probe asked after `items` is grounded in them: it names nothing (its content
/// words are what a judge compares), or the items hold one of the things it names.
fn grounded(items: &[Item], reference: &str) -> bool {
    let needle = crate::history::evidence::Needle::new(reference);
    if needle.keys.is_empty() {
        return true;
    }
    let keys = crate::history::evidence::identifying_tokens(reference);
    let history: Vec<String> = items.iter().map(Item::searchable_text).collect();
    crate::history::evidence::token_share(&keys, &history.join("\n")) > 0.0
}

/// Adds the open probes the trace supports to `ep.probes` (see the module's documentation).
pub fn add(ep: &mut Episode) {
    let before = ep.probes.len();
    add_all(ep);
    let items = &ep.items;
    let mut at = 0;
    ep.probes.retain(|p| {
        at += 1;
        at <= before
            || p.reference
                .as_deref()
                .is_none_or(|r| grounded(&items[..=p.after_item.min(items.len() - 1)], r))
    });
}

/// Every open probe the trace supports, grounded or not.
fn add_all(ep: &mut Episode) {
    let Some(last_item) = ep.items.len().checked_sub(1) else {
        return;
    };
    if let Some(edits) = files_changed(&ep.items) {
        ep.probes.push(Probe {
            id: "open-artifacts".into(),
            after_item: last_item,
            question: "Which files has the agent changed so far, and how?".into(),
            answers: Vec::new(),
            finding: None,
            kind: FindingKind::Artifact,
            reference: Some(edits),
        });
    }
    if let Some(failure) = last_failure(&ep.items) {
        ep.probes.push(Probe {
            id: "open-failure".into(),
            after_item: last_item,
            question: "What was the last error or failure the agent saw, and from what command?"
                .into(),
            answers: Vec::new(),
            finding: None,
            kind: FindingKind::Continuation,
            reference: Some(failure),
        });
    }
    // The last turn the recorded agent took, asked before it: its next step.
    let Some(&last) = ep.call_points().last() else {
        return;
    };
    let end = turn_end(&ep.items, last);
    let next: Vec<String> = ep.items[last..end]
        .iter()
        .map(|i| match i {
            Item::ToolCall {
                name, arguments, ..
            } => format!("call {name} with {}", clip(arguments, 200)),
            other => clip(other.text(), 300),
        })
        .filter(|t| !t.trim().is_empty())
        .collect();
    if last > 0 && !next.is_empty() {
        ep.probes.push(Probe {
            id: "open-next".into(),
            after_item: last - 1,
            question: "What is the next thing to do, and why?".into(),
            answers: Vec::new(),
            finding: None,
            kind: FindingKind::Continuation,
            reference: Some(next.join("; ")),
        });
    }
}

/// The files the editing tool calls name, each with the tool and its command, in order, once each.
fn files_changed(items: &[Item]) -> Option<String> {
    let mut edits: Vec<String> = Vec::new();
    for item in items {
        let Item::ToolCall {
            name, arguments, ..
        } = item
        else {
            continue;
        };
        let lower = name.to_lowercase();
        let edits_files = lower
            .split(|c: char| !c.is_ascii_alphabetic())
            .any(|w| EDIT_WORDS.iter().any(|e| w.starts_with(e)));
        if !edits_files {
            continue;
        }
        let Ok(args) = serde_json::from_str::<serde_json::Value>(arguments) else {
            continue;
        };
        let Some(path) = PATH_KEYS
            .iter()
            .find_map(|k| args.get(*k).and_then(serde_json::Value::as_str))
        else {
            continue;
        };
        let command = args.get("command").and_then(serde_json::Value::as_str);
        // An editor's read-only commands change nothing.
        if command.is_some_and(|c| ["view", "read", "list", "search", "find"].contains(&c)) {
            continue;
        }
        let how = match command {
            Some(command) => format!("{name} {command}"),
            None => name.to_string(),
        };
        let entry = format!("{path} ({how})");
        if !edits.contains(&entry) {
            edits.push(entry);
        }
    }
    (!edits.is_empty()).then(|| edits.join("; "))
}

/// The last failure line of the last tool result that has one, with the call that produced it.
fn last_failure(items: &[Item]) -> Option<String> {
    items.iter().rev().find_map(|item| {
        let Item::ToolResult {
            call_id, content, ..
        } = item
        else {
            return None;
        };
        let lines: Vec<&str> = content.lines().collect();
        let at = lines.iter().rposition(|l| reports_failure(l))?;
        // A bare header (`ERRORS:`) is read with the first line under it.
        let line = match lines[at].trim() {
            header if header.ends_with(':') && !header.contains(' ') => lines[at + 1..]
                .iter()
                .find(|l| !l.trim().is_empty())
                .map_or_else(
                    || header.to_owned(),
                    |next| format!("{header} {}", next.trim()),
                ),
            other => other.to_owned(),
        };
        let line = line.as_str();
        let call = items.iter().find_map(|i| match i {
            Item::ToolCall {
                id,
                name,
                arguments,
            } if id == call_id => Some(format!("{name} {}", clip(arguments, 200))),
            _ => None,
        });
        Some(match call {
            Some(call) => format!("{} (from {call})", clip(line, 300)),
            None => clip(line, 300),
        })
    })
}

/// The first `max` characters of `text`, on one line.
fn clip(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::validate::check_episode;

    #[test]
    fn open_probes_ask_for_the_files_changed_the_last_failure_and_the_next_step() {
        let mut ep = Episode {
            id: "e".into(),
            source: "t".into(),
            items: vec![
                Item::user("fix it"),
                Item::tool_call(
                    "1",
                    "str_replace_editor",
                    r#"{"command": "view", "path": "/repo/a.py"}"#,
                ),
                Item::tool_result("1", "str_replace_editor", "..."),
                Item::tool_call(
                    "2",
                    "str_replace_editor",
                    r#"{"command": "str_replace", "path": "/repo/a.py"}"#,
                ),
                Item::tool_result("2", "str_replace_editor", "ok"),
                Item::tool_call("3", "bash", r#"{"command": "pytest"}"#),
                Item::tool_result(
                    "3",
                    "bash",
                    "Traceback (most recent call last):\n  ...\nKeyError: 'x'\n\
                     FAILED tests/test_a.py::test_x - KeyError: 'x'\n1 failed",
                ),
                Item::tool_call(
                    "4",
                    "Write",
                    r#"{"file_path": "/repo/b.md", "content": "x"}"#,
                ),
                Item::tool_result("4", "Write", "ok"),
                Item::tool_call("5", "bash", r#"{"command": "pytest"}"#),
                Item::tool_result("5", "bash", "1 passed"),
                Item::assistant("Done: the tests pass."),
            ],
            stopped: true,
            ..Episode::default()
        };
        add(&mut ep);
        let refs: Vec<(&str, usize, &str)> = ep
            .probes
            .iter()
            .map(|p| {
                (
                    p.id.as_str(),
                    p.after_item,
                    p.reference.as_deref().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            refs,
            [
                (
                    "open-artifacts",
                    11,
                    "/repo/a.py (str_replace_editor str_replace); /repo/b.md (Write)"
                ),
                (
                    "open-failure",
                    11,
                    "FAILED tests/test_a.py::test_x - KeyError: 'x' (from bash {\"command\": \"pytest\"})"
                ),
                ("open-next", 10, "Done: the tests pass."),
            ]
        );
        assert!(ep.probes.iter().all(|p| p.answers.is_empty()));
        assert!(check_episode(&ep).is_empty(), "{:?}", check_episode(&ep));
    }

    #[test]
    fn a_trace_without_edits_or_failures_gets_only_its_next_step() {
        let mut ep = Episode {
            id: "e".into(),
            source: "t".into(),
            items: vec![
                Item::user("look"),
                Item::tool_call("1", "bash", r#"{"command": "ls"}"#),
                Item::tool_result("1", "bash", "a.py"),
                Item::assistant("There is one file."),
            ],
            stopped: true,
            ..Episode::default()
        };
        add(&mut ep);
        let ids: Vec<&str> = ep.probes.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["open-next"]);
        for (line, fails) in [
            ("KeyError: 'x'", true),
            ("Error: payment amount does not add up", true),
            ("error[E0425]: cannot find function", true),
            ("  FAILED tests/a.py::t", true),
            ("1534: except FieldError as error:", false),
            ("77| console.error('Error fetching', error);", false),
            ("no errors: all good", false),
        ] {
            assert_eq!(reports_failure(line), fails, "{line}");
        }
        let linted = [Item::tool_result(
            "1",
            "edit",
            "Your edit has introduced syntax errors.\n\nERRORS:\n\n- E999 IndentationError: unexpected indent\n",
        )];
        assert_eq!(
            last_failure(&linted).as_deref(),
            Some("ERRORS: - E999 IndentationError: unexpected indent")
        );
        let mut empty = Episode::default();
        add(&mut empty);
        assert!(empty.probes.is_empty());
        // A next turn that names what the history never showed asks for what no request holds.
        let mut invented = Episode {
            items: vec![
                Item::user("look"),
                Item::tool_call("1", "bash", r#"{"command": "ls"}"#),
                Item::tool_result("1", "bash", "a.py"),
                Item::assistant("The server listens on port 8443."),
            ],
            stopped: true,
            ..Episode::default()
        };
        add(&mut invented);
        assert!(invented.probes.is_empty(), "{:?}", invented.probes);
    }
}
