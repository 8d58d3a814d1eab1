//! When a text holds a finding's evidence: the one rule the replay, the reference replay and the tests share.
//!
//! ## The rule
//! Texts and evidence are compared [`normalize`]d (lower case, white space folded).
//! - **Any text** holds an evidence string that occurs in it.
//! - **A text a model wrote** — a summary a strategy had written (it starts with [`SUMMARY_PREFIX`]), or the
//!   agent's own turn (its text, reasoning and tool-call arguments) — also holds it when it holds every one of
//!   the evidence's *identifying tokens*, each as a whole token (not inside a longer word or number), in any
//!   order and wording: a faithful paraphrase keeps what identifies the fact, and an agent that wrote the
//!   figure down in its own words still has it.
//!   The identifying tokens of an evidence string are
//!   - its quoted strings (`'…'`, `"…"`, `` `…` ``), whole;
//!   - its words (runs of letters, digits and `_ . / : -`, with trailing `. : -` trimmed) that hold a digit,
//!     a `_`, a `/`, an inner `.` or `:`, two capitals (`NVL`, `HTTPError`), or a capital after a lower-case
//!     letter (`parseDate`), except the generic exception names (`ValueError`…), which say what kind of failure
//!     and not which;
//!   - when it has none of those (prose such as "the customer wants a refund"), its content words: words of
//!     four letters or more that are not among a few function words.
//!
//! A summary that drops the identifier, the number or the path does not hold the evidence; one that rewords
//! the sentence around them does. The mock's summaries are extractive, so they hold evidence verbatim; the
//! rule is what makes a real model's summaries comparable.

use super::findings::GENERIC_EXCEPTIONS;
use super::{normalize, Item, SUMMARY_PREFIX};

/// Words too common to identify anything, left out of prose evidence's content words.
const FUNCTION_WORDS: [&str; 24] = [
    "about", "after", "again", "also", "been", "before", "being", "does", "from", "have", "into",
    "just", "more", "only", "that", "their", "them", "then", "there", "they", "this", "were",
    "what", "with",
];

/// A needle: an evidence string normalized, with the identifying tokens a summary must hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Needle {
    /// The evidence, normalized.
    pub text: String,
    /// Its identifying tokens, normalized.
    pub keys: Vec<String>,
}

impl Needle {
    /// The needle of an evidence string.
    #[must_use]
    pub fn new(evidence: &str) -> Self {
        Self {
            text: normalize(evidence),
            keys: identifying_tokens(evidence),
        }
    }

    /// Whether `text` (normalized), written by a model when `written` is set, holds this evidence.
    #[must_use]
    pub fn in_text(&self, text: &str, written: bool) -> bool {
        text.contains(self.text.as_str())
            || (written && !self.keys.is_empty() && self.keys.iter().all(|k| has_token(text, k)))
    }
}

/// Whether an instruction (as written, not normalized) is a summary a strategy had a model write.
#[must_use]
pub fn is_summary(text: &str) -> bool {
    text.starts_with(SUMMARY_PREFIX)
}

/// Whether a model wrote `item`: a summary, or part of the agent's turn.
#[must_use]
pub fn model_written(item: &Item) -> bool {
    item.is_assistant_turn() || item.is_summary()
}

/// Whether `text` (raw; written by a model when `written` is set) holds the evidence string `evidence` by the
/// rule above.
#[must_use]
pub fn holds(text: &str, written: bool, evidence: &str) -> bool {
    Needle::new(evidence).in_text(&normalize(text), written)
}

/// The share of `keys` (identifying tokens, normalized) that `text` holds as whole tokens; 0 without keys.
#[must_use]
pub fn token_share(keys: &[String], text: &str) -> f64 {
    if keys.is_empty() {
        return 0.0;
    }
    let hay = normalize(text);
    let held = keys.iter().filter(|k| has_token(&hay, k)).count();
    #[allow(clippy::cast_precision_loss)]
    let share = held as f64 / keys.len() as f64;
    share
}

/// The identifying tokens of an evidence string, normalized, in order, without repeats.
#[must_use]
pub fn identifying_tokens(evidence: &str) -> Vec<String> {
    fn add(keys: &mut Vec<String>, k: String) {
        if !k.is_empty() && !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut keys: Vec<String> = Vec::new();
    // Quoted strings, whole; the rest of the text is read without them.
    let mut rest = String::with_capacity(evidence.len());
    let mut chars = evidence.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '\'' | '"' | '`') {
            // An apostrophe inside a word (`don't`) opens nothing.
            let inside_word = c == '\''
                && evidence[..i]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_alphanumeric);
            if !inside_word {
                if let Some(len) = evidence[i + 1..].find(c) {
                    let quoted = &evidence[i + 1..i + 1 + len];
                    if !quoted.trim().is_empty() && !quoted.contains('\n') {
                        add(&mut keys, normalize(quoted));
                        rest.push(' ');
                        while chars.peek().is_some_and(|&(j, _)| j <= i + 1 + len) {
                            chars.next();
                        }
                        continue;
                    }
                }
            }
        }
        rest.push(c);
    }
    let words: Vec<&str> = rest
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | ':' | '-')))
        .map(|w| w.trim_end_matches(['.', ':', '-']).trim_start_matches('-'))
        .filter(|w| !w.is_empty())
        .collect();
    for w in &words {
        if identifying(w) {
            add(&mut keys, w.to_lowercase());
        }
    }
    if keys.is_empty() {
        for w in &words {
            let lower = w.to_lowercase();
            if lower.chars().count() >= 4
                && lower.chars().all(char::is_alphabetic)
                && !FUNCTION_WORDS.contains(&lower.as_str())
            {
                add(&mut keys, lower);
            }
        }
    }
    keys
}

