//! What to pick, on evidence: the cheapest strategy (or sweep setting) that keeps enough of the findings the
//! agent needs where it acted, on enough needs to tell.
//!
//! The rule (README, Metrics; the report's glossary):
//! - a strategy qualifies only where it acted: its retention at need over the episodes it acted on must reach
//!   `min_retention`, on at least `min_needs` needs met there (fewer: "not enough evidence");
//! - a strategy that acted on no episode is never recommended for a saving it did not make;
//! - a strategy whose budget is below what it may not reduce (system prompt, tool schemas, task, unrecorded
//!   context) on some episode is flagged and never recommended;
//! - where no found finding is needed on any episode, retention measured nothing: nothing is recommended
//!   unless the user asks for a pick on savings alone (`--recommend-without-retention`).
//!
//! Among those that qualify, the cheapest wins (by savings when costs are unknown); the baseline is the strategy
//! of type `none`, whatever its name.

use serde::{Deserialize, Serialize};

use crate::metrics::{fields as field, StrategyMetrics};
use crate::report::pct;

/// What the recommendation asks of a strategy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The retention at need it must keep where it acted.
    pub min_retention: f64,
    /// The fewest needs met where it acted that count as evidence.
    pub min_needs: u64,
    /// Recommend on savings alone where retention measured nothing.
    pub without_retention: bool,
}

impl Rule {
    /// The rule with `min_retention` and the defaults otherwise.
    #[must_use]
    pub fn new(min_retention: f64) -> Self {
        Self {
            min_retention,
            min_needs: crate::run::config::DEFAULT_MIN_NEEDS,
            without_retention: false,
        }
    }
}

/// Why a strategy is, or is not, recommendable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// It qualifies.
    Qualifies,
    /// Its retention where it acted is below the target.
    BelowTarget,
    /// It met too few needs where it acted for its retention there to tell.
    NotEnoughEvidence,
    /// It changed no request.
    ActedNowhere,
    /// Its budget is below what it may not reduce on some episode.
    BudgetBelowFloor,
    /// The framework it reproduces fails (raises) on some episode.
    FailsInFramework,
    /// No found finding is needed anywhere: nothing measured what it loses.
    Unmeasured,
}

/// One strategy's standing, with the sentence that says why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The strategy.
    pub strategy: String,
    /// Its standing.
    pub standing: Standing,
    /// Why, in a sentence.
    pub why: String,
}

/// The strategy a run or a sweep recommends, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The strategy name, or `None` when no setting qualifies.
    pub strategy: Option<String>,
    /// The sentence the report prints.
    pub text: String,
    /// Every strategy but the baseline, with its standing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
}

/// Whether a strategy's pooled retention at need reaches `min_retention` (a strategy on episodes without a found
/// finding does: nothing measures it). The sweep's table marks settings by it; the recommendation asks more
/// ([`standing`]).
#[must_use]
pub fn meets(s: &StrategyMetrics, min_retention: f64) -> bool {
    s.number(field::RETENTION_AT_NEED).unwrap_or(1.0) >= min_retention
}

