//! A deterministic mock LLM: extractive, sectioned summaries and extractive probe answers, with latency from
//! a model instead of a clock.
//!
//! The same request gives the same response on every machine. A summarization request (one whose
//! instructions hold a `<history>…</history>` block) gets an extractive summary of that history under a token
//! budget, laid out in the sections of a good summary; any other request is answered by picking the line of
//! the request that shares the most words with the last user message.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use super::{Llm, LlmRequest, LlmResponse, Usage};
use crate::error::Result;
use crate::history::{Item, Role};
use crate::tokens::Tokenizer;

/// The mock's parameters: its latency model and its summary budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockConfig {
    /// The model name the mock reports (and is priced as).
    pub model: String,
    /// Time to first token, in milliseconds.
    pub ttft_ms: f64,
    /// Prefill time per input token, in milliseconds.
    pub ms_per_input_token: f64,
    /// Decode time per output token, in milliseconds.
    pub ms_per_output_token: f64,
    /// Token budget of a summary.
    pub summary_max_tokens: usize,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            model: "gpt-4o-mini".into(),
            ttft_ms: 350.0,
            ms_per_input_token: 0.02,
            ms_per_output_token: 12.0,
            summary_max_tokens: 400,
        }
    }
}

/// Line indexes kept at most per thread (a few episodes' texts, a few megabytes).
const MAX_LINE_INDEXES: usize = 2_048;

/// Where each word of a text occurs: an open-addressed table from a word's hash to the lines that hold it,
/// chained newest first, each line once. Built in one pass over the text, without sorting: the sorted list of
/// (word, line) pairs it replaced spent a third of the probe path's instructions in its sort.
struct LineIndex {
    /// Per slot, at most half of them used: the word's hash, its newest occurrence + 1 (0 when the slot is free)
    /// and that occurrence's line, so that a word repeated on one line is told without reading `occurrences`.
    slots: Vec<Slot>,
    /// Per occurrence: (line, the word's previous occurrence + 1, or 0).
    occurrences: Vec<(u32, u32)>,
    /// Distinct words.
    words: usize,
}

/// One slot of a [`LineIndex`] (16 bytes, as a `(u64, u32)` pair takes with its padding).
#[derive(Clone, Copy, Default)]
struct Slot {
    word: u64,
    newest: u32,
    line: u32,
}

impl LineIndex {
    /// The table of every word of `text`, or, with `interest`, of the words it holds only.
    fn new(text: &str, interest: Option<&Interest>) -> Self {
        let Some(interest) = interest else {
            // About one word per 8 bytes of text, a fraction of them distinct: most tables never grow.
            let mut index = Self::with_capacity(text.len() / 8 + 16);
            word_hashes(text, |_| true, |line, word| index.insert(word, line));
            return index;
        };
        let mut index = Self::with_capacity(16);
        word_hashes(
            text,
            |head| interest.may_hold(head),
            |line, word| {
                if interest.words.contains(&word) {
                    index.insert(word, line);
                }
            },
        );
        index
    }

    fn with_capacity(words: usize) -> Self {
        Self {
            slots: vec![Slot::default(); words.next_power_of_two()],
            occurrences: Vec::with_capacity(words),
            words: 0,
        }
    }

    /// The slot of `word`: where it is, or the free slot where it would go.
    fn slot(slots: &[Slot], word: u64) -> usize {
        let mask = slots.len() - 1;
        #[allow(clippy::cast_possible_truncation)] // the low bits of a hash
        let mut i = word as usize & mask;
        while slots[i].newest != 0 && slots[i].word != word {
            i = (i + 1) & mask;
        }
        i
    }

    fn insert(&mut self, word: u64, line: u32) {
        let i = Self::slot(&self.slots, word);
        let newest = self.slots[i].newest;
        if newest != 0 && self.slots[i].line == line {
            return; // the word again on the same line
        }
        self.occurrences.push((line, newest));
        let n = u32::try_from(self.occurrences.len()).unwrap_or(u32::MAX);
        self.slots[i] = Slot {
            word,
            newest: n,
            line,
        };
        if newest == 0 {
            self.words += 1;
            if 2 * self.words > self.slots.len() {
                self.grow();
            }
        }
    }

