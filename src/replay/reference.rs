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
use crate::tokens::Tokenizer;

/// One part of a request as sent, for comparing two requests: the tool schemas (with the first system
/// message their count depends on), an instruction or an item.
#[derive(PartialEq)]
enum Text {
    Tools(Option<String>),
    Instruction(String),
    Item(Item),
}

/// Appends the items the agent sent since the last call point to the live request; a user message or an
/// observation among them starts a new turn, where the provider drops the reasoning of earlier turns that it
/// takes back within its turn only.
fn receive(live: &mut LlmRequest, items: &[Item]) {
    if items.iter().any(Item::starts_turn) {
        live.contents.retain(|i| !i.is_turn_reasoning());
    }
    live.contents
        .extend(items.iter().filter(|i| i.is_sent()).cloned());
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
    start(llm, episode);
    // The episode's counts: the tokenizer at the k its record was fitted with, where it was.
    let tokenizer = &super::unrecorded::counter(episode, tokenizer);
    let recorder = Recorder::new(llm, llm);
    let mut reducer = strategy.config.build_for(episode);
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
    let mut block_before = None;
    for (step, &at) in episode.call_points().iter().enumerate() {
        // The context the trace did not record, sent in front of this call's request: the last block
        // recorded since the previous turn.
        let (block, block_read) = last_block(&items[next..at]);
        receive(&mut live, &items[next..at]);
        let tokens_before = count(tokenizer, &live) + tool_tokens(&live) + block;
        let point = CallPoint {
            step,
            tool_tokens: tool_tokens(&live),
            unrecorded_tokens: block,
            ..CallPoint::new(Arc::clone(tokenizer), context_window)
        };
        let present_before = present_in(episode, &live);
        recorder.expect(Purpose::Strategy, Some(step));
        let applied = reducer.apply(&point, &mut live, &recorder)?;

        // The request as sent, part by part.
        let (texts, mut tokens_by_kind) = as_sent(tokenizer, &live, tools, tool_tokens(&live));
        let cached_tokens = cached((block, block_read), block_before, &texts, &previous);
        block_before = Some(block);
        tokens_by_kind.add(ItemKind::Unrecorded, block);
        let present = present_in(episode, &live);
        asked.extend(ask_due(&recorder, &mut live, &mut probes, Some((at, step))));
        let end = turn_end(items, at);
        let output_tokens = output_tokens(tokenizer, &items[at..end]);
        steps.push(StepRecord {
            step,
            item_index: at,
            items_sent: live.contents.len(),
            instructions_sent: live.instructions.len(),
            tokens_before,
            tokens_sent: tokenizer.reply_tokens()
                + block
                + texts.iter().map(|t| t.1).sum::<usize>(),
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
            floor_tokens: tokenizer.reply_tokens()
                + point.tool_tokens
                + block
                + heads(tokenizer, &items[..at]),
            budget_tokens: strategy.config.budget(context_window),
            compute_us: 0.0,
            failure: applied.failure,
        });
        live.contents
            .extend(items[at..end].iter().filter(|i| i.is_sent()).cloned());
        previous = texts;
        next = end;
    }
    asked.extend(ask_due(&recorder, &mut live, &mut probes, None));
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

/// The context the trace did not record, sent in front of a call's request: the last block recorded since
/// the previous turn (its tokens, and those read from the cache when the trace says), else none.
fn last_block(items: &[Item]) -> (usize, Option<usize>) {
    items
        .iter()
        .rev()
        .find_map(|i| match i {
            Item::Unrecorded {
                tokens,
                cached_tokens,
                ..
            } => Some((*tokens, *cached_tokens)),
            _ => None,
        })
        .unwrap_or((0, None))
}

/// The request as sent, part by part (tool schemas, instructions, items), each with its tokens, and the
/// tokens by kind.
fn as_sent(
    tokenizer: &Tokenizer,
    live: &LlmRequest,
    tools: usize,
    tool_tokens: usize,
) -> (Vec<(Text, usize)>, TokensByKind) {
    let mut texts: Vec<(Text, usize)> = Vec::new();
    let mut tokens_by_kind = TokensByKind::default();
    if tools > 0 {
        tokens_by_kind.add(ItemKind::Tools, tool_tokens);
        texts.push((
            Text::Tools(first_system(live).map(str::to_owned)),
            tool_tokens,
        ));
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
    (texts, tokens_by_kind)
}

/// Tokens of what no strategy may reduce among the items sent before a call point: the system messages and the
/// task (the first user message).
fn heads(tokenizer: &Tokenizer, items: &[Item]) -> usize {
    let task = items
        .iter()
        .filter(|i| i.is_sent())
        .position(|i| i.is_role(crate::history::Role::User));
    items
        .iter()
        .filter(|i| i.is_sent())
        .enumerate()
        .filter(|(k, i)| i.is_role(crate::history::Role::System) || Some(*k) == task)
        .map(|(_, i)| tokenizer.count_item_uncached(i))
        .sum()
}

/// The cached tokens of a request: its unrecorded block read from the cache as far as the trace says, else
/// wholly when it is the size of the one before; the prefix shared with the previous request follows only when
/// all of the block was.
fn cached(
    (block, block_read): (usize, Option<usize>),
    block_before: Option<usize>,
    texts: &[(Text, usize)],
    previous: &[(Text, usize)],
) -> usize {
    let (block_cached, intact) = match block_read {
        Some(read) if block > 0 => (read.min(block), read >= block),
        _ if block_before == Some(block) => (block, true),
        _ => (0, false),
    };
    let prefix: usize = texts
        .iter()
        .zip(previous)
        .take_while(|(a, b)| a.0 == b.0)
        .map(|(a, _)| a.1)
        .sum();
    block_cached + if intact { prefix } else { 0 }
}

/// The output tokens of a recorded turn: its items' tokens without the per-message overhead.
fn output_tokens(tokenizer: &Tokenizer, turn: &[Item]) -> usize {
    turn.iter()
        .map(|i| {
            tokenizer
                .count_item_uncached(i)
                .saturating_sub(tokenizer.message_overhead())
        })
        .sum()
}

/// The answers to the probes due before item `at`, asked at call point `step` (with `None`, every probe left,
/// after the last call point), each taken off `probes`.
fn ask_due(
    recorder: &Recorder<'_>,
    live: &mut LlmRequest,
    probes: &mut Vec<&Probe>,
    due: Option<(usize, usize)>,
) -> Vec<super::record::ProbeRecord> {
    let (at, step) = due.map_or((usize::MAX, None), |(at, step)| (at, Some(step)));
    recorder.expect(Purpose::Probe, step);
    let mut asked = Vec::new();
    while let Some(probe) = probes.first().filter(|p| p.after_item < at) {
        asked.push(ask((recorder, &recorder.judge()), live, probe, step));
        probes.remove(0);
    }
    asked
}

/// Tells the LLM which questions the episode's probes ask.
fn start(llm: &dyn Llm, episode: &Episode) {
    let questions: Vec<&str> = episode.probes.iter().map(|p| p.question.as_str()).collect();
    llm.start_episode(&EpisodeHint {
        questions: &questions,
    });
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
    tokenizer.reply_tokens()
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
    let texts: Vec<(String, crate::history::evidence::Canon, Reading)> = request
        .instructions
        .iter()
        .map(|s| (s.clone(), canon(s), instruction_reading(s)))
        .chain(request.contents.iter().flat_map(|i| {
            visible(&episode.items, i)
                .into_iter()
                .map(move |t| (t.to_string(), canon(&t), reading(i)))
        }))
        .collect();
    FindingSet::from_fn(episode.findings.len(), |f| {
        episode.findings[f].evidence.iter().all(|e| {
            let needle = Needle::new(e);
            texts.iter().any(|(raw, t, r)| needle.in_text(raw, t, *r))
        })
    })
}

#[cfg(test)]
mod tests {
    //! The fast replay against this one in the library's own tests (the property test over random episodes is
    //! in `tests/cli/reference.rs`): an episode built to reach each of the tally's paths, and the bundled
    //! dataset's smallest episode of each family, through every built-in strategy and preset.

    use super::*;
    use crate::history::{Finding, FindingKind, SentBack};
    use crate::llm::mock::{MockConfig, MockLlm};
    use crate::replay::Replayer;
    use crate::strategy::{presets, SlidingWindowConfig, StrategyConfig};

    fn output(t: usize, lines: usize) -> String {
        format!("line {t} of the test output\n").repeat(lines)
    }

    /// Two tool schemas and no opening system message; a reminder (the first system message, which the
    /// tools' tokens depend on) after the first turn; reasoning sent back and not; parallel calls; an empty
    /// reply (reasoning not sent back) answered by a reminder and a user message; an observation; two
    /// findings, one probe with accepted answers and one open.
    fn branches() -> Episode {
        let fact = |t: usize| format!("ERROR E{t:04}: value_{t} overflowed at src/m{t}.rs:{t}\n");
        let items = vec![
            Item::user("Fix the failing test in src/lib.rs."),
            Item::assistant("Running the tests."),
            Item::tool_call("c1", "bash", r#"{"cmd":"cargo test"}"#),
            Item::tool_result("c1", "bash", output(1, 30) + &fact(1)),
            Item::system("Reminder 1: 900 tokens left"),
            Item::Reasoning {
                content: "I think m2 holds the bug. ".repeat(3).into(),
                sent_back: SentBack::Turn,
            },
            Item::tool_call("c2", "bash", r#"{"cmd":"cat src/m2.rs"}"#),
            Item::tool_call("c3", "bash", r#"{"cmd":"cat src/m3.rs"}"#),
            Item::tool_result("c2", "bash", output(2, 40)),
            Item::tool_result("c3", "bash", output(3, 12)),
            Item::user("Also check module m4."),
            Item::Reasoning {
                content: "Nothing to do yet.".into(),
                sent_back: SentBack::Never,
            },
            Item::system("Reminder 4: reply with an action"),
            Item::user("Go on with module m4."),
            Item::assistant("Running `cat src/m5.rs`."),
            Item::observation("bash", output(5, 25) + &fact(5)),
            Item::assistant("Reading m6."),
            Item::tool_call("c6", "bash", r#"{"cmd":"cat src/m6.rs"}"#),
            Item::tool_result("c6", "bash", output(6, 50)),
            Item::assistant("Done: the test passes."),
        ];
        let finding = |t: usize, at: usize| Finding {
            id: format!("f{t}"),
            text: format!("value_{t} overflowed"),
            evidence: vec![format!("E{t:04}"), format!("value_{t} overflowed")],
            introduced_at: at,
            kind: FindingKind::Recall,
            ..Finding::default()
        };
        let probe = |t: usize, at: usize, open: bool| Probe {
            id: format!("p{t}"),
            after_item: at,
            question: format!("Which error code did value_{t} overflow with?"),
            answers: vec![format!("E{t:04}")],
            finding: Some(format!("f{t}")),
            kind: FindingKind::Recall,
            reference: open.then(|| format!("value_{t} overflowed with error E{t:04}")),
        };
        let tool = |name: &str| {
            serde_json::json!({"type": "function", "function": {"name": name, "description": "Runs it.",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}})
        };
        Episode {
            id: "branches".into(),
            source: "test".into(),
            task: "fix".into(),
            items,
            findings: vec![finding(1, 3), finding(5, 15)],
            probes: vec![probe(1, 10, true), probe(5, 18, false)],
            tools: vec![tool("bash"), tool("python")],
            ..Episode::default()
        }
    }

    /// [`branches`] with no finding (evidence sets of no word), or with `extra` more findings of two evidence
    /// strings each in the second tool result (past 32, the evidence sets take two 64-bit words).
    fn with_findings(extra: Option<usize>) -> Episode {
        let mut ep = branches();
        let Some(extra) = extra else {
            ep.id = "no findings".into();
            ep.findings.clear();
            ep.probes.clear();
            return ep;
        };
        ep.id = format!("{extra} more findings");
        if let Item::ToolResult { content, .. } = &mut ep.items[8] {
            let codes: String = (0..extra)
                .map(|k| format!("warning W{k:03}: code K{k:03}\n"))
                .collect();
            *content = format!("{content}{codes}").into();
        }
        ep.findings.extend((0..extra).map(|k| Finding {
            id: format!("w{k}"),
            text: format!("warning W{k:03}"),
            evidence: vec![format!("W{k:03}"), format!("code K{k:03}")],
            introduced_at: 8,
            kind: FindingKind::Artifact,
            ..Finding::default()
        }));
        ep
    }

    /// [`branches`] with a fact of its own in every tool output and observation, each a finding: a strategy
    /// that keeps older outputs while it drops others keeps findings the tally knew from the request before.
    fn facts_everywhere() -> Episode {
        let mut ep = branches();
        ep.id = "facts everywhere".into();
        ep.probes.clear();
        ep.findings.clear();
        for (at, item) in ep.items.iter_mut().enumerate() {
            if let Item::ToolResult { content, .. } | Item::Observation { content, .. } = item {
                *content = format!("{content}fact F{at:03}: quota_{at} reached\n").into();
                ep.findings.push(Finding {
                    id: format!("f{at}"),
                    text: format!("quota_{at} reached"),
                    evidence: vec![format!("F{at:03}"), format!("quota_{at} reached")],
                    introduced_at: at,
                    kind: FindingKind::Recall,
                    ..Finding::default()
                });
            }
        }
        ep
    }

    fn strategies() -> Vec<NamedStrategy> {
        let mut all = crate::strategy::defaults();
        all.extend(presets::presets().iter().map(presets::Preset::named));
        // Only the head: after the empty reply the request starts with a system message it keeps and goes on
        // with a user message it drops, a kept prefix past the items the tally had counted.
        // The last six items: at each call point it drops the oldest and keeps outputs the tally counted before.
        all.push(NamedStrategy::new(
            "last-six",
            StrategyConfig::SlidingWindow(SlidingWindowConfig {
                max_items: Some(6),
                ..SlidingWindowConfig::default()
            }),
        ));
        all.push(NamedStrategy::new(
            "head-only",
            StrategyConfig::SlidingWindow(SlidingWindowConfig {
                max_items: Some(0),
                ..SlidingWindowConfig::default()
            }),
        ));
        all
    }

    fn check(episode: &Episode, window: usize) {
        let tokenizer = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tokenizer));
        let all = strategies();
        let fast = Replayer::new(tokenizer, &llm, window)
            .verifying(true)
            .replay_all(episode, &all)
            .unwrap();
        for (named, mut fast) in all.iter().zip(fast) {
            // A tokenizer and a mock of its own, their caches empty.
            let own = Tokenizer::shared_default().unwrap();
            let fresh = MockLlm::new(MockConfig::default(), Arc::clone(&own));
            let plain = replay(&own, &fresh, window, episode, named).unwrap();
            for s in &mut fast.steps {
                s.compute_us = 0.0;
            }
            let at =
                |what: &str| format!("{}, window {window}, {}: {what}", episode.id, named.name);
            assert_eq!(fast.steps.len(), plain.steps.len(), "{}", at("steps"));
            for (a, b) in fast.steps.iter().zip(&plain.steps) {
                assert_eq!(a, b, "{}", at(&format!("step {}", a.step)));
            }
            assert_eq!(fast.probes, plain.probes, "{}", at("probes"));
            assert_eq!(fast.calls, plain.calls, "{}", at("calls"));
        }
    }

    #[test]
    fn fast_replay_equals_reference_on_every_tally_path() {
        for window in [1_500, 4_000, 128_000] {
            check(&branches(), window);
        }
        check(&with_findings(None), 1_500);
        check(&with_findings(Some(40)), 1_500);
        for window in [1_500, 4_000] {
            check(&facts_everywhere(), window);
        }
    }

    /// `episode` counted at `k`, as import leaves an episode whose record it fitted k from
    /// ([`crate::replay::unrecorded::counter`]), with a block of unrecorded context before every call point.
    fn at_k(episode: &Episode, k: f64) -> Episode {
        let mut ep = episode.clone();
        let mut usage = crate::history::usage::ProviderUsage::from_calls("by hand", Vec::new());
        usage.sized_with = Some("o200k_base".into());
        usage.counted_at_k = Some(k);
        usage.store(&mut ep);
        let points = ep.call_points();
        let blocks: Vec<_> = points.iter().map(|&i| (1_000 + i, Some(900))).collect();
        crate::replay::unrecorded::insert_blocks(&mut ep, &points, &blocks);
        ep
    }

    /// Counted at a fitted k (every item, instruction, tool block and text a strategy writes at k × its
    /// o200k_base count, rounded per item), the fast replay still equals the reference on every strategy, and
    /// the counts differ from those at 1.
    #[test]
    fn fast_replay_equals_reference_at_k() {
        for k in [1.5, 0.7] {
            for window in [1_500, 4_000, 128_000] {
                check(&at_k(&branches(), k), window);
            }
            check(&at_k(&with_findings(None), k), 1_500);
            check(&at_k(&facts_everywhere(), k), 4_000);
        }
        let tokenizer = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tokenizer));
        let none = NamedStrategy::new("none", StrategyConfig::None);
        let sent = |ep: &Episode| -> Vec<usize> {
            replay(&tokenizer, &llm, 128_000, ep, &none)
                .unwrap()
                .steps
                .iter()
                .map(|s| s.tokens_sent)
                .collect()
        };
        let (one, at) = (sent(&at_k(&branches(), 1.0)), sent(&at_k(&branches(), 1.5)));
        assert!(one.iter().zip(&at).all(|(a, b)| b > a), "{one:?} {at:?}");
    }

    #[test]
    fn fast_replay_equals_reference_on_bundled_episodes() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/datasets/default.jsonl"
        ));
        let episodes = crate::history::dataset::read_all(path).unwrap();
        for family in ["coding", "research", "support"] {
            let smallest = episodes
                .iter()
                .filter(|e| e.source.contains(family))
                .min_by_key(|e| e.items.len())
                .unwrap();
            check(smallest, 16_000);
        }
    }
}
