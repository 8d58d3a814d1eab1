//! Automatic key findings for episodes without annotations.
//!
//! ## The rule
//! Deterministic, from the history alone:
//! 1. **Where facts come from.** The task (the first user message) and every observation of the environment
//!    (a tool result, or an observation sent as a user message).
//! 2. **Candidates.** A text is cut into URLs (kept whole) and words (runs of letters, digits and `_ . / -`;
//!    trailing `. - /` and leading `-` trimmed). A word is a candidate when it is
//!    - a path (a `/` and a letter, or a known file extension) or a URL: an *artifact* finding;
//!    - a number of at least three digits: a *recall* finding;
//!    - a code (capitals and digits, both: `HAT238`, `EUJUY6`) or a hexadecimal hash of seven digits or more
//!      (`cc2b48b`): a *recall* finding;
//!    - an identifier of at least six characters with a `_` or mixed case: a *recall* finding.
//! 3. **Noise left out.** Line and column numbers (a number after `:` or after `line`, or a file view's line
//!    prefix such as `1475:`, `41|`, `42│`, `42→` or `42` and a tab), dotted leaders of status lines
//!    (`isort....Passed`), version strings (two dots or more, or right after a `v`), CSS colours
//!    (`color: #888`), one-letter expressions (`a/b`), interpreter lines (`#!/usr/bin/env`), closing tags
//!    (`</div>`), MIME types (`text/html`), generic exception names (`ValueError`, `TypeError`…), dunder names
//!    (`__init__`), the agent's own tool names, and JSON keys (a word written as `"word":` wherever this text
//!    has it). A leading `./` is not part of a path (`./App.css` is `App.css`). Bare common numbers: a round
//!    number (`500`, `1000`: two significant digits at most, then two zeros or more) or a power of two from 128
//!    (`1024`) is in every program and status line, so it is a candidate only where the text gives it as a
//!    value (`"amount": 500`, `$500`, `price=1000`) or a year (`in 2000`); other numbers (a price `158`, an id
//!    `4719`, a year `1842`) are kept wherever they are. Agents' own formats: aider's edit markers
//!    (`SEARCH/REPLACE`, `SearchReplaceNoExactMatch`), mini-swe-agent's command that ends a run
//!    (`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`) and whatever is inside Claude Code's `<system-reminder>` blocks;
//!    a code after `#` is a colour (`#646cffaa`).
//! 4. **Needed later.** A candidate is a finding when the text that introduced it is the first to hold it and a
//!    later assistant turn (its text or its tool calls' arguments) uses it again. Its *need points* are the
//!    first items of those turns; it is labelled `from_task` when the task introduced it. A tool output's
//!    candidate that the task (its text or first user message) already holds is not one: the agent did not
//!    find it there. Nor is a candidate the replay would not find in its own text (`history::evidence`).
//! 5. At most [`MAX_FINDINGS`] per episode, in order of first appearance.
//!
//! ## Probes
//! Each finding gets a fill-in-the-blank probe, asked at the call point of its last need: the line that
//! introduced it, cut to the words around it, with the finding blanked, naming where it comes from ("the
//! output of `grep`", "the task"). A probe is made only when the blank leaves at least two words of context
//! and when every line of the history up to that point that fits the quote fits it with the finding alone: the
//! answer is unique where the probe is asked.

use std::collections::{HashMap, HashSet};

use crate::history::evidence::{canon, Needle, TaskText};
use crate::history::{turn_end, Episode, Finding, FindingKind, Item, Probe, Role};

/// The most findings extracted from one episode.
pub const MAX_FINDINGS: usize = 12;

const EXTENSIONS: [&str; 22] = [
    "py", "rs", "js", "ts", "tsx", "go", "java", "c", "h", "cpp", "md", "json", "toml", "yaml",
    "yml", "txt", "sh", "html", "css", "vue", "cfg", "ini",
];

