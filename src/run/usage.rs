//! `ctxbench usage`: the replay's baseline against what a trace records about the provider's usage, per
//! episode and per call, so that a user can see how faithfully an imported trace replays before trusting what
//! a strategy saves on it. Where the agent compacted its own context, its record is of the compacted requests:
//! they are replayed as the agent sent them (`as_recorded`), not the uncompacted baseline.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::error::Result;
use crate::history::dataset::stream;
use crate::history::usage::{CallUsage, ProviderUsage, Unrecorded};
use crate::llm::mock::{MockConfig, MockLlm};
use crate::replay::Replayer;
use crate::tokens::Tokenizer;

/// One call point's replay against the provider's record of that call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CallComparison {
    /// The call point, counted from 0.
    pub call_point: usize,
    /// Input tokens the baseline replay sends there.
    pub replayed: usize,
    /// What the provider counted (prompt, completion and cache figures).
    pub recorded: CallUsage,
}

impl CallComparison {
    /// replay / recorded, when the record has prompt tokens.
    #[must_use]
    pub fn ratio(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)]
        (self.recorded.input_tokens > 0)
            .then(|| self.replayed as f64 / self.recorded.input_tokens as f64)
    }
}

/// One episode's replay against its recorded usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpisodeUsage {
    /// The episode.
    pub episode: String,
    /// Its source (`import/<format>`).
    pub source: String,
    /// Where its figures come from in the trace.
    pub recorded_from: String,
    /// The replay's call points.
    pub call_points: usize,
    /// The model calls the trace records usage for, when it says.
    pub recorded_calls: Option<usize>,
    /// Call points the trace shows as calls without their usage (an interrupted reply…), with why.
    pub unrecorded: Vec<Unrecorded>,
    /// Calls that failed with no reply kept (not call points), with what failed.
    pub failed: Vec<String>,
    /// Input tokens the baseline replay sends over every call point.
    pub replay_input_tokens: usize,
    /// Of those, the tokens of context the trace did not record (blocks import added).
    pub unrecorded_tokens: usize,
    /// What the trace leaves out of each prompt, as its importer says (`None`: it records every prompt whole).
    pub leaves_out: Option<String>,
    /// What of that context can change without the trace showing it, as its importer says.
    pub changes_unshown: Option<String>,
    /// The prompt tokens the provider counted, when the trace says.
    pub recorded_input_tokens: Option<u64>,
    /// replay / recorded, over the call points the trace records (all of them when it records only totals).
    pub ratio: Option<f64>,
    /// Whether the recorded figures are rounded.
    pub approximate: bool,
    /// Whether the trace's completion counts are not the provider's (then they are not shown).
    pub output_unrecorded: bool,
    /// Per call, when the trace records each call and shows as many as the replay has call points.
    pub calls: Vec<CallComparison>,
    /// Where its blocks of unrecorded context were sized with another tokenizer and sized again for this
    /// comparison, that tokenizer.
    pub resized_from: Option<String>,
    /// Where the trace leaves context out and records each call: recorded ≈ U + k × replayed, fitted
    /// ([`crate::replay::fit`]); its residual per call is the fidelity figure (the ratio is 1 by construction).
    pub fit: Option<crate::replay::fit::Fit>,
}

impl EpisodeUsage {
    /// The share of the replayed input that the trace did not record.
    #[must_use]
    pub fn unrecorded_share(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        if self.replay_input_tokens == 0 {
            0.0
        } else {
            self.unrecorded_tokens as f64 / self.replay_input_tokens as f64
        }
    }

    /// The format, from the source (`import/aider` → `aider`).
    #[must_use]
    pub fn format(&self) -> &str {
        self.source.strip_prefix("import/").unwrap_or(&self.source)
    }

    /// Whether call points equal the calls the trace shows (recorded ones and those without usage).
    #[must_use]
    pub fn calls_match(&self) -> Option<bool> {
        self.recorded_calls
            .map(|n| n + self.unrecorded.len() == self.call_points)
    }
}

