//! The mock's answers to questions: the request line that shares the most of the question's terms, each term
//! weighted by how rare it is in the request, found through per-thread caches of term tables and answers.
//!
//! ## The rule
//! A question's terms are its words' stems and the parts of its identifiers, stopwords left out
//! ([`question_terms`]). A term found on `df` of the request's `N` lines weighs `1 + ⌊4·log2((N+1)/df)⌋`: a word
//! every tool output repeats says little, one that names a single thing says much. A line's score is the weight
//! of the question's terms it holds, plus half the weight of those its tool call holds (the tool's name and
//! arguments) when it is a line of a tool's output: "the settings file" finds the lines that
//! `read_file(src/app/settings.py)` returned. A line that holds none of the terms itself is no answer. The
//! answer is the line with the highest score, the latest on ties, or "I don't know." It reads the request and
//! the question, nothing else: a question that names its subject in other words than the line that answers it
//! is answered when their stems, the parts of an identifier or the tool call meet, and not otherwise.
//!
//! An *open* question ([`is_open`]: two asks joined, "…, and why?", or one about what comes next, what is left
//! to do, or what happened so far) asks for an account, not a value: its answer is the [`OPEN_LINES`] lines
//! with the highest scores (the latest on ties) and where things stand, the first [`RECENT_LINES`] lines that
//! are not blank of each of the request's [`RECENT_TEXTS`] latest texts (a tool output's head, a message's
//! gist), in the request's order, one a line.
//!
//! Every cache is keyed by what a text *is*, never by where it came from: an item's text is known by its
//! shared allocation ([`Text`]), which the cache keeps alive while it holds the key (so the address cannot be
//! reused by another text), and an instruction by a hash of its content. The replay clones each episode item
//! into every strategy's request, so the same text meets the same key whatever strategy sends it.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use super::index::{hits, weight, Interest, LineIndex, MAX_LINE_INDEXES};
use super::terms::{question_terms, terms};
use crate::history::{Item, Role, Text};
use crate::llm::LlmRequest;
use crate::tokens::Tokenizer;

/// Entries kept at most per thread, of each kind: whole requests, item token counts, replies (a few
/// megabytes). They are reused by the strategies of one episode, which run together on one thread, and go
/// when the thread starts another episode ([`AnswerCache::expect`]); this bound only holds one huge episode's.
/// The bundled dataset answers 1,759 distinct requests over 42 episodes: the bound is never reached.
const MAX_ANSWERS: usize = 1 << 15;

/// The answer path's caches, one per thread. A text's line index depends on nothing but the text (and the
/// episode's questions), so every mock on a thread shares them; a worker replays all the strategies of an
/// episode, so the questions and texts of one episode meet on one thread, where a lookup takes no lock and
/// touches no cache line another core writes.
#[derive(Default)]
pub(super) struct AnswerCache {
    /// Line indexes of the texts seen, by text key and the [`Interest`] they were built for (0: none): a text
    /// is split into words once, however many probes read it. A question's lines in a text are read from its
    /// index each time (a few slots of a small table: cheaper than a cache of them by question and text).
    pub(super) lines: FxHashMap<(u128, u64), LineIndex>,
    /// The words the probes of the thread's episode look for, when the replay said.
    interest: Option<Interest>,
    /// Scratch space of an answer: the hits of each text of the request, one after the other, and where each
    /// text's hits end.
    hits: Vec<(u32, u16)>,
    spans: Vec<usize>,
    /// The answer to a whole request and its tokens but the last item's, by a hash of the question and every
    /// item's identity: strategies that have not reduced the request yet send the very request another already
    /// sent (half the probe calls on the bundled dataset).
    pub(super) requests: FxHashMap<u128, Known>,
    /// The tokens of the items of the requests asked, by the item's identity ([`count_key`]).
    counts: FxHashMap<(u128, u128), usize>,
    /// The tokens of a request but its last item (the question), by the identity of every text and item: the
    /// probes due at one call point of one strategy ask different questions of the same request.
    heads: FxHashMap<u128, usize>,
    /// The item texts whose address is a key above, kept alive while it is.
    held: Vec<Text>,
    /// The terms of each question asked (as [`question_terms`] finds them) and their hashes, by a hash of the
    /// question: the strategies of an episode ask the same questions.
    questions: FxHashMap<u64, Rc<Question>>,
    /// Whole replies (text, input tokens, output tokens) to requests answered by their content alone (the
    /// stand-in judge's), by a hash of that content: the strategies of an episode often give one answer.
    pub(super) replies: FxHashMap<u128, (String, usize, usize)>,
}

