//! Replay: feed an episode's items into a live request, let a strategy reduce it at every call point, and
//! record one [`StepRecord`] per call point.
//!
//! Semantics (see DESIGN.md): items arrive in recorded order; a call point is each place where the recorded
//! agent called its LLM, just before an assistant turn; the strategy's reduction persists; the recorded
//! assistant turn is appended whatever the strategy did (open-loop replay). When items follow the last
//! assistant turn (a tool result, a user message), the agent would call its LLM again, so the end of the
//! episode is a call point too.
//!
//! Cost per step is linear in the size of the live request: each item is hashed once per step and its token
//! count and evidence set come from caches, so an item is tokenized and searched once per run.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use rustc_hash::FxBuildHasher;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::history::{normalize, Episode, FindingKind, Item, ItemKind, Role};
use crate::llm::{Llm, LlmRequest};
use crate::strategy::{NamedStrategy, ReplayState};
use crate::tokens::{instruction_hash, item_hash, Tokenizer, TOKENS_PER_MESSAGE, TOKENS_PER_REPLY};

/// What happened at one call point of one episode under one strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Tokens of the sent request's prefix that equals the previous request (priced as cached input).
    pub cached_tokens: usize,
    /// Tokens of the recorded assistant turn that answered this call.
    pub output_tokens: usize,
    /// Tokens sent, by item kind (`ItemKind::ALL` order; the reply priming is in none).
    pub tokens_by_kind: [usize; 6],
    /// LLM calls the strategy made.
    pub strategy_calls: usize,
    /// Of those, calls that failed.
    pub strategy_failures: usize,
    /// Prompt tokens of the strategy's calls.
    pub strategy_input_tokens: u64,
    /// Completion tokens of the strategy's calls.
    pub strategy_output_tokens: u64,
    /// LLM latency of the strategy's calls, in milliseconds (real or modelled).
    pub strategy_llm_ms: f64,
    /// Items the strategy summarized away.
    pub summarized_items: usize,
    /// Items the strategy compacted.
    pub compacted_items: usize,
    /// Items the strategy dropped.
    pub dropped_items: usize,
    /// Findings introduced before this call point.
    pub findings_introduced: usize,
    /// Of those, findings retained in the request as sent.
    pub findings_retained: usize,
    /// (introduced, retained) per finding kind, in `FindingKind::ALL` order.
    pub retention_by_kind: [(usize, usize); 4],
    /// Whether the request as sent exceeds the context window.
    pub over_window: bool,
    /// Wall-clock time of the strategy's own work, in microseconds (varies between runs).
    #[serde(skip)]
    pub compute_us: f64,
}

/// The answer to one probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// The replay of one episode under one strategy.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// Per-episode index of evidence strings, with a per-item cache of which evidence each item contains.
struct Evidence {
    needles: Vec<String>,
    /// All needles at once, leftmost-longest (so that the automaton's fast prefilter applies), searched again
    /// from just after each match's start: with `contained`, it finds every needle that occurs. A contiguous
    /// NFA, not a DFA: it searches only the texts `pieces` lets through, so on the bundled dataset it halves
    /// this constructor's instructions for 3% more in the search.
    matcher: Option<aho_corasick::AhoCorasick>,
    /// For each needle, the needles it contains (itself included), as bits: a needle hidden inside a longer
    /// one that matched at the same place counts too.
    contained: Vec<Vec<u64>>,
    /// The longest space-free piece of each needle (lower case, as needles are), when every needle is ASCII: an
    /// ASCII text whose lower-cased bytes hold none of them holds no needle (normalizing only lower-cases and
    /// folds white space), so it is not normalized. Most texts hold no evidence. Each piece is looked for on
    /// its own with a vectorized substring search (an episode has a few): over the bundled dataset's texts
    /// that is faster than one ASCII case-insensitive automaton, which has no vectorized prefilter.
    pieces: Option<Vec<memchr::memmem::Finder<'static>>>,
    /// Scratch space: the lower-cased text.
    lowered: Vec<u8>,
    /// For each finding: its needle indices, kind and introduced_at.
    findings: Vec<(Vec<usize>, FindingKind, usize)>,
    words: usize,
    cache: HashMap<u128, Vec<u64>, FxBuildHasher>,
}

