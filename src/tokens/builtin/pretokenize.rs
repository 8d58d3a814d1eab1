//! The pre-tokenizer of the `bpe` backend: splits text into the pieces BPE encodes one by one.
//!
//! `bpe-openai` splits with a `regex_automata` regex whose search cache lives in the regex's shared pool. The
//! pool hands its fast slot to one thread and writes an atomic on every search; with several worker threads
//! counting at once, every piece of text costs a contended cache line and most searches take the pool's slow
//! path (measured: two threads tokenized the dataset slower than one). This module compiles the same patterns
//! and gives every thread counting at once its own cache (from a pool, [`super::pool`]), so counting scales
//! with cores. ASCII text, nearly all of an agent's
//! history, is split without the regex by the same patterns compiled by hand ([`ascii`]): on short pieces the
//! lazy DFA's search set-up and state lookups cost more than the pieces' bytes, and counting the bundled
//! dataset's text on one thread went from 70 to 162 MiB/s. The pieces are exactly
//! `bpe_openai::Tokenizer::split`'s: the tests compare both on every item of the bundled dataset and on edge
//! cases, and the ASCII splitter with the compiled patterns on random text.

use std::sync::OnceLock;

use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

use crate::tokens::Encoding;

/// A compiled pre-tokenizer: alternatives tried in order, some of which end with one look-ahead character
/// that is not part of the piece.
pub(in crate::tokens) struct Pretokenizer {
    /// The encoding whose patterns [`Pretokenizer::regex`] compiles.
    encoding: Encoding,
    /// The compiled patterns, compiled when a text first needs them (a few milliseconds of start-up that ASCII
    /// text never needs).
    regex: OnceLock<Regex>,
    lookahead: [bool; 3],
    /// This encoding's slot in the pools of caches.
    slot: usize,
}

/// What takes the pieces [`Pretokenizer::pieces_while`] cuts, one by one, while it returns true. The counter's
/// implements it with its per-piece work forced inline into the splitter's loop: as a closure, one build's
/// inlining left it behind an out-of-line call per piece (1.9 million calls on the bundled run, 26 M
/// instructions).
pub(in crate::tokens) trait PieceSink {
    /// Takes the next piece; false stops the split.
    fn piece(&mut self, piece: &str) -> bool;
}

impl<F: FnMut(&str) -> bool> PieceSink for F {
    fn piece(&mut self, piece: &str) -> bool {
        self(piece)
    }
}

/// The search caches, per encoding, shared by the counting threads ([`super::pool`]): one for each thread
/// splitting non-ASCII text at the same moment, not one for every thread that ever did.
static CACHES: [super::pool::Pool<Cache>; 2] = [super::pool::Pool::new(), super::pool::Pool::new()];

thread_local! {
    /// The search caches of a thread that keeps its own ([`super::pool::owns_scratch`]), per encoding.
    static OWN_CACHES: std::cell::RefCell<[Option<Cache>; 2]> = const { std::cell::RefCell::new([None, None]) };
}

/// The last two alternatives of both encodings and their look-ahead flags. All patterns are `bpe-openai` 0.3's,
/// themselves OpenAI's tiktoken regexes with `\s+(?!\S)` (regex-automata has no look-around) rewritten as
/// `\s+\s` minus its last character.
const SPACE_PATTERNS: [(&str, bool); 2] = [("\\s+\\s", true), ("\\s+", false)];

fn patterns(encoding: Encoding) -> String {
    match encoding {
        Encoding::O200kBase => [
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "\\p{N}{1,3}",
            " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
            "\\s*[\\r\\n]+",
            "\\s+$",
        ]
        .join("|"),
        Encoding::Cl100kBase => "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$".to_owned(),
    }
}

