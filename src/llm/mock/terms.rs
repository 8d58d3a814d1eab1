//! What the mock's answerer compares: the terms of a text. A **term** is a word of a line ([`words`]) reduced
//! to its stem ([`stem`]: "failing", "failed" and "fails" are one term), and, for a word made of parts
//! (`damaged_in_transit`, `src/app/settings.py`, `CUS-1234`), each part's stem as well as the whole word
//! ([`terms`]); a question's terms leave its stopwords out ([`question_terms`]). [`term_hashes`] finds the same
//! terms as [`terms`] in a whole text, byte by byte, for the word tables of [`super::index`].

use std::borrow::Cow;

use xxhash_rust::xxh3::xxh3_64;

/// The first three bytes of a word (every word has three or more; zeros stand in for any missing).
pub(super) fn head(word: &[u8]) -> [u8; 3] {
    let byte = |i: usize| word.get(i).copied().unwrap_or(0);
    [byte(0), byte(1), byte(2)]
}

/// Words of a line: runs of letters, digits, `_`, `.`, `/` and `-`, lower-cased, at least 3 characters.
pub(super) fn words(line: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    words_of(line, 3)
}

/// [`words`] of at least `min` characters.
fn words_of(line: &str, min: usize) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    line.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | '-' | '/')))
        .filter(move |w| w.len() >= min && (w.is_ascii() || w.chars().count() >= min))
        .map(|w| {
            if w.bytes().any(|b| b.is_ascii_uppercase()) || !w.is_ascii() {
                Cow::Owned(w.to_lowercase())
            } else {
                Cow::Borrowed(w)
            }
        })
}

/// The stem of a lower-case word: a word of letters only loses its inflection (plural and third-person `s`,
/// `ing`, `ed`, a doubled consonant left by them, a final `e`; a final `y` reads as `i`), so that "policies" and
/// "policy", "changed" and "changes", "pinning" and "pinned" meet; any other word is itself. A stem keeps at
/// least three letters.
#[must_use]
pub(super) fn stem(word: &str) -> Cow<'_, str> {
    match stem_len(word.as_bytes()) {
        (n, false) => Cow::Borrowed(&word[..n]),
        (n, true) => Cow::Owned(format!("{}i", &word[..n])),
    }
}

/// The [`stem`] of a lower-case word as the length of the word's prefix it keeps, and whether an `i` follows.
fn stem_len(b: &[u8]) -> (usize, bool) {
    if b.len() < 4 || !b.iter().all(u8::is_ascii_lowercase) {
        return (b.len(), false);
    }
    let mut n = b.len();
    let ends = |n: usize, s: &[u8]| n >= s.len() + 3 && b[..n].ends_with(s);
    if ends(n, b"sses") {
        n -= 2;
    } else if ends(n, b"ies") {
        return (n - 3, true);
    } else if ends(n, b"s") && !ends(n, b"ss") && !ends(n, b"us") && !ends(n, b"is") {
        n -= 1;
    }
    let vowel = |n: usize| b[..n].iter().any(|c| b"aeiou".contains(c));
    let stripped = if ends(n, b"ing") && vowel(n - 3) {
        Some(n - 3)
    } else if ends(n, b"ed") && vowel(n - 2) {
        Some(n - 2)
    } else {
        None
    };
    if let Some(m) = stripped {
        n = m;
        if n >= 4 && b[n - 1] == b[n - 2] && !b"aeioulsz".contains(&b[n - 1]) {
            n -= 1;
        }
    }
    if n >= 4 && b[n - 1] == b'e' {
        (n - 1, false)
    } else if n >= 4 && b[n - 1] == b'y' {
        (n - 1, true)
    } else {
        (n, false)
    }
}

/// The most bytes [`stem_len`] takes from a word: a plural `s` (1), `ing` (3), a doubled consonant (1) and a
/// final `e` (1), or `ies` (3, for an `i`), with room to spare.
pub(super) const MAX_STRIPPED: usize = 7;

/// The separators of a word made of parts.
const PARTS: [char; 4] = ['_', '.', '/', '-'];

/// The terms of a line: the stem of each word of two characters or more (as [`words`] splits them otherwise:
/// "ID" is a term), and for a word made of parts ([`PARTS`]) the stem of each part of two characters or more as
/// well; in order, repeats kept.
pub(super) fn terms(line: &str) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    words_of(line, 2).flat_map(|w| {
        let parts: Vec<Cow<'_, str>> = if w.contains(PARTS) {
            w.split(PARTS)
                .filter(|p| p.len() >= 2 && (p.is_ascii() || p.chars().count() >= 2))
                .map(|p| Cow::Owned(stem(p).into_owned()))
                .collect()
        } else {
            Vec::new()
        };
        let whole = match w {
            Cow::Borrowed(b) => stem(b),
            Cow::Owned(o) => Cow::Owned(stem(&o).into_owned()),
        };
        std::iter::once(whole).chain(parts)
    })
}

