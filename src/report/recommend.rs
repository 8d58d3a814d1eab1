//! What to pick: the cheapest strategy (or sweep setting) whose retention at need meets the target.

use serde::{Deserialize, Serialize};

use crate::metrics::{fields as field, StrategyMetrics};
use crate::report::pct;

/// The strategy a run or a sweep recommends, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The strategy name, or `None` when no setting reaches the target.
    pub strategy: Option<String>,
    /// The sentence the report prints.
    pub text: String,
}

/// Whether a strategy's retention at need reaches `min_retention` (a strategy on episodes without a found
/// finding does: nothing measures it, and the recommendation says so).
#[must_use]
pub fn meets(s: &StrategyMetrics, min_retention: f64) -> bool {
    s.number(field::RETENTION_AT_NEED).unwrap_or(1.0) >= min_retention
}

/// The cheapest setting whose retention at need is at least `min_retention` (by savings when costs are unknown).
#[must_use]
pub fn recommend(strategies: &[StrategyMetrics], min_retention: f64) -> Recommendation {
    let savings = |s: &StrategyMetrics| s.number(field::SAVINGS).unwrap_or(0.0);
    let ok: Vec<&StrategyMetrics> = strategies
        .iter()
        .filter(|s| s.strategy != "none" && meets(s, min_retention))
        .collect();
    let best =
        ok.iter().min_by(
            |a, b| match (a.number(field::COST_USD), b.number(field::COST_USD)) {
                (Some(x), Some(y)) => x.total_cmp(&y).then(savings(b).total_cmp(&savings(a))),
                _ => savings(b).total_cmp(&savings(a)),
            },
        );
    match best {
        Some(s) => {
            let interval = match s.get(field::RETENTION_AT_NEED_CI95).as_array().map(|a| {
                (
                    a.first().and_then(serde_json::Value::as_f64),
                    a.get(1).and_then(serde_json::Value::as_f64),
                )
            }) {
                Some((Some(lo), Some(hi))) => {
                    let caveat = if lo < min_retention {
                        " — its interval reaches below the target, so with these episodes it may not meet it"
                    } else {
                        ""
                    };
                    format!(
                        " (95% interval {}–{}{caveat})",
                        pct(Some(lo)),
                        pct(Some(hi))
                    )
                }
                _ => String::new(),
            };
            // A pooled figure mixes the episodes it left alone: say what it did where it acted.
            let acted = s.count(field::EPISODES_ACTED);
            let acted = if acted < s.episodes as u64 {
                let there = s.number(field::RETENTION_AT_NEED_ACTED);
                // With no found finding needed where it acted, there is no share to give.
                let kept = there.map_or_else(
                    || ", where no finding the agent found was needed".to_owned(),
                    |r| format!(" and kept {} there", pct(Some(r))),
                );
                format!(
                    " It acted on {acted} of {} episodes (the rest it left as they were){kept}{}.",
                    s.episodes,
                    if there.is_some_and(|r| r < min_retention) {
                        ", below the target: on histories that outgrow the window, expect that"
                    } else {
                        ""
                    }
                )
            } else {
                String::new()
            };
            let claim = match s.number(field::RETENTION_AT_NEED) {
                Some(r) => format!(
                    "the cheapest that keeps at least {} of the findings the agent found where they are needed — \
                     it keeps {}{interval}, {} at their first need",
                    pct(Some(min_retention)),
                    pct(Some(r)),
                    pct(s.number(field::RETENTION_FIRST_NEED))
                ),
                None => "the cheapest; no finding the agent found is needed on these episodes, so nothing \
                         measured what it loses (add findings: README, Dataset format)"
                    .to_owned(),
            };
            Recommendation {
                strategy: Some(s.strategy.clone()),
                text: format!(
                    "Use `{}`: {claim}, saves {} of input tokens and costs {} ({} less than no reduction), with {} \
                     strategy LLM calls.{acted}",
                    s.strategy,
                    pct(Some(savings(s))),
                    s.number(field::COST_USD)
                        .map_or_else(|| "an unknown amount".into(), |c| format!("${c:.2}")),
                    pct(s.number(field::COST_SAVINGS)),
                    s.count(field::STRATEGY_CALLS)
                ),
            }
        }
        None => Recommendation {
            strategy: None,
            text: format!(
                "Nothing keeps {} of the findings the agent found where they are needed; the best retention at \
                 need is {}. Lower the target (--min-retention) or try gentler settings (ctxbench sweep).",
                pct(Some(min_retention)),
                pct(strategies
                    .iter()
                    .filter(|s| s.strategy != "none")
                    .filter_map(|s| s.number(field::RETENTION_AT_NEED))
                    .reduce(f64::max))
            ),
        },
    }
}
