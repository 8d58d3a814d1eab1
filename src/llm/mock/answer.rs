//! The mock's answers to questions: the request line that shares the most words with the question, found
//! through per-thread caches of word tables and answers.
//!
//! Every cache is keyed by what a text *is*, never by where it came from: an item's text is known by its
//! shared allocation ([`Text`]), which the cache keeps alive while it holds the key (so the address cannot be
//! reused by another text), and an instruction by a hash of its content. The replay clones each episode item
//! into every strategy's request, so the same text meets the same key whatever strategy sends it.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use super::index::{best_line, question_words, BestLine, Interest, LineIndex, MAX_LINE_INDEXES};
use crate::history::{Item, Role, Text};
use crate::llm::LlmRequest;
use crate::tokens::{Tokenizer, TOKENS_PER_REPLY};

/// Answers kept at most per thread, of each kind: (question, text) and whole requests (a few megabytes). They
/// are reused by the strategies of one episode, which run together on one thread, and go when the thread starts
/// another episode ([`AnswerCache::expect`]); this bound only holds one huge episode's. The bundled dataset asks
/// 33,303 distinct (question, text) pairs over 42 episodes, most of them in its largest episodes: a bound of
/// 4 k made 25% more of them be answered again, this one answers each once.
const MAX_ANSWERS: usize = 1 << 15;

/// The answer path's caches, one per thread. A text's line index and its best line for a question depend on
/// nothing but the text, so every mock on a thread shares them; a worker replays all the strategies of an
/// episode, so the questions and texts of one episode meet on one thread, where a lookup takes no lock and
/// touches no cache line another core writes.
#[derive(Default)]
pub(super) struct AnswerCache {
    /// Line indexes of the texts seen, by text key and the [`Interest`] they were built for (0: none): a text
    /// is split into words once, however many probes read it.
    pub(super) lines: FxHashMap<(u128, u64), LineIndex>,
    /// The words the probes of the thread's episode look for, when the replay said.
    interest: Option<Interest>,
    /// The best line of a text for a question, by (question, text key): the strategies of one episode ask
    /// the same questions of mostly the same texts.
    pub(super) answers: FxHashMap<(u64, u128), BestLine>,
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
    /// Scratch space for [`best_line`].
    hits: Vec<u32>,
}

thread_local! {
    pub(super) static ANSWER_CACHE: RefCell<AnswerCache> = RefCell::default();
}

/// What is known of a request already answered: the answer (text, line), the request's tokens but its last
/// item's, and the answer's tokens.
type Known = (Option<(usize, u32)>, usize, usize);

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
        self.answers.clear();
        self.requests.clear();
        self.counts.clear();
        self.heads.clear();
        self.held.clear();
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

    /// The line that answers the question `wanted` (keyed by `question`) in a request of `texts` (with their
    /// `keys`; the whole request keyed by `request`): (text, line) of the best line of the last text with the
    /// highest score.
    fn answer(
        &mut self,
        question: u64,
        wanted: &[u64],
        texts: &[(&str, u128, Option<&Text>)],
    ) -> Option<(usize, u32)> {
        let mut best: Option<(u32, usize, u32)> = None;
        let interest = self
            .interest
            .as_ref()
            .filter(|i| i.covers(wanted))
            .map_or(0, |i| i.id);
        for (t, &(text, key, shared)) in texts.iter().enumerate() {
            if let Some((score, line)) =
                self.best_line(question, wanted, (key, shared), interest, text)
            {
                if best.is_none_or(|(b, _, _)| score >= b) {
                    best = Some((score, t, line));
                }
            }
        }
        best.map(|(_, t, line)| (t, line))
    }

    /// Empties the caches when a request of `texts` texts could take them past their bounds: caches, not
    /// records, bounded so that memory does not grow with the number of episodes.
    fn make_room(&mut self, texts: usize) {
        if self.requests.len() >= MAX_ANSWERS
            || self.answers.len() + texts >= MAX_ANSWERS
            || self.lines.len() + texts >= MAX_LINE_INDEXES
            || self.counts.len() + texts >= MAX_ANSWERS
            || self.heads.len() >= MAX_ANSWERS
        {
            self.clear();
        }
    }

    /// The best line of `text` (keyed by `key`, held by `shared` when it is an item's) for the question
    /// `wanted` (keyed by `question`), from a word table built for the thread's [`Interest`] when `interest` is
    /// its id, else of every word.
    fn best_line(
        &mut self,
        question: u64,
        wanted: &[u64],
        (key, shared): (u128, Option<&Text>),
        interest: u64,
        text: &str,
    ) -> BestLine {
        if let Some(&found) = self.answers.get(&(question, key)) {
            return found;
        }
        let words = self.interest.as_ref().filter(|i| i.id == interest);
        let index = self.lines.entry((key, interest)).or_insert_with(|| {
            self.held.extend(shared.cloned());
            LineIndex::new(text, words)
        });
        let found = best_line(index, wanted, &mut self.hits);
        self.answers.insert((question, key), found);
        found
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
    };
    (item_key(item.shared_text()), second)
}

