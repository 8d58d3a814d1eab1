//! When a text holds a finding's evidence — "the fact is there" — and where a finding came from: the one rule
//! the replay, the reference replay, the validator, the automatic findings and the metrics share. The rule in
//! design terms, with examples, is docs/retention.md.
//!
//! ## The rule
//! Texts and evidence are compared in canonical form ([`canon`]): white space folded, thousands separators
//! dropped (`4,719` is `4719`), `NAME = value` and "NAME is value" written alike. Letters compare without case,
//! except in an evidence string's identifiers and quoted strings, which must have the case the evidence has
//! (`TimeDelta` is not `timedelta`, `MAX_RETRIES` not `max_retries`).
//! - **Exact**: a text holds an evidence string when it occurs there on token boundaries: never inside a
//!   longer number or identifier (`397` is not in `mia_kim_4397` nor in `1,397`, `202` not in `2024-05-15`,
//!   `1459` not in `TCK-1459`; see [`canon::on_boundaries`]).
//! - **Written**: a text a model wrote — a summary (it starts with [`SUMMARY_PREFIX`]), the agent's messages
//!   and reasoning, not its tool calls — also holds it when one of its lines holds every one of the evidence's
//!   *identifying tokens* and enough of its *content words* (tokens gathered from different lines, such as a
//!   summary's list of tools and its key findings, do not state a fact):
//!   - identifying tokens: its quoted strings, whole, and its words (runs of letters, digits and `_ . / : -`)
//!     that hold a digit, a `_`, a `/`, an inner `.` or `:`, two capitals, or a capital after a lower-case
//!     letter, except the generic exception names (`ValueError`…); each must be there as a whole token;
//!   - content words: its other words of four letters or more, but function words and the words that name
//!     the kind of a failure or the syntax around a value (`assert`, `error`, `AssertionError`…); a word is
//!     there when a word with the same stem is ([`canon::stem`]: `refunds`, `refunded` → `refund`);
//!   - enough: half of the content words, rounded up; with no identifying token, at least two words as well
//!     (when the evidence has two). So one token stands for a fact only when the evidence is that token:
//!     `LIMIT 200` does not hold "refunds above $200 need approval", "Let me read src/app3/billing.py" does not
//!     hold "edited src/app3/billing.py".
//! - **Not evidence**: what a strategy wrote in place of a recorded tool output or tool call (a compaction
//!   stub, a masking placeholder, a truncation marker). A tool output or call that the episode did not record
//!   holds evidence only in what it kept of the recorded one: their longest common start and end, or the
//!   recorded start held whole after a header of the strategy's (a preview, at least 64 bytes), cut back to
//!   whole tokens ([`visible`]). A tool output a model rewrote ([`REFINED_PREFIX`]) is a model's words, read
//!   as written. This is decided by comparing with the recording, not by the placeholder's
//!   wording, so it holds for any strategy, presets and external programs included.
//!
//! ## Where a finding came from
//! A finding is **from the task** when each of its evidence strings is, by the exact rule, in the episode's
//! `task` or in its first user message ([`TaskText`]); else the agent **found** it (in a tool output, an
//! observation, an earlier turn). Retention at need is over found findings; task-given ones are reported apart.

mod canon;

use std::borrow::Cow;

pub use canon::{canon, on_boundaries, pieces, stem, Canon};

use super::findings::GENERIC_EXCEPTIONS;
use super::{Episode, Finding, Item, Role, REFINED_PREFIX, SUMMARY_PREFIX};

/// How a text is read: exactly, or as a model's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reading {
    /// Evidence counts only where it occurs (tool output, tool calls, the user's and the system's messages).
    Exact,
    /// A model wrote it (a summary, the agent's messages and reasoning): evidence also counts by its
    /// identifying tokens and content words.
    Written,
}

/// How `item` is read: written by a model when it is a summary, an assistant message or reasoning.
#[must_use]
pub fn reading(item: &Item) -> Reading {
    let written = item.is_summary()
        || is_refined(item)
        || matches!(item, Item::Reasoning { .. })
        || item.is_role(Role::Assistant);
    if written {
        Reading::Written
    } else {
        Reading::Exact
    }
}

/// How an instruction (as written) is read: a summary a strategy had a model write is written.
#[must_use]
pub fn instruction_reading(text: &str) -> Reading {
    if text.starts_with(SUMMARY_PREFIX) {
        Reading::Written
    } else {
        Reading::Exact
    }
}

