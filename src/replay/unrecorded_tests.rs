//! The tests of [`super`]: blocks of unrecorded context sized from the record, at the fitted k.
use super::*;
use crate::history::usage::CallUsage;
use crate::history::{Finding, Probe};

/// Two calls recorded at 1,000 and 1,500 prompt tokens (900 of them read from the cache each time): the
/// blocks are the differences, the baseline then replays exactly the records, and positions follow.
#[test]
fn blocks_close_the_gap_call_by_call_and_positions_follow() {
    let tok = Tokenizer::shared_default().unwrap();
    let mut ep = Episode {
        id: "e".into(),
        source: "import/claude-code".into(),
        items: vec![
            Item::user("list the files"),
            Item::assistant("running ls"),
            Item::tool_call("c1", "ls", "{}"),
            Item::tool_result("c1", "ls", "a.txt b.txt"),
            Item::assistant("two files: a.txt and b.txt"),
        ],
        findings: vec![Finding {
            id: "f".into(),
            text: "files".into(),
            evidence: vec!["b.txt".into()],
            introduced_at: 3,
            needed_at: vec![4],
            ..Finding::default()
        }],
        probes: vec![Probe {
            id: "p".into(),
            after_item: 3,
            question: "which files?".into(),
            answers: vec!["b.txt".into()],
            ..Probe::default()
        }],
        stopped: true,
        ..Episode::default()
    };
    let call = |n: u64| CallUsage {
        input_tokens: n,
        cache_read_tokens: Some(900),
        ..CallUsage::default()
    };
    let mut usage = ProviderUsage::from_calls("message.usage", vec![call(1000), call(1500)]);
    usage.leaves_out = Some("the system prompt".into());
    usage.store(&mut ep);
    let before = baseline(&ep, &tok).unwrap();
    let cal = calibrate(&mut ep, &tok).unwrap().unwrap();
    assert_eq!(cal.call_points, 2);
    assert_eq!(cal.unrecorded_tokens, 2500 - before[0] - before[1]);
    assert_eq!(cal.recorded_input_tokens, 2500);
    // Blocks before items 1 and 4: the result (3) is now at 4, the second turn (4) at 6.
    assert_eq!(ep.items[1], Item::unrecorded(1000 - before[0], Some(900)));
    assert_eq!(
        ep.items[5].unrecorded_tokens(),
        Some((1500 - before[1], Some(900)))
    );
    assert_eq!(ep.findings[0].introduced_at, 4);
    assert_eq!(ep.findings[0].needed_at, vec![6]);
    assert_eq!(ep.probes[0].after_item, 4);
    assert_eq!(ep.call_points(), vec![2, 6]);
    assert_eq!(baseline(&ep, &tok).unwrap(), vec![1000, 1500]);
    // Twice is once.
    assert_eq!(
        calibrate(&mut ep, &tok).unwrap(),
        Err(NotCalibrated::AlreadyCalibrated)
    );
}