    fn grow(&mut self) {
        let size = 2 * self.slots.len();
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); size]);
        for slot in old.into_iter().filter(|s| s.newest != 0) {
            let i = Self::slot(&self.slots, slot.word);
            self.slots[i] = slot;
        }
    }

    /// The lines that hold `word`, each once, last line first.
    fn lines(&self, word: u64) -> impl Iterator<Item = u32> + '_ {
        let mut next = self.slots[Self::slot(&self.slots, word)].newest;
        std::iter::from_fn(move || {
            let (line, previous) = *self
                .occurrences
                .get(usize::try_from(next).ok()?.checked_sub(1)?)?;
            next = previous;
            Some(line)
        })
    }
}

/// A text's best line for a question: (words found, line number), or none.
type BestLine = Option<(u32, u32)>;

/// The words the probes of the episode a thread replays will look for ([`Llm::expect_questions`]): word tables
/// built for them hold those words only, and pass over most other words after a look at their first three
/// bytes, without hashing them. An answer is the same either way, as it reads only the question's words.
struct Interest {
    /// Names the set in the key of the tables built for it (0: tables of every word).
    id: u64,
    /// The hashes of the questions' words.
    words: rustc_hash::FxHashSet<u64>,
    /// One bit per [`head_bit`] of a question's word.
    heads: Box<[u64; 1024]>,
}

impl Interest {
    fn new(questions: &[&str]) -> Self {
        let mut words = rustc_hash::FxHashSet::default();
        let mut heads = Box::new([0u64; 1024]);
        for question in questions {
            for w in question_words(question) {
                let bit = head_bit(head(w.as_bytes()));
                heads[bit / 64] |= 1 << (bit % 64);
                words.insert(xxh3_64(w.as_bytes()));
            }
        }
        let mut sorted: Vec<u64> = words.iter().copied().collect();
        sorted.sort_unstable();
        let bytes: Vec<u8> = sorted.iter().flat_map(|w| w.to_le_bytes()).collect();
        Self {
            id: xxh3_64(&bytes) | 1,
            words,
            heads,
        }
    }

