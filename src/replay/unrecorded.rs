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

use super::{Block, Replayer};
use crate::error::Result;
use crate::history::recorded::RecordedCompaction;
use crate::history::usage::ProviderUsage;
use crate::history::{Episode, Item};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::tokens::Tokenizer;

/// What [`calibrate`] did to one episode.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// The k the episode is counted at ([`counted_at`]), where the fit found one: the replayed tokens and the
    /// blocks are the model's tokens at that k.
    pub k: Option<f64>,
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
    // Counted with the tokenizer's own counts for the fit, then at the k it finds, if it finds one.
    let tokenizer = &tokenizer.at(None);
    let sent = baseline(episode, tokenizer)?;
    let name = tokenizer.name();
    // The edits the trace shows applied to what it leaves out, sized with the tokenizer the blocks are.
    let mut usage = usage;
    super::fit::size_edits(&mut usage, |t| tokenizer.count_text(t));
    let fit = super::fit::of_replayed(episode, &usage, &sent, Some(&name));
    let constant = fit.as_ref().is_some_and(super::fit::Fit::constant);
    let k = fit.as_ref().and_then(counted_at);
    let sent = match k {
        Some(_) => baseline(episode, &tokenizer.at(k))?,
        None => sent,
    };
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
    let (blocks, estimated) = estimate(blocks);
    insert_blocks(episode, &points, &blocks);
    let unrecorded_tokens: usize = blocks.iter().map(|b| b.0).sum();
    usage.unrecorded_tokens = Some(unrecorded_tokens as u64);
    usage.sized_with = Some(tokenizer.name());
    usage.counted_at_k = Some(k.unwrap_or(1.0));
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
        k,
    }))
}

/// Every call point's block: its own where it has one; a call without a record of its own takes the nearest
/// earlier block (else the nearest later one), the agent's own context seldom changing between two calls.
/// With how many took another's.
fn estimate(blocks: Vec<Option<Block>>) -> (Vec<Block>, usize) {
    let known: Vec<Option<usize>> = blocks.iter().map(|b| b.map(|(n, _)| n)).collect();
    let mut estimated = 0;
    let blocks = blocks
        .into_iter()
        .enumerate()
        .map(|(k, b)| {
            b.unwrap_or_else(|| {
                estimated += 1;
                let near = known[..k]
                    .iter()
                    .rev()
                    .flatten()
                    .next()
                    .or_else(|| known[k..].iter().flatten().next())
                    .copied()
                    .unwrap_or(0);
                (near, None)
            })
        })
        .collect();
    (blocks, estimated)
}

/// The k an episode is counted at, from the fit of its record against the tokenizer's own count: the fitted
/// k where the fit vouches for it, else none (the tokenizer's own counts). It vouches where k was fitted (not
/// given: a count with the model's own tokenizer is the model's count) within [`super::fit::K_RANGE`], from
/// more records than the fit has parameters, with no call past [`super::fit::FLAGGED`], and is at least 1.
/// Not otherwise:
/// - held at a bound, least squares having fallen outside the range: that says something the trace does not
///   show changed, not what the model's tokenizer counts, and scaling every count by the bound would put
///   that guess into every saving;
/// - 0 by construction (two calls and a free k): k is then set by two records exactly, whatever changed
///   between them, and nothing checks it;
/// - a call past 3%: the fit does not explain the record, so neither does its k;
/// - edits of known size modelled (aider's applied edits): their sizes are the tokenizer's own counts, which
///   a replay at k would not scale; such an episode stays at 1 (no aider context was counted at k before the
///   edits were modelled either);
/// - below 1: the model's tokenizer would pack the same text tighter than the one counting. Claude counts
///   1.48–1.60 × o200k_base on Claude Code's sessions; on the shared traces the only fits below 1 are
///   OpenHands' (0.587 from two calls, 0.651 from four, Claude 3.5 Sonnet), whose unrecorded context changes
///   between calls without the trace showing it. A model whose tokenizer does count less is then counted at
///   1, what strategies remove overstated by at most 1/k.
#[must_use]
pub fn counted_at(fit: &super::fit::Fit) -> Option<f64> {
    let vouched = fit.k_fitted
        && fit.edits == 0
        && fit.k_held_from.is_none()
        && !fit.by_construction
        && !fit.flagged()
        && fit.k >= 1.0;
    vouched.then_some(fit.k)
}