/// Exception and warning names every language's runtime has: they say what kind of failure, not which.
pub(crate) const GENERIC_EXCEPTIONS: [&str; 34] = [
    "AssertionError",
    "AttributeError",
    "DeprecationWarning",
    "Exception",
    "FileExistsError",
    "FileNotFoundError",
    "ImportError",
    "IndentationError",
    "IndexError",
    "IOError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "ModuleNotFoundError",
    "NameError",
    "NotADirectoryError",
    "NotImplementedError",
    "NullPointerException",
    "OSError",
    "OverflowError",
    "PermissionError",
    "RecursionError",
    "ReferenceError",
    "RuntimeError",
    "RuntimeWarning",
    "StopIteration",
    "SyntaxError",
    "SystemExit",
    "TimeoutError",
    "TypeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UserWarning",
    "ValueError",
];

const MIME_TOPS: [&str; 7] = [
    "text/",
    "application/",
    "image/",
    "audio/",
    "video/",
    "multipart/",
    "font/",
];

/// A word of a text and where it starts.
type Word<'t> = (usize, &'t str);

/// The URLs and words of `text`, in order, each with its byte offset.
fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut rest = 0;
    // URLs first, whole: `:` would otherwise cut them.
    let mut urls: Vec<(usize, usize)> = Vec::new();
    for scheme in ["https://", "http://"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(scheme).map(|n| n + from) {
            let end = text[at..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | ']' | '`')
                })
                .map_or(text.len(), |n| at + n);
            let url = text[at..end].trim_end_matches(['.', ',', ';', ':']);
            urls.push((at, at + url.len()));
            from = end.max(at + scheme.len());
        }
    }
    urls.sort_unstable();
    for (start, end) in urls
        .into_iter()
        .chain(std::iter::once((text.len(), text.len())))
    {
        if start < rest {
            continue;
        }
        let segment = &text[rest..start];
        let is_word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-');
        let mut from = None;
        for (i, c) in segment
            .char_indices()
            .chain(std::iter::once((segment.len(), ' ')))
        {
            match (from, is_word(c) && i < segment.len()) {
                (None, true) => from = Some(i),
                (Some(f), false) => {
                    let piece = &segment[f..i];
                    // `./App.css` is `App.css`; `--flag` is `flag`.
                    let trimmed = piece.trim_start_matches('-');
                    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
                    let lead = piece.len() - trimmed.len();
                    let word = trimmed.trim_end_matches(['.', '-', '/']);
                    if word.len() >= 3 {
                        out.push((rest + f + lead, word));
                    }
                    from = None;
                }
                _ => {}
            }
        }
        if end > start {
            out.push((start, &text[start..end]));
        }
        rest = end;
    }
    out
}

