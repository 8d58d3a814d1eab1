//! Replay: feed an episode's items into a live request, let a strategy reduce it at every call point, and
//! record one [`StepRecord`] per call point.
//!
//! The loop follows the replay semantics of DESIGN.md step by step:
//! 1. the episode's items arrive in recorded order and join a live request;
//! 2. a call point is each place where the recorded agent called its model (before each assistant turn, and
//!    at the end when items follow the last turn);
//! 3. at each call point the strategy may reduce the live request, and its reduction persists;
//! 4. the recorded assistant turn is then appended, whatever the strategy did (open-loop replay);
//! 5. `none` is the baseline every other strategy is compared with (by [`crate::metrics`]).
//!
//! Cost per step is linear in what changed: the [`tally`] keeps what it knew of the request between call
//! points, as far as the strategy's declared [`Change`](crate::strategy::Change) allows; [`reference`] replays
//! the same episode recounting everything, and a property test holds the two equal.

pub mod evidence;
pub mod probe;
pub mod record;
pub mod reference;
mod tally;

use std::sync::Arc;
use std::time::Instant;

pub use record::{EpisodeReplay, FindingSet, ProbeRecord, StepRecord, TokensByKind};

use crate::error::{Error, Result};
use crate::history::{Episode, Item};
use crate::llm::{EpisodeHint, Llm, LlmRequest};
use crate::strategy::{Applied, CallPoint, NamedStrategy, Strategy};
use crate::tokens::Tokenizer;
use evidence::Evidence;
use probe::Probes;
use tally::{ItemKeys, Tally};

/// Replays episodes through strategies with one LLM and one tokenizer.
pub struct Replayer<'a> {
    tokenizer: Arc<Tokenizer>,
    llm: &'a dyn Llm,
    context_window: usize,
    verify: bool,
}

impl<'a> Replayer<'a> {
    /// A replayer for a model with `context_window` tokens. It checks every strategy's declared change in
    /// debug builds, or when the environment sets `CTXBENCH_VERIFY=1` (see [`Replayer::verifying`]).
    pub fn new(tokenizer: Arc<Tokenizer>, llm: &'a dyn Llm, context_window: usize) -> Self {
        Self {
            tokenizer,
            llm,
            context_window,
            verify: cfg!(debug_assertions)
                || std::env::var_os("CTXBENCH_VERIFY").is_some_and(|v| v == "1"),
        }
    }