/// The terms a question looks for, each once: the [`terms`] of its words but stopwords (a stopword part of a
/// longer word is left out too).
pub(super) fn question_terms(question: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in words_of(question, 2).filter(|w| !STOPWORDS.contains(&w.as_ref())) {
        for t in terms(&w) {
            if !STOPWORDS.contains(&t.as_ref()) && !out.iter().any(|o| *o == *t) {
                out.push(t.into_owned());
            }
        }
    }
    out
}

/// What a byte is to the ASCII scanner of [`term_hashes`]: [`OTHER`] (between words), [`NEWLINE`], [`PLAIN`]
/// (a letter or digit), [`UNDERSCORE`] (a separator of parts kept at a word's ends) or [`TRIMMED`] (`.`, `/`
/// and `-`: separators of parts, trimmed from a word's ends). A word is a run of the last three.
pub(super) const CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_alphanumeric() {
            PLAIN
        } else if c == b'_' {
            UNDERSCORE
        } else if matches!(c, b'.' | b'/' | b'-') {
            TRIMMED
        } else if c == b'\n' {
            NEWLINE
        } else {
            OTHER
        };
        b += 1;
    }
    t
};
const OTHER: u8 = 0;
pub(super) const NEWLINE: u8 = 1;
pub(super) const PLAIN: u8 = 2;
const UNDERSCORE: u8 = 3;
const TRIMMED: u8 = 4;

/// Calls `f(line, hash)` for every term of `text` (as [`terms`] finds them on each of its lines) whose first
/// three bytes and length `admit` lets through, with the term's line number and hash. ASCII text, the common case, is
/// scanned byte by byte without splitting it into lines; a text that is not all ASCII is split into lines, and
/// only its lines that are not all ASCII are split into words by [`terms`].
pub(super) fn term_hashes(
    text: &str,
    admit: impl Fn([u8; 3], usize) -> bool,
    mut f: impl FnMut(u32, u64),
) {
    if text.is_ascii() {
        ascii_term_hashes(text.as_bytes(), 0, &admit, &mut f);
        return;
    }
    for (n, line) in text.lines().enumerate() {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if line.is_ascii() {
            ascii_term_hashes(line.as_bytes(), n, &admit, &mut f);
        } else {
            line_term_hashes(line, n, &admit, &mut f);
        }
    }
}

/// [`term_hashes`] of one line that is not all ASCII, `n`, by the definition ([`terms`]).
pub(super) fn line_term_hashes(
    line: &str,
    n: u32,
    admit: &impl Fn([u8; 3], usize) -> bool,
    f: &mut impl FnMut(u32, u64),
) {
    for t in terms(line) {
        if admit(head(t.as_bytes()), t.len()) {
            f(n, xxh3_64(t.as_bytes()));
        }
    }
}

/// [`term_hashes`] of ASCII `bytes`, whose first line is line `first` of its text.
fn ascii_term_hashes(
    bytes: &[u8],
    first: u32,
    admit: &impl Fn([u8; 3], usize) -> bool,
    f: &mut impl FnMut(u32, u64),
) {
    let class = |i: usize| CLASS[usize::from(bytes[i])];
    let mut line = first;
    let mut i = 0;
    while i < bytes.len() {
        let c = class(i);
        i += 1;
        if c < PLAIN {
            line = line.saturating_add(u32::from(c == NEWLINE));
            continue;
        }
        // A word: the run from `start`.
        let start = i - 1;
        while i < bytes.len() && class(i) >= PLAIN {
            i += 1;
        }
        emit_run(bytes, (start, i), line, admit, f);
    }
}

/// The terms of the run of word bytes `bytes[start..end]` on `line` ([`term_hashes`]' loop body): the word
/// (its trimmed bytes trimmed) and, when it holds a separator, each of its parts of two bytes or more.
#[inline(always)]
pub(super) fn emit_run(
    bytes: &[u8],
    (mut start, mut end): (usize, usize),
    line: u32,
    admit: &impl Fn([u8; 3], usize) -> bool,
    f: &mut impl FnMut(u32, u64),
) {
    while start < end && CLASS[usize::from(bytes[start])] == TRIMMED {
        start += 1;
    }
    while end > start && CLASS[usize::from(bytes[end - 1])] == TRIMMED {
        end -= 1;
    }
    if end - start < 2 {
        return;
    }
    let word = &bytes[start..end];
    emit_term(admit, (line, word), f);
    // A separator trimmed from the ends makes no parts.
    if word.iter().any(|&b| CLASS[usize::from(b)] >= UNDERSCORE) {
        for part in word.split(|&b| CLASS[usize::from(b)] >= UNDERSCORE) {
            if part.len() >= 2 {
                emit_term(admit, (line, part), f);
            }
        }
    }
}

