//! Context-reduction strategies: the [`Strategy`] trait, what an application reports ([`Applied`]) and the
//! serializable configuration that builds each strategy ([`StrategyConfig`]).
//!
//! Contract for every implementation: keep every system message, return the same output for the same input
//! and state, and when an LLM call fails leave the request exactly as it was and record the failure (an error
//! text is never committed as a summary). State that must persist between call points (a summary position,
//! a compaction store) lives in the strategy value, one per episode replay.

pub mod compaction;
pub mod condenser;
pub mod external;
pub mod pipeline;
pub mod presets;
pub mod sliding_window;
pub mod summarization;

use std::sync::Arc;

use async_trait::async_trait;
use rustc_hash::{FxBuildHasher, FxHashSet};
use serde::{Deserialize, Serialize};

pub use compaction::{Compaction, CompactionConfig, CompactionMode};
pub use condenser::{CondenseAction, Condenser, CondenserConfig};
pub use external::{External, ExternalConfig};
pub use pipeline::{Pipeline, PipelineConfig};
pub use sliding_window::{SlidingWindow, SlidingWindowConfig};
pub use summarization::{Summarization, SummarizationConfig};

use crate::error::{Error, Result};
use crate::history::Item;
use crate::llm::{Llm, LlmRequest};
use crate::tokens::Tokenizer;

/// What the replay tells a strategy about the call point it is applied at.
#[derive(Debug, Clone)]
pub struct ReplayState {
    /// The run's tokenizer (with its shared item cache).
    pub tokenizer: Arc<Tokenizer>,
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// Zero-based index of the call point.
    pub step: usize,
    /// Tokens of the request as handed to the strategy, when the caller knows them (the replay does);
    /// `None` makes [`ReplayState::input_tokens`] measure.
    pub input_tokens: Option<usize>,
    /// Tokens of each content item of the request as handed to the strategy, when the caller knows them (the
    /// replay does): a strategy that weighs every item reads them here instead of hashing every item again
    /// (see [`ReplayState::content_tokens`]).
    pub content_tokens: Option<Arc<Vec<usize>>>,
}

impl ReplayState {
    /// The first call point of a model with `context_window` tokens; nothing known of the request yet.
    #[must_use]
    pub fn new(tokenizer: Arc<Tokenizer>, context_window: usize) -> Self {
        Self {
            tokenizer,
            context_window,
            step: 0,
            input_tokens: None,
            content_tokens: None,
        }
    }

    /// Tokens of `req` as it would be sent.
    #[must_use]
    pub fn measure(&self, req: &LlmRequest) -> usize {
        self.tokenizer
            .count_request(&req.instructions, &req.contents)
    }

    /// Tokens of `req` as handed to the strategy, before it changed anything: known without a pass over the
    /// request when the caller set [`ReplayState::input_tokens`].
    #[must_use]
    pub fn input_tokens(&self, req: &LlmRequest) -> usize {
        self.input_tokens.unwrap_or_else(|| self.measure(req))
    }

    /// Tokens of each of `req`'s content items as handed to the strategy, before it changed anything: the
    /// caller's [`ReplayState::content_tokens`] when they cover the request, else counted (each item through
    /// the tokenizer's cache).
    #[must_use]
    pub fn content_tokens<'a>(&'a self, req: &LlmRequest) -> std::borrow::Cow<'a, [usize]> {
        match &self.content_tokens {
            Some(known) if known.len() == req.contents.len() => std::borrow::Cow::Borrowed(known),
            _ => req
                .contents
                .iter()
                .map(|i| self.tokenizer.count_item(i))
                .collect(),
        }
    }

    /// The same call point after a strategy changed the request, which now has `tokens` tokens (for a
    /// strategy that runs others): what was known of each item no longer holds.
    #[must_use]
    pub fn with_input_tokens(&self, tokens: usize) -> Self {
        Self {
            input_tokens: Some(tokens),
            content_tokens: None,
            ..self.clone()
        }
    }
}

/// One LLM call a strategy made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmCall {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Latency in milliseconds (real or modelled).
    pub latency_ms: f64,
    /// The error, when the call failed.
    pub error: Option<String>,
}

