//! The report's document model: a table is a list of column specs — a header and what each row's cell is —
//! over rows of any type (a strategy's results, a finding lost, a paired difference), and a cell is typed: a
//! figure (right-aligned), a text, a link to an episode's page, or nothing. Markdown, HTML and the console render
//! the same [`Table`]; none looks at a header's words or a cell's characters to decide what a cell is.

use std::fmt::Write as _;

use super::analysis::{Assessment, Intervals, Shown};
use super::pct;
use crate::metrics::{FieldKey, StrategyMetrics};

/// What a cell is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A figure: aligned to the right.
    Figure,
    /// Text: aligned to the left.
    Text,
    /// An episode, linked to its page (at the strategy and finding) where the page exists.
    Episode {
        /// The strategy the link opens at.
        strategy: String,
        /// The finding it opens at.
        finding: String,
    },
    /// Nothing to show (`–`): it takes its column's alignment.
    Empty,
}

/// One cell: its text and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// The text every format shows.
    pub text: String,
    /// What it is.
    pub kind: Kind,
}

impl Cell {
    /// A text cell (`–` or nothing: an empty cell).
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(text.into(), Kind::Text)
    }

    /// A figure, already formatted (`–` or nothing: an empty cell).
    pub fn figure(text: impl Into<String>) -> Self {
        Self::of(text.into(), Kind::Figure)
    }

    fn of(text: String, kind: Kind) -> Self {
        let empty = matches!(text.trim(), "" | "–" | "-");
        Self {
            text,
            kind: if empty { Kind::Empty } else { kind },
        }
    }

    /// A share as a percentage (`–` when unknown).
    #[must_use]
    pub fn share(v: Option<f64>) -> Self {
        Self::figure(pct(v))
    }

    /// A share with the interval the analysis decided it shows: `63.2% [61.0%, 65.4%]`, `100.0% (too few
    /// episodes)`, or the share alone — written as the sentences write it ([`super::recommend::with_interval`]).
    #[must_use]
    pub fn share_shown(v: Option<f64>, shown: Shown) -> Self {
        Self::figure(v.map_or_else(|| pct(None), |v| super::recommend::with_interval(v, shown)))
    }

    /// USD (`unknown` when a price is missing).
    #[must_use]
    pub fn usd(v: Option<f64>) -> Self {
        Self::figure(super::table::usd(v))
    }

    /// A count as it is written (`1623490`); `–` when the results lack it.
    #[must_use]
    pub fn count(n: Option<u64>) -> Self {
        Self::figure(n.map_or_else(|| "–".to_owned(), |n| n.to_string()))
    }

    /// A count with thousands separators (`1,623,490`); `–` when the results lack it.
    #[must_use]
    pub fn thousands(n: Option<u64>) -> Self {
        Self::figure(n.map_or_else(|| "–".to_owned(), super::table::thousands))
    }

    /// An episode, linked at `strategy` and `finding`.
    pub fn episode(id: impl Into<String>, strategy: &str, finding: &str) -> Self {
        Self {
            text: id.into(),
            kind: Kind::Episode {
                strategy: strategy.to_owned(),
                finding: finding.to_owned(),
            },
        }
    }
}

/// A column: its header, and each row's cell.
pub struct Col<'a, T> {
    header: String,
    cell: Box<dyn Fn(&T) -> Cell + 'a>,
}

/// The column `header` whose cells `cell` makes.
pub fn col<'a, T>(header: impl Into<String>, cell: impl Fn(&T) -> Cell + 'a) -> Col<'a, T> {
    Col {
        header: header.into(),
        cell: Box::new(cell),
    }
}

/// A row of a strategy table: a strategy's figures (read through it as [`StrategyMetrics`]) and what the
/// analysis decided of them.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// The figures.
    pub metrics: &'a StrategyMetrics,
    /// The analysis' assessment (`None` for results without one).
    pub assessment: Option<&'a Assessment>,
}

impl std::ops::Deref for Row<'_> {
    type Target = StrategyMetrics;

    fn deref(&self) -> &StrategyMetrics {
        self.metrics
    }
}

impl Row<'_> {
    /// The interval `which` of its figures shows.
    #[must_use]
    pub fn shown(&self, which: fn(&Intervals) -> Shown) -> Shown {
        self.assessment
            .map_or(Shown::Nothing, |a| which(&a.intervals))
    }
}

