//! The tables every human-readable report shares (Markdown, HTML, the console), built from the strategies'
//! figures by field name and from what the analysis decided of them (the intervals each figure shows, the
//! general sentences the data supports). A table with no row is left out.

pub use super::document::Table;
use super::document::{col, share, share_ci, stat, strategy, Cell, Col, Row};
use super::{pct, RunReport};
use crate::metrics::intervals::PairedDifference;
use crate::metrics::{fields as field, FieldKey};

pub(super) fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |v| format!("${v:.4}"))
}

/// `n` with thousands separators: `1,623,490`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The rows of the run's strategy tables: each strategy's figures with its assessment.
#[must_use]
pub fn rows(run: &RunReport) -> Vec<Row<'_>> {
    run.strategies
        .iter()
        .map(|metrics| Row {
            metrics,
            assessment: run.analysis.of(&metrics.strategy),
        })
        .collect()
}

/// The main comparison.
#[must_use]
pub fn comparison<'r>(rows: &[Row<'r>], mock_summaries: bool) -> Table {
    let cols: [Col<'_, Row<'r>>; 14] = [
        strategy(),
        share("savings", field::SAVINGS),
        stat("input tokens", |s| {
            Cell::thousands(s.count(field::INPUT_TOKENS))
        }),
        stat("peak", |s| Cell::thousands(s.count(field::PEAK_TOKENS))),
        stat("requests over window", |s| {
            Cell::thousands(s.count(field::STEPS_OVER_WINDOW))
        }),
        stat("LLM calls", |s| Cell::count(s.count(field::STRATEGY_CALLS))),
        stat("cost", |s| Cell::usd(s.number(field::COST_USD))),
        share("cost saved", field::COST_SAVINGS),
        share("retention at need", field::RETENTION_AT_NEED),
        share("first need", field::RETENTION_FIRST_NEED),
        share("final retention", field::FINAL_RETENTION),
        share("mean retention", field::MEAN_RETENTION),
        share("probe retention", field::PROBE_RETENTION),
        share("probe accuracy", field::PROBE_ACCURACY),
    ];
    let mut note = "Savings = 1 − input tokens / baseline input tokens over all call points. Requests over \
                    window are failures: a provider refuses them, and a strategy that sends one is never \
                    recommended. Cost includes the agent's calls (cached prefix priced as cached input) and the \
                    strategy's own LLM calls. Retention at need: of the findings the agent found (in a tool \
                    output, an observation, an earlier turn; not the task's), the share of (finding, need) \
                    pairs whose evidence is in the request at the call point where the agent needs the \
                    finding (findings.csv lists each pair); first need: the share kept where each is needed \
                    first. Probe retention: of the probes the unreduced context answers right, the share this \
                    strategy's request answers too; probe accuracy counts every probe, so it measures the \
                    answerer as much as the reduction."
        .to_owned();
    if mock_summaries {
        note.push_str(
            " Summaries in this run are the mock LLM's, which are extractive (they copy history lines), so a \
             summarizing strategy's retention here is what a summary that keeps every line it copies would \
             score; a real model's figure comes from a run with `[llm]` in the config.",
        );
    }
    Table::of("Comparison", &cols, rows, Some(note))
}

/// Retention of found findings (at every need and at the first) and of task-given ones, with intervals, and
/// the episodes the headline leaves out.
fn origins<'r>(run: &RunReport, rows: &[Row<'r>]) -> Table {
    let first = run.strategies.first();
    let episodes = first.map_or(0, |s| s.episodes);
    let without = first.and_then(|s| s.count(field::EPISODES_WITHOUT_FOUND_NEEDS));
    let mut note = "Found findings are those the agent found in a tool output, an observation or an earlier \
                    turn; task-given ones are in the task or its first user message, which no strategy that keeps \
                    the first user message can lose: they are reported apart, not in the headline. First need: \
                    each found finding at the first call point where the agent uses it, before it could have \
                    restated it."
        .to_owned();
    if let Some(without) = without.filter(|&w| w > 0) {
        note.push_str(&format!(
            " {without} of {episodes} episodes have no found finding needed at a call point: retention at need \
             leaves them out (pooled over pairs, they add nothing; episodes.csv shows their figure as empty, \
             not 100%)."
        ));
    }
    if first.and_then(|s| s.count(field::NEEDS_TASK)) == Some(0) {
        note.push_str(" No finding of these episodes is task-given.");
    }
    let cols: [Col<'_, Row<'r>>; 7] = [
        strategy(),
        stat("found needs", |s| Cell::count(s.count(field::NEEDS))),
        share_ci("retention at need", field::RETENTION_AT_NEED, |i| {
            i.retention
        }),
        stat("findings at first need", |s| {
            Cell::count(s.count(field::FIRST_NEEDS))
        }),
        share_ci("first need", field::RETENTION_FIRST_NEED, |i| i.first_need),
        stat("task-given needs", |s| {
            Cell::count(s.count(field::NEEDS_TASK))
        }),
        share_ci(
            "task-given retention at need",
            field::RETENTION_AT_NEED_TASK,
            |i| i.task,
        ),
    ];
    Table::of("Found and task-given findings", &cols, rows, Some(note))
}

