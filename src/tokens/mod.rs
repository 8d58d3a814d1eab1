//! Token counting: OpenAI's `o200k_base` and `cl100k_base` encodings, the chat per-message overhead, and a
//! per-item count cache keyed by content.
//!
//! Two backends give identical counts: [`Backend::Bpe`] (the default: this crate's byte-pair encoder over
//! tiktoken's vocabularies, laid out at build time and read in place from the binary, behind its own
//! pre-tokenizer, which splits ASCII text without a regex and takes a search cache from a pool for the rest,
//! and a table of the counts of the pieces met last, from a pool too (one per thread counting at once);
//! nine to twenty times as fast on one thread, and ready at once) and [`Backend::Tiktoken`] (`tiktoken-rs`,
//! the reference port). Counting is the hot path of every replay, so [`Tokenizer::count_item`] caches each item's count under a 128-bit hash of its
//! content: a run over many strategies tokenizes each distinct item once in total.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use rustc_hash::FxBuildHasher;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::history::{Item, Role};

mod builtin;
mod hash;
pub mod model;
pub mod tools;

use builtin::{Pretokenizer, Vocabulary};
pub use hash::{instruction_hash, item_hash};

/// Tokens every chat message costs beyond its content (`<|start|>role<|message|>…<|end|>`).
pub const TOKENS_PER_MESSAGE: usize = 3;
/// Tokens a tool call costs beyond its name and arguments.
pub const TOKENS_PER_CALL: usize = 3;
/// Tokens every reply is primed with (`<|start|>assistant<|message|>`).
pub const TOKENS_PER_REPLY: usize = 3;
/// Tokens a message's `name` field adds beyond the name's own tokens.
pub const TOKENS_PER_NAME: usize = 1;

/// A BPE encoding.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series, GPT-5.
    #[default]
    O200kBase,
    /// GPT-4, GPT-3.5-turbo.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name as OpenAI writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

impl Encoding {
    /// The encoding's place in the per-process tables and pools kept for each encoding.
    fn slot(self) -> usize {
        match self {
            Encoding::O200kBase => 0,
            Encoding::Cl100kBase => 1,
        }
    }
}

impl std::str::FromStr for Encoding {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "o200k_base" | "o200k" => Ok(Encoding::O200kBase),
            "cl100k_base" | "cl100k" => Ok(Encoding::Cl100kBase),
            other => Err(Error::Config(format!(
                "unknown tokenizer encoding '{other}': expected 'o200k_base' or 'cl100k_base'"
            ))),
        }
    }
}

/// Which implementation counts tokens; both give the same counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// This crate's byte-pair encoder over tiktoken's vocabularies: counts without building the token vector,
    /// and its vocabulary is in the binary, ready without loading.
    #[default]
    Bpe,
    /// The `tiktoken-rs` crate, a port of OpenAI's reference tokenizer.
    Tiktoken,
}

impl Backend {
    /// The backend's config name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Bpe => "bpe",
            Backend::Tiktoken => "tiktoken",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bpe" | "bpe-openai" => Ok(Backend::Bpe),
            "tiktoken" | "tiktoken-rs" => Ok(Backend::Tiktoken),
            other => Err(Error::Config(format!(
                "unknown tokenizer backend '{other}': expected 'bpe' or 'tiktoken'"
            ))),
        }
    }
}

