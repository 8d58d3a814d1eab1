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
//!   and the text of the summary aider writes of older turns once they pass its chat-history budget. Where
//!   aider replaced them, and which, follows from its rule ([`summary`]): the episode keeps the whole history
//!   and what aider sent is kept as a recorded compaction (`meta.recorded_compaction`, replayed by
//!   `as_recorded`), a change point of the unrecorded context. What aider sent replays well below what aider
//!   reports, and never above it. Where the transcript shows that part change — `/add`,
//!   `/drop`, `/read-only`, files added on the model's mention, `/undo`, another chat mode's system prompt
//!   (`/ask`, `/code`, `/architect`, `/chat-mode`), a file aider must commit again before applying edits (it
//!   changed outside aider), a lint commit — the call point it changes from is recorded
//!   (`meta.usage.context_changes`), and the fit of the unrecorded context ([`crate::replay::fit`]) starts a
//!   segment there. An applied edit whose SEARCH/REPLACE blocks the reply holds ([`edits`]; where some blocks
//!   failed to match, the others) is no change point: its text is kept (`meta.usage.context_edits`) and the
//!   file grows by its size from the next call on; `/undo` of that edit's commit reverts it by the same. An
//!   applied edit without blocks (the `whole` format: the file's old text is not in the transcript) stays a
//!   change point. Not shown, so none: the repo map aider recomputes for each message (ranked by the files
//!   and identifiers it mentions, within its budget: rebuilt with aider's own `RepoMap` for session0288, 936–1,174 tokens at
//!   every call, `scripts/aider_reconstruct.py`), and the size of
//!   aider's summaries ([`summary`]), which decides when aider summarizes again.

mod console;
mod edits;
mod lines;
mod summary;

use std::path::Path;

use regex::Regex;

use self::console::Command;
use self::lines::Block;
use super::{compacted, episode, sure, Conversation, Importer, Sniff};
use crate::error::Result;
use crate::history::usage::{CallUsage, ContextEdit, ProviderUsage};
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
    /// The edits applied to files in the chat whose size the transcript holds (SEARCH/REPLACE blocks).
    edits: Vec<ContextEdit>,
    /// The items that are aider's note after an applied edit: where it moved the turns before into its
    /// `done_messages`, which it summarizes past its budget ([`summary`]).
    notes: Vec<usize>,
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
    /// The SEARCH/REPLACE blocks of the last reply, those not yet applied.
    blocks: Vec<edits::Block>,
    /// The edits of the last reply that applied, and the commit aider made of them (`/undo` reverts it).
    last_applied: Vec<ContextEdit>,
    /// Whether a lint commit followed the last applied edits (their commit is then not the last one).
    linted: bool,
    /// The commit aider made of the last applied edits (`hash message`).
    last_commit: Option<String>,
    /// The files aider committed an edit of in this session: one it must commit again before applying edits
    /// ("Committing … before applying edits") changed outside aider since.
    committed: Vec<String>,
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
            blocks: Vec::new(),
            last_applied: Vec::new(),
            linted: false,
            last_commit: None,
            committed: Vec::new(),
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

    /// aider's note after an applied edit (the commit it made, if any): the turns before it move back.
    fn edit_note(&mut self, commit: Option<&str>) {
        self.ctx.notes.push(self.ctx.conv.len());
        self.ctx
            .conv
            .observation("aider", console::edit_note(commit));
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
            self.edit_note(commit.as_deref());
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
                // The files of the last commit go back to what they were: the reverse of the last edits
                // where that commit was theirs (`Removed: …` says which), else a change of unknown size.
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
            if self.edit.is_none() {
                self.last_applied.clear();
                self.linted = false;
                self.last_commit = None;
            }
            if let Some(file) = first.strip_prefix("Applied edit to ") {
                // A file in the chat changed: the next call sends it as it is now.
                let blocks = self.blocks_of(file.trim());
                self.applied(file.trim(), blocks);
            }
            self.edit.get_or_insert(None);
        } else if first.starts_with("# The other ") && first.contains("applied successfully") {
            self.partly_applied();
        } else if let Some(file) = first
            .strip_prefix("Committing ")
            .and_then(|r| r.strip_suffix(" before applying edits."))
        {
            // The file changed outside aider since aider committed it last in this session: by how much the
            // transcript does not say; most likely before the prompt just answered.
            if self.committed.iter().any(|f| edits::same_file(f, file)) {
                let at = self.ctx.points.len().saturating_sub(1);
                self.ctx.changes.push(at);
                self.ctx.changes.sort_unstable();
                self.ctx.changes.dedup();
            }
        } else if let (Some(_), Some(None)) = (first.strip_prefix("Commit "), &self.edit) {
            // The commit's whole message, its body included.
            let text = message.join("\n");
            self.last_commit = Some(text["Commit ".len()..].to_owned());
            self.edit = Some(Some(text["Commit ".len()..].to_owned()));
        } else if let (Some(_), Some(Some(_))) = (first.strip_prefix("Commit "), &self.edit) {
            // A second commit after an edit's: the linter's fixes, of a size the transcript does not hold.
            self.linted = true;
            self.change();
        } else if let Some(removed) = first.strip_prefix("Removed: ") {
            if matches!(self.command, Some(Command::Undo)) {
                self.undone(removed);
            }
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
        self.blocks = edits::blocks(lines);
        if let Some(commit) = self.edit.take() {
            self.edit_note(commit.as_deref());
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
            let notes = ctx.notes;
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
                usage.context_edits = ctx.edits;
                usage.leaves_out =
                    Some("aider's system prompt, repo map and the files added to the chat".into());
                usage.changes_unshown = Some(
                    "the size of each summary of older turns aider sent, which the transcript does not \
                     hold and on which aider's rule for when to summarize again depends, and the repo \
                     map, which aider recomputes for each message within its budget"
                        .into(),
                );
                usage.counted_by = counted_by(&ep, &usage);
                usage.store(&mut ep);
                // Where aider summarized older turns, what it sent instead ([`summary`]).
                let (sent, compactions) = summary::replay(&ep, &notes);
                if !compactions.is_empty() {
                    compacted::store("aider summary of older turns", compactions, &mut ep, &sent);
                }
            }
            ep
        })
        .collect()
}

