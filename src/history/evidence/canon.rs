//! The canonical form in which evidence and texts are compared, the words they are cut into, and the light
//! stemming of content words.

use crate::history::text::fold_space;

/// A text in canonical form (see [`canon`]): `cased` keeps the case, `lower` is the same text lower-cased byte
/// for byte, so that a position in one is the same position in the other.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Canon {
    /// The canonical text, case kept.
    pub cased: String,
    /// The same, lower case (a character whose lower case has another UTF-8 length keeps its case).
    pub lower: String,
}

/// The canonical form of `text`: white space folded to one space and trimmed; thousands separators dropped
/// (`4,719` is `4719`, `1,234,567` is `1234567`: digit groups of three after a first group of one to three
/// digits, not inside a longer number); and an assignment or a statement of value written one way
/// (`NAME = value`, `NAME=value` and `NAME is value` are all `NAME=value`).
#[must_use]
pub fn canon(text: &str) -> Canon {
    let mut cased = fold_space(text);
    if let Some(grouped) = drop_thousands(&cased) {
        cased = grouped;
    }
    let mut lower = lower_same_length(&cased);
    // Most texts state no value: the pass that folds them runs only where one may be.
    if memchr::memchr(b'=', lower.as_bytes()).is_some()
        || memchr::memmem::find(lower.as_bytes(), b" is ").is_some()
    {
        cased = assignments(&cased, &lower);
        lower = lower_same_length(&cased);
    }
    Canon { cased, lower }
}

/// `text` with the commas of numbers written with thousands separators removed; `None` when it has none.
fn drop_thousands(text: &str) -> Option<String> {
    let b = text.as_bytes();
    // A separator is a comma between digits: most texts' commas are not.
    let mut commas = memchr::memchr_iter(b',', b);
    if !commas
        .any(|i| i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit))
    {
        return None;
    }
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // A number starts here: a digit not preceded by a digit, nor by `,` or `.` after a digit.
        let starts = digit(i)
            && !(i > 0 && digit(i - 1))
            && !(i > 1 && matches!(b[i - 1], b',' | b'.') && digit(i - 2));
        if !starts {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while digit(j) {
            j += 1;
        }
        // One to three digits, then groups of `,ddd`, and no further `,d` (that is a list, not a number).
        let mut end = j;
        let mut groups = 0;
        if j - i <= 3 {
            while b.get(end) == Some(&b',') && (1..=3).all(|k| digit(end + k)) && !digit(end + 4) {
                end += 4;
                groups += 1;
            }
        }
        let list = b.get(end) == Some(&b',') && digit(end + 1);
        if groups > 0 && !list {
            out.extend(b[i..end].iter().filter(|&&c| c != b','));
        } else {
            out.extend_from_slice(&b[i..j]);
        }
        i = if groups > 0 && !list { end } else { j };
    }
    // Only ASCII commas were removed, between ASCII digits: still UTF-8.
    Some(String::from_utf8(out).expect("removing ASCII commas keeps UTF-8"))
}

/// `NAME = value` and `NAME is value` as `NAME=value`: a lone `=` (not part of `==`, `!=`, `<=`, `>=`, `=>`,
/// `:=`, `+=`…) loses the spaces around it, and the word `is` between two spaces becomes `=`. `lower` is
/// `text` lower-cased byte for byte ([`lower_same_length`]).
///
/// The text is read left to right, and only an `=` or a space before `is ` changes anything: the rest is
/// copied as it is, and those places are found by vectorized searches rather than byte by byte.
fn assignments(text: &str, lower: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut equals = memchr::memchr_iter(b'=', b).peekable();
    let finder = memchr::memmem::Finder::new(b" is ");
    let find_is = |from: usize| finder.find(&lower.as_bytes()[from..]).map(|k| from + k);
    let mut is = find_is(0);
    // Bytes before `at` are read.
    let mut at = 0;
    loop {
        // The next `=` or ` is ` at or after `at`, in text order (` is ` may start inside the last one found).
        while equals.next_if(|&i| i < at).is_some() {}
        if is.is_some_and(|i| i < at) {
            is = find_is(at);
        }
        let i = match (equals.peek(), is) {
            (Some(&e), Some(s)) => e.min(s),
            (Some(&e), None) => e,
            (None, Some(s)) => s,
            (None, None) => break,
        };
        out.extend_from_slice(&b[at..i]);
        let skip = if b[i] == b'=' {
            match lone_equals(b, i) {
                None => 1,
                Some(taken) => {
                    if out.last() == Some(&b' ') {
                        out.pop();
                    }
                    taken
                }
            }
        } else if i > 0 {
            4
        } else {
            // A text that starts with ` is `: the space stays.
            out.push(b' ');
            at = i + 1;
            continue;
        };
        out.push(b'=');
        at = i + skip;
    }
    out.extend_from_slice(&b[at..]);
    // Only ASCII bytes were replaced or removed, at ASCII positions: still UTF-8.
    String::from_utf8(out).expect("assignments keep UTF-8")
}