    /// Whether a word that starts with `head` may be one of the questions' words.
    fn may_hold(&self, head: [u8; 3]) -> bool {
        let bit = head_bit(head);
        self.heads[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Whether the table built for this set answers a question with these words.
    fn covers(&self, wanted: &[u64]) -> bool {
        wanted.iter().all(|w| self.words.contains(w))
    }
}

/// The first three bytes of a word (every word has three or more; zeros stand in for any missing).
fn head(word: &[u8]) -> [u8; 3] {
    let byte = |i: usize| word.get(i).copied().unwrap_or(0);
    [byte(0), byte(1), byte(2)]
}

/// A 16-bit hash of a word's first three bytes.
fn head_bit(head: [u8; 3]) -> usize {
    let v = u32::from(head[0]) | u32::from(head[1]) << 8 | u32::from(head[2]) << 16;
    (v.wrapping_mul(0x9E37_79B1) >> 16) as usize
}

/// Answers kept at most per thread, of each kind: (question, text) and whole requests (a few megabytes). They
/// are reused by the strategies of one episode, which run together on one thread, and go when the thread starts
/// another episode ([`AnswerCache::expect`]); this bound only holds one huge episode's. The bundled dataset asks
/// 33,303 distinct (question, text) pairs over 42 episodes, most of them in its largest episodes: a bound of
/// 4 k made 25% more of them be answered again, this one answers each once.
const MAX_ANSWERS: usize = 1 << 15;

/// The line of a text that holds the most of the `wanted` words, the last one on ties, with its count; `hits`
/// is scratch space.
fn best_line(index: &LineIndex, wanted: &[u64], hits: &mut Vec<u32>) -> BestLine {
    hits.clear();
    for &w in wanted {
        hits.extend(index.lines(w));
    }
    hits.sort_unstable();
    let mut best = None;
    for run in hits.chunk_by(|a, b| a == b) {
        let score = u32::try_from(run.len()).unwrap_or(u32::MAX);
        if best.is_none_or(|(b, _)| score >= b) {
            best = Some((score, run[0]));
        }
    }
    best
}

/// The deterministic mock LLM.
#[derive(Debug, Clone)]
pub struct MockLlm {
    config: MockConfig,
    tokenizer: Arc<Tokenizer>,
}

/// The answer path's caches, one per thread. A text's line index and its best line for a question depend on
/// nothing but their content, so every mock on a thread shares them; a worker replays all the strategies of
/// an episode, so the questions and texts of one episode meet on one thread, where a lookup takes no lock and
/// touches no cache line another core writes.
#[derive(Default)]
struct AnswerCache {
    /// Line indexes of the texts seen, by content hash and the [`Interest`] they were built for (0: none): a
    /// text is split into words once, however many probes read it.
    lines: FxHashMap<(u128, u64), LineIndex>,
    /// The words the probes of the thread's episode look for, when the replay said.
    interest: Option<Interest>,
    /// The best line of a text for a question, by (question, text) hash: the strategies of one episode ask
    /// the same questions of mostly the same texts.
    answers: FxHashMap<(u64, u128), BestLine>,
    /// The answer to a whole request, by (question, every text's hash) hash: strategies that have not reduced
    /// the request yet send the very request another already sent (half the probe calls on the bundled
    /// dataset).
    requests: FxHashMap<u128, Option<(usize, u32)>>,
    /// Scratch space for [`best_line`].
    hits: Vec<u32>,
}

thread_local! {
    static ANSWER_CACHE: RefCell<AnswerCache> = RefCell::default();
}

impl AnswerCache {
    /// Starts an episode that asks the questions of `interest`. When they are not the last episode's, nothing
    /// cached is of use any more (answers and requests are keyed by question, line indexes by interest), so it
    /// all goes; the tables keep their room, so that memory follows the largest episode and not the number of
    /// episodes a thread replays.
    fn expect(&mut self, interest: Option<Interest>) {
        let id = |i: &Option<Interest>| i.as_ref().map_or(0, |i| i.id);
        if id(&interest) != id(&self.interest) {
            self.lines.clear();
            self.answers.clear();
            self.requests.clear();
        }
        self.interest = interest;
    }

    /// The line that answers the question `wanted` (keyed by `question`) in a request of `texts` (keyed by
    /// `keys`; the whole request by `request`): (text, line) of the best line of the last text with the highest
    /// score.
    fn answer(
        &mut self,
        question: u64,
        request: u128,
        wanted: &[u64],
        texts: &[&str],
        keys: &[u128],
    ) -> Option<(usize, u32)> {
        if let Some(&found) = self.requests.get(&request) {
            return found;
        }
        let mut best: Option<(u32, usize, u32)> = None;
        let interest = self
            .interest
            .as_ref()
            .filter(|i| i.covers(wanted))
            .map_or(0, |i| i.id);
        for (t, (text, &key)) in texts.iter().zip(keys).enumerate() {
            if let Some((score, line)) = self.best_line(question, wanted, key, interest, text) {
                if best.is_none_or(|(b, _, _)| score >= b) {
                    best = Some((score, t, line));
                }
            }
        }
        let found = best.map(|(_, t, line)| (t, line));
        if self.requests.len() >= MAX_ANSWERS {
            self.requests.clear();
        }
        self.requests.insert(request, found);
        found
    }

    /// The best line of `text` (keyed by `key`) for the question `wanted` (keyed by `question`), from a word
    /// table built for the thread's [`Interest`] when `interest` is its id, else of every word.
    fn best_line(
        &mut self,
        question: u64,
        wanted: &[u64],
        key: u128,
        interest: u64,
        text: &str,
    ) -> BestLine {
        if let Some(&found) = self.answers.get(&(question, key)) {
            return found;
        }
        if self.lines.len() >= MAX_LINE_INDEXES && !self.lines.contains_key(&(key, interest)) {
            // A cache, not a record: bounded so that memory does not grow with the number of episodes.
            self.lines.clear();
        }
        let words = self.interest.as_ref().filter(|i| i.id == interest);
        let index = self
            .lines
            .entry((key, interest))
            .or_insert_with(|| LineIndex::new(text, words));
        let found = best_line(index, wanted, &mut self.hits);
        if self.answers.len() >= MAX_ANSWERS {
            self.answers.clear();
        }
        self.answers.insert((question, key), found);
        found
    }
}

impl MockLlm {
    /// A mock that counts usage with `tokenizer`.
    #[must_use]
    pub fn new(config: MockConfig, tokenizer: Arc<Tokenizer>) -> Self {
        Self { config, tokenizer }
    }

    /// Answers the last user message with the request line that shares the most of its words (the latest on
    /// ties).
    fn answer(&self, request: &LlmRequest, keys: Option<&[u128]>) -> String {
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
        if wanted.is_empty() {
            return "I don't know.".into();
        }
        let n = request.contents.len().saturating_sub(1);
        let texts: Vec<&str> = request
            .instructions
            .iter()
            .map(String::as_str)
            .chain(request.contents[..n].iter().map(Item::text))
            .collect();
        // Any content hash names a text: the caller's, or one of the text itself.
        let keys: Cow<'_, [u128]> = match keys.filter(|k| k.len() == texts.len()) {
            Some(k) => Cow::Borrowed(k),
            None => texts.iter().map(|t| xxh3_128(t.as_bytes())).collect(),
        };
        let mut bytes = Vec::with_capacity(8 * wanted.len() + 16 * keys.len());
        bytes.extend(wanted.iter().flat_map(|w| w.to_le_bytes()));
        let question_key = xxh3_64(&bytes);
        bytes.extend(keys.iter().flat_map(|k| k.to_le_bytes()));
        let request_key = xxh3_128(&bytes);
        let best = ANSWER_CACHE.with_borrow_mut(|cache| {
            cache.answer(question_key, request_key, &wanted, &texts, &keys)
        });
        best.and_then(|(t, line)| texts[t].lines().nth(line as usize))
            .map_or_else(|| "I don't know.".into(), |line| clip(line.trim(), 300))
    }

    /// The modelled latency of a call, in milliseconds.
    #[must_use]
    pub fn latency_ms(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let ms = self.config.ttft_ms
            + input_tokens as f64 * self.config.ms_per_input_token
            + output_tokens as f64 * self.config.ms_per_output_token;
        ms
    }

    /// The text of the reply to a request: a summary of its history block, or an answer.
    fn reply(&self, request: &LlmRequest, keys: Option<&[u128]>) -> String {
        if let Some(history) = request.instructions.iter().find_map(|s| history_block(s)) {
            summarize(history, &self.tokenizer, self.config.summary_max_tokens)
        } else {
            self.answer(request, keys)
        }
    }

    /// Answers a request synchronously (the async [`Llm::generate`] is ready at once).
    #[must_use]
    pub fn respond(&self, request: &LlmRequest) -> LlmResponse {
        let text = self.reply(request, None);
        let input = self
            .tokenizer
            .count_request(&request.instructions, &request.contents) as u64;
        let output = self.tokenizer.count_text(&text) as u64;
        LlmResponse {
            latency_ms: self.latency_ms(input, output),
            text,
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
            },
        }
    }
}

