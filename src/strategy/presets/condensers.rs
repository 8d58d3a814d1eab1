//! The presets of the context managers ctxbench first compared (see the module docs of [`super`] for how a unit
//! maps onto ctxbench's).

use super::{condenser, masking, Preset, AGENTS_SDK_SHADOW_PROMPT, SWE_AGENT_PLACEHOLDER};
use crate::history::Unit;
use crate::strategy::{
    AdkConfig, CompactionConfig, CondenseAction, CondenserConfig, LangmemConfig, Measure,
    OpenhandsSdkConfig, PipelineConfig, SlidingWindowConfig, StrategyConfig,
};

/// The presets of the context managers ctxbench first compared: OpenHands' condensers, the Complexity Trap's
/// masking, summary and hybrid, LangChain, LangMem, Anthropic's context editing, Google ADK, the Agents SDK's
/// sessions and Letta.
#[must_use]
#[allow(clippy::too_many_lines)] // a data table: one literal per preset
pub(super) fn presets() -> Vec<Preset> {
    use CondenseAction::{Drop, Summarize};
    use StrategyConfig as S;
    vec![
        Preset {
            name: "openhands_recent",
            source: "OpenHands RecentEventsCondenser(keep_first=1, max_events=100)",
            note: "keeps the first event and the newest 99",
            config: S::Condenser(condenser(Unit::Items, 100, 1, 99, Drop)),
        },
        Preset {
            name: "openhands_observation_masking",
            source: "OpenHands ObservationMaskingCondenser(attention_window=100)",
            note: "tool results outside the last 100 events become '<MASKED>'",
            config: S::Compaction(masking(Unit::Items, 100, "<MASKED>")),
        },
        Preset {
            name: "openhands_amortized",
            source: "OpenHands AmortizedForgettingCondenser(max_size=100, keep_first=1)",
            note: "over 100 events, keeps the first and the newest 49 (half of max_size)",
            config: S::Condenser(condenser(Unit::Items, 100, 1, 49, Drop)),
        },
        Preset {
            name: "openhands_llm",
            source: "OpenHands LLMSummarizingCondenser(max_size=100, keep_first=1)",
            note: "over 100 events, summarizes all but the first and the newest 48 into one summary event \
                   (1 + summary + 48 = max_size/2); the previous summary is folded in; the summary event is \
                   not counted as an event",
            config: S::Condenser(condenser(Unit::Items, 100, 1, 48, Summarize)),
        },
        Preset {
            name: "openhands_sdk",
            source: "openhands-sdk 1.58.2 default condenser: LLMSummarizingCondenser(max_size=240, keep_first=2, \
                     max_tokens=the agent LLM's input limit) as the agent's step runs it \
                     (openhands/sdk/settings/model.py build_condenser)",
            note: "over 240 events keeps the first 2 and the newest 117; over the window's tokens keeps the \
                   newest events within half of it; what goes is summarized into a user message at its place, \
                   itself forgotten and summarized at the next condensation",
            config: S::OpenhandsSdk(OpenhandsSdkConfig::default()),
        },
        Preset {
            name: "complexity_trap_masking",
            source: "Lindenbauer et al. 2025, The Complexity Trap (JetBrains Research): observation masking, M=10",
            note: "tool results older than the last 10 assistant turns become a one-line placeholder",
            config: S::Compaction(masking(Unit::AgentTurns, 10, SWE_AGENT_PLACEHOLDER)),
        },
        Preset {
            name: "complexity_trap_summary",
            source: "Lindenbauer et al. 2025, The Complexity Trap: LLM summary, N=21, M=10",
            note: "over 21 turns, summarizes all but the last 10 (previous summary folded in)",
            config: S::Condenser(condenser(Unit::AgentTurns, 21, 0, 10, Summarize)),
        },
        Preset {
            name: "complexity_trap_hybrid",
            source: "Lindenbauer et al. 2025, The Complexity Trap: hybrid, masking M=10 + summary N=43",
            note: "masks as complexity_trap_masking at every step; over 43 turns, summarizes all but the last 10",
            config: S::Pipeline(PipelineConfig {
                threshold: 1.0,
                context_window: None,
                reserve_tokens: None,
                trigger_tokens: None,
                measure: Measure::Request,
                run_all: true,
                stages: vec![
                    S::Compaction(masking(Unit::AgentTurns, 10, SWE_AGENT_PLACEHOLDER)),
                    S::Condenser(condenser(Unit::AgentTurns, 43, 0, 10, Summarize)),
                ],
            }),
        },
        Preset {
            name: "langchain_trim",
            source: "langchain-core trim_messages(strategy=\"last\", include_system=True, start_on=\"human\", \
                     max_tokens=16000)",
            note: "at every call, as a pre-model hook, trims the whole history anew: keeps the system messages \
                   and the newest items within 16,000 tokens, then drops items until a user message starts the \
                   window; with one task message and many tool turns the window can end up empty",
            config: S::SlidingWindow(SlidingWindowConfig {
                max_tokens: Some(16_000),
                window_share: None,
                max_items: None,
                keep_first_user: false,
                start_on_user: true,
                whole_history: true,
            }),
        },
        Preset {
            name: "langmem_summary",
            source: "langmem 0.0.30 SummarizationNode(max_tokens=window/2, max_summary_tokens=256) before every \
                     call (langmem/short_term/summarization.py)",
            note: "once the messages not yet summarized reach half the window (and what follows the cut fits \
                   half the window less 256 and the system message), summarizes them up to the cut and extends \
                   the running summary, sent as a system message after the system prompt",
            config: S::Langmem(LangmemConfig::default()),
        },
        Preset {
            name: "anthropic_clear_tool_uses",
            source: "Anthropic context editing clear_tool_uses_20250919 (trigger 100k input tokens, keep 3 tool \
                     uses, clear_at_least 0, no excluded tools, inputs kept)",
            note: "once the unedited history is over 100,000 tokens, every tool result but the newest 3 \
                   becomes '[cleared]'; exclude_tools and clear_at_least are parameters",
            config: S::Compaction(CompactionConfig {
                trigger_tokens: Some(100_000),
                ..masking(Unit::ToolResults, 3, "[cleared]")
            }),
        },
        Preset {
            name: "adk_compaction",
            source: "google-adk 2.15.0 EventsCompactionConfig(compaction_interval=3, overlap_size=1), the \
                     Runner's compaction after each invocation (google/adk/apps/compaction.py)",
            note: "once 3 invocations are newer than the last summary, they and the one before them are \
                   summarized; every summary no later one contains is sent, as the agent's turn at its \
                   range's end",
            config: S::Adk(AdkConfig::default()),
        },
        Preset {
            name: "openai_trimming_session",
            source: "OpenAI Agents SDK cookbook TrimmingSession(max_turns=8)",
            note: "keeps the last 8 user turns",
            config: S::Condenser(condenser(Unit::UserTurns, 8, 0, 8, Drop)),
        },
        Preset {
            name: "openai_summarizing_session",
            source: "OpenAI Agents SDK cookbook SummarizingSession(keep_last_n_turns=3, context_limit=3)",
            note: "over 3 user turns, everything before the last 3 becomes a synthetic user/assistant pair \
                   ('Summarize the conversation we had so far.' + summary)",
            config: S::Condenser(CondenserConfig {
                shadow_prompt: Some(AGENTS_SDK_SHADOW_PROMPT.to_owned()),
                ..condenser(Unit::UserTurns, 3, 0, 3, Summarize)
            }),
        },
        Preset {
            name: "letta_partial_evict",
            source: "Letta partial evict summarizer (message_buffer_limit=60, evict 30%)",
            note: "over 60 messages, the oldest 30% (all but the newest 42) are folded into the recursive summary",
            config: S::Condenser(condenser(Unit::Items, 60, 0, 42, Summarize)),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{agent_run, apply, assert_unchanged, chat, preset, texts};
    use super::*;
    use crate::history::{Item, ItemKind};
    use crate::strategy::testing::{mock, run, state};

    #[test]
    fn openhands_recent_keeps_first_event_and_newest_99() {
        let st = state(1_000_000);
        let mut r = agent_run(50, 1); // task + 100 events = 101
        apply("openhands_recent", &mut r, &st);
        assert_eq!(r.contents[1].text(), "task");
        // The oldest event (c0) goes and its result r0 with it.
        assert_eq!(r.contents.len(), 1 + 1 + 98);
        assert_eq!(r.contents[2].text(), "{\"i\":1}");
    }

    #[test]
    fn openhands_amortized_halves() {
        let st = state(1_000_000);
        let mut r = agent_run(50, 1); // 101 events
        apply("openhands_amortized", &mut r, &st);
        // First + newest 49: the newest 49 start with a result whose call is gone, so 48 remain.
        assert_eq!(r.contents.len(), 1 + 1 + 48);
        let mut r = agent_run(49, 1); // 99 events: under max_size
        assert_unchanged("openhands_amortized", &mut r, &st);
    }

    #[test]
    fn openhands_llm_summarizes_to_half() {
        let st = state(1_000_000);
        let mut r = agent_run(50, 1);
        let a = apply("openhands_llm", &mut r, &st);
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(r.contents[1].text(), "task");
        assert_eq!(r.contents[2].kind(), ItemKind::Summary);
        assert_eq!(r.contents.len(), 1 + 1 + 1 + 48);
    }

    #[test]
    fn openhands_sdk_keeps_system_task_summary_and_newest_117_over_240_events() {
        let st = state(1_000_000);
        // The system prompt, the task and 2 × 119 events: 240 events, not over.
        let mut r = agent_run(119, 1);
        assert_unchanged("openhands_sdk", &mut r, &st);
        let mut r = agent_run(120, 1); // 242 events
        let a = apply("openhands_sdk", &mut r, &st);
        assert_eq!(a.llm_calls.len(), 1);
        // 240 / 2 - 2 - 1 = 117 newest events; the tail would start at r61, whose call c61 is
        // forgotten, so the cut moves forward past it and 116 stay: c62..r119.
        assert_eq!(texts(&r)[..2], ["sys", "task"]);
        assert!(r.contents[2].is_role(crate::history::Role::User));
        assert_eq!(r.contents[3].text(), "{\"i\":62}");
        assert_eq!(r.contents.len(), 2 + 1 + 116);
    }

    #[test]
    fn observation_masking_counts_events_or_turns() {
        let st = state(1_000_000);
        let mut r = agent_run(60, 3); // 121 events
        apply("openhands_observation_masking", &mut r, &st);
        let masked = r.contents.iter().filter(|i| i.text() == "<MASKED>").count();
        assert_eq!(
            masked, 10,
            "results at events 0..20 are outside the last 100"
        );
        let mut r = agent_run(15, 3);
        apply("complexity_trap_masking", &mut r, &st);
        assert_eq!(
            r.contents[3].text(),
            "Old environment output: (3 lines omitted)"
        );
        let masked = r
            .contents
            .iter()
            .filter(|i| i.text().starts_with("Old environment"))
            .count();
        assert_eq!(masked, 5, "15 turns, the last 10 kept");
    }

    #[test]
    fn complexity_trap_summary_fires_after_21_turns_and_keeps_10() {
        let st = state(1_000_000);
        let mut r = agent_run(21, 1);
        assert_unchanged("complexity_trap_summary", &mut r, &st);
        let mut r = agent_run(22, 1);
        let a = apply("complexity_trap_summary", &mut r, &st);
        assert_eq!(a.summarized_items, 24);
        assert_eq!(r.contents[2].kind(), ItemKind::Summary);
        assert_eq!(r.contents.len(), 3 + 20);
    }

    #[test]
    fn complexity_trap_hybrid_masks_then_summarizes_at_43() {
        let st = state(1_000_000);
        let mut r = agent_run(30, 2);
        let a = apply("complexity_trap_hybrid", &mut r, &st);
        assert_eq!(a.compacted_items, 20);
        assert!(a.llm_calls.is_empty());
        let mut r = agent_run(44, 2);
        let a = apply("complexity_trap_hybrid", &mut r, &st);
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(r.contents.len(), 3 + 20);
    }

    #[test]
    fn langchain_trim_starts_on_a_user_message_and_may_keep_only_the_system() {
        let st = state(1_000_000);
        // A chat: the window starts at a question.
        let mut r = chat(1_000);
        apply("langchain_trim", &mut r, &st);
        assert_eq!(r.contents[0].text(), "sys");
        assert!(r.contents[1].text().starts_with("question "));
        assert!(st.measure(&r) <= 16_000);
        // An agent run with one task message: once trimmed, nothing but the system message is left.
        let mut r = agent_run(200, 20);
        apply("langchain_trim", &mut r, &st);
        assert_eq!(texts(&r), ["sys"]);
    }

    #[test]
    fn langmem_extends_one_running_summary() {
        let st = state(4_000);
        let mut s = preset("langmem_summary");
        let mut r = agent_run(40, 20);
        let a = run(s.as_mut(), &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        let summaries =
            |r: &crate::llm::LlmRequest| r.contents.iter().filter(|i| i.is_summary()).count();
        assert_eq!(summaries(&r), 1);
        assert_eq!(r.contents[0].text(), "sys");
        r.contents.extend(
            agent_run(40, 20)
                .contents
                .into_iter()
                .skip(2)
                .map(|i| match i {
                    Item::ToolCall {
                        id,
                        name,
                        arguments,
                    } => Item::tool_call(format!("n{id}"), name, arguments),
                    Item::ToolResult {
                        call_id,
                        name,
                        content,
                        ..
                    } => Item::tool_result(format!("n{call_id}"), name, content),
                    other => other,
                }),
        );
        let a = run(s.as_mut(), &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(summaries(&r), 1, "extended, not appended");
        assert!(r.instructions.is_empty());
    }

    #[test]
    fn anthropic_clear_tool_uses_triggers_on_the_unedited_history() {
        let st = state(1_000_000);
        let mut r = agent_run(6, 2_000); // ~6 × 4k tokens: under 100k
        assert_unchanged("anthropic_clear_tool_uses", &mut r, &st);
        let mut s = preset("anthropic_clear_tool_uses");
        let mut r = agent_run(30, 2_000); // ~120k tokens
        run(s.as_mut(), &st, &mut r, &mock());
        let cleared = r
            .contents
            .iter()
            .filter(|i| i.text() == "[cleared]")
            .count();
        assert_eq!(cleared, 27);
        // The live request is now small, but the unedited history is still over 100k: new results are
        // cleared at the next call point too.
        r.contents.push(Item::tool_call("x", "bash", "{}"));
        r.contents
            .push(Item::tool_result("x", "bash", "fresh\n".repeat(10)));
        run(s.as_mut(), &st, &mut r, &mock());
        let cleared = r
            .contents
            .iter()
            .filter(|i| i.text() == "[cleared]")
            .count();
        assert_eq!(cleared, 28);
    }

    #[test]
    fn adk_compacts_every_three_invocations() {
        let st = state(1_000_000);
        let mut r = chat(3);
        assert_unchanged("adk_compaction", &mut r, &st);
        let mut r = chat(4);
        apply("adk_compaction", &mut r, &st);
        // ADK's summary is the agent's own turn: the summary's text alone, as an assistant message.
        assert!(r.contents[1].is_role(crate::history::Role::Assistant));
        assert!(!r.contents[1].text().starts_with("question"));
        assert_eq!(texts(&r)[2..], ["question 3", "{}", "fact 3", "answer 3"]);
    }

    #[test]
    fn openai_sessions_count_user_turns() {
        let st = state(1_000_000);
        let mut r = chat(10);
        apply("openai_trimming_session", &mut r, &st);
        assert_eq!(r.contents[1].text(), "question 2");
        assert_eq!(r.contents.len(), 1 + 8 * 4);
        let mut r = chat(5);
        apply("openai_summarizing_session", &mut r, &st);
        assert_eq!(r.contents[1].text(), AGENTS_SDK_SHADOW_PROMPT);
        assert_eq!(r.contents[2].kind(), ItemKind::Summary);
        assert_eq!(r.contents[3].text(), "question 2");
        // The synthetic pair is not a turn: three real turns remain, so nothing more happens.
        assert_unchanged("openai_summarizing_session", &mut r, &st);
    }

    #[test]
    fn letta_evicts_30_percent() {
        let st = state(1_000_000);
        let mut r = agent_run(30, 1); // task + 60 = 61 messages
        let a = apply("letta_partial_evict", &mut r, &st);
        assert_eq!(a.summarized_items, 19);
        assert_eq!(r.contents[1].kind(), ItemKind::Summary);
    }
}