/// The kind of finding the word at `at` of `text` would be, if it is a candidate at all.
fn candidate(text: &str, (at, word): Word<'_>) -> Option<FindingKind> {
    // A dotted leader (`isort....Passed`, a lint or test runner's status line) names no fact.
    if word.len() > 160 || word.contains("...") {
        return None;
    }
    // An agent's own format is no fact of the task.
    if MARKERS.contains(&word) {
        return None;
    }
    if word.starts_with("http://") || word.starts_with("https://") {
        return Some(FindingKind::Artifact);
    }
    let before = &text[..at];
    let ext = word
        .rsplit_once('.')
        .map(|(stem, ext)| (stem, ext.to_ascii_lowercase()));
    let has_ext = ext
        .as_ref()
        .is_some_and(|(stem, e)| !stem.is_empty() && EXTENSIONS.contains(&e.as_str()));
    if has_ext || (word.contains('/') && word.chars().any(char::is_alphabetic)) {
        let mime = MIME_TOPS.iter().any(|t| word.starts_with(t)) && word.matches('/').count() == 1;
        // `a/b` is a division, `#!/usr/bin/env` an interpreter line, `</div>` a closing tag.
        let expression = !has_ext && word.split('/').all(|part| part.chars().count() <= 1);
        let shebang = before.ends_with("#!");
        let tag = before.ends_with('<') && word.starts_with('/');
        return (!mime && !expression && !shebang && !tag).then_some(FindingKind::Artifact);
    }
    let digits = word.chars().filter(char::is_ascii_digit).count();
    if digits >= 3
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | ':'))
    {
        let after = &text[at + word.len()..];
        // A file view's line prefix (`1475:` in SWE-agent, `41|` in OpenHands, `  42│` in aider, `42\t` of
        // `cat -n`, `  42→` in Claude Code) or a position in a message.
        let line_prefix = before
            .rsplit('\n')
            .next()
            .is_some_and(|l| l.trim().is_empty())
            && after.starts_with([':', '|', '\t', '│', '→']);
        let position = line_prefix
            || before.ends_with(':')
            || before.trim_end().to_ascii_lowercase().ends_with("line")
            || before.trim_end().to_ascii_lowercase().ends_with("lines");
        let version = word.matches('.').count() >= 2 || before.ends_with(['v', 'V']);
        // A CSS colour (`color: #888;`).
        let colour = before.ends_with('#')
            && matches!(word.len(), 3 | 6)
            && before[..at - 1].trim_end().ends_with(':');
        // A round number or a power of two (`1000`, `1024`) is in every program and every status line: the
        // agent writing it again recalls nothing unless this text gave it as a value (`"amount": 500`, `$500`,
        // `in 2000`).
        let bare = common_number(word) && !a_value(before) && !a_year(word, before);
        return (!position && !version && !colour && !bare).then_some(FindingKind::Recall);
    }
    // A code, not a colour (`#646cffaa`).
    if code(word) && !before.ends_with('#') {
        return Some(FindingKind::Recall);
    }
    let mixed =
        word.chars().any(char::is_lowercase) && word.chars().skip(1).any(char::is_uppercase);
    if word.len() >= 6 && word.chars().any(char::is_alphabetic) && (word.contains('_') || mixed) {
        // Dunder names (`__init__`, `__name__`) belong to the language, not to this task.
        let dunder = word.starts_with("__") && word.ends_with("__");
        return (!GENERIC_EXCEPTIONS.contains(&word) && !dunder).then_some(FindingKind::Recall);
    }
    None
}

/// The words agents' own formats write around the task's facts, which are no fact of the task: aider's edit
/// format and its errors, mini-swe-agent's command that ends a run (Claude Code's reminders are left out
/// whole, [`reminders`]).
const MARKERS: [&str; 4] = [
    "SEARCH/REPLACE",
    "SearchReplaceNoExactMatch",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "MINI_SWE_AGENT_FINAL_OUTPUT",
];

/// The byte ranges of `text`'s `<system-reminder>` blocks, which Claude Code adds to tool results and user
/// messages: its own instructions, not the environment's output (an unclosed one runs to the end).
fn reminders(text: &str) -> Vec<(usize, usize)> {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find(OPEN).map(|n| n + from) {
        let end = text[open..]
            .find(CLOSE)
            .map_or(text.len(), |n| open + n + CLOSE.len());
        out.push((open, end));
        from = end;
    }
    out
}

/// Whether the number `word` is one every program and log holds: round (`500`, `1000`, `25000`: at most two
/// significant digits and two zeros or more after them) or a power of two from 128 (`1024`, `4096`).
fn common_number(word: &str) -> bool {
    if !word.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let significant = word.trim_end_matches('0');
    let zeros = word.len() - significant.len();
    let round = zeros >= 2 && significant.len() <= 2;
    let power = word
        .parse::<u64>()
        .is_ok_and(|n| n >= 128 && n.is_power_of_two());
    round || power
}