enum Engine {
    /// This crate's encoder behind its [`Pretokenizer`], with each thread's table of piece counts.
    Bpe(&'static Vocabulary, &'static Pretokenizer),
    Tiktoken(&'static tiktoken_rs::CoreBPE),
    /// A model's own tokenizer and chat template.
    Model(Box<model::ModelTokenizer>),
}

/// Whether `model` is one of OpenAI's (`gpt-4o`, `o3-mini`, `openai/gpt-4.1`, `azure/gpt-4o`: the name after
/// any provider prefix), whose own tokenizers are the OpenAI encodings; any other provider's model counted with
/// one of them is counted by a stand-in.
#[must_use]
pub fn is_openai_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    ["gpt-", "o1", "o3", "o4", "chatgpt", "text-embedding"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Counts tokens of texts, chat items and requests, caching each item's count.
///
/// Thread-safe: one tokenizer is shared by every episode and strategy of a run, so the cache serves them all.
///
/// A tokenizer may count *at k* ([`Tokenizer::at`]): in the tokens of a model whose tokenizer is not public,
/// as k × this one's count, where k is the ratio the fit of an episode's record found
/// ([`crate::replay::fit`]). Every count it gives is then scaled and rounded to the nearest token, once per
/// item, instruction, text, tool block or reply priming (so a request is the sum of its parts' rounded counts,
/// and the cache keeps the counting tokenizer's own counts, shared with the unscaled view); a block of
/// unrecorded context ([`Item::Unrecorded`]) is the model's tokens already and is never scaled.
pub struct Tokenizer {
    core: Arc<Core>,
    /// The model's tokens per token counted, where counting at k.
    k: Option<f64>,
}

/// The counting itself, shared by a tokenizer and its views at k.
struct Core {
    encoding: Encoding,
    backend: Backend,
    engine: Engine,
    /// Counts by content hash, each with the generation it was stored in (see [`GENERATION`]).
    cache: DashMap<u128, (u32, u32), FxBuildHasher>,
    /// The generation counts are stored in now.
    generation: AtomicU32,
    /// Counts stored since the generation began.
    stored: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("encoding", &self.core.encoding)
            .field("backend", &self.core.backend)
            .field("k", &self.k)
            .field("cached_items", &self.core.cache.len())
            .finish_non_exhaustive()
    }
}

/// Counts stored per generation of the cache. When a generation is full, the counts stored before it go: the
/// cache keeps the last one or two generations (at most 32 k counts, about 1.5 MB) whatever the dataset's size,
/// so that a streaming run's memory stays flat. A replay counts each item of an episode once for all its
/// strategies whatever the cache holds (it keeps the counts itself); the cache serves the items strategies make
/// (summaries, compacted items), which the strategies of an episode share while they run together, and items
/// repeated across episodes. An episode stores about as many counts as it has items (the bundled dataset: 6,208
/// counts for 6,277 items in 42 episodes, the largest of 433 items).
const GENERATION: usize = 1 << 14;

/// How often the item cache answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Counts served from the cache.
    pub hits: u64,
    /// Counts that had to tokenize.
    pub misses: u64,
}

impl Tokenizer {
    /// A tokenizer for `encoding` on `backend`. Vocabularies load once per process.
    ///
    /// # Errors
    /// Fails when the vocabulary cannot be loaded.
    pub fn new(encoding: Encoding, backend: Backend) -> Result<Self> {
        let engine = match (backend, encoding) {
            // The vocabulary is read in place from the binary; the pre-tokenizer is made once per process and
            // compiles its regex the first time a non-ASCII text needs it.
            (Backend::Bpe, _) => {
                Engine::Bpe(Vocabulary::get(encoding), Pretokenizer::get(encoding))
            }
            (Backend::Tiktoken, Encoding::O200kBase) => {
                Engine::Tiktoken(tiktoken_rs::o200k_base_singleton())
            }
            (Backend::Tiktoken, Encoding::Cl100kBase) => {
                Engine::Tiktoken(tiktoken_rs::cl100k_base_singleton())
            }
        };
        Ok(Self::with_engine(encoding, backend, engine))
    }

    /// A tokenizer that counts with a model's own `tokenizer.json` and, when given, its chat template
    /// ([`model::ModelTokenizer`]).
    ///
    /// # Errors
    /// A file that cannot be read or parsed.
    pub fn from_model(
        tokenizer: &std::path::Path,
        template: Option<&std::path::Path>,
    ) -> Result<Self> {
        let model = model::ModelTokenizer::load(tokenizer, template)?;
        Ok(Self::with_engine(
            Encoding::default(),
            Backend::default(),
            Engine::Model(Box::new(model)),
        ))
    }