/// The standing of `s` under `rule`, and why.
#[must_use]
pub fn standing(s: &StrategyMetrics, rule: &Rule) -> (Standing, String) {
    let acted = s.count(field::EPISODES_ACTED);
    let failed = s.count(field::EPISODES_FAILED);
    if failed > 0 {
        return (
            Standing::FailsInFramework,
            format!(
                "the framework it reproduces fails {failed} of {} episodes (it raises where it cannot bring a \
                 request under its threshold)",
                s.episodes
            ),
        );
    }
    let below = s.count(field::EPISODES_BELOW_FLOOR);
    if below > 0 {
        return (
            Standing::BudgetBelowFloor,
            format!(
                "its budget ({} tokens) is below what it may not reduce (up to {} tokens of system prompt, \
                 tool schemas, task and unrecorded context) on {below} of {} episodes, where it cannot bring a \
                 request under it",
                crate::report::table::thousands(s.count(field::BUDGET_TOKENS)),
                crate::report::table::thousands(s.count(field::FLOOR_TOKENS)),
                s.episodes
            ),
        );
    }
    if acted == 0 {
        return (
            Standing::ActedNowhere,
            "it changed no request, so it saved nothing".into(),
        );
    }
    if s.count(field::NEEDS) == 0 {
        return (
            Standing::Unmeasured,
            "no finding the agent found is needed on these episodes: nothing measured what it loses".into(),
        );
    }
    let needs = s.count(field::NEEDS_ACTED);
    let there = s.number(field::RETENTION_AT_NEED_ACTED);
    let where_ = format!(
        "{needs} need{} met on the {acted} of {} episodes it acted on",
        plural(needs),
        s.episodes
    );
    if needs < rule.min_needs {
        return (
            Standing::NotEnoughEvidence,
            format!(
                "not enough evidence: {where_}, fewer than the {} that count (--min-needs){}",
                rule.min_needs,
                there.map_or_else(String::new, |r| format!(
                    "; it kept {} of them",
                    pct(Some(r))
                ))
            ),
        );
    }
    match there {
        Some(r) if r >= rule.min_retention => (
            Standing::Qualifies,
            format!("it kept {} of the {where_}", pct(Some(r))),
        ),
        r => (
            Standing::BelowTarget,
            format!(
                "it kept {} of the {where_}, below the {} target",
                pct(r),
                pct(Some(rule.min_retention))
            ),
        ),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The cheapest strategy that qualifies under `rule` (the baselines, `baseline[i]` set, left out), with every
/// other strategy's standing.
#[must_use]
pub fn recommend(strategies: &[StrategyMetrics], rule: &Rule) -> Recommendation {
    let savings = |s: &StrategyMetrics| s.number(field::SAVINGS).unwrap_or(0.0);
    let cheaper = |a: &&StrategyMetrics, b: &&StrategyMetrics| match (
        a.number(field::COST_USD),
        b.number(field::COST_USD),
    ) {
        (Some(x), Some(y)) => x.total_cmp(&y).then(savings(b).total_cmp(&savings(a))),
        _ => savings(b).total_cmp(&savings(a)),
    };
    // Neither the baseline nor what the agent itself sent (`as_recorded`) can be picked.
    let candidates: Vec<&StrategyMetrics> = strategies
        .iter()
        .filter(|s| !s.baseline && !s.recorded)
        .collect();
    let verdicts: Vec<Verdict> = candidates
        .iter()
        .map(|s| {
            let (standing, why) = standing(s, rule);
            Verdict {
                strategy: s.strategy.clone(),
                standing,
                why,
            }
        })
        .collect();
    let with = |wanted: Standing| -> Vec<&StrategyMetrics> {
        candidates
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| v.standing == wanted)
            .map(|(s, _)| *s)
            .collect()
    };
    let unmeasured = with(Standing::Unmeasured);
    let best = with(Standing::Qualifies).into_iter().min_by(cheaper);
    let (strategy, text) = match best {
        Some(s) => (Some(s.strategy.clone()), pick_text(s, rule)),
        None if !unmeasured.is_empty() && rule.without_retention => {
            let s = unmeasured
                .into_iter()
                .min_by(cheaper)
                .expect("not empty");
            (
                Some(s.strategy.clone()),
                format!(
                    "Use `{}` on savings alone (--recommend-without-retention): no finding the agent found is \
                     needed on these episodes, so nothing measured what it loses. {}",
                    s.strategy,
                    saves(s)
                ),
            )
        }
        None if !unmeasured.is_empty() => (
            None,
            "Nothing is recommended: no finding the agent found is needed on these episodes, so retention \
             measured nothing and a saving says nothing of what it costs the agent. Add findings (README, \
             Dataset format), or pick on savings alone with --recommend-without-retention."
                .to_owned(),
        ),
        None => (None, none_text(&verdicts, rule)),
    };
    Recommendation {
        strategy,
        text,
        verdicts,
    }
}

/// What a strategy saves and costs, in a sentence.
fn saves(s: &StrategyMetrics) -> String {
    format!(
        "It saves {} of input tokens and costs {} ({} less than no reduction), with {} strategy LLM calls.",
        pct(s.number(field::SAVINGS)),
        s.number(field::COST_USD)
            .map_or_else(|| "an unknown amount".into(), |c| format!("${c:.2}")),
        pct(s.number(field::COST_SAVINGS)),
        s.count(field::STRATEGY_CALLS)
    )
}

/// The sentence for a strategy that qualifies.
fn pick_text(s: &StrategyMetrics, rule: &Rule) -> String {
    let acted = s.count(field::EPISODES_ACTED);
    let pooled = match s.get(field::RETENTION_AT_NEED_CI95).as_array().map(|a| {
        (
            a.first().and_then(serde_json::Value::as_f64),
            a.get(1).and_then(serde_json::Value::as_f64),
        )
    }) {
        Some((Some(lo), Some(hi))) => format!(
            " (95% interval {}–{}{})",
            pct(Some(lo)),
            pct(Some(hi)),
            if lo < rule.min_retention {
                " — its interval reaches below the target, so with these episodes it may not meet it"
            } else {
                ""
            }
        ),
        _ => String::new(),
    };
    format!(
        "Use `{}`: the cheapest that keeps at least {} of the findings the agent found where they are needed, \
         where it acted — it kept {} of {} needs on the {acted} of {} episodes it acted on; over every \
         episode {}{pooled}, {} at their first need. {}",
        s.strategy,
        pct(Some(rule.min_retention)),
        pct(s.number(field::RETENTION_AT_NEED_ACTED)),
        s.count(field::NEEDS_ACTED),
        s.episodes,
        pct(s.number(field::RETENTION_AT_NEED)),
        pct(s.number(field::RETENTION_FIRST_NEED)),
        saves(s)
    )
}

/// The sentence when nothing qualifies: why, strategy by strategy.
fn none_text(verdicts: &[Verdict], rule: &Rule) -> String {
    let why: Vec<String> = verdicts
        .iter()
        .map(|v| format!("`{}`: {}", v.strategy, v.why))
        .collect();
    format!(
        "Nothing is recommended: no strategy keeps {} of the findings the agent found where they are needed, \
         where it acted, on at least {} needs. {}. Lower the target (--min-retention), try gentler settings \
         (ctxbench sweep), or a larger --window.",
        pct(Some(rule.min_retention)),
        rule.min_needs,
        why.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strategy(name: &str, fields: serde_json::Value) -> StrategyMetrics {
        let mut values = serde_json::Map::new();
        for key in field::ALL {
            values.insert(key.name().to_owned(), serde_json::Value::Null);
        }
        for (k, v) in fields.as_object().unwrap() {
            values.insert(k.clone(), v.clone());
        }
        StrategyMetrics {
            strategy: name.into(),
            episodes: 36,
            baseline: name == "base",
            recorded: name == "as_recorded",
            values,
        }
    }

    fn rule() -> Rule {
        Rule {
            min_retention: 0.9,
            min_needs: 10,
            without_retention: false,
        }
    }

    /// The README's sample at `--window 8000`: a window that acted on 4 of 36 episodes and lost the one need
    /// it met there is not enough evidence, whatever its pooled 97.1%; one below the floor is flagged; the
    /// cheapest that qualifies wins, and the baseline, whatever its name, is never a candidate.
    #[test]
    fn a_strategy_qualifies_only_on_evidence_where_it_acted() {
        let common = |cost: f64, acted: u64, needs: u64, there: f64, below: u64| {
            json!({"needs": 40, "episodes_acted": acted, "needs_acted": needs,
                   "retention_at_need_acted": there, "retention_at_need": 0.971, "cost_usd": cost,
                   "savings": 0.5, "episodes_below_floor": below, "budget_tokens": 1000,
                   "floor_tokens": 1367})
        };
        let all = [
            strategy("base", common(0.0, 0, 0, 1.0, 0)),
            strategy("window", common(1.0, 4, 1, 0.0, 0)),
            strategy("tight", common(0.5, 36, 40, 1.0, 3)),
            strategy("idle", common(2.0, 0, 0, 1.0, 0)),
            strategy("lossy", common(3.0, 30, 30, 0.8, 0)),
            strategy("good", common(5.0, 30, 30, 0.95, 0)),
            strategy("better", common(4.0, 30, 10, 0.9, 0)),
        ];
        let r = recommend(&all, &rule());
        assert_eq!(r.strategy.as_deref(), Some("better"), "{}", r.text);
        // What the agent itself sent, cheapest and keeping everything, is compared but never a candidate.
        let mut with_agent = all.to_vec();
        with_agent.push(strategy("as_recorded", common(0.1, 36, 40, 1.0, 0)));
        let r = recommend(&with_agent, &rule());
        assert_eq!(r.strategy.as_deref(), Some("better"), "{}", r.text);
        assert!(r.verdicts.iter().all(|v| v.strategy != "as_recorded"));
        let standing: Vec<(&str, Standing)> = r
            .verdicts
            .iter()
            .map(|v| (v.strategy.as_str(), v.standing))
            .collect();
        assert_eq!(
            standing,
            [
                ("window", Standing::NotEnoughEvidence),
                ("tight", Standing::BudgetBelowFloor),
                ("idle", Standing::ActedNowhere),
                ("lossy", Standing::BelowTarget),
                ("good", Standing::Qualifies),
                ("better", Standing::Qualifies),
            ]
        );
        assert!(
            r.verdicts[0].why.contains("1 need met on the 4 of 36"),
            "{}",
            r.verdicts[0].why
        );
        assert!(r.verdicts[1].why.contains("1,000 tokens") && r.verdicts[1].why.contains("1,367"));
        // Below the target, the count of needs in the plural; the pick says what it saves and costs.
        assert!(
            r.verdicts[3].why.contains("30 needs met on the 30 of 36"),
            "{}",
            r.verdicts[3].why
        );
        assert!(
            r.text
                .contains("It saves 50.0% of input tokens and costs $4.00"),
            "{}",
            r.text
        );
        // Without "better" and "good", nothing qualifies and the text says why, strategy by strategy.
        let r = recommend(&all[..5], &rule());
        assert_eq!(r.strategy, None);
        assert!(
            r.text.contains("`window`: not enough evidence"),
            "{}",
            r.text
        );
    }

    /// The pick names its pooled interval, and says when the interval reaches below the target.
    #[test]
    fn the_pick_gives_its_interval_and_whether_it_reaches_below_the_target() {
        let pick = |lo: f64| {
            let all = [
                strategy("base", json!({"needs": 40, "episodes_acted": 0})),
                strategy(
                    "s",
                    json!({"needs": 40, "episodes_acted": 30, "needs_acted": 30,
                           "retention_at_need_acted": 0.95, "retention_at_need": 0.95,
                           "retention_at_need_ci95": [lo, 0.99], "episodes_below_floor": 0}),
                ),
            ];
            recommend(&all, &rule()).text
        };
        let sure = pick(0.92);
        assert!(sure.contains("(95% interval 92.0%–99.0%)"), "{sure}");
        let unsure = pick(0.85);
        assert!(
            unsure.contains("(95% interval 85.0%–99.0% — its interval reaches below the target"),
            "{unsure}"
        );
    }

    /// The sweep's mark: pooled retention at need at or over the target; no figure (nothing measured it) meets it.
    #[test]
    fn meets_reads_the_pooled_retention_against_the_target() {
        let with = |r: serde_json::Value| strategy("s", json!({ "retention_at_need": r }));
        assert!(meets(&with(json!(0.9)), 0.9));
        assert!(!meets(&with(json!(0.89)), 0.9));
        assert!(meets(&with(serde_json::Value::Null), 0.9));
    }

    /// Where no found finding is needed, nothing is recommended unless asked; asked, the cheapest that acted
    /// and is not flagged, on savings alone, saying so.
    #[test]
    fn without_needs_retention_measured_nothing() {
        let f = |cost: f64, acted: u64| {
            json!({"needs": 0, "episodes_acted": acted, "needs_acted": 0, "cost_usd": cost,
                   "savings": 0.3, "episodes_below_floor": 0})
        };
        let all = [
            strategy("base", f(9.0, 0)),
            strategy("a", f(2.0, 5)),
            strategy("b", f(1.0, 5)),
            strategy("c", f(0.5, 0)),
        ];
        let r = recommend(&all, &rule());
        assert_eq!(r.strategy, None);
        assert!(r.text.contains("retention measured nothing"), "{}", r.text);
        let r = recommend(
            &all,
            &Rule {
                without_retention: true,
                ..rule()
            },
        );
        assert_eq!(r.strategy.as_deref(), Some("b"));
        assert!(r.text.contains("savings alone"), "{}", r.text);
    }
}
