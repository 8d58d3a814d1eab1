//! What a command line sets over a config file: `RunConfig::apply` takes it, so `run`, `import`, `usage`
//! and `show` change a configuration one way and check it once.

use std::path::PathBuf;

use super::config::{RunConfig, TokenizerConfig, UnrecordedMode};
use crate::error::{Error, Result};
use crate::tokens::Encoding;

/// How tokens are counted, as given on the command line: an OpenAI encoding, or the agent model's own
/// Hugging Face tokenizer and chat template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenizerOverride {
    /// An OpenAI encoding; it replaces a configured model tokenizer.
    pub encoding: Option<Encoding>,
    /// The model's `tokenizer.json`.
    pub file: Option<PathBuf>,
    /// The model's chat template.
    pub chat_template: Option<PathBuf>,
}

impl TokenizerOverride {
    /// `base` with what this override sets: an encoding replaces the model's files, a file or template
    /// replaces the configured one.
    #[must_use]
    pub fn apply(&self, mut base: TokenizerConfig) -> TokenizerConfig {
        if let Some(e) = self.encoding {
            base.encoding = e;
            base.file = None;
            base.chat_template = None;
        }
        if let Some(f) = &self.file {
            base.file = Some(f.clone());
        }
        if let Some(t) = &self.chat_template {
            base.chat_template = Some(t.clone());
        }
        base
    }

    /// The tokenizer this override describes over the default settings (o200k_base when it names none).
    ///
    /// # Errors
    /// A tokenizer that cannot be built.
    pub fn build(&self) -> Result<std::sync::Arc<crate::tokens::Tokenizer>> {
        Ok(std::sync::Arc::new(
            self.apply(TokenizerConfig::default()).build()?,
        ))
    }
}

/// The settings a command line gives over a configuration; `None` and `false` leave the config's value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Keep only these strategies, in this order (`--strategies`; `presets` and `all` expand).
    pub strategies: Vec<String>,
    /// The context window (`--window`).
    pub window: Option<usize>,
    /// The retention at need asked for (`--min-retention`).
    pub min_retention: Option<f64>,
    /// The fewest needs that count as evidence (`--min-needs`).
    pub min_needs: Option<u64>,
    /// The fewest episodes that count as evidence (`--min-episodes`).
    pub min_episodes: Option<u64>,
    /// Recommend on savings alone where retention measured nothing (`--recommend-without-retention`).
    pub recommend_without_retention: bool,
    /// Whether unrecorded context is sent (`--unrecorded`).
    pub unrecorded: Option<UnrecordedMode>,
    /// How tokens are counted.
    pub tokenizer: TokenizerOverride,
    /// Do not read or write the real LLM's response cache (`--no-cache`).
    pub no_cache: bool,
}

impl RunConfig {
    /// This configuration with `overrides` applied, then checked.
    ///
    /// # Errors
    /// An unknown strategy, or a value out of range, named as the option that gave it.
    pub fn apply(&mut self, overrides: &Overrides) -> Result<()> {
        let o = overrides;
        if let Some(m) = o.min_retention.filter(|m| !(0.0..=1.0).contains(m)) {
            return Err(Error::Config(format!(
                "--min-retention {m} is outside [0, 1] (a share: 0.9 asks for 90% of findings where needed)"
            )));
        }
        if o.window == Some(0) {
            return Err(Error::Config(
                "--window must be above 0 (the agent model's context window, in tokens)".into(),
            ));
        }
        if o.no_cache {
            if let Some(llm) = &mut self.llm {
                llm.use_cache = false;
            }
        }
        if let Some(w) = o.window {
            // Every episode's window, whatever its model; the configuration's too, as its reports read it.
            self.window = Some(w);
            self.context_window = w;
        }
        self.min_retention = o.min_retention.unwrap_or(self.min_retention);
        self.min_needs = o.min_needs.unwrap_or(self.min_needs);
        self.min_episodes = o.min_episodes.unwrap_or(self.min_episodes);
        self.recommend_without_retention |= o.recommend_without_retention;
        self.unrecorded = o.unrecorded.unwrap_or(self.unrecorded);
        self.tokenizer = o.tokenizer.apply(std::mem::take(&mut self.tokenizer));
        if !o.strategies.is_empty() {
            self.select(&o.strategies)?;
        }
        self.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_override_replaces_only_what_it_names() {
        let mut config = RunConfig {
            min_needs: 3,
            ..RunConfig::default()
        };
        let overrides = Overrides {
            window: Some(8_000),
            min_retention: Some(0.5),
            strategies: vec!["none,sliding_window".into()],
            ..Overrides::default()
        };
        config.apply(&overrides).unwrap();
        assert_eq!((config.context_window, config.window), (8_000, Some(8_000)));
        assert!((config.min_retention - 0.5).abs() < f64::EPSILON);
        assert_eq!(config.min_needs, 3);
        let names: Vec<&str> = config.strategies.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["none", "sliding_window"]);
        let untouched = RunConfig::default();
        let mut same = untouched.clone();
        same.apply(&Overrides::default()).unwrap();
        assert_eq!(same, untouched);
    }

    #[test]
    fn an_override_out_of_range_is_named_as_its_option() {
        let mut config = RunConfig::default();
        for (overrides, option) in [
            (
                Overrides {
                    min_retention: Some(1.5),
                    ..Overrides::default()
                },
                "--min-retention 1.5",
            ),
            (
                Overrides {
                    window: Some(0),
                    ..Overrides::default()
                },
                "--window",
            ),
        ] {
            let e = config.apply(&overrides).unwrap_err().to_string();
            assert!(e.contains(option), "{e}");
        }
        assert_eq!(
            config,
            RunConfig::default(),
            "a refused override changes nothing"
        );
    }

    #[test]
    fn an_encoding_replaces_the_models_tokenizer_and_a_file_replaces_the_configs() {
        let model = TokenizerConfig {
            file: Some("a.json".into()),
            chat_template: Some("a.jinja".into()),
            ..TokenizerConfig::default()
        };
        let encoding = TokenizerOverride {
            encoding: Some(Encoding::Cl100kBase),
            ..TokenizerOverride::default()
        };
        let got = encoding.apply(model.clone());
        assert_eq!(got.encoding, Encoding::Cl100kBase);
        assert_eq!((got.file, got.chat_template), (None, None));
        let file = TokenizerOverride {
            file: Some("b.json".into()),
            ..TokenizerOverride::default()
        };
        let got = file.apply(model);
        assert_eq!(got.file, Some("b.json".into()));
        assert_eq!(got.chat_template, Some("a.jinja".into()));
    }
}
