//! Property tests of the strategy invariants on random histories.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use ctxbench::llm::mock::{MockConfig, MockLlm};
use ctxbench::llm::{Llm, LlmRequest, LlmResponse, Usage};
use ctxbench::replay::Replayer;
use ctxbench::strategy::{
    CallPoint, Compaction, CompactionConfig, CompactionMode, NamedStrategy, PipelineConfig,
    SlidingWindow, SlidingWindowConfig, StrategyConfig, SummarizationConfig,
};
use ctxbench::{Episode, Finding, FindingKind, Item, Role, Tokenizer};
use proptest::prelude::*;

fn tokenizer() -> Arc<Tokenizer> {
    static T: std::sync::OnceLock<Arc<Tokenizer>> = std::sync::OnceLock::new();
    Arc::clone(T.get_or_init(|| Tokenizer::shared_default().unwrap()))
}

fn state() -> CallPoint {
    CallPoint::new(tokenizer(), 100_000)
}

/// A random history: system, first user message, then turns of text, tool calls and results, and users.
fn history() -> impl Strategy<Value = Vec<Item>> {
    let turn = (0usize..3, 0usize..4, 1usize..400, any::<bool>());
    prop::collection::vec(turn, 1..25).prop_map(|turns| {
        let mut items = vec![
            Item::system("You are an agent."),
            Item::user("Do the task."),
        ];
        let mut call = 0;
        for (t, (kind, calls, len, user)) in turns.into_iter().enumerate() {
            if user {
                items.push(Item::user(format!("user note {t}")));
            }
            if kind > 0 || calls == 0 {
                items.push(Item::assistant(
                    format!("thinking {t} ").repeat(1 + len % 7),
                ));
            }
            let ids: Vec<String> = (0..calls)
                .map(|_| {
                    call += 1;
                    format!("c{call}")
                })
                .collect();
            for id in &ids {
                items.push(Item::tool_call(
                    id.clone(),
                    "tool",
                    format!("{{\"n\":{}}}", "7".repeat(len % 50)),
                ));
            }
            for id in &ids {
                items.push(Item::tool_result(
                    id.clone(),
                    "tool",
                    format!("out-{id} ").repeat(len),
                ));
            }
        }
        items
    })
}

fn pairs_intact(items: &[Item]) -> bool {
    let mut calls = HashSet::new();
    items.iter().all(|i| match i {
        Item::ToolCall { id, .. } => {
            calls.insert(id.clone());
            true
        }
        Item::ToolResult { call_id, .. } => calls.contains(call_id),
        _ => true,
    })
}