/// Whether a word of an evidence string identifies something (see the module docs).
fn identifying(word: &str) -> bool {
    if GENERIC_EXCEPTIONS.contains(&word) {
        return false;
    }
    let inner = |c: char| word.trim_matches(c).contains(c);
    let capitals = word.chars().filter(char::is_ascii_uppercase).count();
    let camel = word
        .chars()
        .zip(word.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    word.chars().any(|c| c.is_ascii_digit())
        || word.contains('_')
        || word.contains('/')
        || inner('.')
        || inner(':')
        || capitals >= 2
        || camel
}

/// Whether `key` occurs in `text` as a whole token: not inside a longer word or number.
fn has_token(text: &str, key: &str) -> bool {
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(key).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + key.len()..].chars().next();
        // `2.3` is not a token of `2.31`, nor `a` of `a.b`: a `.` followed by a word character continues it.
        let continues = |c: Option<char>, next: Option<char>| match c {
            Some('.') => next.is_some_and(word_char),
            Some(c) => word_char(c),
            None => false,
        };
        !before.is_some_and(word_char) && !continues(after, text[at + key.len()..].chars().nth(1))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(body: &str) -> String {
        format!("{SUMMARY_PREFIX}{body}")
    }

    #[test]
    fn identifying_tokens_are_what_names_the_fact() {
        assert_eq!(
            identifying_tokens("AssertionError: assert 4719 == 4718"),
            ["4719", "4718"]
        );
        assert_eq!(
            identifying_tokens("MAX_RETRIES = 37"),
            ["max_retries", "37"]
        );
        assert_eq!(
            identifying_tokens("Applied edit to src/app/parse.py"),
            ["src/app/parse.py"]
        );
        assert_eq!(identifying_tokens("keep requests at 2.3"), ["2.3"]);
        assert_eq!(
            identifying_tokens("the error code was 'E_QUOTA' on parseDate"),
            ["e_quota", "parsedate"]
        );
        assert_eq!(
            identifying_tokens("use NVL, not COALESCE"),
            ["nvl", "coalesce"]
        );
        assert_eq!(
            identifying_tokens("the customer wants a refund for the broken kettle"),
            ["customer", "wants", "refund", "broken", "kettle"]
        );
    }

    /// Faithful paraphrases written by hand keep the finding; summaries that drop its identifier do not; and
    /// outside a summary only the exact evidence counts.
    #[test]
    fn a_faithful_paraphrase_is_kept_and_a_lossy_one_is_not() {
        let cases: [(&str, &str, bool); 10] = [
            (
                "AssertionError: assert 4719 == 4718",
                "The test failed: it got 4719 where 4718 was expected.",
                true,
            ),
            (
                "AssertionError: assert 4719 == 4718",
                "The test failed with an off-by-one assertion.",
                false,
            ),
            (
                "MAX_RETRIES = 37",
                "Settings set max_retries to 37 during the migration.",
                true,
            ),
            (
                "MAX_RETRIES = 37",
                "A retry constant was changed during the migration.",
                false,
            ),
            (
                "Applied edit to src/app/parse.py",
                "We edited src/app/parse.py to drop the double adjustment.",
                true,
            ),
            (
                "Applied edit to src/app/parse.py",
                "We edited the parser module.",
                false,
            ),
            (
                "keep requests at 2.3",
                "Decided to stay on requests 2.3 rather than pin the old release.",
                true,
            ),
            (
                "keep requests at 2.3",
                "Decided to stay on requests 2.31.",
                false,
            ),
            (
                "order #W2378156 is pending",
                "The customer's order W2378156 has not shipped yet (pending).",
                true,
            ),
            (
                "the customer wants a refund for the broken kettle",
                "The customer asked about a kettle.",
                false,
            ),
        ];
        for (evidence, text, kept) in cases {
            assert_eq!(
                holds(&summary(text), true, evidence),
                kept,
                "{evidence:?} in {text:?}"
            );
            // The agent's own words count as a summary's do.
            let turn = Item::assistant(text);
            assert!(model_written(&turn));
            assert_eq!(holds(text, model_written(&turn), evidence), kept);
            // A tool's output: the exact string only.
            let output = Item::tool_result("c1", "fetch", text);
            assert!(!model_written(&output));
            assert!(
                !holds(text, false, evidence),
                "{evidence:?} in {text:?} (tool output)"
            );
        }
        assert!(holds(
            "E   AssertionError:   assert 4719 == 4718",
            false,
            "assertionerror: assert 4719 == 4718"
        ));
    }

    #[test]
    fn tokens_are_whole() {
        assert!(has_token("max_retries is 37.", "37"));
        assert!(has_token("see src/a.py, line 3", "src/a.py"));
        assert!(!has_token("it is 137", "37"));
        assert!(!has_token("version 2.31 ships", "2.3"));
        assert!(!has_token("max_retries_total", "max_retries"));
    }
}
