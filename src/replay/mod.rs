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

pub mod calls;
pub mod evidence;
pub mod fit;
pub mod probe;
pub mod record;
pub mod reference;
mod tally;
pub mod unrecorded;
mod windows;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

pub use record::{EpisodeReplay, FindingSet, ProbeRecord, StepRecord, TokensByKind};

use crate::error::{Error, Result};
use crate::history::{Episode, Item};
use crate::llm::pricing::Defaults;
use crate::llm::{EpisodeHint, Llm, LlmRequest};
use crate::strategy::{Applied, CallPoint, NamedStrategy, Strategy};
use crate::tokens::Tokenizer;
use calls::Recorder;
use evidence::Evidence;
use probe::Probes;
use tally::{ItemKeys, Tally};

/// Replays episodes through strategies with one LLM and one tokenizer.
pub struct Replayer<'a> {
    tokenizer: Arc<Tokenizer>,
    llm: &'a dyn Llm,
    judge: &'a dyn Llm,
    context_window: usize,
    windows: Option<&'a Defaults>,
    verify: bool,
    observer: Option<&'a dyn Observer>,
    unrecorded: bool,
}

/// Sees, at every call point, the request as handed to the strategy and as the strategy left it (sent): an
/// opt-in hook for tools that show what a strategy sent (`ctxbench show`). A replay without one clones no
/// request for it.
pub trait Observer: Sync {
    /// Call point `step` of `strategy`: the request `handed_in` (the previous request as sent, with the items
    /// recorded since appended), the request `sent`, and what the strategy said it did.
    fn observe(
        &self,
        strategy: &str,
        step: usize,
        handed_in: &LlmRequest,
        sent: &LlmRequest,
        applied: &Applied,
    );
}

impl<'a> Replayer<'a> {
    /// A replayer for a model with `context_window` tokens. It checks every strategy's declared change in
    /// debug builds, in the crate's unit tests, or when the environment sets `CTXBENCH_VERIFY=1` (as the CLI
    /// tests do; see [`Replayer::verifying`]).
    pub fn new(tokenizer: Arc<Tokenizer>, llm: &'a dyn Llm, context_window: usize) -> Self {
        Self {
            tokenizer,
            llm,
            judge: llm,
            context_window,
            windows: None,
            verify: cfg!(any(debug_assertions, test))
                || std::env::var_os("CTXBENCH_VERIFY").is_some_and(|v| v == "1"),
            observer: None,
            unrecorded: true,
        }
    }

    /// The same replayer, sending (by default) or leaving out the blocks of context the traces did not
    /// record ([`Item::Unrecorded`]; `--unrecorded keep|ignore`): left out, every figure covers only what was
    /// recorded.
    #[must_use]
    pub fn with_unrecorded(mut self, keep: bool) -> Self {
        self.unrecorded = keep;
        self
    }

