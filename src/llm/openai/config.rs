//! The client's settings (`[llm]` and `[judge]` in a run's config), their checks, and the API key.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Settings of an OpenAI-compatible endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Base URL, up to and including `/v1`.
    pub base_url: String,
    /// Model name sent with every request (and priced).
    pub model: String,
    /// Environment variable holding the API key; must be set unless this is empty (a key-less local server).
    pub api_key_env: String,
    /// Sampling temperature.
    pub temperature: f64,
    /// Most completion tokens per call.
    pub max_tokens: Option<u32>,
    /// Requests in flight at once.
    pub max_concurrency: usize,
    /// Requests started per minute; 0 = unlimited.
    pub requests_per_minute: u32,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff, in milliseconds (doubled per attempt, with jitter).
    pub backoff_ms: u64,
    /// First backoff after a 429 that names no wait, in seconds (doubled per attempt, at most 60 s): long
    /// enough that a per-minute limit has room again within the retries.
    pub rate_limit_backoff_s: f64,
    /// Timeout of one attempt, in seconds.
    pub timeout_s: f64,
    /// Response cache directory.
    pub cache_dir: PathBuf,
    /// Read and fill the cache.
    pub use_cache: bool,
    /// Check endpoint, model and key with one small request before the first request the cache cannot
    /// answer.
    pub preflight: bool,
    /// The `response_format` asked for: for a judge whose model strays from the JSON it is asked for.
    pub response_format: ResponseFormat,
}

/// The `response_format` of a request. The schema ones constrain the reply to the client's schema (the judge's
/// grades, [`super::OpenAiLlm::with_schema`]); a client without one asks for a JSON object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormat {
    /// None: the server's default, text.
    #[default]
    Text,
    /// `{"type": "json_object"}`: any JSON object (OpenAI, vLLM, llama.cpp).
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`: OpenAI's structured
    /// outputs, also vLLM's.
    JsonSchema,
    /// `{"type": "json_object", "schema": …}`: llama-cpp-python's server, which turns the schema into a
    /// grammar.
    JsonObjectSchema,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            temperature: 0.0,
            max_tokens: None,
            max_concurrency: 4,
            requests_per_minute: 0,
            max_retries: 5,
            backoff_ms: 500,
            rate_limit_backoff_s: 10.0,
            timeout_s: 120.0,
            cache_dir: PathBuf::from(".ctxbench-cache"),
            use_cache: true,
            preflight: true,
            response_format: ResponseFormat::Text,
        }
    }
}

impl OpenAiConfig {
    /// Checks the limits a client cannot work with.
    ///
    /// # Errors
    /// A zero concurrency, a timeout that is not above 0, a rate-limit backoff that is not a number of seconds.
    pub fn validate(&self) -> Result<()> {
        if self.max_concurrency == 0 {
            return Err(Error::Config("llm max_concurrency must be above 0".into()));
        }
        if self.timeout_s.is_nan() || self.timeout_s <= 0.0 {
            return Err(Error::Config("llm timeout_s must be above 0".into()));
        }
        if !self.rate_limit_backoff_s.is_finite() || self.rate_limit_backoff_s < 0.0 {
            return Err(Error::Config(
                "llm rate_limit_backoff_s must be a number of seconds, 0 or more".into(),
            ));
        }
        Ok(())
    }

    /// The API key from `api_key_env`, or none for a key-less server (`api_key_env = ""`).
    ///
    /// # Errors
    /// When the variable is unset or blank; the error names the variable, never a key.
    pub fn api_key(&self) -> Result<Option<String>> {
        if self.api_key_env.is_empty() {
            return Ok(None);
        }
        std::env::var(&self.api_key_env)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(Some)
            .ok_or_else(|| {
                Error::Config(format!(
                    "the API key variable {} is not set: export it, or set `api_key_env = \"\"` in [llm] for \
                     a server that needs no key",
                    self.api_key_env
                ))
            })
    }

    /// The chat-completions URL.
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_a_client_cannot_work_with_are_refused() {
        let ok = OpenAiConfig::default();
        assert!(ok.validate().is_ok());
        for (bad, what) in [
            (
                OpenAiConfig {
                    max_concurrency: 0,
                    ..ok.clone()
                },
                "max_concurrency",
            ),
            (
                OpenAiConfig {
                    timeout_s: 0.0,
                    ..ok.clone()
                },
                "timeout_s",
            ),
            (
                OpenAiConfig {
                    timeout_s: f64::NAN,
                    ..ok.clone()
                },
                "timeout_s",
            ),
            (
                OpenAiConfig {
                    rate_limit_backoff_s: -1.0,
                    ..ok.clone()
                },
                "rate_limit_backoff_s",
            ),
            (
                OpenAiConfig {
                    rate_limit_backoff_s: f64::INFINITY,
                    ..ok.clone()
                },
                "rate_limit_backoff_s",
            ),
        ] {
            let err = bad.validate().unwrap_err().to_string();
            assert!(err.contains(what), "{err}");
        }
        assert!(OpenAiConfig {
            rate_limit_backoff_s: 0.0,
            ..ok
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn a_key_less_server_needs_no_variable_and_an_unset_one_is_named() {
        let none = OpenAiConfig {
            api_key_env: String::new(),
            ..OpenAiConfig::default()
        };
        assert_eq!(none.api_key().unwrap(), None);
        let unset = OpenAiConfig {
            api_key_env: "CTXBENCH_UNIT_TEST_NEVER_SET".into(),
            ..OpenAiConfig::default()
        };
        let err = unset.api_key().unwrap_err().to_string();
        assert!(
            err.contains("CTXBENCH_UNIT_TEST_NEVER_SET") && err.contains("api_key_env"),
            "{err}"
        );
    }

    #[test]
    fn the_endpoint_takes_a_base_url_with_or_without_its_slash() {
        for base in ["http://h/v1", "http://h/v1/"] {
            let c = OpenAiConfig {
                base_url: base.into(),
                ..OpenAiConfig::default()
            };
            assert_eq!(c.endpoint(), "http://h/v1/chat/completions");
        }
    }
}
