//! The report's reading: one line per fact the analysis found ([`super::analysis::Fact`]), about one strategy or
//! the run, after the lines on what counted the tokens and what the traces left out. Rendering only: every
//! condition here is which words a decided fact takes.

use std::fmt::Write as _;

use super::analysis::{Activity, Analysis, Fact, Idle, StrategyFacts, Window};
use super::recommend::with_interval;
use super::table::thousands;
use super::{pct, RunReport};

/// A line of the report's reading: about one strategy, or about the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The strategy the line is about (the HTML report adds where it lost most).
    pub strategy: Option<String>,
    /// The line, in Markdown.
    pub text: String,
}

/// How to read the comparison: what counted the tokens and what the traces left out, then each fact of the
/// analysis in order.
#[must_use]
pub fn reading(run: &RunReport) -> Vec<Line> {
    // The models the traces name: each one's price's source and window.
    let mut lines: Vec<Line> = run
        .models
        .iter()
        .map(|g| format!("Model {}.", g.describe()))
        .chain(fidelity_lines(run))
        .map(|text| Line {
            strategy: None,
            text,
        })
        .collect();
    let analysis = &run.analysis;
    lines.extend(analysis.facts.iter().map(|f| Line {
        strategy: f.strategy().map(str::to_owned),
        text: sentence(f, analysis),
    }));
    lines
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A fact, in a sentence or two.
#[must_use]
pub fn sentence(fact: &Fact, analysis: &Analysis) -> String {
    match fact {
        Fact::WindowTooSmall(w) => too_small(w),
        Fact::BaselineOverWindow { requests, window } => format!(
            "Without reduction, {} request{} {} over the {}-token window: a strategy is picked only if it \
             brings every one under it.",
            thousands(*requests),
            plural(*requests),
            if *requests == 1 { "is" } else { "are" },
            thousands(*window)
        ),
        Fact::Strategy(s) => strategy_line(s, analysis),
        Fact::WithoutFoundNeeds { episodes, of } => format!(
            "{episodes} of {of} episodes have no finding the agent found needed at a call point: retention at \
             need leaves them out (pooled over pairs, they add nothing; their figure in episodes.csv is empty, \
             not 100%)."
        ),
        Fact::TaskGiven { needs, lowest } => format!(
            "Task-given findings (in the task or its first user message) are reported apart: {needs} needs, {}.",
            match lowest {
                Some((r, None)) => format!("{} kept by every strategy", pct(Some(*r))),
                Some((r, Some(s))) => format!(
                    "the lowest retention at need among them {} (`{s}`)",
                    pct(Some(*r))
                ),
                None => "none kept".to_owned(),
            }
        ),
        Fact::Unpriced { models, unnamed } => {
            let unnamed = match unnamed {
                0 => String::new(),
                n => format!(
                    "{n} {} whose trace names no model {} unpriced, never priced as another: give each its \
                     model in the dataset (the episode's `\"model\"`), or price all of them as one model with \
                     `[pricing] agent_model`. ",
                    if *n == 1 { "episode" } else { "episodes" },
                    if *n == 1 { "is" } else { "are" },
                ),
            };
            if models.is_empty() && !unnamed.is_empty() {
                return unnamed.trim_end().to_owned();
            }
            format!(
                "{unnamed}Cost is unknown where a model is in neither price table (LiteLLM's, genai-prices'; \
                 docs/pricing.md): add {} to the config, with `input`, `cached_input` and `output` in USD per \
                 million tokens.",
                if models.is_empty() {
                    "`[pricing.models.\"MODEL\"]`".to_owned()
                } else {
                    models
                        .iter()
                        .map(|m| format!("`[pricing.models.\"{m}\"]`"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                }
            )
        }
    }
}

/// A saving in words: `12.3% fewer` (`saved`), `0.6% more` for a negative one (never a "-0.6%"), or
/// `unknown`.
fn signed(v: Option<f64>, saved: &str, more: &str) -> String {
    match v {
        None => "unknown".to_owned(),
        Some(v) if v < 0.0 && pct(Some(-v)) != "0.0%" => format!("{} {more}", pct(Some(-v))),
        Some(v) => format!("{} {saved}", pct(Some(v.max(0.0)))),
    }
}

/// The window too small for the traces.
fn too_small(w: &Window) -> String {
    format!(
        "The {}-token window is too small for these traces: what no strategy may reduce (system prompt, tool \
         schemas, task and unrecorded context) reaches {} tokens and is over the window on {} of {} episodes, \
         where every strategy sends requests over it.",
        thousands(w.tokens),
        thousands(w.floor.unwrap_or_default()),
        w.too_small_on,
        w.episodes
    )
}

/// One strategy: what it did (from its first act, or why it never acted), then its failures.
fn strategy_line(s: &StrategyFacts, analysis: &Analysis) -> String {
    let name = &s.strategy;
    let mut line = match s.activity {
        Activity::Acted {
            episodes,
            savings,
            cost_savings,
            needs,
            kept,
            interval,
            first,
            savings_all,
            cost_savings_all,
            kept_all,
        } => {
            let there = match kept {
                Some(k) => format!(
                    "kept {} of the {needs} need{} met there, {}",
                    with_interval(k, interval),
                    plural(needs),
                    first.map_or_else(
                        || "none of them a finding's first".to_owned(),
                        |f| format!("{} at their first need", pct(Some(f)))
                    )
                ),
                None => "no finding the agent found was needed there".to_owned(),
            };
            // The comparison's figures, in the same words: a negative `cost saved` is a cost that is more.
            let all = format!(
                "input tokens {}, cost {}{}",
                signed(Some(savings_all), "fewer", "more"),
                signed(cost_savings_all, "less", "more"),
                kept_all.map_or_else(String::new, |k| format!(", {} kept", pct(Some(k))))
            );
            format!(
                "`{name}` acted on {episodes} of {} episodes; from its first act on, input tokens {} and cost \
                 {}, and {there} (over all episodes: {all}).",
                s.of,
                signed(savings, "fewer", "more"),
                signed(cost_savings, "less", "more"),
            )
        }
        Activity::Idle(idle) => format!(
            "`{name}` never changed a request on these {} episodes: its figures are the baseline's. {}",
            s.of,
            idle_reason(idle, &analysis.window)
        ),
    };
    if s.failed > 0 {
        line = format!(
            "`{name}` fails {} of {} episodes as its framework does (it raises where it cannot bring a request \
             under its threshold; `failed_at_step` in episodes.csv, marked in the explorer): its figures there go \
             on as if the request had been sent, and it is never recommended. {line}",
            s.failed, s.of
        );
    }
    if s.over_window > 0 {
        let _ = write!(
            line,
            " It sent {} request{} over the {}-token window: failures, which a provider refuses.",
            thousands(s.over_window),
            plural(s.over_window),
            thousands(analysis.window.tokens)
        );
    }
    if let Some((budget, floor, episodes)) = s.below_floor {
        let _ = write!(
            line,
            " Its budget ({} tokens) is below what no strategy may reduce (up to {} tokens of system prompt, \
             tool schemas, task and unrecorded context) on {episodes} of {} episodes: there it cannot bring a \
             request under it.",
            thousands(budget),
            thousands(floor),
            s.of
        );
    }
    line
}

/// Why a strategy never acted, and the window that would show it acting where one does.
fn idle_reason(idle: Idle, w: &Window) -> String {
    let peak = thousands(w.peak.unwrap_or_default());
    match idle {
        Idle::Window { at, suggest } => {
            let hint = match suggest {
                Some(s) => format!(
                    "`--window {s}` makes it act while its budget still holds what no strategy may reduce"
                ),
                None => "no window makes it act with a budget that holds what no strategy may reduce".into(),
            };
            format!(
                "At this window it acts over {} tokens, and the largest request was {peak}; {hint}.",
                thousands(at)
            )
        }
        Idle::Budget { at } => format!(
            "Its own budget ({} tokens), not the window, makes it act, and the largest request was {peak}.",
            thousands(at)
        ),
        Idle::NothingToReduce { at } => format!(
            "At this window it acts over {} tokens, and requests reached {peak}, yet it changed none of them: it \
             found nothing it reduces in them.",
            thousands(at)
        ),
        Idle::Other => "What makes it act is not a size (a count of turns or items, or its own estimate), and \
                        it never came on these episodes; the window does not move it."
            .to_owned(),
    }
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
            if let Some(cause) = f.cause(tokenizer, run.tokenizer.model_own) {
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
                f.unrecorded_name()
            )
        } else {
            String::new()
        };
        let cause = f
            .cause(tokenizer, run.tokenizer.model_own)
            .map_or_else(String::new, |c| format!("; outside 0.97–1.03: {c}"));
        let resized = f.resized.as_ref().map_or_else(String::new, |(n, from)| {
            format!(
                "; the unrecorded context of {n} episode{} was sized with {from} at import and sized again \
                 with {tokenizer}",
                if *n == 1 { "" } else { "s" }
            )
        });
        let fit = f.fit_clause();
        // Where an agent compacted its own context, its record is compared with what it sent.
        let replays = match f.as_recorded {
            0 => "the baseline replays".to_owned(),
            n if n == f.with_usage => "what the agent sent (as_recorded) replays".to_owned(),
            n => format!("the baseline (as_recorded on {n} that compacted their context) replays"),
        };
        lines.push(format!(
            "{}: {} of {} episodes record usage; {replays} {ratio} of the recorded input{worst}\
             {fit}{unrecorded}{resized}{cause}.",
            f.format, f.with_usage, f.episodes
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::analysis::{Rule, Shown};

    /// A strategy that costs more than no reduction reads "more" wherever its `cost saved` is negative: where
    /// it acted (-8.2% there) and over all episodes (-0.1%, the comparison's column), never "-0.1% less".
    #[test]
    fn a_strategy_that_costs_more_says_more_in_both_scopes() {
        let analysis = Analysis::empty(
            Rule {
                min_retention: 0.9,
                min_needs: 5,
                min_episodes: 5,
                without_retention: false,
            },
            13_000,
        );
        let facts = StrategyFacts {
            strategy: "compaction".into(),
            of: 23,
            below_floor: None,
            failed: 0,
            over_window: 0,
            activity: Activity::Acted {
                episodes: 1,
                savings: Some(0.003),
                cost_savings: Some(-0.082),
                needs: 1,
                kept: Some(1.0),
                interval: Shown::TooFewEpisodes,
                first: Some(1.0),
                savings_all: 0.0,
                cost_savings_all: Some(-0.001),
                kept_all: Some(1.0),
            },
        };
        let line = strategy_line(&facts, &analysis);
        assert!(
            line.contains("from its first act on, input tokens 0.3% fewer and cost 8.2% more")
                && line.contains(
                    "(over all episodes: input tokens 0.0% fewer, cost 0.1% more, 100.0% kept)"
                ),
            "{line}"
        );
        // A saving rounding to nothing is not "-0.0% more", and an unknown cost says so.
        let mut facts = facts;
        if let Activity::Acted {
            cost_savings_all,
            kept_all,
            ..
        } = &mut facts.activity
        {
            *cost_savings_all = Some(-0.000_04);
            *kept_all = None;
        }
        let line = strategy_line(&facts, &analysis);
        assert!(
            line.contains("(over all episodes: input tokens 0.0% fewer, cost 0.0% less)."),
            "{line}"
        );
    }
}
