//! The analysis step between the metrics and the report (criterion's measure → analyze → report): from each
//! strategy's running totals and the run's configuration, every decision a report renders, typed — each
//! strategy's figures with its role (the baseline known by its type), where it acted (from its first act on:
//! the metrics' `acted` figures), the window against the requests and what no strategy may reduce, requests over
//! the window, the window advice for a strategy that never acted (`super::advice`), the verdicts and the pick
//! (`super::recommend`), the interval each figure may show, the reading's facts, the general sentences the data
//! supports, the paired differences along the frontier and the timings. The writer writes what this decides,
//! and the report renders it; neither decides anything.

use super::RunConfig;
use crate::error::Result;
use crate::metrics::figures::{Figures, Interval};
use crate::metrics::intervals::PairedDifference;
use crate::metrics::timing::ComputeTimes;
use crate::metrics::{fields as field, Catalog, StrategyMetrics, StrategyTotals};
use crate::report::analysis::{
    Activity, Analysis as Decided, Assessment, Claims, Fact, Intervals, Role, Rule, Shown,
    StrategyFacts, Window,
};
use crate::report::recommend::Recommendation;
use crate::report::Timing;
use crate::strategy::StrategyConfig;

/// One strategy's running totals, as the writer keeps them: its name, its metrics' totals, its compute times
/// and its LLM calls' times.
pub type Totals = (String, StrategyTotals, ComputeTimes, ComputeTimes);

/// Every strategy of `config` with `catalog`'s empty totals and no time yet, in the config's order.
pub fn empty_totals(config: &RunConfig, catalog: &Catalog) -> Vec<Totals> {
    config
        .strategies
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                catalog.totals(),
                ComputeTimes::default(),
                ComputeTimes::default(),
            )
        })
        .collect()
}

/// What the report renders of the totals so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// Every strategy's figures, in the configuration's order, the baseline marked.
    pub strategies: Vec<StrategyMetrics>,
    /// What to pick, when the run compares any strategy one could pick.
    pub recommendation: Option<Recommendation>,
    /// Everything else the report renders.
    pub decided: Decided,
    /// The paired differences between neighbours on the frontier of savings and retention at need (none
    /// over fewer episodes than `--min-episodes`).
    pub comparisons: Vec<PairedDifference>,
    /// Each strategy's compute time and LLM latency.
    pub timings: Vec<Timing>,
}

/// The rule the recommendation applies under `config`.
#[must_use]
pub fn rule(config: &RunConfig) -> Rule {
    Rule {
        min_retention: config.min_retention,
        min_needs: config.min_needs,
        min_episodes: config.min_episodes,
        without_retention: config.recommend_without_retention,
    }
}

/// One strategy as the analysis sees it.
struct Seen<'a> {
    metrics: &'a StrategyMetrics,
    figures: Figures,
    role: Role,
    config: &'a StrategyConfig,
}

/// Analyzes `totals` (one per strategy of `config`, in its order) with `catalog`; `dataset` is the dataset as
/// the run read it (a suggested command names it).
///
/// # Errors
/// When a strategy's results lack a figure the analysis decides with ([`Figures::of`]).
pub fn analyze(
    totals: &[Totals],
    catalog: &Catalog,
    config: &RunConfig,
    dataset: &str,
    models: &[crate::llm::pricing::ModelGroup],
) -> Result<Analysis> {
    let strategies: Vec<StrategyMetrics> = totals
        .iter()
        .zip(&config.strategies)
        .map(|((name, t, _, _), s)| StrategyMetrics {
            baseline: s.config.is_baseline(),
            recorded: matches!(s.config, StrategyConfig::AsRecorded(_)),
            ..catalog.strategy(name, t)
        })
        .collect();
    let seen: Vec<Seen<'_>> = strategies
        .iter()
        .zip(&config.strategies)
        .map(|(metrics, s)| {
            Ok(Seen {
                figures: Figures::of(metrics)?,
                metrics,
                role: match (metrics.baseline, metrics.recorded) {
                    (true, _) => Role::Baseline,
                    (_, true) => Role::Recorded,
                    _ => Role::Candidate,
                },
                config: &s.config,
            })
        })
        .collect::<Result<_>>()?;
    let rule = rule(config);
    let window = window(&seen, config, models);
    let assessments: Vec<Assessment> = seen.iter().map(|s| assess(s, &rule)).collect();
    let recommendation = recommendation(&seen, &assessments, &rule, &window, dataset);
    let episodes = seen.first().map_or(0, |s| s.metrics.episodes as u64);
    let decided = Decided {
        facts: facts(&seen, &assessments, &window, config, models),
        claims: claims(&seen, config),
        rule,
        window,
        assessments,
    };
    Ok(Analysis {
        comparisons: if episodes >= rule.min_episodes.max(2) {
            frontier_differences(&strategies, totals, catalog)
        } else {
            Vec::new()
        },
        timings: timings(totals),
        recommendation,
        decided,
        strategies,
    })
}

