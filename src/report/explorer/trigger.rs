//! The size a strategy acts at, in tokens, and what it does there, in words, as the explorer's timeline draws it
//! (a dashed line named by the words before the colon) and its note says it (the whole sentence).
//!
//! The size is the strategy's budget as it states it ([`crate::strategy::StrategySpec::budget`]: a sliding
//! window's budget, a pipeline's trigger or a stage's budget when smaller, Inspect AI's and Strands' thresholds),
//! or compaction's token trigger. The words follow the strategy's configuration: a pipeline names its stages in
//! order (the default `summarization` row is a pipeline of one summarization stage: it summarizes, it has no
//! stages to run), a condenser, compaction or Inspect AI what it does with what.

use crate::history::Unit;
use crate::strategy::{
    CompactionMode, CondenseAction, InspectCompaction, Measure, PipelineConfig, RewriteUnit,
    StrategyConfig,
};

/// The size `config` acts at in a run whose window is `window`, and its label: `"trigger: over it, …"` or
/// `"budget: …"`; `None` for a strategy that acts on counts (units, steps), not on a size.
pub fn trigger(config: &StrategyConfig, window: usize) -> Option<(usize, String)> {
    match config {
        StrategyConfig::Compaction(c) => c
            .trigger_tokens
            .map(|t| (t, format!("trigger: over it, {}", doing(config)))),
        StrategyConfig::Pipeline(p) => pipeline(p, window),
        StrategyConfig::SlidingWindow(_) => config.budget(window).map(|b| {
            (
                b,
                "budget: the sliding window keeps the newest items under it".to_owned(),
            )
        }),
        StrategyConfig::Inspect(_) => config
            .budget(window)
            .map(|b| (b, format!("trigger: over it, {}", doing(config)))),
        StrategyConfig::Strands(_) => config.budget(window).map(|b| {
            (
                b,
                format!("trigger: at it by Strands' own estimate, {}", doing(config)),
            )
        }),
        StrategyConfig::OpenhandsSdk(_) => config
            .budget(window)
            .map(|b| (b, format!("trigger: over it, {}", doing(config)))),
        StrategyConfig::Langmem(_) => config.budget(window).map(|b| {
            (
                b,
                format!(
                    "trigger: once the messages not yet summarized reach it, {}",
                    doing(config)
                ),
            )
        }),
        _ => config
            .budget(window)
            .map(|b| (b, "budget: it brings the request under it".to_owned())),
    }
}

/// A pipeline's trigger with its stages in order, or the stage whose own budget is smaller (the size
/// [`StrategyConfig::budget`] gives).
fn pipeline(p: &PipelineConfig, window: usize) -> Option<(usize, String)> {
    let stage = p
        .stages
        .iter()
        .filter(|s| s.budget(window).is_some())
        .filter_map(|s| trigger(s, window))
        .min_by_key(|(t, _)| *t);
    let own = (!p.run_all && p.measure == Measure::Request).then(|| p.trigger_tokens(window));
    match (own, stage) {
        (Some(own), Some(stage)) if stage.0 < own => Some(stage),
        (Some(own), _) => Some((own, format!("trigger: over it, {}", stages(p)))),
        (None, stage) => stage,
    }
}

/// A pipeline's stages in words, in order: each later one runs only if the request is still over.
fn stages(p: &PipelineConfig) -> String {
    let words: Vec<String> = p.stages.iter().map(doing).collect();
    match words.as_slice() {
        [] => "nothing runs".to_owned(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first}, then {} while still over", rest.join(", then ")),
    }
}

fn units(unit: Unit) -> &'static str {
    match unit {
        Unit::Items => "items",
        Unit::ToolResults => "tool results",
        Unit::AgentTurns => "agent turns",
        Unit::UserTurns => "user turns",
        Unit::Messages => "messages",
    }
}

