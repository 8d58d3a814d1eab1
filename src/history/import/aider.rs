//! aider chat history markdown: `#### ` lines are the user's, `> ` lines are aider's console output, and
//! unprefixed text is the model's. A file may hold several sessions, each starting with `# aider chat started
//! at …`; a Jekyll page wrapping a transcript is unwrapped first. How lines form blocks is in [`lines`]; what
//! console output reached the model, and as which message, is in [`console`].
//!
//! What the model was sent, as aider builds it (read at v0.48–v0.51, the versions of the public sessions, and
//! checked against today's aider where it differs):
//! - a user block is one prompt; aider's commands (`/add`, `/run`, `/ask` — whose question follows as a
//!   prompt of its own) are not sent. A command may be a prefix of one (`/cle` is `/clear`);
//! - `/clear` and `/reset` empty the chat history: later requests hold nothing said before. Each context
//!   between them is an episode of its own (`#context2`, …), so that every episode is one growing request;
//! - a reply is one call, its `Tokens:` report (the one right after it) the provider's count, rounded where
//!   aider writes `5.8k`. A reply interrupted with ^C (`^C again to exit` is written before its partial text)
//!   is a call with no report, named in `meta.usage.unrecorded`; aider keeps the partial text followed by
//!   `^C KeyboardInterrupt` (since v0.72.2, "I see that you interrupted my previous reply." instead). A
//!   request that failed (`Unexpected error`, or an error aider retried) is a failed call, named in
//!   `meta.usage.failed`, with no reply and no call point; the prompt stays in aider's history;
//! - console output is sent only as a message aider builds from it ([`console`]), an observation here;
//!   after each applied edit aider adds the commit note ("I committed the changes with git hash …") and an
//!   "Ok." of its own — the note is kept, the "Ok." is not (it would be a call point that was never a call);
//! - not in the transcript, so not replayed: the system prompt, the repository map, the files in the chat,
//!   and the summary aider writes of older turns once they pass its chat-history budget. Replayed tokens are
//!   well below what aider reports, and never above it. Where the transcript shows that part change — `/add`,
//!   `/drop`, `/read-only`, files added on the model's mention, an applied edit, `/undo`, another chat mode's
//!   system prompt (`/ask`, `/code`, `/architect`, `/chat-mode`) — the call point it changes from is recorded
//!   (`meta.usage.context_changes`), and the fit of the unrecorded context ([`crate::replay::fit`]) starts a
//!   segment there. A summary of older turns is not shown, so it is not one.

mod console;
mod lines;

use std::path::Path;

use regex::Regex;