    /// The same replayer, showing `observer` every request handed to a strategy and sent.
    #[must_use]
    pub fn observed(mut self, observer: &'a dyn Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The same replayer, with `judge` grading the answers of open probes (by default the replayer's LLM,
    /// which for the mock is the stand-in judge of [`crate::llm::judge`]).
    #[must_use]
    pub fn with_judge(mut self, judge: &'a dyn Llm) -> Self {
        self.judge = judge;
        self
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
    pub fn replay_all(
        &self,
        episode: &Episode,
        strategies: &[NamedStrategy],
    ) -> Result<Vec<EpisodeReplay>> {
        self.start(episode);
        let mut evidence = Evidence::new(episode);
        let prepared = Prepared::new(episode, &self.tokenizer, self.unrecorded);
        // Every strategy's replay goes on while the probes of those before it wait for their answers.
        let mut open = Vec::with_capacity(strategies.len());
        for s in strategies {
            let strategy = s.config.build_for(episode);
            let budget = s.config.budget(self.window_of(episode));
            match self.replay_with(
                episode,
                (&s.name, budget),
                strategy,
                &prepared,
                &mut evidence,
            ) {
                Ok(replay) => open.push(replay),
                Err(e) => {
                    // A call of an earlier strategy that failed is the episode's error, as it would be in a
                    // replay that waited for every answer.
                    for replay in open {
                        replay.settle()?;
                    }
                    return Err(e);
                }
            }
        }
        open.into_iter().map(Unsettled::settle).collect()
    }

    /// Replays `episode` under one strategy.
    ///
    /// # Errors
    /// As [`Replayer::replay_all`].
    pub fn replay(&self, episode: &Episode, strategy: &NamedStrategy) -> Result<EpisodeReplay> {
        self.start(episode);
        let prepared = Prepared::new(episode, &self.tokenizer, self.unrecorded);
        self.replay_with(
            episode,
            (
                &strategy.name,
                strategy.config.budget(self.window_of(episode)),
            ),
            strategy.config.build_for(episode),
            &prepared,
            &mut Evidence::new(episode),
        )?
        .settle()
    }

    /// Replays `episode` under a strategy of the caller's own, reported as `name`.
    ///
    /// # Errors
    /// As [`Replayer::replay_all`].
    pub fn replay_custom(
        &self,
        episode: &Episode,
        name: &str,
        strategy: Box<dyn Strategy>,
    ) -> Result<EpisodeReplay> {
        self.start(episode);
        let prepared = Prepared::new(episode, &self.tokenizer, self.unrecorded);
        self.replay_with(
            episode,
            (name, None),
            strategy,
            &prepared,
            &mut Evidence::new(episode),
        )?
        .settle()
    }

    /// Tells the LLM which questions the episode's probes ask.
    fn start(&self, episode: &Episode) {
        let questions: Vec<&str> = episode.probes.iter().map(|p| p.question.as_str()).collect();
        self.llm.start_episode(&EpisodeHint {
            questions: &questions,
        });
    }

    /// Step 3 of a call point: the strategy may reduce the request, and what it does persists. What it did and
    /// its own compute time (the time its LLM calls took is theirs); the change is checked (`verify`) and shown
    /// to the observer once no call failed.
    fn apply(
        &self,
        name: &str,
        episode: &Episode,
        strategy: &mut dyn Strategy,
        point: &CallPoint,
        live: &mut LlmRequest,
        recorder: &Recorder<'_>,
    ) -> Result<(Applied, f64)> {
        let step = point.step;
        let handed_in = (self.verify || self.observer.is_some()).then(|| live.clone());
        recorder.expect(calls::Purpose::Strategy, Some(step));
        // Only the strategy's own calls are taken off its compute time.
        recorder.take_wall();
        let started = Instant::now();
        let applied = strategy
            .apply(point, live, recorder)
            .map_err(|e| Error::Strategy {
                strategy: name.to_owned(),
                message: format!("episode '{}', step {step}: {e}", episode.id),
            })?;
        let compute_us = started
            .elapsed()
            .saturating_sub(recorder.take_wall())
            .as_secs_f64()
            * 1e6;
        call_failed(recorder, &episode.id, name)?;
        if let Some(before) = handed_in {
            if self.verify {
                check(name, episode, step, &applied, &before, live);
            }
            if let Some(observer) = self.observer {
                observer.observe(name, step, &before, live, &applied);
            }
        }
        Ok((applied, compute_us))
    }

    /// Step 4 of a call point: the recorded assistant turn `turn` is appended, whatever the strategy did;
    /// its output tokens, the reasoning not sent back included.
    fn answer(
        &self,
        tally: &mut Tally,
        live: &mut LlmRequest,
        prepared: &Prepared<'_>,
        items: &[Item],
        turn: Range<usize>,
    ) -> usize {
        let (sent, tokens) = prepared.span(turn.start, turn.end);
        tally.answer(live, sent, tokens, prepared.tokenizer.message_overhead())
            + prepared.unsent_output(items, turn, &prepared.tokenizer)
    }

    /// Replays `episode` under one strategy up to the answers of its probes, which it does not wait for.
    fn replay_with<'s>(
        &'s self,
        episode: &'s Episode,
        (name, budget): (&str, Option<usize>),
        mut strategy: Box<dyn Strategy>,
        prepared: &Prepared<'_>,
        evidence: &mut Evidence,
    ) -> Result<Unsettled<'s>> {
        let recorder = Recorder::new(self.llm, self.judge);
        let mut probes = Probes::new(&episode.probes);
        let mut live = LlmRequest::default();
        let steps = self.steps(
            episode,
            (name, budget),
            &mut *strategy,
            prepared,
            evidence,
            (&recorder, &mut probes, &mut live),
        );
        let steps = match steps {
            Ok(steps) => steps,
            // A call that failed before the error is the error: the first in the record.
            Err(e) => {
                call_failed(&recorder, &episode.id, name)?;
                return Err(e);
            }
        };
        probes.finish(&mut live, &recorder);
        call_failed(&recorder, &episode.id, name)?;
        // A chat template that failed to render voids the counts: the replay stops, naming it.
        self.tokenizer.check()?;
        Ok(Unsettled {
            replay: EpisodeReplay {
                episode: episode.id.clone(),
                source: episode.source.clone(),
                strategy: name.to_owned(),
                items: episode.items.len(),
                steps,
                probes: Vec::new(),
                calls: Vec::new(),
            },
            probes,
            recorder,
        })
    }

