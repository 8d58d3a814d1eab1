//! What a trace records about the provider's usage: per call where it says (the prompt and completion
//! tokens the provider counted for each model call), or only a run's totals. Importers write it into an
//! episode's `meta.usage` in one form, whatever the trace's own; `ctxbench usage` and `validate` read it back.

use serde::{Deserialize, Serialize};

use super::Episode;

/// The key under `meta` that holds a [`ProviderUsage`].
pub const META_KEY: &str = "usage";

/// The provider's count for one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallUsage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens (reasoning included where the provider counts it so).
    pub output_tokens: u64,
    /// Of the prompt tokens, those read from the provider's cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Of the prompt tokens, those written to the provider's cache, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Of the cache writes, those to a 1-hour cache (Anthropic's `ephemeral_1h_input_tokens`; the rest went to
    /// the 5-minute cache), when the trace says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h_tokens: Option<u64>,
}

/// What a trace records about the provider's usage over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderUsage {
    /// Where in the trace it comes from (`model_stats`, `extra.response.usage`, …).
    pub source: String,
    /// One entry per model call, in order, when the trace records each call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallUsage>,
    /// Model calls the run made, when the trace says (it may count calls whose reply is not in the history,
    /// such as retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_calls: Option<u64>,
    /// Prompt tokens over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Completion tokens over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Whether the trace's figures are rounded (aider writes `5.8k`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
    /// Call points at which the agent called its model but the trace records no usage for that call (an
    /// aider reply interrupted before its `Tokens:` report, an OpenHands message without `tool_call_metadata`),
    /// in order: `calls` holds the other call points' records, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecorded: Vec<Unrecorded>,
    /// Calls the trace shows failed with no reply kept (a provider error, an attempt retried): no call point,
    /// no usage; each says what failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// Whether the trace's completion counts are not the provider's (Claude Code writes streaming
    /// placeholders of 1–26 tokens): then every `output_tokens` is 0 and means "not recorded".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_unrecorded: bool,
    /// What of each prompt the trace leaves out, when its importer knows (Claude Code's system prompt and
    /// tool schemas, aider's repo map and files): the replay of a call then falls short of its record by that
    /// much, which import keeps as blocks of unrecorded context ([`crate::history::Item::Unrecorded`]).
    /// `None`: the trace holds every prompt whole, and a gap is the tokenizer's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves_out: Option<String>,
    /// What of that context can change without the trace showing it, when its importer knows (aider's repo
    /// map, recomputed for each message, and its summary of older turns): the cause to name where the fit
    /// ([`crate::replay::fit`]) leaves more than 3% on a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_unshown: Option<String>,
    /// The call points from which the context the trace leaves out changes, as the trace shows (aider's
    /// `/add`, `/drop`, `/read-only`, files added on the model's mention): the fit of that context
    /// ([`crate::replay::fit`]) starts a segment at each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_changes: Vec<usize>,
    /// The edits the trace shows applied to what it leaves out, with their text (aider's SEARCH/REPLACE
    /// blocks applied to a file in the chat): from its call point on, the context left out grows by the
    /// edit's size, which the fit ([`crate::replay::fit`]) models instead of starting a segment there. An edit
    /// whose size cannot be known (a whole-file edit of a file whose old text the trace does not hold) is a
    /// change point instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_edits: Vec<ContextEdit>,
    /// The tokens of unrecorded context import added over the episode's call points, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecorded_tokens: Option<u64>,
    /// The tokenizer that sized those blocks (as reports name it: `o200k_base`, or a model's tokenizer.json
    /// with its template): a block is the record less the replay counted with it, so a replay that counts with
    /// another re-sizes them first ([`crate::replay::unrecorded::resize`]). `None` on a dataset written before
    /// ctxbench recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sized_with: Option<String>,
    /// The model's tokens per token of `sized_with` (the fit's k, [`crate::replay::fit`]) at which the replay
    /// counts the history and every text a strategy writes, and at which the blocks were sized (record less
    /// k × the replay): the fitted k where the fit vouches for it ([`crate::replay::unrecorded::counted_at`]),
    /// else 1 (the count is the model's own; k not fitted, held at a bound, 0 by construction, past 3% on a
    /// call, or below 1). `None` on a dataset written before ctxbench counted at k: a run sizes its blocks
    /// again ([`crate::replay::unrecorded::resize`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_at_k: Option<f64>,
    /// The tokenizer the trace's own record was counted with, where the record is not the provider's count
    /// but the agent's (aider until it read usage from the stream: its `Tokens:` report is litellm's count of
    /// the messages it sent, `cl100k_base` for Claude, `o200k_base` for the gpt-4o family): a replay counted
    /// with it is in the record's own tokens, so the fit's k is 1, given ([`crate::replay::fit`]), and any
    /// other tokenizer's k is fitted. `None`: the record is the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_by: Option<String>,
    /// Where a replay re-sized the blocks for its own tokenizer, the one that had sized them (`"unrecorded"`
    /// when the dataset did not say); never written by import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resized_from: Option<String>,
}

