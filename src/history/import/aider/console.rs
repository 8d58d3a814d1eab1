//! aider's console output: what of it reached the model, and as which message.
//!
//! Console output is sent only as a message aider builds from it (the texts below are aider's own, the same
//! from 0.48 to today): `/run` and `/test` output the user adds to the chat, the errors of edit blocks that
//! failed to apply, lint and test errors aider offers to fix, the files a reply mentioned and the user added,
//! `/undo`'s note where the model asks for it, and the note of a commit after each applied edit. Everything
//! else — the session header, token and cost reports, edits applied, commits, retries, prompts to the user —
//! is never sent.

use regex::Regex;

/// aider's `prompts.run_output`: how `/run` and `/test` output is sent.
pub(super) fn run_output(command: &str, output: &str) -> String {
    format!("I ran this command:\n\n{command}\n\nAnd got this output:\n\n{output}\n")
}

/// aider's `prompts.added_files`: sent after the user adds the files a reply mentioned.
fn added_files(fnames: &[String]) -> String {
    format!(
        "I added these files to the chat: {}\nLet me know if there are others we should add.",
        fnames.join(", ")
    )
}

/// aider's `prompts.undo_command_reply`, sent after `/undo` for models that ask for it.
pub(super) const UNDO_REPLY: &str = "I did `git reset --hard HEAD~1` to discard the last edits. Please wait for further \
                                     instructions before attempting that change again. Feel free to ask relevant \
                                     questions about why the changes were reverted.";

/// aider's note after an applied edit (`files_content_gpt_edits`), committed or not.
pub(super) fn edit_note(commit: Option<&str>) -> String {
    commit.map_or_else(
        || "I updated the files.".to_owned(),
        |c| match c.split_once(' ') {
            Some((hash, message)) => {
                format!("I committed the changes with git hash {hash} & commit msg: {message}")
            }
            None => format!("I committed the changes with git hash {c} & commit msg: "),
        },
    )
}

/// Console lines that never reach the model (prefixes).
const NOT_SENT: [&str; 33] = [
    "Tokens: ",
    "Cost: ",
    "Applied edit to ",
    "Did not apply edit to ",
    "Commit ",
    "Committing ",
    "You can use /undo",
    "Added ",
    "Removed ",
    "^C ",
    "Add these files to the chat?",
    "Retrying in ",
    "litellm.",
    "Unexpected error",
    "Scraping ",
    "... done.",
    "Invalid command",
    "Ambiguous command",
    "Now at:",
    "HEAD is:",
    "No changes made to git tracked files",
    "The LLM did not conform to the edit format",
    "https://aider.chat/",
    "Only 3 reflections allowed",
    "Aider v",
    "Model",
    "Main model:",
    "Weak model:",
    "Git repo:",
    "Repo-map:",
    "Use /help",
    "Fix lint errors in ",
    "Attempt to fix ",
];

/// Whether a console message is aider's bookkeeping, never sent.
pub(super) fn not_sent(message: &[&str]) -> bool {
    let first = message.first().copied().unwrap_or("");
    first.trim().is_empty()
        || NOT_SENT.iter().any(|p| first.starts_with(p))
        || first.starts_with("All ") && first.contains("chat history cleared")
        || first.starts_with("Add ") && first.contains("to the chat?")
}

/// The answer to a `… to the chat?` question (`y`, `n`, or instructions), when `message` asks one.
fn answer(message: &[&str]) -> Option<String> {
    let text = message.join(" ");
    let (_, rest) = text.split_once("to the chat?")?;
    let hint = Regex::new(r"^\s*(?:\([^)]*\)\s*)?(?:\[[^\]]*\]\s*)?(?:\([^)]*\)\s*)?:?\s*")
        .expect("static pattern");
    Some(hint.replace(rest, "").trim().to_owned())
}

/// Whether an answer says yes (aider's default is yes).
fn yes(answer: &str) -> bool {
    matches!(answer.to_lowercase().as_str(), "" | "y" | "yes")
}

