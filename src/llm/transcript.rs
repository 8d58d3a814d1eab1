//! The history a summarizer is shown, and the request that asks for its summary: one format, written by the
//! summarizing strategies and read by the mock LLM.
//!
//! ## Format
//! One line per item, as the book's listing 6.6 formats them (its `format_history_for_summary`):
//! - a message: `[role]: ` and its first `message_chars` characters, then `...`;
//! - a tool call: `[Tool Call]: name(arguments)`;
//! - a tool result, or an observation (environment output sent as a user message): `[Tool Result]: name -> `
//!   and its first `tool_result_chars` characters, then `...`;
//! - reasoning sent back: `[reasoning]: ` and its first `message_chars` characters, then `...`;
//! - an earlier summary folded into this one comes first: `[Previous summary]: ` and its text.
//!
//! An item's text may hold line breaks, so a reader sees physical lines: [`Transcript::lines`] classifies each
//! one, trimmed, by its prefix, and a line without a known prefix is a [`LineKind::Continuation`].
//!
//! The request ([`Transcript::request`]) holds the transcript between `<history>` and `</history>` inside
//! [`SUMMARIZATION_PROMPT`], and a user message asking for the summary; [`Transcript::from_request`] finds it
//! again.

use super::LlmRequest;
use crate::history::Item;

/// The prompt of a summarization call; `{history}` is replaced by the transcript.
pub const SUMMARIZATION_PROMPT: &str = "You are compressing the working history of an AI agent so that it can \
continue its task without the original messages.\nWrite a concise summary in these sections: Task, Tools used, \
Key findings (errors, file paths, identifiers, numbers and facts the agent will need later), Progress, Remaining \
work.\nCopy exact values (paths, ids, error messages, numbers) verbatim.\n\n<history>\n{history}\n</history>";

/// The user message of a summarization request.
pub const SUMMARIZE_ASK: &str = "Please summarize.";

const OPEN: &str = "<history>";
const CLOSE: &str = "</history>";

/// A formatted history, as a summarizer reads it (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    text: String,
}

/// What a line of a transcript is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind<'a> {
    /// A message's first line, with the role's wire name.
    Message(&'a str),
    /// A tool call, with the tool's name.
    ToolCall(&'a str),
    /// A tool result's first line.
    ToolResult,
    /// An earlier summary.
    PreviousSummary,
    /// Any other line: the rest of a multi-line text.
    Continuation,
}

/// One line of a transcript: its text (trimmed, prefix included) and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line<'a> {
    /// The line, trimmed.
    pub text: &'a str,
    /// What it is.
    pub kind: LineKind<'a>,
}

impl<'a> Line<'a> {
    fn parse(text: &'a str) -> Self {
        let kind = if let Some(rest) = text.strip_prefix("[Tool Call]: ") {
            LineKind::ToolCall(rest.split('(').next().unwrap_or(rest).trim())
        } else if text.starts_with("[Tool Result]: ") {
            LineKind::ToolResult
        } else if text.starts_with("[Previous summary]") {
            LineKind::PreviousSummary
        } else {
            ["system", "user", "assistant", "reasoning"]
                .into_iter()
                .find(|role| {
                    text.strip_prefix('[')
                        .and_then(|t| t.strip_prefix(role))
                        .is_some_and(|t| t.starts_with("]:"))
                })
                .map_or(LineKind::Continuation, LineKind::Message)
        };
        Self { text, kind }
    }

    /// Whether this is the first line of a message from `role`.
    #[must_use]
    pub fn is_message_from(&self, role: &str) -> bool {
        self.kind == LineKind::Message(role)
    }
}