/// The k `episode` is counted at when replayed with `tokenizer`: the one import fitted and sized its blocks
/// at (`meta.usage.counted_at_k`), where that tokenizer sized them; else none.
#[must_use]
pub fn k_of(episode: &Episode, tokenizer: &Tokenizer) -> Option<f64> {
    // Read in place: the usage's per-call records need not be parsed for it.
    let usage = episode.meta.get(crate::history::usage::META_KEY)?;
    let k = usage.get("counted_at_k")?.as_f64()?;
    let sized_with = usage.get("sized_with")?.as_str()?;
    #[allow(clippy::float_cmp)]
    (k != 1.0 && sized_with == tokenizer.name()).then_some(k)
}

/// What counts `episode`'s tokens: `tokenizer` at the k its blocks were sized at ([`k_of`]), so that every
/// item, instruction and text a strategy writes is counted in the model's tokens; `tokenizer` itself where
/// there is none (a dataset of ctxbench's own, a trace counted with the model's own tokenizer).
#[must_use]
pub fn counter(episode: &Episode, tokenizer: &Arc<Tokenizer>) -> Arc<Tokenizer> {
    if episode.meta.is_empty() {
        return Arc::clone(tokenizer);
    }
    match k_of(episode, tokenizer) {
        Some(k) => tokenizer.at(Some(k)),
        None => Arc::clone(tokenizer),
    }
}

/// Re-sizes the blocks of unrecorded context import added to `episode` when another tokenizer than
/// `tokenizer` sized them (a block is the record less the replay as that tokenizer counted it, so a replay
/// counting with another would carry the first one's error in a block no strategy may reduce): the blocks are
/// taken out and the episode calibrated again from its record, and the usage says which tokenizer had sized
/// them (`resized_from`). Returns that tokenizer's name when it re-sized. Blocks sized with `tokenizer` by a
/// ctxbench that did not count at k yet (no `counted_at_k`) are sized again too, at the k the fit finds, and
/// `None` returned (the tokenizer is the same). Blocks the dataset carries of its own (no
/// `unrecorded_tokens` in its usage) are left as they are.
///
/// # Errors
/// Refused, saying why and what to do, where the record no longer lines up with the episode's call points;
/// a replay fault.
pub fn resize(episode: &mut Episode, tokenizer: &Arc<Tokenizer>) -> Result<Option<String>> {
    let Some(usage) = ProviderUsage::of(episode).filter(|u| u.unrecorded_tokens.is_some()) else {
        return Ok(None);
    };
    let name = tokenizer.name();
    let same = usage.sized_with.as_deref() == Some(name.as_str());
    // Sized with this tokenizer at the k its fit found (or none): nothing to do. Sized with it before
    // ctxbench counted at k (no `counted_at_k`): sized again, at the k the fit finds now.
    if (same && usage.counted_at_k.is_some())
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
        let sized = if same {
            format!("were sized with {name} before ctxbench counted the history at the fitted k")
        } else {
            format!("were sized with {from} and this replay counts with {name}")
        };
        crate::error::Error::Config(format!(
            "episode '{id}': its blocks of unrecorded context {sized}, but {why}, so they cannot be sized \
             again; import the trace again with this tokenizer (`ctxbench import --tokenizer`), or replay \
             with the one that sized them"
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
    if same {
        return Ok(None);
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
    // Counted with `tokenizer` as given, whatever k the blocks were sized at before.
    if let Some(usage) = bare
        .meta
        .get_mut(crate::history::usage::META_KEY)
        .and_then(serde_json::Value::as_object_mut)
    {
        usage.remove("counted_at_k");
    }
    let sent = crate::metrics::fidelity::compared_strategy(episode);
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(tokenizer));
    let replay = Replayer::new(Arc::clone(tokenizer), &llm, usize::MAX).replay(&bare, &sent)?;
    Ok(replay.steps.iter().map(|s| s.tokens_sent).collect())
}

/// Inserts `blocks[k]` just before call point `points[k]` (at the end for a call point there), moving every
/// finding, need and probe position past an insertion with the item it points at.
pub(crate) fn insert_blocks(
    episode: &mut Episode,
    points: &[usize],
    blocks: &[(usize, Option<usize>)],
) {
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
#[path = "unrecorded_tests.rs"]
mod tests;