/// The output of a command as its console messages hold it: the first message when it has several lines (the
/// rest is aider's line-by-line copy), else the one-line messages up to the question, a repeated copy left
/// out.
fn command_output(messages: &[&[&str]]) -> String {
    let shown: Vec<&[&str]> = messages
        .iter()
        .copied()
        .take_while(|m| answer(m).is_none())
        .filter(|m| !is_retry(m) && !m.first().is_some_and(|l| l.starts_with("^C ")))
        .collect();
    if let Some(first) = shown.first().filter(|m| m.len() > 1) {
        return first.join("\n");
    }
    let lines: Vec<&str> = shown.iter().flat_map(|m| m.iter().copied()).collect();
    let half = lines.len() / 2;
    let lines = if lines.len().is_multiple_of(2) && half > 0 && lines[..half] == lines[half..] {
        &lines[..half]
    } else {
        &lines[..]
    };
    lines.join("\n")
}

/// Whether a console message reports a failed attempt to call the model.
fn is_retry(message: &[&str]) -> bool {
    let first = message.first().copied().unwrap_or("");
    first.starts_with("litellm.") || first.starts_with("Retrying in ")
}

/// The command whose output may be sent: `run` or `test` and its arguments as aider passes them, or `undo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Command {
    /// `/run` (`!`) or `/test`, with the text after the command word.
    Run { name: &'static str, args: String },
    /// `/undo`.
    Undo,
}

/// The first line of a console message.
fn first_line<'a>(m: &[&'a str]) -> &'a str {
    m.first().copied().unwrap_or("")
}

/// What aider sent built from the console output since the last reply or user input, with the name of the
/// observation, when it sent anything: the first of these that the console shows.
pub(super) fn sent(
    messages: &[&[&str]],
    command: Option<&Command>,
) -> Option<(&'static str, String)> {
    let find = |p: &str| messages.iter().position(|m| first_line(m).starts_with(p));
    if let Some(Command::Run { name, args }) = command {
        return command_sent(messages, name, args);
    }
    if let Some(at) = find("The LLM did not conform to the edit format")
        .or_else(|| find("Exception while updating files"))
    {
        let lines: Vec<&str> = messages[at + 1..]
            .iter()
            .skip_while(|m| first_line(m).starts_with("https://"))
            .take_while(|m| {
                !is_retry(m)
                    && !first_line(m).starts_with("^C ")
                    && !first_line(m).starts_with("Tokens: ")
            })
            .flat_map(|m| m.iter().copied())
            .collect();
        return Some(("aider", lines.join("\n").trim().to_owned()));
    }
    if let Some(fix) = fix_sent(messages) {
        return Some(fix);
    }
    if let Some(at) = find("Add these files to the chat?") {
        return added_sent(messages, at);
    }
    if command == Some(&Command::Undo) {
        return Some(("undo", UNDO_REPLY.to_owned()));
    }
    let rest: Vec<&str> = messages
        .iter()
        .filter(|m| !not_sent(m))
        .flat_map(|m| m.iter().copied())
        .collect();
    let rest = rest.join("\n");
    (!rest.trim().is_empty()).then(|| ("aider", rest.trim().to_owned()))
}

/// A `/run` or `/test` command's output as aider sends it (with the user's words when they answered more than
/// yes), or nothing when they declined to add it.
fn command_sent(
    messages: &[&[&str]],
    name: &'static str,
    args: &str,
) -> Option<(&'static str, String)> {
    let output = command_output(messages);
    let mut text = run_output(args, &format!("{output}\n"));
    if let Some(a) = messages.iter().find_map(|m| answer(m)) {
        if matches!(a.to_lowercase().as_str(), "n" | "no") {
            return None;
        }
        if !yes(&a) {
            text = format!("{a}\n\n{text}");
        }
    }
    Some((name, text))
}

