//! The reference replay: the replay semantics written for clarity, with nothing cached and nothing hinted.
//!
//! At every call point it counts every instruction and item of the request again (without the tokenizer's
//! cache), compares the request with the previous one text by text for the cached prefix, and searches every
//! text for every evidence string. Strategies get no token counts from it: they measure for themselves. It is
//! quadratic in the length of an episode and meant for tests: [`super::Replayer`] must produce exactly the
//! same records (the property test `fast_replay_equals_reference`).

use std::sync::Arc;

use super::calls::{Purpose, Recorder};
use super::probe::ask;
use super::record::{EpisodeReplay, FindingSet, StepRecord, TokensByKind};
use crate::error::Result;
use crate::history::evidence::{canon, instruction_reading, reading, visible, Needle, Reading};
use crate::history::turn_end;
use crate::history::{Episode, Item, ItemKind, Probe};
use crate::llm::{EpisodeHint, Llm, LlmRequest};
use crate::strategy::{CallPoint, NamedStrategy};
use crate::tokens::{Tokenizer, TOKENS_PER_MESSAGE, TOKENS_PER_REPLY};

/// One part of a request as sent, for comparing two requests: the tool schemas (with the first system
/// message their count depends on), an instruction or an item.
#[derive(PartialEq)]
enum Text {
    Tools(Option<String>),
    Instruction(String),
    Item(Item),
}

/// Replays `episode` under `strategy` the plain way; see the module docs.
///
/// # Errors
/// A strategy's harness fault.
pub fn replay(
    tokenizer: &Arc<Tokenizer>,
    llm: &dyn Llm,
    context_window: usize,
    episode: &Episode,
    strategy: &NamedStrategy,
) -> Result<EpisodeReplay> {
    let questions: Vec<&str> = episode.probes.iter().map(|p| p.question.as_str()).collect();
    llm.start_episode(&EpisodeHint {
        questions: &questions,
    });
    let recorder = Recorder::new(llm, llm);
    let mut reducer = strategy.config.build();
    let mut probes: Vec<&Probe> = episode.probes.iter().collect();
    probes.sort_by_key(|p| p.after_item);
    let mut asked = Vec::new();
    let items = &episode.items;
    let mut live = LlmRequest::default();
    let mut previous: Vec<(Text, usize)> = Vec::new();
    let mut steps = Vec::new();
    let mut next = 0;
    let tools = tokenizer.count_tools(&episode.tools);
    let tool_tokens = |req: &LlmRequest| tokenizer.tools_in_request(tools, first_system(req));
    for (step, &at) in episode.call_points().iter().enumerate() {
        live.contents
            .extend(items[next..at].iter().filter(|i| i.is_sent()).cloned());
        let tokens_before = count(tokenizer, &live) + tool_tokens(&live);
        let point = CallPoint {
            step,
            tool_tokens: tool_tokens(&live),
            ..CallPoint::new(Arc::clone(tokenizer), context_window)
        };
        let present_before = present_in(episode, &live);
        recorder.expect(Purpose::Strategy, Some(step));
        let applied = reducer.apply(&point, &mut live, &recorder)?;

        // The request as sent, part by part.
        let mut texts: Vec<(Text, usize)> = Vec::new();
        let mut tokens_by_kind = TokensByKind::default();
        if tools > 0 {
            let n = tool_tokens(&live);
            tokens_by_kind.add(ItemKind::Tools, n);
            texts.push((Text::Tools(first_system(&live).map(str::to_owned)), n));
        }
        for instruction in &live.instructions {
            let n = tokenizer.count_chat_message("system", instruction, None);
            tokens_by_kind.add(ItemKind::Summary, n);
            texts.push((Text::Instruction(instruction.clone()), n));
        }
        for item in &live.contents {
            let n = tokenizer.count_item_uncached(item);
            tokens_by_kind.add(item.kind(), n);
            texts.push((Text::Item(item.clone()), n));
        }
        let cached_tokens = texts
            .iter()
            .zip(&previous)
            .take_while(|(a, b)| a.0 == b.0)
            .map(|(a, _)| a.1)
            .sum();
        let present = present_in(episode, &live);
        while let Some(probe) = probes.first().filter(|p| p.after_item < at) {
            recorder.expect(Purpose::Probe, Some(step));
            asked.push(ask(
                (&recorder, &recorder.judge()),
                &mut live,
                probe,
                Some(step),
            ));
            probes.remove(0);
        }

        let end = turn_end(items, at);
        let output_tokens = items[at..end]
            .iter()
            .map(|i| {
                tokenizer
                    .count_item_uncached(i)
                    .saturating_sub(TOKENS_PER_MESSAGE)
            })
            .sum();
        steps.push(StepRecord {
            step,
            item_index: at,
            items_sent: live.contents.len(),
            instructions_sent: live.instructions.len(),
            tokens_before,
            tokens_sent: TOKENS_PER_REPLY + texts.iter().map(|t| t.1).sum::<usize>(),
            cached_tokens,
            output_tokens,
            tokens_by_kind,
            changed: applied.changed(),
            llm_calls: applied.llm_calls,
            summarized_items: applied.summarized_items,
            compacted_items: applied.compacted_items,
            truncated_items: applied.truncated_items,
            dropped_items: applied.dropped_items,
            present,
            present_before,
            compute_us: 0.0,
        });
        live.contents
            .extend(items[at..end].iter().filter(|i| i.is_sent()).cloned());
        previous = texts;
        next = end;
    }
    recorder.expect(Purpose::Probe, None);
    for probe in probes {
        asked.push(ask((&recorder, &recorder.judge()), &mut live, probe, None));
    }
    Ok(EpisodeReplay {
        episode: episode.id.clone(),
        source: episode.source.clone(),
        strategy: strategy.name.clone(),
        items: items.len(),
        steps,
        probes: asked,
        calls: recorder.finish(),
    })
}

/// The first system message of a request: its first instruction, or its first system item.
fn first_system(req: &LlmRequest) -> Option<&str> {
    req.instructions.first().map(String::as_str).or_else(|| {
        req.contents
            .iter()
            .find(|i| i.is_role(crate::history::Role::System))
            .map(Item::text)
    })
}

/// Tokens of `request` as sent but its tool schemas', every text counted afresh.
fn count(tokenizer: &Tokenizer, request: &LlmRequest) -> usize {
    TOKENS_PER_REPLY
        + request
            .instructions
            .iter()
            .map(|s| tokenizer.count_chat_message("system", s, None))
            .sum::<usize>()
        + request
            .contents
            .iter()
            .map(|i| tokenizer.count_item_uncached(i))
            .sum::<usize>()
}

/// The findings of `episode` whose every evidence string some text of `request` holds: its instructions, and
/// what its items show of their recorded texts.
fn present_in(episode: &Episode, request: &LlmRequest) -> FindingSet {
    let texts: Vec<(crate::history::evidence::Canon, Reading)> = request
        .instructions
        .iter()
        .map(|s| (canon(s), instruction_reading(s)))
        .chain(request.contents.iter().flat_map(|i| {
            visible(&episode.items, i)
                .into_iter()
                .map(move |t| (canon(&t), reading(i)))
        }))
        .collect();
    FindingSet::from_fn(episode.findings.len(), |f| {
        episode.findings[f].evidence.iter().all(|e| {
            let needle = Needle::new(e);
            texts.iter().any(|(t, r)| needle.in_text(t, *r))
        })
    })
}