/// An identifying token of an evidence string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// Canonical, lower case: what is searched for.
    pub text: String,
    /// Canonical with its case, when the case must match (an identifier or a quoted string with letters).
    pub cased: Option<String>,
}

/// A needle: an evidence string in canonical form, with what a model-written text must hold of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Needle {
    /// The evidence, canonical, lower case.
    pub text: String,
    /// The evidence, canonical, with its case.
    cased: String,
    /// Byte ranges of `cased` whose case must match: its identifiers and quoted strings.
    case_spans: Vec<(usize, usize)>,
    /// Its identifying tokens.
    pub keys: Vec<Key>,
    /// The stems of its content words.
    pub words: Vec<String>,
    /// Content words a model-written text must hold.
    need: usize,
}

impl Needle {
    /// The needle of an evidence string.
    #[must_use]
    pub fn new(evidence: &str) -> Self {
        let c = canon(evidence);
        let (quoted, words) = split(&c.cased);
        let mut keys: Vec<Key> = Vec::new();
        let mut case_spans = Vec::new();
        let mut add = |keys: &mut Vec<Key>, (a, b): (usize, usize)| {
            let cased = &c.cased[a..b];
            let letters = cased.chars().any(char::is_alphabetic);
            if letters {
                case_spans.push((a, b));
            }
            let key = Key {
                text: c.lower[a..b].to_owned(),
                cased: letters.then(|| cased.to_owned()),
            };
            if !key.text.is_empty() && !keys.contains(&key) {
                keys.push(key);
            }
        };
        for &q in &quoted {
            add(&mut keys, q);
        }
        let mut stems: Vec<String> = Vec::new();
        for &(a, b) in &words {
            if identifying(&c.cased[a..b]) {
                add(&mut keys, (a, b));
            } else {
                let lower = &c.lower[a..b];
                let s = stem(lower).to_owned();
                if canon::content_word(lower) && !stems.contains(&s) {
                    stems.push(s);
                }
            }
        }
        case_spans.sort_unstable();
        let n = stems.len();
        let half = n.div_ceil(2);
        let need = if keys.is_empty() {
            half.max(n.min(2))
        } else {
            half
        };
        Self {
            text: c.lower,
            cased: c.cased,
            case_spans,
            keys,
            words: stems,
            need,
        }
    }

    /// Whether the text `raw`, in canonical form `hay`, holds this evidence, read as `reading`.
    #[must_use]
    pub fn in_text(&self, raw: &str, hay: &Canon, reading: Reading) -> bool {
        self.exact_in(hay) || (reading == Reading::Written && self.written_in(raw, hay, &mut None))
    }

    /// Whether `hay` holds this evidence exactly.
    #[must_use]
    pub fn exact_in(&self, hay: &Canon) -> bool {
        !self.text.is_empty()
            && hay
                .lower
                .match_indices(self.text.as_str())
                .any(|(at, _)| self.at(hay, at))
    }

    /// Whether the occurrence of [`Needle::text`] at byte `at` of `hay.lower` is one: on token boundaries, and
    /// with the case of the evidence's identifiers.
    #[must_use]
    pub fn at(&self, hay: &Canon, at: usize) -> bool {
        let end = at + self.text.len();
        on_boundaries(&hay.lower, at, end)
            && self
                .case_spans
                .iter()
                .all(|&(a, b)| hay.cased.as_bytes()[at + a..at + b] == self.cased.as_bytes()[a..b])
    }

    /// Whether the model-written text `raw`, in canonical form `hay`, holds this evidence by its identifying
    /// tokens and content words, all on one of its lines (see the module docs). `lines` caches the canonical
    /// form of `raw`'s lines ([`lines`]) between needles: it is computed only when the whole text could hold
    /// the evidence and has more than one line.
    #[must_use]
    pub fn written_in(&self, raw: &str, hay: &Canon, lines: &mut Option<Vec<Canon>>) -> bool {
        // A line holds no more than the whole text: most texts fail here, without being cut into lines.
        self.written_in_line(hay)
            && (!raw.contains('\n')
                || lines
                    .get_or_insert_with(|| self::lines(raw))
                    .iter()
                    .any(|l| self.written_in_line(l)))
    }

    /// Whether `line`, in canonical form, holds this evidence by its identifying tokens and content words.
    fn written_in_line(&self, line: &Canon) -> bool {
        if self.keys.is_empty() && self.words.is_empty() {
            return false;
        }
        self.keys.iter().all(|k| has_key(line, k))
            && self.words.iter().filter(|w| has_word(line, w)).count() >= self.need
    }