/// Where each strategy acted (from its first act on in each episode), and its figures there beside the pooled
/// ones.
fn acted_table<'r>(rows: &[Row<'r>]) -> Table {
    Table::of(
        "Where each strategy acted",
        &[
            strategy(),
            stat("acted on", |s| {
                Cell::figure(match s.count(field::EPISODES_ACTED) {
                    Some(n) => format!("{n} of {}", s.episodes),
                    None => "–".to_owned(),
                })
            }),
            share("savings there", field::SAVINGS_ACTED),
            share("cost saved there", field::COST_SAVINGS_ACTED),
            stat("needs there", |s| Cell::count(s.count(field::NEEDS_ACTED))),
            share_ci(
                "retention at need there",
                field::RETENTION_AT_NEED_ACTED,
                |i| i.retention_acted,
            ),
            share("first need there", field::RETENTION_FIRST_NEED_ACTED),
            share("savings, all episodes", field::SAVINGS),
            share("retention at need, all episodes", field::RETENTION_AT_NEED),
        ],
        rows.iter().filter(|r| !r.baseline),
        Some(
            "A strategy acts on an episode when it changes the request at least once; there, its figures count \
             from the call point where it first did (before it, it sends what no reduction sends). Pooled \
             figures mix those call points and episodes with the ones it left alone."
                .into(),
        ),
    )
}

/// Each strategy's headline figures with their intervals.
fn intervals_table<'r>(rows: &[Row<'r>], min_episodes: u64) -> Table {
    Table::of(
        "Uncertainty (95% intervals over episodes)",
        &[
            strategy(),
            share_ci("savings", field::SAVINGS, |i| i.savings),
            share_ci("cost saved", field::COST_SAVINGS, |i| i.cost_savings),
            share_ci("retention at need", field::RETENTION_AT_NEED, |i| i.retention),
            share_ci("first need", field::RETENTION_FIRST_NEED, |i| i.first_need),
        ],
        rows.iter().filter(|r| !r.baseline),
        Some(format!(
            "Savings and cost saved: a paired Poisson bootstrap of {} replicates; each replicate weighs every \
             episode by a Poisson(1) draw seeded by the episode's id, so the baseline and every strategy see the \
             same resampled episodes and a mock run is byte-identical; an interval is the 2.5th and 97.5th \
             percentiles. Retention: a share of (finding, need) pairs, clustered by episode: Wilson's interval \
             on the pairs, widened by the episodes' design effect, with Student's t for few episodes, and every \
             episode counted as one pair where fewer than two lost a need (docs/intervals.md). Under {} \
             episodes (--min-episodes) no interval is given. A difference inside an interval may be noise.",
            crate::metrics::bootstrap::REPLICATES,
            min_episodes
        )),
    )
}

/// Cost with and without a prompt cache.
fn costs_table<'r>(rows: &[Row<'r>], cache_cost: bool) -> Table {
    let mut note = "With a cache, the prefix a request shares with the previous one is read at the cached price \
                    and the rest written at the model's cache-write price (Anthropic: 1.25× input), for requests \
                    at least the model's minimum cacheable length (pricing.toml). Without a cache, every input \
                    token is paid in full."
        .to_owned();
    if cache_cost {
        note.push_str(
            " Here some strategies save less money than tokens: rewriting the start of the context loses the \
             cache.",
        );
    }
    Table::of(
        "Cost with and without a prompt cache",
        &[
            strategy(),
            stat("cost (cache)", |s| Cell::usd(s.number(field::COST_USD))),
            share("cost saved (cache)", field::COST_SAVINGS),
            stat("cost (no cache)", |s| {
                Cell::usd(s.number(field::COST_USD_NO_CACHE))
            }),
            share("cost saved (no cache)", field::COST_SAVINGS_NO_CACHE),
        ],
        rows,
        Some(note),
    )
}

/// Points of a share, signed (`+1.5 pts`), never `-0.0`.
fn points(v: f64) -> String {
    let text = format!("{:+.1}", v * 100.0);
    if text == "-0.0" || text == "+0.0" {
        "0.0".to_owned()
    } else {
        text
    }
}

