//! `report.html`: one self-contained page (charts inlined as SVG, tables, the config), no external asset.

use std::fmt::Write as _;

use super::document::{Kind, Table};
use super::explorer::{self, EpisodeRef};
use super::table::tables;
use super::{charts, Exporter, RunReport};
use crate::error::Result;

/// Escapes text for HTML.
#[must_use]
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// Text as HTML, escaped, its `code` spans (between backticks) set as code.
#[must_use]
pub fn inline(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    // An odd number of backticks leaves the last one as it is.
    let pairs = (parts.len() - 1) / 2 * 2;
    let mut out = String::with_capacity(text.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        if i > pairs {
            out.push('`');
            out.push_str(&escape(part));
        } else if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// An episode as HTML: its id in code, linked to its page when there is one.
fn link(at: &EpisodeRef) -> String {
    match &at.link {
        Some(l) => format!(
            "<a href=\"{}\"><code>{}</code></a>",
            escape(l),
            escape(&at.episode)
        ),
        None => format!("<code>{}</code>", escape(&at.episode)),
    }
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;max-width:1340px;margin:2em auto;\
padding:0 1em;color:#222}p,ul,dl{max-width:1100px}table{border-collapse:collapse;margin:1em 0;font-size:13px}\
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left}th.n,td.n{text-align:right}td a,td code{white-space:nowrap}\
th{background:#f3f3f3}tr:nth-child(even){background:#fafafa}.chart{margin:1em 0}.chart svg{max-width:100%;height:auto}\
pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}.warn{background:#fff3cd;padding:.5em 1em}\
.pick{background:#e7f3ea;border-left:4px solid #2e7d32;padding:.6em 1em;font-size:16px}\
.nopick{background:#f1f1f1;border-left:4px solid #8a8a8a;padding:.6em 1em;font-size:16px}.scroll{overflow-x:auto}\
.scroll.wide{border-right:3px solid #bbb}.wider{color:#555;font-size:13px;margin:.6em 0 -.6em}\
dt{font-weight:bold}dd{margin:0 0 .5em 1.5em}.hint{color:#555;font-size:13px}.left-out{color:#555;font-style:italic}";

/// Marks each table wider than its box (a narrow window) and says above it that it scrolls sideways.
const SCRIPT: &str = "for(const s of document.querySelectorAll('.scroll')){const h=document.createElement('p');\
h.className='wider';h.textContent='\u{2194} This table is wider than the page: scroll it sideways for the columns on the right.';\
s.before(h);const f=()=>{const w=s.scrollWidth>s.clientWidth+1;h.hidden=!w;s.classList.toggle('wide',w)};f();\
addEventListener('resize',f)}";

/// The HTML report.
pub struct HtmlReport;

impl Exporter for HtmlReport {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn per_batch(&self) -> bool {
        false
    }

    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        let mut out = String::new();
        head(&mut out, run);
        pick_and_reading(&mut out, run);
        page_links(&mut out, run);
        let rendered = if run.charts.series.is_empty() {
            Vec::new()
        } else {
            charts::render(run, &run.charts)?
        };
        for (i, t) in tables(run).iter().enumerate() {
            table(&mut out, run, t, true);
            if i == 0 && !run.charts.series.is_empty() {
                charts_section(&mut out, run, &rendered);
            }
        }
        examples(&mut out, run);
        glossary_config_notes(&mut out, run);
        Ok(out.into_bytes())
    }
}

/// The title, whether the run is complete, the dataset, and the episodes a failed call left out.
fn head(out: &mut String, run: &RunReport) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ctxbench report: {0}</title>\
         <style>{STYLE}</style></head><body>\n<h1>ctxbench report: {0}</h1>\n",
        escape(&run.run)
    );
    if !run.complete {
        out.push_str("<p class=\"warn\"><b>Incomplete run</b>: these results cover only the episodes that finished.</p>\n");
    }
    let _ = writeln!(out, "<p>{}</p>", escape(&super::dataset_line(run)));
    if !run.failed.is_empty() {
        let _ = write!(
            out,
            "<p class=\"warn\"><b>{} episode(s) left out of every figure</b>: an LLM call failed after its \
             retries (--keep-going). <code>ctxbench run --resume</code> tries them again.</p>\n<ul>",
            run.failed.len()
        );
        for f in &run.failed {
            let _ = write!(
                out,
                "<li><code>{}</code>: {}</li>",
                escape(&f.episode),
                escape(&f.error)
            );
        }
        out.push_str("</ul>\n");
    }
}

/// What to pick, and how to read the comparison (with where each strategy lost most).
fn pick_and_reading(out: &mut String, run: &RunReport) {
    if let Some(r) = &run.recommendation {
        // A pick in green; a result without one set apart, in grey, so that neither is mistaken for the other.
        let class = if r.strategy.is_some() {
            "pick"
        } else {
            "nopick"
        };
        let _ = writeln!(
            out,
            "<h2>What to pick</h2>\n<p class=\"{class}\">{}</p>",
            inline(&r.text)
        );
        if !r.verdicts.is_empty() {
            table(out, run, &super::recommend::verdict_table(r), false);
        }
    }
    let reading = super::reading::reading(run);
    if !reading.is_empty() {
        out.push_str("<h2>Reading</h2>\n<ul>");
        let worst = explorer::worst(run);
        for line in reading {
            let _ = write!(out, "<li>{}", inline(&line.text));
            if let Some((_, at, what)) = worst
                .iter()
                .find(|(s, _, _)| line.strategy.as_deref() == Some(s.as_str()))
            {
                let _ = write!(out, " It lost most in {} ({}).", link(at), escape(what));
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>\n");
        if explorer::pages_missing(run) {
            let _ = writeln!(out, "<p class=\"hint\">{}</p>", inline(explorer::SHOW_HINT));
        }
    }
}

/// The episode pages written, linked.
fn page_links(out: &mut String, run: &RunReport) {
    let pages = super::page_list(run);
    if !pages.is_empty() {
        out.push_str("<h2>Episode pages</h2>\n<p>What each strategy sent, call point by call point:</p>\n<ul>");
        for (episode, href, shows) in &pages {
            let _ = write!(
                out,
                "<li><a href=\"{}\"><code>{}</code></a>: {}</li>",
                escape(href),
                escape(episode),
                escape(shows)
            );
        }
        out.push_str("</ul>\n");
    }
}

/// A table (under its title as a heading when `titled`), its figures aligned right and its episode cells
/// linked to their pages.
fn table(out: &mut String, run: &RunReport, t: &Table, titled: bool) {
    if titled {
        let _ = writeln!(out, "<h2>{}</h2>", escape(&t.title));
    }
    out.push_str("<div class=\"scroll\"><table><thead><tr>");
    let figures = t.figure_columns();
    let class = |c: usize| if figures[c] { " class=\"n\"" } else { "" };
    for (c, h) in t.headers.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(c), escape(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (c, cell) in row.iter().enumerate() {
            match &cell.kind {
                Kind::Episode { strategy, finding } => {
                    let at = EpisodeRef::new(run, &cell.text, strategy, finding);
                    let _ = write!(out, "<td>{}</td>", link(&at));
                }
                _ => {
                    let _ = write!(out, "<td{}>{}</td>", class(c), inline(&cell.text));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if let Some(n) = &t.note {
        let _ = writeln!(out, "<p>{}</p>", inline(n));
    }
}

/// The charts, inlined, each left out said why.
fn charts_section(out: &mut String, run: &RunReport, rendered: &[(String, String)]) {
    let episode = EpisodeRef::new(run, &run.charts.episode, "", "");
    let _ = writeln!(
        out,
        "<h2>Charts</h2>\n<p>Per call point of {}, the episode with the largest baseline context, then over \
         the dataset.</p>",
        link(&episode)
    );
    for name in charts::CHARTS {
        let file = format!("{name}.svg");
        match rendered.iter().find(|(f, _)| *f == file) {
            Some((_, svg)) => {
                let _ = writeln!(out, "<div class=\"chart\" id=\"{name}\">{svg}</div>");
            }
            None => {
                let why = charts::left_out(name, run, &run.charts).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "<p class=\"left-out\" id=\"{name}\">{}</p>",
                    inline(&why)
                );
            }
        }
    }
}

/// One summary per summarizing strategy, as its model wrote it.
fn examples(out: &mut String, run: &RunReport) {
    if !run.examples.is_empty() {
        out.push_str("<h2>What the summarizing strategies' model wrote</h2>\n<p>One example per strategy: its first summary, in dataset order (every call is in llm_calls.jsonl).</p>\n");
        for e in &run.examples {
            let _ = writeln!(
                out,
                "<p><b>{}</b>, episode {}, {} ({}):</p>\n<pre>{}</pre>",
                escape(&e.strategy),
                link(&EpisodeRef::new(run, &e.episode, &e.strategy, "")),
                e.step.map_or_else(
                    || "after the last call point".to_owned(),
                    |s| format!("call point {s}")
                ),
                escape(&super::example_model(run, &e.model)),
                escape(&e.text)
            );
        }
    }
}

/// The glossary, the configuration, the notes and the page's script.
fn glossary_config_notes(out: &mut String, run: &RunReport) {
    out.push_str("<h2>Glossary</h2>\n<dl>");
    for (term, definition) in super::glossary::GLOSSARY {
        let _ = write!(
            out,
            "<dt>{}</dt><dd>{}</dd>",
            escape(term),
            inline(definition)
        );
    }
    out.push_str("</dl>\n<h2>Columns of the files</h2>\n");
    for (file, columns) in super::glossary::file_columns() {
        let _ = write!(
            out,
            "<p><code>{file}</code>, after its identity columns:</p>\n<div class=\"scroll\"><table><thead><tr>\
             <th>column</th><th>unit</th><th>meaning</th></tr></thead><tbody>\n"
        );
        for c in columns {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                escape(&c.name),
                escape(c.unit.as_str()),
                inline(&c.doc)
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    let _ = write!(
        out,
        "<h2>Configuration</h2>\n<pre>{}</pre>\n<h2>Notes</h2>\n<ul>",
        escape(&serde_json::to_string_pretty(&run.config).unwrap_or_default())
    );
    for n in &run.notes {
        let _ = write!(out, "<li>{}</li>", inline(n));
    }
    let _ = write!(out, "</ul>\n<script>{SCRIPT}</script>\n</body></html>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_are_set_as_code() {
        assert_eq!(
            inline("add `[llm]` to <the> config"),
            "add <code>[llm]</code> to &lt;the&gt; config"
        );
        assert_eq!(inline("a ` alone"), "a ` alone");
    }
}