/// Replays the baseline of every episode of `dataset` that records its usage and compares.
///
/// # Errors
/// A dataset that cannot be read, or a replay fault.
pub fn compare(
    dataset: &Path,
    tokenizer: &Arc<Tokenizer>,
    unrecorded: super::UnrecordedMode,
) -> Result<Vec<EpisodeUsage>> {
    let llm = MockLlm::new(MockConfig::default(), Arc::clone(tokenizer));
    let replayer = Replayer::new(Arc::clone(tokenizer), &llm, usize::MAX)
        .with_unrecorded(unrecorded.is_keep());
    let mut out = Vec::new();
    for entry in stream(dataset)? {
        let (_, _, mut episode) = entry?;
        let Some(usage) = ProviderUsage::of(&episode) else {
            continue;
        };
        // Probes do not change what the baseline sends.
        episode.probes.clear();
        // Blocks of unrecorded context sized with another tokenizer are sized again with this one.
        let resized_from = crate::replay::unrecorded::resize(&mut episode, tokenizer)?;
        let replay = replayer.replay(
            &episode,
            &crate::metrics::fidelity::compared_strategy(&episode),
        )?;
        let sent: Vec<usize> = replay.steps.iter().map(|s| s.tokens_sent).collect();
        let calls: Vec<CallComparison> = usage
            .per_call_point(sent.len())
            .unwrap_or_default()
            .into_iter()
            .map(|(call_point, recorded)| CallComparison {
                call_point,
                replayed: sent[call_point],
                recorded,
            })
            .collect();
        let replay_input_tokens: usize = sent.iter().sum();
        let unrecorded_tokens = replay
            .steps
            .iter()
            .map(|s| s.tokens_by_kind.get(crate::history::ItemKind::Unrecorded))
            .sum();
        // Where some call points have no record, the ratio is over those that have one.
        let compared = if calls.is_empty() || usage.unrecorded.is_empty() {
            replay_input_tokens
        } else {
            calls.iter().map(|c| c.replayed).sum()
        };
        #[allow(clippy::cast_precision_loss)]
        let ratio = usage
            .input_tokens
            .filter(|&n| n > 0)
            .map(|n| compared as f64 / n as f64);
        out.push(EpisodeUsage {
            episode: episode.id.clone(),
            source: episode.source.clone(),
            recorded_from: usage.source.clone(),
            call_points: sent.len(),
            recorded_calls: usage.recorded_calls(),
            unrecorded: usage.unrecorded.clone(),
            failed: usage.failed.clone(),
            replay_input_tokens,
            unrecorded_tokens,
            leaves_out: usage.leaves_out.clone(),
            changes_unshown: usage.changes_unshown.clone(),
            recorded_input_tokens: usage.input_tokens,
            ratio,
            approximate: usage.approximate,
            output_unrecorded: usage.output_unrecorded,
            calls,
            resized_from,
            fit: crate::replay::fit::of_episode(&episode, &replay.steps),
        });
    }
    Ok(out)
}

/// What `usage --per-call` says of one format: its call points against the calls its traces show, and how far
/// the replay is from the provider on its worst call.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FormatUsage {
    /// Episodes of the format that record usage.
    pub episodes: usize,
    /// Of those, the episodes that say how many calls they made.
    pub counted: usize,
    /// Of those, the episodes whose call points equal the calls the trace shows.
    pub matching: usize,
    /// Call points over the episodes.
    pub call_points: usize,
    /// Calls with recorded usage over the episodes (those that say).
    pub recorded_calls: usize,
    /// Call points the traces show without usage.
    pub unrecorded: usize,
    /// Failed calls (no call point).
    pub failed: usize,
    /// The per-call ratio farthest from 1, over every compared call: (episode, call point, ratio).
    pub worst: Option<(String, usize, f64)>,
    /// The same, leaving out each episode's first call (where a prompt the trace lacks weighs most).
    pub worst_after_first: Option<(String, usize, f64)>,
}

/// Per format (in name order), what [`FormatUsage`] says over `rows`.
#[must_use]
pub fn by_format(rows: &[EpisodeUsage]) -> BTreeMap<String, FormatUsage> {
    let farther = |cur: &Option<(String, usize, f64)>, r: f64| {
        cur.as_ref()
            .is_none_or(|(_, _, w)| r.ln().abs() > w.ln().abs())
    };
    let mut out: BTreeMap<String, FormatUsage> = BTreeMap::new();
    for row in rows {
        let f = out.entry(row.format().to_owned()).or_default();
        f.episodes += 1;
        f.counted += usize::from(row.calls_match().is_some());
        f.matching += usize::from(row.calls_match() == Some(true));
        f.call_points += row.call_points;
        f.recorded_calls += row.recorded_calls.unwrap_or(0);
        f.unrecorded += row.unrecorded.len();
        f.failed += row.failed.len();
        for c in &row.calls {
            let Some(r) = c.ratio() else { continue };
            if farther(&f.worst, r) {
                f.worst = Some((row.episode.clone(), c.call_point, r));
            }
            if c.call_point > 0 && farther(&f.worst_after_first, r) {
                f.worst_after_first = Some((row.episode.clone(), c.call_point, r));
            }
        }
    }
    out
}