/// The paired differences between neighbours on the Pareto frontier.
fn frontier_table(run: &RunReport) -> Table {
    let yes_no = |b: bool| Cell::text(if b { "yes" } else { "no" });
    let value = |v: Option<f64>| {
        Cell::figure(v.map_or_else(|| "–".into(), |v| format!("{} pts", points(v))))
    };
    let interval = |v: Option<(f64, f64)>| {
        Cell::figure(v.map_or_else(
            || "–".into(),
            |(lo, hi)| format!("[{}, {}]", points(lo), points(hi)),
        ))
    };
    Table::of(
        "Neighbours on the frontier (paired differences, second − first)",
        &[
            col("from", |d: &PairedDifference| Cell::text(&d.a)),
            col("to", |d: &PairedDifference| Cell::text(&d.b)),
            col("retention at need", move |d: &PairedDifference| value(d.retention_at_need)),
            col("95% interval", move |d: &PairedDifference| interval(d.retention_at_need_ci95)),
            col("excludes 0", move |d: &PairedDifference| yes_no(d.retention_differs())),
            col("cost saved", move |d: &PairedDifference| value(d.cost_savings)),
            col("95% interval", move |d: &PairedDifference| interval(d.cost_savings_ci95)),
            col("excludes 0", move |d: &PairedDifference| yes_no(d.cost_differs())),
        ],
        &run.comparisons,
        Some(
            "Strategies on the Pareto frontier of savings and retention at need, each against the next one that \
             saves more: what the extra saving costs in findings, on the same resampled episodes (paired \
             bootstrap). An interval that includes 0 means the data cannot tell the two apart."
                .into(),
        ),
    )
}

/// A table of one keyed field (a value per kind) of every strategy; no column but the strategy's when the
/// results have no kind (it is then left out).
fn keyed<'r>(rows: &[Row<'r>], key: FieldKey, title: &str, note: Option<String>) -> Table {
    let kinds: Vec<String> = rows
        .first()
        .map(|s| s.keyed(key).iter().map(|(k, _)| (*k).to_owned()).collect())
        .unwrap_or_default();
    let mut cols = vec![strategy()];
    cols.extend(kinds.into_iter().map(|k| {
        col(k.clone(), move |s: &Row<'r>| {
            Cell::share(
                s.keyed(key)
                    .iter()
                    .find(|(name, _)| *name == k)
                    .and_then(|(_, v)| *v),
            )
        })
    }));
    if cols.len() == 1 {
        return Table::of(title, &cols, std::iter::empty(), note);
    }
    Table::of(title, &cols, rows, note)
}

/// The sentence under the retention-by-kind table: which kind was kept least, as the run's data says.
fn weakest_note(run: &RunReport) -> Option<String> {
    let (kind, most, of) = run.analysis.claims.weakest_kind.as_ref()?;
    Some(if kind == "artifact" {
        format!(
            "Artifact trails (a file and what was done to it) are where compressors are weakest here: the kind \
             kept least by {most} of the {of} strategies that acted."
        )
    } else {
        format!("{kind} findings are kept least here: the lowest kind for {most} of the {of} strategies that acted.")
    })
}

/// The sentence under the token-share table: how much of the input tool output is, as the run's data says.
fn tool_output_note(run: &RunReport) -> Option<String> {
    let (tool, largest, share) = run.analysis.claims.tool_output.as_ref()?;
    Some(if *tool >= 0.5 {
        format!(
            "Tool results are most of this run's input ({} of the baseline's tokens): they bound what masking \
             them can save.",
            pct(Some(*tool))
        )
    } else {
        format!(
            "Tool results are {} of the baseline's tokens here, and the largest part is `{largest}` ({}): \
             masking tool output can save at most about {}.",
            pct(Some(*tool)),
            pct(Some(*share)),
            pct(Some(*tool))
        )
    })
}

/// Every table of a run report with a row, in order.
#[must_use]
pub fn tables(run: &RunReport) -> Vec<Table> {
    let rows = rows(run);
    let claims = &run.analysis.claims;
    let llm = Table::of(
        "Strategy LLM use",
        &[
            strategy(),
            stat("calls", |s| Cell::count(s.count(field::STRATEGY_CALLS))),
            stat("failures", |s| {
                Cell::count(s.count(field::STRATEGY_FAILURES))
            }),
            stat("input tokens", |s| {
                Cell::count(s.count(field::STRATEGY_INPUT_TOKENS))
            }),
            stat("output tokens", |s| {
                Cell::count(s.count(field::STRATEGY_OUTPUT_TOKENS))
            }),
            stat("LLM time (s)", |s| {
                Cell::figure(
                    s.number(field::STRATEGY_LLM_MS)
                        .map_or_else(|| "–".to_owned(), |ms| format!("{:.1}", ms / 1000.0)),
                )
            }),
        ],
        &rows,
        None,
    );
    let mut out = vec![
        comparison(&rows, claims.mock_summaries),
        origins(run, &rows),
        keyed(
            &rows,
            field::RETENTION_AT_NEED_BY_KIND,
            "Retention at need by finding kind (found findings)",
            weakest_note(run),
        ),
        keyed(
            &rows,
            field::TOKEN_SHARE,
            "Token share by item type (of all input tokens sent)",
            tool_output_note(run),
        ),
        llm,
        acted_table(&rows),
        intervals_table(&rows, run.analysis.rule.min_episodes),
        costs_table(&rows, claims.cache_cost),
        frontier_table(run),
        super::detail::judge(run, &rows),
    ];
    out.extend(super::detail::losses(run, &rows));
    out.retain(|t| !t.rows.is_empty());
    out
}

/// The main comparison table of `run`, aligned for a terminal.
#[must_use]
pub fn comparison_table(run: &RunReport) -> String {
    comparison(&rows(run), run.analysis.claims.mock_summaries).to_console()
}
