//! The context a trace did not record: where a trace records each call's prompt tokens and leaves part of the
//! prompt out (Claude Code's system prompt and tool schemas, aider's repo map and the files in the chat), the
//! replay of a call falls short of what the provider counted by that part. [`calibrate`] measures the gap call
//! by call and writes it into the episode as a block of unrecorded context before each call point
//! ([`Item::Unrecorded`]: a size, no text), so that the baseline's replay equals the recorded usage and every
//! strategy's request carries what the agent sent besides its history.
//!
//! Only traces whose importer says what they leave out are calibrated (`meta.usage.leaves_out`): where a trace
//! holds the whole prompt (mini-swe-agent, Inspect AI, OpenTelemetry), a gap is the tokenizer's or the chat
//! template's, not context, and is reported as such by `ctxbench usage`.

use std::sync::Arc;

use serde::Serialize;

use super::Replayer;
use crate::error::Result;
use crate::history::recorded::RecordedCompaction;
use crate::history::usage::ProviderUsage;
use crate::history::{Episode, Item};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::tokens::Tokenizer;

/// What [`calibrate`] did to one episode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Calibration {
    /// The episode.
    pub episode: String,
    /// What the trace leaves out, as its importer says.
    pub leaves_out: String,
    /// Call points.
    pub call_points: usize,
    /// Prompt tokens the trace records over the call points that have a record.
    pub recorded_input_tokens: u64,
    /// Input tokens the baseline replays over every call point, before calibration.
    pub replayed_input_tokens: usize,
    /// Tokens of unrecorded context added over every call point.
    pub unrecorded_tokens: usize,
    /// Call points without a record of their own, given the block of the nearest call point that has one.
    pub estimated: usize,
    /// Call points whose replay already exceeds the record (no block: the tokenizer counts more than the
    /// provider did there).
    pub over: usize,
    /// Whether the fit of the blocks ([`super::fit`]) finds one constant block (no change the trace shows, no
    /// call past 3%): only then is it what the importer says the trace leaves out, alone.
    pub constant: bool,
}

impl Calibration {
    /// The share of the episode's input (after calibration) that the trace did not record.
    #[must_use]
    pub fn unrecorded_share(&self) -> f64 {
        let all = self.replayed_input_tokens + self.unrecorded_tokens;
        #[allow(clippy::cast_precision_loss)]
        if all == 0 {
            0.0
        } else {
            self.unrecorded_tokens as f64 / all as f64
        }
    }
}

/// Why an episode with recorded usage was not calibrated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCalibrated {
    /// It records no usage, or only totals, or its importer says it records the whole prompt.
    NothingToDo,
    /// It already holds blocks of unrecorded context.
    AlreadyCalibrated,
    /// Its per-call records do not line up with its call points.
    CallsDiffer {
        /// The replay's call points.
        call_points: usize,
        /// The calls the trace shows.
        calls: usize,
    },
}

