//! Which count triggers each preset, and which presets are checked against their framework's own code
//! (`scripts/conformance/run.sh`, docs/presets.md): the release the check installs, and the date the preset
//! was last checked against it. `ctxbench strategies` prints both.

/// The count a preset triggers on (and weighs what it keeps with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// The framework's own count, as it makes it with a real provider; the text says how.
    Framework(&'static str),
    /// ctxbench's count of the request: the run's tokenizer over what is sent (tool schemas and the context
    /// an imported trace did not record included).
    Ctxbench,
}

impl Count {
    /// The count in a sentence.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Count::Framework(how) => how,
            Count::Ctxbench => {
                "ctxbench's: the request as the run's tokenizer counts it (tool schemas and unrecorded context \
                 included)"
            }
        }
    }
}

/// A preset's check against its framework's own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The release the check installs (`inspect-ai 0.3.285`).
    pub release: &'static str,
    /// The date it was last run and agreed (`YYYY-MM-DD`).
    pub date: &'static str,
}

/// Inspect AI's count with a real provider (`inspect_ai/model/_compaction/_compaction.py`, `compact_input`).
const INSPECT_COUNT: &str = "Inspect's: the previous call's usage plus the provider's count of the messages \
                             added since (the run's tokenizer stands for the provider's; at the first call \
                             point the messages plus the tool schemas)";

/// Strands' count with a provider without a native count (`event_loop.py` `_estimate_input_tokens`,
/// `models/model.py` `count_tokens`, 1.62.0).
const STRANDS_COUNT: &str = "Strands': the previous call's usage (the run's tokenizer stands for the provider's) \
                             plus its own estimate of the messages since (characters / 4, a call's input as \
                             JSON / 2), as for providers without a native count (OpenAI's chat completions, \
                             LiteLLM, Ollama); at the first call its estimate of everything";

/// LangMem's count: the `token_counter` the user passes its `SummarizationNode`, over the messages alone.
const LANGMEM_COUNT: &str = "the token_counter passed to LangMem's SummarizationNode, over the messages alone: \
                             ctxbench's count of each message (the run's tokenizer), as a user passes a \
                             model's counter; tool schemas and unrecorded context are outside its budget. \
                             LangMem's default counter, count_tokens_approximately (characters / 4), is not \
                             reproduced";

const STRANDS: Checked = Checked {
    release: "strands-agents 1.62.0",
    date: "2026-12-07",
};

const LANGCHAIN: Checked = Checked {
    release: "langchain-core 1.8.1",
    date: "2026-12-07",
};

const LANGMEM: Checked = Checked {
    release: "langmem 0.0.30",
    date: "2026-12-07",
};

const ADK: Checked = Checked {
    release: "google-adk 2.15.0",
    date: "2026-12-07",
};

/// ADK's sliding window counts invocations, not tokens (`google/adk/apps/compaction.py`).
const ADK_COUNT: &str =
    "none: ADK's sliding window counts invocations (a summary once 3 are newer than the \
                         last one), not tokens";

const OPENHANDS_SDK: Checked = Checked {
    release: "openhands-sdk 1.58.2",
    date: "2026-12-07",
};

/// The OpenHands SDK's count (`context/condenser/utils.py` `get_total_token_count`).
const OPENHANDS_SDK_COUNT: &str = "the OpenHands SDK's own: the agent LLM's get_token_count of the view's \
                                   messages and tool schemas (litellm's token_counter with the model's \
                                   tokenizer, made locally, not the recorded usage), against the window; \
                                   ctxbench's count of the request (the run's tokenizer, unrecorded context \
                                   included) stands for it";

const INSPECT: Checked = Checked {
    release: "inspect-ai 0.3.285",
    date: "2026-12-07",
};