/// A question's terms and their hashes, and whether it is open ([`is_open`]).
struct Question {
    terms: Vec<String>,
    wanted: Vec<u64>,
    open: bool,
}

/// How many of the best lines an open question's answer quotes (besides where things stand).
pub(super) const OPEN_LINES: usize = 3;

/// How many of the request's latest texts an open question's answer quotes the first lines of.
pub(super) const RECENT_TEXTS: usize = 3;

/// How many lines of each of those texts it quotes.
pub(super) const RECENT_LINES: usize = 3;

/// Whether `question` asks for an account rather than a value: two asks joined (`…, and why?`, `…, and how?`),
/// or what comes next, what is left to do, or what happened so far.
#[must_use]
pub(super) fn is_open(question: &str) -> bool {
    let q = question.to_lowercase();
    let has = |w: &str| q.split(|c: char| !c.is_alphanumeric()).any(|x| x == w);
    q.contains(", and ") || has("next") || q.contains("left to do") || q.contains("so far")
}

/// Where a text of a request stands: its key, the shared text that holds it alive (an item's), and for a tool's
/// output, the position of its tool call among the request's texts and the call's name.
struct Source<'a> {
    text: &'a str,
    key: u128,
    shared: Option<&'a Text>,
    call: Option<(usize, &'a str)>,
}

thread_local! {
    pub(super) static ANSWER_CACHE: RefCell<AnswerCache> = RefCell::default();
}

/// What is known of a request already answered: the answer's lines (text, line), the request's tokens but its
/// last item's, and the answer's tokens.
type Known = (Vec<(usize, u32)>, usize, usize);

/// The key of an item's text: its address and length, tagged apart from instruction keys.
fn item_key(text: &Text) -> u128 {
    (1u128 << 127) | (text.as_ptr() as u128) << 64 | text.len() as u128
}

/// The key of an instruction: a hash of its content, untagged.
fn instruction_key(text: &str) -> u128 {
    xxh3_128(text.as_bytes()) & !(1u128 << 127)
}

impl AnswerCache {
    /// Starts an episode that asks the questions of `interest`. When they are not the last episode's, nothing
    /// cached is of use any more (answers and requests are keyed by question, line indexes by interest), so it
    /// all goes; the tables keep their room, so that memory follows the largest episode and not the number of
    /// episodes a thread replays.
    pub(super) fn expect(&mut self, interest: Option<Interest>) {
        let id = |i: &Option<Interest>| i.as_ref().map_or(0, |i| i.id);
        if id(&interest) != id(&self.interest) {
            self.clear();
        }
        self.interest = interest;
    }

    /// Forgets everything: the keys of the texts it let go may name other texts from now on.
    fn clear(&mut self) {
        self.lines.clear();
        self.requests.clear();
        self.counts.clear();
        self.heads.clear();
        self.held.clear();
        self.questions.clear();
        self.replies.clear();
    }

    /// The terms of `question` and their hashes, found once.
    fn question(&mut self, question: &str) -> Rc<Question> {
        let key = xxh3_64(question.as_bytes());
        Rc::clone(self.questions.entry(key).or_insert_with(|| {
            let terms = question_terms(question);
            let wanted = terms.iter().map(|w| xxh3_64(w.as_bytes())).collect();
            Rc::new(Question {
                terms,
                wanted,
                open: is_open(question),
            })
        }))
    }

