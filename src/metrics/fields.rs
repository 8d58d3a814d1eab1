//! The strategy fields read by name outside the metrics — by the report's tables, the console, the sweep, the
//! recommendation and the run's frontier — as typed keys: [`crate::metrics::StrategyMetrics`] is read only
//! through a [`FieldKey`], a key can only be one of these constants, and a test checks that each names a field
//! of the standard catalog. A misspelt key does not compile; a key whose field was renamed or removed fails
//! `every_key_is_a_field_of_the_standard_catalog`.

/// The name of a strategy field, one of this module's constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldKey(&'static str);

impl FieldKey {
    /// The field's name in `summary.json`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.0
    }
}

macro_rules! keys {
    ($($(#[$doc:meta])* $key:ident = $name:literal,)*) => {
        $($(#[$doc])* pub const $key: FieldKey = FieldKey($name);)*
        /// Every key, in this module's order.
        pub const ALL: &[FieldKey] = &[$($key),*];
    };
}

keys! {
    /// Savings, pooled.
    SAVINGS = "savings",
    /// Its interval.
    SAVINGS_CI95 = "savings_ci95",
    /// Input tokens sent.
    INPUT_TOKENS = "input_tokens",
    /// The largest request.
    PEAK_TOKENS = "peak_tokens",
    /// Call points over the window.
    STEPS_OVER_WINDOW = "steps_over_window",
    /// The strategy's LLM calls.
    STRATEGY_CALLS = "strategy_calls",
    /// Of those, failed.
    STRATEGY_FAILURES = "strategy_failures",
    /// Their prompt tokens.
    STRATEGY_INPUT_TOKENS = "strategy_input_tokens",
    /// Their completion tokens.
    STRATEGY_OUTPUT_TOKENS = "strategy_output_tokens",
    /// Their LLM time.
    STRATEGY_LLM_MS = "strategy_llm_ms",
    /// Cost with the prompt cache.
    COST_USD = "cost_usd",
    /// Cost saved with the prompt cache.
    COST_SAVINGS = "cost_savings",
    /// Its interval.
    COST_SAVINGS_CI95 = "cost_savings_ci95",
    /// Cost with no cache.
    COST_USD_NO_CACHE = "cost_usd_no_cache",
    /// Cost saved with no cache.
    COST_SAVINGS_NO_CACHE = "cost_savings_no_cache",
    /// Retention at need, the headline.
    RETENTION_AT_NEED = "retention_at_need",
    /// Its interval.
    RETENTION_AT_NEED_CI95 = "retention_at_need_ci95",
    /// Retention at the first need.
    RETENTION_FIRST_NEED = "retention_first_need",
    /// Its interval.
    RETENTION_FIRST_NEED_CI95 = "retention_first_need_ci95",
    /// Retention at need of task-given findings.
    RETENTION_AT_NEED_TASK = "retention_at_need_task",
    /// Its interval.
    RETENTION_AT_NEED_TASK_CI95 = "retention_at_need_task_ci95",
    /// Retention at need per finding kind.
    RETENTION_AT_NEED_BY_KIND = "retention_at_need_by_kind",
    /// (found finding, need) pairs.
    NEEDS = "needs",
    /// Found findings with a need.
    FIRST_NEEDS = "first_needs",
    /// (task-given finding, need) pairs.
    NEEDS_TASK = "needs_task",
    /// Episodes without a found finding needed.
    EPISODES_WITHOUT_FOUND_NEEDS = "episodes_without_found_needs",
    /// Needs lost per cause.
    LOST_BY = "lost_by",
    /// Retention at each episode's last call point.
    FINAL_RETENTION = "final_retention",
    /// The mean of the episodes' mean retention.
    MEAN_RETENTION = "mean_retention",
    /// Probes answered right.
    PROBE_ACCURACY = "probe_accuracy",
    /// Probes the unreduced context answers.
    PROBES_VALID = "probes_valid",
    /// Valid probes the strategy answers too.
    PROBE_RETENTION = "probe_retention",
    /// Episodes the strategy acted on.
    EPISODES_ACTED = "episodes_acted",
    /// Savings there.
    SAVINGS_ACTED = "savings_acted",
    /// Cost saved there.
    COST_SAVINGS_ACTED = "cost_savings_acted",
    /// Episodes acted on whose cost there is known.
    EPISODES_ACTED_PRICED = "episodes_acted_priced",
    /// Cost saved there, over those.
    COST_SAVINGS_ACTED_PRICED = "cost_savings_acted_priced",
    /// The needs met there.
    NEEDS_ACTED = "needs_acted",
    /// Retention at need there.
    RETENTION_AT_NEED_ACTED = "retention_at_need_acted",
    /// What no strategy may reduce, at most.
    FLOOR_TOKENS = "floor_tokens",
    /// The strategy's budget (0: none).
    BUDGET_TOKENS = "budget_tokens",
    /// Episodes where the budget is below the floor.
    EPISODES_BELOW_FLOOR = "episodes_below_floor",
    /// Episodes the strategy's framework fails (raises).
    EPISODES_FAILED = "episodes_failed",
    /// Retention at the first need there.
    RETENTION_FIRST_NEED_ACTED = "retention_first_need_acted",
    /// Share of tokens per item kind.
    TOKEN_SHARE = "token_share",
    /// Open probes sent to the judge.
    JUDGED = "judged",
    /// Of those, graded.
    JUDGE_GRADED = "judge_graded",
    /// The mean overall grade.
    JUDGE_SCORE = "judge_score",
    /// Its interval.
    JUDGE_SCORE_CI95 = "judge_score_ci95",
    /// The mean grade per rubric dimension.
    JUDGE_SCORE_BY_DIMENSION = "judge_score_by_dimension",
    /// The mean grade per probe kind.
    JUDGE_SCORE_BY_KIND = "judge_score_by_kind",
    /// Agreement with exact-answer grading.
    JUDGE_AGREEMENT = "judge_agreement",
    /// Calls to the judge.
    JUDGE_CALLS = "judge_calls",
    /// Their cost.
    JUDGE_COST_USD = "judge_cost_usd",
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key is read by the report, the console, the sweep or the run: each must be a field the standard catalog
    /// computes, or the reader would print "–" for a figure that does not exist.
    #[test]
    fn every_key_is_a_field_of_the_standard_catalog() {
        let catalog = crate::metrics::Catalog::standard();
        let fields: Vec<&str> = catalog
            .strategy_fields()
            .map(|f| f.column.name.as_str())
            .collect();
        let unknown: Vec<&str> = ALL
            .iter()
            .map(|k| k.name())
            .filter(|k| !fields.contains(k))
            .collect();
        assert!(unknown.is_empty(), "keys naming no field: {unknown:?}");
        let mut names: Vec<&str> = ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "a field has two keys");
    }
}