/// What one application of a strategy did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Whether the request changed.
    pub changed: bool,
    /// LLM calls made, in order.
    pub llm_calls: Vec<LlmCall>,
    /// Items that were summarized away.
    pub summarized_items: usize,
    /// Items whose content was replaced by a stub or truncated.
    pub compacted_items: usize,
    /// Items dropped.
    pub dropped_items: usize,
    /// When the request changed: `Some(p)` if every instruction and the first `p` content items are exactly
    /// as they were handed in (the replay then revisits only the rest); `None` if unknown.
    pub kept_prefix: Option<usize>,
    /// When the request changed only by dropping content items (every instruction and every other item
    /// exactly as handed in, in order): for each item handed in, whether it is still there. The replay then
    /// reuses what it knew of the kept items instead of reading them again; `None` if unknown.
    pub kept_items: Option<Vec<bool>>,
}

impl Applied {
    /// Adds what `other` did to what this did.
    pub fn merge(&mut self, other: Applied) {
        if other.changed {
            self.kept_prefix = if self.changed {
                self.kept_prefix
                    .zip(other.kept_prefix)
                    .map(|(a, b)| a.min(b))
            } else {
                other.kept_prefix
            };
            self.kept_items = if self.changed {
                // Two drops make one: `other` chose among the items this one kept.
                self.kept_items
                    .take()
                    .zip(other.kept_items)
                    .filter(|(first, then)| first.iter().filter(|&&k| k).count() == then.len())
                    .map(|(first, then)| {
                        let mut then = then.into_iter();
                        first
                            .into_iter()
                            .map(|kept| kept && then.next().unwrap_or(false))
                            .collect()
                    })
            } else {
                other.kept_items
            };
        }
        self.changed |= other.changed;
        self.llm_calls.extend(other.llm_calls);
        self.summarized_items += other.summarized_items;
        self.compacted_items += other.compacted_items;
        self.dropped_items += other.dropped_items;
    }

    /// Number of failed LLM calls.
    #[must_use]
    pub fn failures(&self) -> usize {
        self.llm_calls.iter().filter(|c| c.error.is_some()).count()
    }
}

/// A context-reduction strategy, applied at every call point of a replay.
#[async_trait]
pub trait Strategy: Send {
    /// Reduces `req` in place; the reduced request is the live request from then on.
    ///
    /// # Errors
    /// Only for harness faults; a failed LLM call is recorded in [`Applied::llm_calls`] instead.
    async fn apply(
        &mut self,
        state: &ReplayState,
        req: &mut LlmRequest,
        llm: &dyn Llm,
    ) -> Result<Applied>;
}

/// The baseline: sends the history unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReduction;

#[async_trait]
impl Strategy for NoReduction {
    async fn apply(&mut self, _: &ReplayState, _: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        Ok(Applied::default())
    }
}

/// A strategy's configuration, as data (`{"type": "sliding_window", "max_tokens": 8000}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StrategyConfig {
    /// No reduction: the baseline.
    None,
    /// See [`SlidingWindow`].
    SlidingWindow(SlidingWindowConfig),
    /// See [`Compaction`].
    Compaction(CompactionConfig),
    /// See [`Summarization`].
    Summarization(SummarizationConfig),
    /// See [`Pipeline`].
    Pipeline(PipelineConfig),
    /// See [`Condenser`].
    Condenser(CondenserConfig),
    /// See [`External`].
    External(ExternalConfig),
}

impl StrategyConfig {
    /// Checks the parameters.
    ///
    /// # Errors
    /// Names the parameter that is out of range.
    pub fn validate(&self) -> Result<()> {
        match self {
            StrategyConfig::None | StrategyConfig::Compaction(_) => Ok(()),
            StrategyConfig::SlidingWindow(c) => c.validate(),
            StrategyConfig::Summarization(c) => c.validate(),
            StrategyConfig::Pipeline(c) => c.validate(),
            StrategyConfig::Condenser(c) => c.validate(),
            StrategyConfig::External(c) => c.validate(),
        }
    }

