//! Context-reduction strategies: the [`Strategy`] trait, what the replay tells a strategy at a call point
//! ([`CallPoint`]), what an application reports ([`Applied`], with its [`Change`]) and the serializable
//! configuration that builds each strategy ([`StrategyConfig`]).
//!
//! Contract for every implementation: keep every system message, return the same output for the same input
//! and state, never separate a tool call from its result, and when an LLM call fails leave the request exactly
//! as it was and record the failure (an error text is never committed as a summary). State that must persist
//! between call points (a summary position, a compaction store) lives in the strategy value, one per episode
//! replay.
//!
//! **Declaring a change.** Every application says what it did to the request through a [`Change`], which has
//! no default: a strategy must choose. The replay reuses what it knew of the request only as far as the
//! declaration allows (`Unchanged` reuses everything, `Replaced` nothing), and in debug builds and tests it
//! checks every declaration against the request itself and panics, naming the strategy and the step, on a
//! wrong one. When in doubt, declare [`Change::Replaced`]: it is always right, only slower.
//!
//! **Adding a strategy**: one file with its config (implementing [`StrategySpec`]) and its strategy
//! (implementing [`Strategy`]), its `pub mod` and `pub use` lines, and an entry in the `registry!` invocation
//! below.

pub mod adk;
pub mod as_recorded;
pub mod change;
pub mod compaction;
pub mod condenser;
pub mod external;
pub mod inspect;
pub mod langmem;
pub mod openhands_sdk;
pub mod pairing;
pub mod pipeline;
pub mod presets;
pub mod prompt;
pub mod rewrite;
pub mod sliding_window;
pub mod strands;
pub mod summarization;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use adk::{Adk, AdkConfig};
pub use as_recorded::{AsRecorded, AsRecordedConfig};
pub use change::Change;
pub use compaction::{Compaction, CompactionConfig, CompactionMode};
pub use condenser::{CondenseAction, Condenser, CondenserConfig};
pub use external::{External, ExternalConfig};
pub use inspect::{Inspect, InspectCompaction, InspectConfig};
pub use langmem::{Langmem, LangmemConfig};
pub use openhands_sdk::{OpenhandsSdk, OpenhandsSdkConfig};
pub use pairing::{paired, retain_paired};
pub use pipeline::{Measure, Pipeline, PipelineConfig};
pub use prompt::Prompt;
pub use rewrite::{Rewrite, RewriteConfig, RewriteUnit};
pub use sliding_window::{SlidingWindow, SlidingWindowConfig};
pub use strands::{Strands, StrandsConfig};
pub use summarization::{Summarization, SummarizationConfig};

use crate::error::{Error, Result};
use crate::llm::{Llm, LlmRequest};
use crate::tokens::Tokenizer;

/// What the replay tells a strategy about the call point it is applied at.
#[derive(Debug, Clone)]
pub struct CallPoint {
    /// The run's tokenizer (with its shared item cache).
    pub tokenizer: Arc<Tokenizer>,
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// Zero-based index of the call point.
    pub step: usize,
    /// Tokens the episode's tool schemas add to the request (0 without tools): part of every request, never
    /// reduced, counted by [`CallPoint::measure`].
    pub tool_tokens: usize,
    /// Tokens of the context the agent sent here that the trace did not record (0 when it recorded all,
    /// [`crate::history::Item::Unrecorded`]): part of the request, never reduced, counted by
    /// [`CallPoint::measure`], like the tool schemas.
    pub unrecorded_tokens: usize,
    /// Tokens of the request as handed to the strategy, when the caller knows them (the replay does); `None`
    /// makes [`CallPoint::input_tokens`] measure.
    pub input_tokens: Option<usize>,
    /// Tokens of each content item of the request as handed to the strategy, when the caller knows them (the
    /// replay does): a strategy that weighs every item reads them here instead of hashing every item again
    /// (see [`CallPoint::content_tokens`]).
    pub content_tokens: Option<Arc<Vec<usize>>>,
}

impl CallPoint {
    /// The first call point of a model with `context_window` tokens; nothing known of the request yet.
    #[must_use]
    pub fn new(tokenizer: Arc<Tokenizer>, context_window: usize) -> Self {
        Self {
            tokenizer,
            context_window,
            step: 0,
            tool_tokens: 0,
            unrecorded_tokens: 0,
            input_tokens: None,
            content_tokens: None,
        }
    }

    /// Tokens of `req` as it would be sent, the tool schemas' and the unrecorded context's included.
    #[must_use]
    pub fn measure(&self, req: &LlmRequest) -> usize {
        self.fixed_tokens()
            + self
                .tokenizer
                .count_request(&req.instructions, &req.contents)
    }

