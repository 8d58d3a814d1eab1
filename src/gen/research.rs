//! Research agent: web searches, long pages with facts buried inside, notes written to files.

use serde_json::json;

use super::{event_turns, paragraph, plant, Builder, Rng};
use crate::history::{FindingKind, Item};

const TOPICS: [&str; 10] = [
    "lithium-ion battery recycling",
    "urban heat islands",
    "coral reef bleaching",
    "heat pump adoption",
    "antibiotic resistance in farming",
    "remote work productivity",
    "desalination energy costs",
    "microplastics in drinking water",
    "offshore wind capacity",
    "rural broadband access",
];
const ORGS: [&str; 10] = [
    "IEA",
    "OECD",
    "Eurostat",
    "WHO",
    "NOAA",
    "World Bank",
    "Pew Research",
    "UNEP",
    "Fraunhofer ISE",
    "IPCC",
];
const METRICS: [&str; 8] = [
    "the recovery rate",
    "the installed base",
    "the median cost",
    "the adoption share",
    "the annual growth",
    "the measured concentration",
    "the average capacity factor",
    "the reported incidence",
];
const SITES: [&str; 8] = [
    "example-journal.org",
    "energy-watch.net",
    "statistics-hub.eu",
    "science-daily.example",
    "policy-review.org",
    "datadesk.example",
    "climate-notes.net",
    "field-reports.org",
];

const SYSTEM: &str = "You are a research assistant. Tools: web_search(query) returns result titles, URLs and \
snippets; fetch_page(url) returns the page text; run_python(code) runs a calculation; write_file(path, text) \
saves notes. Cite primary sources, prefer official statistics, and keep exact figures with their year.";

