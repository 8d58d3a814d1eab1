//! Text for a terminal: the width to wrap at, paragraphs wrapped to it, and the comparison table that fits it.

use std::io::IsTerminal as _;

use crate::metrics::StrategyMetrics;
use crate::report::{console, table};

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

/// The comparison table: every column when `wide`, else the five that fit `width` (at most 100) columns.
#[must_use]
pub fn comparison(strategies: &[StrategyMetrics], wide: bool, width: usize) -> String {
    if wide {
        table::comparison_table(strategies)
    } else {
        console::fit(&console::summary(strategies), width.min(100))
    }
}
