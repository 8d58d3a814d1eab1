//! Text for a terminal: the width to wrap at, paragraphs wrapped to it, and the comparison table that fits it.

use std::io::IsTerminal as _;

use crate::report::{console, table, RunReport};

/// The width paragraphs wrap at: the terminal's, or 100 columns when stdout is not a terminal.
#[must_use]
pub fn width() -> usize {
    if std::io::stdout().is_terminal() {
        if let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size() {
            return usize::from(w).max(40);
        }
    }
    100
}

/// `text` wrapped at `width` columns.
#[must_use]
pub fn paragraph(text: &str, width: usize) -> String {
    textwrap::fill(text, width)
}

/// The comparison table: every column when `wide`, else the few that fit `width` (at most 100) columns.
#[must_use]
pub fn comparison(report: &RunReport, wide: bool, width: usize) -> String {
    if wide {
        table::comparison_table(report)
    } else {
        console::fit(&console::summary(&table::rows(report)), width.min(100))
    }
}

/// `name` shortened to at most `room` characters, its middle elided (`…`), when it is longer.
#[must_use]
pub fn elide(name: &str, room: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= room || room < 3 {
        return name.to_owned();
    }
    let head = (room - 1).div_ceil(2);
    let tail = room - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// A Markdown table (its first `left` columns aligned to the left, the others to the right) whose every line
/// fits `width` columns: a row too long has its first cell (an episode id) shortened, its middle elided, to no
/// less than 16 characters.
#[must_use]
pub fn markdown(left: usize, headers: &[&str], rows: &[Vec<String>], width: usize) -> String {
    use std::fmt::Write as _;
    let mut out = format!("| {} |\n|", headers.join(" | "));
    for i in 0..headers.len() {
        out.push_str(if i < left { "---|" } else { "---:|" });
    }
    out.push('\n');
    for row in rows {
        let rest: usize = row[1..]
            .iter()
            .map(|c| c.chars().count() + 3)
            .sum::<usize>()
            + 4;
        let first = elide(&row[0], width.saturating_sub(rest).max(16));
        let _ = writeln!(out, "| {first} | {} |", row[1..].join(" | "));
    }
    out
}

/// `text` wrapped at `width` columns, its lines after the first indented by `indent` spaces; a line breaks only
/// at spaces (never inside a path or an id at a hyphen).
#[must_use]
pub fn hanging(text: &str, width: usize, indent: usize) -> String {
    let rest = " ".repeat(indent);
    textwrap::fill(
        text,
        textwrap::Options::new(width)
            .subsequent_indent(&rest)
            .word_splitter(textwrap::WordSplitter::NoHyphenation),
    )
}

/// `n` and the noun, singular for one: `1 finding`, `2 findings`.
#[must_use]
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_rows_fit_by_eliding_the_first_cell() {
        let rows = vec![
            vec!["a".repeat(90), "12".into(), "0.500".into()],
            vec!["short".into(), "3".into(), "1.000".into()],
        ];
        let out = markdown(1, &["episode", "calls", "ratio"], &rows, 40);
        assert!(out.lines().all(|l| l.chars().count() <= 40), "{out}");
        assert!(out.contains("| short | 3 | 1.000 |"), "{out}");
        assert!(out.contains('…'), "{out}");
        assert_eq!(elide("abcdefghij", 5), "ab…ij");
        assert_eq!(elide("abc", 5), "abc");
        assert_eq!(count(1, "probe", "probes"), "1 probe");
        assert_eq!(count(0, "probe", "probes"), "0 probes");
        let wrapped = hanging(&format!("{} x-y-z", "a ".repeat(5)), 12, 2);
        assert!(wrapped.contains("x-y-z"), "{wrapped}");
    }
}