use self::console::Command;
use self::lines::Block;
use super::{episode, sure, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::{CallUsage, ProviderUsage};
use crate::history::{Episode, Role};

/// aider's commands (every version's), for resolving a prefix the way aider does.
const COMMANDS: [&str; 43] = [
    "add",
    "architect",
    "ask",
    "chat-mode",
    "clear",
    "clipboard",
    "code",
    "commit",
    "context",
    "copy",
    "copy-context",
    "diff",
    "drop",
    "edit",
    "editor",
    "editor-model",
    "exit",
    "git",
    "help",
    "lint",
    "load",
    "ls",
    "map",
    "map-refresh",
    "model",
    "models",
    "multiline-mode",
    "ok",
    "paste",
    "quit",
    "read",
    "read-only",
    "reasoning-effort",
    "report",
    "reset",
    "run",
    "save",
    "settings",
    "test",
    "think-tokens",
    "tokens",
    "undo",
    "voice",
];

/// The command a user line runs, as aider resolves it (an exact name, or a prefix of only one), and the text
/// after its first word; `None` when the line is not a command or names none.
fn command(input: &str) -> Option<(&'static str, &str)> {
    if let Some(rest) = input.strip_prefix('!') {
        return Some(("run", rest));
    }
    let word = input.strip_prefix('/')?.split_whitespace().next()?;
    let rest = &input[1 + word.len()..];
    let exact = COMMANDS.iter().find(|c| **c == word);
    let mut prefixed = COMMANDS.iter().filter(|c| c.starts_with(word));
    let name = exact.or_else(|| match (prefixed.next(), prefixed.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    })?;
    Some((name, rest))
}

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

/// The main model a console line announces: aider's header (`Main model: X with diff edit format…`,
/// `Models: X with …, weak model Y`, `Model: X with …` or `Model: X using …`), written at the start and after
/// each `/model`.
fn announced_model(line: &str) -> Option<&str> {
    ["Main model: ", "Models: ", "Model: "]
        .iter()
        .find_map(|p| line.strip_prefix(p))
        .and_then(|rest| rest.split_whitespace().next())
}

/// The aider version a session's header names, as (major, minor, patch).
fn version(lines: &[&str]) -> Option<(u32, u32, u32)> {
    let re = Regex::new(r"^> Aider v(\d+)\.(\d+)\.(\d+)").expect("static pattern");
    lines.iter().find_map(|l| {
        let c = re.captures(l)?;
        Some((c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?))
    })
}

/// One context: the chat history from the session's start, or from a `/clear`, to the next.
#[derive(Default)]
struct Context {
    conv: Conversation,
    /// Per call point: the provider's count, or why there is none.
    points: Vec<std::result::Result<CallUsage, String>>,
    failed: Vec<String>,
    rounded: bool,
    /// The command that started it, for the second context on.
    cleared_by: Option<&'static str>,
    /// The call points from which what aider sends besides the history changes, as the transcript shows: the
    /// files in the chat (`/add`, `/drop`, `/read-only`, files added on the model's mention, an applied edit,
    /// `/undo`) and the system prompt of another chat mode (`/ask`, `/code`, `/architect`, `/chat-mode`).
    changes: Vec<usize>,
}

/// Reads one session's blocks into its contexts.
struct Reader<'a> {
    contexts: Vec<Context>,
    ctx: Context,
    /// Console messages since the last user input or reply.
    since: Vec<&'a [&'a str]>,
    /// The last command whose output aider may send.
    command: Option<Command>,
    /// A prompt was sent and its reply has not come (nor failed).
    awaiting: bool,
    /// The last call may still take its `Tokens:` report.
    report_open: bool,
    /// An edit was applied since the last reply: the commit that followed it, if any.
    edit: Option<Option<String>>,
    /// Whether aider (v0.72.2 on) replaces an interrupted reply with a note.
    interrupt_note: bool,
    /// The main model aider last announced.
    model: Option<String>,
    /// A one-off chat mode (`/ask question`) was entered: the call after its own goes back to the main mode.
    mode_once: bool,
}

impl<'a> Reader<'a> {
    fn new(version: Option<(u32, u32, u32)>) -> Self {
        Self {
            contexts: Vec::new(),
            ctx: Context::default(),
            since: Vec::new(),
            command: None,
            awaiting: false,
            report_open: false,
            edit: None,
            interrupt_note: version.is_some_and(|v| v >= (0, 72, 2)),
            model: None,
            mode_once: false,
        }
    }

    /// Whether the call in flight was interrupted: a `^C again to exit` since the user's input, after any
    /// failed attempt (a ^C after a failure is at the prompt).
    fn interrupted(&self) -> bool {
        let at = |p: &str| {
            self.since
                .iter()
                .rposition(|m| m.first().is_some_and(|l| l.starts_with(p)))
        };
        at("^C again to exit") > at("Unexpected error")
    }

    /// A call: the reply aider keeps, one call point, no report yet.
    fn call(&mut self, text: &str, interrupted: bool) {
        let kept = match (interrupted, self.interrupt_note) {
            (false, _) => text.to_owned(),
            (true, true) => "I see that you interrupted my previous reply.".to_owned(),
            (true, false) => format!("{text}\n^C KeyboardInterrupt").trim().to_owned(),
        };
        if kept.trim().is_empty() {
            self.ctx
                .failed
                .push("an empty reply (aider keeps nothing of it)".into());
            return;
        }
        self.ctx.conv.message(Role::Assistant, kept);
        self.ctx.points.push(Err(if interrupted {
            "interrupted with ^C before aider's `Tokens:` report".into()
        } else {
            "no `Tokens:` report follows the reply".into()
        }));
        self.awaiting = false;
        self.report_open = true;
        if std::mem::take(&mut self.mode_once) {
            self.change();
        }
    }

    /// What aider sends besides the history changes from the next call point on.
    fn change(&mut self) {
        let at = self.ctx.points.len();
        if self.ctx.changes.last() != Some(&at) {
            self.ctx.changes.push(at);
        }
    }