/// Blocks sized with o200k_base, replayed with cl100k_base: taken out (positions back where they were) and
/// sized again as the record less cl100k's replay, the usage saying which tokenizer had sized them; with
/// the tokenizer that sized them, nothing to do. A dataset that did not say (written before ctxbench
/// recorded it) is re-sized too; blocks of the dataset's own (no `unrecorded_tokens`) are left alone;
/// a record that no longer lines up with the call points is refused, saying why and what to do.
#[test]
fn blocks_sized_with_another_tokenizer_are_sized_again() {
    let o200k = Tokenizer::shared_default().unwrap();
    let cl100k = Arc::new(
        Tokenizer::new(
            crate::tokens::Encoding::Cl100kBase,
            crate::tokens::Backend::default(),
        )
        .unwrap(),
    );
    let mut ep = two_turns();
    ep.items[2] = Item::user("again, with the résumé of 2024-11-03T10:22:01Z ünïcödé");
    ep.probes = vec![Probe {
        id: "p".into(),
        after_item: 2,
        question: "q".into(),
        answers: vec!["a".into()],
        ..Probe::default()
    }];
    let call = |n: u64| CallUsage {
        input_tokens: n,
        ..CallUsage::default()
    };
    let mut usage = ProviderUsage::from_calls("t", vec![call(1000), call(1600)]);
    usage.leaves_out = Some("the system prompt".into());
    usage.store(&mut ep);
    let bare = ep.clone();
    calibrate(&mut ep, &o200k).unwrap().unwrap();
    assert_eq!(
        ProviderUsage::of(&ep).unwrap().sized_with.as_deref(),
        Some("o200k_base")
    );
    assert_eq!(resize(&mut ep, &o200k).unwrap(), None);
    let sized = ep.clone();
    let cl = baseline(&bare, &cl100k).unwrap();
    assert_ne!(
        cl,
        baseline(&bare, &o200k).unwrap(),
        "the tokenizers differ here"
    );
    assert_eq!(
        resize(&mut ep, &cl100k).unwrap().as_deref(),
        Some("o200k_base")
    );
    assert_eq!(ep.items[0], bare.items[0]);
    assert_eq!(ep.items[1], Item::unrecorded(1000 - cl[0], None));
    assert_eq!(ep.items[4], Item::unrecorded(1600 - cl[1], None));
    assert_eq!(ep.probes[0].after_item, sized.probes[0].after_item);
    assert_eq!(baseline(&ep, &cl100k).unwrap(), vec![1000, 1600]);
    let usage = ProviderUsage::of(&ep).unwrap();
    assert_eq!(usage.sized_with.as_deref(), Some("cl100k_base"));
    assert_eq!(usage.resized_from.as_deref(), Some("o200k_base"));
    // A dataset that did not say which tokenizer sized its blocks.
    let mut old = sized.clone();
    let mut u = ProviderUsage::of(&old).unwrap();
    u.sized_with = None;
    u.store(&mut old);
    assert_eq!(
        resize(&mut old, &o200k).unwrap().as_deref(),
        Some("an unrecorded tokenizer")
    );
    assert_eq!(old.items, sized.items);
    // The dataset's own blocks.
    let mut own = sized.clone();
    let mut u = ProviderUsage::of(&own).unwrap();
    u.unrecorded_tokens = None;
    u.store(&mut own);
    assert_eq!(resize(&mut own, &cl100k).unwrap(), None);
    assert_eq!(own.items, sized.items);
    // A record of one call for two call points.
    let mut edited = sized;
    let mut u = ProviderUsage::of(&edited).unwrap();
    u.calls.pop();
    u.store(&mut edited);
    let err = resize(&mut edited, &cl100k).unwrap_err().to_string();
    assert!(
        err.contains("episode 'e'")
            && err.contains("sized with o200k_base")
            && err.contains("records 1 calls where it has 2 call points")
            && err.contains("ctxbench import --tokenizer"),
        "{err}"
    );
}

