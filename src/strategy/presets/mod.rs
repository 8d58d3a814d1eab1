//! Peer presets: the context managers agent builders would otherwise use, by name, with their published
//! defaults, as configurations of this crate's strategies. One file per family: [`condensers`] (the first
//! comparison: OpenHands, the Complexity Trap, LangChain, LangMem, Anthropic's context editing, ADK, the
//! Agents SDK, Letta), [`agents`] (Strands, Inspect AI, Claude Code, Codex CLI), [`servers`] (Anthropic's and
//! OpenAI's server-side compaction) and [`research`] (AgentDiet, ACON).
//!
//! Every preset names its source: the peer's code at a commit or version, or its documentation. Where a peer's
//! unit or trigger differs from ours, the preset's `note` says how it is mapped and what it does not
//! reproduce; the mapping is tested by hand on a small history (each family's tests).
//!
//! Units: an OpenHands "event" or a Letta "message" is one item; a SWE-agent "turn" (Complexity Trap) is one
//! assistant turn with its tool results; an Agents SDK "turn" or an ADK "invocation" is one user message with
//! all that follows it; an Inspect AI or Strands "message" is a chat message (an assistant turn, a tool result,
//! a user message: [`Unit::Messages`]; Strands groups a turn's results into one); an AgentDiet "step" is an
//! assistant turn and what follows it. System messages are always kept and never counted. Peers that compact
//! on tokens are triggered on the request as ctxbench counts it (the run's tokenizer and window), which is the
//! peer's own count only up to the tokenizer, except where [`checked::count`] names the framework's own count
//! (Inspect AI's: the previous call's usage plus the messages since), which the preset reproduces.
//!
//! A peer whose summary is opaque (OpenAI's compaction item) is replayed as the run model's summary of the
//! size the preset states (`opaque_tokens`): its cost is that of an item of that size, its retention that of
//! the stand-in summary, and the preset's note says so.

mod agents;
pub mod checked;
mod condensers;
mod research;
mod servers;

use super::{CompactionConfig, CondenseAction, CondenserConfig, NamedStrategy, StrategyConfig};
use crate::history::Unit;

/// A named peer configuration.
#[derive(Debug, Clone)]
pub struct Preset {
    /// The name `--strategies` accepts.
    pub name: &'static str,
    /// Where the behaviour and the defaults come from.
    pub source: &'static str,
    /// How the peer's semantics map onto this crate's strategies.
    pub note: &'static str,
    /// The configuration.
    pub config: StrategyConfig,
}

impl Preset {
    /// The preset as a strategy to run.
    #[must_use]
    pub fn named(&self) -> NamedStrategy {
        NamedStrategy::new(self.name, self.config.clone())
    }
}

/// The Agents SDK cookbook's synthetic user message before a summary.
pub const AGENTS_SDK_SHADOW_PROMPT: &str = "Summarize the conversation we had so far.";

pub(super) fn condenser(
    unit: Unit,
    max_units: usize,
    keep_first: usize,
    keep_last: usize,
    action: CondenseAction,
) -> CondenserConfig {
    CondenserConfig {
        action,
        ..CondenserConfig::new(unit, max_units, keep_first, keep_last)
    }
}

/// Observation masking: every tool result older than the last `keep_last` units becomes `placeholder`.
pub(super) fn masking(unit: Unit, keep_last: usize, placeholder: &str) -> CompactionConfig {
    CompactionConfig {
        keep_last,
        min_chars: 0,
        args_max_chars: 0,
        unit,
        placeholder: Some(placeholder.to_owned()),
        ..CompactionConfig::default()
    }
}

/// The Complexity Trap's placeholder for a masked observation.
pub(super) const SWE_AGENT_PLACEHOLDER: &str = "Old environment output: ({lines} lines omitted)";

/// Every preset, in the order `ctxbench strategies` lists them: the first comparison's, then the agent
/// frameworks' and CLIs' own context management, the providers' server-side compaction, and the research
/// strategies.
#[must_use]
pub fn presets() -> Vec<Preset> {
    let mut all = condensers::presets();
    all.extend(agents::presets());
    all.extend(servers::presets());
    all.extend(research::presets());
    all
}

/// Names that configs may still use for a preset that was renamed, and the preset's name now.
pub const RENAMED: [(&str, &str); 1] = [("anthropic_auto_compact", "claude_code_auto_compact")];

/// The preset called `name`.
#[must_use]
pub fn find(name: &str) -> Option<NamedStrategy> {
    let name = RENAMED
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, now)| now);
    presets()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.named())
}

#[cfg(test)]
pub(crate) mod testing {
    //! What the presets' tests share: small hand-built histories and how a preset is applied to them.
    use super::*;
    use crate::history::Item;
    use crate::llm::LlmRequest;
    use crate::strategy::testing::{mock, run};
    use crate::strategy::CallPoint;

    pub(crate) fn preset(name: &str) -> Box<dyn crate::strategy::Strategy> {
        find(name).unwrap().config.build()
    }

    /// sys, task, then `n` single-call turns (call, result of `size` repeated words).
    pub(crate) fn agent_run(n: usize, size: usize) -> LlmRequest {
        let mut items = vec![Item::system("sys"), Item::user("task")];
        for i in 0..n {
            items.push(Item::tool_call(
                format!("c{i}"),
                "bash",
                format!("{{\"i\":{i}}}"),
            ));
            items.push(Item::tool_result(
                format!("c{i}"),
                "bash",
                format!("output {i}\n").repeat(size),
            ));
        }
        LlmRequest::from_contents(items)
    }

    /// `n` user turns, each a user message, an assistant reply, a call and its result.
    pub(crate) fn chat(n: usize) -> LlmRequest {
        let mut items = vec![Item::system("sys")];
        for i in 0..n {
            items.push(Item::user(format!("question {i}")));
            items.push(Item::tool_call(format!("c{i}"), "lookup", "{}"));
            items.push(Item::tool_result(
                format!("c{i}"),
                "lookup",
                format!("fact {i}"),
            ));
            items.push(Item::assistant(format!("answer {i}")));
        }
        LlmRequest::from_contents(items)
    }

    pub(crate) fn apply(
        name: &str,
        req: &mut LlmRequest,
        st: &CallPoint,
    ) -> crate::strategy::Applied {
        run(preset(name).as_mut(), st, req, &mock())
    }

    /// Applies the preset and checks that it left the request as it was.
    pub(crate) fn assert_unchanged(name: &str, r: &mut LlmRequest, st: &CallPoint) {
        let before = r.clone();
        apply(name, r, st);
        assert_eq!(*r, before, "{name} changed the request");
    }

    pub(crate) fn texts(req: &LlmRequest) -> Vec<&str> {
        req.contents.iter().map(Item::text).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::validate_all;

    #[test]
    fn every_preset_is_valid_unique_and_documented() {
        let all: Vec<NamedStrategy> = presets().iter().map(Preset::named).collect();
        validate_all(&all).unwrap();
        for p in presets() {
            assert!(!p.source.is_empty() && !p.note.is_empty(), "{}", p.name);
            assert!(
                crate::strategy::defaults().iter().all(|d| d.name != p.name),
                "{} shadows a default",
                p.name
            );
        }
    }

    #[test]
    fn a_renamed_preset_is_found_under_its_old_name() {
        assert_eq!(
            find("anthropic_auto_compact").map(|s| s.name),
            Some("claude_code_auto_compact".to_owned())
        );
    }
}
