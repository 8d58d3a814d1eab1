//! ctxbench replays recorded AI-agent histories through context-reduction strategies and measures what
//! each one saves and what it loses.
#![warn(missing_docs)]

pub mod error;
pub mod history;
pub mod tokens;

pub use error::{Error, Result};
pub use history::{Episode, Finding, FindingKind, Item, ItemKind, Probe, Role};
pub use tokens::{Backend, Encoding, Tokenizer};
pub mod cli;
pub mod gen;
pub mod llm;
pub mod metrics;
pub mod replay;
pub mod report;
pub mod runner;
pub mod strategy;