    /// Tokens of every request at this call point that no strategy may reduce and that are not in the request's
    /// instructions or contents: the tool schemas and the context the trace did not record.
    #[must_use]
    pub fn fixed_tokens(&self) -> usize {
        self.tool_tokens + self.unrecorded_tokens
    }

    /// Tokens of `req` as handed to the strategy, before it changed anything: known without a pass over the
    /// request when the caller set [`CallPoint::input_tokens`].
    #[must_use]
    pub fn input_tokens(&self, req: &LlmRequest) -> usize {
        self.input_tokens.unwrap_or_else(|| self.measure(req))
    }

    /// Tokens of each of `req`'s content items as handed to the strategy, before it changed anything: the
    /// caller's [`CallPoint::content_tokens`] when they cover the request, else counted (each item through
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

/// What one application of a strategy did. There is no default: a strategy states its [`Change`].
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// What happened to the request.
    pub change: Change,
    /// LLM calls made, in order.
    pub llm_calls: Vec<LlmCall>,
    /// Items that were summarized away.
    pub summarized_items: usize,
    /// Items whose content was replaced by a stub or truncated.
    pub compacted_items: usize,
    /// Of those, items truncated (the rest were replaced by a stub: masked).
    pub truncated_items: usize,
    /// Items dropped.
    pub dropped_items: usize,
    /// The error the framework a preset reproduces would raise here (Inspect AI's "Compaction insufficient"):
    /// the episode fails at this call point under that strategy. `None` for every strategy that cannot fail.
    pub failure: Option<String>,
}

impl Applied {
    /// An application that did `change` (no LLM call, no item counted yet).
    #[must_use]
    pub fn new(change: Change) -> Self {
        Self {
            change,
            llm_calls: Vec::new(),
            summarized_items: 0,
            compacted_items: 0,
            truncated_items: 0,
            dropped_items: 0,
            failure: None,
        }
    }

    /// An application that left the request as it was.
    #[must_use]
    pub fn unchanged() -> Self {
        Self::new(Change::Unchanged)
    }

    /// The request replaced by `out`, a rewrite that kept the items the two share from the start; unchanged
    /// where `out` is what the request already holds (the request is then left as it was).
    #[must_use]
    pub fn replaced(req: &mut LlmRequest, out: Vec<crate::history::Item>) -> Self {
        if out == req.contents {
            return Self::unchanged();
        }
        let kept_prefix = req
            .contents
            .iter()
            .zip(&out)
            .take_while(|(a, b)| a == b)
            .count();
        req.contents = out;
        Self::new(Change::Rewrote { kept_prefix })
    }

    /// The same, with one more LLM call recorded.
    #[must_use]
    pub fn with_call(mut self, call: LlmCall) -> Self {
        self.llm_calls.push(call);
        self
    }

    /// Whether the request may have changed.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.change.is_change()
    }

    /// Adds what `then` did (applied after this) to what this did.
    pub fn merge(&mut self, then: Applied) {
        let first = std::mem::replace(&mut self.change, Change::Unchanged);
        self.change = first.then(then.change);
        self.llm_calls.extend(then.llm_calls);
        self.summarized_items += then.summarized_items;
        self.compacted_items += then.compacted_items;
        self.truncated_items += then.truncated_items;
        self.dropped_items += then.dropped_items;
        if self.failure.is_none() {
            self.failure = then.failure;
        }
    }

    /// Number of failed LLM calls.
    #[must_use]
    pub fn failures(&self) -> usize {
        self.llm_calls.iter().filter(|c| c.error.is_some()).count()
    }
}

/// A context-reduction strategy, applied at every call point of a replay.
pub trait Strategy: Send {
    /// Reduces `req` in place; the reduced request is the live request from then on.
    ///
    /// # Errors
    /// Only for harness faults; a failed LLM call is recorded in [`Applied::llm_calls`] instead.
    fn apply(&mut self, at: &CallPoint, req: &mut LlmRequest, llm: &dyn Llm) -> Result<Applied>;
}

/// The baseline: sends the history unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReduction;

impl Strategy for NoReduction {
    fn apply(&mut self, _: &CallPoint, _: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        Ok(Applied::unchanged())
    }
}

/// A strategy's configuration: checks its parameters and builds a fresh strategy for one episode.
pub trait StrategySpec {
    /// Checks the parameters.
    ///
    /// # Errors
    /// Names the parameter that is out of range.
    fn validate(&self) -> Result<()> {
        Ok(())
    }

    /// A fresh strategy for one episode.
    fn build(&self) -> Box<dyn Strategy>;

    /// A fresh strategy for `episode`: [`StrategySpec::build`], unless the strategy reads what the episode
    /// recorded ([`AsRecorded`]).
    fn build_for(&self, episode: &crate::history::Episode) -> Box<dyn Strategy> {
        let _ = episode;
        self.build()
    }