/// The `=` at `b[i]`: `None` when it is part of an operator (`==`, `!=`, `<=`, `>=`, `=>`, `:=`, `+=`…, a space
/// allowed before it), else the bytes a lone `=` takes: itself and the space after it.
fn lone_equals(b: &[u8], i: usize) -> Option<usize> {
    let prev = i.checked_sub(1).map(|p| b[p]);
    let prev = if prev == Some(b' ') {
        i.checked_sub(2).map(|p| b[p])
    } else {
        prev
    };
    let next = b.get(i + 1).copied();
    let operator =
        prev.is_some_and(|p| b"=!<>:+-*/%&|^~".contains(&p)) || matches!(next, Some(b'=' | b'>'));
    (!operator).then(|| 1 + usize::from(next == Some(b' ')))
}

/// `text` lower-cased character by character where the lower case has the same UTF-8 length.
fn lower_same_length(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    // ASCII runs byte for byte, the other characters one by one.
    let mut out: Vec<u8> = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(k) = rest.bytes().position(|b| !b.is_ascii()) {
        out.extend(rest.as_bytes()[..k].iter().map(u8::to_ascii_lowercase));
        let c = rest[k..].chars().next().unwrap_or_default();
        let mut lower = c.to_lowercase();
        let kept = match (lower.next(), lower.next()) {
            (Some(l), None) if l.len_utf8() == c.len_utf8() => l,
            _ => c,
        };
        out.extend_from_slice(kept.encode_utf8(&mut [0; 4]).as_bytes());
        rest = &rest[k + c.len_utf8()..];
    }
    out.extend(rest.as_bytes().iter().map(u8::to_ascii_lowercase));
    String::from_utf8(out).expect("characters replaced by characters")
}

/// Whether `c` is part of a word: a letter, a digit or `_`.
#[must_use]
pub fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether the match `text[start..end]` stands on token boundaries: where the match begins (ends) with a word
/// character, the text does not go on with one before (after) it, nor with a `.` or `-` joined to one (`1.397`,
/// `TCK-1459`, `2024-05-15` are single tokens; `src/app.py` ends at the `y`).
#[must_use]
pub fn on_boundaries(text: &str, start: usize, end: usize) -> bool {
    let matched = &text[start..end];
    let joined = |c: Option<char>, next: Option<char>| match c {
        Some('.' | '-') => next.is_some_and(word_char),
        Some(c) => word_char(c),
        None => false,
    };
    let starts_word = matched.chars().next().is_some_and(word_char);
    let ends_word = matched.chars().next_back().is_some_and(word_char);
    let mut before = text[..start].chars().rev();
    let mut after = text[end..].chars();
    let inside_before = starts_word && joined(before.next(), before.next());
    let inside_after = ends_word && joined(after.next(), after.next());
    !(inside_before || inside_after)
}

/// Words too common to say anything, left out of an evidence string's content words.
const FUNCTION_WORDS: [&str; 40] = [
    "about", "after", "again", "also", "because", "been", "before", "being", "could", "does",
    "each", "from", "have", "here", "into", "just", "more", "most", "must", "only", "over",
    "should", "some", "such", "than", "that", "their", "them", "then", "there", "these", "they",
    "this", "those", "very", "were", "what", "when", "which", "with",
];

/// Words that name the kind of a failure or the syntax around a value, not the fact: left out of content words
/// as function words are (with the generic exception names, which say what kind of failure and not which).
const GENERIC_WORDS: [&str; 8] = [
    "assert",
    "error",
    "errors",
    "exception",
    "raise",
    "return",
    "traceback",
    "warning",
];

/// The words that are never content words, lower case: function words, generic words, generic exception names.
static NOT_CONTENT: std::sync::LazyLock<std::collections::HashSet<String>> =
    std::sync::LazyLock::new(|| {
        FUNCTION_WORDS
            .iter()
            .chain(&GENERIC_WORDS)
            .map(|w| (*w).to_owned())
            .chain(
                crate::history::findings::GENERIC_EXCEPTIONS
                    .iter()
                    .map(|e| e.to_ascii_lowercase()),
            )
            .collect()
    });

/// Whether `word` (lower case) is a content word: four letters or more, all letters, not a function word, not
/// a generic word.
#[must_use]
pub fn content_word(word: &str) -> bool {
    word.len() >= 4
        && word.chars().all(char::is_alphabetic)
        && word.chars().count() >= 4
        && !NOT_CONTENT.contains(word)
}