impl Evidence {
    fn new(episode: &Episode) -> Self {
        let mut needles: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let findings = episode
            .findings
            .iter()
            .map(|f| {
                let ids = f
                    .evidence
                    .iter()
                    .map(|e| {
                        let n = normalize(e);
                        *index.entry(n.clone()).or_insert_with(|| {
                            needles.push(n);
                            needles.len() - 1
                        })
                    })
                    .collect();
                (ids, f.kind, f.introduced_at)
            })
            .collect();
        let words = needles.len().div_ceil(64);
        let contained = needles
            .iter()
            .map(|outer| {
                let mut bits = vec![0u64; words];
                for (j, inner) in needles.iter().enumerate() {
                    if outer.contains(inner.as_str()) {
                        set_bit(&mut bits, j);
                    }
                }
                bits
            })
            .collect();
        // Built from a few short strings: neither automaton can exceed its limits.
        let matcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&needles)
            .ok();
        let pieces = needles
            .iter()
            .map(|n| {
                n.split(' ')
                    .filter(|p| !p.is_empty())
                    .max_by_key(|p| p.len())
                    .filter(|p| p.is_ascii())
            })
            .collect::<Option<Vec<&str>>>()
            .map(|mut pieces| {
                pieces.sort_unstable();
                pieces.dedup();
                pieces
                    .into_iter()
                    .map(|p| memchr::memmem::Finder::new(p).into_owned())
                    .collect()
            });
        Self {
            needles,
            matcher,
            contained,
            pieces,
            lowered: Vec::new(),
            findings,
            words,
            cache: HashMap::default(),
        }
    }

    /// ORs into `acc` the evidence that `text` (keyed by `key`) contains.
    fn add<'t>(&mut self, key: u128, text: impl FnOnce() -> Cow<'t, str>, acc: &mut [u64]) {
        if self.needles.is_empty() {
            return;
        }
        let Self {
            needles,
            matcher,
            contained,
            pieces,
            lowered,
            words,
            cache,
            ..
        } = self;
        let bits = cache.entry(key).or_insert_with(|| {
            let mut bits = vec![0u64; *words];
            let raw = text();
            if let Some(pieces) = pieces {
                if raw.is_ascii() {
                    lowered.clear();
                    lowered.extend_from_slice(raw.as_bytes());
                    lowered.make_ascii_lowercase();
                    if !pieces.iter().any(|p| p.find(lowered).is_some()) {
                        return bits;
                    }
                }
            }
            let hay = normalize(&raw);
            match matcher {
                Some(m) => {
                    let mut at = 0;
                    // (`at` passes the end only after an empty needle matched there.)
                    while let Some(found) = (at <= hay.len())
                        .then(|| m.find(aho_corasick::Input::new(&hay).span(at..hay.len())))
                        .flatten()
                    {
                        for (b, c) in bits.iter_mut().zip(&contained[found.pattern().as_usize()]) {
                            *b |= c;
                        }
                        at = found.start() + 1;
                    }
                }
                None => {
                    for (i, n) in needles.iter().enumerate() {
                        if hay.contains(n.as_str()) {
                            set_bit(&mut bits, i);
                        }
                    }
                }
            }
            bits
        });
        for (a, b) in acc.iter_mut().zip(bits.iter()) {
            *a |= b;
        }
    }
}

/// Sets bit `i` of a bit set held as 64-bit words.
fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// Whether bit `i` of a bit set held as 64-bit words is set.
fn has_bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

/// The pass over the request as sent, kept from one call point to the next so that only what changed is
/// visited again: per instruction and item its hash and tokens, and after each one the running tokens by kind
/// and the evidence found so far (so that dropping a suffix is a truncation).
struct Pass {
    entries: Vec<(u128, usize)>,
    /// `kinds[i]`: tokens by kind of the first `i` entries.
    kinds: Vec<[usize; 6]>,
    /// `words` evidence bits per prefix, flat: prefix `i` at `i * words`.
    acc: Vec<u64>,
    words: usize,
    /// How many entries are instructions.
    instructions: usize,
}

