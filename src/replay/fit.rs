//! The context a trace did not record, fitted rather than assumed: per episode, recorded ≈ U + k × replayed,
//! where `replayed` is what the replay counts of the history the trace holds, `U` the context it left out
//! (constant between the changes the trace shows: aider's `/add`, `/drop`, `/read-only`, another chat mode, a
//! model switch, a compaction — aider's summary of older turns among them, whose size only `U` holds —, an
//! edit of unknown size; an edit whose text the trace holds — aider's
//! SEARCH/REPLACE blocks applied, and `/undo` of them — is no change point: from its call point on, `U` grows
//! by k × its size, `replayed` + the edits' sizes being what the model counts) and `k` the ratio of the
//! model's tokenizer to the
//! one counting (given as 1 where it is the model's own: a tokenizer.json, or an OpenAI encoding for an
//! OpenAI model; else fitted, as for Claude and Gemini, whose tokenizers are not public). Where the record is
//! the agent's own count rather than the provider's (`meta.usage.counted_by`: aider's `Tokens:` reports), the
//! record's tokens are that tokenizer's, and k is given as 1 for it alone.
//! The blocks import adds close each call's gap exactly, so the replay equals the record by construction; the
//! fit's residual per call is what says how faithfully the trace replays, and `U` is what may be called "the
//! system prompt and tool schemas" where the trace shows no change.

use serde::{Deserialize, Serialize};

use super::StepRecord;
use crate::history::recorded::RecordedCompaction;
use crate::history::usage::ProviderUsage;
use crate::history::{Episode, ItemKind};

/// The residual past which a call is flagged: the fit leaves more than 3% of its record unexplained.
pub const FLAGGED: f64 = 0.03;

/// The plausible range of `k`, the ratio of two tokenizers' counts of the same history: a least-squares `k`
/// outside it (a change the trace does not show, a handful of calls) is held at the nearer end.
pub const K_RANGE: (f64, f64) = (0.5, 2.0);

/// One episode's fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// The tokenizers' ratio: the model's tokens per token counted.
    pub k: f64,
    /// Whether `k` was fitted (else given, [`Fit::k_given`], or 1 where no segment has two recorded calls
    /// with different histories to fit it from).
    pub k_fitted: bool,
    /// Whether `k` was given: 1 where the count is the model's own tokenizer's (a tokenizer.json, or an
    /// OpenAI encoding for an OpenAI model), or the one the agent counted its record with
    /// ([`Fit::record_counted_by`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub k_given: bool,
    /// Where `k` is given because the record is the agent's own count with the tokenizer counting here
    /// ([`ProviderUsage::counted_by`]), that tokenizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_counted_by: Option<String>,
    /// Where `k` was fitted, the least-squares value when it fell outside [`K_RANGE`] and `k` is held at the
    /// nearer end: the fit then has one parameter fewer, and its residuals are not 0 by construction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_held_from: Option<f64>,
    /// Each segment's first call point and its unrecorded context `U`, in tokens (`None` where no call of
    /// the segment has a record to fit it from).
    pub segments: Vec<(usize, Option<f64>)>,
    /// Per call point: (U + k × replayed) / recorded − 1, where the call has a record.
    pub residuals: Vec<Option<f64>>,
    /// Whether the fit has as many parameters as records (each segment's `U` set by its only call and `k`
    /// not fitted): its residuals are 0 by construction and say nothing.
    pub by_construction: bool,
    /// The edits of known size the fit modelled (`U` grows by k × each one's size from its call point on,
    /// [`ProviderUsage::context_edits`]): where any, `U` is not one constant block.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub edits: usize,
    /// Where the replay fitted counted the history at the k import fitted (`meta.usage.counted_at_k`, not 1),
    /// that k: every count of the replay is the model's tokens at it ([`crate::tokens::Tokenizer::at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_at: Option<f64>,
    /// The call points from which the agent sent a summary of older turns that the trace does not hold
    /// (aider's, [`crate::history::recorded::Compaction::unseen_summary`]): change points of `U`, which holds the
    /// summary's size from there on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen_summaries: Vec<usize>,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Fit {
    /// The residual farthest from 0, with its call point.
    #[must_use]
    pub fn worst(&self) -> Option<(usize, f64)> {
        self.residuals
            .iter()
            .enumerate()
            .filter_map(|(k, r)| r.map(|r| (k, r)))
            .fold(None, |w: Option<(usize, f64)>, (k, r)| match w {
                Some((_, b)) if b.abs() >= r.abs() => w,
                _ => Some((k, r)),
            })
    }

    /// Whether a call's residual is past [`FLAGGED`].
    #[must_use]
    pub fn flagged(&self) -> bool {
        self.worst().is_some_and(|(_, r)| r.abs() > FLAGGED)
    }

    /// Whether the unrecorded context is one constant block over the episode (no change the trace shows, no
    /// call the fit leaves past [`FLAGGED`]): only then is it the agent's fixed prefix (its system prompt and
    /// tool schemas).
    #[must_use]
    pub fn constant(&self) -> bool {
        self.segments.len() == 1 && !self.flagged() && self.edits == 0
    }
}