    /// The same replayer, checking (or not) every change a strategy declares against the request it left:
    /// a wrong declaration panics with the strategy's name, the episode and the step.
    #[must_use]
    pub fn verifying(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// Replays `episode` under every strategy, in order, sharing the episode's evidence index and item counts.
    ///
    /// # Errors
    /// A strategy's harness fault, naming the episode and strategy.
    pub async fn replay_all(
        &self,
        episode: &Episode,
        strategies: &[NamedStrategy],
    ) -> Result<Vec<EpisodeReplay>> {
        self.start(episode);
        let mut evidence = Evidence::new(episode);
        let keys = ItemKeys::new(&episode.items, &self.tokenizer);
        let mut out = Vec::with_capacity(strategies.len());
        for s in strategies {
            let strategy = s.config.build();
            out.push(
                self.replay_with(episode, &s.name, strategy, &keys, &mut evidence)
                    .await?,
            );
        }
        Ok(out)
    }

    /// Replays `episode` under one strategy.
    ///
    /// # Errors
    /// As [`Replayer::replay_all`].
    pub async fn replay(
        &self,
        episode: &Episode,
        strategy: &NamedStrategy,
    ) -> Result<EpisodeReplay> {
        self.replay_custom(episode, &strategy.name, strategy.config.build())
            .await
    }

    /// Replays `episode` under a strategy of the caller's own, reported as `name`.
    ///
    /// # Errors
    /// As [`Replayer::replay_all`].
    pub async fn replay_custom(
        &self,
        episode: &Episode,
        name: &str,
        strategy: Box<dyn Strategy>,
    ) -> Result<EpisodeReplay> {
        self.start(episode);
        let keys = ItemKeys::new(&episode.items, &self.tokenizer);
        self.replay_with(episode, name, strategy, &keys, &mut Evidence::new(episode))
            .await
    }

    /// Tells the LLM which questions the episode's probes ask.
    fn start(&self, episode: &Episode) {
        let questions: Vec<&str> = episode.probes.iter().map(|p| p.question.as_str()).collect();
        self.llm.start_episode(&EpisodeHint {
            questions: &questions,
        });
    }

    async fn replay_with(
        &self,
        episode: &Episode,
        name: &str,
        mut strategy: Box<dyn Strategy>,
        keys: &ItemKeys,
        evidence: &mut Evidence,
    ) -> Result<EpisodeReplay> {
        let items = &episode.items;
        let mut probes = Probes::new(&episode.probes);
        let mut live = LlmRequest::default();
        let mut tally = Tally::new(evidence);
        let points = call_points(items);
        let mut steps = Vec::with_capacity(points.len());
        let mut next = 0;
        for (step, &at) in points.iter().enumerate() {
            // 1. The items recorded since the last call point join the live request.
            let tokens_before = tally.receive(&mut live, &items[next..at], &keys.tokens[next..at]);
            // 3. The strategy may reduce the request; what it does persists.
            let point = CallPoint {
                tokenizer: Arc::clone(&self.tokenizer),
                context_window: self.context_window,
                step,
                input_tokens: Some(tokens_before),
                content_tokens: Some(tally.content_tokens()),
            };
            let handed_in = self.verify.then(|| live.clone());
            let started = Instant::now();
            let applied = strategy
                .apply(&point, &mut live, self.llm)
                .await
                .map_err(|e| Error::Strategy {
                    strategy: name.to_owned(),
                    message: format!("episode '{}', step {step}: {e}", episode.id),
                })?;
            let compute_us = started.elapsed().as_secs_f64() * 1e6;
            // The tally updates the item counts in place: the strategy holds no copy of them any more.
            drop(point);
            if let Some(before) = handed_in {
                check(name, episode, step, &applied, &before, &live);
            }
            let sent = tally.send(
                step,
                at,
                &live,
                &applied.change,
                keys,
                &self.tokenizer,
                evidence,
            );
            probes.ask_due(at, step, &mut live, self.llm).await;
            // 4. The recorded assistant turn is appended, whatever the strategy did.
            let end = turn_end(items, at);
            let output_tokens = tally.answer(&mut live, &items[at..end], &keys.tokens[at..end]);
            next = end;
            steps.push(StepRecord {
                step,
                item_index: at,
                items_sent: live.contents.len() - (end - at),
                instructions_sent: live.instructions.len(),
                tokens_before,
                tokens_sent: sent.tokens_sent,
                cached_tokens: sent.cached_tokens,
                output_tokens,
                tokens_by_kind: sent.tokens_by_kind,
                changed: applied.changed(),
                summarized_items: applied.summarized_items,
                compacted_items: applied.compacted_items,
                dropped_items: applied.dropped_items,
                llm_calls: applied.llm_calls,
                present: sent.present,
                compute_us,
            });
        }
        Ok(EpisodeReplay {
            episode: episode.id.clone(),
            source: episode.source.clone(),
            strategy: name.to_owned(),
            items: items.len(),
            steps,
            probes: probes.finish(&mut live, self.llm).await,
        })
    }
}

/// Panics, naming the strategy, episode and step, when a strategy's declared change does not match what it
/// did to the request.
fn check(
    name: &str,
    episode: &Episode,
    step: usize,
    applied: &Applied,
    before: &LlmRequest,
    after: &LlmRequest,
) {
    if let Err(wrong) = applied.change.verify(before, after) {
        panic!(
            "strategy '{}' declared a wrong change at step {step} of episode '{}': it declared {:?}, but {wrong}",
            name, episode.id, applied.change
        );
    }
}

/// Every call point of `items`: the positions just before an assistant turn begins, and the end of the
/// episode when items follow the last turn (the agent would call its model again).
#[must_use]
pub fn call_points(items: &[Item]) -> Vec<usize> {
    let mut points = crate::history::call_points(items);
    let last_turn_end = points.last().map_or(0, |&at| turn_end(items, at));
    if points.is_empty() || last_turn_end < items.len() {
        points.push(items.len());
    }
    points
}

/// The index just past the assistant turn starting at `start`.
#[must_use]
pub fn turn_end(items: &[Item], start: usize) -> usize {
    items[start.min(items.len())..]
        .iter()
        .position(|i| !i.is_assistant_turn())
        .map_or(items.len(), |n| start + n)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::history::{Finding, FindingKind, Probe};
    use crate::llm::mock::{MockConfig, MockLlm};
    use crate::strategy::{Change, StrategyConfig};
    use crate::tokens::TOKENS_PER_REPLY;

    pub(crate) fn episode() -> Episode {
        let mut items = vec![
            Item::system("You are a coding agent."),
            Item::user("Fix the failing test."),
        ];
        for i in 0..12 {
            items.push(Item::assistant(format!("Step {i}: running the tests.")));
            items.push(Item::tool_call(format!("c{i}"), "run_tests", "{}"));
            let mut out = format!(
                "collected 40 items\n{}",
                "PASSED tests/test_misc.py\n".repeat(60)
            );
            if i == 2 {
                out.push_str(
                    "FAILED tests/test_dates.py::test_leap - AssertionError: expected 2024-02-29\n",
                );
            }
            items.push(Item::tool_result(format!("c{i}"), "run_tests", out));
        }
        items.push(Item::assistant("Fixed the leap year bug in src/dates.py."));
        Episode {
            id: "ep".into(),
            source: "test".into(),
            task: "fix".into(),
            items,
            findings: vec![Finding {
                id: "f1".into(),
                text: "leap test fails".into(),
                evidence: vec!["AssertionError: expected 2024-02-29".into()],
                introduced_at: 10,
                kind: FindingKind::Recall,
            }],
            probes: vec![Probe {
                id: "p1".into(),
                after_item: 30,
                question: "Which test in test_dates.py failed with an AssertionError?".into(),
                answers: vec!["test_leap".into()],
                finding: Some("f1".into()),
                kind: FindingKind::Recall,
            }],
            meta: serde_json::Map::new(),
        }
    }

    fn replay(strategies: &[NamedStrategy]) -> Vec<EpisodeReplay> {
        let tok = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
        let r = Replayer::new(tok, &llm, 4000);
        pollster::block_on(r.replay_all(&episode(), strategies)).unwrap()
    }

    #[test]
    fn baseline_keeps_everything_and_caches_the_prefix() {
        let out = replay(&[NamedStrategy::new("none", StrategyConfig::None)]);
        let steps = &out[0].steps;
        assert_eq!(steps.len(), 13);
        for w in steps.windows(2) {
            assert!(w[1].tokens_sent > w[0].tokens_sent);
            // The previous request is a prefix of the next one.
            assert_eq!(w[1].cached_tokens, w[0].tokens_sent - TOKENS_PER_REPLY);
        }
        // The finding is in every request from its introduction on.
        assert!(steps
            .iter()
            .all(|s| s.present.contains(0) == (s.item_index > 10)));
        assert!(out[0].probes[0].correct, "{:?}", out[0].probes);
    }

    #[test]
    fn strategies_differ() {
        let out = replay(&[
            NamedStrategy::new("none", StrategyConfig::None),
            NamedStrategy::new(
                "window",
                StrategyConfig::SlidingWindow(crate::strategy::SlidingWindowConfig {
                    max_tokens: Some(1500),
                    max_items: None,
                    ..crate::strategy::SlidingWindowConfig::default()
                }),
            ),
            NamedStrategy::new(
                "compaction",
                StrategyConfig::Compaction(crate::strategy::CompactionConfig::default()),
            ),
        ]);
        let totals: Vec<usize> = out
            .iter()
            .map(|r| r.steps.iter().map(|s| s.tokens_sent).sum())
            .collect();
        assert!(totals[1] < totals[0] && totals[2] < totals[0], "{totals:?}");
        // Compaction masks the old failing output: the finding is no longer present at the end.
        assert!(!out[2].steps.last().unwrap().present.contains(0));
    }

    /// A strategy that drops the oldest tool result but says it changed nothing.
    struct Liar;

    #[async_trait::async_trait]
    impl crate::strategy::Strategy for Liar {
        async fn apply(
            &mut self,
            _: &CallPoint,
            req: &mut LlmRequest,
            _: &dyn Llm,
        ) -> Result<Applied> {
            if let Some(i) = req
                .contents
                .iter()
                .position(|i| matches!(i, Item::ToolResult { .. }))
            {
                req.contents.remove(i);
            }
            Ok(Applied::new(Change::Unchanged))
        }
    }

    #[test]
    #[should_panic(expected = "strategy 'liar' declared a wrong change at step 1 of episode 'ep'")]
    fn a_wrong_declaration_panics_with_the_strategy_and_step() {
        let tok = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
        let replayer = Replayer::new(tok, &llm, 4000).verifying(true);
        // Step 0 has no tool result to drop yet; at step 1 the liar drops one.
        let _ = pollster::block_on(replayer.replay_custom(&episode(), "liar", Box::new(Liar)));
    }
}
