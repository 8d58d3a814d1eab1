//! What a replay produces: one [`StepRecord`] per call point and one [`ProbeRecord`] per probe, for each
//! episode under each strategy ([`EpisodeReplay`]). Records hold what happened, measured; every figure
//! derived from them (savings, cost, retention…) is computed by [`crate::metrics`].

use serde::{Deserialize, Serialize};

use crate::history::{FindingKind, ItemKind};
use crate::strategy::LlmCall;

/// Tokens per item kind, keyed by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokensByKind([usize; ItemKind::ALL.len()]);

impl TokensByKind {
    /// Adds `tokens` to `kind`.
    pub fn add(&mut self, kind: ItemKind, tokens: usize) {
        self.0[kind as usize] += tokens;
    }

    /// The tokens of `kind`.
    #[must_use]
    pub fn get(&self, kind: ItemKind) -> usize {
        self.0[kind as usize]
    }

    /// Every kind with its tokens, in [`ItemKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (ItemKind, usize)> + '_ {
        ItemKind::ALL.iter().map(|&k| (k, self.get(k)))
    }

    /// The tokens of every kind together.
    #[must_use]
    pub fn total(&self) -> usize {
        self.0.iter().sum()
    }

    /// Adds every kind of `other`.
    pub fn add_all(&mut self, other: &TokensByKind) {
        for (k, n) in other.iter() {
            self.add(k, n);
        }
    }
}

/// A set of an episode's findings, by their index in [`crate::Episode::findings`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingSet(Vec<u64>);

impl FindingSet {
    /// The set of the findings for which `member` holds, of `n` findings.
    pub fn from_fn(n: usize, mut member: impl FnMut(usize) -> bool) -> Self {
        let mut bits = vec![0u64; n.div_ceil(64)];
        for i in (0..n).filter(|&i| member(i)) {
            bits[i / 64] |= 1 << (i % 64);
        }
        Self(bits)
    }

    /// Whether finding `i` is in the set.
    #[must_use]
    pub fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// What happened at one call point of one episode under one strategy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepRecord {
    /// Zero-based call-point index.
    pub step: usize,
    /// Index of the episode item the call point precedes (the item count at the end of the episode).
    pub item_index: usize,
    /// Items in the request as sent.
    pub items_sent: usize,
    /// Instructions in the request as sent.
    pub instructions_sent: usize,
    /// Tokens of the live request before the strategy ran.
    pub tokens_before: usize,
    /// Tokens of the request as sent.
    pub tokens_sent: usize,
    /// Tokens of the sent request's prefix that equals the previous request as sent.
    pub cached_tokens: usize,
    /// Tokens of the recorded assistant turn that answered this call.
    pub output_tokens: usize,
    /// Tokens sent, by item kind (instructions count as summaries; the reply priming is in no kind).
    pub tokens_by_kind: TokensByKind,
    /// Whether the strategy declared a change of the request.
    pub changed: bool,
    /// The LLM calls the strategy made, in order.
    pub llm_calls: Vec<LlmCall>,
    /// Items the strategy summarized away.
    pub summarized_items: usize,
    /// Items the strategy compacted (masked or truncated).
    pub compacted_items: usize,
    /// Of those, items truncated (not replaced by a stub).
    pub truncated_items: usize,
    /// Items the strategy dropped.
    pub dropped_items: usize,
    /// The findings whose every evidence string occurs in a text of the request as sent (introduced yet or
    /// not).
    pub present: FindingSet,
    /// The findings whose every evidence string occurs in a text of the request as handed to the strategy:
    /// a finding here and not in `present` is one the strategy removed at this step.
    pub present_before: FindingSet,
    /// Tokens of the request as handed in that no strategy may reduce: the reply priming, tool schemas,
    /// unrecorded context, system messages and the first user message (the task).
    pub floor_tokens: usize,
    /// The size the strategy brings a request down to, when it has one
    /// ([`crate::strategy::StrategySpec::budget`]): below `floor_tokens` it cannot work.
    pub budget_tokens: Option<usize>,
    /// Wall-clock time of the strategy's own work, in microseconds (varies between runs).
    pub compute_us: f64,
    /// The error the framework a preset reproduces raises at this call point
    /// ([`crate::strategy::Applied::failure`]): there its run of the episode fails.
    pub failure: Option<String>,
}

/// The answer to one probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// The probe id.
    pub probe: String,
    /// The step it was asked at (`None`: after the last step).
    pub step: Option<usize>,
    /// What the probe is about.
    pub kind: FindingKind,
    /// Whether the answer contains an accepted answer.
    pub correct: bool,
    /// The answer.
    pub answer: String,
    /// Whether the judge was asked to grade it (an open probe).
    #[serde(default)]
    pub judged: bool,
    /// The judge's grades, when it gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grades: Option<crate::llm::judge::Grades>,
}

/// The replay of one episode under one strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeReplay {
    /// The episode id.
    pub episode: String,
    /// The episode's source.
    pub source: String,
    /// The strategy's report name.
    pub strategy: String,
    /// Items in the episode.
    pub items: usize,
    /// One record per call point.
    pub steps: Vec<StepRecord>,
    /// One record per probe.
    pub probes: Vec<ProbeRecord>,
    /// Every LLM call made, in order.
    pub calls: Vec<super::calls::CallRecord>,
}