impl Pass {
    fn new(words: usize) -> Self {
        Self {
            entries: Vec::new(),
            kinds: vec![[0; 6]],
            acc: vec![0; words],
            words,
            instructions: 0,
        }
    }

    /// Keeps the first `keep` entries and returns the others.
    fn truncate(&mut self, keep: usize) -> Vec<(u128, usize)> {
        let rest = self.entries.split_off(keep);
        self.kinds.truncate(keep + 1);
        self.acc.truncate((keep + 1) * self.words);
        self.instructions = self.instructions.min(keep);
        rest
    }

    fn push<'t>(
        &mut self,
        key: u128,
        tokens: usize,
        kind: ItemKind,
        evidence: &mut Evidence,
        text: impl FnOnce() -> Cow<'t, str>,
    ) {
        let mut kinds = self.kinds[self.kinds.len() - 1];
        kinds[kind as usize] += tokens;
        self.kinds.push(kinds);
        let last = self.acc.len() - self.words;
        self.acc.extend_from_within(last..);
        let now = self.acc.len() - self.words;
        evidence.add(key, text, &mut self.acc[now..]);
        self.entries.push((key, tokens));
    }

    fn tokens_at(&self, i: usize) -> usize {
        self.kinds[i].iter().sum()
    }

    fn by_kind(&self) -> [usize; 6] {
        self.kinds[self.kinds.len() - 1]
    }

    fn evidence(&self) -> &[u64] {
        &self.acc[self.acc.len() - self.words..]
    }
}

/// Replays episodes through strategies with one LLM and one tokenizer.
pub struct Replayer<'a> {
    tokenizer: Arc<Tokenizer>,
    llm: &'a dyn Llm,
    context_window: usize,
}

impl<'a> Replayer<'a> {
    /// A replayer for a model with `context_window` tokens.
    pub fn new(tokenizer: Arc<Tokenizer>, llm: &'a dyn Llm, context_window: usize) -> Self {
        Self {
            tokenizer,
            llm,
            context_window,
        }
    }

    /// Replays `episode` under every strategy, in order, sharing the episode's evidence cache.
    ///
    /// # Errors
    /// A strategy's harness fault, naming the episode and strategy.
    pub async fn replay_all(
        &self,
        episode: &Episode,
        strategies: &[NamedStrategy],
    ) -> Result<Vec<EpisodeReplay>> {
        self.expect_questions(episode);
        let mut evidence = Evidence::new(episode);
        let keys = self.item_keys(episode);
        let mut out = Vec::with_capacity(strategies.len());
        for s in strategies {
            out.push(self.replay_with(episode, s, &keys, &mut evidence).await?);
        }
        Ok(out)
    }

    /// Replays `episode` under one strategy.
    ///
    /// # Errors
    /// As [`Replayer::replay_all`].
    pub async fn replay(
        &self,
        episode: &Episode,
        strategy: &NamedStrategy,
    ) -> Result<EpisodeReplay> {
        self.expect_questions(episode);
        let keys = self.item_keys(episode);
        self.replay_with(episode, strategy, &keys, &mut Evidence::new(episode))
            .await
    }

    fn item_keys(&self, episode: &Episode) -> ItemKeys {
        let hashes: Vec<u128> = episode.items.iter().map(item_hash).collect();
        let tokens = episode
            .items
            .iter()
            .zip(&hashes)
            .map(|(item, &key)| self.tokenizer.count_item_hashed(key, item))
            .collect();
        ItemKeys { hashes, tokens }
    }

    /// Tells the LLM which questions the episode's probes ask.
    fn expect_questions(&self, episode: &Episode) {
        let questions: Vec<&str> = episode.probes.iter().map(|p| p.question.as_str()).collect();
        self.llm.expect_questions(&questions);
    }