/// Whether the text `before` a number gives it as a value: after a currency sign, or as a field's value
/// (`"amount": `, `price=`, `total: `), not as a position (`file.py:12`, which [`candidate`] leaves out).
fn a_value(before: &str) -> bool {
    let b = before.trim_end_matches([' ', '"', '\'']);
    if b.ends_with(['$', '€', '£', '¥']) {
        return true;
    }
    let Some(key) = b.strip_suffix([':', '=']) else {
        return false;
    };
    let key = key.trim_end().trim_end_matches(['"', '\'']);
    before.len() > b.len() || key.ends_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Whether the number `word` is a year as the text says it (`in 2000`, `since 1900`, `May 2000`).
fn a_year(word: &str, before: &str) -> bool {
    const BEFORE: [&str; 19] = [
        "in",
        "since",
        "until",
        "by",
        "year",
        "from",
        "of",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let year = word.len() == 4 && (word.starts_with("19") || word.starts_with("20"));
    let last = before
        .trim_end()
        .rsplit(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    year && BEFORE.contains(&last.as_str())
}

/// Whether `word` is an identifier written as a code: capitals and digits, both (`HAT238`, `EUJUY6`, a
/// flight or a booking), or a hexadecimal hash of seven digits or more (`cc2b48b`, a commit).
fn code(word: &str) -> bool {
    let letters = word.bytes().filter(u8::is_ascii_alphabetic).count();
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    let capitals = (5..=16).contains(&word.len())
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && letters >= 1
        && digits >= 1;
    let hash = word.len() >= 7
        && word
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && letters >= 1
        && digits >= 2;
    capitals || hash
}

/// Whether `word` is only ever a JSON or dictionary key in `text` (`"word":`, `'word':`).
fn only_a_key(text: &str, word: &str) -> bool {
    let mut any = false;
    for (at, _) in text.match_indices(word) {
        any = true;
        let after = text[at + word.len()..].trim_start_matches(['"', '\'']);
        let quoted = text[..at].ends_with(['"', '\'']);
        if !(quoted && after.trim_start().starts_with(':')) {
            return false;
        }
    }
    any
}

/// Where a finding comes from, as its probe names it.
fn source_of(item: &Item, from_task: bool) -> String {
    if from_task {
        return "the task".into();
    }
    match item {
        Item::ToolResult { name, .. } | Item::Observation { name, .. } if !name.is_empty() => {
            format!("the output of `{name}`")
        }
        _ => "the environment's output".into(),
    }
}

/// The quote of a probe: the words around `word` on its line, the word blanked, at most 60 characters on
/// each side, cut at word boundaries; `None` when fewer than two words of context are left.
fn quote(line: &str, at: usize, word: &str) -> Option<(String, String)> {
    let cut_left = |s: &str| -> String {
        if s.chars().count() <= 60 {
            return s.to_owned();
        }
        let skip = s.chars().count() - 60;
        let tail: String = s.chars().skip(skip).collect();
        // A record's fields (`"a": 1, "b": 2`) are cut between fields, a sentence between words.
        let field = tail
            .find(", ")
            .filter(|&at| at < tail.len() / 2)
            .map(|at| &tail[at + 2..]);
        field.map_or_else(
            || {
                tail.split_once(' ')
                    .map_or(tail.clone(), |(_, t)| t.to_owned())
            },
            str::to_owned,
        )
    };
    let cut_right = |s: &str| -> String {
        if s.chars().count() <= 60 {
            return s.to_owned();
        }
        let head: String = s.chars().take(60).collect();
        head.rsplit_once(' ')
            .map_or(head.clone(), |(h, _)| h.to_owned())
    };
    let left = cut_left(line[..at].trim_start());
    let right = cut_right(line[at + word.len()..].trim_end());
    let context = format!("{left} {right}");
    let words = context
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3)
        .count();
    (words >= 2).then_some((left, right))
}

/// A probe's quote between marks it does not hold, so that the question reads as one: `"…"`, else `` `…` ``,
/// else `«…»`.
fn delimited(quote: &str) -> String {
    if !quote.contains('"') {
        format!("\"{quote}\"")
    } else if !quote.contains('`') {
        format!("`{quote}`")
    } else {
        format!("«{quote}»")
    }
}

/// The fillers of `left ____ right` in `line`: for each place the quote fits, what stands in the blank (the
/// last word before `right` when `left` is empty, the first word after `left` when `right` is).
fn fillers<'l>(line: &'l str, left: &str, right: &str) -> Vec<&'l str> {
    let mut out = Vec::new();
    if left.is_empty() {
        for (r, _) in line.match_indices(right) {
            let before = line[..r].trim_end();
            let start = before.rfind(char::is_whitespace).map_or(0, |n| n + 1);
            out.push(&before[start..]);
        }
        return out;
    }
    for (l, _) in line.match_indices(left) {
        let after = &line[l + left.len()..];
        if right.is_empty() {
            out.push(after.split_whitespace().next().unwrap_or(""));
        } else if let Some(r) = after.find(right) {
            out.push(after[..r].trim());
        }
    }
    out
}