/// Suffixes [`stem`] strips, longest first among those that end alike.
const SUFFIXES: [&str; 16] = [
    "ations", "ation", "ments", "ment", "ings", "ing", "ions", "ion", "edly", "ers", "er", "ed",
    "es", "ly", "al", "s",
];

/// The stem of a lower-case word by light suffix stripping: one of [`SUFFIXES`], then a final `e`, as long as
/// three letters are left (`refunds`, `refunded` → `refund`; `approve`, `approval`, `approved` → `approv`;
/// `edited` → `edit`). A stem is always a prefix of its word, so a text holds a word of a stem only where it
/// holds the stem: texts are searched for stems without being cut into words.
#[must_use]
pub fn stem(word: &str) -> &str {
    let long_enough = |w: &str| w.chars().count() >= 3;
    let mut w = word;
    if let Some(s) = SUFFIXES
        .iter()
        .filter_map(|s| w.strip_suffix(s))
        .find(|s| long_enough(s))
    {
        w = s;
    }
    match w.strip_suffix('e') {
        Some(s) if long_enough(s) => s,
        _ => w,
    }
}

/// The longest pieces of a canonical lower-case `needle` that occur in the lower-cased raw text of any text
/// whose canonical form holds it: its runs without a space or `=` (which canonical form folds), with each run
/// of digits cut where a thousands separator could stand (groups of three counted from its end).
#[must_use]
pub fn pieces(needle: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for run in needle.split([' ', '=']).filter(|r| !r.is_empty()) {
        let b = run.as_bytes();
        let mut from = 0;
        let mut i = 0;
        while i < b.len() {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            // Cut points inside this digit run: every third digit from its end.
            let mut cut = j;
            let mut cuts = Vec::new();
            while cut >= i + 4 {
                cut -= 3;
                cuts.push(cut);
            }
            for &c in cuts.iter().rev() {
                out.push(&run[from..c]);
                from = c;
            }
            i = j;
        }
        out.push(&run[from..]);
    }
    out.retain(|p| !p.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`assignments`] by its definition: every `=` and space in turn, left to right (whether an `=` is a lone
    /// one is [`lone_equals`], the same rule for both).
    fn assignments_by_definition(text: &str) -> String {
        let b = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut at = 0;
        while let Some(k) = rest.find(['=', ' ']) {
            let i = at + k;
            out.push_str(&rest[..k]);
            let (skip, push) = if b[i] == b'=' {
                match lone_equals(b, i) {
                    None => (1, "="),
                    Some(taken) => {
                        if out.ends_with(' ') {
                            out.pop();
                        }
                        (taken, "=")
                    }
                }
            } else if b.len() > i + 3
                && b[i + 1].eq_ignore_ascii_case(&b'i')
                && b[i + 2].eq_ignore_ascii_case(&b's')
                && b[i + 3] == b' '
                && i > 0
            {
                (4, "=")
            } else {
                (1, " ")
            };
            out.push_str(push);
            at = i + skip;
            rest = &text[at..];
        }
        out.push_str(rest);
        out
    }

    proptest::proptest! {
        #[test]
        fn lower_same_length_lowers_each_character_that_keeps_its_length(text in "[aZ é\u{c9}\u{130}\u{212a}\u{1e9e}ß=]{0,30}") {
            let by_char: String = text
                .chars()
                .map(|c| {
                    let mut lower = c.to_lowercase();
                    match (lower.next(), lower.next()) {
                        (Some(l), None) if l.len_utf8() == c.len_utf8() => l,
                        _ => c,
                    }
                })
                .collect();
            proptest::prop_assert_eq!(lower_same_length(&text), by_char);
        }

        #[test]
        fn assignments_equal_their_definition(text in "[ =iIsSx!<>:+é]{0,40}") {
            let lower = lower_same_length(&text);
            proptest::prop_assert_eq!(assignments(&text, &lower), assignments_by_definition(&text));
        }
    }

    #[test]
    fn assignments_read_an_is_that_starts_inside_the_last_one() {
        for text in [
            "x = is is y",
            " is is x",
            "a is is b",
            "a = = b",
            " is x",
            "is  is = y",
        ] {
            assert_eq!(
                assignments(text, &lower_same_length(text)),
                assignments_by_definition(text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn canonical_form_folds_space_separators_and_assignments() {
        let c = |s: &str| canon(s).cased;
        assert_eq!(c("  a \n\t b  "), "a b");
        assert_eq!(c("total 4,719 rows"), "total 4719 rows");
        assert_eq!(c("1,234,567.5 and 12,345"), "1234567.5 and 12345");
        // Not thousands: a first group of four digits, a group of two, a list, a decimal part.
        assert_eq!(c("1234,567"), "1234,567");
        assert_eq!(c("1,23"), "1,23");
        assert_eq!(c("1,234,56"), "1,234,56");
        assert_eq!(c("0.5,123"), "0.5,123");
        assert_eq!(c("x,123"), "x,123");
        // A number after a comma that follows no digit, or at the very start, is grouped; after a decimal part
        // or a list, not.
        assert_eq!(c(",1,234"), ",1234");
        assert_eq!(c("x,1,234"), "x,1234");
        assert_eq!(c("1.234,567"), "1.234,567");
        assert_eq!(c("12,3456"), "12,3456");
        assert_eq!(c("costs 1,234, then 5"), "costs 1234, then 5");
        assert_eq!(c("4,719.5"), "4719.5");
        assert_eq!(c("MAX_RETRIES = 37"), "MAX_RETRIES=37");
        assert_eq!(c("MAX_RETRIES is 37"), "MAX_RETRIES=37");
        assert_eq!(c("MAX_RETRIES IS 37"), "MAX_RETRIES=37");
        assert_eq!(c("MAX_RETRIES=37"), "MAX_RETRIES=37");
        assert_eq!(
            c("a == b, c != d, e <= f, g => h, i := j, k += 1"),
            "a == b, c != d, e <= f, g => h, i := j, k += 1"
        );
        assert_eq!(c("this island is big"), "this island=big");
        assert_eq!(c("is it"), "is it");
        assert_eq!(c("what the value is"), "what the value is");
        // The same where the pass runs (the text states a value elsewhere).
        assert_eq!(c("x = 1 and what y is"), "x=1 and what y is");
        assert_eq!(c("known as X_1"), "known as X_1");
        assert_eq!(canon("Ünïcode ÉTÉ").lower, "ünïcode été");
        // The Kelvin sign lower-cases to a shorter `k`: kept as it is, so both strings stay aligned.
        let k = canon("\u{212A}ING");
        assert_eq!(k.lower.len(), k.cased.len());
    }

    /// `drop_thousands` says `None` for a text without a comma between two digits, which `canon` then leaves
    /// as it was (a comma after a digit alone, or before one alone, is no separator).
    #[test]
    fn a_text_without_separators_is_not_rewritten() {
        for text in ["1,a", "a,1", "1, 2", ",12", "12,", "x,y"] {
            assert_eq!(drop_thousands(text), None, "{text:?}");
        }
        assert_eq!(drop_thousands("a 1,234"), Some("a 1234".to_owned()));
        assert_eq!(drop_thousands("1,23"), Some("1,23".to_owned()));
    }

    #[test]
    fn boundaries_keep_numbers_and_identifiers_whole() {
        let at = |text: &str, needle: &str| {
            let start = text.find(needle).unwrap();
            on_boundaries(text, start, start + needle.len())
        };
        assert!(!at("mia_kim_4397", "397"));
        assert!(!at("2024-05-15", "202"));
        assert!(!at("TCK-1459", "1459"));
        assert!(!at("version 2.31 ships", "2.3"));
        assert!(!at("max_retries_total", "max_retries"));
        assert!(!at("it is 1.397", "397"));
        assert!(at("max_retries is 37.", "37"));
        assert!(at("see src/a.py, line 3", "src/a.py"));
        assert!(at("in src/fields.py", "fields.py"));
        assert!(at("order #W2378156's", "W2378156"));
        assert!(at("costs $200", "200"));
        assert!(at("--flag", "flag"));
        // A needle that starts or ends with punctuation says where it stops itself.
        assert!(at("ab(c", "(c"));
        assert!(at("ab(c)d", "(c)"));
    }

    #[test]
    fn stems_are_prefixes_that_meet() {
        for (a, b) in [
            ("refunds", "refund"),
            ("refunded", "refunding"),
            ("approve", "approval"),
            ("approved", "approves"),
            ("edited", "edit"),
            ("assertion", "asserted"),
            ("require", "requires"),
            ("replacement", "replaced"),
            ("tables", "table"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
            assert!(a.starts_with(stem(a)) && b.starts_with(stem(b)));
        }
        assert_ne!(stem("customer"), stem("kettle"));
        assert_eq!(stem("use"), "use");
    }

    #[test]
    fn pieces_survive_canonical_folding() {
        assert_eq!(pieces("max_retries=37"), ["max_retries", "37"]);
        assert_eq!(pieces("cus-47215 ok"), ["cus-47", "215", "ok"]);
        assert_eq!(pieces("1234567"), ["1", "234", "567"]);
        assert_eq!(pieces("4719"), ["4", "719"]);
        assert_eq!(pieces("719"), ["719"]);
    }
}
