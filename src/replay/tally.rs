//! The replay's incremental bookkeeping: what it knows of the live request from one call point to the next,
//! so that each step visits only what changed.
//!
//! The [`Tally`] keeps a pass over the request as last sent (per instruction and item: its content hash and
//! tokens, and after each one the running tokens by kind and the evidence found so far), and the tokens of
//! each content item of the live request. At the next call point the strategy's [`Change`] says how much of
//! that still holds: an unchanged request costs O(new items), a request that only lost items reuses what it
//! knew of the others, a rewrite keeps its untouched prefix, and anything else is counted again. A change the
//! replay cannot square with the request (a mask of the wrong length, instructions added under `Dropped`) is
//! counted again too: the fast path is taken only where it is known to hold. Every figure this produces is
//! checked against a plain recount by [`super::reference`].

use std::sync::Arc;

use super::evidence::Evidence;
use super::record::{FindingSet, TokensByKind};
use super::Block;
use crate::history::{Item, ItemKind};
use crate::llm::LlmRequest;
use crate::strategy::Change;
use crate::tokens::{instruction_hash, item_hash, Tokenizer};

/// Each item of an episode's content hash and token count, computed once and shared by the episode's
/// strategies: an item is tokenized at most once per episode, whatever the tokenizer's cache still holds.
pub(super) struct ItemKeys {
    pub(super) hashes: Vec<u128>,
    pub(super) tokens: Vec<usize>,
}

impl ItemKeys {
    pub(super) fn new(items: &[Item], tokenizer: &Tokenizer) -> Self {
        let hashes: Vec<u128> = items.iter().map(item_hash).collect();
        let tokens = items
            .iter()
            .zip(&hashes)
            .map(|(item, &key)| tokenizer.count_item_hashed(key, item))
            .collect();
        Self { hashes, tokens }
    }
}

/// The pass over a request: per entry (instruction or item) its hash and tokens, and after each entry the
/// running tokens by kind and the evidence found so far (so that dropping a suffix is a truncation).
struct Pass {
    entries: Vec<(u128, usize)>,
    /// `kinds[i]`: tokens by kind of the first `i` entries.
    kinds: Vec<TokensByKind>,
    /// `words` evidence bits per prefix, flat: prefix `i` at `i * words`.
    acc: Vec<u64>,
    words: usize,
    /// How many entries are instructions.
    instructions: usize,
}

/// The evidence of the request last sent with `items` (keyed by `hashes`) appended.
fn handed_in_evidence(
    pass: &Pass,
    items: &[Item],
    hashes: &[u128],
    evidence: &mut Evidence,
) -> Vec<u64> {
    let mut held = pass.evidence().to_vec();
    for (item, &key) in items.iter().zip(hashes) {
        evidence.add_item(key, item, &mut held);
    }
    held
}

/// The items kept as handed in, when the change says which: the first `p` in place, then the others in
/// order (`retained`, each with its hash and tokens from `handed`), pushed again without being read.
fn reused(
    change: &Change,
    counted: usize,
    handed_in: usize,
    handed: impl Fn(usize) -> (u128, usize),
) -> Option<(usize, Vec<(u128, usize)>)> {
    match change {
        Change::Unchanged => Some((counted, (counted..handed_in).map(handed).collect())),
        Change::Dropped(kept) if kept.len() == handed_in => {
            let p = kept.iter().take_while(|&&k| k).count().min(counted);
            Some((p, (p..handed_in).filter(|&j| kept[j]).map(handed).collect()))
        }
        _ => None,
    }
}