/// Calls `f(line, hash)` with the hash of `word`'s stem, lower-cased, when `admit` lets the word through. A
/// stem keeps the first three bytes of its word and is at most [`MAX_STRIPPED`] bytes shorter, so `admit`
/// looks at the word's head and length before it is lower-cased and stemmed, and most words go no further.
#[inline(always)]
fn emit_term(
    admit: &impl Fn([u8; 3], usize) -> bool,
    (line, word): (u32, &[u8]),
    f: &mut impl FnMut(u32, u64),
) {
    if admit(head(word).map(|b| b.to_ascii_lowercase()), word.len()) {
        emit_admitted((line, word), f);
    }
}

/// [`emit_term`] of a word `admit` let through: a call of its own, so that the scanner's loop stays small.
#[inline(never)]
fn emit_admitted((line, word): (u32, &[u8]), f: &mut impl FnMut(u32, u64)) {
    // Most words fit on the stack.
    let mut buffer = [0u8; 64];
    let mut heap = Vec::new();
    let lower: &mut [u8] = if word.len() < buffer.len() {
        &mut buffer[..=word.len()]
    } else {
        heap.resize(word.len() + 1, 0);
        &mut heap
    };
    for (l, b) in lower.iter_mut().zip(word) {
        *l = b.to_ascii_lowercase();
    }
    let n = word.len();
    match stem_len(&lower[..n]) {
        (n, false) => f(line, xxh3_64(&lower[..n])),
        (n, true) => {
            lower[n] = b'i';
            f(line, xxh3_64(&lower[..=n]));
        }
    }
}

/// Words a question asks with, not about.
pub(super) const STOPWORDS: [&str; 48] = [
    "the", "and", "was", "were", "what", "which", "who", "when", "where", "how", "did", "does",
    "for", "with", "that", "this", "from", "are", "has", "have", "its", "into", "after", "about",
    "is", "in", "to", "of", "at", "by", "on", "it", "an", "or", "be", "as", "do", "if", "no", "so",
    "up", "we", "my", "me", "he", "us", "am", "i",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every term of `text` with its line, by the definition: [`terms`] of each line.
    fn defined_words(text: &str) -> Vec<(u32, u64)> {
        text.lines()
            .enumerate()
            .flat_map(|(n, line)| {
                terms(line).map(move |w| (u32::try_from(n).unwrap(), xxh3_64(w.as_bytes())))
            })
            .collect()
    }

    fn scanned_words(text: &str) -> Vec<(u32, u64)> {
        let mut found = Vec::new();
        term_hashes(text, |_, _| true, |line, word| found.push((line, word)));
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
            "Refunds above $200; damaged_in_transit CUS-1234 policies PINNING_OLD_releases".into(),
            // Not all ASCII: its ASCII lines are scanned as ASCII texts, the others by the definition.
            "Café au lait\nplain ascii_line here\r\nnaïve_résumé CUS-12 ÜBER\n\n  tail-end".into(),
            "é".into(),
            "first line\nsecond € line\nthird".into(),
        ] {
            assert_eq!(scanned_words(&text), defined_words(&text), "{text:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_stem_is_at_most_max_stripped_bytes_shorter(word in "[a-z]{1,6}(ss|s|e|y|ed|ing|ies|sses|nn|tt)*") {
            let lost = word.len() - stem(&word).len();
            proptest::prop_assert!(lost <= MAX_STRIPPED, "{word}: {lost}");
        }

        #[test]
        fn term_hashes_equal_the_definition(text in "([aeiyZdgns0_./ -]{0,70}[\n\r\t,:]?){0,12}") {
            proptest::prop_assert_eq!(scanned_words(&text), defined_words(&text));
        }

        #[test]
        fn term_hashes_of_a_text_not_all_ascii_equal_the_definition(
            text in "([aeZdns0_./ éÉ€-]{0,30}[\n\r\t,:]?){0,10}",
        ) {
            proptest::prop_assert_eq!(scanned_words(&text), defined_words(&text));
        }
    }

    #[test]
    fn stems_meet_across_inflections_and_identifiers_split_into_parts() {
        for (a, b) in [
            ("failing", "failed"),
            ("fails", "fail"),
            ("policies", "policy"),
            ("changed", "changes"),
            ("pinning", "pinned"),
            ("refunds", "refund"),
            ("values", "value"),
            ("applied", "applies"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        // Words that are not letters only, and short words, are themselves; a stem keeps three letters.
        for w in ["x86_64", "4.2", "was", "uses", "status", "analysis", "need"] {
            assert!(stem(w).len() >= 3 && w.starts_with(&*stem(w)), "{w}");
        }
        assert_eq!(stem("status"), "status");
        let found: Vec<String> =
            terms("Order ORD-123 is damaged_in_transit, see src/app/settings.py")
                .map(Cow::into_owned)
                .collect();
        assert_eq!(
            found,
            [
                "order",
                "ord-123",
                "ord",
                "123",
                "is",
                "damaged_in_transit",
                "damag",
                "in",
                "transit",
                "see",
                "src/app/settings.py",
                "src",
                "app",
                "set",
                "py"
            ]
        );
        // A question's terms: no stopword, each once.
        assert_eq!(
            question_terms("Which order was damaged in transit, and which order?"),
            ["order", "damag", "transit"]
        );
    }
}
