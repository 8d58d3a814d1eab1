//! Which later requests carry a turn's recorded reasoning, as each provider takes it back ([`SentBack`]).
//!
//! - DeepSeek's thinking mode with tool calls: the current turn's `reasoning_content` goes back with each tool
//!   result; once a new user question starts a turn, the earlier turns' reasoning is left out (DeepSeek's API
//!   guide, "Thinking Mode", tool calls; its V3.2 encoding drops reasoning before the last user message).
//! - Anthropic's extended thinking: the thinking blocks of the assistant turn in a tool-use loop are sent back
//!   with the tool results and count as input; the API strips those of earlier turns from the context
//!   (Anthropic's "Context windows" and "Building with extended thinking" guides).
//! - OpenAI's Responses API: reasoning items are passed back between function calls; those of earlier turns
//!   are ignored and removed (OpenAI cookbook, "Better performance from reasoning models using the Responses
//!   API").
//!
//! docs/trace-fidelity.md cites them and says which importer sets which.

use serde::{Deserialize, Serialize};

/// Which later requests carry a turn's recorded reasoning, as its provider takes it back. In a dataset:
/// `false` (or absent), `"turn"`, `true`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SentBack {
    /// Output only: no later request carries it (OpenAI's Chat Completions, or an agent that drops it).
    #[default]
    Never,
    /// The requests of its own turn: sent back with each tool result until the next user message starts a
    /// new turn, then dropped (DeepSeek's thinking mode with tool calls, Anthropic's extended thinking in the
    /// tool-use loop, OpenAI's Responses API reasoning items).
    Turn,
    /// Every later request.
    Always,
}

impl SentBack {
    /// Whether it is output only.
    #[must_use]
    pub fn is_never(&self) -> bool {
        *self == SentBack::Never
    }
}

impl Serialize for SentBack {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            SentBack::Never => s.serialize_bool(false),
            SentBack::Turn => s.serialize_str("turn"),
            SentBack::Always => s.serialize_bool(true),
        }
    }
}

impl<'de> Deserialize<'de> for SentBack {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Flag(bool),
            Word(String),
        }
        match Wire::deserialize(d)? {
            Wire::Flag(false) => Ok(SentBack::Never),
            Wire::Flag(true) => Ok(SentBack::Always),
            Wire::Word(w) if w == "turn" => Ok(SentBack::Turn),
            Wire::Word(w) => Err(serde::de::Error::custom(format!(
                "unknown `sent_back` '{w}': expected false, \"turn\" or true"
            ))),
        }
    }
}