impl Pass {
    fn new(words: usize) -> Self {
        Self {
            entries: Vec::new(),
            kinds: vec![TokensByKind::default()],
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

    fn push(
        &mut self,
        key: u128,
        tokens: usize,
        kind: ItemKind,
        text: Entry<'_>,
        evidence: &mut Evidence,
    ) {
        let mut kinds = self.kinds[self.kinds.len() - 1];
        kinds.add(kind, tokens);
        self.kinds.push(kinds);
        let last = self.acc.len() - self.words;
        self.acc.extend_from_within(last..);
        let now = self.acc.len() - self.words;
        let acc = &mut self.acc[now..];
        match text {
            Entry::Instruction(text) => evidence.add_instruction(key, text, acc),
            Entry::Item(item) => evidence.add_item(key, item, acc),
        }
        self.entries.push((key, tokens));
    }

    /// Pushes what is not known of the request as sent: its instructions, unless the items before them were
    /// kept (`kept_items`), and its items after the kept ones, those `retained` with their known hash and
    /// tokens, the others hashed and counted.
    fn push_sent(
        &mut self,
        live: &LlmRequest,
        kept_items: Option<usize>,
        retained: Option<&Vec<(u128, usize)>>,
        tokenizer: &Tokenizer,
        evidence: &mut Evidence,
    ) {
        if kept_items.is_none() {
            for text in &live.instructions {
                let key = instruction_hash(text);
                let n = tokenizer.count_instruction_hashed(key, text);
                self.push(
                    key,
                    n,
                    ItemKind::Summary,
                    Entry::Instruction(text),
                    evidence,
                );
            }
            self.instructions = live.instructions.len();
        }
        let from = kept_items.unwrap_or(0);
        for (i, item) in live.contents[from..].iter().enumerate() {
            let (key, n) = match retained {
                Some(retained) => retained[i],
                None => {
                    let key = item_hash(item);
                    (key, tokenizer.count_item_hashed(key, item))
                }
            };
            self.push(key, n, item.kind(), Entry::Item(item), evidence);
        }
    }

    /// Tokens of the entries after the first `keep` that are as they were in `previous` (the entries the
    /// last request had there), up to the first that is not: the rest of a cached prefix.
    fn shared_after(&self, keep: usize, previous: &[(u128, usize)]) -> usize {
        self.entries[keep..]
            .iter()
            .zip(previous)
            .take_while(|(a, b)| a.0 == b.0)
            .map(|(a, _)| a.1)
            .sum()
    }

    fn tokens_at(&self, i: usize) -> usize {
        self.kinds[i].total()
    }

    fn by_kind(&self) -> TokensByKind {
        self.kinds[self.kinds.len() - 1]
    }

    fn evidence(&self) -> &[u64] {
        &self.acc[self.acc.len() - self.words..]
    }
}

/// An entry of a request, as the evidence index reads it.
enum Entry<'t> {
    /// An instruction.
    Instruction(&'t str),
    /// A content item.
    Item(&'t Item),
}

/// The tokens an episode's tool schemas add to each request, which depend on its first system message
/// ([`Tokenizer::tools_in_request`]); the last answer is kept, as that message seldom changes.
pub(super) struct ToolTokens {
    /// The schemas' own tokens (0 without tools).
    base: usize,
    /// The last first system message seen (by content hash, 0 for none) and the tokens it gave.
    last: Option<(u128, usize)>,
}

impl ToolTokens {
    pub(super) fn new(base: usize) -> Self {
        Self { base, last: None }
    }

    /// The tools' tokens in `req`, and the key of the first system message they depend on.
    pub(super) fn of(&mut self, req: &LlmRequest, tokenizer: &Tokenizer) -> (usize, u128) {
        if self.base == 0 {
            return (0, 0);
        }
        let first = first_system(req);
        let key = first.map_or(0, |t| instruction_hash(t) | 1);
        match self.last {
            Some((k, n)) if k == key => (n, key),
            _ => {
                let n = tokenizer.tools_in_request(self.base, first);
                self.last = Some((key, n));
                (n, key)
            }
        }
    }
}

/// The first system message of a request: its first instruction, or its first system item.
pub(super) fn first_system(req: &LlmRequest) -> Option<&str> {
    req.instructions.first().map(String::as_str).or_else(|| {
        req.contents
            .iter()
            .find(|i| i.is_role(crate::history::Role::System))
            .map(Item::text)
    })
}

/// Of a call point's unrecorded context `block` (sent in front of the request), given the size of the one
/// sent at the call point before (`None` at the first): its tokens, those read from the prompt cache, and
/// whether the prefix after it can be read from the cache too. The trace's own figure holds where it records
/// one (Claude Code's cache reads): the block is intact when all of it was read. Else a block of the size sent
/// before is taken as the same context, wholly cached, and any other as new, which nothing after it can follow
/// into the cache. Without blocks (size 0 throughout) every call point but the first is intact: the prefix
/// rule is the one of a request without them.
pub(crate) fn cached_block((tokens, cached): Block, before: Option<usize>) -> (usize, usize, bool) {
    let same = before == Some(tokens);
    match cached {
        Some(read) if tokens > 0 => {
            let read = read.min(tokens);
            (tokens, read, read == tokens)
        }
        _ => (tokens, if same { tokens } else { 0 }, same),
    }
}

/// What the tally measured of a request as sent.
pub(super) struct Sent {
    pub(super) tokens_sent: usize,
    pub(super) cached_tokens: usize,
    pub(super) tokens_by_kind: TokensByKind,
    pub(super) present: FindingSet,
    /// The findings in the request as handed to the strategy.
    pub(super) present_before: FindingSet,
}

/// What the tally knows of the live request as handed to the strategy.
pub(super) struct Received {
    /// Its tokens, tool schemas included.
    pub(super) tokens: usize,
    /// The tool schemas' share of them.
    pub(super) tool_tokens: usize,
}

/// What the replay knows of the live request; see the module docs.
pub(super) struct Tally {
    pass: Pass,
    /// Tokens of each item of the live request's contents, for the strategies
    /// ([`crate::strategy::CallPoint::content_tokens`]); kept in step with the pass.
    content_tokens: Arc<Vec<usize>>,
    /// Contents covered by the pass.
    counted: usize,
    /// The episode item that follows them.
    counted_at: usize,
    /// Tokens of the request as last sent but its tool schemas', with the recorded turn appended since.
    last: usize,
    /// The tool schemas' tokens in the request as last sent, and the key of what they depended on.
    last_tools: Option<(usize, u128)>,
    tools: ToolTokens,
    /// What every request costs besides its messages (the reply priming).
    reply: usize,
    /// The unrecorded context of the call point being measured, and the size of the one sent before.
    block: Block,
    last_block: Option<usize>,
    /// Where the provider dropped reasoning of earlier turns from the request handed to the strategy at this
    /// call point (a new user message), the evidence of that request: the request is then counted again.
    dropped: Option<Vec<u64>>,
}

impl Tally {
    /// A tally for an episode whose tool schemas take `tools` tokens, counted with `tokenizer`.
    pub(super) fn new(evidence: &Evidence, tools: usize, tokenizer: &Tokenizer) -> Self {
        Self {
            pass: Pass::new(evidence.words),
            content_tokens: Arc::default(),
            counted: 0,
            counted_at: 0,
            // An empty request: the reply priming alone.
            last: tokenizer.reply_tokens(),
            reply: tokenizer.reply_tokens(),
            last_tools: None,
            tools: ToolTokens::new(tools),
            block: (0, None),
            last_block: None,
            dropped: None,
        }
    }

    /// Appends `items` (with their `tokens`) to the live request, which is sent with the unrecorded context
    /// `block` in front; returns what is known of the request as handed to the strategy. Where `items` start
    /// a new turn, the reasoning its provider takes back within a turn only leaves the request first
    /// ([`crate::history::SentBack::Turn`]).
    pub(super) fn receive(
        &mut self,
        live: &mut LlmRequest,
        (items, tokens): (&[Item], &[usize]),
        block: Block,
        tokenizer: &Tokenizer,
        evidence: &mut Evidence,
    ) -> Received {
        let drops = items.iter().any(Item::starts_turn)
            && live.contents.iter().any(Item::is_turn_reasoning);
        if drops {
            self.drop_turn_reasoning(live);
        }
        self.append(live, items, tokens);
        if drops {
            // The evidence of the request as handed to the strategy: the one last sent is no prefix of it.
            let mut held = vec![0; evidence.words];
            for text in &live.instructions {
                evidence.add_instruction(instruction_hash(text), text, &mut held);
            }
            for item in &live.contents {
                evidence.add_item(item_hash(item), item, &mut held);
            }
            self.dropped = Some(held);
        }
        self.block = block;
        let (tools, _) = self.tools.of(live, tokenizer);
        Received {
            tokens: self.last + tools + block.0,
            tool_tokens: tools,
        }
    }

    /// Takes the reasoning of earlier turns out of the live request and of what the tally knows of it.
    fn drop_turn_reasoning(&mut self, live: &mut LlmRequest) {
        let known = Arc::make_mut(&mut self.content_tokens);
        let (mut kept, mut j) = (Vec::with_capacity(known.len()), 0);
        live.contents.retain(|item| {
            let keep = !item.is_turn_reasoning();
            if keep {
                kept.push(known[j]);
            } else {
                self.last -= known[j];
            }
            j += 1;
            keep
        });
        *known = kept;
    }

    fn append(&mut self, live: &mut LlmRequest, items: &[Item], tokens: &[usize]) {
        Arc::make_mut(&mut self.content_tokens).extend_from_slice(tokens);
        live.contents.extend_from_slice(items);
        self.last += tokens.iter().sum::<usize>();
    }

    /// The tokens of each content item of the live request.
    pub(super) fn content_tokens(&self) -> Arc<Vec<usize>> {
        Arc::clone(&self.content_tokens)
    }

    /// Measures the live request as sent at call point `step` (before item `at` of the items as sent,
    /// `sent`), after the strategy declared `change`: revisits only what the change leaves unknown.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send(
        &mut self,
        step: usize,
        (at, sent): (usize, &[Item]),
        live: &LlmRequest,
        change: &Change,
        keys: &ItemKeys,
        tokenizer: &Tokenizer,
        evidence: &mut Evidence,
    ) -> Sent {
        let pass = &mut self.pass;
        let (counted, counted_at) = (self.counted, self.counted_at);
        // Where the provider dropped reasoning before the strategy acted, what was handed in is no longer the
        // request last sent and the items since: the request is counted again.
        let dropped = self.dropped.take();
        let change = if dropped.is_some() {
            &Change::Replaced
        } else {
            change
        };
        // The evidence of the request as handed in (the one last sent, and the items appended since), when
        // the strategy changed it: else it is the evidence of the request as sent.
        let handed_evidence = dropped.or_else(|| {
            (!matches!(change, Change::Unchanged)).then(|| {
                handed_in_evidence(
                    pass,
                    &sent[counted_at..at],
                    &keys.hashes[counted_at..at],
                    evidence,
                )
            })
        });
        // What is known of the j-th content item handed to the strategy: its hash and tokens. Items after the
        // counted ones are the episode's items since `counted_at`, in order.
        let handed_in = counted + (at - counted_at);
        let content_tokens = &self.content_tokens;
        let handed = |j: usize| {
            let key = if j < counted {
                pass.entries[pass.instructions + j].0
            } else {
                keys.hashes[counted_at + j - counted]
            };
            (key, content_tokens[j])
        };
        let same_instructions = step > 0 && live.instructions.len() == pass.instructions;
        let reused = same_instructions
            .then(|| reused(change, counted, handed_in, handed))
            .flatten()
            .filter(|(p, retained)| p + retained.len() == live.contents.len());
        let kept_items = match (&reused, change) {
            (Some((p, _)), _) => Some(*p),
            (None, Change::Rewrote { kept_prefix }) if same_instructions => {
                Some((*kept_prefix).min(counted).min(live.contents.len()))
            }
            _ => None,
        };
        let keep = kept_items.map_or(0, |k| pass.instructions + k);
        let base = pass.tokens_at(keep);
        let previous = pass.truncate(keep);
        pass.push_sent(
            live,
            kept_items,
            reused.as_ref().map(|r| &r.1),
            tokenizer,
            evidence,
        );
        let from = kept_items.unwrap_or(0);
        let known = Arc::make_mut(&mut self.content_tokens);
        known.truncate(from);
        known.extend(pass.entries[pass.instructions + from..].iter().map(|e| e.1));
        self.counted = live.contents.len();
        self.counted_at = at;
        let sent_tokens = self.reply + pass.tokens_at(pass.entries.len());
        self.last = sent_tokens;
        // The tool schemas come first in the prompt: the cached prefix starts with them, and is lost when they
        // changed (or there was no request before).
        let (tools, tools_key) = self.tools.of(live, tokenizer);
        let same_start = self.last_tools.replace((tools, tools_key)) == Some((tools, tools_key));
        // In front of everything, the unrecorded context: what of it was cached, and whether the rest of the
        // prefix can be.
        let (block, block_cached, intact) =
            cached_block(self.block, self.last_block.replace(self.block.0));
        let cached_tokens = block_cached
            + if same_start && intact {
                tools + base + pass.shared_after(keep, &previous)
            } else {
                0
            };
        let mut tokens_by_kind = pass.by_kind();
        tokens_by_kind.add(ItemKind::Tools, tools);
        tokens_by_kind.add(ItemKind::Unrecorded, block);
        let present = evidence.present(pass.evidence());
        Sent {
            tokens_sent: sent_tokens + tools + block,
            cached_tokens,
            tokens_by_kind,
            present_before: handed_evidence
                .map_or_else(|| present.clone(), |e| evidence.present(&e)),
            present,
        }
    }

    /// Appends the recorded assistant turn `items` (with their `tokens`) to the live request; returns the
    /// turn's output tokens (its tokens without the per-message `overhead`).
    pub(super) fn answer(
        &mut self,
        live: &mut LlmRequest,
        items: &[Item],
        tokens: &[usize],
        overhead: usize,
    ) -> usize {
        self.append(live, items, tokens);
        tokens.iter().map(|n| n.saturating_sub(overhead)).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::cached_block;
    use crate::history::{Episode, Item, SentBack};
    use crate::llm::mock::{MockConfig, MockLlm};
    use crate::replay::{reference, Replayer};
    use crate::strategy::{NamedStrategy, StrategyConfig};
    use crate::tokens::Tokenizer;

    /// Two turns, each with reasoning (sent back as `sent_back` says): a task, reasoning R1 and a tool call,
    /// its result, reasoning R2 and an answer; a new user message, reasoning R3 and an answer. Call points
    /// before R1, R2 and R3.
    fn two_turns(sent_back: SentBack) -> Episode {
        let r = |text: &str| Item::Reasoning {
            content: text.into(),
            sent_back,
        };
        Episode {
            id: "e".into(),
            items: vec![
                Item::user("Fix the parser."),
                r("The bug is in parse_list; read it first."),
                Item::tool_call("c1", "bash", r#"{"cmd":"cat parser.py"}"#),
                Item::tool_result("c1", "bash", "def parse_list(s): return s.split(',')"),
                r("Trailing commas give an empty part; keep it."),
                Item::assistant("Fixed parse_list."),
                Item::user("Now the tests."),
                r("Run them."),
                Item::assistant("They pass."),
            ],
            stopped: true,
            ..Episode::default()
        }
    }

    /// Reasoning sent back within its turn is in the requests of its tool-use loop (R1 at the second call),
    /// and leaves with the next user message (neither R1 nor R2 at the third, which is then the request of
    /// reasoning never sent back); sent back always, it stays. The cached prefix at the third call stops where
    /// R1 was. The fast replay equals the reference.
    #[test]
    fn reasoning_goes_back_within_its_turn_and_leaves_at_the_next_user_message() {
        let tok = Tokenizer::shared_default().unwrap();
        let llm = MockLlm::new(MockConfig::default(), Arc::clone(&tok));
        let none = NamedStrategy::new("none", StrategyConfig::None);
        let replay = |s: SentBack| {
            let ep = two_turns(s);
            let fast = Replayer::new(Arc::clone(&tok), &llm, 100_000)
                .replay(&ep, &none)
                .unwrap();
            let plain = reference::replay(&tok, &llm, 100_000, &ep, &none).unwrap();
            let timeless = |steps: Vec<crate::replay::StepRecord>| -> Vec<_> {
                steps
                    .into_iter()
                    .map(|s| crate::replay::StepRecord {
                        compute_us: 0.0,
                        ..s
                    })
                    .collect()
            };
            let steps = timeless(fast.steps);
            assert_eq!(steps, timeless(plain.steps), "{s:?}");
            steps
        };
        let [never, turn, always] = [SentBack::Never, SentBack::Turn, SentBack::Always].map(replay);
        let ep = two_turns(SentBack::Turn);
        let r1 = tok.count_item(&ep.items[1]);
        let r2 = tok.count_item(&ep.items[4]);
        let reasoning = |steps: &[crate::replay::StepRecord]| -> Vec<usize> {
            steps
                .iter()
                .map(|s| s.tokens_by_kind.get(crate::history::ItemKind::Reasoning))
                .collect()
        };
        assert_eq!(reasoning(&never), [0, 0, 0]);
        assert_eq!(reasoning(&turn), [0, r1, 0]);
        assert_eq!(reasoning(&always), [0, r1, r1 + r2]);
        assert_eq!(turn[1].tokens_sent, never[1].tokens_sent + r1);
        assert_eq!(turn[2].tokens_sent, never[2].tokens_sent);
        assert_eq!(always[2].tokens_sent, never[2].tokens_sent + r1 + r2);
        // The second request was the task, R1, the call and its result; the third shares only the task.
        assert_eq!(turn[2].cached_tokens, tok.count_item(&ep.items[0]));
        assert_eq!(
            always[2].cached_tokens,
            always[1].tokens_sent - crate::tokens::TOKENS_PER_REPLY
        );
        // Output: each turn's reasoning is output of its call, whatever comes back.
        for steps in [&never, &turn, &always] {
            assert_eq!(steps[1].output_tokens, turn[1].output_tokens);
        }
    }

    /// Of a block of 1,000 tokens: the trace's 900 read from the cache, and the rest of the prefix lost; all
    /// 1,000 read, and the prefix may follow; no record: cached whole, prefix following, when the block before
    /// had the same size, else new; no block at all: the first call point caches nothing, later ones follow the
    /// plain prefix rule.
    #[test]
    fn an_unrecorded_block_is_cached_as_the_trace_says_else_by_its_size() {
        assert_eq!(
            cached_block((1000, Some(900)), Some(1000)),
            (1000, 900, false)
        );
        assert_eq!(cached_block((1000, Some(1000)), None), (1000, 1000, true));
        assert_eq!(
            cached_block((1000, Some(5000)), Some(10)),
            (1000, 1000, true)
        );
        assert_eq!(cached_block((1000, None), Some(1000)), (1000, 1000, true));
        assert_eq!(cached_block((1000, None), Some(999)), (1000, 0, false));
        assert_eq!(cached_block((1000, None), None), (1000, 0, false));
        assert_eq!(cached_block((0, None), None), (0, 0, false));
        assert_eq!(cached_block((0, None), Some(0)), (0, 0, true));
        // A block of 0 with a recorded read follows the size rule.
        assert_eq!(cached_block((0, Some(0)), Some(0)), (0, 0, true));
    }
}
