//! Answers on disk, one file per request (a SHA-256 of the endpoint and the request body, in hex), written
//! atomically.
//!
//! With `use_cache` the directory is the config's `cache_dir`: a re-run reads what an earlier run wrote. With
//! it off, the client keeps a private directory for the run, removed when the client is dropped: identical
//! requests of the run are still sent once, and nothing is read from, or left for, another run. Either way a
//! finished request's answer is on disk, not in memory. Each entry names the run that wrote it, so that a
//! repeat within the run is told apart from an answer an earlier run left.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::config::OpenAiConfig;

/// A cached answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Cached {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_ms: f64,
    #[serde(default)]
    pub estimated: bool,
    /// The HTTP status of the answer (absent in entries of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The run (client) that wrote it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run: String,
}

/// A client's answers on disk.
pub(super) struct Cache {
    /// None: the private directory could not be made; finished answers are then not shared.
    dir: Option<PathBuf>,
    /// The config's directory, read by later runs.
    persistent: bool,
    /// This client's name in the entries it writes.
    run: String,
    /// The private directory, removed on drop.
    _private: Option<tempfile::TempDir>,
}

/// An answer found on disk.
pub(super) struct Hit {
    pub entry: Cached,
    /// Written by this client (an identical request of this run), not by an earlier run.
    pub this_run: bool,
}

impl Cache {
    /// The cache `config` asks for; a directory that cannot be made costs requests, never correctness.
    pub(super) fn new(config: &OpenAiConfig) -> Self {
        static CLIENTS: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let run = format!(
            "{}-{nanos}-{}",
            std::process::id(),
            CLIENTS.fetch_add(1, Ordering::Relaxed)
        );
        if config.use_cache {
            // Created once here, not before every write.
            let _ = std::fs::create_dir_all(&config.cache_dir);
            return Self {
                dir: Some(config.cache_dir.clone()),
                persistent: true,
                run,
                _private: None,
            };
        }
        let private = tempfile::Builder::new()
            .prefix("ctxbench-answers-")
            .tempdir()
            .ok();
        Self {
            dir: private.as_ref().map(|d| d.path().to_owned()),
            persistent: false,
            run,
            _private: private,
        }
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        Some(self.dir.as_ref()?.join(format!("{key}.json")))
    }

    /// The answer to the request `key`, when one is on disk and readable.
    pub(super) fn get(&self, key: &str) -> Option<Hit> {
        let bytes = std::fs::read(self.path(key)?).ok()?;
        let entry: Cached = serde_json::from_slice(&bytes).ok()?;
        Some(Hit {
            this_run: !self.persistent || entry.run == self.run,
            entry,
        })
    }

    /// Stores the answer to `key`, marked as this run's.
    pub(super) fn put(&self, key: &str, mut entry: Cached) {
        let Some(path) = self.path(key) else { return };
        entry.run.clone_from(&self.run);
        // A cache that cannot be written costs money on the next run, not correctness now.
        let Ok(bytes) = serde_json::to_vec(&entry) else {
            return;
        };
        if self.persistent {
            let _ = crate::files::write_atomic(&path, &bytes);
        } else {
            // Read only by this client, after this write returned (a repeat waits in the flight until then),
            // and removed with the run: nothing to make durable.
            let _ = std::fs::write(&path, &bytes);
        }
    }

    /// Whether the config's cache holds any answer (a re-run may then need no request at all).
    pub(super) fn has_answers(&self) -> bool {
        self.persistent
            && self.dir.as_ref().is_some_and(|dir| {
                std::fs::read_dir(dir).is_ok_and(|mut d| {
                    d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Cached {
        Cached {
            text: text.into(),
            input_tokens: 3,
            output_tokens: 1,
            latency_ms: 12.5,
            estimated: false,
            status: Some(200),
            run: String::new(),
        }
    }

    fn config(dir: &std::path::Path, use_cache: bool) -> OpenAiConfig {
        OpenAiConfig {
            cache_dir: dir.join("cache"),
            use_cache,
            ..OpenAiConfig::default()
        }
    }

    #[test]
    fn a_later_run_reads_what_an_earlier_one_wrote_and_tells_them_apart() {
        let dir = tempfile::tempdir().unwrap();
        let first = Cache::new(&config(dir.path(), true));
        assert!(!first.has_answers());
        assert!(first.get("k").is_none());
        first.put("k", entry("foo"));
        let hit = first.get("k").unwrap();
        assert!(hit.this_run);
        assert_eq!(hit.entry.text, "foo");
        assert!(first.has_answers());
        let second = Cache::new(&config(dir.path(), true));
        let hit = second.get("k").unwrap();
        assert!(!hit.this_run, "an earlier run's answer");
        assert_eq!(hit.entry.latency_ms, 12.5);
    }

    #[test]
    fn entries_of_earlier_versions_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&config(dir.path(), true));
        std::fs::write(
            dir.path().join("cache/old.json"),
            r#"{"text":"t","input_tokens":1,"output_tokens":2,"latency_ms":3.0}"#,
        )
        .unwrap();
        let hit = cache.get("old").unwrap();
        assert_eq!((hit.entry.status, hit.this_run), (None, false));
        std::fs::write(dir.path().join("cache/bad.json"), "{").unwrap();
        assert!(cache.get("bad").is_none(), "an unreadable entry is a miss");
    }

    #[test]
    fn without_the_cache_answers_are_private_to_the_run_and_removed_after() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&config(dir.path(), false));
        cache.put("k", entry("foo"));
        assert!(cache.get("k").unwrap().this_run);
        assert!(!cache.has_answers(), "nothing for a re-run to read");
        assert!(
            !dir.path().join("cache").exists(),
            "the config's cache untouched"
        );
        let private = cache.dir.clone().unwrap();
        assert!(private.join("k.json").exists());
        drop(cache);
        assert!(!private.exists());
        // Another client without the cache does not see it.
        let other = Cache::new(&config(dir.path(), false));
        assert!(other.get("k").is_none());
    }
}