    fn with_engine(encoding: Encoding, backend: Backend, engine: Engine) -> Self {
        Self {
            core: Arc::new(Core {
                encoding,
                backend,
                engine,
                cache: DashMap::with_hasher(FxBuildHasher),
                generation: AtomicU32::new(0),
                stored: AtomicUsize::new(0),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
            }),
            k: None,
        }
    }

    /// A shared default tokenizer (`o200k_base` on the `bpe` backend).
    ///
    /// # Errors
    /// As [`Tokenizer::new`].
    pub fn shared_default() -> Result<Arc<Self>> {
        Ok(Arc::new(Self::new(
            Encoding::default(),
            Backend::default(),
        )?))
    }

    /// The same tokenizer counting at `k` (`None`: its own counts): every count it gives is k × this one's,
    /// rounded to the nearest token per item, instruction, text, tool block and reply priming. It shares this
    /// one's engine and cache (which keep the unscaled counts).
    #[must_use]
    pub fn at(&self, k: Option<f64>) -> Arc<Self> {
        #[allow(clippy::float_cmp)]
        let k = k.filter(|&k| k != 1.0 && k.is_finite() && k > 0.0);
        Arc::new(Self {
            core: Arc::clone(&self.core),
            k,
        })
    }

    /// The ratio it counts at ([`Tokenizer::at`]), where it scales its counts.
    #[must_use]
    pub fn k(&self) -> Option<f64> {
        self.k
    }

    /// `n` of this tokenizer's own tokens at its k, rounded to the nearest token.
    #[inline]
    fn scaled(&self, n: usize) -> usize {
        match self.k {
            None => n,
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            Some(k) => (n as f64 * k).round() as usize,
        }
    }

    /// The model tokenizer it counts with, when it is one.
    #[must_use]
    pub fn model(&self) -> Option<&model::ModelTokenizer> {
        match &self.core.engine {
            Engine::Model(m) => Some(m),
            _ => None,
        }
    }

    /// Whether every count so far stands: an error naming the chat template's file, line and message when one
    /// of its renders failed (counts made with a template that failed are void, never 0 tokens).
    ///
    /// # Errors
    /// [`Error::Template`], for the first render that failed.
    pub fn check(&self) -> Result<()> {
        self.model().map_or(Ok(()), model::ModelTokenizer::check)
    }

    /// The encoding.
    #[must_use]
    pub fn encoding(&self) -> Encoding {
        self.core.encoding
    }

    /// What counts, as reports name it (`o200k_base`, or a model's `tokenizer.json with its template`); the
    /// same at any k.
    #[must_use]
    pub fn name(&self) -> String {
        match &self.core.engine {
            Engine::Model(m) => m.name().to_owned(),
            _ => self.core.encoding.as_str().to_owned(),
        }
    }

    /// Tokens every request costs besides its messages and tools: OpenAI's reply priming
    /// ([`TOKENS_PER_REPLY`]), or a chat template's beginning and generation prompt.
    #[must_use]
    pub fn reply_tokens(&self) -> usize {
        self.scaled(match &self.core.engine {
            Engine::Model(m) => m.reply_tokens(),
            _ => TOKENS_PER_REPLY,
        })
    }

    /// Tokens a message costs besides its content ([`TOKENS_PER_MESSAGE`] for OpenAI's models).
    #[must_use]
    pub fn message_overhead(&self) -> usize {
        self.scaled(match &self.core.engine {
            Engine::Model(m) => m.message_overhead(),
            _ => TOKENS_PER_MESSAGE,
        })
    }

    /// The backend.
    #[must_use]
    pub fn backend(&self) -> Backend {
        self.core.backend
    }

    /// Tokens in `text`, special-token text counted as ordinary text; not cached.
    #[must_use]
    pub fn count_text(&self, text: &str) -> usize {
        self.scaled(self.own_text(text))
    }

