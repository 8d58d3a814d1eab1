//! The comparison as the console prints it by default: the five columns a reader decides with, narrow enough
//! for a 100-column terminal (`--wide` prints [`super::table::comparison`], every column).

use super::document::{share, share_ci, stat, strategy, Cell, Row, Table};
use crate::metrics::fields as field;

/// The console's comparison: strategy, savings, cost saved, retention at need with its 95% interval, the
/// episodes the strategy acted on, and — when any request was over the window — the requests over it.
#[must_use]
pub fn summary(rows: &[Row<'_>]) -> Table {
    let mut cols = vec![
        strategy(),
        share("savings", field::SAVINGS),
        share("cost saved", field::COST_SAVINGS),
        share_ci(
            "retention at need [95% interval]",
            field::RETENTION_AT_NEED,
            |i| i.retention,
        ),
        stat("acted on", |s| {
            Cell::figure(match s.count(field::EPISODES_ACTED) {
                Some(n) if !s.baseline => format!("{n} of {}", s.episodes),
                _ => "–".to_owned(),
            })
        }),
    ];
    if rows
        .iter()
        .any(|r| r.assessment.is_some_and(|a| a.over_window > 0))
    {
        cols.push(stat("over window", |s| {
            Cell::figure(s.assessment.map_or_else(
                || "–".to_owned(),
                |a| super::table::thousands(a.over_window),
            ))
        }));
    }
    Table::of("Comparison", &cols, rows, None)
}

/// `table` for a terminal `width` columns wide: aligned as [`Table::to_console`] aligns it, with the first
/// column's long names shortened (their middle elided) when the table would be wider.
#[must_use]
pub fn fit(table: &Table, width: usize) -> String {
    let widest = |i: usize| {
        std::iter::once(&table.headers[i])
            .chain(table.rows.iter().filter_map(|r| r.get(i)).map(|c| &c.text))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
    };
    let others: usize = (1..table.headers.len()).map(|i| widest(i) + 2).sum();
    let first = widest(0);
    let room = width
        .saturating_sub(others)
        .max(table.headers[0].chars().count().max(9));
    if first <= room {
        return table.to_console();
    }
    let shorten = |name: &str| {
        let chars: Vec<char> = name.chars().collect();
        if chars.len() <= room {
            return name.to_owned();
        }
        let head = (room - 1).div_ceil(2);
        let tail = room - 1 - head;
        let mut out: String = chars[..head].iter().collect();
        out.push('…');
        out.extend(&chars[chars.len() - tail..]);
        out
    };
    let mut narrow = table.clone();
    for row in &mut narrow.rows {
        if let Some(name) = row.first_mut() {
            name.text = shorten(&name.text);
        }
    }
    narrow.to_console()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_shortened_to_fit() {
        let table = Table {
            title: String::new(),
            headers: vec!["strategy".into(), "savings".into()],
            rows: vec![
                vec![
                    Cell::text("a_very_long_strategy_name_indeed"),
                    Cell::figure("10.0%"),
                ],
                vec![Cell::text("short"), Cell::figure("1.0%")],
            ],
            note: None,
        };
        let out = fit(&table, 24);
        assert!(out.lines().all(|l| l.chars().count() <= 24), "{out}");
        assert!(out.contains("a_very_…_indeed"), "{out}");
        assert!(out.contains("short"));
        // Wide enough: unchanged.
        assert_eq!(fit(&table, 100), table.to_console());
    }
}