/// Each strategy's compute time and LLM latency.
fn timings(totals: &[Totals]) -> Vec<Timing> {
    totals
        .iter()
        .map(|(name, _, compute, llm)| Timing {
            strategy: name.clone(),
            compute_p50_us: compute.quantile_us(0.5),
            compute_p95_us: compute.quantile_us(0.95),
            llm_calls: llm.count(),
            llm_p50_ms: llm.quantile_us(0.5) / 1e3,
            llm_p95_ms: llm.quantile_us(0.95) / 1e3,
        })
        .collect()
}

/// The window against the largest request and the floor, over every strategy's figures (the largest request
/// any strategy was handed is the baseline's).
fn window(
    seen: &[Seen<'_>],
    config: &RunConfig,
    models: &[crate::llm::pricing::ModelGroup],
) -> Window {
    let episodes = seen.first().map_or(0, |s| s.metrics.episodes);
    Window {
        // Each episode's model's window: the largest of them.
        tokens: crate::llm::pricing::ModelGroup::largest_window(
            models,
            episodes,
            config.context_window,
        ) as u64,
        peak: seen.iter().filter_map(|s| s.figures.peak_tokens).max(),
        floor: seen.iter().filter_map(|s| s.figures.floor_tokens).max(),
        too_small_on: seen
            .iter()
            .map(|s| s.figures.episodes_window_below_floor)
            .max()
            .unwrap_or(0),
        episodes: seen.first().map_or(0, |s| s.metrics.episodes as u64),
    }
}

/// The interval `value` may show over `clusters` episodes: none for the baseline or a strategy whose figures
/// are the baseline's, "too few episodes" under the rule's minimum (and under two), else the metrics'.
fn shown(s: &Seen<'_>, value: Interval, clusters: u64, rule: &Rule) -> Shown {
    if s.role == Role::Baseline || s.figures.episodes_acted == 0 {
        return Shown::Nothing;
    }
    if clusters < rule.min_episodes.max(2) {
        return Shown::TooFewEpisodes;
    }
    value.map_or(Shown::Nothing, |(lo, hi)| Shown::Interval { lo, hi })
}

/// What the analysis decides of one strategy's figures: the intervals they show, the requests over the window.
fn assess(s: &Seen<'_>, rule: &Rule) -> Assessment {
    let f = &s.figures;
    let episodes = s.metrics.episodes as u64;
    let with_needs = episodes.saturating_sub(f.episodes_without_found_needs);
    Assessment {
        strategy: s.metrics.strategy.clone(),
        role: s.role,
        over_window: f.steps_over_window,
        intervals: Intervals {
            savings: shown(s, f.savings_ci95, episodes, rule),
            cost_savings: shown(s, f.cost_savings_ci95, episodes, rule),
            retention: shown(s, f.retention_at_need_ci95, with_needs, rule),
            first_need: shown(s, f.retention_first_need_ci95, with_needs, rule),
            task: shown(s, f.retention_at_need_task_ci95, episodes, rule),
            retention_acted: shown(
                s,
                f.retention_at_need_acted_ci95,
                f.episodes_needed_acted,
                rule,
            ),
        },
    }
}

/// What to pick among the candidates, when there is any.
fn recommendation(
    seen: &[Seen<'_>],
    assessments: &[Assessment],
    rule: &Rule,
    window: &Window,
    dataset: &str,
) -> Option<Recommendation> {
    let candidates: Vec<super::recommend::Candidate<'_>> = seen
        .iter()
        .zip(assessments)
        .filter(|(s, _)| s.role == Role::Candidate)
        .map(|(s, a)| super::recommend::Candidate {
            name: &s.metrics.strategy,
            figures: &s.figures,
            episodes: s.metrics.episodes as u64,
            interval: a.intervals.retention_acted,
        })
        .collect();
    (!candidates.is_empty()).then(|| {
        super::recommend::recommend(
            &candidates,
            &super::recommend::Setting {
                rule,
                window: window.tokens,
                dataset,
                too_small: window.floor.filter(|_| window.too_small_on > 0),
            },
        )
    })
}

/// The reading's facts, in order: the window too small for the traces, the baseline over the window, each
/// strategy, the episodes without found needs, the task-given findings, the models without a price.
fn facts(
    seen: &[Seen<'_>],
    assessments: &[Assessment],
    window: &Window,
    config: &RunConfig,
    models: &[crate::llm::pricing::ModelGroup],
) -> Vec<Fact> {
    let mut out = Vec::new();
    if window.too_small_on > 0 {
        out.push(Fact::WindowTooSmall(*window));
    }
    if let Some(b) = seen
        .iter()
        .find(|s| s.role == Role::Baseline && s.figures.steps_over_window > 0)
    {
        out.push(Fact::BaselineOverWindow {
            requests: b.figures.steps_over_window,
            window: window.tokens,
        });
    }
    for (s, a) in seen.iter().zip(assessments) {
        if s.role != Role::Baseline {
            out.push(Fact::Strategy(strategy_facts(s, a, window)));
        }
    }
    if let Some(first) = seen.first() {
        let f = &first.figures;
        if f.episodes_without_found_needs > 0 {
            out.push(Fact::WithoutFoundNeeds {
                episodes: f.episodes_without_found_needs,
                of: first.metrics.episodes as u64,
            });
        }
        if f.needs_task > 0 {
            out.push(Fact::TaskGiven {
                needs: f.needs_task,
                lowest: task_lowest(seen),
            });
        }
    }
    if seen.iter().any(|s| s.figures.cost_usd.is_none()) {
        let settings = config.report_settings();
        // The agent model where an episode names none, and each model the traces name that has no price.
        let named: usize = models.iter().map(|g| g.episodes.len()).sum();
        let episodes = seen.first().map_or(0, |s| s.metrics.episodes);
        let unnamed = episodes.saturating_sub(named);
        let agent = (unnamed > 0 || models.is_empty())
            .then_some(settings.agent_model.clone())
            .flatten();
        let unpriced = models
            .iter()
            .filter(|g| g.model.price.is_none())
            .map(|g| g.model.model.clone());
        // Only the models the table does not price: a priced one named in the config needs no price.
        let table = config.price_table();
        let mut models: Vec<String> = [agent, settings.strategy_model]
            .into_iter()
            .flatten()
            .filter(|m| table.get(m).is_none())
            .chain(unpriced)
            .filter(|m| !m.is_empty())
            .collect();
        models.sort();
        models.dedup();
        let unnamed = if settings.agent_model.is_none() {
            unnamed
        } else {
            0
        };
        out.push(Fact::Unpriced { models, unnamed });
    }
    out
}

/// One strategy's facts: what it did, or why it never acted and the window advice; its failures.
fn strategy_facts(s: &Seen<'_>, a: &Assessment, window: &Window) -> StrategyFacts {
    let f = &s.figures;
    let activity = if f.episodes_acted > 0 {
        Activity::Acted {
            episodes: f.episodes_acted,
            savings: f.savings_acted,
            cost_savings: f.cost_savings_acted,
            needs: f.needs_acted,
            kept: f.retention_at_need_acted,
            interval: a.intervals.retention_acted,
            first: f.retention_first_need_acted,
            savings_all: f.savings,
            cost_savings_all: f.cost_savings,
            kept_all: f.retention_at_need,
        }
    } else {
        Activity::Idle(super::advice::idle(
            s.config,
            window.tokens,
            window.peak,
            window.floor,
        ))
    };
    let below_floor = match (f.episodes_below_floor, f.budget_tokens, f.floor_tokens) {
        (n, Some(budget), Some(floor)) if n > 0 => Some((budget, floor, n)),
        _ => None,
    };
    StrategyFacts {
        strategy: s.metrics.strategy.clone(),
        of: s.metrics.episodes as u64,
        below_floor,
        failed: f.episodes_failed,
        over_window: f.steps_over_window,
        activity,
    }
}

/// The lowest retention at need any strategy gave task-given findings, and which (none when every strategy
/// gave the same).
fn task_lowest(seen: &[Seen<'_>]) -> Option<(f64, Option<String>)> {
    let figures: Vec<(f64, &str)> = seen
        .iter()
        .filter_map(|s| {
            Some((
                s.figures.retention_at_need_task?,
                s.metrics.strategy.as_str(),
            ))
        })
        .collect();
    let lowest = figures.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    let same = figures.iter().all(|f| f.0 == lowest.0);
    Some((lowest.0, (!same).then(|| lowest.1.to_owned())))
}

/// Which general sentences the run's data supports (see [`Claims`]).
fn claims(seen: &[Seen<'_>], config: &RunConfig) -> Claims {
    let acted: Vec<&Seen<'_>> = seen
        .iter()
        .filter(|s| s.role != Role::Baseline && s.figures.episodes_acted > 0)
        .collect();
    Claims {
        tool_output: seen
            .iter()
            .find(|s| s.role == Role::Baseline)
            .or_else(|| seen.first())
            .and_then(|s| tool_output(s.metrics)),
        weakest_kind: weakest_kind(&acted),
        cache_cost: acted.iter().any(|s| {
            s.figures
                .cost_savings
                .is_some_and(|c| c < s.figures.savings)
        }),
        mock_summaries: config.llm.is_none() && seen.iter().any(|s| s.figures.strategy_calls > 0),
    }
}

/// The share of tokens in tool output, with the largest kind and its share.
fn tool_output(s: &StrategyMetrics) -> Option<(f64, String, f64)> {
    let shares = s.keyed(field::TOKEN_SHARE);
    let tool = shares
        .iter()
        .find(|(k, _)| *k == crate::history::ItemKind::ToolResult.as_str())?
        .1?;
    let (largest, share) = shares
        .iter()
        .filter_map(|(k, v)| Some((*k, (*v)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some((tool, largest.to_owned(), share))
}

/// The finding kind kept least by most of the strategies that acted (each strategy's lowest kind, where one
/// kind is lower than another), with how many and of how many; none without a majority.
fn weakest_kind(acted: &[&Seen<'_>]) -> Option<(String, u64, u64)> {
    let mut lowest: Vec<(String, u64)> = Vec::new();
    let mut judged = 0u64;
    for s in acted {
        let kinds: Vec<(&str, f64)> = s
            .metrics
            .keyed(field::RETENTION_AT_NEED_BY_KIND)
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?)))
            .collect();
        let Some(low) = kinds.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
            continue;
        };
        if kinds.iter().all(|k| k.1 == low.1) {
            continue;
        }
        judged += 1;
        match lowest.iter_mut().find(|(k, _)| k == low.0) {
            Some((_, n)) => *n += 1,
            None => lowest.push((low.0.to_owned(), 1)),
        }
    }
    let (kind, n) = lowest.into_iter().max_by_key(|(_, n)| *n)?;
    (n * 2 > judged).then_some((kind, n, judged))
}

/// The paired differences between neighbours on the Pareto frontier of (savings, retention at need), the
/// baselines left out, in order of savings.
fn frontier_differences(
    strategies: &[StrategyMetrics],
    totals: &[Totals],
    catalog: &Catalog,
) -> Vec<PairedDifference> {
    let candidates: Vec<(usize, (f64, f64))> = strategies
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.baseline)
        .filter_map(|(i, s)| {
            Some((
                i,
                (
                    s.number(field::SAVINGS)?,
                    s.number(field::RETENTION_AT_NEED)?,
                ),
            ))
        })
        .collect();
    let points: Vec<(f64, f64)> = candidates.iter().map(|c| c.1).collect();
    let mut frontier: Vec<(usize, (f64, f64))> = crate::metrics::series::pareto_frontier(&points)
        .into_iter()
        .map(|k| candidates[k])
        .collect();
    frontier.sort_by(|x, y| x.1 .0.total_cmp(&y.1 .0).then(x.0.cmp(&y.0)));
    frontier
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (&totals[w[0].0], &totals[w[1].0]);
            catalog.paired((&a.0, &a.1), (&b.0, &b.1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn metrics(name: &str, values: &serde_json::Value) -> StrategyMetrics {
        let catalog = Catalog::standard();
        let mut s = catalog.strategy(name, &catalog.totals());
        s.episodes = 36;
        for (k, v) in values.as_object().unwrap() {
            assert!(s.values.contains_key(k), "no field {k}");
            s.values.insert(k.clone(), v.clone());
        }
        s
    }

    fn seen<'a>(m: &'a StrategyMetrics, role: Role, config: &'a StrategyConfig) -> Seen<'a> {
        Seen {
            figures: Figures::of(m).unwrap(),
            metrics: m,
            role,
            config,
        }
    }

    fn rule(min_episodes: u64) -> Rule {
        Rule {
            min_retention: 0.9,
            min_needs: 10,
            min_episodes,
            without_retention: false,
        }
    }

    /// An interval is shown only where one is honest: never for the baseline or a strategy that acted
    /// nowhere; "too few episodes" under the minimum, and under two whatever the minimum.
    #[test]
    fn an_interval_is_shown_only_where_it_is_honest() {
        let none = StrategyConfig::None;
        let acted = metrics("s", &json!({"episodes_acted": 3}));
        let idle = metrics("s", &json!({"episodes_acted": 0}));
        let i = Some((0.5, 0.9));
        let want = Shown::Interval { lo: 0.5, hi: 0.9 };
        let s = seen(&acted, Role::Candidate, &none);
        assert_eq!(shown(&s, i, 5, &rule(5)), want);
        assert_eq!(shown(&s, i, 4, &rule(5)), Shown::TooFewEpisodes);
        assert_eq!(shown(&s, i, 1, &rule(0)), Shown::TooFewEpisodes);
        assert_eq!(shown(&s, i, 2, &rule(0)), want);
        assert_eq!(shown(&s, None, 9, &rule(5)), Shown::Nothing);
        assert_eq!(
            shown(&seen(&acted, Role::Baseline, &none), i, 9, &rule(5)),
            Shown::Nothing
        );
        assert_eq!(
            shown(&seen(&idle, Role::Candidate, &none), i, 9, &rule(5)),
            Shown::Nothing
        );
        // Recorded compaction shows its intervals like any strategy.
        assert_eq!(
            shown(&seen(&acted, Role::Recorded, &none), i, 9, &rule(5)),
            want
        );
    }

    /// The kind kept least is claimed only where most strategies that acted keep it least; a strategy that
    /// keeps every kind alike says nothing.
    #[test]
    fn the_weakest_kind_needs_a_majority() {
        let none = StrategyConfig::None;
        let by = |recall: f64, artifact: f64| {
            metrics(
                "s",
                &json!({"episodes_acted": 3, "retention_at_need_by_kind":
                    {"recall": recall, "artifact": artifact, "decision": null, "continuation": 1.0}}),
            )
        };
        let (a, b, c, flat) = (by(1.0, 0.5), by(0.9, 0.8), by(0.4, 0.9), by(1.0, 1.0));
        let all: Vec<Seen<'_>> = [&a, &b, &c, &flat]
            .into_iter()
            .map(|m| seen(m, Role::Candidate, &none))
            .collect();
        let refs: Vec<&Seen<'_>> = all.iter().collect();
        assert_eq!(weakest_kind(&refs), Some(("artifact".into(), 2, 3)));
        assert_eq!(weakest_kind(&refs[1..]), None, "1 of 2 is no majority");
        assert_eq!(weakest_kind(&refs[3..]), None);
    }

    /// The tool-output share is the baseline's, with its largest kind.
    #[test]
    fn the_tool_output_share_is_read_as_it_is() {
        let m = metrics(
            "none",
            &json!({"token_share": {"system": 0.01, "tool_result": 0.009, "unrecorded": 0.925}}),
        );
        assert_eq!(tool_output(&m), Some((0.009, "unrecorded".into(), 0.925)));
        let without = metrics("none", &json!({"token_share": {"system": 1.0}}));
        assert_eq!(tool_output(&without), None);
    }

    /// Task-given findings: the lowest retention and who gave it, or none named when every strategy gave
    /// the same.
    #[test]
    fn the_lowest_task_retention_names_who_gave_it() {
        let none = StrategyConfig::None;
        let (a, b) = (
            metrics("a", &json!({"retention_at_need_task": 1.0})),
            metrics("b", &json!({"retention_at_need_task": 0.5})),
        );
        let both = [
            seen(&a, Role::Baseline, &none),
            seen(&b, Role::Candidate, &none),
        ];
        assert_eq!(task_lowest(&both), Some((0.5, Some("b".into()))));
        assert_eq!(task_lowest(&both[..1]), Some((1.0, None)));
    }

    /// A catalog without the figures the analysis decides with is an error naming one, never a 0.
    #[test]
    fn results_without_a_figure_are_an_error() {
        let config = RunConfig::default();
        let empty = |catalog: &Catalog| empty_totals(&config, catalog);
        let catalog = Catalog::new(vec![Box::new(crate::metrics::tokens::Tokens)]);
        let e = analyze(&empty(&catalog), &catalog, &config, "d", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("lacks a figure") && e.contains("missing field"),
            "{e}"
        );
        // The standard catalog's empty totals are analyzed: nothing acted, nothing picked.
        let catalog = Catalog::standard();
        let a = analyze(&empty(&catalog), &catalog, &config, "d", &[]).unwrap();
        assert_eq!(a.recommendation.unwrap().strategy, None);
        assert!(a.comparisons.is_empty());
    }
}