/// What a trace left out, as the importer names it (`leaves_out`) where the fit finds one constant block,
/// else said not to be one: a block that changes holds more than the agent's fixed prefix.
#[must_use]
pub fn what_is_left_out(leaves_out: &str, constant: bool) -> String {
    if constant {
        leaves_out.to_owned()
    } else {
        format!("not one constant block: {leaves_out}, and what changed or was miscounted")
    }
}

/// The call points from which the context a trace left out changes, as the trace shows: those its importer
/// recorded (`meta.usage.context_changes`: aider's `/add`, `/drop`, `/read-only`, files added on the model's
/// mention), a model switch (another system prompt), a compaction the agent recorded, an edit not yet sized
/// ([`size_edits`]).
#[must_use]
pub fn changes(episode: &Episode, usage: &ProviderUsage) -> Vec<usize> {
    let mut out = usage.context_changes.clone();
    out.extend(
        usage
            .context_edits
            .iter()
            .filter(|e| e.tokens.is_none())
            .map(|e| e.call_point),
    );
    out.extend(episode.model_switches.iter().map(|s| s.call_point));
    if let Some(recorded) = RecordedCompaction::of(episode) {
        out.extend(recorded.compactions.iter().map(|c| c.call_point));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Sizes the edits the trace shows applied to the context it leaves out ([`ProviderUsage::context_edits`]):
/// each one's added text less its removed text, counted with `count` (the tokenizer that sizes the blocks).
pub fn size_edits(usage: &mut ProviderUsage, count: impl Fn(&str) -> usize) {
    for e in &mut usage.context_edits {
        #[allow(clippy::cast_possible_wrap)]
        let size = count(&e.added) as i64 - count(&e.removed) as i64;
        e.tokens = Some(size);
    }
}

/// Per call point of `n`, the tokens the sized edits added to the context left out by then (their sizes
/// summed over those whose call point is at or before it), and how many edits of those call points it sums.
#[must_use]
pub fn edit_growth(usage: &ProviderUsage, n: usize) -> (Vec<i64>, usize) {
    let mut at = vec![0_i64; n];
    let mut edits = 0;
    for e in &usage.context_edits {
        if let Some(t) = e.tokens.filter(|_| e.call_point < n) {
            at[e.call_point] += t;
            edits += 1;
        }
    }
    let mut sum = 0;
    for g in &mut at {
        sum += *g;
        *g = sum;
    }
    (at, edits)
}

/// The fit of an episode whose trace leaves context out (`meta.usage.leaves_out`) and records each call,
/// from a replay of it (`steps`, one per call point): `replayed` is each call's input less its block of
/// unrecorded context. `k` is 1 where the blocks were sized with the model's own tokenizer (a tokenizer.json,
/// or an OpenAI encoding for an OpenAI model). `None` for any other episode.
#[must_use]
pub fn of_episode(episode: &Episode, steps: &[StepRecord]) -> Option<Fit> {
    let usage = ProviderUsage::of(episode)?;
    let replayed: Vec<usize> = steps
        .iter()
        .map(|s| {
            s.tokens_sent
                .saturating_sub(s.tokens_by_kind.get(ItemKind::Unrecorded))
        })
        .collect();
    #[allow(clippy::float_cmp)]
    let Some(at) = usage.counted_at_k.filter(|&k| k != 1.0) else {
        return of_replayed(episode, &usage, &replayed, usage.sized_with.as_deref());
    };
    // A replay counted at the k import fitted (`counted_at_k`) is in the model's tokens: its fit takes that k
    // as given (a count that is not an OpenAI encoding's is the model's own), so that its residuals are
    // those of import's k on this replay, and it says k is import's fitted one.
    let mut f = of_replayed(episode, &usage, &replayed, Some("the model's tokens at k"))?;
    f.k = at;
    f.k_fitted = true;
    f.k_given = false;
    f.counted_at = Some(at);
    Some(f)
}

/// The fit of an episode from each call point's replayed input without unrecorded context (`replayed`),
/// counted with `counted_with` (`k` is 1 where that is the model's own tokenizer: a tokenizer.json, or an
/// OpenAI encoding for an OpenAI model; where the record is the agent's own count, `counted_by`, the one it
/// counted with and no other). `None` unless the trace leaves context out and its records line up with the call points.
#[must_use]
pub fn of_replayed(
    episode: &Episode,
    usage: &ProviderUsage,
    replayed: &[usize],
    counted_with: Option<&str>,
) -> Option<Fit> {
    usage.leaves_out.as_ref()?;
    let records = usage.per_call_point(replayed.len())?;
    let mut recorded = vec![None; replayed.len()];
    for (k, c) in records {
        recorded[k] = Some(c.input_tokens);
    }
    let encodings = [
        crate::tokens::Encoding::O200kBase.as_str(),
        crate::tokens::Encoding::Cl100kBase.as_str(),
    ];
    // The model's own tokenizer: a tokenizer.json, or an OpenAI encoding for an OpenAI model.
    let models = episode.models();
    let openai = !models.is_empty()
        && models
            .iter()
            .all(|(m, _)| crate::tokens::is_openai_model(m));
    // Where the record is the agent's own count (`counted_by`), k is 1 for that tokenizer only.
    let given_k = match usage.counted_by.as_deref() {
        Some(by) => counted_with.filter(|&n| n == by),
        None => counted_with.filter(|n| openai || !encodings.contains(n)),
    }
    .map(|_| 1.0);
    let (growth, edits) = edit_growth(usage, replayed.len());
    let mut f = fit_grown(
        replayed,
        &growth,
        &recorded,
        &changes(episode, usage),
        given_k,
    )?;
    f.edits = edits;
    f.record_counted_by = usage.counted_by.clone().filter(|_| given_k.is_some());
    f.unseen_summaries = RecordedCompaction::of(episode)
        .map(|r| {
            r.compactions
                .iter()
                .filter(|c| c.unseen_summary && c.call_point < replayed.len())
                .map(|c| c.call_point)
                .collect()
        })
        .unwrap_or_default();
    Some(f)
}

/// Fits `recorded[i] ≈ U[s(i)] + k × replayed[i]` over the call points that have a record, by least squares:
/// segments start at call point 0 and at each of `changes`; `k` is fitted from the calls' spread within their
/// segments (held within [`K_RANGE`]) unless `given_k` fixes it; each `U` is then its segment's mean of
/// recorded − k × replayed. `None` when no call has a record.
#[must_use]
pub fn fit(
    replayed: &[usize],
    recorded: &[Option<u64>],
    changes: &[usize],
    given_k: Option<f64>,
) -> Option<Fit> {
    fit_grown(replayed, &[], recorded, changes, given_k)
}

/// [`fit`] where the context left out also grows between changes by what the trace shows of it: per call
/// point, `grown[i]` tokens (counted as `replayed` is: the applied edits' sizes summed up to it, missing
/// entries 0), so that `recorded[i] ≈ U[s(i)] + k × (replayed[i] + grown[i])`; `U` is then each segment's
/// context left out before any edit.
#[must_use]
pub fn fit_grown(
    replayed: &[usize],
    grown: &[i64],
    recorded: &[Option<u64>],
    changes: &[usize],
    given_k: Option<f64>,
) -> Option<Fit> {
    let n = replayed.len().min(recorded.len());
    #[allow(clippy::cast_precision_loss)]
    let x = |i: usize| replayed[i] as f64 + grown.get(i).copied().unwrap_or(0) as f64;
    let mut starts: Vec<usize> = std::iter::once(0)
        .chain(changes.iter().copied().filter(|&c| c > 0 && c < n))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    let segment = |i: usize| starts.partition_point(|&s| s <= i) - 1;
    // Per segment: the recorded calls as (replayed, recorded).
    let mut calls: Vec<Vec<(f64, f64)>> = vec![Vec::new(); starts.len()];
    for i in 0..n {
        if let Some(r) = recorded[i] {
            #[allow(clippy::cast_precision_loss)]
            calls[segment(i)].push((x(i), r as f64));
        }
    }
    let records: usize = calls.iter().map(Vec::len).sum();
    if records == 0 {
        return None;
    }
    let mean = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
        #[allow(clippy::cast_precision_loss)]
        let m = v.iter().map(f).sum::<f64>() / v.len() as f64;
        m
    };
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for seg in calls.iter().filter(|s| s.len() > 1) {
        let (mx, my) = (mean(seg, |c| c.0), mean(seg, |c| c.1));
        for (x, y) in seg {
            sxy += (x - mx) * (y - my);
            sxx += (x - mx) * (x - mx);
        }
    }
    let (k, k_fitted, k_held_from) = match given_k {
        Some(k) => (k, false, None),
        None if sxx > 0.0 => {
            let free = sxy / sxx;
            let k = free.clamp(K_RANGE.0, K_RANGE.1);
            #[allow(clippy::float_cmp)]
            (k, true, (k != free).then_some(free))
        }
        None => (1.0, false, None),
    };
    let segments: Vec<(usize, Option<f64>)> = starts
        .iter()
        .zip(&calls)
        .map(|(&s, seg)| {
            let u = (!seg.is_empty()).then(|| mean(seg, |c| c.1) - k * mean(seg, |c| c.0));
            (s, u)
        })
        .collect();
    let residuals = (0..n)
        .map(|i| {
            recorded[i].filter(|&r| r > 0).map(|r| {
                #[allow(clippy::cast_precision_loss)]
                let r = r as f64;
                // A call with a record is in a segment with a U.
                (segments[segment(i)].1.unwrap_or(0.0) + k * x(i)) / r - 1.0
            })
        })
        .collect();
    // A k held at its bound is not free: it does not make the residuals 0.
    let parameters = calls.iter().filter(|s| !s.is_empty()).count()
        + usize::from(k_fitted && k_held_from.is_none());
    Some(Fit {
        k,
        k_fitted,
        k_given: given_k.is_some(),
        record_counted_by: None,
        k_held_from,
        segments,
        residuals,
        by_construction: records <= parameters,
        edits: 0,
        counted_at: None,
        unseen_summaries: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: three calls of one segment recorded at 1,150, 1,300 and 1,450 where the history is 100, 200
    /// and 300 tokens: k = 1.5 (each history token is 1.5 of the model's), U = 1,000, residuals 0; the last
    /// call recorded 33 over the line leaves its share on every call.
    #[test]
    fn one_segment_by_hand() {
        let f = fit(
            &[100, 200, 300],
            &[Some(1150), Some(1300), Some(1450)],
            &[],
            None,
        )
        .unwrap();
        assert!(
            (f.k - 1.5).abs() < 1e-9 && f.k_fitted && f.k_held_from.is_none(),
            "{f:?}"
        );
        assert_eq!(f.segments.len(), 1);
        assert!((f.segments[0].1.unwrap() - 1000.0).abs() < 1e-9);
        assert!(f.residuals.iter().all(|r| r.unwrap().abs() < 1e-12));
        assert!(f.constant() && !f.by_construction);
        // 1,483 at the last call: the means are 200 and 1,311; k = (Σ dx dy) / (Σ dx²) = (−100·−161 + 0 +
        // 100·172) / 20,000 = 1.665, U = 1,311 − 1.665 × 200 = 978; the calls fit at 1,144.5 (−0.48%),
        // 1,311 (+0.85%) and 1,477.5 (−0.37%).
        let f = fit(
            &[100, 200, 300],
            &[Some(1150), Some(1300), Some(1483)],
            &[],
            None,
        )
        .unwrap();
        assert!((f.k - 1.665).abs() < 1e-9, "{f:?}");
        assert!((f.segments[0].1.unwrap() - 978.0).abs() < 1e-9, "{f:?}");
        for (k, at) in [1144.5, 1311.0, 1477.5].into_iter().enumerate() {
            let expected = at / [1150.0, 1300.0, 1483.0][k] - 1.0;
            assert!((f.residuals[k].unwrap() - expected).abs() < 1e-12, "{f:?}");
        }
        assert_eq!(f.worst().map(|(k, _)| k), Some(1));
        assert!(!f.flagged() && f.constant());
    }

    /// A change the trace shows (a file added at call point 2) starts a segment with its own U; k is fitted
    /// from the spread within segments, so the jump in U does not bend it. Without the change, one U cannot
    /// fit both and a call is flagged.
    #[test]
    fn a_change_starts_a_segment() {
        let replayed = [100, 200, 300, 400];
        let recorded = [Some(1100), Some(1200), Some(2300), Some(2400)];
        let f = fit(&replayed, &recorded, &[2], None).unwrap();
        assert!((f.k - 1.0).abs() < 1e-9, "{f:?}");
        assert_eq!(f.segments, vec![(0, Some(1000.0)), (2, Some(2000.0))]);
        assert!(!f.flagged() && !f.constant());
        let one = fit(&replayed, &recorded, &[], None).unwrap();
        assert!(one.flagged(), "{one:?}");
        assert!(!one.constant());
    }

    /// Given k (the model's own tokenizer: 1), only U is fitted; one call per segment is a fit by
    /// construction; calls without a record have no residual and do not count; no record at all, no fit; a
    /// least-squares k past the plausible range is held at its end.
    #[test]
    fn given_k_construction_and_gaps() {
        let f = fit(&[100, 200], &[Some(1100), Some(1250)], &[], Some(1.0)).unwrap();
        assert!(!f.k_fitted && (f.k - 1.0).abs() < 1e-12);
        assert!((f.segments[0].1.unwrap() - 1025.0).abs() < 1e-9);
        assert!((f.residuals[0].unwrap() - (1125.0 / 1100.0 - 1.0)).abs() < 1e-12);
        let one = fit(&[100, 200], &[Some(1100), None], &[], None).unwrap();
        assert!(one.by_construction && !one.k_fitted);
        assert_eq!(one.residuals[1], None);
        // A segment none of whose calls has a record has no U.
        let unknown = fit(&[100, 200], &[Some(1100), None], &[1], None).unwrap();
        assert_eq!(unknown.segments, vec![(0, Some(1000.0)), (1, None)]);
        assert_eq!(fit(&[100], &[None], &[], None), None);
        let steep = fit(&[100, 101], &[Some(1000), Some(1100)], &[], None).unwrap();
        assert!((steep.k - K_RANGE.1).abs() < 1e-12, "{steep:?}");
    }

    /// By hand, two applied edits of known size: the history replays 100, 200 and 300 tokens; an edit before
    /// call 1 adds 60 tokens of REPLACE for 10 of SEARCH (+50), one before call 2 adds 40 for 10 (+30), so the
    /// files aider sends grow by 50 and then by 80 in all. Recorded at 1,150, 1,375 and 1,570 (U = 1,000, k =
    /// 1.5 on 100, 250 and 380): the fit recovers k and U with residual 0 from three records and two
    /// parameters, so not by construction; U is not one constant block. Fitted as if nothing grew, least
    /// squares reads the growth as the tokenizer's (k = 2.1, held at 2: U = 1,365 − 2 × 200 = 965, call 0
    /// fits at 1,165, +1.3%); with each edit a change point instead, every segment has one call and says
    /// nothing.
    #[test]
    fn applied_edits_grow_u_by_their_size() {
        use crate::history::usage::ContextEdit;
        let edit = |call_point: usize, added: usize, removed: usize| ContextEdit {
            call_point,
            file: "a.py".into(),
            added: "x".repeat(added),
            removed: "x".repeat(removed),
            tokens: None,
        };
        let mut usage = ProviderUsage {
            context_edits: vec![edit(1, 60, 10), edit(2, 40, 10)],
            ..ProviderUsage::default()
        };
        // Unsized, the edits are change points.
        let episode = Episode::default();
        assert_eq!(changes(&episode, &usage), [1, 2]);
        assert_eq!(edit_growth(&usage, 3), (vec![0, 0, 0], 0));
        // One token per character, as a stand-in tokenizer.
        size_edits(&mut usage, str::len);
        assert_eq!(usage.context_edits[0].tokens, Some(50));
        assert!(changes(&episode, &usage).is_empty());
        let (grown, edits) = edit_growth(&usage, 3);
        assert_eq!((grown.clone(), edits), (vec![0, 50, 80], 2));
        // An edit past the last call point is no part of the fit.
        assert_eq!(edit_growth(&usage, 2), (vec![0, 50], 1));
        let replayed = [100, 200, 300];
        let recorded = [Some(1150), Some(1375), Some(1570)];
        let mut f = fit_grown(&replayed, &grown, &recorded, &[], None).unwrap();
        f.edits = edits;
        assert!((f.k - 1.5).abs() < 1e-9 && f.k_fitted, "{f:?}");
        assert!((f.segments[0].1.unwrap() - 1000.0).abs() < 1e-9, "{f:?}");
        assert!(
            f.residuals.iter().all(|r| r.unwrap().abs() < 1e-12),
            "{f:?}"
        );
        assert!(!f.by_construction && !f.flagged() && !f.constant(), "{f:?}");
        // Without the edits: Σdx·dy / Σdx² = (−100·−215 + 100·205) / 20,000 = 2.1, held at 2.
        let flat = fit(&replayed, &recorded, &[], None).unwrap();
        assert!((flat.k_held_from.unwrap() - 2.1).abs() < 1e-9, "{flat:?}");
        assert!(
            (flat.segments[0].1.unwrap() - 965.0).abs() < 1e-9,
            "{flat:?}"
        );
        assert!((flat.residuals[0].unwrap() - (1165.0 / 1150.0 - 1.0)).abs() < 1e-12);
        let cut = fit(&replayed, &recorded, &[1, 2], None).unwrap();
        assert!(cut.by_construction, "{cut:?}");
    }

    /// A record that is the agent's own count (aider's `Tokens:` reports: `counted_by`) gives k = 1 for the
    /// tokenizer that made it and no other: three calls of 1,100, 1,200 and 1,300 over histories of 100, 200
    /// and 300 fit U = 1,000 with residual 0 and k given when counted with cl100k_base; counted with
    /// o200k_base, k is fitted (1 here too, least squares), even for an OpenAI model, whose own encoding
    /// gives k = 1 only where the record is the provider's.
    #[test]
    fn a_record_counted_by_the_agent_gives_k_for_its_tokenizer() {
        let mut usage = ProviderUsage::from_calls(
            "Tokens: reports",
            [1100, 1200, 1300]
                .map(|t| crate::history::usage::CallUsage {
                    input_tokens: t,
                    ..Default::default()
                })
                .to_vec(),
        );
        usage.leaves_out = Some("the system prompt".into());
        usage.counted_by = Some("cl100k_base".into());
        let episode = Episode {
            model: Some("gpt-4o".into()),
            ..Episode::default()
        };
        let replayed = [100, 200, 300];
        let given = of_replayed(&episode, &usage, &replayed, Some("cl100k_base")).unwrap();
        assert!(given.k_given && !given.k_fitted, "{given:?}");
        assert_eq!(given.record_counted_by.as_deref(), Some("cl100k_base"));
        assert!((given.segments[0].1.unwrap() - 1000.0).abs() < 1e-9);
        assert!(given.residuals.iter().all(|r| r.unwrap().abs() < 1e-12));
        assert!(!given.by_construction, "{given:?}");
        let other = of_replayed(&episode, &usage, &replayed, Some("o200k_base")).unwrap();
        assert!(!other.k_given && other.k_fitted, "{other:?}");
        assert_eq!(other.record_counted_by, None);
        // Without `counted_by` (the provider's record), the OpenAI model's encoding is its own: k given.
        usage.counted_by = None;
        let own = of_replayed(&episode, &usage, &replayed, Some("o200k_base")).unwrap();
        assert!(own.k_given && own.record_counted_by.is_none(), "{own:?}");
    }

    /// Two calls of one segment whose least-squares k is past the plausible range (a history 1 token longer,
    /// a record 100 tokens larger: k = 100) hold k at 2; the fit then has one parameter for two records, so
    /// its residuals are not 0 by construction and are reported: U = 1,050 − 2 × 100.5 = 849, the first call
    /// fits at 849 + 200 = 1,049 (+4.9%), the second at 849 + 202 = 1,051 (−4.45%), flagged.
    #[test]
    fn a_held_k_is_not_a_fit_by_construction() {
        let f = fit(&[100, 101], &[Some(1000), Some(1100)], &[], None).unwrap();
        assert!(f.k_fitted && (f.k - 2.0).abs() < 1e-12, "{f:?}");
        assert!((f.k_held_from.unwrap() - 100.0).abs() < 1e-9, "{f:?}");
        assert!((f.segments[0].1.unwrap() - 849.0).abs() < 1e-9, "{f:?}");
        assert!((f.residuals[0].unwrap() - 0.049).abs() < 1e-12, "{f:?}");
        assert!((f.residuals[1].unwrap() - (1051.0 / 1100.0 - 1.0)).abs() < 1e-12);
        assert!(!f.by_construction && f.flagged() && !f.constant(), "{f:?}");
        assert_eq!(f.worst().map(|(k, _)| k), Some(0));
        // Within the range, two calls and two parameters: 0 by construction.
        let free = fit(&[100, 200], &[Some(1000), Some(1150)], &[], None).unwrap();
        assert!(
            free.k_held_from.is_none() && free.by_construction,
            "{free:?}"
        );
        assert!(free.residuals.iter().all(|r| r.unwrap().abs() < 1e-12));
    }
}
