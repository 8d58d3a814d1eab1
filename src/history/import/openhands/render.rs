//! What OpenHands' CodeAct agent makes of an event's content (`openhands/memory/conversation_memory.py`, read at
//! openhands-ai 0.62.0): a command's output with its suffixes, an error with its note, a file edit's message
//! (`openhands/events/observation/files.py`, the version of January 2025 that wrote
//! `formatted_output_and_error`), the workspace context
//! of a `recall` as the `<RUNTIME_INFORMATION>` message (`additional_info.j2`, rendered here for the fields a
//! recall records).

use serde_json::{Map, Value};

/// A `run` observation as the agent sees it (`CmdOutputObservation.to_agent_observation`): the output between
/// the runtime's prefix and suffix, then the working directory, the interpreter and the exit code when known.
pub(super) fn command_output(content: &str, extras: Option<&Map<String, Value>>) -> String {
    let Some(meta) = extras
        .and_then(|e| e.get("metadata"))
        .and_then(Value::as_object)
    else {
        return content.to_owned();
    };
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = format!("{}{content}{}", text("prefix"), text("suffix"));
    if !text("working_dir").is_empty() {
        out.push_str(&format!(
            "\n[Current working directory: {}]",
            text("working_dir")
        ));
    }
    if !text("py_interpreter_path").is_empty() {
        out.push_str(&format!(
            "\n[Python interpreter: {}]",
            text("py_interpreter_path")
        ));
    }
    match meta.get("exit_code").and_then(Value::as_i64) {
        Some(-1) | None => {}
        Some(code) => out.push_str(&format!("\n[Command finished with exit code {code}]")),
    }
    out
}

/// An `edit` observation as the agent sees it (`FileEditObservation.__str__`): in OpenHands-ACI mode
/// (`impl_source: oh_aci`) the editor's own message (`formatted_output_and_error`, e.g. "File created
/// successfully at: …"), where the event's `content` is the diff of the file and the agent never sends it;
/// a stream that does not record that field (later versions put the message in `content`) keeps `content`.
pub(super) fn file_edit(content: &str, extras: Option<&Map<String, Value>>) -> String {
    extras
        .filter(|x| x.get("impl_source").and_then(Value::as_str) == Some("oh_aci"))
        .and_then(|x| x.get("formatted_output_and_error"))
        .and_then(Value::as_str)
        .map_or_else(|| content.to_owned(), str::to_owned)
}

/// An `error` observation: its content and the agent's note.
pub(super) fn error(content: &str) -> String {
    format!("{content}\n[Error occurred in processing last action]")
}

