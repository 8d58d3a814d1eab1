//! The mock's word tables: which terms ([`super::terms`]) a text holds on which line, so that a probe's answer
//! is found without reading every line of every text again. A question that names its subject in ordinary
//! words ("the settings file", "damaged in transit") meets the identifiers a tool wrote through their parts.

use xxhash_rust::xxh3::xxh3_64;

use super::terms::{
    emit_run, head, line_term_hashes, question_terms, term_hashes, CLASS, MAX_STRIPPED, NEWLINE,
    PLAIN,
};
use crate::history::text::line_count;

/// Line indexes kept at most per thread (a few episodes' texts, a few megabytes).
pub(super) const MAX_LINE_INDEXES: usize = 2_048;

/// Where each word of a text occurs: an open-addressed table from a word's hash to the lines that hold it,
/// chained newest first, each line once. Built in one pass over the text, without sorting: the sorted list of
/// (word, line) pairs it replaced spent a third of the probe path's instructions in its sort.
pub(super) struct LineIndex {
    /// Per slot, at most half of them used: the word's hash, its newest occurrence + 1 (0 when the slot is free)
    /// and that occurrence's line, so that a word repeated on one line is told without reading `occurrences`.
    pub(super) slots: Vec<Slot>,
    /// Per occurrence: (line, the word's previous occurrence + 1, or 0).
    occurrences: Vec<(u32, u32)>,
    /// Distinct words.
    words: usize,
    /// Lines of the text (as `str::lines` counts them).
    pub(super) line_count: u32,
}

/// One slot of a [`LineIndex`] (16 bytes, as a `(u64, u32)` pair takes with its padding).
#[derive(Clone, Copy, Default)]
pub(super) struct Slot {
    word: u64,
    newest: u32,
    line: u32,
}

impl LineIndex {
    /// The table of every term of `text`, or, with `interest`, of the terms it holds only.
    pub(super) fn new(text: &str, interest: Option<&Interest>) -> Self {
        let line_count = u32::try_from(line_count(text)).unwrap_or(u32::MAX);
        let Some(interest) = interest else {
            // About one word per 8 bytes of text, a fraction of them distinct: most tables never grow.
            let mut index = Self::with_capacity(text.len() / 8 + 16, line_count);
            term_hashes(text, |_, _| true, |line, term| index.insert(term, line));
            return index;
        };
        let mut index = Self::with_capacity(16, line_count);
        interest.term_hashes(text, |line, term| {
            if interest.words.contains(&term) {
                index.insert(term, line);
            }
        });
        index
    }