    /// The pieces a text's lower-cased raw form must hold for it to hold this evidence exactly (the longest
    /// of [`pieces`]), `None` when that is not ASCII.
    #[must_use]
    pub fn exact_piece(&self) -> Option<&str> {
        longest_piece(&self.text)
    }

    /// The pieces a model-written text's lower-cased raw form must hold one of, for it to hold this evidence
    /// by the written rule; `None` when one of them is not ASCII.
    #[must_use]
    pub fn written_pieces(&self) -> Option<Vec<&str>> {
        if let Some(k) = self.keys.iter().max_by_key(|k| k.text.len()) {
            return Some(vec![longest_piece(&k.text)?]);
        }
        // Holding `need` of the words means holding one of any `n - need + 1` of them: the longest.
        let mut words: Vec<&str> = self.words.iter().map(String::as_str).collect();
        words.sort_by_key(|w| std::cmp::Reverse(w.len()));
        words.truncate((words.len() + 1).saturating_sub(self.need));
        words.into_iter().map(longest_piece).collect()
    }
}

/// The canonical form of each line of `text` (cut at line feeds), the lines that are only white space left out:
/// the passages in which a model-written text must state a fact by the written rule.
#[must_use]
pub fn lines(text: &str) -> Vec<Canon> {
    text.split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(canon)
        .collect()
}

/// The longest of [`pieces`] of `text`, when it is ASCII and not empty.
fn longest_piece(text: &str) -> Option<&str> {
    pieces(text)
        .into_iter()
        .max_by_key(|p| p.len())
        .filter(|p| p.is_ascii())
}

/// Whether `hay` holds `key` as a whole token, with its case when it has one.
fn has_key(hay: &Canon, key: &Key) -> bool {
    hay.lower.match_indices(key.text.as_str()).any(|(at, _)| {
        let end = at + key.text.len();
        on_boundaries(&hay.lower, at, end)
            && key
                .cased
                .as_ref()
                .is_none_or(|c| hay.cased.as_bytes()[at..end] == *c.as_bytes())
    })
}

/// Whether `hay` holds a word whose stem is `stem`.
fn has_word(hay: &Canon, stem: &str) -> bool {
    let text = hay.lower.as_str();
    text.match_indices(stem).any(|(at, _)| {
        let starts = !text[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric);
        let len = text[at..]
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(text.len() - at);
        starts && canon::stem(&text[at..at + len]) == stem
    })
}

/// Byte ranges of a text.
type Spans = Vec<(usize, usize)>;

/// The quoted strings (`'…'`, `"…"`, `` `…` ``, their insides) and the words (runs of letters, digits and
/// `_ . / : -`, trailing `. : -` and leading `-` trimmed) of `text`, as byte ranges, quoted ones apart.
fn split(text: &str) -> (Spans, Spans) {
    let mut quoted = Vec::new();
    let mut words = Vec::new();
    let in_word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | ':' | '-');
    let mut word_start: Option<usize> = None;
    let close_word = |words: &mut Spans, start: Option<usize>, end: usize| {
        if let Some(s) = start {
            let w = &text[s..end];
            let trimmed_end = w.trim_end_matches(['.', ':', '-']);
            let trimmed = trimmed_end.trim_start_matches('-');
            let a = s + (trimmed_end.len() - trimmed.len());
            if !trimmed.is_empty() {
                words.push((a, a + trimmed.len()));
            }
        }
    };
    let mut i = 0;
    while i < text.len() {
        let c = text[i..]
            .chars()
            .next()
            .expect("i is a char boundary below len");
        if matches!(c, '\'' | '"' | '`') {
            // An apostrophe inside a word (`don't`) opens nothing.
            let inside_word = c == '\''
                && text[..i]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_alphanumeric);
            if !inside_word {
                if let Some(len) = text[i + 1..].find(c) {
                    let inner = &text[i + 1..i + 1 + len];
                    if !inner.trim().is_empty() {
                        close_word(&mut words, word_start.take(), i);
                        quoted.push((i + 1, i + 1 + len));
                        i += len + 2;
                        continue;
                    }
                }
            }
        }
        if in_word(c) {
            word_start.get_or_insert(i);
        } else {
            close_word(&mut words, word_start.take(), i);
        }
        i += c.len_utf8();
    }
    close_word(&mut words, word_start, text.len());
    (quoted, words)
}

