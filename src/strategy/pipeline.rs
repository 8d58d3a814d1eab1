//! Pipeline: the book's fallback order — measure; if over the trigger, apply the first stage; measure again;
//! apply the next stage only if still over; and so on.
//!
//! ## What it does
//! The trigger is `threshold × context_window` tokens (the pipeline's own `context_window`, or the run's). At a
//! call point under the trigger nothing happens. Over it, stages run in order until the request is under the
//! trigger again. Any strategies can be chained; the book's order is compaction, then summarization.
//!
//! ## Trade-offs
//! Cheap stages go first, so the expensive LLM summary runs only when compaction is not enough. A high
//! threshold keeps the prompt cache longer and delays losses; a low one saves more tokens.
//!
//! ## Parameters
//! - `threshold` (0.8): fraction of the window at which reduction starts, in (0, 1].
//! - `context_window`: overrides the run's window.
//! - `reserve_tokens`: trigger at window minus this many tokens instead (an auto-compact buffer).
//! - `trigger_tokens`: trigger at this many tokens instead, whatever the window (a server's `compact_threshold`,
//!   Anthropic's `trigger`); the run's window still bounds what is sent.
//! - `measure` (`request`): what is held against the trigger: the whole request, or `history` (the request less
//!   the tool schemas, unrecorded context, system messages and the task: ACON counts its history alone).
//! - `run_all` (false): run every stage at every call point, each judging its own trigger.
//! - `stages`: the strategies, in order.
//!
//! ## Example
//! `{"type": "pipeline", "threshold": 0.8, "stages": [{"type": "compaction"}, {"type": "summarization"}]}`

use serde::{Deserialize, Serialize};

use super::{Applied, CallPoint, Strategy, StrategyConfig, StrategySpec};
use crate::error::{Error, Result};
use crate::history::{Item, Role};
use crate::llm::{Llm, LlmRequest};

/// What a pipeline holds against its trigger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The whole request, as sent.
    #[default]
    Request,
    /// The history: the request less the tool schemas, unrecorded context, system messages and the task.
    History,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_request(m: &Measure) -> bool {
    *m == Measure::Request
}

fn default_threshold() -> f64 {
    0.8
}

/// Parameters of [`Pipeline`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Fraction of the context window at which reduction starts.
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// The window, when it differs from the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<usize>,
    /// Trigger at the window minus this many tokens, instead of at `threshold` × window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_tokens: Option<usize>,
    /// Trigger at this many tokens, instead of at a share of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_tokens: Option<usize>,
    /// What is held against the trigger.
    #[serde(default, skip_serializing_if = "is_request")]
    pub measure: Measure,
    /// Run every stage at every call point, each with its own trigger; the pipeline's trigger is ignored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub run_all: bool,
    /// The stages, in order.
    pub stages: Vec<StrategyConfig>,
}

impl StrategySpec for PipelineConfig {
    /// Checks the parameters and every stage.
    /// When the threshold is outside (0, 1], there is no stage, or a stage is invalid.
    fn validate(&self) -> Result<()> {
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(Error::Config(format!(
                "pipeline threshold {} is outside (0, 1]",
                self.threshold
            )));
        }
        if self.stages.is_empty() {
            return Err(Error::Config("pipeline has no stage".into()));
        }
        if self
            .stages
            .iter()
            .any(|s| matches!(s, StrategyConfig::AsRecorded(_)))
        {
            return Err(Error::Config(
                "as_recorded replays what an agent sent: it cannot be a pipeline's stage".into(),
            ));
        }
        if self.trigger_tokens == Some(0) {
            return Err(Error::Config(
                "pipeline trigger_tokens must be above 0".into(),
            ));
        }
        self.stages.iter().try_for_each(StrategyConfig::validate)
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(Pipeline::new(self.clone()))
    }

    /// Its trigger (what it brings a request under, unless every stage runs regardless), or a stage's own
    /// budget when that is smaller.
    fn budget(&self, context_window: usize) -> Option<usize> {
        // A trigger on the history alone is no size of the request.
        let own = (!self.run_all && self.measure == Measure::Request)
            .then(|| self.trigger_tokens(context_window));
        self.stages
            .iter()
            .filter_map(|s| s.budget(context_window))
            .chain(own)
            .min()
    }
}

impl PipelineConfig {
    /// A pipeline of `stages` triggered at `threshold` × the run's window, every other parameter at its
    /// default.
    #[must_use]
    pub fn new(threshold: f64, stages: Vec<StrategyConfig>) -> Self {
        Self {
            threshold,
            context_window: None,
            reserve_tokens: None,
            trigger_tokens: None,
            measure: Measure::Request,
            run_all: false,
            stages,
        }
    }

    /// The trigger in tokens for a run whose window is `run_window`: `trigger_tokens`, or `threshold` × the
    /// window, or the window less `reserve_tokens`.
    #[must_use]
    pub fn trigger_tokens(&self, run_window: usize) -> usize {
        if let Some(tokens) = self.trigger_tokens {
            return tokens;
        }
        let window = self.context_window.unwrap_or(run_window);
        if let Some(reserve) = self.reserve_tokens {
            return window.saturating_sub(reserve);
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let trigger = (window as f64 * self.threshold).floor() as usize;
        trigger
    }
}

/// The pipeline strategy; see the module docs.
pub struct Pipeline {
    config: PipelineConfig,
    stages: Vec<Box<dyn Strategy>>,
}

impl Pipeline {
    /// A pipeline with fresh stages.
    #[must_use]
    pub fn new(config: PipelineConfig) -> Self {
        let stages = config.stages.iter().map(StrategyConfig::build).collect();
        Self { config, stages }
    }