/// Records each summarization's history and answers "S<n>".
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Llm for Recorder {
    fn model(&self) -> &str {
        "recorder"
    }
    fn generate(&self, req: &LlmRequest) -> ctxbench::Result<LlmResponse> {
        let mut seen = self.0.lock().unwrap();
        seen.push(req.instructions[0].clone());
        Ok(LlmResponse {
            text: format!("S{}", seen.len()),
            usage: Usage::default(),
            latency_ms: 0.0,
            meta: Default::default(),
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sliding_window_fits_keeps_head_and_pairs_and_is_idempotent(items in history(), budget in 60usize..3000) {
        let st = state();
        let sw = SlidingWindow::new(SlidingWindowConfig { max_tokens: Some(budget), max_items: None, ..SlidingWindowConfig::default() });
        let mut req = LlmRequest::from_contents(items.clone());
        // What it says it kept is what it kept.
        match sw.reduce(&st, &mut req) {
            Some(kept) => {
                prop_assert_eq!(kept.len(), items.len());
                let expected: Vec<Item> = items.iter().zip(&kept).filter(|(_, &k)| k).map(|(i, _)| i.clone()).collect();
                prop_assert_eq!(&req.contents, &expected);
            }
            None => prop_assert_eq!(&req.contents, &items),
        }
        let head = st.measure(&LlmRequest::from_contents(items[..2].to_vec()));
        if head <= budget {
            prop_assert!(st.measure(&req) <= budget);
        }
        prop_assert_eq!(&req.contents[0], &items[0]);
        prop_assert_eq!(&req.contents[1], &items[1]);
        prop_assert!(pairs_intact(&req.contents));
        let once = req.clone();
        sw.reduce(&st, &mut req);
        prop_assert_eq!(req, once);
    }

    /// The round-to-round watermark changes nothing: compacting a growing history step by step gives what
    /// a fresh compaction of the same request gives at every call point.
    #[test]
    fn incremental_compaction_equals_a_fresh_one(items in history(), keep_last in 0usize..5, turns in any::<bool>()) {
        let config = CompactionConfig {
            keep_last,
            min_chars: 50,
            args_max_chars: 20,
            placeholder: Some("[cleared]".into()),
            unit: if turns { ctxbench::history::Unit::AgentTurns } else { ctxbench::history::Unit::ToolResults },
            ..CompactionConfig::default()
        };
        let st = state();
        let mut incremental = Compaction::new(config.clone());
        let mut live = LlmRequest::default();
        let mut next = 0;
        let mut points = ctxbench::history::call_points(&items);
        points.push(items.len());
        for cp in points {
            live.contents.extend_from_slice(&items[next..cp]);
            next = cp;
            incremental.reduce(&st, &mut live);
            let mut fresh = live.clone();
            Compaction::new(config.clone()).reduce(&st, &mut fresh);
            prop_assert_eq!(&fresh, &live);
        }
    }

    #[test]
    fn compaction_then_restore_is_the_identity(items in history(), keep_last in 0usize..5, truncate in any::<bool>()) {
        let mut c = Compaction::new(CompactionConfig {
            keep_last,
            min_chars: 50,
            args_max_chars: 20,
            mode: if truncate { CompactionMode::Truncate } else { CompactionMode::Stub },
            head_chars: 30,
            tail_chars: 30,
            ..CompactionConfig::default()
        });
        let st = state();
        let original = LlmRequest::from_contents(items);
        let mut req = original.clone();
        c.reduce(&st, &mut req);
        c.reduce(&st, &mut req);
        prop_assert!(pairs_intact(&req.contents));
        c.restore(&mut req);
        prop_assert_eq!(req, original);
    }

    /// Items carry unique markers; across many call points no marker is ever shown to the summarizer twice.
    #[test]
    fn summarization_never_covers_an_item_twice(items in history(), keep_recent in 0usize..8, chunk in 1usize..9) {
        let llm = Recorder::default();
        let mut s = StrategyConfig::Summarization(SummarizationConfig { keep_recent, tool_result_chars: 10_000, ..SummarizationConfig::default() }).build();
        let items: Vec<Item> = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Item::Message { role, content } => Item::message(role, format!("<m{i}> {content}")),
                Item::ToolResult { call_id, name, content, is_error } => Item::ToolResult { call_id, name, content: format!("<m{i}> {content}").into(), is_error },
                other => other,
            })
            .collect();
        let mut req = LlmRequest::default();
        let mut fed = 0;
        for part in items.chunks(chunk) {
            req.contents.extend_from_slice(part);
            fed += part.len();
            s.apply(&state(), &mut req, &llm).unwrap();
            // Once it has arrived, the first user message is always kept.
            if fed >= 2 {
                prop_assert!(req.contents.iter().any(|i| i.is_role(Role::User) && i.text().contains("Do the task.")));
            }
        }
        let mut seen = HashSet::new();
        for history in llm.0.lock().unwrap().iter() {
            let body = history.split("<history>").nth(1).unwrap_or("");
            for m in body.match_indices("<m").map(|(at, _)| &body[at..body[at..].find('>').map_or(at, |e| at + e + 1)]) {
                prop_assert!(seen.insert(m.to_string()), "{} summarized twice", m);
            }
        }
    }

    #[test]
    fn one_stage_pipeline_equals_its_strategy(items in history(), budget in 100usize..2000) {
        let st = state();
        let stage = StrategyConfig::SlidingWindow(SlidingWindowConfig { max_tokens: Some(budget), max_items: None, ..SlidingWindowConfig::default() });
        // A trigger of one token: the pipeline always runs its stage.
        let pipeline = StrategyConfig::Pipeline(PipelineConfig { threshold: 1.0, context_window: Some(1),
 reserve_tokens: None,
 trigger_tokens: None,
 measure: ctxbench::strategy::Measure::Request,
 run_all: false, stages: vec![stage.clone()] });
        let llm = MockLlm::new(MockConfig::default(), tokenizer());
        let mut a = LlmRequest::from_contents(items.clone());
        let mut b = a.clone();
        stage.build().apply(&st, &mut a, &llm).unwrap();
        pipeline.build().apply(&st, &mut b, &llm).unwrap();
        prop_assert_eq!(a, b);
    }

    /// The baseline retains every finding at every call point.
    #[test]
    fn none_retains_everything(items in history(), picks in prop::collection::vec(any::<prop::sample::Index>(), 1..5)) {
        let findings: Vec<Finding> = picks
            .iter()
            .enumerate()
            .filter_map(|(n, ix)| {
                let at = ix.index(items.len());
                let word = items[at].text().split_whitespace().next()?.to_string();
                Some(Finding { id: format!("f{n}"), text: word.clone(), evidence: vec![word], introduced_at: at, kind: FindingKind::Recall, ..Finding::default() })
            })
            .collect();
        let ep = Episode { id: "p".into(), source: "prop".into(), task: String::new(), items, findings, probes: vec![], ..Episode::default() };
        let llm = MockLlm::new(MockConfig::default(), tokenizer());
        let r = Replayer::new(tokenizer(), &llm, 100_000);
        let out = r.replay(&ep, &NamedStrategy::new("none", StrategyConfig::None)).unwrap();
        for s in &out.steps {
            for (i, f) in ep.findings.iter().enumerate() {
                if f.introduced_at < s.item_index {
                    prop_assert!(s.present.contains(i), "finding {} at step {}", f.id, s.step);
                }
            }
        }
    }
}