    /// The size, in tokens, the strategy brings a request down to (or down under) in a run whose context
    /// window is `context_window`, when it has one: a sliding window's budget, a pipeline's trigger. Below what
    /// it may not reduce (the system prompt, tool schemas, the task, unrecorded context) it cannot work: a
    /// window then drops every item it may, a pipeline runs every stage at every call point.
    fn budget(&self, context_window: usize) -> Option<usize> {
        let _ = context_window;
        None
    }
}

/// Declares [`StrategyConfig`], one variant per strategy config type, and its dispatch.
macro_rules! registry {
    ($( $(#[$doc:meta])* $variant:ident($config:ty) ),* $(,)?) => {
        /// A strategy's configuration, as data (`{"type": "sliding_window", "max_tokens": 8000}`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum StrategyConfig {
            /// No reduction: the baseline.
            None,
            $( $(#[$doc])* $variant($config), )*
        }

        impl StrategyConfig {
            /// Checks the parameters.
            ///
            /// # Errors
            /// Names the parameter that is out of range.
            pub fn validate(&self) -> Result<()> {
                match self {
                    StrategyConfig::None => Ok(()),
                    $( StrategyConfig::$variant(c) => StrategySpec::validate(c), )*
                }
            }

            /// A fresh strategy for one episode.
            #[must_use]
            pub fn build(&self) -> Box<dyn Strategy> {
                match self {
                    StrategyConfig::None => Box::new(NoReduction),
                    $( StrategyConfig::$variant(c) => StrategySpec::build(c), )*
                }
            }

            /// A fresh strategy for `episode` ([`StrategySpec::build_for`]).
            #[must_use]
            pub fn build_for(&self, episode: &crate::history::Episode) -> Box<dyn Strategy> {
                match self {
                    StrategyConfig::None => Box::new(NoReduction),
                    $( StrategyConfig::$variant(c) => StrategySpec::build_for(c, episode), )*
                }
            }

            /// Its budget in a run whose window is `context_window` ([`StrategySpec::budget`]).
            #[must_use]
            pub fn budget(&self, context_window: usize) -> Option<usize> {
                match self {
                    StrategyConfig::None => None,
                    $( StrategyConfig::$variant(c) => StrategySpec::budget(c, context_window), )*
                }
            }

            /// Whether this is the baseline: no reduction, whatever its name.
            #[must_use]
            pub fn is_baseline(&self) -> bool {
                matches!(self, StrategyConfig::None)
            }
        }
    };
}

registry! {
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
    /// See [`Rewrite`].
    Rewrite(RewriteConfig),
    /// See [`AsRecorded`].
    AsRecorded(AsRecordedConfig),
    /// See [`External`].
    External(ExternalConfig),
    /// See [`Inspect`].
    Inspect(InspectConfig),
    /// See [`Strands`].
    Strands(StrandsConfig),
    /// See [`Langmem`].
    Langmem(LangmemConfig),
    /// See [`Adk`].
    Adk(AdkConfig),
    /// See [`OpenhandsSdk`].
    OpenhandsSdk(OpenhandsSdkConfig),
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
            // An eighth of the window: 16,000 tokens of the default 128,000, and what --window makes it.
            StrategyConfig::SlidingWindow(SlidingWindowConfig {
                window_share: Some(0.125),
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
                trigger_tokens: None,
                measure: Measure::Request,
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
                trigger_tokens: None,
                measure: Measure::Request,
                run_all: false,
                stages: vec![
                    StrategyConfig::Compaction(CompactionConfig::default()),
                    StrategyConfig::Summarization(SummarizationConfig::default()),
                ],
            }),
        ),
    ]
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

    pub fn state(window: usize) -> CallPoint {
        CallPoint::new(Tokenizer::shared_default().unwrap(), window)
    }

    pub fn mock() -> MockLlm {
        MockLlm::new(MockConfig::default(), Tokenizer::shared_default().unwrap())
    }

    /// Applies `s` and checks its declared change against what it did.
    pub fn run<S: Strategy + ?Sized>(
        s: &mut S,
        st: &CallPoint,
        req: &mut LlmRequest,
        llm: &dyn Llm,
    ) -> Applied {
        let before = req.clone();
        let applied = s.apply(st, req, llm).unwrap();
        if let Err(e) = applied.change.verify(&before, req) {
            panic!("declared {:?} wrongly: {e}", applied.change);
        }
        applied
    }

    /// An LLM that always fails.
    pub struct Failing;

    impl Llm for Failing {
        fn model(&self) -> &str {
            "failing"
        }
        fn generate(&self, _: &LlmRequest) -> Result<LlmResponse> {
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
    fn defaults_are_valid_and_unique() {
        validate_all(&defaults()).unwrap();
    }
}