#[async_trait]
impl Llm for MockLlm {
    fn model(&self) -> &str {
        &self.config.model
    }

    async fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        Ok(self.respond(request))
    }

    async fn generate_text(&self, request: &LlmRequest, keys: Option<&[u128]>) -> Result<String> {
        Ok(self.reply(request, keys))
    }

    fn expect_questions(&self, questions: &[&str]) {
        let interest = (!questions.is_empty()).then(|| Interest::new(questions));
        ANSWER_CACHE.with_borrow_mut(|cache| cache.expect(interest));
    }
}

/// The text between `<history>` and `</history>`, if the instruction has such a block.
fn history_block(instruction: &str) -> Option<&str> {
    let start = instruction.find("<history>")? + "<history>".len();
    let end = instruction[start..].rfind("</history>")? + start;
    Some(instruction[start..end].trim_matches('\n'))
}

const ERROR_WORDS: [&str; 12] = [
    "error",
    "exception",
    "failed",
    "failure",
    "traceback",
    "assert",
    "denied",
    "not found",
    "timeout",
    "refused",
    "fatal",
    "panic",
];

/// Words of a line: runs of letters, digits, `_`, `.`, `/` and `-`, lower-cased, at least 3 characters.
fn words(line: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    line.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '-' | '/')))
        .filter(|w| w.len() >= 3 && (w.is_ascii() || w.chars().count() >= 3))
        .map(|w| {
            if w.bytes().any(|b| b.is_ascii_uppercase()) || !w.is_ascii() {
                Cow::Owned(w.to_lowercase())
            } else {
                Cow::Borrowed(w)
            }
        })
}