impl Pretokenizer {
    /// The pre-tokenizer of `encoding`, compiled once per process.
    pub(in crate::tokens) fn get(encoding: Encoding) -> &'static Pretokenizer {
        static COMPILED: [OnceLock<Pretokenizer>; 2] = [OnceLock::new(), OnceLock::new()];
        COMPILED[encoding.slot()].get_or_init(|| Pretokenizer::new(encoding))
    }

    fn new(encoding: Encoding) -> Pretokenizer {
        Pretokenizer {
            encoding,
            regex: OnceLock::new(),
            lookahead: [false, SPACE_PATTERNS[0].1, SPACE_PATTERNS[1].1],
            slot: encoding.slot(),
        }
    }

    /// The compiled patterns.
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            let first = patterns(self.encoding);
            let all = [first.as_str(), SPACE_PATTERNS[0].0, SPACE_PATTERNS[1].0];
            // The patterns are constants this crate's tests compile: a failure here is a bug, not bad input.
            Regex::new_many(&all).expect("the pre-tokenizer patterns compile")
        })
    }

    /// Calls `piece` on each piece of `text`, in order, while it returns true; all the pieces concatenate to
    /// `text`.
    ///
    /// A piece is cut by the hand-compiled ASCII splitter when every byte its choice depends on is ASCII, and
    /// by the regex otherwise (around non-ASCII characters), so mostly-ASCII text is mostly split by hand.
    pub(in crate::tokens) fn pieces_while(&self, text: &str, piece: impl PieceSink) {
        // The ASCII splitter is chosen here, once, so that it is inlined into the loop over the pieces.
        match self.encoding {
            Encoding::O200kBase => self.split::<true>(text, piece),
            Encoding::Cl100kBase => self.split::<false>(text, piece),
        }
    }

    /// [`Pretokenizer::pieces_while`] with this encoding's hand-compiled splitter (o200k_base's when `O200K`,
    /// else cl100k_base's), called directly so that it is inlined.
    #[inline(always)]
    fn split<const O200K: bool>(&self, text: &str, mut sink: impl PieceSink) {
        let ascii = |bytes: &[u8], i: usize| {
            if O200K {
                ascii::o200k_piece_end(bytes, i)
            } else {
                ascii::cl100k_piece_end(bytes, i)
            }
        };
        let bytes = text.as_bytes();
        let non_ascii = |from: usize| {
            bytes[from..]
                .iter()
                .position(|b| !b.is_ascii())
                .map_or(bytes.len(), |n| from + n)
        };
        let mut next_non_ascii = non_ascii(0);
        let mut last = 0;
        if next_non_ascii == bytes.len() {
            // All ASCII, the common case: the loop below without the thread's regex cache to borrow.
            while last < bytes.len() {
                let (end, _) = ascii(bytes, last);
                if !sink.piece(&text[last..end]) {
                    return;
                }
                last = end;
            }
            return;
        }
        self.with_cache(|cache| {
            while last < bytes.len() {
                if next_non_ascii < last {
                    next_non_ascii = non_ascii(last);
                }
                let ascii = (last < next_non_ascii)
                    .then(|| ascii(bytes, last))
                    .filter(|&(_, depends_on)| depends_on.min(bytes.len()) <= next_non_ascii);
                // An ASCII piece ends before the next non-ASCII byte, so on a character boundary.
                let end = match ascii {
                    Some((end, _)) => end,
                    None => self.regex_piece_end(cache, text, last),
                };
                if !sink.piece(&text[last..end]) {
                    return;
                }
                last = end;
            }
        });
    }

    /// Runs `f` with a search cache: the thread's own ([`super::pool::owns_scratch`]), else one from the pool.
    fn with_cache<R>(&self, f: impl FnOnce(&mut Cache) -> R) -> R {
        let make = || self.regex().create_cache();
        if super::pool::owns_scratch() {
            OWN_CACHES.with_borrow_mut(|own| f(own[self.slot].get_or_insert_with(make)))
        } else {
            CACHES[self.slot].with(make, f)
        }
    }

    /// The end of the piece of `text` that starts at `last`, by the compiled patterns; always past `last`.
    fn regex_piece_end(&self, cache: &mut Cache, text: &str, last: usize) -> usize {
        let input = Input::new(&text[last..]).anchored(Anchored::Yes);
        let Some(m) = self.regex().search_with(cache, &input) else {
            // Unreachable for these patterns, which match any non-empty text.
            return text.len();
        };
        let mut end = last + m.end();
        if self.lookahead[m.pattern().as_usize()] {
            // `\s+\s` keeps its last character for the next piece; it matched two or more, so at least one
            // stays in this piece.
            end -= text[last..end]
                .chars()
                .next_back()
                .map_or(0, char::len_utf8);
        }
        if end <= last {
            // Unreachable too (every alternative takes a character); a guard against looping.
            return text.len();
        }
        end
    }

    /// [`Pretokenizer::pieces_while`] by the compiled patterns alone (the reference of the tests).
    #[cfg(test)]
    fn regex_pieces_while(&self, text: &str, mut piece: impl FnMut(&str) -> bool) {
        self.with_cache(|cache| {
            let mut last = 0;
            while last < text.len() {
                let end = self.regex_piece_end(cache, text, last);
                if !piece(&text[last..end]) {
                    return;
                }
                last = end;
            }
        });
    }
}