/// Answers the last user message of `request` with the request line that shares the most of its words (the
/// latest on ties), or "I don't know."; with the request's input tokens and the answer's tokens as the tokenizer
/// counts them.
///
/// A probe re-sends the request of its call point, most of whose items every strategy of the episode sends
/// again: the tokens of each item are kept by its identity, and those of a whole request (its last item, the
/// question, apart) with its answer.
pub(super) fn answer(tokenizer: &Tokenizer, request: &LlmRequest) -> (String, usize, usize) {
    let question = request
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
        .unwrap_or("");
    let wanted: Vec<u64> = question_words(question)
        .map(|w| xxh3_64(w.as_bytes()))
        .collect();
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
    // The head's key (every text and item identity), then the request's (the question's words too).
    let mut bytes =
        Vec::with_capacity(8 * wanted.len() + 16 * instruction_keys.len() + 32 * item_keys.len());
    bytes.extend(instruction_keys.iter().flat_map(|k| k.to_le_bytes()));
    for (main, second) in &item_keys {
        bytes.extend(main.to_le_bytes());
        bytes.extend(second.to_le_bytes());
    }
    let head_key = xxh3_128(&bytes);
    let question_bytes: Vec<u8> = wanted.iter().flat_map(|w| w.to_le_bytes()).collect();
    let question_key = xxh3_64(&question_bytes);
    let mut both = head_key.to_le_bytes().to_vec();
    both.extend(question_key.to_le_bytes());
    let request_key = xxh3_128(&both);
    let text_at = |t: usize| match t.checked_sub(instruction_keys.len()) {
        None => request.instructions[t].as_str(),
        Some(i) => head[i].text(),
    };
    let line_of = |(t, line): (usize, u32)| text_at(t).lines().nth(line as usize);
    let last_tokens = last.map_or(0, |i| tokenizer.count_item(i));
    let (text, tokens, output) = ANSWER_CACHE.with_borrow_mut(|cache| {
        if let Some(&(found, tokens, output)) = cache.requests.get(&request_key) {
            return (reply(found.and_then(line_of), question), tokens, output);
        }
        let texts: Vec<(&str, u128, Option<&Text>)> = request
            .instructions
            .iter()
            .zip(&instruction_keys)
            .map(|(s, &k)| (s.as_str(), k, None))
            .chain(head.iter().zip(&item_keys).map(|(item, &(k, _))| {
                let text = item.shared_text();
                (&**text, k, Some(text))
            }))
            .collect();
        cache.make_room(texts.len());
        let found = if wanted.is_empty() {
            None
        } else {
            cache.answer(question_key, &wanted, &texts)
        };
        let tokens = match cache.heads.get(&head_key) {
            Some(&n) => n,
            None => {
                let n = TOKENS_PER_REPLY
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
        let text = reply(found.and_then(line_of), question);
        let output = tokenizer.count_text(&text);
        cache.requests.insert(request_key, (found, tokens, output));
        (text, tokens, output)
    });
    (text, tokens + last_tokens, output)
}

/// The most characters an answer quotes of a line.
const ANSWER_CHARS: usize = 300;

/// The answer that `line` makes to `question`: the line trimmed, or "I don't know." when there is none. A line
/// longer than [`ANSWER_CHARS`] (a JSON record, a paragraph) is quoted around where the question's words are:
/// the stretch of that many characters that holds the most of them (the first such), marked with `…` where cut.
pub(super) fn reply(line: Option<&str>, question: &str) -> String {
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
        let wanted: Vec<String> = question_words(question).map(|w| w.to_lowercase()).collect();
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

/// Tells this thread's caches the questions of the episode it starts.
pub(super) fn expect(questions: &[&str]) {
    let interest = (!questions.is_empty()).then(|| Interest::new(questions));
    ANSWER_CACHE.with_borrow_mut(|cache| cache.expect(interest));
}