/// Calibrates `episode` with `tokenizer`: before each call point, a block of the prompt tokens the trace
/// records for that call less the replay of what the agent sent there (the baseline's; where the agent compacted
/// its own context, `as_recorded`'s: [`crate::history::recorded`]) (none where the replay reaches the record; the
/// nearest recorded call's block where the trace shows a call without usage). Finding, need and probe
/// positions move with the items they point at.
///
/// # Errors
/// A replay fault.
pub fn calibrate(
    episode: &mut Episode,
    tokenizer: &Arc<Tokenizer>,
) -> Result<std::result::Result<Calibration, NotCalibrated>> {
    let Some(usage) = ProviderUsage::of(episode) else {
        return Ok(Err(NotCalibrated::NothingToDo));
    };
    let Some(leaves_out) = usage.leaves_out.clone() else {
        return Ok(Err(NotCalibrated::NothingToDo));
    };
    if usage.calls.is_empty() {
        return Ok(Err(NotCalibrated::NothingToDo));
    }
    if episode
        .items
        .iter()
        .any(|i| i.unrecorded_tokens().is_some())
    {
        return Ok(Err(NotCalibrated::AlreadyCalibrated));
    }
    let points = episode.call_points();
    let Some(records) = usage.per_call_point(points.len()) else {
        return Ok(Err(NotCalibrated::CallsDiffer {
            call_points: points.len(),
            calls: usage.calls.len() + usage.unrecorded.len(),
        }));
    };
    let sent = baseline(episode, tokenizer)?;
    let name = tokenizer.name();
    // The edits the trace shows applied to what it leaves out, sized with the tokenizer the blocks are.
    let mut usage = usage;
    super::fit::size_edits(&mut usage, |t| tokenizer.count_text(t));
    let constant =
        super::fit::of_replayed(episode, &usage, &sent, Some(&name)).is_some_and(|f| f.constant());
    // Each call point's block: the recorded prompt less the replay, and what of it the cache served.
    let mut blocks: Vec<Option<(usize, Option<usize>)>> = vec![None; points.len()];
    let mut over = 0;
    for &(k, call) in &records {
        let recorded = usize::try_from(call.input_tokens).unwrap_or(usize::MAX);
        let gap = recorded.saturating_sub(sent[k]);
        over += usize::from(sent[k] > recorded);
        let read = call
            .cache_read_tokens
            .map(|r| usize::try_from(r).unwrap_or(usize::MAX).min(gap));
        blocks[k] = Some((gap, read));
    }
    // A call without a record of its own takes the nearest earlier block (else the nearest later one): the
    // agent's own context seldom changes between two calls.
    let mut estimated = 0;
    let known: Vec<Option<usize>> = blocks.iter().map(|b| b.map(|(n, _)| n)).collect();
    for k in 0..blocks.len() {
        if blocks[k].is_none() {
            let near = known[..k]
                .iter()
                .rev()
                .flatten()
                .next()
                .or_else(|| known[k..].iter().flatten().next())
                .copied()
                .unwrap_or(0);
            blocks[k] = Some((near, None));
            estimated += 1;
        }
    }
    let blocks: Vec<(usize, Option<usize>)> =
        blocks.into_iter().map(Option::unwrap_or_default).collect();
    insert_blocks(episode, &points, &blocks);
    let unrecorded_tokens: usize = blocks.iter().map(|b| b.0).sum();
    usage.unrecorded_tokens = Some(unrecorded_tokens as u64);
    usage.sized_with = Some(tokenizer.name());
    usage.store(episode);
    Ok(Ok(Calibration {
        episode: episode.id.clone(),
        leaves_out,
        call_points: points.len(),
        recorded_input_tokens: records.iter().map(|(_, c)| c.input_tokens).sum(),
        replayed_input_tokens: sent.iter().sum(),
        unrecorded_tokens,
        estimated,
        over,
        constant,
    }))
}

/// Re-sizes the blocks of unrecorded context import added to `episode` when another tokenizer than
/// `tokenizer` sized them (a block is the record less the replay as that tokenizer counted it, so a replay
/// counting with another would carry the first one's error in a block no strategy may reduce): the blocks are
/// taken out and the episode calibrated again from its record, and the usage says which tokenizer had sized
/// them (`resized_from`). Returns that tokenizer's name when it re-sized. Blocks the dataset carries of its
/// own (no `unrecorded_tokens` in its usage) are left as they are.
///
/// # Errors
/// Refused, saying why and what to do, where the record no longer lines up with the episode's call points;
/// a replay fault.
pub fn resize(episode: &mut Episode, tokenizer: &Arc<Tokenizer>) -> Result<Option<String>> {
    let Some(usage) = ProviderUsage::of(episode).filter(|u| u.unrecorded_tokens.is_some()) else {
        return Ok(None);
    };
    let name = tokenizer.name();
    if usage.sized_with.as_deref() == Some(name.as_str())
        || !episode
            .items
            .iter()
            .any(|i| i.unrecorded_tokens().is_some())
    {
        return Ok(None);
    }
    let from = usage
        .sized_with
        .clone()
        .unwrap_or_else(|| "an unrecorded tokenizer".to_owned());
    remove_blocks(episode);
    let id = episode.id.clone();
    let refused = |why: String| {
        crate::error::Error::Config(format!(
            "episode '{id}': its blocks of unrecorded context were sized with {from} and this replay counts \
             with {name}, but {why}, so they cannot be sized again; import the trace again with this \
             tokenizer (`ctxbench import --tokenizer`), or replay with the one that sized them"
        ))
    };
    match calibrate(episode, tokenizer)? {
        Ok(_) => {}
        Err(NotCalibrated::CallsDiffer { call_points, calls }) => {
            return Err(refused(format!(
                "its usage records {calls} calls where it has {call_points} call points"
            )))
        }
        Err(_) => return Err(refused("its usage no longer records each call".to_owned())),
    }
    if let Some(mut usage) = ProviderUsage::of(episode) {
        usage.resized_from = Some(from.clone());
        usage.store(episode);
    }
    Ok(Some(from))
}