    /// The trigger in tokens for a run whose window is `run_window`.
    #[must_use]
    pub fn trigger_tokens(&self, run_window: usize) -> usize {
        self.config.trigger_tokens(run_window)
    }
}

impl Strategy for Pipeline {
    fn apply(&mut self, state: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied> {
        let trigger = self.trigger_tokens(state.context_window);
        let mut applied = Applied::unchanged();
        let mut tokens = state.input_tokens(req);
        for stage in &mut self.stages {
            if !self.config.run_all && measured(self.config.measure, state, req, tokens) <= trigger
            {
                break;
            }
            // Until a stage changes the request, what the caller knew of it still holds.
            let stage_state = if applied.changed() {
                state.with_input_tokens(tokens)
            } else {
                CallPoint {
                    input_tokens: Some(tokens),
                    ..state.clone()
                }
            };
            let done = stage.apply(&stage_state, req, llm)?;
            if done.changed() {
                tokens = state.measure(req);
            }
            applied.merge(done);
        }
        Ok(applied)
    }
}

/// What is held against the trigger, of a request of `tokens` tokens.
fn measured(measure: Measure, state: &CallPoint, req: &LlmRequest, tokens: usize) -> usize {
    match measure {
        Measure::Request => tokens,
        Measure::History => {
            let task = req.contents.iter().position(|i| i.is_role(Role::User));
            let head: usize = req
                .instructions
                .iter()
                .map(|i| state.tokenizer.count_instruction(i))
                .chain(
                    req.contents
                        .iter()
                        .enumerate()
                        .filter(|&(k, i)| i.is_role(Role::System) || Some(k) == task)
                        .map(|(_, i): (usize, &Item)| state.tokenizer.count_item(i)),
                )
                .sum();
            tokens.saturating_sub(state.fixed_tokens() + head)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Item;
    use crate::strategy::testing::{mock, run, state};
    use crate::strategy::{CompactionConfig, SummarizationConfig};

    fn req(n: usize) -> LlmRequest {
        let mut items = vec![Item::system("sys"), Item::user("task")];
        for i in 0..n {
            items.push(Item::tool_call(format!("c{i}"), "read", "{}"));
            items.push(Item::tool_result(
                format!("c{i}"),
                "read",
                format!("data {i} ").repeat(200),
            ));
        }
        LlmRequest::from_contents(items)
    }

    fn book_order(threshold: f64) -> Pipeline {
        Pipeline::new(PipelineConfig {
            threshold,
            context_window: Some(10_000),
            reserve_tokens: None,
            trigger_tokens: None,
            measure: Measure::Request,
            run_all: false,
            stages: vec![
                StrategyConfig::Compaction(CompactionConfig::default()),
                StrategyConfig::Summarization(SummarizationConfig::default()),
            ],
        })
    }

    #[test]
    fn an_absolute_trigger_ignores_the_window() {
        let config = PipelineConfig {
            trigger_tokens: Some(150_000),
            ..book_order(0.5).config
        };
        assert_eq!(config.trigger_tokens(1_000_000), 150_000);
        assert_eq!(config.trigger_tokens(10), 150_000);
        assert_eq!(config.budget(200_000), Some(150_000));
    }

    #[test]
    fn a_history_trigger_leaves_out_the_head() {
        let st = state(0);
        let mut p = book_order(1.0);
        p.config.trigger_tokens = Some(2_000);
        p.config.measure = Measure::History;
        // A long system prompt and task, a short history: under the trigger on the history alone.
        let mut r = req(1);
        r.contents[0] = Item::system("rules ".repeat(3_000));
        r.contents[1] = Item::user("task ".repeat(3_000));
        assert!(st.measure(&r) > 2_000);
        let before = r.clone();
        run(&mut p, &st, &mut r, &mock());
        assert_eq!(r, before);
        assert_eq!(p.config.budget(10_000), None);
    }

    #[test]
    fn under_trigger_does_nothing() {
        let mut r = req(2);
        let before = r.clone();
        assert_eq!(
            run(&mut book_order(1.0), &state(0), &mut r, &mock()),
            Applied::unchanged()
        );
        assert_eq!(r, before);
    }

    #[test]
    fn compaction_first_summary_only_if_still_over() {
        let st = state(0);
        // 8 results of ~500 tokens; compaction alone (3 kept) brings them under 3,000 tokens: no summary.
        let mut r = req(8);
        assert!(st.measure(&r) > 3_000);
        let a = run(&mut book_order(0.3), &st, &mut r, &mock());
        assert!(st.measure(&r) <= 3_000);
        assert!(a.compacted_items > 0);
        assert!(a.llm_calls.is_empty());
        // With a tiny trigger compaction is not enough: the summary runs.
        let mut r = req(8);
        let a = run(&mut book_order(0.01), &st, &mut r, &mock());
        assert!(a.compacted_items > 0);
        assert_eq!(a.llm_calls.len(), 1);
        assert!(r.instructions[0].starts_with("[Previous work summary]"));
    }
}