/// Whether a word of an evidence string identifies something (see the module docs).
fn identifying(word: &str) -> bool {
    let inner = |c: char| word.trim_matches(c).contains(c);
    let capitals = word.chars().filter(char::is_ascii_uppercase).count();
    let camel = word
        .chars()
        .zip(word.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    let shaped = word.chars().any(|c| c.is_ascii_digit())
        || word.contains('_')
        || word.contains('/')
        || inner('.')
        || inner(':')
        || capitals >= 2
        || camel;
    shaped && !GENERIC_EXCEPTIONS.contains(&word)
}

/// Whether `text` (raw), read as `reading`, holds the evidence string `evidence` by the rule above.
#[must_use]
pub fn holds(text: &str, reading: Reading, evidence: &str) -> bool {
    Needle::new(evidence).in_text(text, &canon(text), reading)
}

/// The identifying tokens of a reference answer, lower case, in order, without repeats; its content words
/// when it has none. The stand-in judge scores an answer by the share of them it holds ([`token_share`]).
#[must_use]
pub fn identifying_tokens(reference: &str) -> Vec<String> {
    let n = Needle::new(reference);
    if n.keys.is_empty() {
        let c = canon(reference);
        let mut words: Vec<String> = Vec::new();
        for (a, b) in split(&c.cased).1 {
            let w = &c.lower[a..b];
            if canon::content_word(w) && !words.iter().any(|x| x == w) {
                words.push(w.to_owned());
            }
        }
        return words;
    }
    n.keys.into_iter().map(|k| k.text).collect()
}

/// The share of `keys` (lower case, from [`identifying_tokens`]) that `text` holds as whole tokens, in any
/// case; 0 without keys.
#[must_use]
pub fn token_share(keys: &[String], text: &str) -> f64 {
    if keys.is_empty() {
        return 0.0;
    }
    let hay = canon(text);
    let held = keys
        .iter()
        .filter(|k| {
            let key = Key {
                text: (*k).clone(),
                cased: None,
            };
            has_key(&hay, &key)
        })
        .count();
    #[allow(clippy::cast_precision_loss)]
    let share = held as f64 / keys.len() as f64;
    share
}

/// Whether a strategy may write `item` in place of a recorded one, so that only what it kept counts: tool
/// output (results and observations) and tool calls.
#[must_use]
pub fn rewritable(item: &Item) -> bool {
    item.is_tool_output() || matches!(item, Item::ToolCall { .. })
}

/// The recorded item of `items` that `item`, a tool output or call the episode did not record, stands for: the
/// first with its call id (a result for a result, a call for a call), or, for an observation, the first
/// observation whose content starts with the first line of `item`'s (when that line is not empty).
#[must_use]
pub fn original<'e>(items: &'e [Item], item: &Item) -> Option<&'e Item> {
    match item {
        Item::ToolResult { call_id, .. } => items
            .iter()
            .find(|i| matches!(i, Item::ToolResult { call_id: c, .. } if c == call_id)),
        Item::ToolCall { id, .. } => items
            .iter()
            .find(|i| matches!(i, Item::ToolCall { id: c, .. } if c == id)),
        Item::Observation { content, .. } => {
            let first = first_line(content)?;
            items
                .iter()
                .find(|i| matches!(i, Item::Observation { content: c, .. } if c.starts_with(first)))
        }
        _ => None,
    }
}

/// The first line of `text`, when it is not empty.
#[must_use]
pub fn first_line(text: &str) -> Option<&str> {
    text.split('\n').next().filter(|l| !l.is_empty())
}

/// The shortest start of a recorded output that counts as kept when a rewrite holds it whole after a header of
/// its own (a preview under a notice, as Strands' offloader writes): long enough that no placeholder holds it by
/// chance.
const PREVIEW_MIN_BYTES: usize = 64;

