//! A request's cache key (a SHA-256 of the endpoint and the body, [`super::body::Hashing`]), hashed as the
//! body is written, and from where an earlier request's hash left off when the two start alike.
//!
//! A run's requests repeat their beginnings: every probe of a call point sends the context and one question,
//! and the next call point's context is that one and a few items more (the whole context as JSON, 140 KB on
//! average on the bundled run). Hashing each body in full, and writing its JSON to be hashed, was 27% of the
//! CPU of a real-model run at `max_concurrency` 256. The hash's state after all a request's messages but its
//! last is kept, by a fingerprint of those messages (xxh3-128 of their fields, each with its length:
//! [`super::body::feed_message`]); a later request whose first messages have that fingerprint goes on from the
//! state, writing and hashing only what follows. The key is the same SHA-256 of the same bytes (pinned by the
//! tests): the cache's keys are unchanged. At most [`Keys::new`]'s capacity of states are kept, the oldest
//! dropped first (a state is a SHA-256's, about 100 bytes; no text).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use sha2::Sha256;
use xxhash_rust::xxh3::Xxh3;

use super::body::{self, Hashing};
use super::config::OpenAiConfig;
use crate::llm::LlmRequest;

/// A hash's state after a request's first messages: (SHA-256, bytes written after the endpoint's line).
type State = (Sha256, usize);

/// The states kept, by fingerprint, and their order (the oldest first).
#[derive(Default)]
struct Memo {
    states: HashMap<u128, State>,
    order: VecDeque<u128>,
}

/// The client's keys; see the module docs.
pub(super) struct Keys {
    base_url: String,
    capacity: usize,
    memo: Mutex<Memo>,
}

impl Keys {
    /// Keys for the endpoint `base_url`, keeping at most `capacity` states.
    pub(super) fn new(base_url: &str, capacity: usize) -> Self {
        Self {
            base_url: base_url.to_owned(),
            capacity,
            memo: Mutex::new(Memo::default()),
        }
    }

