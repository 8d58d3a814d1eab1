//! Text as items hold it, and the normal form in which evidence and answers are compared with it.

/// The text of an item's field: shared, not copied, when an item is cloned (a replay clones every item into the
/// live request of each strategy).
pub type Text = std::sync::Arc<str>;

/// `char::is_whitespace` on ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
const ASCII_SPACE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[0x0b] = true;
    t[0x0c] = true;
    t[b'\r' as usize] = true;
    t[b' ' as usize] = true;
    t
};

/// Lines of a text as `str::lines` counts them, counted by a vectorized search for line feeds.
#[must_use]
pub fn line_count(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Lower-cases `text` and folds every run of white space into one space, trimming both ends.
///
/// This is the normal form in which evidence strings are compared with request text.
#[must_use]
pub fn normalize(text: &str) -> String {
    fold::<true>(text)
}

/// Folds every run of white space into one space, trimming both ends, case kept (the evidence rule's
/// canonical form starts from it).
#[must_use]
pub fn fold_space(text: &str) -> String {
    fold::<false>(text)
}

/// [`normalize`] when `LOWER`, else [`fold_space`].
fn fold<const LOWER: bool>(text: &str) -> String {
    if text.is_ascii() {
        // The common case, without a branch per byte: every byte is written (lower-cased when asked) or as a
        // space, and the write position advances unless the byte is a space that follows a space (or starts
        // the text).
        let mut out = text.as_bytes().to_vec();
        let mut len = 0;
        let mut after_space = true;
        for i in 0..out.len() {
            let b = out[i];
            let space = ASCII_SPACE[usize::from(b)];
            let kept = if LOWER { b.to_ascii_lowercase() } else { b };
            out[len] = if space { b' ' } else { kept };
            len += usize::from(!(space && after_space));
            after_space = space;
        }
        if after_space && len > 0 {
            len -= 1;
        }
        out.truncate(len);
        return String::from_utf8(out).unwrap_or_default();
    }
    // Character by character, the ASCII ones (most of any text) without decoding them.
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (space, len) = if b.is_ascii() {
            (ASCII_SPACE[usize::from(b)], 1)
        } else {
            let ch = text[i..].chars().next().unwrap_or_default();
            (ch.is_whitespace(), ch.len_utf8())
        };
        if space {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            if b.is_ascii() {
                out.push(char::from(if LOWER { b.to_ascii_lowercase() } else { b }));
            } else if LOWER {
                out.extend(text[i..i + len].chars().flat_map(char::to_lowercase));
            } else {
                out.push_str(&text[i..i + len]);
            }
        }
        i += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_agrees_on_ascii_and_unicode() {
        use proptest::prelude::*;
        use proptest::strategy::ValueTree;
        let fixed = [
            "A\x0bB\x0cC\r\nD",
            "  Ünïcode  Straße\tX ",
            "",
            " \n ",
            "a",
            " a",
            "a ",
            "a  b",
        ];
        let mut texts: Vec<String> = fixed.map(str::to_owned).to_vec();
        // Short texts over an alphabet dense in white space, ASCII and not.
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = proptest::collection::vec(
            prop::sample::select(vec![
                ' ', '\t', '\n', '\r', '\x0b', '\x0c', 'a', 'Z', '9', '_', 'é', 'É', '\u{a0}',
                '\u{3000}', 'İ', '\u{212a}', '\u{85}',
            ]),
            0..24,
        );
        for _ in 0..2_000 {
            let chars = strategy.new_tree(&mut runner).unwrap().current();
            texts.push(chars.into_iter().collect());
        }
        for text in &texts {
            let text = text.as_str();
            let slow = |lower: bool| {
                let mut out = String::new();
                let mut pending = false;
                for ch in text.chars() {
                    if ch.is_whitespace() {
                        pending = !out.is_empty();
                    } else {
                        if pending {
                            out.push(' ');
                            pending = false;
                        }
                        if lower {
                            out.extend(ch.to_lowercase());
                        } else {
                            out.push(ch);
                        }
                    }
                }
                out
            };
            assert_eq!(normalize(text), slow(true), "{text:?}");
            assert_eq!(fold_space(text), slow(false), "{text:?}");
        }
    }

    #[test]
    fn line_count_counts_as_lines_does() {
        for text in [
            "",
            "a",
            "a\n",
            "a\nb",
            "\n",
            "\n\n",
            "a\r\nb\r\n",
            "\r",
            "x\n\ny",
        ] {
            assert_eq!(line_count(text), text.lines().count(), "{text:?}");
        }
    }

    #[test]
    fn normalize_folds_case_and_space() {
        assert_eq!(normalize("  Hello\n\tWORLD  x "), "hello world x");
        assert_eq!(normalize(""), "");
    }
}
