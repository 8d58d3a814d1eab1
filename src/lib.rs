//! ctxbench replays recorded AI-agent histories through context-reduction strategies and measures what
//! each one saves and what it loses.
//!
//! The stages depend one way and pass plain data: [`history`] (episodes, datasets, importers) → [`tokens`] →
//! [`llm`] → [`strategy`] → [`replay`] (one [`replay::StepRecord`] per call point) → [`metrics`] (pure
//! functions of records, every quantity defined once) → [`report`] (one exporter per format) → [`run`]
//! (configuration, the streaming pipeline, the resume journal) → [`sweep`] → [`cli`]. `docs/architecture.md`
//! draws them and says where to add a strategy, an importer, an exporter or a metric.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbench::{Item, Tokenizer};
//! use ctxbench::llm::mock::{MockConfig, MockLlm};
//! use ctxbench::replay::Replayer;
//! use ctxbench::strategy::{NamedStrategy, SlidingWindowConfig, StrategyConfig};
//!
//! let mut items = vec![Item::system("You are an agent."), Item::user("List the files.")];
//! for i in 0..20 {
//!     items.push(Item::tool_call(format!("c{i}"), "ls", "{}"));
//!     items.push(Item::tool_result(format!("c{i}"), "ls", "main.rs lib.rs ".repeat(50)));
//! }
//! let episode = ctxbench::Episode {
//!     id: "demo".into(), source: "doc".into(), task: String::new(), items,
//!     ..Default::default()
//! };
//! let tokenizer = Tokenizer::shared_default()?;
//! let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tokenizer));
//! let window = NamedStrategy::new("window", StrategyConfig::SlidingWindow(SlidingWindowConfig {
//!     max_tokens: Some(1_000), ..SlidingWindowConfig::default()
//! }));
//! let replay = Replayer::new(tokenizer, &llm, 128_000).replay(&episode, &window)?;
//! assert!(replay.steps.iter().all(|s| s.tokens_sent <= 1_000));
//! # Ok::<(), ctxbench::Error>(())
//! ```
#![warn(missing_docs)]
// No function over 80 lines (clippy.toml) outside tests and data tables, which say why they allow it.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod bundled;
pub mod cli;
pub mod error;
pub mod files;
pub mod gen;
pub mod history;
pub mod llm;
pub mod metrics;
pub mod replay;
pub mod report;
pub mod run;
pub mod strategy;
pub mod sweep;
pub mod tokens;

pub use error::{Error, Result};
pub use history::{Episode, Finding, FindingKind, Item, ItemKind, Probe, Role, Text};
pub use tokens::{Backend, Encoding, Tokenizer};