    #[allow(clippy::too_many_lines)] // one loop that reads best in one piece
    async fn replay_with(
        &self,
        episode: &Episode,
        named: &NamedStrategy,
        item_keys: &ItemKeys,
        evidence: &mut Evidence,
    ) -> Result<EpisodeReplay> {
        let mut strategy = named.config.build();
        let items = &episode.items;
        let mut points = crate::history::call_points(items);
        let last_turn_end = points.last().map_or(0, |&cp| turn_end(items, cp));
        if points.is_empty() || last_turn_end < items.len() {
            points.push(items.len());
        }
        let mut probes: Vec<&crate::history::Probe> = episode.probes.iter().collect();
        probes.sort_by_key(|p| p.after_item);
        let mut next_probe = 0;
        let mut probe_records = Vec::new();

        let mut live = LlmRequest::default();
        let mut next = 0usize;
        // What the request costs as the last step sent it: at first an empty request, the reply priming alone.
        let mut prev_sent = TOKENS_PER_REPLY;
        let mut pass = Pass::new(evidence.words);
        // Contents covered by `pass`.
        let mut counted = 0usize;
        // The episode item that follows them, while the request is unchanged.
        let mut counted_at = 0usize;
        // Tokens of each item of `live.contents`, for the strategies (`ReplayState::content_tokens`): kept in
        // step with the pass, so it costs O(what changed) per step.
        let mut content_tokens: Arc<Vec<usize>> = Arc::default();
        let mut steps = Vec::with_capacity(points.len());
        for (step, &cp) in points.iter().enumerate() {
            // The live request is as the last step sent it (`tokens_sent`) plus the new items.
            let known = Arc::make_mut(&mut content_tokens);
            let new_from = known.len();
            known.extend_from_slice(&item_keys.tokens[next..cp]);
            let tokens_before = prev_sent + known[new_from..].iter().sum::<usize>();
            live.contents.extend_from_slice(&items[next..cp]);
            let state = ReplayState {
                tokenizer: Arc::clone(&self.tokenizer),
                context_window: self.context_window,
                step,
                input_tokens: Some(tokens_before),
                content_tokens: Some(Arc::clone(&content_tokens)),
            };
            let started = Instant::now();
            let applied = strategy
                .apply(&state, &mut live, self.llm)
                .await
                .map_err(|e| Error::Strategy {
                    strategy: named.name.clone(),
                    message: format!("episode '{}', step {step}: {e}", episode.id),
                })?;
            let compute_us = started.elapsed().as_secs_f64() * 1e6;
            // The strategy holds no copy of it any more: `content_tokens` is updated in place below.
            drop(state);

            // The pass over the request as sent: tokens, kinds, cached prefix, evidence. What the strategy
            // left as it was keeps its entries from the last step; only the rest is visited again, so an
            // unchanged history costs O(new items) per step and compaction O(items after its first edit).
            // What the replay knows of the j-th content item handed to the strategy: its hash and tokens.
            let handed_in = counted + (cp - counted_at);
            let handed = |j: usize| {
                let key = if j < counted {
                    pass.entries[pass.instructions + j].0
                } else {
                    item_keys.hashes[counted_at + j - counted]
                };
                (key, content_tokens[j])
            };
            // The items kept as handed in, when that is known: the first `p` in place, then the others in order
            // (`retained`), pushed again without being read. An unchanged request keeps all of them; a strategy
            // that only dropped items says which.
            let reused = if step == 0 {
                None
            } else if !applied.changed {
                Some((
                    counted,
                    (counted..handed_in).map(handed).collect::<Vec<_>>(),
                ))
            } else {
                applied
                    .kept_items
                    .as_ref()
                    .filter(|k| {
                        k.len() == handed_in && live.instructions.len() == pass.instructions
                    })
                    .map(|kept| {
                        let p = kept.iter().take_while(|&&k| k).count().min(counted);
                        (p, (p..handed_in).filter(|&j| kept[j]).map(handed).collect())
                    })
            }
            .filter(|(p, retained)| p + retained.len() == live.contents.len());
            let kept_items = match &reused {
                Some((p, _)) => Some(*p),
                None => applied
                    .kept_prefix
                    .filter(|_| step > 0 && live.instructions.len() == pass.instructions)
                    .map(|p| p.min(counted)),
            };
            let keep = kept_items.map_or(0, |k| pass.instructions + k);
            let base = pass.tokens_at(keep);
            let previous = pass.truncate(keep);
            if kept_items.is_none() {
                for text in &live.instructions {
                    let key = instruction_hash(text);
                    let n = self.tokenizer.count_instruction_hashed(key, text);
                    pass.push(key, n, ItemKind::Summary, evidence, || text.into());
                }
                pass.instructions = live.instructions.len();
            }
            let from = kept_items.unwrap_or(0);
            for (i, item) in live.contents[from..].iter().enumerate() {
                let (key, n) = match &reused {
                    Some((_, retained)) => retained[i],
                    None => {
                        let key = item_hash(item);
                        (key, self.tokenizer.count_item_hashed(key, item))
                    }
                };
                debug_assert_eq!(key, item_hash(item), "step {step}, item {}", from + i);
                debug_assert_eq!(
                    n,
                    self.tokenizer.count_item(item),
                    "step {step}, item {}",
                    from + i
                );
                pass.push(key, n, item.kind(), evidence, || item.searchable());
            }
            let known = Arc::make_mut(&mut content_tokens);
            known.truncate(from);
            known.extend(pass.entries[pass.instructions + from..].iter().map(|e| e.1));
            counted = live.contents.len();
            counted_at = cp;
            let tokens_sent = TOKENS_PER_REPLY + pass.tokens_at(pass.entries.len());
            prev_sent = tokens_sent;
            let cached_tokens = base
                + pass.entries[keep..]
                    .iter()
                    .zip(&previous)
                    .take_while(|(a, b)| a.0 == b.0)
                    .map(|(a, _)| a.1)
                    .sum::<usize>();
            let by_kind = pass.by_kind();
            let acc = pass.evidence();

            let mut by_finding_kind = [(0usize, 0usize); 4];
            for (needles, kind, introduced_at) in &evidence.findings {
                if *introduced_at >= cp {
                    continue;
                }
                let k = FindingKind::ALL.iter().position(|x| x == kind).unwrap_or(0);
                by_finding_kind[k].0 += 1;
                if needles.iter().all(|&i| has_bit(acc, i)) {
                    by_finding_kind[k].1 += 1;
                }
            }

            if next_probe < probes.len() && probes[next_probe].after_item < cp {
                // The pass holds the hash of every text of the request as sent.
                let keys: Vec<u128> = pass.entries.iter().map(|e| e.0).collect();
                while next_probe < probes.len() && probes[next_probe].after_item < cp {
                    let probe = probes[next_probe];
                    probe_records.push(self.ask(&mut live, probe, Some(step), &keys).await);
                    next_probe += 1;
                }
            }

            let end = if cp < items.len() {
                turn_end(items, cp)
            } else {
                cp
            };
            let turn = &item_keys.tokens[cp..end];
            let output_tokens = turn
                .iter()
                .map(|n| n.saturating_sub(TOKENS_PER_MESSAGE))
                .sum();
            prev_sent += turn.iter().sum::<usize>();
            Arc::make_mut(&mut content_tokens).extend_from_slice(turn);
            live.contents.extend_from_slice(&items[cp..end]);
            next = end;

            steps.push(StepRecord {
                step,
                item_index: cp,
                items_sent: live.contents.len() - (end - cp),
                instructions_sent: live.instructions.len(),
                tokens_before,
                tokens_sent,
                cached_tokens,
                output_tokens,
                tokens_by_kind: by_kind,
                strategy_calls: applied.llm_calls.len(),
                strategy_failures: applied.failures(),
                strategy_input_tokens: applied.llm_calls.iter().map(|c| c.input_tokens).sum(),
                strategy_output_tokens: applied.llm_calls.iter().map(|c| c.output_tokens).sum(),
                strategy_llm_ms: crate::metrics::total(
                    applied.llm_calls.iter().map(|c| c.latency_ms),
                ),
                summarized_items: applied.summarized_items,
                compacted_items: applied.compacted_items,
                dropped_items: applied.dropped_items,
                findings_introduced: by_finding_kind.iter().map(|k| k.0).sum(),
                findings_retained: by_finding_kind.iter().map(|k| k.1).sum(),
                retention_by_kind: by_finding_kind,
                over_window: tokens_sent > self.context_window,
                compute_us,
            });
        }
        if next_probe < probes.len() {
            // The request as last sent, then the last turn's items.
            let keys: Vec<u128> = pass
                .entries
                .iter()
                .map(|e| e.0)
                .chain(item_keys.hashes[counted_at..next].iter().copied())
                .collect();
            for probe in &probes[next_probe..] {
                probe_records.push(self.ask(&mut live, probe, None, &keys).await);
            }
        }
        Ok(EpisodeReplay {
            episode: episode.id.clone(),
            source: episode.source.clone(),
            strategy: named.name.clone(),
            items: items.len(),
            steps,
            probes: probe_records,
        })
    }

