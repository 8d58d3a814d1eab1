//! The sweep's recommendation: the cheapest setting that keeps enough findings.

use serde::Serialize;

use crate::metrics::StrategyMetrics;
use crate::report::pct;

/// The setting a sweep recommends, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The strategy name, or `None` when no setting reaches the target.
    pub strategy: Option<String>,
    /// The sentence the report prints.
    pub text: String,
}

/// Whether a strategy's retention at need reaches `min_retention` (a strategy without findings does).
#[must_use]
pub fn meets(s: &StrategyMetrics, min_retention: f64) -> bool {
    s.number("retention_at_need").unwrap_or(1.0) >= min_retention
}

/// The cheapest setting whose retention at need is at least `min_retention` (by savings when costs are unknown).
#[must_use]
pub fn recommend(strategies: &[StrategyMetrics], min_retention: f64) -> Recommendation {
    let savings = |s: &StrategyMetrics| s.number("savings").unwrap_or(0.0);
    let ok: Vec<&StrategyMetrics> = strategies
        .iter()
        .filter(|s| s.strategy != "none" && meets(s, min_retention))
        .collect();
    let best = ok
        .iter()
        .min_by(|a, b| match (a.number("cost_usd"), b.number("cost_usd")) {
            (Some(x), Some(y)) => x.total_cmp(&y).then(savings(b).total_cmp(&savings(a))),
            _ => savings(b).total_cmp(&savings(a)),
        });
    match best {
        Some(s) => Recommendation {
            strategy: Some(s.strategy.clone()),
            text: format!(
                "Use `{}`: the cheapest setting that keeps at least {} of findings where they are needed — it retains {}, saves {} of input \
                 tokens and costs {} ({} less than no reduction), with {} strategy LLM calls.",
                s.strategy,
                pct(Some(min_retention)),
                pct(s.number("retention_at_need")),
                pct(Some(savings(s))),
                s.number("cost_usd")
                    .map_or_else(|| "an unknown amount".into(), |c| format!("${c:.2}")),
                pct(s.number("cost_savings")),
                s.count("strategy_calls")
            ),
        },
        None => Recommendation {
            strategy: None,
            text: format!(
                "No setting keeps {} of findings; the best retention is {}. Lower --min-retention or add gentler settings.",
                pct(Some(min_retention)),
                pct(strategies
                    .iter()
                    .filter(|s| s.strategy != "none")
                    .filter_map(|s| s.number("retention_at_need"))
                    .reduce(f64::max))
            ),
        },
    }
}