/// The words a question looks for: its [`words`] but stopwords.
fn question_words(question: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    words(question).filter(|w| !STOPWORDS.contains(&w.as_ref()))
}

/// The bytes [`words`] keeps in a word, for ASCII text.
const WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-');
        b += 1;
    }
    t
};

/// Calls `f(line, hash)` for every word of `text` (as [`words`] splits each of its lines) whose first three
/// bytes `admit` lets through, with the word's line number and hash. ASCII text, the common case, is scanned
/// byte by byte without splitting it into lines or allocating.
fn word_hashes(text: &str, admit: impl Fn([u8; 3]) -> bool, mut f: impl FnMut(u32, u64)) {
    if !text.is_ascii() {
        for (n, line) in text.lines().enumerate() {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            for w in words(line) {
                if admit(head(w.as_bytes())) {
                    f(n, xxh3_64(w.as_bytes()));
                }
            }
        }
        return;
    }
    let bytes = text.as_bytes();
    let mut lower = Vec::new();
    let mut line = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !WORD_BYTE[b as usize] {
            if b == b'\n' {
                line = line.saturating_add(1);
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && WORD_BYTE[bytes[i] as usize] {
            i += 1;
        }
        let mut word = &bytes[start..i];
        while let [b'.' | b'-' | b'/', rest @ ..] = word {
            word = rest;
        }
        while let [rest @ .., b'.' | b'-' | b'/'] = word {
            word = rest;
        }
        if word.len() < 3 || !admit(head(word).map(|b| b.to_ascii_lowercase())) {
            continue;
        }
        if word.iter().any(u8::is_ascii_uppercase) {
            lower.clear();
            lower.extend(word.iter().map(u8::to_ascii_lowercase));
            f(line, xxh3_64(&lower));
        } else {
            f(line, xxh3_64(word));
        }
    }
}

fn is_identifier(word: &str) -> bool {
    word.contains('_')
        || word.contains('/')
        || (word.contains('.') && !word.ends_with('.'))
        || (word.chars().any(|c| c.is_ascii_digit()) && word.chars().any(char::is_alphabetic))
}

/// How salient a history line is: errors, paths, numbers, identifiers used elsewhere.
fn salience(line: &str, freq: &HashMap<String, usize>) -> i64 {
    let lower = line.to_lowercase();
    let mut score = 0i64;
    if ERROR_WORDS.iter().any(|w| lower.contains(w)) {
        score += 4;
    }
    let mut paths = 0;
    let mut numbers = 0;
    let mut reused = 0;
    for w in words(line) {
        if w.contains('/')
            || (w.contains('.')
                && w.rsplit('.').next().is_some_and(|ext| {
                    (1..=4).contains(&ext.len()) && ext.chars().all(char::is_alphabetic)
                }))
        {
            paths += 1;
        }
        if w.chars().any(|c| c.is_ascii_digit()) {
            numbers += 1;
        }
        if is_identifier(&w) && freq.get(w.as_ref()).copied().unwrap_or(0) >= 2 {
            reused += 1;
        }
    }
    score += 2 * paths.min(2) + numbers.min(2) + reused.min(3);
    if line.starts_with("[Tool Call]") {
        score -= 2;
    }
    score
}

/// An extractive summary of formatted history lines, in sections, under `budget` tokens.
fn summarize(history: &str, tokenizer: &Tokenizer, budget: usize) -> String {
    let lines: Vec<&str> = history
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut freq: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        for w in words(line) {
            *freq.entry(w.into_owned()).or_default() += 1;
        }
    }
    let task = lines
        .iter()
        .find(|l| l.starts_with("[user]:") || l.starts_with("[Previous summary]"))
        .map(|l| clip(l, 200));
    let mut tools: BTreeMap<usize, (String, usize)> = BTreeMap::new();
    let mut tool_index: HashMap<String, usize> = HashMap::new();
    for line in &lines {
        if let Some(rest) = line.strip_prefix("[Tool Call]: ") {
            let name = rest.split('(').next().unwrap_or(rest).trim().to_owned();
            let next = tool_index.len();
            let idx = *tool_index.entry(name.clone()).or_insert(next);
            tools.entry(idx).or_insert((name, 0)).1 += 1;
        }
    }
    let assistant: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("[assistant]:"))
        .collect();
    let remaining = assistant
        .iter()
        .rev()
        .find(|l| {
            let lower = l.to_lowercase();
            ["next", "todo", "remaining", "still", "need", "will "]
                .iter()
                .any(|w| lower.contains(w))
        })
        .map(|l| clip(l, 240));

    let mut out = String::new();
    out.push_str("## Task\n");
    out.push_str(
        task.as_deref()
            .unwrap_or("(not stated in this part of the history)"),
    );
    out.push_str("\n## Tools used\n");
    if tools.is_empty() {
        out.push_str("(none)\n");
    } else {
        let list: Vec<String> = tools.values().map(|(n, c)| format!("{n} ×{c}")).collect();
        out.push_str(&list.join(", "));
        out.push('\n');
    }
    let fixed_tail = {
        let mut t = String::from("## Progress\n");
        match assistant.last() {
            Some(l) => t.push_str(&clip(l, 240)),
            None => t.push_str("(no assistant step)"),
        }
        t.push_str("\n## Remaining work\n");
        t.push_str(remaining.as_deref().unwrap_or("(not stated)"));
        t
    };
    let mut used = tokenizer.count_text(&out) + tokenizer.count_text(&fixed_tail) + 6;
    // Rank candidate lines by salience, then by position, and take them while they fit.
    let mut ranked: Vec<(i64, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.starts_with("[user]:"))
        .map(|(i, l)| (salience(l, &freq), i))
        .filter(|(s, _)| *s > 0)
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen = Vec::new();
    for (_, i) in ranked {
        let line = format!("- {}\n", clip(lines[i], 240));
        // A line that does not fit is skipped as soon as it is known not to.
        let Some(cost) = tokenizer.count_text_within(&line, budget.saturating_sub(used)) else {
            continue;
        };
        used += cost;
        chosen.push((i, line));
    }
    chosen.sort_by_key(|(i, _)| *i);
    out.push_str("## Key findings\n");
    if chosen.is_empty() {
        out.push_str("(none)\n");
    }
    for (_, line) in chosen {
        out.push_str(&line);
    }
    out.push_str(&fixed_tail);
    out
}