    /// The tokens of `item` by `tokenizer`, known by the item's identity ([`count_key`], given as `key`) after
    /// the first time.
    fn count_item(&mut self, tokenizer: &Tokenizer, item: &Item, key: (u128, u128)) -> usize {
        if let Some(&n) = self.counts.get(&key) {
            return n;
        }
        let n = tokenizer.count_item(item);
        self.held.push(item.shared_text().clone());
        if let Item::ToolCall { name, .. } = item {
            self.held.push(name.clone());
        }
        self.counts.insert(key, n);
        n
    }

    /// The `n` lines that answer the question `wanted` in a request of `texts`, by the rule of the module:
    /// (text, line), the best first.
    fn answer(&mut self, wanted: &[u64], texts: &[Source<'_>], n: usize) -> Vec<(usize, u32)> {
        let interest = self
            .interest
            .as_ref()
            .filter(|i| i.covers(wanted))
            .map_or(0, |i| i.id);
        let words = self.interest.as_ref().filter(|i| i.id == interest);
        // The hits of every text, one after the other (text `t`'s are `all[spans[t]..spans[t + 1]]`), in
        // scratch space kept from one answer to the next.
        let mut all = std::mem::take(&mut self.hits);
        let mut spans = std::mem::take(&mut self.spans);
        all.clear();
        spans.clear();
        spans.push(0);
        let mut lines: u64 = 0;
        for source in texts {
            let index = self.lines.entry((source.key, interest)).or_insert_with(|| {
                self.held.extend(source.shared.cloned());
                LineIndex::new(source.text, words)
            });
            lines += u64::from(index.line_count);
            hits(index, wanted, &mut all);
            spans.push(all.len());
        }
        let found = |t: usize| &all[spans[t]..spans[t + 1]];
        let best = best_lines(wanted, lines, texts, found, n);
        self.hits = all;
        self.spans = spans;
        best
    }
}

/// The `n` lines that answer the question `wanted` in a request of `texts` of `lines` lines, given each text's
/// hits ([`hits`]), by the rule of the module: (text, line), the best first (the latest among equals).
fn best_lines<'h>(
    wanted: &[u64],
    lines: u64,
    texts: &[Source<'_>],
    found: impl Fn(usize) -> &'h [(u32, u16)],
    n: usize,
) -> Vec<(usize, u32)> {
    let mut df = vec![0u64; wanted.len()];
    for t in 0..texts.len() {
        for &(_, k) in found(t) {
            df[usize::from(k)] += 1;
        }
    }
    let weights: Vec<u64> = df.iter().map(|&d| weight(lines, d)).collect();
    let mut in_call = vec![false; wanted.len()];
    // The question's terms in each tool name met, by name.
    let mut names: Vec<(&str, Vec<usize>)> = Vec::new();
    // The best so far, best first; a line as good as one kept goes before it (the latest wins ties).
    let mut best: Vec<(u64, usize, u32)> = Vec::with_capacity(n + 1);
    for (t, source) in texts.iter().enumerate() {
        let hits = found(t);
        if hits.is_empty() {
            continue;
        }
        // The terms the text's tool call holds (its name or its arguments), counted once on each line.
        in_call.fill(false);
        if let Some((call, name)) = source.call {
            for &(_, k) in found(call) {
                in_call[usize::from(k)] = true;
            }
            let at = match names.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    let held = terms(name)
                        .filter_map(|term| {
                            let h = xxh3_64(term.as_bytes());
                            wanted.iter().position(|&w| w == h)
                        })
                        .collect();
                    names.push((name, held));
                    names.len() - 1
                }
            };
            for &k in &names[at].1 {
                in_call[k] = true;
            }
        }
        // Scores are doubled, so that a term the call holds counts half.
        let context: u64 = (0..wanted.len())
            .filter(|&k| in_call[k])
            .map(|k| weights[k])
            .sum();
        for run in hits.chunk_by(|a, b| a.0 == b.0) {
            let (own, both) = run.iter().fold((0, 0), |(own, both), &(_, k)| {
                let w = weights[usize::from(k)];
                (own + w, both + if in_call[usize::from(k)] { w } else { 0 })
            });
            let score = 2 * own + context - both;
            let at = best.partition_point(|&(b, _, _)| b > score);
            if at < n {
                best.insert(at, (score, t, run[0].0));
                best.truncate(n);
            }
        }
    }
    best.into_iter().map(|(_, t, line)| (t, line)).collect()
}

