//! The prompts peers send their summarizer (or compressor) with, by name, and what each does with the answer.
//!
//! A strategy that asks an LLM for a summary or a rewrite names one ([`Prompt`]; `prompt = "claude_code"` in a
//! config). Every request carries the history as ctxbench's transcript between `<history>` tags in its first
//! instruction ([`Transcript`], the format the mock reads; ctxbench's own prompt is
//! [`crate::llm::transcript::SUMMARIZATION_PROMPT`]), and the peer's own prompt where the peer puts it:
//! before the history as a system text (ACON, AgentDiet), or after it as a user message (Claude Code,
//! Inspect AI, Codex, Anthropic's compaction). The peers send the conversation's own messages instead of a
//! transcript; that, and the short user message ctxbench adds where a peer sends the prompt as a system text
//! alone, are the departures (docs/architecture.md, "Peer prompts").
//!
//! The texts are in `assets/prompts/`, each copied from the source [`Prompt::source`] names.

use serde::{Deserialize, Serialize};

use crate::history::{Item, SUMMARY_PREFIX};
use crate::llm::transcript::Transcript;
use crate::llm::LlmRequest;

/// Claude Code 2.1.39's compact prompt, as its compaction sub-agent sent it.
const CLAUDE_CODE: &str = include_str!("../../assets/prompts/claude_code_compact.md");
/// Inspect AI 0.3.285's `CompactionSummary.DEFAULT_SUMMARY_PROMPT` (no addendum).
const INSPECT: &str = include_str!("../../assets/prompts/inspect_compaction_summary.md");
/// Codex CLI's `templates/compact/prompt.md`.
const CODEX: &str = include_str!("../../assets/prompts/codex_compact.md");
/// Codex CLI's `templates/compact/summary_prefix.md`.
const CODEX_PREFIX: &str = include_str!("../../assets/prompts/codex_summary_prefix.md");
/// Anthropic's default `compact_20260112` summarization prompt.
const ANTHROPIC: &str = include_str!("../../assets/prompts/anthropic_compact.md");
/// ACON's system prompt for both compressors.
const ACON_SYSTEM: &str = include_str!("../../assets/prompts/acon_system.md");
/// ACON's baseline history-compression prompt (a Jinja template).
const ACON_HISTORY: &str = include_str!("../../assets/prompts/acon_history.md");
/// ACON's baseline observation-compression prompt (a Jinja template).
const ACON_OBSERVATION: &str = include_str!("../../assets/prompts/acon_observation.md");
/// AgentDiet's reflection prompt (`traj_analyzer.py`'s `SYS_PROMPT`).
const AGENTDIET: &str = include_str!("../../assets/prompts/agentdiet.md");

/// Where Claude Code's summary message says the full transcript is (a session file's path in a real one).
const CLAUDE_CODE_TRANSCRIPT: &str = "~/.claude/projects/PROJECT/SESSION.jsonl";

/// The first words of the assistant message AgentDiet puts in place of a step it compressed.
pub const AGENTDIET_REMINDER: &str = "(System reminder: compressed for better efficiency) ";

/// A summarizer's or compressor's prompt, by the peer that sends it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prompt {
    /// ctxbench's own ([`SUMMARIZATION_PROMPT`]).
    #[default]
    Ctxbench,
    /// Claude Code's compact prompt; the summary continues the session as Claude Code's does.
    ClaudeCode,
    /// Inspect AI's `CompactionSummary` prompt; the summary is wrapped as Inspect wraps it.
    Inspect,
    /// Codex CLI's compaction prompt; the summary follows Codex's prefix.
    Codex,
    /// Anthropic's server-side compaction (`compact_20260112`) default prompt.
    AnthropicCompact,
    /// ACON's history compression (baseline guideline).
    AconHistory,
    /// ACON's observation compression (baseline guideline).
    AconObservation,
    /// AgentDiet's reflection prompt, compressing one step.
    Agentdiet,
}

/// What a rewrite request shows besides the text to rewrite, which goes in its `<history>`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Around<'a> {
    /// The agent's task (its first user message).
    pub task: &'a str,
    /// The steps around the target, as a transcript (AgentDiet's context steps, ACON's interactions).
    pub context: &'a str,
    /// The target step's number (AgentDiet's step id).
    pub step: usize,
}

fn is_default(p: &Prompt) -> bool {
    *p == Prompt::Ctxbench
}

impl Prompt {
    /// Whether `p` is ctxbench's own (the configs leave it out).
    #[must_use]
    pub fn is_ctxbench(p: &Prompt) -> bool {
        is_default(p)
    }

