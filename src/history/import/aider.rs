//! aider chat history markdown: `#### ` lines are the user's, `> ` lines are aider's own output (commands,
//! edits applied, test output), unprefixed text is the model's. A file may hold several sessions, each
//! starting with `# aider chat started at …`; a Jekyll page wrapping a transcript is unwrapped first.
//!
//! aider has no tool-call structure: its `> ` output reaches the model as user-side text, so it is imported
//! as user messages (the header block of a session as the system message).

use std::path::Path;

use super::{episode, sure, Importer, Sniff};
use crate::error::Result;
use crate::history::{Episode, Role};

#[derive(PartialEq, Clone, Copy)]
enum Block {
    User,
    Output,
    Assistant,
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
            if let Some(s) = sessions.last_mut() {
                s.1.push(line);
            }
        }
    }
    let many = sessions.len() > 1;
    Ok(sessions
        .into_iter()
        .filter(|(_, lines)| lines.iter().any(|l| l.starts_with("####")))
        .map(|(stamp, lines)| {
            let mut conv = super::Conversation::default();
            let mut current: Option<(Block, Vec<String>)> = None;
            let mut seen_user = false;
            let flush = |conv: &mut super::Conversation,
                         block: Option<(Block, Vec<String>)>,
                         seen_user: bool| {
                if let Some((kind, text)) = block {
                    let text = text.join("\n").trim().to_owned();
                    let role = match kind {
                        Block::User => Role::User,
                        Block::Assistant => Role::Assistant,
                        Block::Output if !seen_user => Role::System,
                        Block::Output => Role::User,
                    };
                    conv.message(role, text);
                }
            };
            for line in lines {
                let (kind, content) = if let Some(rest) = line.strip_prefix("####") {
                    (
                        Block::User,
                        rest.strip_prefix(' ').unwrap_or(rest).trim_end().to_owned(),
                    )
                } else if let Some(rest) = line.strip_prefix('>') {
                    (
                        Block::Output,
                        rest.strip_prefix(' ').unwrap_or(rest).trim_end().to_owned(),
                    )
                } else {
                    match current.as_ref().map(|c| c.0) {
                        // A blank line after user or aider output does not start an assistant reply.
                        Some(Block::User | Block::Output) if line.trim().is_empty() => continue,
                        _ => (Block::Assistant, line.to_owned()),
                    }
                };
                if current.as_ref().is_some_and(|c| c.0 == kind) {
                    if let Some(c) = current.as_mut() {
                        c.1.push(content);
                    }
                } else {
                    flush(&mut conv, current.take(), seen_user);
                    seen_user |= kind == Block::User;
                    current = Some((kind, vec![content]));
                }
            }
            flush(&mut conv, current, seen_user);
            let mut ep = episode(
                origin,
                many.then(|| stamp.clone()),
                "aider",
                conv.into_items(),
            );
            ep.meta.insert("started_at".into(), stamp.into());
            ep
        })
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
