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

use super::clip;
use super::index::{best_line, question_words, BestLine, Interest, LineIndex, MAX_LINE_INDEXES};
use crate::history::{Item, Role, Text};
use crate::llm::LlmRequest;

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
    /// The answer to a whole request, by a hash of the question and every text key: strategies that have not
    /// reduced the request yet send the very request another already sent (half the probe calls on the bundled
    /// dataset).
    pub(super) requests: FxHashMap<u128, Option<(usize, u32)>>,
    /// The item texts whose address is a key above, kept alive while it is.
    held: Vec<Text>,
    /// Scratch space for [`best_line`].
    hits: Vec<u32>,
}

thread_local! {
    pub(super) static ANSWER_CACHE: RefCell<AnswerCache> = RefCell::default();
}

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
        self.held.clear();
    }

    /// The line that answers the question `wanted` (keyed by `question`) in a request of `texts` (with their
    /// `keys`; the whole request keyed by `request`): (text, line) of the best line of the last text with the
    /// highest score.
    fn answer(
        &mut self,
        question: u64,
        request: u128,
        wanted: &[u64],
        texts: &[(&str, u128, Option<&Text>)],
    ) -> Option<(usize, u32)> {
        if let Some(&found) = self.requests.get(&request) {
            return found;
        }
        if self.requests.len() >= MAX_ANSWERS
            || self.answers.len() + texts.len() >= MAX_ANSWERS
            || self.lines.len() + texts.len() >= MAX_LINE_INDEXES
        {
            // Caches, not records: bounded so that memory does not grow with the number of episodes.
            self.clear();
        }
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
        let found = best.map(|(_, t, line)| (t, line));
        self.requests.insert(request, found);
        found
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

/// Answers the last user message of `request` with the request line that shares the most of its words (the
/// latest on ties), or "I don't know."
pub(super) fn answer(request: &LlmRequest) -> String {
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
    let texts: Vec<(&str, u128, Option<&Text>)> = request
        .instructions
        .iter()
        .map(|s| (s.as_str(), instruction_key(s), None))
        .chain(request.contents[..n].iter().map(|item| {
            let text = item.shared_text();
            (&**text, item_key(text), Some(text))
        }))
        .collect();
    let mut bytes = Vec::with_capacity(8 * wanted.len() + 16 * texts.len());
    bytes.extend(wanted.iter().flat_map(|w| w.to_le_bytes()));
    let question_key = xxh3_64(&bytes);
    bytes.extend(texts.iter().flat_map(|t| t.1.to_le_bytes()));
    let request_key = xxh3_128(&bytes);
    let best = ANSWER_CACHE
        .with_borrow_mut(|cache| cache.answer(question_key, request_key, &wanted, &texts));
    best.and_then(|(t, line)| texts[t].0.lines().nth(line as usize))
        .map_or_else(|| "I don't know.".into(), |line| clip(line.trim(), 300))
}

/// Tells this thread's caches the questions of the episode it starts.
pub(super) fn expect(questions: &[&str]) {
    let interest = (!questions.is_empty()).then(|| Interest::new(questions));
    ANSWER_CACHE.with_borrow_mut(|cache| cache.expect(interest));
}
