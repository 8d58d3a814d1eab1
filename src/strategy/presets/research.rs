//! The published research strategies that need no training: AgentDiet's trajectory reduction and ACON's
//! history and observation compression (with ACON's baseline guidelines: its optimized ones are learned per
//! benchmark and were not published with their prompts' final text).

use super::agents::summarize_all;
use super::Preset;
use crate::history::Unit;
use crate::strategy::{
    CondenserConfig, Measure, PipelineConfig, Prompt, RewriteConfig, RewriteUnit, StrategyConfig,
};

/// The research presets.
#[must_use]
pub(super) fn presets() -> Vec<Preset> {
    use StrategyConfig as S;
    vec![
        Preset {
            name: "agentdiet",
            source: "AgentDiet (Xiao et al., arXiv 2509.23586, FSE 2026): its artifact's trae_agent/agents/\
                     traj_analyzer.py, as public ports copy it: ctx_before 1, ctx_after 2, threshold 500 tokens, a \
                     rewrite kept when it saves 400 tokens or 20%, reflection model GPT-5 mini",
            note: "after each step (an assistant turn and what follows it), the step two before it, when over 500 \
                   tokens, is rewritten by the run's model with AgentDiet's prompt, the step before and the two \
                   after it shown beside (the task before the first); kept when it saves 400 tokens or 20%, it \
                   becomes one assistant message '(System reminder: compressed for better efficiency) …'. Not \
                   reproduced: GPT-5 mini as the reflection model, AgentDiet's XML steps (ctxbench's transcript \
                   instead), the LZ4 gate (off by default there too)",
            config: S::Rewrite(RewriteConfig::default()),
        },
        Preset {
            name: "acon_history",
            source: "ACON (Kang et al., arXiv 2510.00615): history compression as microsoft/acon runs it on AppWorld \
                     (history_summarization_threshold 4,096, preserve_last_k_turns 1, history_summary_rule reset; \
                     experiments/appworld/run_ctxopt_pipeline.py), its baseline history prompt (acon d63f9ae, MIT)",
            note: "when the history (the request less the system prompt, the task and the tool schemas) is over \
                   4,096 tokens, all but the last turn becomes one summary written with ACON's baseline prompt, \
                   which replaces the previous one (folded in). Not reproduced: ACON's optimized, learned \
                   guidelines and its distilled compressors",
            config: S::Pipeline(PipelineConfig {
                trigger_tokens: Some(4_096),
                measure: Measure::History,
                ..PipelineConfig::new(
                    1.0,
                    vec![S::Condenser(CondenserConfig {
                        keep_last: 1,
                        ..summarize_all(Unit::AgentTurns, Prompt::AconHistory)
                    })],
                )
            }),
        },
        Preset {
            name: "acon_observation",
            source: "ACON (Kang et al., arXiv 2510.00615): observation compression as microsoft/acon runs it on \
                     AppWorld (obs_summarization_threshold 1,024; experiments/appworld/run_ctxopt_pipeline.py), \
                     its baseline observation prompt (acon d63f9ae, MIT)",
            note: "every tool output over 1,024 tokens is rewritten, as soon as it arrives, by the run's model with \
                   ACON's baseline prompt (the task and the history shown beside); what follows '# Refined \
                   Observation' replaces it, marked '[Refined observation]'. Not reproduced: ACON's optimized \
                   guidelines and distilled compressors",
            config: S::Rewrite(RewriteConfig {
                unit: RewriteUnit::ToolResults,
                delay: 0,
                context_before: None,
                context_after: 0,
                min_tokens: 1_024,
                accept_saved: None,
                accept_ratio: None,
                prompt: Prompt::AconObservation,
                ..RewriteConfig::default()
            }),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{apply, assert_unchanged, preset};
    use crate::history::{Item, REFINED_PREFIX};
    use crate::llm::LlmRequest;
    use crate::strategy::prompt::AGENTDIET_REMINDER;
    use crate::strategy::testing::{mock, run, state};

    /// sys, task, then `n` steps of a thought, a call and a result of `lines` lines.
    fn steps(n: usize, lines: usize) -> LlmRequest {
        let mut items = vec![Item::system("sys"), Item::user("Fix the build.")];
        for i in 0..n {
            items.push(Item::assistant(format!("Step {i}: running the tests.")));
            items.push(Item::tool_call(
                format!("c{i}"),
                "bash",
                "{\"cmd\":\"pytest\"}",
            ));
            let mut out = format!("tests/test_{i}.py::test_case PASSED\n").repeat(lines);
            out.push_str(&format!(
                "FAILED tests/test_{i}.py::test_edge - KeyError: 'k{i}'\n"
            ));
            items.push(Item::tool_result(format!("c{i}"), "bash", out));
        }
        LlmRequest::from_contents(items)
    }

    #[test]
    fn agentdiet_rewrites_the_step_two_behind_into_one_reminder() {
        let st = state(1_000_000);
        let mut s = preset("agentdiet");
        let mut r = steps(3, 60);
        let a = run(s.as_mut(), &st, &mut r, &mock());
        assert_eq!(a.llm_calls.len(), 1);
        // Step 0 (its thought, call and result) is one assistant message now; steps 1 and 2 are whole.
        assert!(r.contents[2].text().starts_with(AGENTDIET_REMINDER));
        assert!(r.contents[2].is_role(crate::history::Role::Assistant));
        assert_eq!(r.contents[3].text(), "Step 1: running the tests.");
        assert_eq!(r.contents.len(), 2 + 1 + 6);
        // Steps of a few tokens are not asked about.
        let mut r = steps(4, 1);
        assert_unchanged("agentdiet", &mut r, &st);
    }

    #[test]
    fn acon_history_counts_the_history_alone_and_keeps_the_last_turn() {
        let st = state(1_000_000);
        let mut r = steps(4, 40);
        // A system prompt far over 4,096 tokens does not trigger it: the history is under.
        r.contents[0] = Item::system("Follow the rules. ".repeat(2_000));
        assert_unchanged("acon_history", &mut r, &st);
        let mut r = steps(12, 40);
        let a = apply("acon_history", &mut r, &st);
        assert_eq!(a.llm_calls.len(), 1);
        assert!(r.contents[2].is_summary());
        assert_eq!(r.contents[3].text(), "Step 11: running the tests.");
        assert_eq!(r.contents.len(), 2 + 1 + 3);
    }

    #[test]
    fn acon_observation_refines_outputs_over_1024_tokens_as_they_arrive() {
        let st = state(1_000_000);
        let mut r = steps(2, 30);
        r.contents.extend(steps(3, 200).contents.split_off(8));
        let a = apply("acon_observation", &mut r, &st);
        assert_eq!(
            a.llm_calls.len(),
            1,
            "only the newest output is over 1,024 tokens"
        );
        assert!(r.contents[10].text().starts_with(REFINED_PREFIX));
        assert!(!r.contents[4].text().starts_with(REFINED_PREFIX));
    }
}