/// Takes every block of unrecorded context out of `episode`, moving finding, need and probe positions back
/// with the items they point at ([`insert_blocks`] undone).
fn remove_blocks(episode: &mut Episode) {
    let blocks: Vec<usize> = episode
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| item.unrecorded_tokens().map(|_| i))
        .collect();
    if blocks.is_empty() {
        return;
    }
    episode.items.retain(|i| i.unrecorded_tokens().is_none());
    // An item at index i (never a block) moves back by the blocks before it.
    let shift = |i: usize| i - blocks.partition_point(|&b| b < i);
    for f in &mut episode.findings {
        f.introduced_at = shift(f.introduced_at);
        for n in &mut f.needed_at {
            *n = shift(*n);
        }
    }
    for p in &mut episode.probes {
        p.after_item = shift(p.after_item);
    }
    if let Some(mut recorded) = RecordedCompaction::of(episode) {
        recorded.shift(shift);
        recorded.store(episode);
    }
}

/// The input tokens the agent sent at each call point of `episode` as it stands, as replayed: the baseline's,
/// or where the agent compacted its own context, what it recorded sending (`as_recorded`).
fn baseline(episode: &Episode, tokenizer: &Arc<Tokenizer>) -> Result<Vec<usize>> {
    let mut bare = episode.clone();
    // Probes and findings do not change what the baseline sends.
    bare.probes.clear();
    bare.findings.clear();
    let sent = crate::metrics::fidelity::compared_strategy(episode);
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(tokenizer));
    let replay = Replayer::new(Arc::clone(tokenizer), &llm, usize::MAX).replay(&bare, &sent)?;
    Ok(replay.steps.iter().map(|s| s.tokens_sent).collect())
}

/// Inserts `blocks[k]` just before call point `points[k]` (at the end for a call point there), moving every
/// finding, need and probe position past an insertion with the item it points at.
fn insert_blocks(episode: &mut Episode, points: &[usize], blocks: &[(usize, Option<usize>)]) {
    let mut items = Vec::with_capacity(episode.items.len() + points.len());
    let mut next = 0;
    for (&at, &(tokens, cached)) in points.iter().zip(blocks) {
        items.extend_from_slice(&episode.items[next..at]);
        items.push(Item::unrecorded(tokens, cached));
        next = at;
    }
    items.extend_from_slice(&episode.items[next..]);
    episode.items = items;
    // An item at index i moves by the blocks inserted at or before it.
    let shift = |i: usize| i + points.partition_point(|&at| at <= i);
    for f in &mut episode.findings {
        f.introduced_at = shift(f.introduced_at);
        for n in &mut f.needed_at {
            *n = shift(*n);
        }
    }
    for p in &mut episode.probes {
        p.after_item = shift(p.after_item);
    }
    if let Some(mut recorded) = RecordedCompaction::of(episode) {
        recorded.shift(shift);
        recorded.store(episode);
    }
}

#[cfg(test)]
mod tests {
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
}
