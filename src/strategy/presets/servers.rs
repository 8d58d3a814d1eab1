//! The providers' server-side compaction: Anthropic's Messages API (`compact_20260112`) and OpenAI's Responses
//! API (`context_management` with `compact_threshold`).

use super::agents::summarize_all;
use super::Preset;
use crate::history::Unit;
use crate::strategy::{CondenserConfig, PipelineConfig, Prompt, StrategyConfig};

/// The size ctxbench gives an opaque compaction item, which no provider publishes: a stated assumption, which a
/// sweep can vary (`opaque_tokens`).
pub(super) const OPAQUE_ITEM_TOKENS: usize = 2_000;

/// The providers' presets.
#[must_use]
pub(super) fn presets() -> Vec<Preset> {
    use StrategyConfig as S;
    vec![
        Preset {
            name: "anthropic_compact",
            source: "Anthropic Messages API server-side compaction, compact_20260112 (beta compact-2026-01-12): \
                     trigger 150,000 input tokens by default (50,000 at least), the default summarization prompt, \
                     every block before the compaction block dropped from later requests (Anthropic's compaction \
                     docs; Inspect AI 0.3.285's anthropic provider)",
            note: "once a request is over 150,000 tokens, whatever the window, everything but the system prompt, the \
                   task too, becomes the compaction block: a summary written with Anthropic's prompt, kept from \
                   then on. The block is readable, so it is replayed as the run model's summary; ctxbench sends it \
                   as a user message where the API puts it in the assistant turn (a few tokens apart). Not \
                   reproduced: pause_after_compaction, custom instructions",
            config: S::Pipeline(PipelineConfig {
                trigger_tokens: Some(150_000),
                ..PipelineConfig::new(
                    1.0,
                    vec![S::Condenser(summarize_all(
                        Unit::Items,
                        Prompt::AnthropicCompact,
                    ))],
                )
            }),
        },
        Preset {
            name: "openai_responses_compact",
            source: "OpenAI Responses API server-side compaction, context_management [{type: compaction, \
                     compact_threshold}]: the server compacts when the rendered tokens cross the threshold and the \
                     items before the latest compaction item may be dropped (OpenAI's compaction guide); the \
                     threshold has no default, 90% of the window here, as Codex and Inspect AI drive it",
            note: "over 90% of the window, everything but the system messages, the task too, becomes one compaction \
                   item. The item is encrypted ('opaque and not intended to be human-interpretable'): it is replayed \
                   as a summary by the run's model, cut to or filled up to 2,000 tokens (a stated size, not \
                   OpenAI's, which is not published; opaque_tokens, which a sweep can vary), so its retention is the \
                   run model's summary's, not OpenAI's",
            config: S::Pipeline(PipelineConfig::new(
                0.9,
                vec![S::Condenser(CondenserConfig {
                    opaque_tokens: Some(OPAQUE_ITEM_TOKENS),
                    ..summarize_all(Unit::Items, Prompt::Ctxbench)
                })],
            )),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{agent_run, apply, assert_unchanged, texts};
    use crate::strategy::testing::state;

    #[test]
    fn anthropic_compacts_over_150k_whatever_the_window() {
        let mut r = agent_run(6, 5_000);
        let tokens = state(0).measure(&r);
        assert!(tokens < 150_000 && tokens > 100_000, "{tokens}");
        // A window smaller than the request: no compaction under 150,000 tokens.
        assert_unchanged("anthropic_compact", &mut r, &state(tokens / 2));
        let mut r = agent_run(9, 5_000);
        let a = apply("anthropic_compact", &mut r, &state(10_000_000));
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(texts(&r)[0], "sys");
        assert!(texts(&r)[1].starts_with("[Previous work summary]\n"));
        assert_eq!(r.contents.len(), 2);
    }

    #[test]
    fn openai_replaces_everything_with_an_opaque_item_of_2000_tokens() {
        let mut r = agent_run(10, 50);
        let tokens = state(0).measure(&r);
        let st = state(tokens);
        let a = apply("openai_responses_compact", &mut r, &st);
        assert_eq!(a.llm_calls.len(), 1);
        assert_eq!(r.contents.len(), 2);
        let item = st.tokenizer.count_item(&r.contents[1]);
        assert!(item.abs_diff(super::OPAQUE_ITEM_TOKENS) <= 2, "{item}");
    }
}
