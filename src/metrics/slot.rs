//! The base names of the metrics' values, declared once: a metric puts, declares and aggregates its slots by
//! these constants, so that a misspelt slot does not compile. A value per kind pairs one with the kind
//! (`(slot::RETAINED, kind)`); its column is `retained_kind`.

/// `acted`.
pub const ACTED: &str = "acted";
/// `acted_from`.
pub const ACTED_FROM: &str = "acted_from";
/// `agree`.
pub const AGREE: &str = "agree";
/// `baseline_cost_usd`.
pub const BASELINE_COST_USD: &str = "baseline_cost_usd";
/// `baseline_input_tokens`.
pub const BASELINE_INPUT_TOKENS: &str = "baseline_input_tokens";
/// `below_floor`.
pub const BELOW_FLOOR: &str = "below_floor";
/// `both`.
pub const BOTH: &str = "both";
/// `budget_tokens`.
pub const BUDGET_TOKENS: &str = "budget_tokens";
/// `cached_tokens`.
pub const CACHED_TOKENS: &str = "cached_tokens";
/// `calls`.
pub const CALLS: &str = "calls";
/// `compacted_items`.
pub const COMPACTED_ITEMS: &str = "compacted_items";
/// `cost_usd`.
pub const COST_USD: &str = "cost_usd";
/// `cost_usd_no_cache`.
pub const COST_USD_NO_CACHE: &str = "cost_usd_no_cache";
/// `failed_at_step`.
pub const FAILED_AT_STEP: &str = "failed_at_step";
/// `framework_failed`.
pub const FRAMEWORK_FAILED: &str = "framework_failed";
/// `dimension`.
pub const DIMENSION: &str = "dimension";
/// `dropped_items`.
pub const DROPPED_ITEMS: &str = "dropped_items";
/// `final_retention`.
pub const FINAL_RETENTION: &str = "final_retention";
/// `findings`.
pub const FINDINGS: &str = "findings";
/// `findings_introduced`.
pub const FINDINGS_INTRODUCED: &str = "findings_introduced";
/// `findings_retained`.
pub const FINDINGS_RETAINED: &str = "findings_retained";
/// `first_needs`.
pub const FIRST_NEEDS: &str = "first_needs";
/// `first_retained`.
pub const FIRST_RETAINED: &str = "first_retained";
/// `floor_tokens`.
pub const FLOOR_TOKENS: &str = "floor_tokens";
/// `graded`.
pub const GRADED: &str = "graded";
/// `input_tokens`.
pub const INPUT_TOKENS: &str = "input_tokens";
/// `instructions_sent`.
pub const INSTRUCTIONS_SENT: &str = "instructions_sent";
/// `introduced`.
pub const INTRODUCED: &str = "introduced";
/// `items`.
pub const ITEMS: &str = "items";
/// `items_sent`.
pub const ITEMS_SENT: &str = "items_sent";
/// `judge_score`.
pub const JUDGE_SCORE: &str = "judge_score";
/// `judged`.
pub const JUDGED: &str = "judged";
/// `lost`.
pub const LOST: &str = "lost";
/// `mean_retention`.
pub const MEAN_RETENTION: &str = "mean_retention";
/// `needs`.
pub const NEEDS: &str = "needs";
/// `needs_task`.
pub const NEEDS_TASK: &str = "needs_task";
/// `needed`.
pub const NEEDED: &str = "needed";
/// `no_found_needs`.
pub const NO_FOUND_NEEDS: &str = "no_found_needs";
/// `output_tokens`.
pub const OUTPUT_TOKENS: &str = "output_tokens";
/// `over_window`.
pub const OVER_WINDOW: &str = "over_window";
/// `overall`.
pub const OVERALL: &str = "overall";
/// `peak_tokens`.
pub const PEAK_TOKENS: &str = "peak_tokens";
/// `probe_accuracy`.
pub const PROBE_ACCURACY: &str = "probe_accuracy";
/// `probe_retention`.
pub const PROBE_RETENTION: &str = "probe_retention";
/// `probes`.
pub const PROBES: &str = "probes";
/// `probes_correct`.
pub const PROBES_CORRECT: &str = "probes_correct";
/// `probes_kept`.
pub const PROBES_KEPT: &str = "probes_kept";
/// `probes_valid`.
pub const PROBES_VALID: &str = "probes_valid";
/// `priced_acted`.
pub const PRICED_ACTED: &str = "priced_acted";
/// `priced_cost_usd`.
pub const PRICED_COST_USD: &str = "priced_cost_usd";
/// `priced_baseline_cost_usd`.
pub const PRICED_BASELINE_COST_USD: &str = "priced_baseline_cost_usd";
/// `retained`.
pub const RETAINED: &str = "retained";
/// `retention`.
pub const RETENTION: &str = "retention";
/// `retention_at_need`.
pub const RETENTION_AT_NEED: &str = "retention_at_need";
/// `retention_at_need_task`.
pub const RETENTION_AT_NEED_TASK: &str = "retention_at_need_task";
/// `retention_first_need`.
pub const RETENTION_FIRST_NEED: &str = "retention_first_need";
/// `savings`.
pub const SAVINGS: &str = "savings";
/// `steps`.
pub const STEPS: &str = "steps";
/// `steps_over_window`.
pub const STEPS_OVER_WINDOW: &str = "steps_over_window";
/// `strategy_calls`.
pub const STRATEGY_CALLS: &str = "strategy_calls";
/// `strategy_failures`.
pub const STRATEGY_FAILURES: &str = "strategy_failures";
/// `strategy_input_tokens`.
pub const STRATEGY_INPUT_TOKENS: &str = "strategy_input_tokens";
/// `strategy_llm_ms`.
pub const STRATEGY_LLM_MS: &str = "strategy_llm_ms";
/// `strategy_output_tokens`.
pub const STRATEGY_OUTPUT_TOKENS: &str = "strategy_output_tokens";
/// `summarized_items`.
pub const SUMMARIZED_ITEMS: &str = "summarized_items";
/// `task_retained`.
pub const TASK_RETAINED: &str = "task_retained";
/// `tokens`.
pub const TOKENS: &str = "tokens";
/// `tokens_before`.
pub const TOKENS_BEFORE: &str = "tokens_before";
/// `tokens_sent`.
pub const TOKENS_SENT: &str = "tokens_sent";
/// `window_below_floor`.
pub const WINDOW_BELOW_FLOOR: &str = "window_below_floor";