/// An edit the trace shows applied to the context it leaves out: the next call sends `file` with `removed`
/// replaced by `added`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextEdit {
    /// The first call point that sends the file as edited.
    pub call_point: usize,
    /// The file edited.
    pub file: String,
    /// The text the edit put in (a REPLACE section, or a whole file's new text).
    pub added: String,
    /// The text it took out (a SEARCH section, or the file's old text).
    pub removed: String,
    /// Its size, `added` less `removed` counted with the tokenizer that sized the episode's blocks
    /// (`sized_with`); `None` until one counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<i64>,
}

/// A model call the trace shows but records no usage for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unrecorded {
    /// Its call point, counted from 0 among the episode's call points.
    pub call_point: usize,
    /// Why the trace has no usage for it.
    pub why: String,
}

impl ProviderUsage {
    /// Usage from per-call records; the totals are their sums.
    #[must_use]
    pub fn from_calls(source: &str, calls: Vec<CallUsage>) -> Self {
        Self {
            source: source.to_owned(),
            api_calls: Some(calls.len() as u64),
            input_tokens: Some(calls.iter().map(|c| c.input_tokens).sum()),
            output_tokens: Some(calls.iter().map(|c| c.output_tokens).sum()),
            calls,
            ..Self::default()
        }
    }

    /// Usage from one entry per call point, `None` where the trace records no usage for that call (with why):
    /// the recorded ones become `calls`, the others `unrecorded`.
    #[must_use]
    pub fn from_call_points(source: &str, points: Vec<Result<CallUsage, String>>) -> Self {
        let mut calls = Vec::new();
        let mut unrecorded = Vec::new();
        for (call_point, p) in points.into_iter().enumerate() {
            match p {
                Ok(c) => calls.push(c),
                Err(why) => unrecorded.push(Unrecorded { call_point, why }),
            }
        }
        Self {
            unrecorded,
            ..Self::from_calls(source, calls)
        }
    }

    /// Writes it into `episode.meta` (nothing when it holds no figure).
    pub fn store(&self, episode: &mut Episode) {
        if self.calls.is_empty()
            && self.input_tokens.is_none()
            && self.api_calls.is_none()
            && self.unrecorded.is_empty()
        {
            return;
        }
        if let Ok(v) = serde_json::to_value(self) {
            episode.meta.insert(META_KEY.into(), v);
        }
    }

    /// What `episode.meta` holds, when it holds a well-formed record.
    #[must_use]
    pub fn of(episode: &Episode) -> Option<Self> {
        serde_json::from_value(episode.meta.get(META_KEY)?.clone()).ok()
    }

    /// The number of model calls the trace records usage for, when it says.
    #[must_use]
    pub fn recorded_calls(&self) -> Option<usize> {
        if self.calls.is_empty() {
            self.api_calls.and_then(|n| usize::try_from(n).ok())
        } else {
            Some(self.calls.len())
        }
    }

    /// The number of call points the trace shows: the calls it records usage for and those it does not.
    #[must_use]
    pub fn call_points(&self) -> Option<usize> {
        match self.recorded_calls() {
            Some(n) => Some(n + self.unrecorded.len()),
            None => (!self.unrecorded.is_empty()).then_some(self.unrecorded.len()),
        }
    }

    /// The record of each call point that has one, as (call point, record), when the trace records each call
    /// and shows `points` call points in all; `None` otherwise.
    #[must_use]
    pub fn per_call_point(&self, points: usize) -> Option<Vec<(usize, CallUsage)>> {
        if self.calls.is_empty() || self.calls.len() + self.unrecorded.len() != points {
            return None;
        }
        let skipped: std::collections::HashSet<usize> =
            self.unrecorded.iter().map(|u| u.call_point).collect();
        let at: Vec<usize> = (0..points).filter(|p| !skipped.contains(p)).collect();
        (at.len() == self.calls.len())
            .then(|| at.into_iter().zip(self.calls.iter().copied()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(n: u64) -> CallUsage {
        CallUsage {
            input_tokens: n,
            ..CallUsage::default()
        }
    }

    #[test]
    fn unrecorded_call_points_are_skipped_when_records_are_matched() {
        let u = ProviderUsage::from_call_points(
            "t",
            vec![Ok(call(10)), Err("interrupted".into()), Ok(call(30))],
        );
        assert_eq!(u.recorded_calls(), Some(2));
        assert_eq!(u.call_points(), Some(3));
        assert_eq!(u.input_tokens, Some(40));
        assert_eq!(u.unrecorded[0].call_point, 1);
        assert_eq!(
            u.per_call_point(3),
            Some(vec![(0, call(10)), (2, call(30))])
        );
        assert_eq!(u.per_call_point(2), None);
        // Read back from an episode as it was written.
        let mut ep = crate::history::Episode::default();
        u.store(&mut ep);
        assert_eq!(ProviderUsage::of(&ep), Some(u));
    }

    #[test]
    fn a_trace_with_only_unrecorded_calls_is_kept() {
        let u = ProviderUsage::from_call_points("t", vec![Err("no usage".into())]);
        let mut ep = crate::history::Episode::default();
        u.store(&mut ep);
        assert_eq!(
            ProviderUsage::of(&ep).and_then(|u| u.call_points()),
            Some(1)
        );
        assert_eq!(u.recorded_calls(), Some(0));
    }
}