/// A Claude-like session by hand: three calls recorded at exactly 1,000 + 1.5 × the history as o200k_base
/// counts it, so the fit finds k = 1.5 and U = 1,000. The episode is then counted at k = 1.5: every item
/// is round(1.5 × its o200k_base count), half away from zero, once per item; each block is the record less
/// that count, so the baseline still equals the record at every call and every block is U within
/// rounding. A strategy that drops the tool result at the last call saves round(1.5 × its o200k_base
/// count) there; one that masks it with a placeholder saves that less round(1.5 × the placeholder's); the
/// window check sees the model's tokens.
#[test]
fn a_history_counted_at_the_fitted_k_by_hand() {
    use crate::llm::LlmRequest;
    use crate::strategy::{Applied, CallPoint, Change, Strategy};

    /// Drops the tool result at the last call point, or masks it with a placeholder.
    struct Drop(bool);
    impl Strategy for Drop {
        fn apply(
            &mut self,
            at: &CallPoint,
            req: &mut LlmRequest,
            _: &dyn crate::llm::Llm,
        ) -> Result<Applied> {
            if at.step < 2 {
                return Ok(Applied::unchanged());
            }
            // The window check sees the model's tokens: 1,078 at the last call.
            assert_eq!((at.input_tokens, at.context_window), (Some(1078), 1100));
            let i = req
                .contents
                .iter()
                .position(|i| i.kind() == crate::history::ItemKind::ToolResult)
                .unwrap();
            let mut applied = if self.0 {
                req.contents[i] = Item::tool_result("c1", "ls", "[masked]");
                Applied::new(Change::Rewrote { kept_prefix: i })
            } else {
                let mut kept = vec![true; req.contents.len()];
                kept[i] = false;
                req.contents.remove(i);
                Applied::new(Change::Dropped(kept))
            };
            applied.dropped_items = usize::from(!self.0);
            applied.compacted_items = usize::from(self.0);
            Ok(applied)
        }
    }

    let tok = Tokenizer::shared_default().unwrap();
    let mut ep = Episode {
        id: "by-hand".into(),
        source: "import/claude-code".into(),
        items: vec![
            Item::user("list the files"),
            Item::assistant("running ls"),
            Item::tool_call("c1", "ls", "{}"),
            Item::tool_result("c1", "ls", "a.txt b.txt c.txt d.txt e.txt ok"),
            Item::assistant("five files"),
            Item::user("delete it"),
            Item::assistant("done"),
        ],
        stopped: true,
        ..Episode::default()
    };
    // o200k_base: 3 per message, the role and the text; a call, 3 more and its name.
    let own: Vec<usize> = ep.items.iter().map(|i| tok.count_item(i)).collect();
    assert_eq!(own, vec![7, 6, 9, 15, 6, 6, 5], "o200k_base counts");
    // The history at each call point: the reply's 3 and the items before it.
    let x = [3 + 7, 3 + 7 + 6 + 9 + 15, 3 + 7 + 6 + 9 + 15 + 6 + 6];
    assert_eq!(x, [10, 40, 52]);
    assert_eq!(baseline(&ep, &tok).unwrap(), x);
    let call = |n: u64| CallUsage {
        input_tokens: n,
        ..CallUsage::default()
    };
    // 1,000 + 1.5 × x.
    let mut usage =
        ProviderUsage::from_calls("message.usage", vec![call(1015), call(1060), call(1078)]);
    usage.leaves_out = Some("Claude Code's system prompt and tool schemas".into());
    usage.store(&mut ep);
    let cal = calibrate(&mut ep, &tok).unwrap().unwrap();
    assert_eq!(cal.k, Some(1.5));
    assert!(cal.constant);
    assert_eq!(ProviderUsage::of(&ep).unwrap().counted_at_k, Some(1.5));
    // At k = 1.5: 7 → 10.5 → 11, 6 → 9, 9 → 13.5 → 14, 15 → 22.5 → 23, 5 → 7.5 → 8; the reply's 3 → 5.
    let at = tok.at(Some(1.5));
    assert_eq!(at.reply_tokens(), 5);
    let scaled: Vec<usize> = [0, 2, 3, 4, 6, 7, 9]
        .iter()
        .map(|&i| at.count_item(&ep.items[i]))
        .collect();
    assert_eq!(scaled, vec![11, 9, 14, 23, 9, 9, 8]);
    // The history at k: 5 + 11 = 16, + 9 + 14 + 23 = 62, + 9 + 9 = 80; each block the record less it.
    assert_eq!(ep.items[1], Item::unrecorded(1015 - 16, None));
    assert_eq!(ep.items[5].unrecorded_tokens(), Some((1060 - 62, None)));
    assert_eq!(ep.items[8].unrecorded_tokens(), Some((1078 - 80, None)));
    assert_eq!(cal.replayed_input_tokens, 16 + 62 + 80);
    assert_eq!(cal.unrecorded_tokens, 999 + 998 + 998);
    // The baseline is the record at every call, the replay counting at the episode's k.
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
    let replayer = Replayer::new(Arc::clone(&tok), &llm, 1100);
    let none = crate::strategy::NamedStrategy::new("none", crate::strategy::StrategyConfig::None);
    let base = replayer.replay(&ep, &none).unwrap();
    let sent: Vec<usize> = base.steps.iter().map(|s| s.tokens_sent).collect();
    assert_eq!(sent, vec![1015, 1060, 1078]);
    // The run's fit, of the replay at k, takes import's k: U = the blocks' mean, 998.33, and the residuals
    // are what rounding left, (998.33 + 16) / 1,015 − 1 = −0.07% at call 0 the farthest.
    let fit = crate::replay::fit::of_episode(&ep, &base.steps).unwrap();
    assert!(
        fit.k == 1.5 && fit.k_fitted && fit.counted_at == Some(1.5),
        "{fit:?}"
    );
    let (at0, worst) = fit.worst().unwrap();
    assert!(
        at0 == 0 && (worst - ((2995.0 / 3.0 + 16.0) / 1015.0 - 1.0)).abs() < 1e-12,
        "{fit:?}"
    );
    // Dropping the result saves its 15 o200k_base tokens at 1.5: 23.
    let dropped = replayer
        .replay_custom(&ep, "drop", Box::new(Drop(false)))
        .unwrap();
    assert_eq!(dropped.steps[2].tokens_sent, 1078 - 23);
    // Masking it saves 23 less the placeholder's 7 at 1.5: 11.
    let placeholder = Item::tool_result("c1", "ls", "[masked]");
    assert_eq!(tok.count_item(&placeholder), 7);
    assert_eq!(at.count_item(&placeholder), 11);
    let masked = replayer
        .replay_custom(&ep, "mask", Box::new(Drop(true)))
        .unwrap();
    assert_eq!(masked.steps[2].tokens_sent, 1078 - 23 + 11);
}