/// What a strategy does when it acts, in a few words.
fn doing(config: &StrategyConfig) -> String {
    match config {
        StrategyConfig::None => "nothing is reduced".to_owned(),
        StrategyConfig::SlidingWindow(_) => "a sliding window keeps the newest items".to_owned(),
        StrategyConfig::Compaction(c) => match c.mode {
            CompactionMode::Stub => "compaction masks old tool output".to_owned(),
            CompactionMode::Truncate => "compaction truncates old tool output".to_owned(),
        },
        StrategyConfig::Summarization(_) => "the middle of the history is summarized".to_owned(),
        StrategyConfig::Pipeline(p) => stages(p),
        StrategyConfig::Condenser(c) => match c.action {
            CondenseAction::Drop => format!("the condenser drops old {}", units(c.unit)),
            CondenseAction::Summarize => format!("the condenser summarizes old {}", units(c.unit)),
        },
        StrategyConfig::Rewrite(r) => match r.unit {
            RewriteUnit::Steps => "an LLM rewrites old steps shorter".to_owned(),
            RewriteUnit::ToolResults => "an LLM rewrites tool outputs shorter".to_owned(),
        },
        StrategyConfig::AsRecorded(_) => "the agent's own compaction, as recorded".to_owned(),
        StrategyConfig::External(_) => "the external program reduces the request".to_owned(),
        StrategyConfig::Inspect(c) => match c.compaction {
            InspectCompaction::Summary => "Inspect AI summarizes the conversation".to_owned(),
            InspectCompaction::Trim => "Inspect AI trims the oldest messages".to_owned(),
            InspectCompaction::Edit => "Inspect AI clears old tool results".to_owned(),
            InspectCompaction::Native => "Inspect AI compacts through the provider".to_owned(),
        },
        StrategyConfig::Strands(_) => "Strands summarizes older messages".to_owned(),
        StrategyConfig::Langmem(_) => "LangMem extends its running summary".to_owned(),
        StrategyConfig::Adk(_) => "ADK summarizes the newest invocations".to_owned(),
        StrategyConfig::OpenhandsSdk(_) => {
            "the OpenHands SDK summarizes all but the first and newest events".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::{defaults, presets::presets};

    const WINDOW: usize = 128_000;

    #[test]
    fn the_size_is_the_strategys_budget_or_compactions_trigger() {
        let mut configs: Vec<(String, StrategyConfig)> =
            defaults().into_iter().map(|s| (s.name, s.config)).collect();
        configs.extend(presets().into_iter().map(|p| (p.name.to_owned(), p.config)));
        for (name, config) in &configs {
            let size = trigger(config, WINDOW).map(|t| t.0);
            let expected = match config {
                StrategyConfig::Compaction(c) => c.trigger_tokens,
                _ => config.budget(WINDOW),
            };
            assert_eq!(size, expected, "{name}");
        }
    }

    #[test]
    fn each_default_strategy_is_described_as_what_it_does() {
        let described: Vec<(String, Option<String>)> = defaults()
            .into_iter()
            .map(|s| (s.name, trigger(&s.config, WINDOW).map(|t| t.1)))
            .collect();
        let label = |name: &str| {
            described
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, l)| l.clone())
        };
        assert_eq!(label("none"), None);
        assert_eq!(label("compaction"), None);
        assert_eq!(
            label("sliding_window").as_deref(),
            Some("budget: the sliding window keeps the newest items under it")
        );
        // A pipeline of one summarization stage summarizes: it runs no "stages".
        assert_eq!(
            label("summarization").as_deref(),
            Some("trigger: over it, the middle of the history is summarized")
        );
        assert_eq!(
            label("pipeline").as_deref(),
            Some(
                "trigger: over it, compaction masks old tool output, then the middle of the history \
                 is summarized while still over"
            )
        );
    }

    #[test]
    fn each_preset_with_a_size_is_described_by_its_own_configuration() {
        let label = |name: &str| {
            let p = presets().into_iter().find(|p| p.name == name).unwrap();
            trigger(&p.config, WINDOW).map(|t| t.1).unwrap_or_default()
        };
        assert_eq!(
            label("langchain_trim"),
            "budget: the sliding window keeps the newest items under it"
        );
        assert!(label("strands_auto").contains("Strands summarizes"));
        assert!(label("langmem_summary").contains("LangMem extends its running summary"));
        assert!(label("inspect_compaction_summary").contains("Inspect AI summarizes"));
        assert!(label("inspect_compaction_trim").contains("Inspect AI trims"));
        assert!(label("inspect_compaction_edit").contains("Inspect AI clears old tool results"));
        assert!(label("inspect_compaction_native").contains("through the provider"));
        assert!(label("claude_code_auto_compact").contains("the condenser summarizes"));
        assert!(label("langmem_summary").contains("summarized"));
        // Nothing but a pipeline of several stages says "then".
        for p in presets() {
            let Some((_, l)) = trigger(&p.config, WINDOW) else {
                continue;
            };
            assert!(!l.contains("runs its stages"), "{}: {l}", p.name);
            let many = matches!(&p.config, StrategyConfig::Pipeline(c) if c.stages.len() > 1);
            assert!(many || !l.contains(", then "), "{}: {l}", p.name);
        }
    }
}