    /// What happened before the next user input, a `/clear` or the end: a prompt interrupted before any reply
    /// text is a call; an applied edit leaves aider's note, which matters only when the context goes on.
    fn settle(&mut self, goes_on: bool) {
        if self.awaiting && self.interrupted() {
            self.call("", true);
        }
        if let Some(commit) = self.edit.take().filter(|_| goes_on) {
            self.ctx
                .conv
                .observation("aider", console::edit_note(commit.as_deref()));
        }
        self.since.clear();
        self.report_open = false;
        self.awaiting = false;
    }

    fn user(&mut self, lines: &[&str]) {
        let text = lines.join("\n");
        let text = text.trim();
        let clears = matches!(command(text), Some(("clear" | "reset", _)));
        self.settle(!clears);
        if text.is_empty() || text == "<blank>" {
            self.command = None;
            return;
        }
        match command(text) {
            Some((name @ ("clear" | "reset"), _)) => {
                let mut next = Context {
                    cleared_by: Some(name),
                    ..Context::default()
                };
                if let Some(m) = &self.model {
                    next.conv.model(m);
                }
                self.contexts.push(std::mem::replace(&mut self.ctx, next));
                self.command = None;
            }
            Some((name @ ("run" | "test"), args)) => {
                self.command = Some(Command::Run {
                    name,
                    args: args.trim_end().to_owned(),
                });
            }
            Some(("undo", _)) => {
                // The files of the last commit go back to what they were.
                self.change();
                self.command = Some(Command::Undo);
            }
            Some(("add" | "drop" | "read-only", _)) => {
                self.change();
                self.command = None;
            }
            Some((mode @ ("ask" | "code" | "architect" | "chat-mode"), args)) => {
                // Another mode's system prompt: for the one call of `/ask question`, or from here on.
                self.change();
                self.mode_once = mode != "chat-mode" && !args.trim().is_empty();
                self.command = None;
            }
            Some(_) => self.command = None,
            None if text.starts_with('/') => self.command = None,
            None => {
                self.ctx.conv.message(Role::User, text);
                self.command = None;
                self.awaiting = true;
            }
        }
    }

    fn console(&mut self, message: &'a [&'a str]) {
        let first = message.first().copied().unwrap_or("");
        // An announcement is a message of its own (a command's output that prints `Model: …` is not one).
        if let Some(m) = announced_model(first).filter(|_| message.len() == 1) {
            self.ctx.conv.model(m);
            self.model = Some(m.to_owned());
        }
        if let Some((usage, rounded)) = usage_of(first) {
            if !self.report_open && self.awaiting && self.interrupted() {
                // Interrupted before any text, and reported (aider ≥ 0.50 reports interrupted calls).
                self.call("", true);
            }
            if self.report_open {
                if let Some(last) = self.ctx.points.last_mut() {
                    *last = Ok(usage);
                }
                self.ctx.rounded |= rounded;
                self.report_open = false;
            } else {
                self.ctx.failed.push(format!(
                    "a `Tokens:` report that follows no reply ({first})"
                ));
            }
        } else if first.starts_with("Unexpected error") {
            // aider keeps the prompt; it is sent again with the next one (or retried, in 0.48.2-dev).
            self.ctx.failed.push(first.chars().take(160).collect());
        } else if first.starts_with("Retrying in ") {
            // The attempt before failed with the error aider wrote just before.
            let error = self.since.last().and_then(|m| m.first()).map_or("", |l| *l);
            let error: String = error.chars().take(160).collect();
            self.ctx.failed.push(format!("retried: {error}"));
        } else if first.starts_with("^C KeyboardInterrupt") {
            if self.awaiting && self.interrupted() {
                self.call("", true);
            }
        } else if first.starts_with("Applied edit to ")
            || first.starts_with("Did not apply edit to ")
        {
            if first.starts_with("Applied edit to ") {
                // A file in the chat changed: the next call sends it as it is now.
                self.change();
            }
            self.edit.get_or_insert(None);
        } else if let (Some(_), Some(None)) = (first.strip_prefix("Commit "), &self.edit) {
            // The commit's whole message, its body included.
            let text = message.join("\n");
            self.edit = Some(Some(text["Commit ".len()..].to_owned()));
        } else if first.starts_with("Added ") && first.contains("of output to the chat") {
            // Since v0.6x `/run` output is added to the history without a call.
            if let Some((name, text)) = console::sent(&self.since, self.command.as_ref()) {
                self.ctx.conv.observation(name, text);
            }
            self.command = None;
        }
        self.since.push(message);
    }

    fn reply(&mut self, lines: &[&str]) {
        if let Some(commit) = self.edit.take() {
            self.ctx
                .conv
                .observation("aider", console::edit_note(commit.as_deref()));
        }
        if !self.awaiting {
            if let Some((name, text)) = console::sent(&self.since, self.command.as_ref()) {
                if text.starts_with("I added these files to the chat") {
                    self.change();
                }
                self.ctx.conv.observation(name, text);
            }
        }
        let interrupted = self.interrupted();
        self.call(lines.join("\n").trim(), interrupted);
        self.since.clear();
        self.command = None;
    }

    fn finish(mut self) -> Vec<Context> {
        self.settle(false);
        self.contexts.push(self.ctx);
        self.contexts
    }
}