fn results(rng: &mut Rng, query: &str, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{}. {} — {}\n   https://{}/{}/{}\n   {}",
                i + 1,
                query,
                rng.pick(&["overview", "new data", "analysis", "report", "explainer"]),
                rng.pick(&SITES),
                rng.range(2015, 2025),
                rng.hex(8),
                super::sentence(rng)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn page(rng: &mut Rng, lo: usize, hi: usize) -> Vec<String> {
    let paragraphs = rng.range(lo, hi);
    (0..paragraphs)
        .map(|_| {
            let n = rng.range(2, 6);
            paragraph(rng, n)
        })
        .collect()
}

/// One research episode of `turns` tool turns.
#[allow(clippy::too_many_lines)] // a script of one episode, data read top to bottom
pub fn episode(rng: &mut Rng, index: usize, turns: usize) -> crate::Episode {
    let topic = *rng.pick(&TOPICS);
    let org = *rng.pick(&ORGS);
    let org2 = *rng.pick(
        &ORGS
            .iter()
            .copied()
            .filter(|o| *o != org)
            .collect::<Vec<_>>(),
    );
    let metric = *rng.pick(&METRICS);
    let metric2 = *rng.pick(
        &METRICS
            .iter()
            .copied()
            .filter(|m| *m != metric)
            .collect::<Vec<_>>(),
    );
    let year = rng.range(2018, 2024);
    let value = format!("{}.{} percent", rng.range(5, 95), rng.range(0, 9));
    let pct = rng.range(3, 60);
    let slug = topic.replace(' ', "-");
    let verbosity = [1usize, 2, 1, 3, 2][index % 5];
    let task = format!(
        "Write a short brief on {topic} with the latest official figures and their sources"
    );
    let mut b = Builder::new(format!("research-{index:02}"), "gen/research", task.clone());
    b.meta("family", json!("research"));
    b.push(Item::system(SYSTEM));
    b.push(Item::user(format!(
        "{task}. I need numbers I can quote, with the organisation and year for each."
    )));
    let events = event_turns(turns, &[20, 40, 50, 70, 88]);
    // Findings by role, once introduced.
    let (mut first, mut second, mut primary, mut notes, mut check) = (None, None, None, None, None);
    for t in 0..turns {
        if t == events[0] {
            let url = format!("https://{}/{year}/{}", rng.pick(&SITES), rng.hex(8));
            b.push(Item::assistant(format!(
                "Reading the {org} page on {topic}."
            )));
            let mut lines = page(rng, 12 * verbosity + 4, 12 * verbosity + 20);
            let fact = format!("According to the {org} {year} survey, {metric} reached {value} across the surveyed regions.");
            plant(rng, &mut lines, fact, 60, 95);
            let at = b.tool("fetch_page", &json!({ "url": url }), lines.join("\n\n"));
            first = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("{metric} reached {value} ({org} {year})"),
                vec![format!("{metric} reached {value}")],
                format!("What figure did the {org}'s {year} survey report?"),
                value.clone(),
            ));
        } else if t == events[1] {
            b.push(Item::assistant(format!(
                "Looking for a second source on {metric2}."
            )));
            let mut lines = page(rng, 10 * verbosity + 4, 10 * verbosity + 16);
            let fact = format!(
                "{org2} data show that {metric2} fell by {pct}% between {} and {year}.",
                year - 5
            );
            plant(rng, &mut lines, fact, 40, 90);
            let at = b.tool(
                "fetch_page",
                &json!({ "url": format!("https://{}/data/{}", rng.pick(&SITES), rng.hex(6)) }),
                lines.join("\n\n"),
            );
            second = Some(b.finding(
                FindingKind::Recall,
                at,
                format!("{metric2} fell by {pct}% ({org2})"),
                vec![format!("{metric2} fell by {pct}%")],
                format!(
                    "How much of a drop did the {org2} data show between {} and {year}?",
                    year - 5
                ),
                format!("{pct}%"),
            ));
        } else if t == events[2] {
            let text = format!(
                "Decision: treat the {org} survey as the primary source because it is the only one with a documented sampling method."
            );
            let at = b.push(Item::assistant(text));
            b.tool(
                "web_search",
                &json!({ "query": format!("{org} {topic} methodology") }),
                results(rng, topic, 6),
            );
            primary = Some(b.finding(
                FindingKind::Decision,
                at,
                format!("{org} survey is the primary source"),
                vec![format!("the {org} survey as the primary source")],
                "Whose study, with its documented sampling method, did the agent choose to rely on?"
                    .into(),
                format!("the {org} survey as the primary source"),
            ));
        } else if t == events[3] {
            for f in [first, second, primary].into_iter().flatten() {
                b.need(f);
            }
            b.push(Item::assistant(
                "Saving the figures gathered so far to the notes file.".to_string(),
            ));
            let path = format!("notes/{slug}.md");
            let at = b.tool(
                "write_file",
                &json!({ "path": path, "text": format!("# {topic}\n- {metric} reached {value} ({org} {year})\n- {metric2} fell by {pct}% between {} and {year} ({org2} data)\n- method: the {org} survey as the primary source", year - 5) }),
                format!("Wrote {} bytes to {path}", rng.range(200, 3000)),
            );
            notes = Some(b.finding(
                FindingKind::Artifact,
                at,
                format!("notes saved to {path}"),
                vec![path.clone()],
                format!("Where are the agent's notes on {topic} kept?"),
                path.clone(),
            ));
        } else if t == events[4] {
            let at = b.push(Item::assistant(format!(
                "Before the brief is final, {metric2} figure has to be checked against the {org2} raw tables."
            )));
            b.tool(
                "web_search",
                &json!({ "query": format!("{org2} {metric2} raw data") }),
                results(rng, topic, 8),
            );
            check = Some(b.finding(
                FindingKind::Continuation,
                at,
                format!("check {metric2} against the {org2} raw tables"),
                vec![format!(
                    "{metric2} figure has to be checked against the {org2} raw tables"
                )],
                "What must still happen before the brief is final?".into(),
                format!("{org2} raw tables"),
            ));
        } else {
            match rng.range(0, 5) {
                0 | 1 => {
                    let q = format!(
                        "{topic} {}",
                        rng.pick(&["statistics", "trend", "2024", "report", "study"])
                    );
                    b.push(Item::assistant(format!("Searching for \"{q}\".")));
                    let n = rng.range(5, 10);
                    b.tool("web_search", &json!({ "query": q }), results(rng, &q, n));
                }
                2..=4 => {
                    b.push(Item::assistant("Reading one of the results.".to_string()));
                    let lines = page(rng, 6 * verbosity + 3, 6 * verbosity + 30);
                    b.tool(
                        "fetch_page",
                        &json!({ "url": format!("https://{}/{}", rng.pick(&SITES), rng.hex(10)) }),
                        lines.join("\n\n"),
                    );
                }
                _ => {
                    b.push(Item::assistant(
                        "Computing the change between the two years.".to_string(),
                    ));
                    let (a, c) = (rng.range(100, 999), rng.range(100, 999));
                    b.tool(
                        "run_python",
                        &json!({ "code": format!("print(({c} - {a}) / {a} * 100)") }),
                        format!("{:.2}", (c as f64 - a as f64) / a as f64 * 100.0),
                    );
                }
            }
        }
    }
    for f in [first, second, primary, notes, check].into_iter().flatten() {
        b.need(f);
    }
    if let Some(f) = first {
        b.open_probe(
            f,
            FindingKind::Recall,
            format!("What did the {org} survey find?"),
            format!("{metric} reached {value} ({org} {year})"),
        );
    }
    if let Some(f) = notes {
        b.open_probe(
            f,
            FindingKind::Artifact,
            "Which files did the agent write, and what is in them?".into(),
            format!(
                "notes/{slug}.md: {metric} {value} ({org} {year}) and {metric2} -{pct}% ({org2})"
            ),
        );
    }
    if let Some(f) = primary {
        b.open_probe(
            f,
            FindingKind::Decision,
            "Which source did the agent decide to rely on first, and why?".into(),
            format!("The {org} survey, the only one with a documented sampling method"),
        );
    }
    if let Some(f) = check {
        b.open_probe(
            f,
            FindingKind::Continuation,
            "What is left to do before the brief can go out?".into(),
            format!("Check {metric2} figure against the {org2} raw tables"),
        );
    }
    b.push(Item::assistant(format!(
        "Brief drafted from the {org} survey as the primary source: {metric} reached {value} ({org} {year}); {metric2} fell by {pct}% ({org2}), {metric2} figure has to be checked against the {org2} raw tables first. Notes are in notes/{slug}.md."
    )));
    b.finish()
}