/// The pre-tokenizer patterns on ASCII text, where every character is one byte and the Unicode classes are
/// simple: `\p{L}` is `[A-Za-z]` (`\p{Lu}` upper, `\p{Ll}` lower; `\p{Lt}`, `\p{Lm}`, `\p{Lo}` and `\p{M}`
/// are empty), `\p{N}` is `[0-9]` and `\s` is `[\t\n\x0B\x0C\r ]`. Each function returns where the piece
/// starting at `i < text.len()` ends, choosing among the alternatives in order as the regex's leftmost-first
/// search does (a property test compares both on random text).
mod ascii {
    /// Each byte's classes, one bit each ([`CLASSES`]): a run of a class is a loop of one load and one test.
    const UPPER: u8 = 1;
    const LOWER: u8 = 2;
    const DIGIT: u8 = 4;
    /// `\s`: `[\t\n\x0B\x0C\r ]`.
    const SPACE: u8 = 8;
    /// `[\r\n]`.
    const BREAK: u8 = 16;
    /// `[^\s\p{L}\p{N}]`: punctuation, symbols and control characters.
    const SYMBOL: u8 = 32;
    /// `/`, which o200k_base's symbols may be followed by.
    const SLASH: u8 = 64;
    /// `[^\r\n\p{L}\p{N}]`: the optional character before a word.
    const PREFIX: u8 = 128;

    /// The classes of every byte value. Non-ASCII bytes have none, so every run stops at one, and the bytes a
    /// choice read then reach past it: [`super::Pretokenizer::pieces_while`] leaves such a piece to the regex.
    static CLASSES: [u8; 256] = {
        let mut table = [0u8; 256];
        let mut b = 0;
        while b < 128 {
            let c = b as u8;
            table[b] = if c.is_ascii_uppercase() {
                UPPER
            } else if c.is_ascii_lowercase() {
                LOWER
            } else if c.is_ascii_digit() {
                DIGIT
            } else if matches!(c, b'\r' | b'\n') {
                SPACE | BREAK
            } else if matches!(c, b'\t' | 0x0B | 0x0C | b' ') {
                SPACE | PREFIX
            } else if c == b'/' {
                SYMBOL | SLASH | PREFIX
            } else {
                SYMBOL | PREFIX
            };
            b += 1;
        }
        table
    };

    fn class(b: u8) -> u8 {
        CLASSES[usize::from(b)]
    }