    fn with_capacity(words: usize, line_count: u32) -> Self {
        Self {
            slots: vec![Slot::default(); words.next_power_of_two()],
            occurrences: Vec::with_capacity(words),
            words: 0,
            line_count,
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
    pub(super) fn lines(&self, word: u64) -> impl Iterator<Item = u32> + '_ {
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

/// The terms the probes of the episode a thread replays will look for
/// ([`Llm::start_episode`](crate::llm::Llm::start_episode)): word tables built for them hold those terms only,
/// and pass over most other words after a look at their first three bytes and their length, without hashing
/// them. An answer is the same either way, as it reads only the question's terms.
pub(super) struct Interest {
    /// Names the set in the key of the tables built for it (0: tables of every word).
    pub(super) id: u64,
    /// The hashes of the questions' terms.
    pub(super) words: rustc_hash::FxHashSet<u64>,
    /// One bit per [`head_bit`] of a question's term with each length a word of that stem may have.
    heads: Box<[u64; 1024]>,
    /// The first bytes of every word or part whose stem may be a question's term, any case ([`Starts`]).
    starts: Starts,
}

/// The first bytes of every word or part whose stem is one of a set of terms, any case: each term less the `i` a
/// stem may end with ([`stem`](super::terms::stem)) starts every word of that stem. A term's word or part starts
/// a run of word bytes or follows a separator in it, so an ASCII text is read once, byte by byte, and only the
/// runs with such a start that holds the first bytes of a term's are read word by word ([`emit_run`]): most
/// hold none. (It replaced an Aho-Corasick DFA of the terms' first four characters, which cost a million
/// instructions to build per episode and 16 a byte to search.)
struct Starts {
    /// Terms of one byte (a prefix of one character, its second byte any): bit per first byte.
    one: [u64; 4],
    /// Terms of two bytes: bit per first two bytes.
    two: Box<[u64; 1024]>,
    /// Terms of three bytes or more: bit per [`start_bit`] of the first three.
    three: Box<[u64; 1024]>,
}

impl Starts {
    fn new<'t>(terms: impl IntoIterator<Item = &'t str>) -> Self {
        let mut starts = Self {
            one: [0; 4],
            two: Box::new([0; 1024]),
            three: Box::new([0; 1024]),
        };
        let set = |bits: &mut [u64], bit: usize| bits[bit / 64] |= 1 << (bit % 64);
        for term in terms {
            let t = term.strip_suffix('i').unwrap_or(term).as_bytes();
            match *t {
                [] => {}
                [a] => set(&mut starts.one, usize::from(a)),
                [a, b] => set(&mut starts.two[..], usize::from(a) << 8 | usize::from(b)),
                [a, b, c, ..] => set(&mut starts.three[..], start_bit(a, b, c)),
            }
        }
        starts
    }

    /// Whether a word or part that starts at `bytes[i]` may start with a term (its bytes lower-cased; the end of
    /// the text reads as zeros).
    #[inline(always)]
    fn may_start(&self, bytes: &[u8], i: usize) -> bool {
        let byte = |k: usize| bytes.get(i + k).map_or(0, u8::to_ascii_lowercase);
        let (a, b, c) = (byte(0), byte(1), byte(2));
        let has = |bits: &[u64], bit: usize| bits[bit / 64] & (1 << (bit % 64)) != 0;
        has(&self.one, usize::from(a))
            || has(&self.two[..], usize::from(a) << 8 | usize::from(b))
            || has(&self.three[..], start_bit(a, b, c))
    }
}

/// A 16-bit hash of three bytes.
fn start_bit(a: u8, b: u8, c: u8) -> usize {
    let v = u32::from(a) | u32::from(b) << 8 | u32::from(c) << 16;
    (v.wrapping_mul(0x9E37_79B1) >> 16) as usize
}

impl Interest {
    pub(super) fn new(questions: &[&str]) -> Self {
        let mut words = rustc_hash::FxHashSet::default();
        let mut heads = Box::new([0u64; 1024]);
        let mut terms: Vec<String> = Vec::new();
        for question in questions {
            for t in question_terms(question) {
                // A stem is at most `MAX_STRIPPED` bytes shorter than its word.
                for len in t.len()..=t.len() + MAX_STRIPPED {
                    let bit = head_bit(head(t.as_bytes()), len);
                    heads[bit / 64] |= 1 << (bit % 64);
                }
                words.insert(xxh3_64(t.as_bytes()));
                terms.push(t);
            }
        }
        let mut sorted: Vec<u64> = words.iter().copied().collect();
        sorted.sort_unstable();
        let bytes: Vec<u8> = sorted.iter().flat_map(|w| w.to_le_bytes()).collect();
        Self {
            id: xxh3_64(&bytes) | 1,
            words,
            heads,
            starts: Starts::new(terms.iter().map(String::as_str)),
        }
    }

    /// [`term_hashes`] of `text` for the terms that may be the questions': the same calls, in the same order,
    /// for every term whose hash is among [`Interest::words`], and calls for a few other terms. It reads only
    /// the runs of word bytes of ASCII text (or of a text's ASCII lines) where a word or part starts as a term
    /// does ([`Starts`]); most runs hold none.
    pub(super) fn term_hashes(&self, text: &str, mut f: impl FnMut(u32, u64)) {
        let admit = |head, len| self.may_hold(head, len);
        if text.is_ascii() {
            self.started(text.as_bytes(), 0, &admit, &mut f);
            return;
        }
        // Line by line, each ASCII line as an ASCII text is read (a text that is not all ASCII seldom has more
        // than a few lines that are not).
        for (n, line) in text.lines().enumerate() {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            if line.is_ascii() {
                self.started(line.as_bytes(), n, &admit, &mut f);
            } else {
                line_term_hashes(line, n, &admit, &mut f);
            }
        }
    }

    /// [`Interest::term_hashes`] of ASCII `bytes`, whose first line is line `first` of its text: each run of word
    /// bytes whose start, or a byte after a separator in it, starts as a term does.
    fn started(
        &self,
        bytes: &[u8],
        first: u32,
        admit: &impl Fn([u8; 3], usize) -> bool,
        f: &mut impl FnMut(u32, u64),
    ) {
        let n = bytes.len();
        let class = |i: usize| CLASS[usize::from(bytes[i])];
        // The end of the run of word bytes that goes on at `i`.
        let run_end = |mut i: usize| {
            while i < n && class(i) >= PLAIN {
                i += 1;
            }
            i
        };
        let mut line = first;
        let mut i = 0;
        while i < n {
            let c = class(i);
            if c < PLAIN {
                line = line.saturating_add(u32::from(c == NEWLINE));
                i += 1;
                continue;
            }
            // A run of word bytes from `start`: a word or part starts at its first byte and after each
            // separator. Once one starts as a term does, the rest of the run is only looked through for its end.
            let start = i;
            let held = if self.starts.may_start(bytes, i) {
                i = run_end(i + 1);
                true
            } else {
                let mut after_separator = c != PLAIN;
                i += 1;
                loop {
                    if i >= n {
                        break false;
                    }
                    let c = class(i);
                    if c < PLAIN {
                        break false;
                    }
                    if after_separator && self.starts.may_start(bytes, i) {
                        i = run_end(i + 1);
                        break true;
                    }
                    after_separator = c != PLAIN;
                    i += 1;
                }
            };
            if held {
                emit_run(bytes, (start, i), line, admit, f);
            }
        }
    }

    /// Whether a word of `len` bytes that starts with `head` may be one of the questions' words.
    fn may_hold(&self, head: [u8; 3], len: usize) -> bool {
        let bit = head_bit(head, len);
        self.heads[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Whether the table built for this set answers a question with these terms.
    pub(super) fn covers(&self, wanted: &[u64]) -> bool {
        wanted.iter().all(|w| self.words.contains(w))
    }
}

/// A 16-bit hash of a word's first three bytes and its length (any length from 63 on counts as 63).
fn head_bit(head: [u8; 3], len: usize) -> usize {
    #[allow(clippy::cast_possible_truncation)] // at most 63
    let len = len.min(63) as u32;
    let v = u32::from(head[0]) | u32::from(head[1]) << 8 | u32::from(head[2]) << 16 | len << 24;
    (v.wrapping_mul(0x9E37_79B1) >> 16) as usize
}

/// Appends to `hits` the lines of `index` that hold the `wanted` terms: (line, the term's position in
/// `wanted`), sorted, each pair once.
pub(super) fn hits(index: &LineIndex, wanted: &[u64], hits: &mut Vec<(u32, u16)>) {
    if index.words == 0 {
        return;
    }
    let from = hits.len();
    for (k, &w) in wanted.iter().enumerate() {
        let k = u16::try_from(k).unwrap_or(u16::MAX);
        hits.extend(index.lines(w).map(|line| (line, k)));
    }
    hits[from..].sort_unstable();
}

/// The weight of a term found on `df` of a request's `lines` lines: `1 + ⌊4·log2((lines+1)/df)⌋`, in integers
/// (the same on every machine).
#[must_use]
pub(super) fn weight(lines: u64, df: u64) -> u64 {
    let ratio = (u128::from(lines + 1) << 8) / u128::from(df.max(1));
    let quarter_bits = match ratio.checked_pow(4) {
        Some(p) => u64::from(p.ilog2()),
        None => 4 * u64::from(ratio.ilog2()),
    };
    1 + quarter_bits.saturating_sub(32)
}

#[cfg(test)]
mod tests {
    use super::super::terms::{term_hashes, terms};
    use super::*;
    use std::borrow::Cow;

    /// Words whose stems and parts meet in other forms, in both cases.
    const WORDS: [&str; 19] = [
        "policy",
        "Policies",
        "POLICY",
        "failed",
        "failing",
        "src/app/settings.py",
        "settings",
        "ID",
        "damaged_in_transit",
        "transit",
        "day",
        "days",
        "applied",
        "x86_64",
        "ab",
        "Api",
        // Not ASCII: a text that holds one is read line by line.
        "Café",
        "naïve_résumé",
        "line\nbreak",
    ];

    /// The terms of `text` among `questions`' terms, each with its line, found by an [`Interest`].
    fn interest_terms(questions: &[&str], text: &str) -> Vec<(u32, u64)> {
        let interest = Interest::new(questions);
        let mut found = Vec::new();
        interest.term_hashes(text, |line, term| {
            if interest.words.contains(&term) {
                found.push((line, term));
            }
        });
        found
    }

    /// The same, by a scan of every word.
    fn scanned_terms(questions: &[&str], text: &str) -> Vec<(u32, u64)> {
        let interest = Interest::new(questions);
        let mut found = Vec::new();
        term_hashes(
            text,
            |_, _| true,
            |line, term| {
                if interest.words.contains(&term) {
                    found.push((line, term));
                }
            },
        );
        found
    }

    #[test]
    fn an_interest_finds_a_term_whose_word_ends_otherwise() {
        let text = "x\nthe refund POLICY\nsrc/app/settings.py was applied";
        let found = interest_terms(&["Which policies were applied to the settings?"], text);
        assert_eq!(
            found,
            scanned_terms(&["Which policies were applied to the settings?"], text)
        );
        // policy (line 1), settings.py's part and applied (line 2).
        assert_eq!(
            found.iter().map(|&(line, _)| line).collect::<Vec<_>>(),
            [1, 2, 2]
        );
    }

    proptest::proptest! {
        #[test]
        fn an_interest_finds_the_terms_of_its_questions_as_the_full_scan(
            words in proptest::collection::vec((0..WORDS.len(), "[ \n,:./_-]{1,2}"), 0..40),
            questions in proptest::collection::vec(proptest::collection::vec(0..WORDS.len(), 1..4), 1..4),
        ) {
            let text: String = words.iter().map(|(w, sep)| format!("{}{sep}", WORDS[*w])).collect();
            let questions: Vec<String> = questions
                .iter()
                .map(|q| q.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" "))
                .collect();
            let asked: Vec<&str> = questions.iter().map(String::as_str).collect();
            proptest::prop_assert_eq!(interest_terms(&asked, &text), scanned_terms(&asked, &text));
        }

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
            .map(|l| terms(l).map(Cow::into_owned).collect())
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
}