/// A column of a strategy table.
pub fn stat<'a, 'r>(
    header: impl Into<String>,
    cell: impl Fn(&Row<'r>) -> Cell + 'a,
) -> Col<'a, Row<'r>> {
    col(header, cell)
}

/// A column of a strategy's share (`key`) as a percentage.
pub fn share<'a, 'r>(header: impl Into<String>, key: FieldKey) -> Col<'a, Row<'r>> {
    stat(header, move |s| Cell::share(s.number(key)))
}

/// A column of a strategy's share (`value`) with the interval the analysis decided it shows (`which`).
pub fn share_ci<'a, 'r>(
    header: impl Into<String>,
    value: FieldKey,
    which: fn(&Intervals) -> Shown,
) -> Col<'a, Row<'r>> {
    stat(header, move |s| {
        Cell::share_shown(s.number(value), s.shown(which))
    })
}

/// The first column of a strategy table: the strategy's name.
#[must_use]
pub fn strategy<'a, 'r>() -> Col<'a, Row<'r>> {
    col("strategy", |s: &Row<'r>| Cell::text(&s.strategy))
}

/// A titled table of typed cells, rendered by Markdown, HTML and the console alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Section title.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Cell>>,
    /// A sentence under the table.
    pub note: Option<String>,
}

impl Table {
    /// The table `title` of `cols` over `rows`.
    pub fn of<'r, T: 'r>(
        title: impl Into<String>,
        cols: &[Col<'_, T>],
        rows: impl IntoIterator<Item = &'r T>,
        note: Option<String>,
    ) -> Self {
        Self {
            title: title.into(),
            headers: cols.iter().map(|c| c.header.clone()).collect(),
            rows: rows
                .into_iter()
                .map(|r| cols.iter().map(|c| (c.cell)(r)).collect())
                .collect(),
            note,
        }
    }

    /// Per column, whether it holds figures (aligned to the right): every cell with something in it is a
    /// figure (a column of dashes alone is one of figures not given).
    #[must_use]
    pub fn figure_columns(&self) -> Vec<bool> {
        (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .all(|cell| matches!(cell.kind, Kind::Figure | Kind::Empty))
            })
            .collect()
    }

    /// The table as Markdown, with a plain alignment row (the first column left, the others right).
    #[must_use]
    pub fn to_markdown(&self) -> String {
        let mut out = format!("| {} |\n|---|", self.headers.join(" | "));
        out.push_str(&"---:|".repeat(self.headers.len().saturating_sub(1)));
        out.push('\n');
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", texts(row).join(" | "));
        }
        out
    }

    /// The table for a terminal: columns aligned (the first to the left, the rest to the right), a rule under
    /// the header.
    #[must_use]
    pub fn to_console(&self) -> String {
        let width = |i: usize| {
            std::iter::once(self.headers[i].as_str())
                .chain(
                    self.rows
                        .iter()
                        .filter_map(|r| r.get(i))
                        .map(|c| c.text.as_str()),
                )
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, c) in cells.iter().enumerate() {
                let w = widths.get(i).copied().unwrap_or(0);
                if i == 0 {
                    let _ = write!(out, "{c:<w$}");
                } else {
                    let _ = write!(out, "  {c:>w$}");
                }
            }
            out.trim_end().to_owned() + "\n"
        };
        let mut out = line(&self.headers);
        out.push_str(
            &"-".repeat(widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)),
        );
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(&texts(row)));
        }
        out
    }
}

/// The texts of a row's cells.
#[must_use]
pub fn texts(row: &[Cell]) -> Vec<String> {
    row.iter().map(|c| c.text.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Alignment comes from what the cells are, not from their characters: `yes` is text, `30 of 42` and
    /// `$0.0120` figures, a dash takes its column's; an episode is linked by its kind, whatever its header.
    #[test]
    fn cells_say_what_they_are() {
        struct Row(&'static str, u64, bool);
        let rows = [Row("a", 3, true), Row("b", 1234, false)];
        let cols = [
            col("name", |r: &Row| Cell::text(r.0)),
            col("n", |r: &Row| Cell::thousands(Some(r.1))),
            col("ok", |r: &Row| Cell::text(if r.2 { "yes" } else { "no" })),
            col("share", |r: &Row| Cell::share((r.1 < 10).then_some(0.5))),
            col("where", |r: &Row| Cell::episode(r.0, "s", "f1")),
        ];
        let t = Table::of("t", &cols, &rows, None);
        assert_eq!(t.figure_columns(), [false, true, false, true, false]);
        assert_eq!(t.rows[1][1].text, "1,234");
        assert_eq!(t.rows[1][3].kind, Kind::Empty);
        assert!(matches!(&t.rows[0][4].kind, Kind::Episode { finding, .. } if finding == "f1"));
        assert_eq!(
            t.to_markdown().lines().nth(2),
            Some("| a | 3 | yes | 50.0% | a |")
        );
    }
}