    /// The end of the run of bytes from `i` whose classes meet `mask` (the byte there, if any, was read too).
    #[inline(always)]
    fn run(text: &[u8], mut i: usize, mask: u8) -> usize {
        while i < text.len() && class(text[i]) & mask != 0 {
            i += 1;
        }
        i
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i`: its length, or 0. Its answer depends on the bytes up to `i + 3`
    /// (a non-ASCII letter may fold to one of these: `ſ` is an `s` to the regex).
    fn contraction(text: &[u8], i: usize) -> usize {
        let lower = |k: usize| text.get(i + k).map(u8::to_ascii_lowercase);
        if text.get(i) != Some(&b'\'') {
            return 0;
        }
        match (lower(1), lower(2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => 2,
            (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => 3,
            _ => 0,
        }
    }

    /// `\p{N}{1,3}`, a run of symbols, and the white-space alternatives, which both encodings share but for
    /// what may follow the symbols (`[\r\n/]*` or `[\r\n]*`, the classes `after_symbols`): (end, end of the
    /// bytes the choice read).
    #[inline(always)]
    fn others(text: &[u8], i: usize, after_symbols: u8) -> (usize, usize) {
        let b = class(text[i]);
        if b & DIGIT != 0 {
            // At most three digits are read, or fewer and the byte after them.
            let end = run(&text[..text.len().min(i + 3)], i, DIGIT);
            return (end, (end + 1).min(i + 3));
        }
        // ` ?[^\s\p{L}\p{N}]+` then `after_symbols*`.
        let symbols = if text[i] == b' ' { i + 1 } else { i };
        if symbols < text.len() && class(text[symbols]) & SYMBOL != 0 {
            let end = run(text, run(text, symbols, SYMBOL), after_symbols);
            return (end, end + 1);
        }
        // White space: `\s*[\r\n]+` (to just after the run's last line break), `\s+$`, `\s+(?!\S)` (all of
        // a run of two or more but its last character) and `\s+`.
        let mut end = i;
        let mut after_break = None;
        while end < text.len() {
            let c = class(text[end]);
            if c & SPACE == 0 {
                break;
            }
            end += 1;
            if c & BREAK != 0 {
                after_break = Some(end);
            }
        }
        let piece = match after_break {
            Some(piece) => piece,
            None if end == text.len() || end - i < 2 => end,
            None => end - 1,
        };
        (piece, end + 1)
    }

    /// o200k_base: `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|…)?` and the same with `[\p{Lu}…]+[\p{Ll}…]*`
    /// (in ASCII, a word: capitals then small letters, either run possibly empty but not both), then the others.
    #[inline(always)]
    pub(super) fn o200k_piece_end(text: &[u8], i: usize) -> (usize, usize) {
        let word = if class(text[i]) & PREFIX != 0 {
            i + 1
        } else {
            i
        };
        let lower = run(text, run(text, word, UPPER), LOWER);
        if lower > word {
            return (lower + contraction(text, lower), lower + 3);
        }
        let (end, read) = others(text, i, BREAK | SLASH);
        (end, read.max(word + 1))
    }

    /// cl100k_base: `(?i:'s|…)`, `[^\r\n\p{L}\p{N}]?\p{L}+`, then the others.
    #[inline(always)]
    pub(super) fn cl100k_piece_end(text: &[u8], i: usize) -> (usize, usize) {
        let n = contraction(text, i);
        if n > 0 {
            return (i + n, i + 3);
        }
        let word = if class(text[i]) & PREFIX != 0 {
            i + 1
        } else {
            i
        };
        let letters = run(text, word, UPPER | LOWER);
        if letters > word {
            return (letters, (letters + 1).max(i + 3));
        }
        let (end, read) = others(text, i, BREAK);
        (end, read.max(word + 1).max(i + 3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bpe_pieces(encoding: Encoding, text: &str) -> Vec<String> {
        let t = match encoding {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        };
        t.split(text).map(str::to_owned).collect()
    }

    /// Every piece `split` hands its callback.
    fn collected(split: impl FnOnce(&mut dyn FnMut(&str) -> bool)) -> Vec<String> {
        let mut pieces = Vec::new();
        split(&mut |p| {
            pieces.push(p.to_owned());
            true
        });
        pieces
    }

    fn our_pieces(encoding: Encoding, text: &str) -> Vec<String> {
        collected(|f| Pretokenizer::get(encoding).pieces_while(text, f))
    }

    #[test]
    fn pieces_are_bpe_openais() {
        let mut texts: Vec<String> = [
            "",
            "hello world",
            "  leading and trailing  \n\n  ",
            "Don't STOP: it's 12345 o'clock\r\n\tTAB   x",
            "naïve café — 東京 ١٢٣ emoji 🎉🎉 a/b//c",
            "   \n",
            "x \u{a0}\u{3000} y",
        ]
        .map(str::to_owned)
        .to_vec();
        let dataset = crate::history::dataset::read_all(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/datasets/default.jsonl"
        )))
        .unwrap();
        texts.extend(
            dataset
                .iter()
                .flat_map(|e| e.items.iter().map(crate::history::Item::searchable_text)),
        );
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for text in &texts {
                assert_eq!(
                    our_pieces(encoding, text),
                    bpe_pieces(encoding, text),
                    "{encoding:?} {text:?}"
                );
            }
        }
    }

    fn regex_pieces(encoding: Encoding, text: &str) -> Vec<String> {
        collected(|f| Pretokenizer::get(encoding).regex_pieces_while(text, f))
    }

    /// Text drawn from the characters on which the patterns' alternatives turn: letters of both cases,
    /// contraction letters, digits, every ASCII white-space character, symbols (`/` among them) and control
    /// characters; with `others`, also non-ASCII letters, marks, digits, spaces and symbols, among them `ſ`,
    /// which the case-insensitive contractions read as `s`.
    fn text_of(others: &str) -> impl proptest::strategy::Strategy<Value = String> {
        let chars: Vec<char> = "aZsStTrReEvVmMlLdDxX0123456789 \t\n\r\x0B\x0C'/.-+_(\"\x00\x1f\x7f"
            .chars()
            .chain(others.chars())
            .collect();
        proptest::collection::vec(proptest::sample::select(chars), 0..40)
            .prop_map(|c| c.into_iter().collect())
    }

    use proptest::prelude::*;

    /// `text` is cut alike by [`Pretokenizer::pieces_while`] and by the compiled patterns alone, in both
    /// encodings.
    fn cut_as_the_patterns(text: &str) -> Result<(), TestCaseError> {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            prop_assert_eq!(
                our_pieces(encoding, text),
                regex_pieces(encoding, text),
                "{:?} {:?}",
                encoding,
                text
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The hand-compiled ASCII splitter and the compiled patterns cut every ASCII text alike.
        #[test]
        fn ascii_pieces_are_the_patterns(text in text_of("")) {
            cut_as_the_patterns(&text)?;
        }

        /// Around non-ASCII characters the regex takes over: mixed text is cut as the patterns cut it.
        #[test]
        fn mixed_pieces_are_the_patterns(text in text_of("éÉſ\u{301}١\u{a0}\u{3000}—’東🎉")) {
            cut_as_the_patterns(&text)?;
        }
    }

    #[test]
    fn ascii_edge_cases_are_the_patterns() {
        let texts = [
            "HTTPServer don't DON'T it'S we'LL they'Re I'd 'sup ''s",
            "  \n\n  x\r\n\r\n\t\t+=  +\n/ a//b\n//",
            "12345 1234567 ab12cd 3.14159 -42 +1",
            " \t \x0B\x0C end   ",
            "(hello) [World] {FOO_bar} .Net x.y.z",
            "\x00\x01abc\x1f\x7f ",
            "a",
            " ",
            "'",
            "\n",
        ];
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            for text in texts {
                assert_eq!(
                    our_pieces(encoding, text),
                    regex_pieces(encoding, text),
                    "{encoding:?} {text:?}"
                );
                assert_eq!(our_pieces(encoding, text), bpe_pieces(encoding, text));
            }
        }
    }

    #[test]
    fn threads_split_alike() {
        let text = "Concurrent   counting\n\nkeeps its own cache 42 times.";
        let expected = our_pieces(Encoding::O200kBase, text);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| assert_eq!(our_pieces(Encoding::O200kBase, text), expected));
            }
        });
    }
}