    /// Tokens in `text` if they are at most `limit`, else `None`; stops counting once past `limit`, so a long
    /// text that cannot fit costs little.
    #[must_use]
    pub fn count_text_within(&self, text: &str, limit: usize) -> Option<usize> {
        let Some(k) = self.k else {
            return self.own_text_within(text, limit);
        };
        // round(k × n) ≤ limit exactly where k × n < limit + ½: count on to the first n past that.
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let own = ((limit as f64 + 0.5) / k).ceil() as usize;
        self.own_text_within(text, own)
            .map(|n| self.scaled(n))
            .filter(|&n| n <= limit)
    }

    /// [`Tokenizer::count_text`] in this tokenizer's own tokens.
    fn own_text(&self, text: &str) -> usize {
        self.own_text_within(text, usize::MAX).unwrap_or(usize::MAX)
    }

    /// [`Tokenizer::count_text_within`] in this tokenizer's own tokens.
    fn own_text_within(&self, text: &str, limit: usize) -> Option<usize> {
        if text.is_empty() {
            return Some(0);
        }
        let n = match &self.core.engine {
            Engine::Bpe(vocab, pre) => {
                builtin::count_while(vocab, pre, self.core.encoding.slot(), text, limit)
            }
            Engine::Tiktoken(t) => t.encode_ordinary(text).len(),
            Engine::Model(m) => m.count_text(text),
        };
        (n <= limit).then_some(n)
    }