    /// The key of `req`'s body under `config` (whose endpoint is this one's) and `schema`, and the body's length.
    pub(super) fn key(
        &self,
        config: &OpenAiConfig,
        schema: Option<&(String, Value)>,
        req: &LlmRequest,
    ) -> (sha2::digest::Output<Sha256>, usize) {
        let request_body = body::body_of(config, schema, req);
        let n = request_body.messages.len();
        // fingerprints[k]: the body's beginning up to its (k + 1)th message (the model, then the messages).
        let mut fingerprint = Xxh3::new();
        fingerprint.update(&(request_body.model.len() as u64).to_le_bytes());
        fingerprint.update(request_body.model.as_bytes());
        let fingerprints: Vec<u128> = request_body
            .messages
            .iter()
            .map(|m| {
                body::feed_message(&mut fingerprint, m);
                fingerprint.digest128()
            })
            .collect();
        let found = {
            let memo = self.lock();
            (1..=n).rev().find_map(|k| {
                memo.states
                    .get(&fingerprints[k - 1])
                    .map(|s| (k, s.clone()))
            })
        };
        let (mut hashing, from) = match found {
            Some((k, state)) => (Hashing::resume(state), k),
            None => {
                let mut hashing = Hashing::new(&self.base_url);
                body::write_head(&mut hashing, &request_body);
                (hashing, 0)
            }
        };
        for (i, m) in request_body.messages.iter().enumerate().skip(from) {
            if i + 1 == n && i > from {
                // All but the last message: what the next probe of this call point, and the next call
                // point's, start with.
                self.keep(fingerprints[i - 1], hashing.state());
            }
            body::write_message(&mut hashing, i, m);
        }
        body::write_tail(&mut hashing, &request_body);
        hashing.finish()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn keep(&self, fingerprint: u128, state: State) {
        if self.capacity == 0 {
            return;
        }
        let mut memo = self.lock();
        if memo.states.insert(fingerprint, state).is_none() {
            memo.order.push_back(fingerprint);
        }
        while memo.order.len() > self.capacity {
            if let Some(old) = memo.order.pop_front() {
                memo.states.remove(&old);
            }
        }
    }

    /// States kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().states.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Item;
    use sha2::Digest;

    /// The key as the body's text gives it.
    fn whole(
        config: &OpenAiConfig,
        schema: Option<&(String, Value)>,
        req: &LlmRequest,
    ) -> (String, usize) {
        let text = body::body_text(config, schema, req, 0);
        let mut hasher = Sha256::new();
        hasher.update(format!("{}\n{text}", config.base_url));
        (format!("{:x}", hasher.finalize()), text.len())
    }

    fn key(
        keys: &Keys,
        config: &OpenAiConfig,
        schema: Option<&(String, Value)>,
        req: &LlmRequest,
    ) -> (String, usize) {
        let (digest, len) = keys.key(config, schema, req);
        (format!("{digest:x}"), len)
    }

    /// A context of `n` items, as a replay's live request grows: a user turn, then calls and results.
    fn context(n: usize) -> Vec<Item> {
        let mut items = vec![Item::user("Fix the \"leap\" test.\n")];
        for i in 1..n {
            items.push(match i % 3 {
                1 => Item::assistant(format!("Step {i}: looking.")),
                2 => Item::tool_call(format!("c{i}"), "run", format!("{{\"cmd\": \"ls {i}\"}}")),
                _ => Item::tool_result(format!("c{}", i - 1), "run", "out\t\u{1}".repeat(i * 50)),
            });
        }
        items
    }

    #[test]
    fn keys_from_a_kept_beginning_are_the_keys_of_the_whole_text() {
        let keys = Keys::new("http://127.0.0.1:9/v1", 8);
        let schema = ("grades".to_owned(), serde_json::json!({"type": "object"}));
        let config = OpenAiConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            max_tokens: Some(9),
            ..OpenAiConfig::default()
        };
        for n in 1..30 {
            // Two probes of a call point (the context and a question), then the context alone.
            for question in ["Which test fails?", "Which file?"] {
                let mut contents = context(n);
                contents.push(Item::user(question));
                let req = LlmRequest {
                    instructions: vec!["Be terse.".into()],
                    contents,
                };
                assert_eq!(
                    key(&keys, &config, Some(&schema), &req),
                    whole(&config, Some(&schema), &req),
                    "{n}"
                );
            }
            let req = LlmRequest {
                instructions: vec!["Be terse.".into()],
                contents: context(n),
            };
            assert_eq!(
                key(&keys, &config, None, &req),
                whole(&config, None, &req),
                "{n}"
            );
        }
        assert!(keys.len() <= 8, "at most the capacity");
        // A request that differs in an early message does not go on from a kept state.
        let mut contents = context(20);
        contents[0] = Item::user("Fix the \"leap\" test!\n");
        contents.push(Item::user("Which test fails?"));
        let req = LlmRequest::from_contents(contents);
        assert_eq!(key(&keys, &config, None, &req), whole(&config, None, &req));
        // Nor one whose messages differ only in where a text ends and the next begins.
        let split = |a: &str, b: &str| {
            LlmRequest::from_contents(vec![Item::tool_call("c", a, b), Item::user("q")])
        };
        let (first, second) = (split("ab", "c"), split("a", "bc"));
        assert_eq!(
            key(&keys, &config, None, &first),
            whole(&config, None, &first)
        );
        assert_eq!(
            key(&keys, &config, None, &second),
            whole(&config, None, &second)
        );
        assert_ne!(whole(&config, None, &first), whole(&config, None, &second));
    }

    #[test]
    fn without_room_nothing_is_kept_and_the_keys_are_the_same() {
        let keys = Keys::new("u", 0);
        let config = OpenAiConfig {
            base_url: "u".into(),
            ..OpenAiConfig::default()
        };
        for n in [3, 4, 4] {
            let req = LlmRequest::from_contents(context(n));
            assert_eq!(key(&keys, &config, None, &req), whole(&config, None, &req));
        }
        assert_eq!(keys.len(), 0);
    }
}