impl AnswerCache {
    /// Empties the caches when a request of `texts` texts could take them past their bounds: caches, not
    /// records, bounded so that memory does not grow with the number of episodes.
    fn make_room(&mut self, texts: usize) {
        if self.requests.len() >= MAX_ANSWERS
            || self.lines.len() + texts >= MAX_LINE_INDEXES
            || self.counts.len() + texts >= MAX_ANSWERS
            || self.heads.len() >= MAX_ANSWERS
            || self.questions.len() >= MAX_ANSWERS
            || self.replies.len() >= MAX_ANSWERS
        {
            self.clear();
        }
    }
}

/// The identity of an item for its token count: its main text's key, and what else its count depends on (a
/// message's role, a tool call's name; a tool result's count depends on its content alone).
fn count_key(item: &Item) -> (u128, u128) {
    let second = match item {
        Item::Message { role, .. } => *role as u128,
        Item::ToolCall { name, .. } => item_key(name),
        Item::ToolResult { .. } => 3,
        Item::Observation { .. } => 4,
        Item::Reasoning { .. } => 5,
        Item::Unrecorded { tokens, .. } => 6 | (*tokens as u128) << 8,
    };
    (item_key(item.shared_text()), second)
}

/// The texts of a request, instructions first, with their keys and, for a tool's output, its call.
fn sources<'a>(
    request: &'a LlmRequest,
    head: &'a [Item],
    instruction_keys: &[u128],
    item_keys: &[(u128, u128)],
) -> Vec<Source<'a>> {
    let first = request.instructions.len();
    // A result answers the latest call with its id before it: most often the item just before it, so the
    // calls are mapped only when one is not.
    let follows = |i: usize, call_id: &str| {
        i.checked_sub(1)
            .is_some_and(|p| matches!(&head[p], Item::ToolCall { id, .. } if **id == *call_id))
    };
    let mut calls: Vec<Option<(usize, &str)>> = vec![None; head.len()];
    let mut latest: Option<FxHashMap<&str, (usize, &str)>> = None;
    for (i, item) in head.iter().enumerate() {
        match item {
            Item::ToolCall { id, name, .. } => {
                if let Some(map) = latest.as_mut() {
                    map.insert(&**id, (first + i, &**name));
                }
            }
            Item::ToolResult { call_id, .. } if follows(i, call_id) => {
                if let Item::ToolCall { name, .. } = &head[i - 1] {
                    calls[i] = Some((first + i - 1, &**name));
                }
            }
            Item::ToolResult { call_id, .. } => {
                let map = latest.get_or_insert_with(|| {
                    let mut map = FxHashMap::default();
                    for (j, c) in head[..i].iter().enumerate() {
                        if let Item::ToolCall { id, name, .. } = c {
                            map.insert(&**id, (first + j, &**name));
                        }
                    }
                    map
                });
                calls[i] = map.get(&**call_id).copied();
            }
            _ => {}
        }
    }
    request
        .instructions
        .iter()
        .zip(instruction_keys)
        .map(|(s, &key)| Source {
            text: s,
            key,
            shared: None,
            call: None,
        })
        .chain(
            head.iter()
                .zip(item_keys)
                .zip(calls)
                .map(|((item, &(key, _)), call)| {
                    let text = item.shared_text();
                    Source {
                        text,
                        key,
                        shared: Some(text),
                        call,
                    }
                }),
        )
        .collect()
}

/// The text of the last user message of `request` (the question), or nothing.
fn last_user_message(request: &LlmRequest) -> &str {
    request
        .contents
        .iter()
        .rev()
        .find_map(|i| match i {
            Item::Message {
                role: Role::User,
                content,
            } => Some(&**content),
            _ => None,
        })
        .unwrap_or("")
}