/// Whether the quote `left ____ right` fits some line of `texts`, and every line it fits with `word` alone.
fn unique(texts: &[&str], left: &str, right: &str, word: &str) -> bool {
    let mut fits = false;
    for line in texts.iter().flat_map(|t| t.lines()) {
        for filler in fillers(line, left, right) {
            if filler != word {
                return false;
            }
            fits = true;
        }
    }
    fits
}

/// Where each word first appears, and the assistant turns that use it (by the turn's first item).
type Uses<'t> = (HashMap<&'t str, usize>, HashMap<&'t str, Vec<usize>>);

/// [`Uses`] of the tokenized items.
fn uses<'t>(items: &[Item], tokenized: &[Vec<Word<'t>>]) -> Uses<'t> {
    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    let mut uses: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut turn_start = 0;
    for (i, ws) in tokenized.iter().enumerate() {
        if items[i].is_assistant_turn() && (i == 0 || !items[i - 1].is_assistant_turn()) {
            turn_start = i;
        }
        for &(_, w) in ws {
            first_seen.entry(w).or_insert(i);
            if items[i].is_assistant_turn() {
                let turns = uses.entry(w).or_default();
                if turns.last() != Some(&turn_start) {
                    turns.push(turn_start);
                }
            }
        }
    }
    (first_seen, uses)
}

/// The agent's own tool names, which are in every request's schemas: naming one is not a finding.
fn tool_names(ep: &Episode) -> HashSet<&str> {
    ep.items
        .iter()
        .filter_map(|i| match i {
            Item::ToolCall { name, .. } => Some(&**name),
            _ => None,
        })
        .chain(ep.tools.iter().filter_map(|t| {
            t.get("function")
                .unwrap_or(t)
                .get("name")
                .and_then(serde_json::Value::as_str)
        }))
        .collect()
}

/// How many of `ep`'s findings the agent found (the task does not give them, [`TaskText::gives`]) and needs at a
/// call point after it found them: the findings retention at need measures (`metrics::needs`, whose ledger
/// checks each need at the last call point at or before it, if that comes after the finding was introduced,
/// and a finding without need points at the last call point). An episode with none adds nothing to retention.
#[must_use]
pub fn found_needed_later(ep: &Episode) -> usize {
    let points = ep.call_points();
    let task = TaskText::new(ep);
    let checked = |introduced: usize, need: usize| {
        let at = points.partition_point(|&p| p <= need);
        at.checked_sub(1).is_some_and(|s| points[s] > introduced)
    };
    ep.findings
        .iter()
        .filter(|f| !task.gives(f))
        .filter(|f| {
            if f.needed_at.is_empty() {
                points.last().is_some_and(|&p| p > f.introduced_at)
            } else {
                f.needed_at.iter().any(|&n| checked(f.introduced_at, n))
            }
        })
        .count()
}