    /// Every call point of the replay: its step record; the probes due there are asked as the request is sent.
    fn steps(
        &self,
        episode: &Episode,
        (name, budget): (&str, Option<usize>),
        strategy: &mut dyn Strategy,
        prepared: &Prepared<'_>,
        evidence: &mut Evidence,
        (recorder, probes, live): (&Recorder<'_>, &mut Probes<'_>, &mut LlmRequest),
    ) -> Result<Vec<StepRecord>> {
        let (items, sent, keys) = (&episode.items, &prepared.sent, &prepared.keys);
        // The episode's counts: the run's tokenizer, at the k its record was fitted with where it was.
        let tokenizer = &prepared.tokenizer;
        let mut tally = Tally::new(evidence, prepared.tools, tokenizer);
        let window = self.window_of(episode);
        let mut steps = Vec::with_capacity(prepared.points.len());
        let mut next = 0;
        for (step, &at) in prepared.points.iter().enumerate() {
            // 1. The items recorded since the last call point join the live request (as the agent sends them).
            // 2. It is measured as handed over.
            let received = tally.receive(
                live,
                prepared.span(next, at),
                prepared.blocks[step],
                tokenizer,
                evidence,
            );
            // 3. The strategy may reduce the request; what it does persists.
            let point = CallPoint {
                step,
                tool_tokens: received.tool_tokens,
                unrecorded_tokens: prepared.blocks[step].0,
                input_tokens: Some(received.tokens),
                content_tokens: Some(tally.content_tokens()),
                ..CallPoint::new(Arc::clone(tokenizer), window)
            };
            let (applied, compute_us) =
                self.apply(name, episode, strategy, &point, live, recorder)?;
            // The tally updates the item counts in place: the strategy holds no copy of them any more.
            drop(point);
            let measured = tally.send(
                step,
                (prepared.at(at), sent),
                live,
                &applied.change,
                keys,
                tokenizer,
                evidence,
            );
            probes.ask_due(at, Some(step), live, recorder);
            call_failed(recorder, &episode.id, name)?;
            // 4. The recorded assistant turn is appended, whatever the strategy did.
            let end = crate::history::turn_end(items, at);
            let items_sent = live.contents.len();
            let output_tokens = self.answer(&mut tally, live, prepared, items, at..end);
            next = end;
            steps.push(StepRecord {
                step,
                item_index: at,
                items_sent,
                instructions_sent: live.instructions.len(),
                tokens_before: received.tokens,
                tokens_sent: measured.tokens_sent,
                cached_tokens: measured.cached_tokens,
                output_tokens,
                tokens_by_kind: measured.tokens_by_kind,
                changed: applied.changed(),
                summarized_items: applied.summarized_items,
                compacted_items: applied.compacted_items,
                truncated_items: applied.truncated_items,
                dropped_items: applied.dropped_items,
                llm_calls: applied.llm_calls,
                present: measured.present,
                present_before: measured.present_before,
                floor_tokens: prepared.floor(step, received.tool_tokens, tokenizer),
                budget_tokens: budget,
                compute_us,
                failure: applied.failure,
            });
        }
        Ok(steps)
    }
}

/// A strategy's replay whose probes may still wait for their answers.
struct Unsettled<'s> {
    replay: EpisodeReplay,
    probes: Probes<'s>,
    recorder: Recorder<'s>,
}

impl Unsettled<'_> {
    /// The replay, once every answer came.
    ///
    /// # Errors
    /// The first call in the record that failed.
    fn settle(self) -> Result<EpisodeReplay> {
        let Self {
            mut replay,
            probes,
            recorder,
        } = self;
        replay.probes = probes.settle(&recorder);
        call_failed(&recorder, &replay.episode, &replay.strategy)?;
        replay.calls = recorder.finish();
        Ok(replay)
    }
}