/// The key of a request's head (every text and item identity but the question's), and of the whole request
/// (the question's words too).
fn request_keys(
    instruction_keys: &[u128],
    item_keys: &[(u128, u128)],
    wanted: &[u64],
) -> (u128, u128) {
    let mut bytes =
        Vec::with_capacity(8 * wanted.len() + 16 * instruction_keys.len() + 32 * item_keys.len());
    bytes.extend(instruction_keys.iter().flat_map(|k| k.to_le_bytes()));
    for (main, second) in item_keys {
        bytes.extend(main.to_le_bytes());
        bytes.extend(second.to_le_bytes());
    }
    let head_key = xxh3_128(&bytes);
    let question_bytes: Vec<u8> = wanted.iter().flat_map(|w| w.to_le_bytes()).collect();
    let question_key = xxh3_64(&question_bytes);
    let mut both = head_key.to_le_bytes().to_vec();
    both.extend(question_key.to_le_bytes());
    (head_key, xxh3_128(&both))
}

/// Where things stand, for an open question: the first lines of each of the latest texts join `found`.
fn where_things_stand(texts: &[Source<'_>], found: &mut Vec<(usize, u32)>) {
    let from = texts.len().saturating_sub(RECENT_TEXTS);
    for (t, source) in texts.iter().enumerate().skip(from) {
        let first = source
            .text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .take(RECENT_LINES);
        found.extend(first.filter_map(|(l, _)| Some((t, u32::try_from(l).ok()?))));
    }
    found.sort_unstable();
    found.dedup();
}

/// Answers the last user message of `request` by the rule of the module, or "I don't know."; with the
/// request's input tokens and the answer's tokens as the tokenizer counts them.
///
/// A probe re-sends the request of its call point, most of whose items every strategy of the episode sends
/// again: the tokens of each item are kept by its identity, and those of a whole request (its last item, the
/// question, apart) with its answer.
pub(super) fn answer(tokenizer: &Tokenizer, request: &LlmRequest) -> (String, usize, usize) {
    let question = last_user_message(request);
    let asked = ANSWER_CACHE.with_borrow_mut(|cache| cache.question(question));
    let wanted = &asked.wanted;
    let (head, last) = match request.contents.split_last() {
        Some((last, head)) => (head, Some(last)),
        None => (&request.contents[..], None),
    };
    // One pass over the request: each text's key (and each item's identity for its count) into the request's key.
    let instruction_keys: Vec<u128> = request
        .instructions
        .iter()
        .map(|s| instruction_key(s))
        .collect();
    let item_keys: Vec<(u128, u128)> = head.iter().map(count_key).collect();
    let (head_key, request_key) = request_keys(&instruction_keys, &item_keys, wanted);
    let text_at = |t: usize| match t.checked_sub(instruction_keys.len()) {
        None => request.instructions[t].as_str(),
        Some(i) => head[i].text(),
    };
    let reply = |found: &[(usize, u32)]| {
        let lines: Vec<&str> = found
            .iter()
            .filter_map(|&(t, line)| text_at(t).lines().nth(line as usize))
            .collect();
        quote_lines(&lines, &asked.terms)
    };
    let last_tokens = last.map_or(0, |i| tokenizer.count_item(i));
    let (text, tokens, output) = ANSWER_CACHE.with_borrow_mut(|cache| {
        if let Some((found, tokens, output)) = cache.requests.get(&request_key) {
            return (reply(found), *tokens, *output);
        }
        let texts = sources(request, head, &instruction_keys, &item_keys);
        cache.make_room(texts.len());
        let n = if asked.open { OPEN_LINES } else { 1 };
        let mut found = if wanted.is_empty() {
            Vec::new()
        } else {
            cache.answer(wanted, &texts, n)
        };
        if asked.open {
            where_things_stand(&texts, &mut found);
        }
        let tokens = match cache.heads.get(&head_key) {
            Some(&n) => n,
            None => {
                let n = tokenizer.reply_tokens()
                    + request
                        .instructions
                        .iter()
                        .map(|s| tokenizer.count_instruction(s))
                        .sum::<usize>()
                    + head
                        .iter()
                        .zip(&item_keys)
                        .map(|(i, &key)| cache.count_item(tokenizer, i, key))
                        .sum::<usize>();
                cache.heads.insert(head_key, n);
                n
            }
        };
        let text = reply(&found);
        let output = tokenizer.count_text(&text);
        cache.requests.insert(request_key, (found, tokens, output));
        (text, tokens, output)
    });
    (text, tokens + last_tokens, output)
}

/// The most characters an answer quotes of a line.
const ANSWER_CHARS: usize = 300;

/// [`quote_lines`] of `question`'s terms.
#[cfg(test)]
pub(super) fn reply(lines: &[&str], question: &str) -> String {
    quote_lines(lines, &question_terms(question))
}

/// The answer that `lines` make to a question of the terms `wanted`: each [`quote`]d, one a line, or "I don't
/// know." when there is none.
fn quote_lines(lines: &[&str], wanted: &[String]) -> String {
    if lines.is_empty() {
        return "I don't know.".into();
    }
    lines
        .iter()
        .map(|l| quote(Some(l), wanted))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answer that `line` makes to a question of the terms `wanted`: the line trimmed, or "I don't know." when
/// there is none. A line longer than [`ANSWER_CHARS`] (a JSON record, a paragraph) is quoted around where the
/// question's words are: the stretch of that many characters that holds the most of them (the first such),
/// marked with `…` where cut.
fn quote(line: Option<&str>, wanted: &[String]) -> String {
    let Some(line) = line.map(str::trim) else {
        return "I don't know.".into();
    };
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    if chars.len() <= ANSWER_CHARS {
        return line.to_owned();
    }
    let lower = line.to_lowercase();
    // Where each question word occurs, as char positions (lower-casing keeps ASCII positions; other text is
    // quoted from its start).
    let mut hits: Vec<(usize, usize)> = Vec::new();
    if lower.len() == line.len() {
        for (w, word) in wanted.iter().enumerate() {
            for (at, _) in lower.match_indices(word.as_str()) {
                let c = chars.partition_point(|&(b, _)| b < at);
                hits.push((c, w));
            }
        }
    }
    let last_start = chars.len() - ANSWER_CHARS;
    let start = hits
        .iter()
        .map(|&(c, _)| c.saturating_sub(ANSWER_CHARS / 2).min(last_start))
        .max_by_key(|&start| {
            let mut seen: Vec<usize> = hits
                .iter()
                .filter(|&&(c, _)| c >= start && c < start + ANSWER_CHARS)
                .map(|&(_, w)| w)
                .collect();
            seen.sort_unstable();
            seen.dedup();
            (seen.len(), std::cmp::Reverse(start))
        })
        .unwrap_or(0);
    let from = chars[start].0;
    let to = chars
        .get(start + ANSWER_CHARS)
        .map_or(line.len(), |&(b, _)| b);
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        &line[from..to],
        if to < line.len() { "…" } else { "" }
    )
}

/// The reply to a request that is answered by its content alone (text, input tokens, output tokens), made by
/// `respond` the first time this thread meets that content in the episode.
pub(super) fn by_content(
    request: &LlmRequest,
    respond: impl FnOnce() -> (String, usize, usize),
) -> (String, usize, usize) {
    let mut bytes: Vec<u8> = Vec::new();
    for s in &request.instructions {
        bytes.extend(xxh3_128(s.as_bytes()).to_le_bytes());
    }
    for item in &request.contents {
        bytes.extend(crate::tokens::item_hash(item).to_le_bytes());
    }
    let key = xxh3_128(&bytes);
    if let Some(known) = ANSWER_CACHE.with_borrow(|cache| cache.replies.get(&key).cloned()) {
        return known;
    }
    let reply = respond();
    ANSWER_CACHE.with_borrow_mut(|cache| {
        cache.make_room(1);
        cache.replies.insert(key, reply.clone());
    });
    reply
}

/// Tells this thread's caches the questions of the episode it starts.
pub(super) fn expect(questions: &[&str]) {
    let interest = (!questions.is_empty()).then(|| Interest::new(questions));
    ANSWER_CACHE.with_borrow_mut(|cache| cache.expect(interest));
}