/// Adds automatic findings and probes to `ep` (which should have none).
pub fn extract(ep: &mut Episode) {
    let items = &ep.items;
    let task = items.iter().position(|i| i.is_role(Role::User));
    let task_text = TaskText::new(ep);
    let texts: Vec<String> = items.iter().map(Item::searchable_text).collect();
    let tokenized: Vec<Vec<Word<'_>>> = texts.iter().map(|t| words(t)).collect();
    let (first_seen, uses) = uses(items, &tokenized);
    let mut taken = tool_names(ep);
    let mut findings = Vec::new();
    let mut probes = Vec::new();
    'items: for (i, ws) in tokenized.iter().enumerate() {
        let from_task = Some(i) == task;
        if !(from_task || items[i].is_tool_output()) {
            continue;
        }
        let text = &texts[i];
        let mut canonical = None;
        let reminders = reminders(text);
        for &(at, w) in ws {
            if findings.len() >= MAX_FINDINGS {
                break 'items;
            }
            if reminders.iter().any(|&(a, b)| (a..b).contains(&at)) {
                continue;
            }
            let Some(kind) = candidate(text, (at, w)) else {
                continue;
            };
            let needed_at: Vec<usize> = uses
                .get(w)
                .map(|turns| turns.iter().copied().filter(|&t| t > i).collect())
                .unwrap_or_default();
            let finding = Finding {
                id: format!("auto{}", findings.len() + 1),
                text: String::new(),
                evidence: vec![w.to_owned()],
                introduced_at: i,
                kind,
                needed_at,
                from_task,
            };
            // A tool output's word the task already holds (as the replay reads it) was not found there; a word
            // the replay would not find in its own text (inside a longer number) is no evidence.
            if first_seen.get(w) != Some(&i)
                || finding.needed_at.is_empty()
                || only_a_key(text, w)
                || (!from_task && task_text.gives(&finding))
                || !Needle::new(w).exact_in(canonical.get_or_insert_with(|| canon(text)))
                || !taken.insert(w)
            {
                continue;
            }
            let source = source_of(&items[i], from_task);
            let needed_at = finding.needed_at.clone();
            findings.push(Finding {
                text: format!("{source} named '{w}'"),
                ..finding
            });
            let asked = Asked {
                word: (i, at, w),
                source: &source,
                n: findings.len(),
                kind,
            };
            probes.extend(probe(items, &texts, &asked, &needed_at));
        }
    }
    if !findings.is_empty() {
        ep.meta
            .insert("auto_findings".into(), serde_json::Value::Bool(true));
    }
    ep.findings = findings;
    ep.probes = probes;
}

/// What a probe asks about: the word `w` at byte `at` of item `i`, where it came from, its finding's number
/// and kind.
struct Asked<'a> {
    word: (usize, usize, &'a str),
    source: &'a str,
    n: usize,
    kind: FindingKind,
}

/// The probe of automatic finding `n`, the word `w` at byte `at` of item `i`: asked where it is needed last
/// (the call point before that turn), a fill-in-the-blank of its line that only `w` fits in what came before.
fn probe(
    items: &[Item],
    texts: &[String],
    asked: &Asked<'_>,
    needed_at: &[usize],
) -> Option<Probe> {
    let (i, at, w) = asked.word;
    let (source, n, kind) = (asked.source, asked.n, asked.kind);
    let text = &texts[i];
    let last_need = needed_at[needed_at.len() - 1];
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
    let line = &text[line_start..line_end];
    let (left, right) = quote(line, at - line_start, w)?;
    let seen: Vec<&str> = texts[..last_need].iter().map(String::as_str).collect();
    if !unique(&seen, &left, &right, w) {
        return None;
    }
    let end = turn_end(items, last_need);
    debug_assert!(end > last_need);
    Some(Probe {
        id: format!("auto{n}"),
        after_item: last_need - 1,
        question: format!(
            "From {source}: what fills the blank in {}?",
            delimited(&format!("{left}____{right}"))
        ),
        answers: vec![w.to_owned()],
        finding: Some(format!("auto{n}")),
        kind,
        reference: None,
    })
}

#[cfg(test)]
mod tests;
