//! The mock's word tables: which words a text holds on which line, so that a probe's answer is found without
//! reading every line of every text again.

use std::borrow::Cow;

use xxhash_rust::xxh3::xxh3_64;

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
}

/// One slot of a [`LineIndex`] (16 bytes, as a `(u64, u32)` pair takes with its padding).
#[derive(Clone, Copy, Default)]
pub(super) struct Slot {
    word: u64,
    newest: u32,
    line: u32,
}

impl LineIndex {
    /// The table of every word of `text`, or, with `interest`, of the words it holds only.
    pub(super) fn new(text: &str, interest: Option<&Interest>) -> Self {
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

/// A text's best line for a question: (words found, line number), or none.
pub(super) type BestLine = Option<(u32, u32)>;

/// The words the probes of the episode a thread replays will look for ([`Llm::start_episode`](crate::llm::Llm::start_episode)): word tables
/// built for them hold those words only, and pass over most other words after a look at their first three
/// bytes, without hashing them. An answer is the same either way, as it reads only the question's words.
pub(super) struct Interest {
    /// Names the set in the key of the tables built for it (0: tables of every word).
    pub(super) id: u64,
    /// The hashes of the questions' words.
    pub(super) words: rustc_hash::FxHashSet<u64>,
    /// One bit per [`head_bit`] of a question's word.
    heads: Box<[u64; 1024]>,
}

impl Interest {
    pub(super) fn new(questions: &[&str]) -> Self {
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
    pub(super) fn covers(&self, wanted: &[u64]) -> bool {
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

/// The line of a text that holds the most of the `wanted` words, the last one on ties, with its count; `hits`
/// is scratch space.
pub(super) fn best_line(index: &LineIndex, wanted: &[u64], hits: &mut Vec<u32>) -> BestLine {
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

/// Words of a line: runs of letters, digits, `_`, `.`, `/` and `-`, lower-cased, at least 3 characters.
pub(super) fn words(line: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
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
pub(super) fn question_words(question: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
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
pub(super) fn word_hashes(
    text: &str,
    admit: impl Fn([u8; 3]) -> bool,
    mut f: impl FnMut(u32, u64),
) {
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

pub(super) const STOPWORDS: [&str; 24] = [
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
}