    /// Asks one probe against the live request; a failed call counts as a wrong answer.
    async fn ask(
        &self,
        live: &mut LlmRequest,
        probe: &crate::history::Probe,
        step: Option<usize>,
        keys: &[u128],
    ) -> ProbeRecord {
        // The question goes on the live request for the call and comes off again: no copy of the history.
        live.contents
            .push(Item::message(Role::User, probe.question.clone()));
        debug_assert_eq!(
            keys.len(),
            live.instructions.len() + live.contents.len() - 1
        );
        let answer = match self.llm.generate_text(live, Some(keys)).await {
            Ok(text) => text,
            Err(e) => format!("(probe call failed: {e})"),
        };
        live.contents.pop();
        let got = normalize(&answer);
        let correct = probe
            .answers
            .iter()
            .map(|a| normalize(a))
            .any(|a| !a.is_empty() && got.contains(&a));
        ProbeRecord {
            probe: probe.id.clone(),
            step,
            kind: probe.kind,
            correct,
            answer,
        }
    }
}

/// The [`item_hash`] of each of the episode's items, computed once for every strategy.
/// Each item of an episode's content hash and token count, computed once and shared by the episode's
/// strategies: an item is tokenized at most once per episode, whatever the tokenizer's cache still holds.
struct ItemKeys {
    hashes: Vec<u128>,
    tokens: Vec<usize>,
}

