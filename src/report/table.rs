//! The tables every human-readable report shares (Markdown, HTML, the console), built from strategy metrics
//! by field name.

use std::fmt::Write as _;

pub use super::document::Table;
use super::document::{col, share, share_ci, stat, strategy, Cell, Col};
use super::{pct, RunReport};
use crate::metrics::intervals::PairedDifference;
use crate::metrics::{fields as field, FieldKey, StrategyMetrics};

pub(super) fn usd(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |v| format!("${v:.4}"))
}

/// The main comparison.
#[must_use]
pub fn comparison(strategies: &[StrategyMetrics]) -> Table {
    let cols: [Col<'_, StrategyMetrics>; 14] = [
        strategy(),
        share("savings", field::SAVINGS),
        stat("input tokens", |s| {
            Cell::thousands(s.count(field::INPUT_TOKENS))
        }),
        stat("peak", |s| Cell::thousands(s.count(field::PEAK_TOKENS))),
        stat("steps over window", |s| {
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
    Table::of(
        "Comparison",
        &cols,
        strategies,
        Some(
            "Savings = 1 − input tokens / baseline input tokens over all call points. Cost includes the agent's \
             calls (cached prefix priced as cached input) and the strategy's own LLM calls. Retention at need: \
             of the findings the agent found (in a tool output, an observation, an earlier turn; not the \
             task's), the share of (finding, need) pairs whose evidence is in the request at the call point \
             where the agent needs the finding (findings.csv lists each pair); first need: the share kept where \
             each is needed first. Probe retention: of the probes the \
             unreduced context answers right, the share this strategy's request answers too; probe accuracy \
             counts every probe, so it measures the answerer as much as the reduction."
                .into(),
        ),
    )
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

/// A `[lo, hi]` share interval as `[a%, b%]`, or `–`.
fn ci(v: &serde_json::Value) -> String {
    match v.as_array().map(|a| {
        (
            a.first().and_then(serde_json::Value::as_f64),
            a.get(1).and_then(serde_json::Value::as_f64),
        )
    }) {
        Some((Some(lo), Some(hi))) => format!("[{:.1}%, {:.1}%]", lo * 100.0, hi * 100.0),
        _ => "–".into(),
    }
}

/// A share with its interval (the field `value` with the field `ci95`): `63.2% [61.0%, 65.4%]`.
pub(crate) fn with_ci(s: &StrategyMetrics, value: FieldKey, ci95: FieldKey) -> String {
    match s.number(value) {
        Some(v) => format!("{} {}", pct(Some(v)), ci(s.get(ci95))),
        None => pct(None),
    }
}

/// A line of the report's reading: about one strategy, or about the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The strategy the line is about (the HTML report adds where it lost most).
    pub strategy: Option<String>,
    /// The line, in Markdown.
    pub text: String,
}

impl Line {
    fn about_run(text: String) -> Self {
        Self {
            strategy: None,
            text,
        }
    }
}

/// How to read the comparison: what counted the tokens and what the trace left out, one sentence per strategy
/// on what it does where it acts (from the acted-on figures), then what was found and what is unpriced.
#[must_use]
pub fn reading(run: &RunReport) -> Vec<Line> {
    // The largest request any strategy was handed is the baseline's peak.
    let peak = run
        .strategies
        .iter()
        .map(|s| s.count(field::PEAK_TOKENS))
        .max()
        .unwrap_or(0);
    let mut lines: Vec<Line> = fidelity_lines(run)
        .into_iter()
        .map(Line::about_run)
        .collect();
    lines.extend(run.strategies.iter().filter(|s| !s.baseline).map(|s| Line {
        strategy: Some(s.strategy.clone()),
        text: failed_in_framework(s) + &below_floor(s) + &strategy_reading(run, s, peak),
    }));
    lines.extend(found_line(run).map(Line::about_run));
    lines.extend(unpriced_line(run).map(Line::about_run));
    lines
}

/// Where the framework a strategy reproduces fails, on how many episodes; else nothing.
fn failed_in_framework(s: &StrategyMetrics) -> String {
    let failed = s.count(field::EPISODES_FAILED);
    if failed == 0 {
        return String::new();
    }
    format!(
        "`{}` fails {failed} of {} episodes as its framework does (it raises where it cannot bring a request \
         under its threshold; `failed_at_step` in episodes.csv, marked in the explorer): its figures there go on \
         as if the request had been sent, and it is never recommended. ",
        s.strategy, s.episodes
    )
}

/// Where a strategy's budget is below what it may not reduce, on how many episodes; else nothing.
fn below_floor(s: &StrategyMetrics) -> String {
    let below = s.count(field::EPISODES_BELOW_FLOOR);
    if below == 0 {
        return String::new();
    }
    format!(
        "`{}`'s budget ({} tokens) is below what no strategy may reduce (up to {} tokens of system prompt, tool \
         schemas, task and unrecorded context) on {below} of {} episodes: there it cannot bring a request under \
         it, and it is never recommended. ",
        s.strategy,
        thousands(s.count(field::BUDGET_TOKENS)),
        thousands(s.count(field::FLOOR_TOKENS)),
        s.episodes
    )
}

/// What a strategy did where it acted (savings and retention there, and over all episodes), or, where it never
/// acted, why and which window would show it acting.
fn strategy_reading(run: &RunReport, s: &StrategyMetrics, peak: u64) -> String {
    let acted = s.count(field::EPISODES_ACTED);
    if acted == 0 {
        return never_acted(run, s, peak);
    }
    // Where no found finding was needed on the episodes it acted on, there is no share to give.
    let kept = match s.number(field::RETENTION_AT_NEED_ACTED) {
        Some(r) => format!(
            "kept {} of found findings where they were needed, {} at their first need",
            pct(Some(r)),
            pct(s.number(field::RETENTION_FIRST_NEED_ACTED)),
        ),
        None => "no finding the agent found was needed there".to_owned(),
    };
    format!(
        "`{}` acted on {acted} of {} episodes; there it saved {} of input tokens and {} of cost, and {kept} \
         (over all episodes: {} saved, {} kept).",
        s.strategy,
        s.episodes,
        pct(s.number(field::SAVINGS_ACTED)),
        pct(s.number(field::COST_SAVINGS_ACTED)),
        pct(s.number(field::SAVINGS)),
        pct(s.number(field::RETENTION_AT_NEED)),
    )
}

/// A strategy that never changed a request: its figures are the baseline's, and the window that would show it
/// acting, if one would.
fn never_acted(run: &RunReport, s: &StrategyMetrics, peak: u64) -> String {
    let window = run.settings.context_window as u64;
    let why = if window > 0 {
        let hint = match suggested_window(run, &s.strategy, peak) {
            Some(w) => format!(
                "`--window {w}` (a window these contexts outgrow, over which its budget still holds what it \
                 may not reduce) shows what it would do"
            ),
            None => "no window makes it act with a budget that holds what it may not reduce (the system \
                     prompt, tool schemas, task and unrecorded context)"
                .to_owned(),
        };
        format!(
            " The largest request was {} tokens, {} of the {}-token window, under what makes it act; {hint}.",
            thousands(peak),
            pct(Some(peak as f64 / window as f64)),
            thousands(window),
        )
    } else {
        String::new()
    };
    format!(
        "`{}` never changed a request on these {} episodes: its figures are the baseline's.{why}",
        s.strategy, s.episodes
    )
}

/// Where a model's price is unknown, how to give it.
fn unpriced_line(run: &RunReport) -> Option<String> {
    if !run
        .strategies
        .iter()
        .any(|s| s.number(field::COST_USD).is_none())
    {
        return None;
    }
    let settings = &run.settings;
    let agent = (!settings.agent_model.is_empty()).then_some(settings.agent_model.as_str());
    let mut models: Vec<String> = [agent, settings.strategy_model.as_deref()]
        .into_iter()
        .flatten()
        .map(|m| format!("`[pricing.models.\"{m}\"]`"))
        .collect();
    models.dedup();
    Some(format!(
        "Cost is unknown where a model's price is not in pricing.toml: add {} to the config, with `input`, \
         `cached_input` and `output` in USD per million tokens.",
        if models.is_empty() {
            "`[pricing.models.\"MODEL\"]`".to_owned()
        } else {
            models.join(" or ")
        }
    ))
}

/// A window to suggest for `strategy`, which never acted: one whose budget for it lies between what it may not
/// reduce and the largest request (so that it acts, and can work), the nearest such to half the largest
/// request, in round thousands; half the largest request for a strategy without a budget; `None` when no
/// window does (a fixed budget below the floor, or a floor above the largest request's share).
fn suggested_window(run: &RunReport, strategy: &str, peak: u64) -> Option<u64> {
    let half = (peak / 2 / 1000 * 1000).max(1000);
    let floor = run
        .strategies
        .iter()
        .map(|s| s.count(field::FLOOR_TOKENS))
        .max()
        .unwrap_or(0);
    let strategies: Vec<crate::strategy::NamedStrategy> = run.settings.strategies.clone();
    let Some(config) = strategies.iter().find(|s| s.name == strategy) else {
        return Some(half);
    };
    let budget = |w: u64| {
        config
            .config
            .budget(usize::try_from(w).unwrap_or(usize::MAX))
    };
    if budget(half).is_none() {
        return Some(half);
    }
    // Windows up to 64 times the largest request, in thousands: budgets grow with the window or stay.
    (1..=(peak.max(1000) * 64 / 1000))
        .map(|k| k * 1000)
        .filter(|&w| budget(w).is_some_and(|b| (floor..peak).contains(&(b as u64))))
        .min_by_key(|&w| w.abs_diff(half))
}

/// Per source format, how the baseline replays against the usage its traces record, what they did not
/// record, and why a format is outside 0.97–1.03; and which tokenizer counted.
fn fidelity_lines(run: &RunReport) -> Vec<String> {
    let tokenizer = &run.tokenizer.name;
    let mut lines = Vec::new();
    if let Some(model) = &run.tokenizer.stands_in_for {
        lines.push(format!(
            "Tokens are counted with {tokenizer}, standing in for {model}'s own tokenizer (none is \
             published, or none was given: --tokenizer, --chat-template)."
        ));
    }
    for f in &run.fidelity {
        if f.with_usage == 0 {
            if let Some(cause) = f.cause(tokenizer) {
                lines.push(format!(
                    "{}: {} episode{}: {cause}.",
                    f.format,
                    f.episodes,
                    if f.episodes == 1 { "" } else { "s" }
                ));
            }
            continue;
        }
        let ratio = f
            .ratio()
            .map_or_else(|| "–".to_owned(), |r| format!("{r:.3}"));
        let worst = f
            .worst_call
            .map_or_else(String::new, |w| format!(", worst call {w:.3}"));
        let unrecorded = if f.unrecorded > 0 {
            format!(
                "; {} of the input is context the traces did not record ({}), sent by every strategy as \
                 the traces' usage says",
                pct(Some(f.unrecorded_share())),
                f.leaves_out.as_deref().unwrap_or("unrecorded context")
            )
        } else {
            String::new()
        };
        let cause = f
            .cause(tokenizer)
            .map_or_else(String::new, |c| format!("; outside 0.97–1.03: {c}"));
        lines.push(format!(
            "{}: {} of {} episodes record usage; the baseline replays {ratio} of the recorded input{worst}\
             {unrecorded}{cause}.",
            f.format, f.with_usage, f.episodes
        ));
    }
    lines
}

/// Retention of found findings (at every need and at the first) and of task-given ones, with intervals, and
/// the episodes the headline leaves out.
fn origins(run: &RunReport) -> Table {
    let episodes = run.strategies.first().map_or(0, |s| s.episodes);
    let without = run
        .strategies
        .first()
        .map_or(0, |s| s.count(field::EPISODES_WITHOUT_FOUND_NEEDS));
    let mut note = "Found findings are those the agent found in a tool output, an observation or an earlier \
                    turn; task-given ones are in the task or its first user message, which no strategy that keeps \
                    the first user message can lose: they are reported apart, not in the headline. First need: \
                    each found finding at the first call point where the agent uses it, before it could have \
                    restated it."
        .to_owned();
    if without > 0 {
        let _ = write!(
            note,
            " {without} of {episodes} episodes have no found finding needed at a call point: retention at need \
             leaves them out (pooled over pairs, they add nothing; episodes.csv shows their figure as empty, \
             not 100%)."
        );
    }
    if run
        .strategies
        .first()
        .is_some_and(|s| s.count(field::NEEDS_TASK) == 0)
    {
        note.push_str(" No finding of these episodes is task-given.");
    }
    let cols: [Col<'_, StrategyMetrics>; 7] = [
        strategy(),
        stat("found needs", |s| Cell::count(s.count(field::NEEDS))),
        share_ci(
            "retention at need",
            field::RETENTION_AT_NEED,
            field::RETENTION_AT_NEED_CI95,
        ),
        stat("findings at first need", |s| {
            Cell::count(s.count(field::FIRST_NEEDS))
        }),
        share_ci(
            "first need",
            field::RETENTION_FIRST_NEED,
            field::RETENTION_FIRST_NEED_CI95,
        ),
        stat("task-given needs", |s| {
            Cell::count(s.count(field::NEEDS_TASK))
        }),
        share_ci(
            "task-given retention at need",
            field::RETENTION_AT_NEED_TASK,
            field::RETENTION_AT_NEED_TASK_CI95,
        ),
    ];
    Table::of(
        "Found and task-given findings",
        &cols,
        &run.strategies,
        Some(note),
    )
}

/// What the headline leaves out: the episodes without a found finding needed at a call point, and the
/// task-given findings (with the lowest retention any strategy gave them), when there are any.
fn found_line(run: &RunReport) -> Option<String> {
    let first = run.strategies.first()?;
    let without = first.count(field::EPISODES_WITHOUT_FOUND_NEEDS);
    let task = first.count(field::NEEDS_TASK);
    if without == 0 && task == 0 {
        return None;
    }
    let mut line = String::new();
    if without > 0 {
        let _ = write!(
            line,
            "{without} of {} episodes have no finding the agent found needed at a call point: retention at need \
             leaves them out (pooled over pairs, they add nothing; their figure in episodes.csv is empty, not \
             100%).",
            first.episodes
        );
    }
    if task > 0 {
        let figures: Vec<(f64, &str)> = run
            .strategies
            .iter()
            .filter_map(|s| {
                Some((
                    s.number(field::RETENTION_AT_NEED_TASK)?,
                    s.strategy.as_str(),
                ))
            })
            .collect();
        let lowest = figures.iter().min_by(|a, b| a.0.total_cmp(&b.0));
        let same = figures.iter().all(|f| Some(f.0) == lowest.map(|l| l.0));
        if !line.is_empty() {
            line.push(' ');
        }
        let _ = write!(
            line,
            "Task-given findings (in the task or its first user message) are reported apart: {task} needs, {}.",
            match lowest {
                Some((r, _)) if same => format!("{} kept by every strategy", pct(Some(*r))),
                Some((r, s)) => format!("the lowest retention at need among them {} (`{s}`)", pct(Some(*r))),
                None => "none kept".to_owned(),
            }
        );
    }
    Some(line)
}

/// Where each strategy acted, uncertainty, both cost views, and the paired differences on the frontier.
fn defensible(run: &RunReport) -> Vec<Table> {
    vec![
        acted_table(run),
        intervals_table(run),
        costs_table(run),
        frontier_table(run),
        super::detail::judge(run),
    ]
}

/// Where each strategy acted, and its figures there beside the pooled ones.
fn acted_table(run: &RunReport) -> Table {
    Table::of(
        "Where each strategy acted",
        &[
            strategy(),
            stat("acted on", |s| {
                Cell::figure(format!("{} of {}", s.count(field::EPISODES_ACTED), s.episodes))
            }),
            share("savings there", field::SAVINGS_ACTED),
            share("cost saved there", field::COST_SAVINGS_ACTED),
            share("retention at need there", field::RETENTION_AT_NEED_ACTED),
            share("first need there", field::RETENTION_FIRST_NEED_ACTED),
            share("savings, all episodes", field::SAVINGS),
            share("retention at need, all episodes", field::RETENTION_AT_NEED),
        ],
        &run.strategies,
        Some(
            "A strategy acts on an episode when it changes the request at least once; pooled figures mix those \
             episodes with the ones it left alone."
                .into(),
        ),
    )
}

/// Each strategy's headline figures with their paired-bootstrap intervals.
fn intervals_table(run: &RunReport) -> Table {
    Table::of(
        "Uncertainty (95% paired-bootstrap intervals over episodes)",
        &[
            strategy(),
            share_ci("savings", field::SAVINGS, field::SAVINGS_CI95),
            share_ci("cost saved", field::COST_SAVINGS, field::COST_SAVINGS_CI95),
            share_ci("retention at need", field::RETENTION_AT_NEED, field::RETENTION_AT_NEED_CI95),
            share_ci("first need", field::RETENTION_FIRST_NEED, field::RETENTION_FIRST_NEED_CI95),
        ],
        &run.strategies,
        Some(format!(
            "Method: a Poisson bootstrap of {} replicates; each replicate weighs every episode by a Poisson(1) \
             draw seeded by the episode's id, so the baseline and every strategy see the same resampled episodes \
             (paired) and a mock run is byte-identical. An interval is the 2.5th and 97.5th percentiles of the \
             figure over the replicates. With few episodes, intervals are wide: a difference inside them may be \
             noise.",
            crate::metrics::bootstrap::REPLICATES
        )),
    )
}

/// Cost with and without a prompt cache.
fn costs_table(run: &RunReport) -> Table {
    Table::of(
        "Cost with and without a prompt cache",
        &[
            strategy(),
            stat("cost (cache)", |s| Cell::usd(s.number(field::COST_USD))),
            share("cost saved (cache)", field::COST_SAVINGS),
            stat("cost (no cache)", |s| Cell::usd(s.number(field::COST_USD_NO_CACHE))),
            share("cost saved (no cache)", field::COST_SAVINGS_NO_CACHE),
        ],
        &run.strategies,
        Some(
            "With a cache, the prefix a request shares with the previous one is read at the cached price and the \
             rest written at the model's cache-write price (Anthropic: 1.25× input), for requests at least the \
             model's minimum cacheable length (pricing.toml); a strategy that rewrites the start of the context \
             loses the cache, so it saves less money than tokens. Without a cache, every input token is paid in \
             full."
                .into(),
        ),
    )
}

/// The paired differences between neighbours on the Pareto frontier.
fn frontier_table(run: &RunReport) -> Table {
    let yes_no = |b: bool| Cell::text(if b { "yes" } else { "no" });
    let points = |v: Option<f64>| {
        Cell::figure(v.map_or_else(|| "–".into(), |v| format!("{:+.1} pts", v * 100.0)))
    };
    let interval = |v: Option<(f64, f64)>| {
        Cell::figure(v.map_or_else(
            || "–".into(),
            |(lo, hi)| format!("[{:+.1}, {:+.1}]", lo * 100.0, hi * 100.0),
        ))
    };
    Table::of(
        "Neighbours on the frontier (paired differences, second − first)",
        &[
            col("from", |d: &PairedDifference| Cell::text(&d.a)),
            col("to", |d: &PairedDifference| Cell::text(&d.b)),
            col("retention at need", move |d: &PairedDifference| points(d.retention_at_need)),
            col("95% interval", move |d: &PairedDifference| interval(d.retention_at_need_ci95)),
            col("excludes 0", move |d: &PairedDifference| yes_no(d.retention_differs())),
            col("cost saved", move |d: &PairedDifference| points(d.cost_savings)),
            col("95% interval", move |d: &PairedDifference| interval(d.cost_savings_ci95)),
            col("excludes 0", move |d: &PairedDifference| yes_no(d.cost_differs())),
        ],
        &run.comparisons,
        Some(
            "Strategies on the Pareto frontier of savings and retention at need, each against the next one that \
             saves more: what the extra saving costs in findings, on the same resampled episodes. An interval \
             that includes 0 means the data cannot tell the two apart."
                .into(),
        ),
    )
}

/// A table of one keyed field (a value per kind) of every strategy.
fn keyed(run: &RunReport, key: FieldKey, title: &str, note: &str) -> Table {
    let kinds: Vec<String> = run
        .strategies
        .first()
        .map(|s| s.keyed(key).iter().map(|(k, _)| (*k).to_owned()).collect())
        .unwrap_or_default();
    let mut cols = vec![strategy()];
    cols.extend(kinds.into_iter().map(|k| {
        col(k.clone(), move |s: &StrategyMetrics| {
            Cell::share(
                s.keyed(key)
                    .iter()
                    .find(|(name, _)| *name == k)
                    .and_then(|(_, v)| *v),
            )
        })
    }));
    Table::of(title, &cols, &run.strategies, Some(note.into()))
}

/// Every table of a run report, in order.
#[must_use]
pub fn tables(run: &RunReport) -> Vec<Table> {
    let mut first = comparison(&run.strategies);
    if !run.settings.real_llm
        && run
            .strategies
            .iter()
            .any(|s| s.count(field::STRATEGY_CALLS) > 0)
    {
        if let Some(note) = &mut first.note {
            note.push_str(
                " Summaries in this run are the mock LLM's, which are extractive (they copy history lines), so \
                 a summarizing strategy's retention here is what a summary that keeps every line it copies \
                 would score; a real model's figure comes from a run with `[llm]` in the config.",
            );
        }
    }
    let mut out =
        vec![
        first,
        origins(run),
        keyed(
            run,
            field::RETENTION_AT_NEED_BY_KIND,
            "Retention at need by finding kind (found findings)",
            "Artifact trails (a file and what was done to it) are where compressors are weakest.",
        ),
        keyed(
            run,
            field::TOKEN_SHARE,
            "Token share by item type (of all input tokens sent)",
            "Tool results are most of an agent's tokens: they bound what masking can save.",
        ),
        Table::of(
            "Strategy LLM use",
            &[
                strategy(),
                stat("calls", |s| Cell::count(s.count(field::STRATEGY_CALLS))),
                stat("failures", |s| Cell::count(s.count(field::STRATEGY_FAILURES))),
                stat("input tokens", |s| Cell::count(s.count(field::STRATEGY_INPUT_TOKENS))),
                stat("output tokens", |s| Cell::count(s.count(field::STRATEGY_OUTPUT_TOKENS))),
                stat("LLM time (s)", |s| {
                    Cell::figure(format!(
                        "{:.1}",
                        s.number(field::STRATEGY_LLM_MS).unwrap_or(0.0) / 1000.0
                    ))
                }),
            ],
            &run.strategies,
            None,
        ),
    ];
    out.extend(defensible(run));
    out.extend(super::detail::losses(run));
    out
}

/// The main comparison table, aligned for a terminal.
#[must_use]
pub fn comparison_table(strategies: &[StrategyMetrics]) -> String {
    comparison(strategies).to_console()
}