    /// Token ids of `text` (for tests and tools); special-token text is encoded as ordinary text.
    #[must_use]
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.core.engine {
            Engine::Bpe(vocab, pre) => {
                let mut ids = Vec::new();
                pre.pieces_while(text, |piece: &str| {
                    vocab.encode(piece.as_bytes(), &mut ids);
                    true
                });
                ids
            }
            Engine::Tiktoken(t) => t.encode_ordinary(text).into_iter().collect(),
            Engine::Model(m) => m.encode(text),
        }
    }

    /// Tokens of one chat message as OpenAI accounts it: overhead, role, content and optional name.
    #[must_use]
    pub fn count_chat_message(&self, role: &str, content: &str, name: Option<&str>) -> usize {
        self.scaled(self.own_chat_message(role, content, name))
    }

    /// [`Tokenizer::count_chat_message`] in this tokenizer's own tokens.
    fn own_chat_message(&self, role: &str, content: &str, name: Option<&str>) -> usize {
        if let Engine::Model(m) = &self.core.engine {
            return m.count_message(role, content);
        }
        let text = |t: &str| self.own_text(t);
        TOKENS_PER_MESSAGE
            + text(role)
            + text(content)
            + name.map_or(0, |n| TOKENS_PER_NAME + text(n))
    }

    /// Tokens of one item, cached by content.
    ///
    /// A message is counted as a chat message; a tool call as an assistant message of its arguments, plus its
    /// name and [`TOKENS_PER_CALL`]; a tool result as a `tool` message; an observation as a `user` message;
    /// reasoning as an `assistant` message.
    #[must_use]
    pub fn count_item(&self, item: &Item) -> usize {
        self.count_item_hashed(item_hash(item), item)
    }

    /// [`Tokenizer::count_item`] for a caller that already has the item's [`item_hash`].
    #[must_use]
    pub fn count_item_hashed(&self, key: u128, item: &Item) -> usize {
        let n = self.cached(key, || self.own_item(item));
        match item {
            Item::Unrecorded { .. } => n,
            _ => self.scaled(n),
        }
    }

    /// Tokens of one instruction, sent as a system message; cached by content.
    #[must_use]
    pub fn count_instruction(&self, text: &str) -> usize {
        self.count_instruction_hashed(instruction_hash(text), text)
    }

    /// [`Tokenizer::count_instruction`] for a caller that already has the [`instruction_hash`].
    #[must_use]
    pub fn count_instruction_hashed(&self, key: u128, text: &str) -> usize {
        self.scaled(self.cached(key, || self.own_chat_message("system", text, None)))
    }

    /// Tokens of a whole request: instructions, contents and the reply priming.
    #[must_use]
    pub fn count_request(&self, instructions: &[String], contents: &[Item]) -> usize {
        self.reply_tokens()
            + instructions
                .iter()
                .map(|s| self.count_instruction(s))
                .sum::<usize>()
            + contents.iter().map(|i| self.count_item(i)).sum::<usize>()
    }

    /// Hit and miss counts of the item cache since creation.
    #[must_use]
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            hits: self.core.hits.load(Ordering::Relaxed),
            misses: self.core.misses.load(Ordering::Relaxed),
        }
    }

    fn cached(&self, key: u128, count: impl FnOnce() -> usize) -> usize {
        let core = &*self.core;
        if let Some(n) = core.cache.get(&key) {
            core.hits.fetch_add(1, Ordering::Relaxed);
            return n.0 as usize;
        }
        core.misses.fetch_add(1, Ordering::Relaxed);
        let n = count();
        let generation = core.generation.load(Ordering::Relaxed);
        core.cache
            .insert(key, (u32::try_from(n).unwrap_or(u32::MAX), generation));
        // The one thread that fills the generation starts the next and drops the one before the full one. Races
        // with other threads' stores cost at most a count kept a generation longer or recounted.
        if core.stored.fetch_add(1, Ordering::Relaxed) + 1 == GENERATION {
            core.stored.store(0, Ordering::Relaxed);
            core.generation
                .store(generation.wrapping_add(1), Ordering::Relaxed);
            core.cache
                .retain(|_, &mut (_, g)| g.wrapping_sub(generation) <= 1);
        }
        n
    }

    /// Tokens of one item, counted afresh (no cache): what [`Tokenizer::count_item`] caches, at this
    /// tokenizer's k.
    #[must_use]
    pub fn count_item_uncached(&self, item: &Item) -> usize {
        let n = self.own_item(item);
        match item {
            Item::Unrecorded { .. } => n,
            _ => self.scaled(n),
        }
    }

    /// Tokens of one item in this tokenizer's own tokens, counted afresh.
    fn own_item(&self, item: &Item) -> usize {
        if let Engine::Model(m) = &self.core.engine {
            return m.count_item(item);
        }
        let text = |t: &str| self.own_text(t);
        match item {
            Item::Message { role, content } => self.own_chat_message(role.as_str(), content, None),
            // A call is a message of its own: its name and arguments and 3 tokens of the call's own (the
            // function-call accounting of hmarr/openai-chat-tokens, checked against the API).
            Item::ToolCall {
                name, arguments, ..
            } => {
                self.own_chat_message(Role::Assistant.as_str(), arguments, None)
                    + text(name)
                    + TOKENS_PER_CALL
            }
            Item::ToolResult { content, .. } => self.own_chat_message("tool", content, None),
            // An observation is sent as a user message; reasoning is counted as assistant text.
            Item::Observation { content, .. } | Item::Reasoning { content, .. } => {
                self.own_chat_message(item.wire_role(), content, None)
            }
            // A block of what the trace left out is its recorded size, overhead included.
            Item::Unrecorded { tokens, .. } => *tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(encoding: Encoding) -> [Tokenizer; 2] {
        [
            Tokenizer::new(encoding, Backend::Bpe).unwrap(),
            Tokenizer::new(encoding, Backend::Tiktoken).unwrap(),
        ]
    }

    /// A piece's count is kept and found again, and pieces that share a slot never answer for each other.
    /// Token ids published with OpenAI's tiktoken.
    #[test]
    fn known_token_ids() {
        for t in both(Encoding::Cl100kBase) {
            assert_eq!(t.encode("hello world"), vec![15339, 1917]);
            assert_eq!(
                t.encode("tiktoken is great!"),
                vec![83, 1609, 5963, 374, 2294, 0]
            );
        }
        for t in both(Encoding::O200kBase) {
            assert_eq!(t.encode("hello world"), vec![24912, 2375]);
        }
    }

    /// The OpenAI cookbook's "How to count tokens with tiktoken" example, whose counts the API confirmed:
    /// 129 prompt tokens for cl100k models (gpt-4-0613) and 124 for o200k models (gpt-4o).
    #[test]
    fn cookbook_chat_example_counts() {
        let messages: [(&str, Option<&str>, &str); 6] = [
            ("system", None, "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."),
            ("system", Some("example_user"), "New synergies will help drive top-line growth."),
            ("system", Some("example_assistant"), "Things working well together will increase revenue."),
            ("system", Some("example_user"), "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."),
            ("system", Some("example_assistant"), "Let's talk later when we're less busy about how to do better."),
            ("user", None, "This late pivot means we don't have time to boil the ocean for the client deliverable."),
        ];
        for (encoding, expected) in [(Encoding::Cl100kBase, 129), (Encoding::O200kBase, 124)] {
            for t in both(encoding) {
                let total: usize = TOKENS_PER_REPLY
                    + messages
                        .iter()
                        .map(|(role, name, content)| t.count_chat_message(role, content, *name))
                        .sum::<usize>();
                assert_eq!(total, expected, "{encoding:?} {:?}", t.backend());
            }
        }
    }

    #[test]
    fn count_within_answers_only_under_the_limit() {
        for t in both(Encoding::O200kBase) {
            let text = "one two three four five six seven eight";
            let n = t.count_text(text);
            assert_eq!(n, 8);
            assert_eq!(t.count_text_within(text, n), Some(n));
            assert_eq!(t.count_text_within(text, 100), Some(n));
            assert_eq!(t.count_text_within(text, n - 1), None);
            assert_eq!(t.count_text_within(text, 0), None);
            assert_eq!(t.count_text_within("", 0), Some(0));
        }
    }

    #[test]
    fn special_token_text_is_ordinary_text() {
        for t in both(Encoding::O200kBase) {
            assert!(t.count_text("<|endoftext|>") > 1);
        }
    }

    #[test]
    fn item_counts_are_cached_by_content() {
        let t = Tokenizer::new(Encoding::O200kBase, Backend::Bpe).unwrap();
        let a = Item::user("the same words");
        let b = Item::user("the same words");
        let c = Item::assistant("the same words");
        let n = t.count_item(&a);
        assert_eq!(n, TOKENS_PER_MESSAGE + 1 + t.count_text("the same words"));
        assert_eq!(t.count_item(&b), n);
        let _ = t.count_item(&c);
        assert_eq!(t.cache_stats(), CacheStats { hits: 1, misses: 2 });
    }

    #[test]
    fn the_count_cache_keeps_the_last_generations_only() {
        let t = Tokenizer::new(Encoding::O200kBase, Backend::Bpe).unwrap();
        let text = |i: usize| format!("instruction {i}");
        let stored = 3 * GENERATION + 10;
        for i in 0..stored {
            let _ = t.count_instruction(&text(i));
        }
        // Bounded: generation 0 went when generation 1 filled, generation 1 when generation 2 did.
        assert!(
            t.core.cache.len() <= 2 * GENERATION,
            "{} counts kept",
            t.core.cache.len()
        );
        assert_eq!(t.core.cache.len(), GENERATION + 10);
        // The counts of the generation before the current one are still there; older ones are counted again.
        let before = t.cache_stats();
        let _ = t.count_instruction(&text(2 * GENERATION));
        let _ = t.count_instruction(&text(stored - 1));
        let _ = t.count_instruction(&text(0));
        let after = t.cache_stats();
        assert_eq!(after.hits - before.hits, 2);
        assert_eq!(after.misses - before.misses, 1);
        // And a recount gives the same count.
        assert_eq!(
            t.count_instruction(&text(0)),
            t.count_chat_message("system", &text(0), None)
        );
    }
}
