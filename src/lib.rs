//! ctxbench replays recorded AI-agent histories through context-reduction strategies and measures what
//! each one saves and what it loses.
#![warn(missing_docs)]

pub mod error;
pub mod history;
pub mod tokens;

pub use error::{Error, Result};
pub use history::{Episode, Finding, FindingKind, Item, ItemKind, Probe, Role};
pub use tokens::{Backend, Encoding, Tokenizer};
pub mod llm;
pub mod strategy;
pub mod replay;
pub mod metrics;