/// The lint or test errors aider sent after the user agreed to fix them.
fn fix_sent(messages: &[&[&str]]) -> Option<(&'static str, String)> {
    for (question, name) in [
        ("Attempt to fix lint errors?", "lint"),
        ("Attempt to fix test errors?", "test"),
    ] {
        let Some(at) = messages
            .iter()
            .position(|m| first_line(m).starts_with(question))
            .filter(|&at| yes(first_line(messages[at])[question.len()..].trim()))
        else {
            continue;
        };
        let start = if name == "lint" {
            messages[..at]
                .iter()
                .rposition(|m| first_line(m).starts_with("# Fix any errors"))
                .unwrap_or(0)
        } else {
            messages[..at]
                .iter()
                .rposition(|m| m.len() > 1)
                .unwrap_or(0)
        };
        let text: Vec<&str> = messages[start..at]
            .iter()
            .flat_map(|m| m.iter().copied())
            .collect();
        return Some((name, text.join("\n").trim().to_owned()));
    }
    None
}

/// The files the user agreed to add at `at` (the file names listed before the question), as aider sends
/// them; nothing when they declined.
fn added_sent(messages: &[&[&str]], at: usize) -> Option<(&'static str, String)> {
    let question = first_line(messages[at]);
    if !yes(question["Add these files to the chat?".len()..].trim()) {
        return None;
    }
    let fnames: Vec<String> = messages[..at]
        .iter()
        .rev()
        .take_while(|m| m.len() == 1 && !m[0].contains(' ') && !m[0].is_empty())
        .map(|m| m[0].to_owned())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Some(("aider", added_files(&fnames)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_output_with_instructions_and_without_the_copy() {
        let first: &[&str] = &["===== start", "raw", "", "=== 1 failed ==="];
        let ask: &[&str] = &[
            "Add the output to the chat?",
            "(y/n/instructions) the test is wrong",
        ];
        let copy: &[&str] = &["===== start"];
        let cmd = Command::Run {
            name: "run",
            args: " pytest".into(),
        };
        let (name, text) = sent(&[first, ask, copy], Some(&cmd)).unwrap();
        assert_eq!(name, "run");
        assert_eq!(
            text,
            "the test is wrong\n\nI ran this command:\n\n pytest\n\nAnd got this output:\n\n===== start\nraw\n\n=== 1 failed ===\n\n"
        );
        // Declined: nothing sent. One-line output shown twice (`/test`): once.
        let no: &[&str] = &["Add the output to the chat? [y/n] (y): n"];
        assert_eq!(sent(&[copy, no], Some(&cmd)), None);
        let (_, text) = sent(&[copy, copy], Some(&cmd)).unwrap();
        assert!(text.ends_with("output:\n\n===== start\n\n"), "{text:?}");
    }

    #[test]
    fn edit_errors_lint_errors_and_added_files() {
        let m: Vec<&[&str]> = vec![
            &["Tokens: 1 sent, 2 received."],
            &["The LLM did not conform to the edit format."],
            &["https://aider.chat/docs/troubleshooting/edit-errors.html"],
            &["# 1 SEARCH/REPLACE block failed to match!"],
            &[""],
            &["    x = 1"],
            &["^C again to exit"],
        ];
        assert_eq!(
            sent(&m, None),
            Some((
                "aider",
                "# 1 SEARCH/REPLACE block failed to match!\n\n    x = 1".into()
            ))
        );
        let m: Vec<&[&str]> = vec![
            &["Applied edit to a.py"],
            &["# Fix any errors below, if possible."],
            &["a.py:1: F821"],
            &["Attempt to fix lint errors? y"],
        ];
        assert_eq!(
            sent(&m, None),
            Some((
                "lint",
                "# Fix any errors below, if possible.\na.py:1: F821".into()
            ))
        );
        let m: Vec<&[&str]> = vec![
            &["aider/args.py"],
            &["setup.py"],
            &["Add these files to the chat? y"],
        ];
        assert_eq!(
            sent(&m, None).unwrap().1,
            "I added these files to the chat: aider/args.py, setup.py\nLet me know if there are others we should add."
        );
        let m: Vec<&[&str]> = vec![&["aider/args.py"], &["Add these files to the chat? n"]];
        assert_eq!(sent(&m, None), None);
    }

    #[test]
    fn edit_notes() {
        assert_eq!(
            edit_note(Some("423b6e1 feat: add a variable")),
            "I committed the changes with git hash 423b6e1 & commit msg: feat: add a variable"
        );
        assert_eq!(edit_note(None), "I updated the files.");
    }
}
