//! aider chat history markdown: `#### ` lines are the user's, `> ` lines are aider's console output, and
//! unprefixed text is the model's. A file may hold several sessions, each starting with `# aider chat started
//! at …`; a Jekyll page wrapping a transcript is unwrapped first.
//!
//! What the model was sent, and what it was not:
//! - a user block is one prompt; aider's commands (`/add`, `/run`, `/ask` — whose question follows as a
//!   prompt of its own) are not sent;
//! - a reply runs until the next user or console line outside a code fence: inside one, every line is the
//!   model's, the `>>>>>>> REPLACE` that ends an edit block included;
//! - console output is sent only when the model answers it directly (`/run` output added to the chat, lint
//!   and test output aider reflects): then it is an observation. The rest — the session header, token and cost
//!   reports, edits applied, commits, undo hints, files added or dropped — never reaches the model and is left
//!   out. A console line continues on the unprefixed lines right after it (aider writes `Cost:` so);
//! - each `Tokens: N sent, M received` report is the provider's count of the call before it (rounded where
//!   aider writes `5.8k`). The system prompt, the repository map and the files in the chat are sent but not
//!   in the transcript: replayed tokens are well below what aider reports.

use std::path::Path;

use super::{episode, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::{Episode, Role};

/// What a block of a transcript is.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Kind {
    User,
    Output,
    Reply,
}

/// The blocks of one session's lines, each with its lines (prefixes removed).
fn blocks<'a>(lines: &[&'a str]) -> Vec<(Kind, Vec<&'a str>)> {
    let mut blocks: Vec<(Kind, Vec<&str>)> = Vec::new();
    let mut in_fence = false;
    let mut after_blank = true;
    for &line in lines {
        let last = blocks.last().map(|b| b.0);
        let (kind, text) = if last == Some(Kind::Reply) && in_fence {
            (Kind::Reply, line)
        } else if let Some(rest) = line.strip_prefix("####") {
            (
                Kind::User,
                rest.strip_prefix(' ').unwrap_or(rest).trim_end(),
            )
        } else if line == ">" || line.starts_with("> ") {
            (
                Kind::Output,
                line[1..].strip_prefix(' ').unwrap_or(&line[1..]).trim_end(),
            )
        } else if line.trim().is_empty() {
            if last == Some(Kind::Reply) {
                if let Some(b) = blocks.last_mut() {
                    b.1.push("");
                }
            }
            after_blank = true;
            continue;
        } else if last == Some(Kind::Output) && !after_blank {
            // A console line continues on the unprefixed lines right after it.
            (Kind::Output, line.trim_end())
        } else {
            (Kind::Reply, line)
        };
        if kind == Kind::Reply && line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        // A prompt or console output ends at a blank line; a reply goes on past them.
        match blocks.last_mut() {
            Some(b) if b.0 == kind && (kind == Kind::Reply || !after_blank) => b.1.push(text),
            _ => blocks.push((kind, vec![text])),
        }
        after_blank = false;
    }
    blocks
}

/// Console lines that are prompts to the user, never sent to the model.
const NOT_SENT: [&str; 4] = [
    "Add the output to the chat?",
    "Tokens: ",
    "Cost: ",
    "^C again to exit",
];

/// A number as aider writes it (`13,749`, `5.8k`, `1.2M`), and whether it was rounded.
fn amount(word: &str) -> Option<(u64, bool)> {
    let word = word.trim().replace(',', "");
    let (digits, scale) = match word.chars().last()? {
        'k' | 'K' => (&word[..word.len() - 1], 1e3),
        'm' | 'M' => (&word[..word.len() - 1], 1e6),
        _ => (&word[..], 1.0),
    };
    let value: f64 = digits.parse().ok()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = (value * scale).round() as u64;
    Some((n, scale > 1.0))
}

/// The provider's count from a `Tokens: 5.8k sent, 1.2k cache write, 380 received.` report.
fn usage_of(line: &str) -> Option<(CallUsage, bool)> {
    let rest = line.strip_prefix("Tokens: ")?;
    let rest = rest
        .split(". Cost")
        .next()
        .unwrap_or(rest)
        .trim_end_matches('.');
    let mut usage = CallUsage::default();
    let mut rounded = false;
    for part in rest.split(", ") {
        let part = part.trim();
        let (number, what) = part.split_once(' ')?;
        let (n, r) = amount(number)?;
        rounded |= r;
        match what.trim() {
            "sent" => usage.input_tokens = n,
            "received" => usage.output_tokens = n,
            "cache write" => usage.cache_write_tokens = Some(n),
            "cache hit" => usage.cache_read_tokens = Some(n),
            _ => {}
        }
    }
    Some((usage, rounded))
}

