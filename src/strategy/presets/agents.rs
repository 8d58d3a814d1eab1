//! The context management agent frameworks and coding CLIs ship: Strands Agents' `context_manager="auto"`,
//! Inspect AI's compaction strategies for `react()`, Claude Code's auto-compact and OpenAI Codex CLI's.

use super::Preset;
use crate::history::Unit;
use crate::strategy::{
    CondenseAction, CondenserConfig, InspectCompaction, InspectConfig, PipelineConfig, Prompt,
    StrandsConfig, StrategyConfig,
};

/// The characters of each message a peer's summarizer is shown: all of them (the peers send whole messages).
pub(super) const WHOLE_MESSAGES: usize = 1_000_000;

/// A condenser that summarizes everything since the head (the items before its first unit) into one message,
/// with a peer's prompt.
pub(super) fn summarize_all(unit: Unit, prompt: Prompt) -> CondenserConfig {
    CondenserConfig {
        action: CondenseAction::Summarize,
        item_chars: WHOLE_MESSAGES,
        prompt,
        ..CondenserConfig::new(unit, 1, 0, 0)
    }
}

/// The agent frameworks' and CLIs' presets.
#[must_use]
#[allow(clippy::too_many_lines)] // a data table: one literal per preset
pub(super) fn presets() -> Vec<Preset> {
    use StrategyConfig as S;
    vec![
        Preset {
            name: "strands_auto",
            source: "Strands Agents 1.62.0 Agent(context_manager=\"auto\"): ContextManager with \
                     Offload.truncate(\"tool_results\", preview_tokens=750).when(threshold=1500), \
                     Offload.summarize(\"*\").when(utilization=0.85, preserve_recent=4) and the emergency \
                     truncation (strands/_context_manager/context_manager.py, strategies/offload/, methods/)",
            note: "Strands' own estimate (characters / 4, a call's input as JSON / 2): every tool result over \
                   1,500 tokens is cut as it joins to its first 1,800 and last 1,200 characters \
                   ('[Truncated: …]', '[... N chars elided ...]') with its stash reference; at 85% of the window \
                   by Strands' projection (the previous call's usage plus its estimate of the messages since), \
                   every message but the task and the 4 newest becomes '[Summarized: N messages, ~T tokens]' \
                   and the summary, as assistant text; where its estimate of the messages reaches the window, \
                   the oldest 20% go. A Strands message is an assistant turn, a turn's results, or a user \
                   message. Not reproduced: the retrieve_context tool's schema in the requests (its estimate is \
                   counted) and the agent reading a stashed result back",
            config: S::Strands(StrandsConfig::default()),
        },
        Preset {
            name: "inspect_compaction_summary",
            source: "Inspect AI 0.3.285 react(compaction=CompactionSummary()): threshold 0.9 of the window, \
                     DEFAULT_SUMMARY_PROMPT (inspect_ai/model/_compaction/summary.py, _compaction.py)",
            note: "over 90% of the window, everything after the sample's input (the system messages and every \
                   message before the first assistant turn, as react() reads it) becomes one user message: \
                   Inspect's '[CONTEXT COMPACTION SUMMARY]' wrapper around the summary written with its prompt; \
                   the previous summary is folded in. Still over after the passes, the episode fails there, as \
                   Inspect raises 'Compaction insufficient'. Not reproduced: the memory tool's warning",
            config: S::Inspect(InspectConfig::new(InspectCompaction::Summary)),
        },
        Preset {
            name: "inspect_compaction_trim",
            source: "Inspect AI 0.3.285 react(compaction=CompactionTrim()): threshold 0.9, preserve 0.8 \
                     (inspect_ai/model/_compaction/trim.py, _trim.py trim_messages, _compaction.py)",
            note: "over 90% of the window, the oldest int(n × (1 − 0.8)) of the n conversation messages after the \
                   sample's input go, in floating point as Inspect computes it (35 messages lose 6), then tool \
                   results whose call went, calls whose result went and a trailing assistant message; up to 3 \
                   more passes while still over and shrinking, then the episode fails there, as Inspect raises \
                   'Compaction insufficient'. A message: an assistant turn, a tool result or a user message",
            config: S::Inspect(InspectConfig::new(InspectCompaction::Trim)),
        },
        Preset {
            name: "inspect_compaction_edit",
            source: "Inspect AI 0.3.285 react(compaction=CompactionEdit()): threshold 0.9, keep_tool_uses 3, \
                     keep_tool_inputs (inspect_ai/model/_compaction/edit.py, _compaction.py)",
            note: "over 90% of the window (measured on the edited request, so once over it edits again at every \
                   call), every tool result but the newest 3 becomes '(Tool result removed)', the calls kept; \
                   still over, the episode fails there, as Inspect raises 'Compaction insufficient'. Not \
                   reproduced: clearing reasoning but the last turn's (recorded reasoning is seldom sent back)",
            config: S::Inspect(InspectConfig::new(InspectCompaction::Edit)),
        },
        Preset {
            name: "inspect_compaction_native",
            source: "Inspect AI 0.3.285 react(compaction=CompactionNative()): threshold 0.9, the provider's \
                     compaction; with OpenAI, responses.compact, whose output is 'all user messages, followed by a \
                     single compaction item' (OpenAI API reference), opaque",
            note: "over 90% of the window, everything but the system messages and the user messages becomes one \
                   compaction item. The item is encrypted: it is replayed as a summary by the run's model, cut to \
                   or filled up to 2,000 tokens (a stated size, not OpenAI's, which is not published). Still over \
                   (Inspect counts the result without the system messages), the episode fails there. With an \
                   Anthropic model Inspect uses compact_20260112 instead (see anthropic_compact)",
            config: S::Inspect(InspectConfig::new(InspectCompaction::Native)),
        },
        Preset {
            name: "claude_code_auto_compact",
            source: "Claude Code 2.1 auto-compact (closed source): at the window less min(max output, 20,000) less \
                     13,000, i.e. 33,000 for models that write 20,000 tokens or more (getAutoCompactThreshold as \
                     deobfuscated in anthropics/claude-code#31806; public 2.1.39 sessions compacted at 167,094 to \
                     170,251 of a 200,000 window); its compact prompt and summary message as a public 2.1.39 \
                     session records them",
            note: "at the window less 33,000 tokens, everything but the system prompt, the task too, becomes one user \
                   message: 'This session is being continued from a previous conversation…' and the summary \
                   written with Claude Code's prompt. `/compact` is the same summary at a moment the user picks \
                   (an imported session replays it as as_recorded). Not reproduced: what Claude Code puts back \
                   after compacting (recent files, CLAUDE.md, memory: an imported session's unrecorded context \
                   holds their size), micro-compaction of old tool results, PreCompact hook instructions. Was \
                   anthropic_auto_compact, which fired 20,000 tokens late",
            config: S::Pipeline(PipelineConfig {
                reserve_tokens: Some(33_000),
                ..PipelineConfig::new(
                    1.0,
                    vec![S::Condenser(summarize_all(Unit::Items, Prompt::ClaudeCode))],
                )
            }),
        },
        Preset {
            name: "codex_auto_compact",
            source: "OpenAI Codex CLI inline auto-compaction: openai/codex codex-rs/core/src/compact.rs at 0100b103 \
                     (build_compacted_history, COMPACT_USER_MESSAGE_MAX_TOKENS = 20,000), auto_compact_token_limit \
                     = 90% of the window (protocol/src/openai_models.rs), prompt.md and summary_prefix.md at \
                     928a707f",
            note: "at 90% of the window, the history becomes the user messages, newest first within 20,000 tokens \
                   (4 bytes a token, the one that crosses cut in its middle), then one user message with Codex's \
                   summary prefix and the summary written with its prompt; every assistant turn and tool output \
                   goes. With an OpenAI model Codex compacts remotely instead (see inspect_compaction_native: \
                   the same endpoint)",
            config: S::Pipeline(PipelineConfig::new(
                0.9,
                vec![S::Condenser(CondenserConfig {
                    keep_user_tokens: Some(20_000),
                    ..summarize_all(Unit::Items, Prompt::Codex)
                })],
            )),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{agent_run, apply, assert_unchanged, preset, texts};
    use crate::history::{is_summary_text, Item, ItemKind};
    use crate::llm::LlmRequest;
    use crate::strategy::testing::{mock, run, state};

    #[test]
    fn strands_truncates_big_results_to_head_and_tail_and_summarizes_at_85() {
        // Under 85% of the window: only the truncation acts, on the newest result too.
        let mut r = agent_run(2, 1);
        r.contents
            .push(Item::tool_call("big", "bash", "{\"cmd\":\"cat log\"}"));
        r.contents.push(Item::tool_result(
            "big",
            "bash",
            "log line 000123 ok\n".repeat(600),
        ));
        let a = apply("strands_auto", &mut r, &state(1_000_000));
        assert!(a.llm_calls.is_empty());
        let cut = r.contents[7].text();
        assert!(
            cut.starts_with("[Truncated: 1 block, ~2,850 tokens]\n\n")
                && cut.contains("[... 8,400 chars elided ...]")
                && cut.ends_with("[Stashed] [ref: big_0]"),
            "{cut}"
        );
        assert_eq!(r.contents[3].text(), "output 0\n", "small results stay");
        // At 85%: every message but the task and the 4 newest (c9 r9 c10 r10) goes into the summary.
        let mut r = agent_run(11, 20);
        let a = apply("strands_auto", &mut r, &state(1_400));
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(a.summarized_items, 18);
        assert!(r.contents[2].is_summary());
        assert!(r.contents[2]
            .text()
            .starts_with("[Summarized: 18 messages, ~"));
        assert_eq!(r.contents[3].text(), "{\"i\":9}");
        assert_eq!(r.contents.len(), 2 + 1 + 4);
    }

    #[test]
    fn inspect_summary_keeps_the_task_and_wraps_the_summary_as_inspect() {
        let mut r = agent_run(10, 50);
        let tokens = state(0).measure(&r);
        assert_unchanged(
            "inspect_compaction_summary",
            &mut r,
            &state(tokens * 10 / 9 + 1),
        );
        let a = apply("inspect_compaction_summary", &mut r, &state(tokens));
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(texts(&r)[..2], ["sys", "task"]);
        assert!(r.contents[2]
            .text()
            .starts_with("[CONTEXT COMPACTION SUMMARY]\n\nThe following"));
        assert!(r.contents[2]
            .text()
            .ends_with("Please continue working on this task from where you left off."));
        assert_eq!(r.contents.len(), 3);
    }

    #[test]
    fn inspect_trim_drops_a_fifth_per_pass_until_under() {
        let st = state(1_000_000);
        let mut r = agent_run(10, 50);
        let tokens = st.measure(&r);
        // Just over: one pass, 4 of the 20 conversation messages (c0, r0, c1, r1).
        let a = apply(
            "inspect_compaction_trim",
            &mut r,
            &state(tokens * 10 / 9 - 10),
        );
        assert_eq!(a.dropped_items, 4);
        assert_eq!(texts(&r)[..3], ["sys", "task", "{\"i\":2}"]);
        // Far over: four passes (20 → 16 → 12 → 10 → 8 messages: a pass that would start the kept part on a
        // result whose call it took drops that result too).
        let mut r = agent_run(10, 50);
        let a = apply("inspect_compaction_trim", &mut r, &state(tokens / 4));
        assert_eq!(a.dropped_items, 12);
        assert_eq!(r.contents.len(), 2 + 8);
    }

    #[test]
    fn inspect_edit_removes_all_but_the_newest_three_results() {
        let mut r = agent_run(6, 50);
        let tokens = state(0).measure(&r);
        let a = apply("inspect_compaction_edit", &mut r, &state(tokens));
        assert_eq!(a.compacted_items, 3);
        let removed: Vec<usize> = (0..r.contents.len())
            .filter(|&i| r.contents[i].text() == crate::strategy::inspect::INSPECT_EDIT_PLACEHOLDER)
            .collect();
        assert_eq!(removed, [3, 5, 7]);
        assert_eq!(r.contents[2].text(), "{\"i\":0}", "the calls stay");
    }

    #[test]
    fn inspect_native_keeps_the_user_messages_and_one_opaque_item_of_2000_tokens() {
        let mut r = agent_run(10, 50);
        r.contents.insert(8, Item::user("also check the docs"));
        let tokens = state(0).measure(&r);
        let st = state(tokens);
        apply("inspect_compaction_native", &mut r, &st);
        assert_eq!(texts(&r)[..3], ["sys", "task", "also check the docs"]);
        assert_eq!(r.contents.len(), 4);
        let item = st.tokenizer.count_item(&r.contents[3]);
        assert!(item.abs_diff(2_000) <= 2, "{item}");
        assert!(r.contents[3].text().contains("[opaque compaction item]"));
    }

    #[test]
    fn claude_code_compacts_33k_below_the_window_and_summarizes_the_task_too() {
        let mut r = agent_run(10, 200);
        let tokens = state(0).measure(&r);
        assert_unchanged("claude_code_auto_compact", &mut r, &state(tokens + 33_000));
        let a = apply("claude_code_auto_compact", &mut r, &state(tokens + 32_999));
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(r.contents.len(), 2);
        assert_eq!(r.contents[0].text(), "sys");
        let summary = r.contents[1].text();
        assert!(summary.starts_with(
            "This session is being continued from a previous conversation that ran out of context."
        ));
        assert!(summary.ends_with("Continue with the last task that you were asked to work on."));
        assert_eq!(r.contents[1].kind(), ItemKind::Summary);
    }

    #[test]
    fn codex_keeps_the_user_messages_then_its_prefixed_summary() {
        let mut r = agent_run(10, 50);
        r.contents.insert(8, Item::user("use the staging database"));
        let tokens = state(0).measure(&r);
        let st = state(tokens * 10 / 9);
        let mut s = preset("codex_auto_compact");
        let a = run(s.as_mut(), &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(texts(&r)[..3], ["sys", "task", "use the staging database"]);
        assert!(r.contents[3]
            .text()
            .starts_with("You are resuming an in-progress task after context compaction."));
        assert!(is_summary_text(r.contents[3].text()));
        assert_eq!(r.contents.len(), 4);
        // The next compaction keeps the same user messages, not the previous summary.
        let more: LlmRequest = agent_run(30, 50);
        r.contents.extend(more.contents.into_iter().skip(22));
        run(s.as_mut(), &st, &mut r, &mock());
        assert_eq!(texts(&r)[..3], ["sys", "task", "use the staging database"]);
        assert_eq!(r.contents.len(), 4);
    }
}