    /// A fresh strategy for one episode.
    #[must_use]
    pub fn build(&self) -> Box<dyn Strategy> {
        match self {
            StrategyConfig::None => Box::new(NoReduction),
            StrategyConfig::SlidingWindow(c) => Box::new(SlidingWindow::new(c.clone())),
            StrategyConfig::Compaction(c) => Box::new(Compaction::new(c.clone())),
            StrategyConfig::Summarization(c) => Box::new(Summarization::new(c.clone())),
            StrategyConfig::Pipeline(c) => Box::new(Pipeline::new(c.clone())),
            StrategyConfig::Condenser(c) => Box::new(Condenser::new(c.clone())),
            StrategyConfig::External(c) => Box::new(External::new(c.clone())),
        }
    }
}

/// A strategy configuration with the name it is reported under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedStrategy {
    /// Report name, unique within a run.
    pub name: String,
    /// The configuration.
    #[serde(flatten)]
    pub config: StrategyConfig,
}

impl NamedStrategy {
    /// Names a configuration.
    pub fn new(name: impl Into<String>, config: StrategyConfig) -> Self {
        Self {
            name: name.into(),
            config,
        }
    }
}

/// The built-in strategies a run compares when the config names none, by name.
#[must_use]
pub fn defaults() -> Vec<NamedStrategy> {
    vec![
        NamedStrategy::new("none", StrategyConfig::None),
        NamedStrategy::new(
            "sliding_window",
            StrategyConfig::SlidingWindow(SlidingWindowConfig {
                max_tokens: Some(16_000),
                max_items: None,
                ..SlidingWindowConfig::default()
            }),
        ),
        NamedStrategy::new(
            "compaction",
            StrategyConfig::Compaction(CompactionConfig::default()),
        ),
        NamedStrategy::new(
            "summarization",
            StrategyConfig::Pipeline(PipelineConfig {
                threshold: 0.5,
                context_window: None,
                reserve_tokens: None,
                run_all: false,
                stages: vec![StrategyConfig::Summarization(SummarizationConfig::default())],
            }),
        ),
        NamedStrategy::new(
            "pipeline",
            StrategyConfig::Pipeline(PipelineConfig {
                threshold: 0.5,
                context_window: None,
                reserve_tokens: None,
                run_all: false,
                stages: vec![
                    StrategyConfig::Compaction(CompactionConfig::default()),
                    StrategyConfig::Summarization(SummarizationConfig::default()),
                ],
            }),
        ),
    ]
}

/// Keeps the items whose flag is set, and keeps tool calls and results paired: a kept result whose call is
/// not kept goes, and so does a kept call whose results all go (an API rejects either one alone). Returns the
/// flags it kept by (one per item handed in; the number dropped is the number unset).
pub(crate) fn retain_paired(items: &mut Vec<Item>, keep: &[bool]) -> Vec<bool> {
    let keep = paired(items, keep);
    let mut flags = keep.iter();
    items.retain(|_| flags.next().copied().unwrap_or(true));
    keep
}

/// The flags [`retain_paired`] keeps by.
pub(crate) fn paired(items: &[Item], keep: &[bool]) -> Vec<bool> {
    // Sized once: a sliding window pairs every item of its window at every call point.
    let tools = items
        .iter()
        .filter(|i| !matches!(i, Item::Message { .. }))
        .count();
    let mut kept_calls: FxHashSet<&str> = FxHashSet::with_capacity_and_hasher(tools, FxBuildHasher);
    let mut answered: FxHashSet<&str> = FxHashSet::with_capacity_and_hasher(tools, FxBuildHasher);
    let mut unanswered: FxHashSet<&str> = FxHashSet::default();
    for (item, &k) in items.iter().zip(keep) {
        match item {
            Item::ToolCall { id, .. } if k => {
                kept_calls.insert(id);
            }
            Item::ToolResult { call_id, .. } if k => {
                answered.insert(call_id);
            }
            Item::ToolResult { call_id, .. } => {
                unanswered.insert(call_id);
            }
            _ => {}
        }
    }
    items
        .iter()
        .zip(keep)
        .map(|(item, &k)| {
            k && match item {
                Item::ToolResult { call_id, .. } => kept_calls.contains(&**call_id),
                Item::ToolCall { id, .. } => {
                    answered.contains(&**id) || !unanswered.contains(&**id)
                }
                Item::Message { .. } => true,
            }
        })
        .collect()
}

