//! The pre-tokenizer of the `bpe` backend: splits text into the pieces BPE encodes one by one.
//!
//! `bpe-openai` splits with a `regex_automata` regex whose search cache lives in the regex's shared pool. The
//! pool hands its fast slot to one thread and writes an atomic on every search; with several worker threads
//! counting at once, every piece of text costs a contended cache line and most searches take the pool's slow
//! path (measured: two threads tokenized the dataset slower than one). This module compiles the same patterns
//! and gives every thread its own cache, so counting scales with cores. The pieces are exactly
//! `bpe_openai::Tokenizer::split`'s: the tests compare both on every item of the bundled dataset.

use std::cell::RefCell;
use std::sync::OnceLock;

use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

use super::Encoding;

/// A compiled pre-tokenizer: alternatives tried in order, some of which end with one look-ahead character
/// that is not part of the piece.
pub(super) struct Pretokenizer {
    regex: Regex,
    lookahead: [bool; 3],
    /// This encoding's slot in the per-thread caches.
    slot: usize,
}

thread_local! {
    /// One search cache per encoding per thread.
    static CACHES: RefCell<[Option<Cache>; 2]> = const { RefCell::new([None, None]) };
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
    pub(super) fn get(encoding: Encoding) -> &'static Pretokenizer {
        static O200K: OnceLock<Pretokenizer> = OnceLock::new();
        static CL100K: OnceLock<Pretokenizer> = OnceLock::new();
        let cell = match encoding {
            Encoding::O200kBase => &O200K,
            Encoding::Cl100kBase => &CL100K,
        };
        cell.get_or_init(|| Pretokenizer::new(encoding))
    }

    fn new(encoding: Encoding) -> Pretokenizer {
        let first = patterns(encoding);
        let all = [first.as_str(), SPACE_PATTERNS[0].0, SPACE_PATTERNS[1].0];
        Pretokenizer {
            // The patterns are constants this crate's tests compile: a failure here is a bug, not bad input.
            regex: Regex::new_many(&all).expect("the pre-tokenizer patterns compile"),
            lookahead: [false, SPACE_PATTERNS[0].1, SPACE_PATTERNS[1].1],
            slot: match encoding {
                Encoding::O200kBase => 0,
                Encoding::Cl100kBase => 1,
            },
        }
    }

    /// Calls `piece` on each piece of `text`, in order, while it returns true; all the pieces concatenate to
    /// `text`.
    pub(super) fn pieces_while(&self, text: &str, mut piece: impl FnMut(&str) -> bool) {
        CACHES.with_borrow_mut(|caches| {
            let cache = caches[self.slot].get_or_insert_with(|| self.regex.create_cache());
            let mut last = 0;
            while last < text.len() {
                let input = Input::new(&text[last..]).anchored(Anchored::Yes);
                let Some(m) = self.regex.search_with(cache, &input) else {
                    // Unreachable for these patterns, which match any non-empty text.
                    piece(&text[last..]);
                    return;
                };
                let mut end = last + m.end();
                if self.lookahead[m.pattern().as_usize()] {
                    // `\s+\s` keeps its last character for the next piece; it matched two or more, so at
                    // least one stays in this piece.
                    end -= text[last..end]
                        .chars()
                        .next_back()
                        .map_or(0, char::len_utf8);
                }
                if end <= last {
                    // Unreachable too (every alternative takes a character); a guard against looping.
                    piece(&text[last..]);
                    return;
                }
                if !piece(&text[last..end]) {
                    return;
                }
                last = end;
            }
        });
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

    fn our_pieces(encoding: Encoding, text: &str) -> Vec<String> {
        let mut pieces = Vec::new();
        Pretokenizer::get(encoding).pieces_while(text, |p| {
            pieces.push(p.to_owned());
            true
        });
        pieces
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