/// Cuts `s` to at most `max` characters, marking the cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((byte, _)) => format!("{}…", &s[..byte]),
        None => s.to_owned(),
    }
}

const STOPWORDS: [&str; 24] = [
    "the", "and", "was", "were", "what", "which", "who", "when", "where", "how", "did", "does",
    "for", "with", "that", "this", "from", "are", "has", "have", "its", "into", "after", "about",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word of `text` with its line, by the definition: [`words`] of each line.
    fn defined_words(text: &str) -> Vec<(u32, u64)> {
        text.lines()
            .enumerate()
            .flat_map(|(n, line)| {
                words(line).map(move |w| (u32::try_from(n).unwrap(), xxh3_64(w.as_bytes())))
            })
            .collect()
    }

    fn scanned_words(text: &str) -> Vec<(u32, u64)> {
        let mut found = Vec::new();
        word_hashes(text, |_| true, |line, word| found.push((line, word)));
        found
    }

    #[test]
    fn the_ascii_scanner_finds_the_words_of_the_definition() {
        // Long runs, runs of trimmed bytes only, blank lines, CRLF, tabs, upper case and an empty text.
        let long = "a".repeat(200);
        for text in [
            String::new(),
            "ab".into(),
            format!("{}\n{}", "x".repeat(63), "yz".repeat(40)),
            format!("{long} {long}\n-{long}-"),
            format!("{}\n\n{}Abc_D.e/f-", " ".repeat(62), "-".repeat(64)),
            format!(
                "{}Hello World\r\n[x] ../src/App.py:12 {long}",
                "\t".repeat(70)
            ),
        ] {
            assert_eq!(scanned_words(&text), defined_words(&text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn word_hashes_equal_the_definition(text in "([aZ0_./ -]{0,70}[\n\r\t,:]?){0,12}") {
            proptest::prop_assert_eq!(scanned_words(&text), defined_words(&text));
        }
    }

    fn mock() -> MockLlm {
        MockLlm::new(MockConfig::default(), Tokenizer::shared_default().unwrap())
    }

    #[test]
    fn summary_is_sectioned_deterministic_and_keeps_errors() {
        let history = "[user]: Fix the failing test in src/app.py...\n\
                       [Tool Call]: run_tests({\"path\": \"tests\"})\n\
                       [Tool Result]: run_tests -> FAILED tests/test_app.py::test_total AssertionError: 41 != 42...\n\
                       [assistant]: The total is off by one in src/app.py line 17; next I will fix it....";
        let req = LlmRequest {
            instructions: vec![format!("Summarize.\n<history>\n{history}\n</history>")],
            contents: vec![Item::user("Please summarize.")],
        };
        let m = mock();
        let a = m.respond(&req);
        assert_eq!(a, m.respond(&req));
        for section in [
            "## Task",
            "## Tools used",
            "## Key findings",
            "## Progress",
            "## Remaining work",
        ] {
            assert!(a.text.contains(section), "{}", a.text);
        }
        assert!(a.text.contains("AssertionError: 41 != 42"), "{}", a.text);
        assert!(a.text.contains("run_tests ×1"), "{}", a.text);
        assert!(a.latency_ms > 350.0);
        assert_eq!(
            a.usage.output_tokens as usize,
            m.tokenizer.count_text(&a.text)
        );
    }

    #[test]
    fn summary_respects_budget() {
        let history: String = (0..500)
            .map(|i| format!("[Tool Result]: t -> error at /src/f{i}.rs:{i}\n"))
            .collect();
        let req = LlmRequest {
            instructions: vec![format!("<history>\n{history}</history>")],
            contents: vec![],
        };
        let m = mock();
        let a = m.respond(&req);
        assert!(
            a.usage.output_tokens <= 400 + 10,
            "{}",
            a.usage.output_tokens
        );
    }

    /// The answer by its definition: every line of every text scored on its own, with no index and no cache.
    fn reference_answer(request: &LlmRequest) -> String {
        let question = request
            .contents
            .iter()
            .rev()
            .find(|i| i.is_role(Role::User))
            .map_or("", Item::text);
        let wanted: Vec<String> = words(question)
            .filter(|w| !STOPWORDS.contains(&w.as_ref()))
            .map(Cow::into_owned)
            .collect();
        if wanted.is_empty() {
            return "I don't know.".into();
        }
        let n = request.contents.len() - 1;
        let texts = request
            .instructions
            .iter()
            .map(String::as_str)
            .chain(request.contents[..n].iter().map(Item::text));
        let mut best: Option<(usize, &str)> = None;
        for text in texts {
            for line in text.lines() {
                let found: Vec<Cow<'_, str>> = words(line).collect();
                let score = wanted
                    .iter()
                    .filter(|w| found.iter().any(|f| f == w.as_str()))
                    .count();
                if score > 0 && best.is_none_or(|(b, _)| score >= b) {
                    best = Some((score, line));
                }
            }
        }
        best.map_or_else(
            || "I don't know.".into(),
            |(_, line)| clip(line.trim(), 300),
        )
    }

    #[test]
    fn line_index_lists_each_line_of_a_word_once_however_many_words() {
        // 3,000 distinct words in a text whose length predicts far fewer: the table grows several times.
        let text: String = (0..3_000)
            .map(|i| format!("w{i:x} w{:x}{}", i / 3, if i % 7 == 0 { "\n" } else { " " }))
            .collect();
        let index = LineIndex::new(&text, None);
        assert!(index.slots.len() > (text.len() / 8 + 16).next_power_of_two());
        let lines: Vec<Vec<String>> = text
            .lines()
            .map(|l| words(l).map(Cow::into_owned).collect())
            .collect();
        for probe in ["w0", "w1", "w3e7", "w3e8", "wbb7", "absent"] {
            let mut expected: Vec<u32> = (0..lines.len())
                .filter(|&n| lines[n].iter().any(|w| w == probe))
                .map(|n| u32::try_from(n).unwrap())
                .collect();
            expected.reverse();
            let found: Vec<u32> = index.lines(xxh3_64(probe.as_bytes())).collect();
            assert_eq!(found, expected, "{probe}");
        }
    }

    #[test]
    fn cached_answers_equal_the_definition() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/datasets/default.jsonl"
        ));
        let episodes = crate::history::dataset::read_all(path).unwrap();
        // Without the replay's hint, then with it (each on a fresh thread, so with fresh caches): with it, a
        // question the hint did not name must be answered as well.
        for hinted in [false, true] {
            let asked = std::thread::scope(|s| {
                s.spawn(|| {
                    let m = mock();
                    let mut asked = 0;
                    for ep in episodes.iter().take(12) {
                        if hinted {
                            let questions: Vec<&str> =
                                ep.probes.iter().map(|p| p.question.as_str()).collect();
                            m.expect_questions(&questions);
                        }
                        // A question the hint did not name: the first line of the episode's first tool
                        // result, whose words a table of the probes' words alone would mostly miss.
                        let unexpected = ep.items.iter().find_map(|i| match i {
                            Item::ToolResult { content, .. } => content.lines().next(),
                            _ => None,
                        });
                        let last = ep.items.len() - 1;
                        for question in ep
                            .probes
                            .iter()
                            .map(|p| (p.question.as_str(), p.after_item))
                            .chain(unexpected.map(|q| (q, last)))
                        {
                            asked += check_answers(&m, ep, question);
                        }
                    }
                    asked
                })
                .join()
                .unwrap()
            });
            assert!(asked > 30, "{asked}");
        }
    }

    /// Asks `question` (after the item it names) as the baseline sends it, then with every other tool result
    /// gone (a different request over the same texts, as another strategy sends it) and with a summary
    /// instruction; checks each answer against the definition. Returns how many were asked.
    fn check_answers(
        m: &MockLlm,
        ep: &crate::Episode,
        (question, after_item): (&str, usize),
    ) -> usize {
        let upto = (after_item + 1).min(ep.items.len());
        let full: Vec<Item> = ep.items[..upto].to_vec();
        let thinned: Vec<Item> = full
            .iter()
            .enumerate()
            .filter(|(i, it)| i % 2 == 0 || !matches!(it, Item::ToolResult { .. }))
            .map(|(_, it)| it.clone())
            .collect();
        let mut asked = 0;
        for (instructions, mut contents) in [
            (vec![], full.clone()),
            (vec![], thinned),
            (vec![format!("[Previous work summary]\n{}", ep.task)], full),
        ] {
            contents.push(Item::user(question));
            let req = LlmRequest {
                instructions,
                contents,
            };
            assert_eq!(
                m.respond(&req).text,
                reference_answer(&req),
                "episode {}, question {question:?}",
                ep.id
            );
            asked += 1;
        }
        asked
    }

    #[test]
    fn answers_by_extractive_lookup() {
        let req = LlmRequest::from_contents(vec![
            Item::tool_result(
                "1",
                "db",
                "customer_id: C-1029\ntier: gold\nrefund_limit: 250 USD",
            ),
            Item::user("What is the refund_limit of the customer?"),
        ]);
        assert_eq!(mock().respond(&req).text, "refund_limit: 250 USD");
    }

    #[test]
    fn a_thread_forgets_the_answers_of_an_episode_with_other_questions() {
        let m = mock();
        let question = "What is the refund_limit of the customer?";
        let req = LlmRequest::from_contents(vec![
            Item::tool_result("1", "db", "customer_id: C-1029\nrefund_limit: 250 USD"),
            Item::user(question),
        ]);
        let held =
            || ANSWER_CACHE.with_borrow(|c| (c.lines.len(), c.answers.len(), c.requests.len()));
        m.expect_questions(&[question]);
        assert_eq!(m.respond(&req).text, "refund_limit: 250 USD");
        assert!(held().0 > 0 && held().1 > 0 && held().2 > 0, "{:?}", held());
        // The same questions again (another strategy of the same episode): everything stays.
        let before = held();
        m.expect_questions(&[question]);
        assert_eq!(held(), before);
        // Another episode's questions: nothing cached is of use, so nothing stays, and answers are the same.
        m.expect_questions(&["Which linker is missing?"]);
        assert_eq!(held(), (0, 0, 0));
        m.expect_questions(&[question]);
        assert_eq!(m.respond(&req).text, "refund_limit: 250 USD");
    }
}