/// The error of the first call in the record that failed, when one did: the episode, strategy, where (the
/// call point it was made at, or after the last one), purpose and why.
fn call_failed(recorder: &Recorder<'_>, episode: &str, name: &str) -> Result<()> {
    match recorder.failure() {
        Some(call) => Err(Error::Llm(format!(
            "episode '{episode}', strategy '{name}', {}: a {} call failed: {}",
            call.step
                .map_or_else(|| "after the last step".to_owned(), |s| format!("step {s}")),
            match call.purpose {
                calls::Purpose::Strategy => "strategy",
                calls::Purpose::Probe => "probe",
                calls::Purpose::Judge => "judge",
            },
            call.error.unwrap_or_default()
        ))),
        None => Ok(()),
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

/// What the replay of an episode needs under every strategy, computed once: the items as its agent sends them
/// (reasoning it does not send back and blocks of unrecorded context left out), each one's hash and tokens, the
/// call points, the tokens of its tool schemas, and the block of unrecorded context at each call point.
struct Prepared<'e> {
    /// What counts the episode: the run's tokenizer, at the k its record was fitted with where import fitted
    /// one ([`unrecorded::counter`]).
    tokenizer: Arc<Tokenizer>,
    sent: Cow<'e, [Item]>,
    /// For each recorded item index (and the end), how many sent items come before it; `None` when every item
    /// is sent.
    positions: Option<Vec<usize>>,
    keys: ItemKeys,
    points: Vec<usize>,
    tools: usize,
    /// Per call point, the unrecorded context sent there and the part of it read from the cache, when the
    /// trace says ((0, None) where there is none, or when the replay leaves them out).
    blocks: Vec<Block>,
    /// Per call point, the tokens of the system messages and the first user message sent before it: what no
    /// strategy may reduce of the history.
    heads: Vec<usize>,
}

/// A call point's block of unrecorded context: its tokens, and those the trace says were read from the cache.
pub(crate) type Block = (usize, Option<usize>);

/// Per call point at `points` of `items`, its block of unrecorded context: the last [`Item::Unrecorded`]
/// between the end of the previous assistant turn and the call point ((0, None) where there is none).
pub(crate) fn blocks(items: &[Item], points: &[usize]) -> Vec<Block> {
    let mut next = 0;
    points
        .iter()
        .map(|&at| {
            let block = items[next.min(at)..at]
                .iter()
                .rev()
                .find_map(Item::unrecorded_tokens)
                .unwrap_or((0, None));
            next = crate::history::turn_end(items, at);
            block
        })
        .collect()
}

impl<'e> Prepared<'e> {
    fn new(episode: &'e Episode, tokenizer: &Arc<Tokenizer>, unrecorded: bool) -> Self {
        let tokenizer = unrecorded::counter(episode, tokenizer);
        let items = &episode.items;
        let (sent, positions) = if items.iter().all(Item::is_sent) {
            (Cow::Borrowed(&items[..]), None)
        } else {
            let mut positions = Vec::with_capacity(items.len() + 1);
            let mut sent = Vec::with_capacity(items.len());
            for item in items {
                positions.push(sent.len());
                if item.is_sent() {
                    sent.push(item.clone());
                }
            }
            positions.push(sent.len());
            (Cow::Owned(sent), Some(positions))
        };
        let points = episode.call_points();
        let blocks = if unrecorded && positions.is_some() {
            blocks(items, &points)
        } else {
            vec![(0, None); points.len()]
        };
        let keys = ItemKeys::new(&sent, &tokenizer);
        let first_user = sent
            .iter()
            .position(|i| i.is_role(crate::history::Role::User));
        let mut heads = Vec::with_capacity(points.len());
        let (mut head, mut counted) = (0, 0);
        for &at in &points {
            let at = positions.as_ref().map_or(at, |p| p[at]);
            for (i, item) in sent[counted..at].iter().enumerate() {
                if item.is_role(crate::history::Role::System) || Some(counted + i) == first_user {
                    head += keys.tokens[counted + i];
                }
            }
            counted = at;
            heads.push(head);
        }
        Self {
            keys,
            sent,
            positions,
            points,
            tools: tokenizer.count_tools(&episode.tools),
            tokenizer,
            blocks,
            heads,
        }
    }

    /// Where recorded item `i` falls among the sent items.
    fn at(&self, i: usize) -> usize {
        self.positions.as_ref().map_or(i, |p| p[i])
    }

    /// The items sent of recorded items `from..to`, with their tokens.
    fn span(&self, from: usize, to: usize) -> (&[Item], &[usize]) {
        let range = self.at(from)..self.at(to);
        (&self.sent[range.clone()], &self.keys.tokens[range])
    }

    /// What no strategy may reduce at call point `step`: the reply's priming, the tool schemas, the
    /// unrecorded block and the system prompt and task.
    fn floor(&self, step: usize, tool_tokens: usize, tokenizer: &Tokenizer) -> usize {
        tokenizer.reply_tokens() + tool_tokens + self.blocks[step].0 + self.heads[step]
    }

    /// Output tokens of the items of `turn` that are not sent back (reasoning): output of the call all the
    /// same.
    fn unsent_output(&self, items: &[Item], turn: Range<usize>, tokenizer: &Tokenizer) -> usize {
        if self.positions.is_none() {
            return 0;
        }
        items[turn]
            .iter()
            .filter(|i| matches!(i, Item::Reasoning { .. }) && !i.is_sent())
            .map(|i| {
                tokenizer
                    .count_item(i)
                    .saturating_sub(tokenizer.message_overhead())
            })
            .sum()
    }
}

#[cfg(test)]
pub(crate) mod tests;