/// The count `name` triggers on.
#[must_use]
pub fn count(name: &str) -> Count {
    match name {
        "inspect_compaction_summary"
        | "inspect_compaction_trim"
        | "inspect_compaction_edit"
        | "inspect_compaction_native" => Count::Framework(INSPECT_COUNT),
        "strands_auto" => Count::Framework(STRANDS_COUNT),
        "langmem_summary" => Count::Framework(LANGMEM_COUNT),
        "adk_compaction" => Count::Framework(ADK_COUNT),
        "openhands_sdk" => Count::Framework(OPENHANDS_SDK_COUNT),
        _ => Count::Ctxbench,
    }
}

/// Where `name` is checked against its framework's own code, call point by call point; `None` where it is
/// not (docs/presets.md says why).
#[must_use]
pub fn checked(name: &str) -> Option<Checked> {
    match name {
        "inspect_compaction_summary"
        | "inspect_compaction_trim"
        | "inspect_compaction_edit"
        | "inspect_compaction_native" => Some(INSPECT),
        "strands_auto" => Some(STRANDS),
        // Its own count is the user's `token_counter`: ctxbench's, as [`count`] says.
        "langchain_trim" => Some(LANGCHAIN),
        // The same: the `token_counter` passed to its `SummarizationNode`.
        "langmem_summary" => Some(LANGMEM),
        "adk_compaction" => Some(ADK),
        "openhands_sdk" => Some(OPENHANDS_SDK),
        _ => None,
    }
}

/// Why `name` is not checked against its framework's own code, where a reason is known beyond "closed source"
/// or "not a library" (docs/presets.md lists every preset).
#[must_use]
pub fn unchecked(name: &str) -> Option<&'static str> {
    match name {
        "openhands_recent"
        | "openhands_observation_masking"
        | "openhands_amortized"
        | "openhands_llm" => Some(OPENHANDS_V0),
        _ => None,
    }
}

/// Why the OpenHands V0 condensers are not checked.
const OPENHANDS_V0: &str = "not driven yet: the condensers it cites are openhands-ai 0.x's (0.62.0: \
                            openhands/memory/condenser/impl), whose install is the whole app's (Python 3.12 \
                            or newer, 84 dependencies); read against them, V0 counts the system prompt as an \
                            event and sends a masked or summarized observation as a user message \
                            (docs/presets.md)";

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name here is a preset's, and every checked preset names a framework's count or ctxbench's.
    #[test]
    fn the_checked_presets_exist() {
        let names: Vec<&str> = super::super::presets().iter().map(|p| p.name).collect();
        for name in [
            "inspect_compaction_summary",
            "inspect_compaction_trim",
            "inspect_compaction_edit",
            "inspect_compaction_native",
        ] {
            assert!(names.contains(&name), "{name}");
            let c = checked(name).expect("checked");
            assert!(c.release.starts_with("inspect-ai "), "{c:?}");
            assert_eq!(c.date.len(), 10);
            assert!(matches!(count(name), Count::Framework(_)));
        }
        assert_eq!(
            checked("strands_auto").map(|c| c.release),
            Some("strands-agents 1.62.0")
        );
        assert_eq!(count("langchain_trim"), Count::Ctxbench);
        assert!(checked("langchain_trim").is_some());
        assert_eq!(
            checked("langmem_summary").map(|c| c.release),
            Some("langmem 0.0.30")
        );
        assert!(matches!(count("langmem_summary"), Count::Framework(_)));
        assert_eq!(
            checked("adk_compaction").map(|c| c.release),
            Some("google-adk 2.15.0")
        );
        assert!(matches!(count("adk_compaction"), Count::Framework(_)));
        assert_eq!(
            checked("openhands_sdk").map(|c| c.release),
            Some("openhands-sdk 1.58.2")
        );
        assert!(matches!(count("openhands_sdk"), Count::Framework(_)));
        assert!(unchecked("openhands_sdk").is_none());
        assert!(unchecked("adk_compaction").is_none());
        assert_eq!(checked("openhands_recent"), None);
        assert_eq!(count("openhands_recent"), Count::Ctxbench);
    }
}