/// The tokenizer aider's `Tokens:` reports were counted with, where they are aider's own count and not the
/// provider's. Until aider read usage from the stream (none of the shared sessions, v0.48–v0.51, did for a
/// streamed reply), `Coder.calculate_and_show_tokens_and_cost` counted with `main_model.token_count`: received
/// is cl100k_base of the reply as aider kept it (litellm 1.43's `encode`, for every model), sent litellm's
/// `token_counter` of the messages (`openai_token_counter`: o200k_base for a model named gpt-4o…, else
/// cl100k_base; 3 tokens a message and its role). Said where each reported reply the transcript holds is
/// within 1% of its received count (an interrupted one without the "^C KeyboardInterrupt" aider appends after
/// counting) and at least one is equal: the prompt counts are then the same count's, named here.
fn counted_by(ep: &Episode, usage: &ProviderUsage) -> Option<String> {
    if usage.approximate {
        return None;
    }
    let replies = ep.assistant_messages();
    let records = usage.per_call_point(replies.len())?;
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let mut equal = false;
    for (k, c) in &records {
        let reply = replies[*k]
            .strip_suffix("\n^C KeyboardInterrupt")
            .unwrap_or(replies[*k]);
        let counted = bpe.encode_ordinary(reply).len() as u64;
        if counted.abs_diff(c.output_tokens) * 100 > c.output_tokens {
            return None;
        }
        equal |= counted == c.output_tokens;
    }
    let models = ep.models();
    let gpt_4o = |m: &str| m.to_ascii_lowercase().contains("gpt-4o");
    let encoding = if !models.is_empty() && models.iter().all(|(m, _)| gpt_4o(m)) {
        crate::tokens::Encoding::O200kBase
    } else if models.iter().all(|(m, _)| !gpt_4o(m)) {
        crate::tokens::Encoding::Cl100kBase
    } else {
        return None;
    };
    equal.then(|| encoding.as_str().to_owned())
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
mod tests;