    /// Where the text comes from.
    #[must_use]
    pub fn source(self) -> &'static str {
        match self {
            Prompt::Ctxbench => "ctxbench's summarization prompt (llm::transcript)",
            Prompt::ClaudeCode => {
                "Claude Code 2.1.39's compact prompt, as its compaction sub-agent sent it in a public session \
                 (marot/spotter 0c7102a3, test/fixtures/transcripts/258c7280-…/subagents/agent-acompact-fffbd0.jsonl), \
                 without the user's PreCompact hook instructions"
            }
            Prompt::Inspect => {
                "inspect-ai 0.3.285, inspect_ai/model/_compaction/summary.py, CompactionSummary.DEFAULT_SUMMARY_PROMPT"
            }
            Prompt::Codex => {
                "openai/codex 928a707f, codex-rs/core/templates/compact/prompt.md and summary_prefix.md"
            }
            Prompt::AnthropicCompact => {
                "Anthropic compaction docs (compact_20260112): the default summarization prompt"
            }
            Prompt::AconHistory | Prompt::AconObservation => {
                "ACON baseline prompts (microsoft/acon d63f9ae, MIT; AppWorld system, history and observation templates)"
            }
            Prompt::Agentdiet => {
                "AgentDiet artifact, trae_agent/agents/traj_analyzer.py SYS_PROMPT (as its public ports copy it)"
            }
        }
    }

    /// The request asking for a summary of `transcript` (the previous summary already folded in).
    #[must_use]
    pub fn summary_request(self, transcript: &Transcript, task: &str) -> LlmRequest {
        let history = format!("<history>\n{}\n</history>", transcript.as_str());
        let (system, ask) = match self {
            Prompt::Ctxbench => return transcript.request(),
            Prompt::ClaudeCode => (history, CLAUDE_CODE.trim().to_owned()),
            Prompt::Inspect => (history, INSPECT.trim().to_owned()),
            Prompt::Codex => (history, CODEX.trim().to_owned()),
            Prompt::AnthropicCompact => (history, ANTHROPIC.trim().to_owned()),
            Prompt::AconHistory => (
                format!(
                    "{}\n\n{}",
                    ACON_SYSTEM.trim(),
                    ACON_HISTORY
                        .trim()
                        .replace("{{ task }}", task)
                        .replace(
                            "{{ prev_summary }}",
                            "(on the history's first line, when there is one)"
                        )
                        .replace("{{ history }}", &history)
                ),
                "Write the summary.".to_owned(),
            ),
            // Rewrite prompts asked for a summary: as a rewrite of the whole history.
            Prompt::AconObservation | Prompt::Agentdiet => {
                return self.rewrite_request(
                    transcript,
                    &Around {
                        task,
                        ..Around::default()
                    },
                )
            }
        };
        LlmRequest {
            instructions: vec![system],
            contents: vec![Item::user(ask)],
        }
    }

    /// The request asking to rewrite the text `target` (a step or an observation, as a transcript) with what
    /// is `around` it.
    #[must_use]
    pub fn rewrite_request(self, target: &Transcript, around: &Around<'_>) -> LlmRequest {
        let history = format!("<history>\n{}\n</history>", target.as_str());
        let (system, ask) = match self {
            Prompt::Agentdiet => (
                format!("{}\n\n{history}", AGENTDIET.trim()),
                format!(
                    "The trajectory around it:\n{}\n\nNow, compress the step {}.",
                    around.context, around.step
                ),
            ),
            Prompt::AconObservation => (
                format!(
                    "{}\n\n{}",
                    ACON_SYSTEM.trim(),
                    ACON_OBSERVATION
                        .trim()
                        .replace("{{ task }}", around.task)
                        .replace("{{ history }}", around.context)
                        .replace("{{ observation }}", &history)
                ),
                "Write the reasoning and the refined observation.".to_owned(),
            ),
            // A summary prompt asked for a rewrite: its summary of the target.
            other => {
                return other.summary_request(target, around.task);
            }
        };
        LlmRequest {
            instructions: vec![system],
            contents: vec![Item::user(ask)],
        }
    }

    /// What of the model's answer the peer keeps.
    #[must_use]
    pub fn extract(self, answer: &str) -> String {
        match self {
            // Inspect cuts the analysis where it closes right before the summary opens.
            Prompt::Inspect => match find_pair(answer, "</analysis>", "<summary>") {
                Some(at) => answer[at..].trim().to_owned(),
                None => answer.trim().to_owned(),
            },
            // Claude Code writes the tags as headings.
            Prompt::ClaudeCode => {
                let mut text = answer.to_owned();
                for (tag, heading) in [("analysis", "Analysis:"), ("summary", "Summary:")] {
                    text = text
                        .replace(&format!("<{tag}>"), &format!("{heading}\n"))
                        .replace(&format!("</{tag}>"), "");
                }
                text.trim().to_owned()
            }
            // The compaction block holds the summary.
            Prompt::AnthropicCompact => between(answer, "<summary>", "</summary>")
                .unwrap_or(answer)
                .trim()
                .to_owned(),
            Prompt::AconObservation => after(answer, "# Refined Observation"),
            Prompt::AconHistory => after(answer, "# History Summary"),
            // The compressed step: after the step's opening tag, up to its closing one.
            Prompt::Agentdiet => {
                let mut text = answer.split("</step>").next().unwrap_or(answer);
                if let Some(open) = text
                    .get(..200.min(text.len()))
                    .and_then(|h| h.find("<step"))
                {
                    let rest = &text[open..];
                    if let Some(close) = rest.get(..20.min(rest.len())).and_then(|h| h.find('>')) {
                        text = &rest[close + 1..];
                    }
                }
                text.trim().to_owned()
            }
            Prompt::Ctxbench | Prompt::Codex => answer.trim().to_owned(),
        }
    }

    /// The message text a summary enters the history as: the peer's own wording, or ctxbench's
    /// [`SUMMARY_PREFIX`] where the peer sends the summary bare (every summary must be recognizable as one:
    /// [`crate::history::is_summary_text`]).
    #[must_use]
    pub fn wrap(self, summary: &str) -> String {
        match self {
            Prompt::ClaudeCode => format!(
                "This session is being continued from a previous conversation that ran out of context. The \
                 summary below covers the earlier portion of the conversation.\n\n{summary}\n\nIf you need specific \
                 details from before compaction (like exact code snippets, error messages, or content you \
                 generated), read the full transcript at: {CLAUDE_CODE_TRANSCRIPT}\nPlease continue the \
                 conversation from where we left off without asking the user any further questions. Continue with \
                 the last task that you were asked to work on."
            ),
            Prompt::Inspect => format!(
                "[CONTEXT COMPACTION SUMMARY]\n\nThe following is a summary of work completed on this task so far. \
                 It was generated by the compaction process to replace the earlier conversation; it is not a \
                 message from the user:\n\n{summary}\n\nPlease continue working on this task from where you left off."
            ),
            // Codex: `format!("{SUMMARY_PREFIX}\n{summary}")`, its prefix ending in a line break.
            Prompt::Codex => format!("{CODEX_PREFIX}\n{summary}"),
            _ => format!("{SUMMARY_PREFIX}{summary}"),
        }
    }
}