/// Checks that names are unique and parameters valid.
///
/// # Errors
/// Names the strategy at fault.
pub fn validate_all(strategies: &[NamedStrategy]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for s in strategies {
        if s.name.trim().is_empty() {
            return Err(Error::Config("a strategy has an empty name".into()));
        }
        if !seen.insert(s.name.as_str()) {
            return Err(Error::Config(format!(
                "strategy name '{}' is used twice",
                s.name
            )));
        }
        s.config
            .validate()
            .map_err(|e| Error::Config(format!("strategy '{}': {e}", s.name)))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for strategy tests.
    use super::*;
    use crate::llm::mock::{MockConfig, MockLlm};
    use crate::llm::LlmResponse;

    pub fn state(window: usize) -> ReplayState {
        ReplayState::new(Tokenizer::shared_default().unwrap(), window)
    }

    pub fn mock() -> MockLlm {
        MockLlm::new(MockConfig::default(), Tokenizer::shared_default().unwrap())
    }

    pub fn run<S: Strategy + ?Sized>(
        s: &mut S,
        st: &ReplayState,
        req: &mut LlmRequest,
        llm: &dyn Llm,
    ) -> Applied {
        pollster::block_on(s.apply(st, req, llm)).unwrap()
    }

    /// An LLM that always fails.
    pub struct Failing;

    #[async_trait]
    impl Llm for Failing {
        fn model(&self) -> &str {
            "failing"
        }
        async fn generate(&self, _: &LlmRequest) -> Result<LlmResponse> {
            Err(Error::Llm("503 service unavailable".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_data() {
        let json = r#"{"name":"w","type":"sliding_window","max_tokens":8000}"#;
        let s: NamedStrategy = serde_json::from_str(json).unwrap();
        assert_eq!(
            s.config,
            StrategyConfig::SlidingWindow(SlidingWindowConfig {
                max_tokens: Some(8000),
                max_items: None,
                ..SlidingWindowConfig::default()
            })
        );
        let toml_text = "name = \"p\"\ntype = \"pipeline\"\nthreshold = 0.7\n[[stages]]\ntype = \"compaction\"\nkeep_last = 2\n";
        let p: NamedStrategy = toml::from_str(toml_text).unwrap();
        assert!(matches!(p.config, StrategyConfig::Pipeline(ref c) if c.stages.len() == 1));
    }

    #[test]
    fn unknown_parameter_is_an_error() {
        let err =
            serde_json::from_str::<StrategyConfig>(r#"{"type":"sliding_window","max_tokenz":1}"#)
                .unwrap_err();
        assert!(err.to_string().contains("max_tokenz"), "{err}");
    }

    #[test]
    fn merged_drops_compose_and_a_rewrite_forgets_them() {
        let dropped = |kept: &[bool]| Applied {
            changed: true,
            kept_items: Some(kept.to_vec()),
            ..Applied::default()
        };
        // Of five items the first drops the second and fourth; of the three left the next drops the first.
        let mut both = dropped(&[true, false, true, false, true]);
        both.merge(dropped(&[false, true, true]));
        assert_eq!(both.kept_items, Some(vec![false, false, true, false, true]));
        // A mask that does not fit what was kept is no knowledge.
        for then in [&[true, true, true][..], &[true]] {
            let mut wrong = dropped(&[true, false, true]);
            wrong.merge(dropped(then));
            assert_eq!(wrong.kept_items, None);
        }
        // Unchanged steps keep what is known; a rewrite that says nothing of its items loses it.
        let mut then = dropped(&[true, false]);
        then.merge(Applied::default());
        assert_eq!(then.kept_items, Some(vec![true, false]));
        then.merge(Applied {
            changed: true,
            kept_prefix: Some(1),
            ..Applied::default()
        });
        assert_eq!(then.kept_items, None);
        assert_eq!(then.kept_prefix, None);
    }

    #[test]
    fn defaults_are_valid_and_unique() {
        validate_all(&defaults()).unwrap();
    }
}