impl Transcript {
    /// The transcript of `items`, messages cut to `message_chars` and tool results to `tool_result_chars`
    /// characters (Python's `s[:n]`), each cut marked with `...`.
    #[must_use]
    pub fn of_items(items: &[Item], message_chars: usize, tool_result_chars: usize) -> Self {
        let lines: Vec<String> = items
            .iter()
            .map(|item| match item {
                Item::ToolCall {
                    name, arguments, ..
                } => format!("[Tool Call]: {name}({arguments})"),
                Item::ToolResult { name, content, .. } => {
                    format!(
                        "[Tool Result]: {name} -> {}...",
                        prefix(content, tool_result_chars)
                    )
                }
                // Environment output is tool output, whatever role carries it.
                Item::Observation { name, content } => {
                    let name: &str = if name.is_empty() { "observation" } else { name };
                    format!(
                        "[Tool Result]: {name} -> {}...",
                        prefix(content, tool_result_chars)
                    )
                }
                Item::Reasoning { content, .. } => {
                    format!("[reasoning]: {}...", prefix(content, message_chars))
                }
                other => format!(
                    "[{}]: {}...",
                    other.wire_role(),
                    prefix(other.text(), message_chars)
                ),
            })
            .collect();
        Self {
            text: lines.join("\n"),
        }
    }

    /// The same transcript with an earlier summary folded in before it (when there is one).
    #[must_use]
    pub fn after(self, previous: Option<&str>) -> Self {
        match previous {
            Some(previous) => Self {
                text: format!("[Previous summary]: {previous}\n{}", self.text),
            },
            None => self,
        }
    }

    /// The transcript's text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The request that asks a model to summarize this transcript.
    #[must_use]
    pub fn request(&self) -> LlmRequest {
        LlmRequest {
            instructions: vec![SUMMARIZATION_PROMPT.replace("{history}", &self.text)],
            contents: vec![Item::user(SUMMARIZE_ASK)],
        }
    }

    /// The transcript a summarization request holds: the text between `<history>` and the last `</history>`
    /// of its first instruction that has both, without the line breaks around it.
    #[must_use]
    pub fn from_request(request: &LlmRequest) -> Option<&str> {
        request.instructions.iter().find_map(|instruction| {
            // A vectorized search: every mock call asks this of instructions a few kilobytes long.
            let start = memchr::memmem::find(instruction.as_bytes(), OPEN.as_bytes())? + OPEN.len();
            let end = instruction[start..].rfind(CLOSE)? + start;
            Some(instruction[start..end].trim_matches('\n'))
        })
    }

    /// The non-blank lines of a transcript's text, trimmed and classified.
    pub fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(Line::parse)
    }
}

/// The first `n` characters of `s` (Python's `s[:n]`).
fn prefix(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(byte, _)| &s[..byte])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_the_listing_and_reads_back() {
        let items = [
            Item::user("Fix the bug in src/dates.py"),
            Item::assistant("Running the tests.\nThen reading the file."),
            Item::tool_call("c1", "run_tests", "{\"k\":\"leap\"}"),
            Item::tool_result("c1", "run_tests", "FAILED test_leap - AssertionError"),
        ];
        let t = Transcript::of_items(&items, 500, 6).after(Some("earlier"));
        assert_eq!(
            t.as_str(),
            "[Previous summary]: earlier\n[user]: Fix the bug in src/dates.py...\n\
             [assistant]: Running the tests.\nThen reading the file....\n\
             [Tool Call]: run_tests({\"k\":\"leap\"})\n[Tool Result]: run_tests -> FAILED..."
        );
        let request = t.request();
        assert_eq!(Transcript::from_request(&request), Some(t.as_str()));
        let kinds: Vec<LineKind<'_>> = Transcript::lines(t.as_str()).map(|l| l.kind).collect();
        assert_eq!(
            kinds,
            [
                LineKind::PreviousSummary,
                LineKind::Message("user"),
                LineKind::Message("assistant"),
                LineKind::Continuation,
                LineKind::ToolCall("run_tests"),
                LineKind::ToolResult,
            ]
        );
        assert!(
            Transcript::from_request(&LlmRequest::from_contents(vec![Item::user("hi")])).is_none()
        );
        // Cuts count characters, not bytes.
        let t = Transcript::of_items(&[Item::user("héllo")], 2, 2);
        assert_eq!(t.as_str(), "[user]: hé...");
    }
}