/// The position of `second` where it follows `first` with only white space between, the first such pair.
fn find_pair(text: &str, first: &str, second: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(first) {
        let end = from + at + first.len();
        let rest = &text[end..];
        let skipped = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with(second) {
            return Some(end + skipped);
        }
        from = end;
    }
    None
}

/// The text between `open` and the next `close`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

/// The text after the heading `heading` (the whole text when it has none).
fn after(text: &str, heading: &str) -> String {
    match text.find(heading) {
        Some(at) => text[at + heading.len()..].trim().to_owned(),
        None => text.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::is_summary_text;

    #[test]
    fn every_request_holds_the_transcript_for_the_mock_and_every_summary_is_one() {
        let t = Transcript::of_items(&[Item::user("fix it")], 100, 100);
        for p in [
            Prompt::Ctxbench,
            Prompt::ClaudeCode,
            Prompt::Inspect,
            Prompt::Codex,
            Prompt::AnthropicCompact,
            Prompt::AconHistory,
        ] {
            let req = p.summary_request(&t, "fix it");
            assert_eq!(Transcript::from_request(&req), Some(t.as_str()), "{p:?}");
            assert!(is_summary_text(&p.wrap("S")), "{p:?}");
            assert!(!p.source().is_empty());
        }
        for p in [Prompt::AconObservation, Prompt::Agentdiet] {
            let req = p.rewrite_request(&t, &Around::default());
            assert_eq!(Transcript::from_request(&req), Some(t.as_str()), "{p:?}");
        }
    }

    #[test]
    fn answers_are_cut_as_each_peer_cuts_them() {
        let answer = "<analysis>\nthinking\n</analysis>\n\n<summary>\n1. Task: x\n</summary>";
        assert_eq!(
            Prompt::Inspect.extract(answer),
            "<summary>\n1. Task: x\n</summary>"
        );
        assert_eq!(
            Prompt::ClaudeCode.extract(answer),
            "Analysis:\n\nthinking\n\n\nSummary:\n\n1. Task: x"
        );
        assert_eq!(Prompt::AnthropicCompact.extract(answer), "1. Task: x");
        assert_eq!(
            Prompt::AconObservation.extract("# Reasoning\nr\n# Refined Observation\nonly this"),
            "only this"
        );
        assert_eq!(
            Prompt::Agentdiet.extract("<step id=\"3\">kept ... (expected output)</step> extra"),
            "kept ... (expected output)"
        );
        assert_eq!(Prompt::Codex.wrap("S").lines().last(), Some("S"));
    }
}
