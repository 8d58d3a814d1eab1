//! What `run`, `merge` and `report` print of a finished run: the comparison, what to pick, how to read it,
//! and, for a run, the timings and what the real LLM's client did.

use std::io::{self, Write};

use super::console::{comparison, hanging, paragraph};
use crate::llm::openai::LlmStats;
use crate::report::RunReport;
use crate::run::RunOutcome;

/// How much a summary says, and at what width.
#[derive(Debug, Clone, Copy)]
pub(super) struct View {
    /// Every column of the comparison.
    pub wide: bool,
    /// The timings too.
    pub verbose: bool,
    /// The columns to wrap at.
    pub width: usize,
}

impl View {
    /// At the terminal's width.
    pub(super) fn new(wide: bool, verbose: bool) -> Self {
        Self {
            wide: wide || verbose,
            verbose,
            width: super::console::width(),
        }
    }
}

/// `text` as a wrapped paragraph without Markdown's code marks.
fn prose(text: &str, width: usize) -> String {
    paragraph(&text.replace('`', ""), width)
}

/// The comparison table and, when there is one, what to pick.
pub(super) fn comparison_and_pick(
    out: &mut impl Write,
    report: &RunReport,
    view: View,
) -> io::Result<()> {
    write!(out, "{}", comparison(report, view.wide, view.width))?;
    if let Some(pick) = &report.recommendation {
        writeln!(
            out,
            "\n{}",
            prose(&format!("What to pick: {}", pick.text), view.width)
        )?;
        verdicts(out, pick, view.width)?;
    }
    Ok(())
}

/// Each strategy's verdict, a line each (wrapped under itself when it is longer than the width): the name,
/// then the verdict and why.
fn verdicts(
    out: &mut impl Write,
    pick: &crate::report::recommend::Recommendation,
    width: usize,
) -> io::Result<()> {
    if pick.verdicts.is_empty() {
        return Ok(());
    }
    let table = crate::report::recommend::verdict_table(pick);
    let name = table
        .rows
        .iter()
        .map(|r| r[0].text.chars().count())
        .max()
        .unwrap_or(0)
        .min(width / 3);
    writeln!(out)?;
    for row in &table.rows {
        let strategy = super::console::elide(&row[0].text, name);
        let line = format!(
            "{strategy:<name$}  {}: {}",
            row[1].text,
            row[2].text.replace('`', "")
        );
        writeln!(out, "{}", hanging(&line, width, name + 2))?;
    }
    Ok(())
}

/// A finished run: its size, the comparison, what to pick, how to read it, the timings (verbose) and each
/// real client's requests.
pub(super) fn run(out: &mut impl Write, outcome: &RunOutcome, view: View) -> io::Result<()> {
    let r = &outcome.report;
    // The models the traces name, each with its price's source and window; the configuration's agent model and
    // window for the episodes that name none.
    let named: usize = r.models.iter().map(|g| g.episodes.len()).sum();
    if named < r.dataset.episodes {
        let some = if named == 0 { "" } else { " for the others" };
        let model = r.settings.agent_model.as_deref().map_or_else(
            || "no model named (unpriced)".to_owned(),
            |m| format!("agent model {m}"),
        );
        writeln!(
            out,
            "{} episodes, {} items, window {} tokens, {model}{some}",
            r.dataset.episodes, r.dataset.items, r.settings.context_window
        )?;
    } else {
        writeln!(
            out,
            "{} episodes, {} items",
            r.dataset.episodes, r.dataset.items
        )?;
    }
    // Each model's price and window are among the readings below.
    writeln!(out)?;
    comparison_and_pick(out, r, view)?;
    writeln!(out)?;
    for line in crate::report::reading::reading(r) {
        writeln!(out, "{}", prose(&line.text, view.width))?;
    }
    writeln!(out)?;
    if view.verbose {
        timings(out, r)?;
    }
    for (name, stats) in [("LLM", &outcome.llm), ("Judge", &outcome.judge)] {
        if let Some(s) = stats {
            writeln!(out, "\n{name}: {}", client(s))?;
        }
    }
    Ok(())
}

/// Each strategy's compute time and LLM latency.
fn timings(out: &mut impl Write, report: &RunReport) -> io::Result<()> {
    for t in &report.timings {
        write!(
            out,
            "strategy compute {}: p50 {:.0} µs, p95 {:.0} µs",
            t.strategy, t.compute_p50_us, t.compute_p95_us
        )?;
        if t.llm_calls > 0 {
            write!(
                out,
                "; {} LLM calls: p50 {:.0} ms, p95 {:.0} ms",
                t.llm_calls, t.llm_p50_ms, t.llm_p95_ms
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// What a real client did: calls, the cache, retries, failures, concurrency and spend.
fn client(s: &LlmStats) -> String {
    let mut line = format!(
        "{} calls, {} distinct requests: {} from the cache, {} shared with an identical one; {} HTTP requests \
         sent ({} retries), {} failed, {} without usage (counted)",
        s.calls, s.unique, s.cached, s.shared, s.sent, s.retries, s.failed, s.estimated,
    );
    if let Some(m) = s.mean_in_flight {
        #[allow(clippy::cast_precision_loss)]
        let share = 100.0 * m / s.max_concurrency as f64;
        line += &format!(
            "; {m:.2} of {} in flight on average ({share:.0}%, counted at the client, from a request's first \
             byte sent to its last byte read: at or above the endpoint's count)",
            s.max_concurrency
        );
    }
    if let Some(usd) = s.spent_usd {
        line += &format!("; ${usd:.4} spent");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_line_says_its_cache_retries_concurrency_and_spend() {
        let s = LlmStats {
            calls: 10,
            unique: 8,
            cached: 3,
            shared: 2,
            sent: 4,
            retries: 1,
            failed: 0,
            estimated: 0,
            mean_in_flight: Some(1.5),
            max_concurrency: 4,
            spent_usd: Some(0.0125),
        };
        assert_eq!(
            client(&s),
            "10 calls, 8 distinct requests: 3 from the cache, 2 shared with an identical one; 4 HTTP requests \
             sent (1 retries), 0 failed, 0 without usage (counted); 1.50 of 4 in flight on average (38%, \
             counted at the client, from a request's first byte sent to its last byte read: at or above the \
             endpoint's count); $0.0125 spent"
        );
        let bare = LlmStats::default();
        assert!(!client(&bare).contains("in flight"));
        assert!(!client(&bare).contains("spent"));
    }
}