/// The episodes of one session: one per context with a call in it.
fn session(origin: &Path, session: Option<&str>, stamp: &str, lines: &[&str]) -> Vec<Episode> {
    let blocks = lines::blocks(lines);
    let version = version(lines);
    let mut reader = Reader::new(version);
    for block in &blocks {
        match block {
            Block::User(l) => reader.user(l),
            Block::Console(m) => reader.console(m),
            Block::Reply(l) => reader.reply(l),
        }
    }
    let contexts: Vec<Context> = reader
        .finish()
        .into_iter()
        .filter(|c| !c.points.is_empty() || !c.failed.is_empty())
        .collect();
    let reports = lines.iter().any(|l| l.starts_with("> Tokens: "));
    let many = contexts.len() > 1;
    contexts
        .into_iter()
        .enumerate()
        .map(|(n, ctx)| {
            let suffix = match (session, many) {
                (None, false) => None,
                (Some(s), false) => Some(s.to_owned()),
                (None, true) => Some(format!("context{}", n + 1)),
                (Some(s), true) => Some(format!("{s} context{}", n + 1)),
            };
            let marks = ctx.conv.model_marks().to_vec();
            let mut ep = episode(origin, suffix, "aider", ctx.conv.into_items());
            // A context ends waiting for its user, or cleared: no call follows the last reply.
            ep.stopped = true;
            // The main model aider announced at the start and after each `/model`.
            ep.set_model_marks(None, &marks);
            ep.meta.insert("started_at".into(), stamp.into());
            if let Some((a, b, c)) = version {
                ep.meta
                    .insert("aider_version".into(), format!("{a}.{b}.{c}").into());
            }
            if many {
                ep.meta.insert("context".into(), (n + 1).into());
            }
            if let Some(by) = ctx.cleared_by {
                ep.meta.insert("started_by".into(), format!("/{by}").into());
            }
            // A transcript from before aider reported tokens records no usage at all.
            if reports {
                let mut usage = ProviderUsage::from_call_points("Tokens: reports", ctx.points);
                usage.approximate = ctx.rounded;
                usage.failed = ctx.failed;
                usage.context_changes = ctx.changes;
                usage.leaves_out =
                    Some("aider's system prompt, repo map and the files added to the chat".into());
                usage.store(&mut ep);
            }
            ep
        })
        .collect()
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
        .iter()
        .filter(|(_, lines)| lines.iter().any(|l| l.starts_with("####")))
        .flat_map(|(stamp, lines)| session(origin, many.then_some(stamp.as_str()), stamp, lines))
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
        if t.starts_with("# aider chat started at")
            || t.contains("\n# aider chat started at")
            || t.contains("class=\"chat-transcript\"")
        {
            return Some(sure::CERTAIN);
        }
        // A transcript cut out of a session, without its header: it opens on a prompt (`#### `) and holds
        // aider's console lines (`> `).
        (t.starts_with("#### ") && t.lines().any(|l| l.starts_with("> "))).then_some(sure::LIKELY)
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

    /// What aider sends besides the history changes where the transcript shows it: `/add` before the first
    /// call, an applied edit (the next call sends the file as edited), `/ask question` (the ask prompt for its
    /// one call, the main prompt again after it), `/undo` (the files back as they were); a failed edit and a
    /// `/run` (its output is in the history) change nothing.
    #[test]
    fn changes_to_what_aider_sends_are_recorded() {
        let text = "# aider chat started at 2024-08-21 09:31:03\n\n\
            > Aider v0.51.2-dev  \n\
            > Main model: claude-3-5-sonnet-20240620 with diff edit format, infinite output  \n\n\
            #### /add a.py  \n\
            > Added /x/a.py to the chat  \n\n\
            #### first  \n\nOne.\n\n> Tokens: 1,000 sent, 10 received.  \n\
            > Applied edit to a.py  \n\
            > Commit abc1234 fix: one  \n\n\
            #### second  \n\nTwo.\n\n> Tokens: 1,100 sent, 10 received.  \n\
            > Did not apply edit to a.py (--dry-run)  \n\n\
            #### /ask why  \n\n\
            ####  why  \n\nBecause.\n\n> Tokens: 900 sent, 10 received.  \n\n\
            #### third  \n\nThree.\n\n> Tokens: 1,200 sent, 10 received.  \n\n\
            #### /undo  \n\
            > Removed: abc1234 fix: one  \n\n\
            #### fourth  \n\nFour.\n\n> Tokens: 1,150 sent, 10 received.  \n";
        let eps = import(text, Path::new("h.md")).unwrap();
        assert_eq!(eps.len(), 1);
        let usage = ProviderUsage::of(&eps[0]).unwrap();
        assert_eq!(usage.calls.len(), 5);
        assert_eq!(usage.context_changes, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn commands_resolve_as_aider_resolves_them() {
        assert_eq!(command("/cle"), Some(("clear", "")));
        assert_eq!(command("/clean"), None);
        assert_eq!(command("/c"), None);
        assert_eq!(command("/test pytest -k x"), Some(("test", " pytest -k x")));
        assert_eq!(command("!ls"), Some(("run", "ls")));
        assert_eq!(command("/ex"), Some(("exit", "")));
        assert_eq!(command("hello"), None);
    }

    #[test]
    fn the_main_model_of_each_announcement() {
        for (line, model) in [
            (
                "Main model: claude-3-5-sonnet-20240620 with diff edit format, infinite output",
                Some("claude-3-5-sonnet-20240620"),
            ),
            (
                "Models: openrouter/anthropic/claude-3.5-sonnet with ask edit format, weak model x",
                Some("openrouter/anthropic/claude-3.5-sonnet"),
            ),
            (
                "Model: claude-3-haiku-20240307 with ♾️ whole edit format",
                Some("claude-3-haiku-20240307"),
            ),
            ("Model: gpt-4 using diff edit format", Some("gpt-4")),
            ("Weak model: claude-3-haiku-20240307", None),
            ("Tokens: 5.8k sent", None),
        ] {
            assert_eq!(announced_model(line), model, "{line}");
        }
    }

    /// The header's model answers until `/model` announces another; a `/clear` keeps the model in force.
    #[test]
    fn a_model_switch_is_a_switch_from_the_next_reply_on() {
        let text = "# aider chat started at 2024-08-08 10:12:57\n\n\
            > Aider v0.48.2-dev  \n\
            > Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku-20240307  \n\n\
            #### first  \n\nOne.\n\n> Tokens: 1,000 sent, 10 received.  \n\n\
            #### /model gpt-4o  \n\n\
            > Aider v0.48.2-dev  \n\
            > Models: gpt-4o with diff edit format, weak model gpt-4o-mini  \n\n\
            #### second  \n\nTwo.\n\n> Tokens: 1,100 sent, 10 received.  \n\n\
            #### third  \n\nThree.\n\n> Tokens: 1,200 sent, 10 received.  \n\n\
            #### /clear  \n\n\
            #### fourth  \n\nFour.\n\n> Tokens: 900 sent, 10 received.  \n";
        let eps = import(text, Path::new("h.md")).unwrap();
        assert_eq!(eps.len(), 2);
        assert_eq!(eps[0].model.as_deref(), Some("gpt-4o"));
        assert_eq!(
            (0..3).map(|k| eps[0].model_at(k)).collect::<Vec<_>>(),
            [
                Some("claude-3-5-sonnet-20240620"),
                Some("gpt-4o"),
                Some("gpt-4o")
            ]
        );
        assert_eq!(eps[1].models(), [("gpt-4o", 1)]);
    }
}