/// What `rewritten` kept of `original`: their longest common start, the original's start held whole further
/// inside the rewrite (a preview after a header, when they have no common start and it is at least
/// 64 bytes), and their longest common end, none overlapping another, each cut back to whole tokens of the
/// original.
#[must_use]
pub fn kept<'t>(rewritten: &'t str, original: &str) -> [&'t str; 3] {
    let (r, o) = (rewritten.as_bytes(), original.as_bytes());
    // Where a token of the original straddles `at`.
    let straddles = |at: usize| {
        original[at..].chars().next().is_some_and(canon::word_char)
            && original[..at]
                .chars()
                .next_back()
                .is_some_and(canon::word_char)
    };
    // The common run from the start of `original` and from `from` in `rewritten`, cut back to whole tokens.
    let run = |from: usize| {
        let mut p = r[from..].iter().zip(o).take_while(|(a, b)| a == b).count();
        while !rewritten.is_char_boundary(from + p) {
            p -= 1;
        }
        if straddles(p) {
            // The token the rewrite cut is not kept: back to its start.
            p = original[..p]
                .char_indices()
                .rev()
                .find(|&(_, c)| !canon::word_char(c))
                .map_or(0, |(k, c)| k + c.len_utf8());
        }
        p
    };
    let p = run(0);
    let inside = if p == 0 && o.len() >= PREVIEW_MIN_BYTES {
        let mut head = PREVIEW_MIN_BYTES;
        while !original.is_char_boundary(head) {
            head -= 1;
        }
        memchr::memmem::find(r, &o[..head]).map_or((0, 0), |q| (q, q + run(q)))
    } else {
        (0, 0)
    };
    // Where the rewrite and the original are used up by what the start already kept.
    let (r_used, o_used) = if inside.1 > inside.0 {
        (inside.1, inside.1 - inside.0)
    } else {
        (p, p)
    };
    let room = (r.len() - r_used).min(o.len() - o_used);
    let mut s = r
        .iter()
        .rev()
        .zip(o.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    while !rewritten.is_char_boundary(r.len() - s) {
        s -= 1;
    }
    let from = o.len() - s;
    if s > 0 && straddles(from) {
        s -= original[from..]
            .find(|c: char| !canon::word_char(c))
            .unwrap_or(s);
    }
    [
        &rewritten[..p],
        &rewritten[inside.0..inside.1],
        &rewritten[r.len() - s..],
    ]
}

/// Whether `item`, a tool output the episode did not record, holds a model's rewrite of the recorded one
/// ([`REFINED_PREFIX`]: ACON's refined observation): read whole, as a model's words, not as a placeholder.
#[must_use]
pub fn is_refined(item: &Item) -> bool {
    item.is_tool_output() && item.text().starts_with(REFINED_PREFIX)
}

/// The parts of `item`'s searchable text that can hold evidence, in a request replaying an episode of `items`:
/// all of it, but for a tool output or call the episode did not record (a strategy rewrote it), only what it
/// kept of the recorded one, and nothing when there is none. The plain definition:
/// [`crate::replay::evidence`] computes the same with indexes.
#[must_use]
pub fn visible<'t>(items: &[Item], item: &'t Item) -> Vec<Cow<'t, str>> {
    if !rewritable(item) || items.contains(item) || is_refined(item) {
        return vec![item.searchable()];
    }
    let Some(o) = original(items, item) else {
        return Vec::new();
    };
    let (text, original) = (item.searchable(), o.searchable());
    let parts = kept(&text, &original).map(str::to_owned);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(Cow::Owned)
        .collect()
}

/// What an episode's task says, in canonical form: its `task` and its first user message.
#[derive(Debug, Clone)]
pub struct TaskText {
    texts: Vec<Canon>,
}

impl TaskText {
    /// The task texts of `episode`.
    #[must_use]
    pub fn new(episode: &Episode) -> Self {
        let first_user = episode.items.iter().find(|i| i.is_role(Role::User));
        let texts = std::iter::once(episode.task.as_str())
            .chain(first_user.map(Item::text))
            .filter(|t| !t.trim().is_empty())
            .map(canon)
            .collect();
        Self { texts }
    }

    /// Whether the task gives `finding`: each of its evidence strings is, exactly, in the task or the first
    /// user message (a finding without evidence is not).
    #[must_use]
    pub fn gives(&self, finding: &Finding) -> bool {
        !finding.evidence.is_empty()
            && finding.evidence.iter().all(|e| {
                // Most findings are not the task's: a text without the evidence's longest piece cannot hold it.
                let c = canon(e);
                let piece = pieces(&c.lower).into_iter().max_by_key(|p| p.len());
                let maybe = |t: &Canon| piece.is_none_or(|p| t.lower.contains(p));
                if !self.texts.iter().any(maybe) {
                    return false;
                }
                let n = Needle::new(e);
                self.texts.iter().any(|t| n.exact_in(t))
            })
    }
}

/// Whether the task of `episode` gives `finding` ([`TaskText::gives`]).
#[must_use]
pub fn from_task(episode: &Episode, finding: &Finding) -> bool {
    TaskText::new(episode).gives(finding)
}

#[cfg(test)]
mod pairs;