/// The episode of one session: its sent prompts, replies and observations, and its token reports.
fn session(origin: &Path, suffix: Option<String>, stamp: &str, lines: &[&str]) -> Episode {
    let blocks = blocks(lines);
    let mut conv = super::Conversation::default();
    let mut calls = Vec::new();
    let mut rounded = false;
    let mut started = false;
    for (k, (kind, text)) in blocks.iter().enumerate() {
        match kind {
            Kind::User => {
                let prompt = text.join("\n");
                let prompt = prompt.trim();
                if prompt.is_empty() || prompt.starts_with('/') || prompt == "<blank>" {
                    continue;
                }
                started = true;
                conv.message(Role::User, prompt);
            }
            Kind::Reply => {
                conv.message(Role::Assistant, text.join("\n").trim());
            }
            Kind::Output => {
                for line in text {
                    if let Some((usage, r)) = usage_of(line) {
                        calls.push(usage);
                        rounded |= r;
                    }
                }
                let answered = blocks.get(k + 1).is_some_and(|b| b.0 == Kind::Reply);
                if started && answered {
                    let sent: Vec<&str> = text
                        .iter()
                        .copied()
                        .filter(|l| !NOT_SENT.iter().any(|p| l.starts_with(p)))
                        .collect();
                    conv.observation("aider", sent.join("\n").trim());
                }
            }
        }
    }
    let mut ep = episode(origin, suffix, "aider", conv.into_items());
    // A session ends waiting for its user: no call follows the last reply.
    ep.stopped = true;
    ep.meta.insert("started_at".into(), stamp.into());
    if !calls.is_empty() {
        let mut usage = ProviderUsage::from_calls("Tokens: reports", calls);
        usage.approximate = rounded;
        usage.store(&mut ep);
    }
    ep
}

/// Imports every session of the file.
///
/// # Errors
/// Never for well-formed UTF-8; an empty transcript gives an empty episode, refused by the caller.
pub fn import(text: &str, origin: &Path) -> Result<Vec<Episode>> {
    let mut body = text;
    if let Some(start) = text.find("<div class=\"chat-transcript\"") {
        let after = &text[start..];
        let open_end = after.find('>').map_or(0, |n| n + 1);
        let inner = &after[open_end..];
        body = inner.rfind("</div>").map_or(inner, |end| &inner[..end]);
    }
    let mut sessions: Vec<(String, Vec<&str>)> = Vec::new();
    for line in body.lines() {
        if let Some(stamp) = line.strip_prefix("# aider chat started at ") {
            sessions.push((stamp.trim().to_owned(), Vec::new()));
        } else {
            if sessions.is_empty() {
                sessions.push(("transcript".into(), Vec::new()));
            }
            // A page wrapping several transcripts separates them with HTML: not part of any.
            if line.starts_with("</div>") || line.starts_with("<div class=\"chat-transcript\"") {
                continue;
            }
            if let Some(s) = sessions.last_mut() {
                s.1.push(line);
            }
        }
    }
    let many = sessions.len() > 1;
    Ok(sessions
        .into_iter()
        .filter(|(_, lines)| lines.iter().any(|l| l.starts_with("####")))
        .map(|(stamp, lines)| session(origin, many.then(|| stamp.clone()), &stamp, &lines))
        .collect())
}

/// The aider format.
pub struct Aider;

impl Importer for Aider {
    fn name(&self) -> &'static str {
        "aider"
    }

    fn about(&self) -> &'static str {
        "aider chat history markdown (.aider.chat.history.md), or a page wrapping one"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        let t = s.text;
        (t.starts_with("# aider chat started at")
            || t.contains("\n# aider chat started at")
            || t.contains("class=\"chat-transcript\""))
        .then_some(sure::CERTAIN)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        import(text, origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_reports_in_both_forms() {
        let (u, rounded) =
            usage_of("Tokens: 13,749 sent, 618 received. Cost: $0.05 request, $0.05 session.")
                .unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, rounded),
            (13_749, 618, false)
        );
        let (u, rounded) = usage_of("Tokens: 5.8k sent, 2.1k cache write, 380 received.").unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_write_tokens,
                rounded
            ),
            (5_800, 380, Some(2_100), true)
        );
        assert!(usage_of("Applied edit to x.py").is_none());
    }
}