/// Two turns of a user and the assistant: two call points.
fn two_turns() -> Episode {
    Episode {
        id: "e".into(),
        items: vec![
            Item::user("hi"),
            Item::assistant("hello"),
            Item::user("again"),
            Item::assistant("hello again"),
        ],
        stopped: true,
        ..Episode::default()
    }
}

/// The unrecorded share is of the calibrated input: the replay and the blocks added.
#[test]
fn the_unrecorded_share_is_of_the_replay_and_the_blocks() {
    let cal = |replayed, unrecorded| Calibration {
        replayed_input_tokens: replayed,
        unrecorded_tokens: unrecorded,
        ..Calibration::default()
    };
    assert!((cal(300, 100).unrecorded_share() - 0.25).abs() < 1e-12);
    assert!((cal(0, 7).unrecorded_share() - 1.0).abs() < 1e-12);
    assert_eq!(cal(0, 0).unrecorded_share(), 0.0);
}

/// A call point whose replay exceeds its record gets no block and is counted `over`; one that equals it is
/// not; calls that do not line up with the call points are counted with those without usage.
#[test]
fn a_replay_past_its_record_is_counted_over() {
    let tok = Tokenizer::shared_default().unwrap();
    let ep = two_turns();
    let before = baseline(&ep, &tok).unwrap();
    let with = |calls: Vec<std::result::Result<CallUsage, String>>| {
        let mut ep = ep.clone();
        let mut usage = ProviderUsage::from_call_points("t", calls);
        usage.leaves_out = Some("the repo map".into());
        usage.store(&mut ep);
        calibrate(&mut ep, &tok).unwrap()
    };
    let call = |n: usize| {
        Ok(CallUsage {
            input_tokens: n as u64,
            ..CallUsage::default()
        })
    };
    let cal = with(vec![call(before[0] - 1), call(before[1])]).unwrap();
    assert_eq!((cal.over, cal.unrecorded_tokens), (1, 0));
    let cal = with(vec![call(before[0] - 1), call(before[1] + 5)]).unwrap();
    assert_eq!((cal.over, cal.unrecorded_tokens), (1, 5));
    assert_eq!(
        with(vec![call(100), Err("cut".into()), call(200)]),
        Err(NotCalibrated::CallsDiffer {
            call_points: 2,
            calls: 3
        })
    );
}

/// A call the trace shows without usage takes the block of the call before it; a trace that records the
/// whole prompt is left alone.
#[test]
fn a_call_without_usage_takes_its_neighbours_block() {
    let tok = Tokenizer::shared_default().unwrap();
    let mut ep = two_turns();
    let mut whole = ep.clone();
    let mut usage = ProviderUsage::from_call_points(
        "Tokens: reports",
        vec![
            Ok(CallUsage {
                input_tokens: 5000,
                ..CallUsage::default()
            }),
            Err("interrupted".into()),
        ],
    );
    usage.store(&mut whole);
    assert_eq!(
        calibrate(&mut whole, &tok).unwrap(),
        Err(NotCalibrated::NothingToDo)
    );
    usage.leaves_out = Some("the repo map".into());
    usage.store(&mut ep);
    let before = baseline(&ep, &tok).unwrap();
    let cal = calibrate(&mut ep, &tok).unwrap().unwrap();
    assert_eq!(cal.estimated, 1);
    let gap = 5000 - before[0];
    assert_eq!(ep.items[4], Item::unrecorded(gap, None));
    assert_eq!(baseline(&ep, &tok).unwrap(), vec![5000, before[1] + gap]);
}