/// The index just past the assistant turn starting at `start`.
fn turn_end(items: &[Item], start: usize) -> usize {
    items[start..]
        .iter()
        .position(|i| !i.is_assistant_turn())
        .map_or(items.len(), |n| start + n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Finding, Probe};
    use crate::llm::mock::{MockConfig, MockLlm};
    use crate::strategy::StrategyConfig;

    pub(crate) fn episode() -> Episode {
        let mut items = vec![
            Item::system("You are a coding agent."),
            Item::user("Fix the failing test."),
        ];
        for i in 0..12 {
            items.push(Item::assistant(format!("Step {i}: running the tests.")));
            items.push(Item::tool_call(format!("c{i}"), "run_tests", "{}"));
            let mut out = format!(
                "collected 40 items\n{}",
                "PASSED tests/test_misc.py\n".repeat(60)
            );
            if i == 2 {
                out.push_str(
                    "FAILED tests/test_dates.py::test_leap - AssertionError: expected 2024-02-29\n",
                );
            }
            items.push(Item::tool_result(format!("c{i}"), "run_tests", out));
        }
        items.push(Item::assistant("Fixed the leap year bug in src/dates.py."));
        Episode {
            id: "ep".into(),
            source: "test".into(),
            task: "fix".into(),
            items,
            findings: vec![Finding {
                id: "f1".into(),
                text: "leap test fails".into(),
                evidence: vec!["AssertionError: expected 2024-02-29".into()],
                introduced_at: 10,
                kind: FindingKind::Recall,
            }],
            probes: vec![Probe {
                id: "p1".into(),
                after_item: 30,
                question: "Which test in test_dates.py failed with an AssertionError?".into(),
                answers: vec!["test_leap".into()],
                finding: Some("f1".into()),
                kind: FindingKind::Recall,
            }],
            meta: serde_json::Map::new(),
        }
    }

    fn replay(strategies: &[NamedStrategy]) -> Vec<EpisodeReplay> {
        let tok = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
        let r = Replayer::new(tok, &llm, 4000);
        pollster::block_on(r.replay_all(&episode(), strategies)).unwrap()
    }

    #[test]
    fn baseline_keeps_everything_and_caches_the_prefix() {
        let out = replay(&[NamedStrategy::new("none", StrategyConfig::None)]);
        let steps = &out[0].steps;
        assert_eq!(steps.len(), 13);
        for w in steps.windows(2) {
            assert!(w[1].tokens_sent > w[0].tokens_sent);
            // The previous request is a prefix of the next one.
            assert_eq!(w[1].cached_tokens, w[0].tokens_sent - TOKENS_PER_REPLY);
        }
        assert!(steps
            .iter()
            .all(|s| s.findings_retained == s.findings_introduced));
        assert_eq!(steps.last().unwrap().findings_introduced, 1);
        assert!(out[0].probes[0].correct, "{:?}", out[0].probes);
    }

    #[test]
    fn strategies_differ() {
        let out = replay(&[
            NamedStrategy::new("none", StrategyConfig::None),
            NamedStrategy::new(
                "window",
                StrategyConfig::SlidingWindow(crate::strategy::SlidingWindowConfig {
                    max_tokens: Some(1500),
                    max_items: None,
                    ..crate::strategy::SlidingWindowConfig::default()
                }),
            ),
            NamedStrategy::new(
                "compaction",
                StrategyConfig::Compaction(crate::strategy::CompactionConfig::default()),
            ),
        ]);
        let totals: Vec<usize> = out
            .iter()
            .map(|r| r.steps.iter().map(|s| s.tokens_sent).sum())
            .collect();
        assert!(totals[1] < totals[0] && totals[2] < totals[0], "{totals:?}");
        // Compaction masks the old failing output: the finding is no longer retained at the end.
        let last = out[2].steps.last().unwrap();
        assert_eq!((last.findings_introduced, last.findings_retained), (1, 0));
    }

    /// Which needles `text` holds, by the definition: each normalized needle searched in the normalized text.
    fn naive_evidence(needles: &[String], text: &str) -> Vec<bool> {
        let hay = normalize(text);
        needles
            .iter()
            .map(|n| hay.contains(normalize(n).as_str()))
            .collect()
    }

    fn found_evidence(needles: &[String], text: &str) -> Vec<bool> {
        let mut ep = episode();
        ep.findings = needles
            .iter()
            .enumerate()
            .map(|(i, n)| Finding {
                id: format!("f{i}"),
                text: n.clone(),
                evidence: vec![n.clone()],
                introduced_at: 0,
                kind: FindingKind::Recall,
            })
            .collect();
        let mut evidence = Evidence::new(&ep);
        let mut acc = vec![0u64; evidence.words];
        evidence.add(1, || text.into(), &mut acc);
        // Each finding's needle, by index (equal needles share one).
        evidence
            .findings
            .iter()
            .map(|(ids, _, _)| has_bit(&acc, ids[0]))
            .collect()
    }

    #[test]
    fn evidence_search_finds_nested_and_overlapping_needles() {
        // With a non-ASCII needle, every text is normalized; with ASCII needles only, a text without any
        // needle's longest piece is skipped.
        for needles in [
            vec![
                "4200",
                "42",
                "ab c",
                "c de",
                "Status:  OK",
                "café",
                "x y",
                "ki",
                // Blank: the validator refuses it, but a library caller may not validate.
                " ",
            ],
            vec!["4200", "42", "ab c", "c de", "Status:  OK", "x y", "ki"],
        ] {
            let needles: Vec<String> = needles.into_iter().map(String::from).collect();
            for text in [
                "total 4200 rows",
                "ab   c\nDE",
                "STATUS: ok; Café",
                "x\t\ty",
                "nothing here",
                // Lower-cased, a non-ASCII letter can become ASCII: the Kelvin sign, a dotted capital I.
                "\u{212A}ING",
                "KİND",
                "",
            ] {
                assert_eq!(
                    found_evidence(&needles, text),
                    naive_evidence(&needles, text),
                    "{needles:?} in {text:?}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn evidence_search_equals_the_definition(
            needles in proptest::collection::vec("[aAb c\n]{1,4}", 1..6),
            text in "[aAbB c\n\té]{0,40}",
        ) {
            let needles: Vec<String> =
                needles.into_iter().filter(|n| !normalize(n).is_empty()).collect();
            proptest::prop_assume!(!needles.is_empty());
            proptest::prop_assert_eq!(
                found_evidence(&needles, &text),
                naive_evidence(&needles, &text)
            );
        }
    }
}