/// A `run_ipython` observation: inline images are replaced, as the agent does.
pub(super) fn ipython_output(content: &str) -> String {
    content
        .split('\n')
        .map(|l| {
            if l.contains("![image](data:image/png;base64,") {
                "![image](data:image/png;base64, ...) already displayed to user"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The message a `workspace_context` recall becomes, when it has anything to say.
pub(super) fn workspace_context(extras: &Map<String, Value>) -> Option<String> {
    let s = |k: &str| extras.get(k).and_then(Value::as_str).unwrap_or("");
    let map = |k: &str| {
        extras
            .get(k)
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
    };
    let (repo_name, repo_dir) = (s("repo_name"), s("repo_directory"));
    let has_repo = !repo_name.is_empty() || !repo_dir.is_empty();
    let date = s("date");
    let secrets = map("custom_secrets_descriptions");
    let runtime = !date.is_empty() || secrets.is_some();
    let repo_instructions = s("repo_instructions");
    let conversation = s("conversation_instructions");
    if !has_repo && !runtime && repo_instructions.trim().is_empty() && conversation.is_empty() {
        return None;
    }
    // additional_info.j2 with Jinja's defaults (a tag's line keeps its newline), stripped.
    let mut t = String::new();
    if has_repo {
        t.push_str(&repository_info(extras, repo_name, repo_dir));
    }
    t.push('\n');
    if !repo_instructions.is_empty() {
        t.push_str(&format!(
            "<REPOSITORY_INSTRUCTIONS>\n{repo_instructions}\n</REPOSITORY_INSTRUCTIONS>\n"
        ));
    }
    t.push('\n');
    // `runtime_info` is always built by the conversation memory.
    t.push_str(&runtime_information(extras, date, secrets));
    if !conversation.is_empty() {
        t.push_str(&format!(
            "<CONVERSATION_INSTRUCTIONS>\n{conversation}\n</CONVERSATION_INSTRUCTIONS>\n"
        ));
    }
    Some(t.trim().to_owned())
}

/// The `<REPOSITORY_INFO>` block of a recall: the repository cloned, and its branch when there is one.
fn repository_info(extras: &Map<String, Value>, repo_name: &str, repo_dir: &str) -> String {
    let s = |k: &str| extras.get(k).and_then(Value::as_str).unwrap_or("");
    let mut t = String::new();
    t.push_str(&format!(
        "\n<REPOSITORY_INFO>\nAt the user's request, repository {repo_name} has been cloned to {repo_dir} in the current working directory.\n"
    ));
    let branch = s("repo_branch");
    if !branch.is_empty() {
        t.push_str(&format!(
            "The repository has been checked out to branch \"{branch}\".\n\nIMPORTANT: You should work within the current branch \"{branch}\" unless:\n    1. the user explicitly instructs otherwise\n    2. the current branch is \"main\", \"master\", or another default branch where direct pushes may be unsafe\n"
        ));
    }
    t.push_str("\n</REPOSITORY_INFO>\n");
    t
}

/// The `<RUNTIME_INFORMATION>` block of a recall: the working directory, the hosts, further instructions,
/// the secrets' descriptions and the date.
fn runtime_information(
    extras: &Map<String, Value>,
    date: &str,
    secrets: Option<&Map<String, Value>>,
) -> String {
    let s = |k: &str| extras.get(k).and_then(Value::as_str).unwrap_or("");
    let hosts = extras
        .get("runtime_hosts")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty());
    let mut t = String::new();
    t.push_str("<RUNTIME_INFORMATION>\n");
    let working_dir = s("working_dir");
    if !working_dir.is_empty() {
        t.push_str(&format!(
            "\nThe current working directory is {working_dir}\n"
        ));
    }
    t.push('\n');
    let additional = s("additional_agent_instructions");
    if let Some(hosts) = hosts {
        t.push_str("\nThe user has access to the following hosts for accessing a web application,\neach of which has a corresponding port:\n");
        for (host, port) in hosts {
            t.push_str(&format!("* {host} (port {port})\n"));
        }
        t.push_str("\nWhen starting a web server, use the corresponding ports. You should also\nset any options to allow iframes and CORS requests, and allow the server to\nbe accessed from any host (e.g. 0.0.0.0).\nFor example, if you are using vite.config.js, you should set server.host and server.allowedHosts to true\n");
    }
    t.push('\n');
    if !additional.is_empty() {
        t.push_str(&format!("\n{additional}\n"));
    }
    t.push('\n');
    if let Some(secrets) = secrets {
        t.push_str("\n<CUSTOM_SECRETS>\nYou have access to the following environment variables\n");
        for (name, description) in secrets {
            let d = description
                .as_str()
                .map_or_else(|| description.to_string(), str::to_owned);
            t.push_str(&format!("\n* **${name}**: {d}\n"));
        }
        t.push_str("\n</CUSTOM_SECRETS>\n");
    }
    t.push('\n');
    if !date.is_empty() {
        t.push_str(&format!("\nToday's date is {date} (UTC).\n"));
    }
    t.push_str("\n</RUNTIME_INFORMATION>\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An OpenHands-ACI edit reaches the model as the editor's message, not as the diff the event keeps; a
    /// stream without that field (or another edit mode) keeps its content.
    #[test]
    fn an_aci_edit_is_the_editors_message() {
        let extras = serde_json::json!({
            "impl_source": "oh_aci",
            "formatted_output_and_error": "File created successfully at: /w/a.html",
            "new_content": "<html></html>",
        });
        let diff = "--- /w/a.html\n+++ /w/a.html\n@@ -0,0 +1 @@\n+<html></html>";
        assert_eq!(
            file_edit(diff, extras.as_object()),
            "File created successfully at: /w/a.html"
        );
        let later = serde_json::json!({"impl_source": "oh_aci"});
        assert_eq!(
            file_edit("The file /w/a.html is created.", later.as_object()),
            "The file /w/a.html is created."
        );
        let llm =
            serde_json::json!({"impl_source": "llm_based_edit", "formatted_output_and_error": "x"});
        assert_eq!(file_edit(diff, llm.as_object()), diff);
        assert_eq!(file_edit(diff, None), diff);
    }
}
