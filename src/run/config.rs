//! A run's configuration: the window, tokenizer, mock, prices, the real LLM when there is one, and the
//! strategies, read from TOML and checked before anything runs.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::history::dataset::dataset_files;
use crate::history::Episode;
use crate::llm::mock::MockConfig;
use crate::llm::openai::OpenAiConfig;
use crate::llm::pricing::{Defaults, ModelUse, Price, PriceTable};
use crate::metrics::{Context, Prices};
use crate::strategy::{self, NamedStrategy};
use crate::tokens::{Backend, Encoding};

/// Version of the `summary.json` format (2: retention at need, probe retention, `lost_by` and `most_lost`; 3:
/// retention at need over found findings, `retention_first_need`, `retention_at_need_task` and their intervals
/// and acted-on values, `episodes_without_found_needs`).
pub const SUMMARY_VERSION: u32 = 3;

/// Tokenizer settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokenizerConfig {
    /// The encoding.
    pub encoding: Encoding,
    /// The backend.
    pub backend: Backend,
    /// The agent model's own Hugging Face `tokenizer.json`, which counts instead of the encoding
    /// (`--tokenizer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<std::path::PathBuf>,
    /// The model's chat template (a Jinja file, or its `tokenizer_config.json`), with `file`
    /// (`--chat-template`; `configs/templates/` has the verified ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<std::path::PathBuf>,
}

impl TokenizerConfig {
    /// The tokenizer these settings describe.
    ///
    /// # Errors
    /// A tokenizer that cannot be built, or a template given without its tokenizer.
    pub fn build(&self) -> Result<crate::tokens::Tokenizer> {
        match (&self.file, &self.chat_template) {
            (Some(file), template) => {
                crate::tokens::Tokenizer::from_model(file, template.as_deref())
            }
            (None, Some(t)) => Err(Error::Config(format!(
                "the chat template '{}' needs the model's tokenizer too (--tokenizer tokenizer.json)",
                t.display()
            ))),
            (None, None) => crate::tokens::Tokenizer::new(self.encoding, self.backend),
        }
    }

    /// What counts, as reports name it: the encoding, or the model's tokenizer file and its template's.
    #[must_use]
    pub fn describe(&self) -> String {
        let name = |p: &std::path::Path| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        };
        match (&self.file, &self.chat_template) {
            (Some(f), Some(t)) => format!("{} with {}", name(f), name(t)),
            (Some(f), None) => name(f),
            _ => self.encoding.as_str().to_owned(),
        }
    }

    /// Whether it is a model's own tokenizer given by the user (a `tokenizer.json`), not an OpenAI encoding.
    #[must_use]
    pub fn is_model_own(&self) -> bool {
        self.file.is_some()
    }
}

/// Whether the replay sends the blocks of context the traces did not record (`--unrecorded`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum UnrecordedMode {
    /// Send them: figures cover the whole request the agent sent.
    #[default]
    Keep,
    /// Leave them out: figures cover only what the traces recorded.
    Ignore,
}

impl UnrecordedMode {
    /// Whether this is the default (not written into a config that leaves it out).
    #[must_use]
    #[allow(clippy::trivially_copy_pass_by_ref)]
    pub fn is_keep(&self) -> bool {
        *self == UnrecordedMode::Keep
    }
}

/// Pricing settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PricingConfig {
    /// The model of an episode whose trace names none (a generated one names its own); absent: such an
    /// episode is unpriced, with a hint, never priced as another model.
    pub agent_model: Option<String>,
    /// The model strategies call (summaries), as priced; absent: `[llm]`'s model, else `[mock]`'s, else each
    /// episode's own ([`RunConfig::strategy_model`]).
    pub strategy_model: Option<String>,
    /// Extra or overriding prices, USD per million tokens.
    pub models: BTreeMap<String, Price>,
}

/// The retention at need a recommended strategy keeps unless the config or `--min-retention` says otherwise.
pub const DEFAULT_MIN_RETENTION: f64 = 0.9;

fn default_min_retention() -> f64 {
    DEFAULT_MIN_RETENTION
}

/// The fewest needs met where a strategy acted that count as evidence, unless the config or `--min-needs`
/// says otherwise.
pub const DEFAULT_MIN_NEEDS: u64 = 10;

fn default_min_needs() -> u64 {
    DEFAULT_MIN_NEEDS
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_default_min_needs(n: &u64) -> bool {
    *n == DEFAULT_MIN_NEEDS
}

/// The fewest episodes a strategy must have acted on, with a need met there, for its retention there to count
/// as evidence (and the fewest an interval is given over), unless the config or `--min-episodes` says
/// otherwise.
pub const DEFAULT_MIN_EPISODES: u64 = 5;

fn default_min_episodes() -> u64 {
    DEFAULT_MIN_EPISODES
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_default_min_episodes(n: &u64) -> bool {
    *n == DEFAULT_MIN_EPISODES
}

/// Everything a run needs besides the dataset; read from TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    /// Recorded in the summary; the mock LLM and the replay use no randomness.
    pub seed: u64,
    /// The context window, in tokens, of an episode whose trace names no model or whose model the price table
    /// gives no input limit; the others (the bundled dataset's gpt-4o included) take their model's input limit
    /// from the table, and [`RunConfig::window`] sets every episode's.
    pub context_window: usize,
    /// Every episode's window, in tokens, whatever its model (`--window`): a what-if of a smaller window, or a
    /// model the table does not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<usize>,
    /// The retention at need the recommendation asks of a strategy (`--min-retention`).
    #[serde(default = "default_min_retention")]
    pub min_retention: f64,
    /// The fewest needs a strategy must have met on the episodes it acted on for its retention there to
    /// count as evidence (`--min-needs`).
    #[serde(
        default = "default_min_needs",
        skip_serializing_if = "is_default_min_needs"
    )]
    pub min_needs: u64,
    /// The fewest episodes a strategy must have acted on, with a need met from its first act on, for its
    /// retention there to count as evidence; under it no interval is given either (`--min-episodes`).
    #[serde(
        default = "default_min_episodes",
        skip_serializing_if = "is_default_min_episodes"
    )]
    pub min_episodes: u64,
    /// Recommend on savings alone where no found finding is needed anywhere, so that retention measured
    /// nothing (`--recommend-without-retention`); by default nothing is recommended then.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recommend_without_retention: bool,
    /// Whether the replay sends the blocks of context the traces did not record (`--unrecorded`).
    #[serde(default, skip_serializing_if = "UnrecordedMode::is_keep")]
    pub unrecorded: UnrecordedMode,
    /// Tokenizer settings.
    pub tokenizer: TokenizerConfig,
    /// The mock LLM's latency model and summary budget.
    pub mock: MockConfig,
    /// Prices.
    pub pricing: PricingConfig,
    /// A real OpenAI-compatible LLM for the strategies' calls and the probes; the mock when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<OpenAiConfig>,
    /// A real OpenAI-compatible model that grades the answers of open probes (`llm::judge`); the mock's
    /// deterministic stand-in when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<OpenAiConfig>,
    /// The strategies to compare, by name.
    pub strategies: Vec<NamedStrategy>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            seed: 42,
            context_window: 128_000,
            window: None,
            min_retention: DEFAULT_MIN_RETENTION,
            min_needs: DEFAULT_MIN_NEEDS,
            min_episodes: DEFAULT_MIN_EPISODES,
            recommend_without_retention: false,
            unrecorded: UnrecordedMode::Keep,
            tokenizer: TokenizerConfig::default(),
            mock: MockConfig::default(),
            pricing: PricingConfig::default(),
            llm: None,
            judge: None,
            strategies: strategy::defaults(),
        }
    }
}

impl RunConfig {
    /// What counts this run's tokens, and the agent model it stands in for when it is not that model's own
    /// tokenizer: OpenAI's encodings are their models' own; any other provider's model (Claude, Gemini,
    /// DeepSeek, …) counted with one of them is counted by a stand-in.
    #[must_use]
    pub fn tokenizer_info(&self) -> crate::report::TokenizerInfo {
        crate::report::TokenizerInfo {
            stands_in_for: self
                .pricing
                .agent_model
                .as_deref()
                .and_then(|m| self.stand_in_for(m)),
            model_own: self.tokenizer.is_model_own(),
            name: self.tokenizer.describe(),
        }
    }

    /// `model`, when this run's tokenizer stands in for its own (see [`RunConfig::tokenizer_info`]).
    #[must_use]
    pub fn stand_in_for(&self, model: &str) -> Option<String> {
        let openai = crate::tokens::is_openai_model(model);
        (!self.tokenizer.is_model_own() && !openai).then(|| model.to_owned())
    }

    /// What the report reads of this configuration.
    #[must_use]
    pub fn report_settings(&self) -> crate::report::Settings {
        crate::report::Settings {
            context_window: self.context_window,
            agent_model: self.pricing.agent_model.clone(),
            strategy_model: self.strategy_model().map(str::to_owned),
            real_llm: self.llm.is_some(),
            strategies: self.strategies.clone(),
        }
    }

    /// Reads a TOML config file.
    ///
    /// # Errors
    /// Names the file and the TOML problem (line and key).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = crate::bundled::read_to_string(path)?;
        let config: Self = toml::from_str(&text)
            .map_err(|e| Error::Config(format!("'{}': {e}", path.display())))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the config.
    ///
    /// # Errors
    /// Names the value at fault.
    pub fn validate(&self) -> Result<()> {
        if self.context_window == 0 || self.window == Some(0) {
            return Err(Error::Config(
                "context_window and window must be above 0".into(),
            ));
        }
        if self.strategies.is_empty() {
            return Err(Error::Config("no strategy to compare".into()));
        }
        if !(0.0..=1.0).contains(&self.min_retention) {
            return Err(Error::Config(format!(
                "min_retention {} is outside [0, 1] (a share: 0.9 asks for 90% of findings where needed)",
                self.min_retention
            )));
        }
        PriceTable::with_models(self.pricing.models.clone())?;
        strategy::validate_all(&self.strategies)
    }

    /// The same configuration comparing what an agent sent where it compacted its own context: `as_recorded`
    /// after the baseline, unless a strategy of its type is there already.
    #[must_use]
    pub fn with_as_recorded(&self) -> Self {
        let mut config = self.clone();
        if config
            .strategies
            .iter()
            .any(|s| matches!(s.config, strategy::StrategyConfig::AsRecorded(_)))
        {
            return config;
        }
        let at = config
            .strategies
            .iter()
            .position(|s| s.config.is_baseline())
            .map_or(0, |i| i + 1);
        let name = if config.strategies.iter().any(|s| s.name == "as_recorded") {
            "as_recorded (agent)"
        } else {
            "as_recorded"
        };
        config.strategies.insert(
            at,
            NamedStrategy::new(
                name,
                strategy::StrategyConfig::AsRecorded(strategy::AsRecordedConfig::default()),
            ),
        );
        config
    }

    /// The configuration a run on `dataset` uses: this one, with `as_recorded` ([`RunConfig::with_as_recorded`])
    /// where an episode records its agent's own compaction.
    ///
    /// # Errors
    /// When a dataset file cannot be read.
    pub fn for_dataset(&self, dataset: &Path) -> Result<std::borrow::Cow<'_, Self>> {
        Ok(if has_recorded_compaction(dataset)? {
            std::borrow::Cow::Owned(self.with_as_recorded())
        } else {
            std::borrow::Cow::Borrowed(self)
        })
    }

    /// Keeps only the strategies named in `names` (comma-separated lists are split), in that order.
    ///
    /// # Errors
    /// Names an unknown strategy and lists the known ones.
    pub fn select(&mut self, names: &[String]) -> Result<()> {
        let presets: Vec<String> = strategy::presets::presets()
            .iter()
            .map(|p| p.name.to_owned())
            .collect();
        let defaults: Vec<String> = strategy::defaults().into_iter().map(|s| s.name).collect();
        let wanted: Vec<&str> = names
            .iter()
            .flat_map(|n| n.split(','))
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .flat_map(|n| match n {
                "presets" => std::iter::once("none")
                    .chain(presets.iter().map(String::as_str))
                    .collect(),
                "all" => defaults
                    .iter()
                    .chain(&presets)
                    .map(String::as_str)
                    .collect(),
                _ => vec![n],
            })
            .collect();
        let mut picked = Vec::new();
        for name in wanted {
            let found = self
                .strategies
                .iter()
                .chain(strategy::defaults().iter())
                .find(|s| s.name == name)
                .cloned()
                .or_else(|| strategy::presets::find(name));
            match found {
                Some(s) if !picked.iter().any(|p: &NamedStrategy| p.name == s.name) => {
                    picked.push(s)
                }
                Some(_) => {}
                None => {
                    let known: Vec<String> =
                        self.strategies.iter().map(|s| s.name.clone()).collect();
                    return Err(Error::Config(format!(
                        "unknown strategy '{name}'; this config has: {}; `ctxbench strategies` lists the \
                         built-in ones and the presets ('presets' selects them all)",
                        known.join(", ")
                    )));
                }
            }
        }
        self.strategies = picked;
        self.validate()
    }

    /// What is legal but likely not meant: a sliding window's absolute token budget at or above the context
    /// window (`--window` below its `max_tokens`).
    #[must_use]
    pub fn warnings(&self) -> Vec<String> {
        fn walk(v: &serde_json::Value, name: &str, window: usize, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(map) => {
                    let budget = map.get("max_tokens").and_then(serde_json::Value::as_u64);
                    if map.get("type").and_then(serde_json::Value::as_str) == Some("sliding_window")
                    {
                        if let Some(budget) = budget.filter(|&b| b >= window as u64) {
                            out.push(format!(
                                "strategy '{name}': its sliding window keeps up to {budget} tokens, at or above \
                                 the {window}-token context window, so its requests may not fit the window; set \
                                 window_share (a share of the window) or a smaller max_tokens"
                            ));
                        }
                    }
                    for v in map.values() {
                        walk(v, name, window, out);
                    }
                }
                serde_json::Value::Array(items) => {
                    for v in items {
                        walk(v, name, window, out);
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        for s in &self.strategies {
            if let Ok(v) = serde_json::to_value(&s.config) {
                walk(&v, &s.name, self.context_window, &mut out);
            }
        }
        out
    }

    /// The price table: built-in prices overridden by the config's.
    #[must_use]
    pub fn price_table(&self) -> PriceTable {
        PriceTable {
            models: self.pricing.models.clone(),
        }
    }

    /// The prices of the agent's and the strategies' models (`None` where unknown).
    #[must_use]
    pub fn prices(&self) -> Prices {
        let table = self.price_table();
        Prices {
            // The mock's stand-in judge costs nothing.
            judge: match &self.judge {
                Some(j) => table.get(&j.model),
                None => Some(crate::llm::pricing::Price::new(0.0, 0.0, 0.0)),
            },
            agent: self
                .pricing
                .agent_model
                .as_deref()
                .and_then(|m| table.get(m)),
            agent_switches: Vec::new(),
            strategy: self
                .strategy_model()
                .or(self.pricing.agent_model.as_deref())
                .and_then(|m| table.get(m)),
        }
    }

    /// The model the strategies' own calls (summaries) are priced and labelled as, when the config names one:
    /// `[pricing] strategy_model`, else the real `[llm]`'s model (which writes them), else `[mock] model`.
    /// `None`: each episode's own model, as the agent that summarizes with the model it runs on.
    #[must_use]
    pub fn strategy_model(&self) -> Option<&str> {
        self.pricing
            .strategy_model
            .as_deref()
            .or(self.llm.as_ref().map(|l| l.model.as_str()))
            .or(self.mock.model.as_deref())
    }

    /// What the metrics of this run need besides the records, for an episode whose trace names no model.
    #[must_use]
    pub fn context(&self) -> Context {
        Context {
            prices: self.prices(),
            context_window: self.window.unwrap_or(self.context_window),
        }
    }

    /// How this run takes each episode's model, price and window.
    #[must_use]
    pub fn model_defaults(&self) -> Defaults {
        Defaults {
            table: self.price_table(),
            agent_model: self.pricing.agent_model.clone(),
            context_window: self.context_window,
            window: self.window,
        }
    }

    /// What the metrics of `episode` need besides the records: its model's prices (from each switch of model
    /// on, the switch's) and its window; and how its model was taken, for the reports.
    #[must_use]
    pub fn episode_context(&self, defaults: &Defaults, episode: &Episode) -> (Context, ModelUse) {
        let (calls, model) = defaults.resolve(episode);
        let prices = self.prices();
        let context = Context {
            prices: Prices {
                // Without a model named for them, the strategies' calls are the episode's model's.
                strategy: if self.strategy_model().is_some() {
                    prices.strategy
                } else {
                    calls.main
                },
                agent: calls.main,
                agent_switches: calls.switches,
                ..prices
            },
            context_window: model.window,
        };
        (context, model)
    }
}

/// SHA-256 of the dataset files under `path`, in file order.
///
/// # Errors
/// Names the file that could not be read.
pub fn dataset_sha256(path: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    for file in dataset_files(path)? {
        let mut f = crate::history::dataset::open_file(&file)?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f.read(&mut buf).map_err(|e| Error::io("read", &file, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// Whether an episode of the dataset at `path` records its agent's own compaction (a line holding the key
/// [`crate::history::recorded::META_KEY`]): a run then compares what the agent sent too, as `as_recorded`.
///
/// # Errors
/// When a file cannot be read.
pub fn has_recorded_compaction(path: &Path) -> Result<bool> {
    let needle = format!("\"{}\"", crate::history::recorded::META_KEY);
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    for file in dataset_files(path)? {
        let mut f = crate::history::dataset::open_file(&file)?;
        // Chunks that overlap by the needle's length, so that no occurrence falls between two.
        let keep = needle.len() - 1;
        let mut buf = vec![0u8; (1 << 16) + keep];
        let mut held = 0;
        loop {
            let n = f
                .read(&mut buf[held..])
                .map_err(|e| Error::io("read", &file, e))?;
            if n == 0 {
                break;
            }
            let end = held + n;
            if finder.find(&buf[..end]).is_some() {
                return Ok(true);
            }
            let tail = end.min(keep);
            buf.copy_within(end - tail..end, 0);
            held = tail;
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Item;
    use crate::replay::StepRecord;
    use crate::strategy::LlmCall;

    fn episode(model: Option<&str>) -> Episode {
        Episode {
            items: vec![Item::user("a"), Item::assistant("1")],
            stopped: true,
            model: model.map(str::to_owned),
            ..Episode::default()
        }
    }

    /// What a strategy's summary call of 1,000 tokens in and 100 out costs in `episode` under `config`.
    fn summary_cost(config: &RunConfig, episode: &Episode) -> f64 {
        let (context, _) = config.episode_context(&config.model_defaults(), episode);
        let step = StepRecord {
            llm_calls: vec![LlmCall {
                input_tokens: 1000,
                output_tokens: 100,
                latency_ms: 0.0,
                error: None,
            }],
            ..StepRecord::default()
        };
        context.prices.strategy_cost(&step).unwrap()
    }

    /// The strategies' own calls are the model the config names for them (`[pricing] strategy_model`, else
    /// `[mock] model`); without one, each episode's own model: per million tokens, claude-opus-4-5 $5 in and
    /// $25 out, gpt-4o $2.50 and $10, gpt-4o-mini $0.15 and $0.60.
    #[test]
    fn summaries_are_priced_as_the_named_model_else_the_episodes_own() {
        let opus = episode(Some("claude-opus-4-5-20251101"));
        let unnamed = episode(None);
        let mut config = RunConfig::default();
        assert_eq!(config.strategy_model(), None);
        let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} ≠ {b}");
        // 1,000 × $5 + 100 × $25, per million.
        close(summary_cost(&config, &opus), 0.0075);
        // An episode that names no model is unpriced where the configuration names no agent model, and is
        // the configuration's agent model where it does, gpt-4o: 1,000 × $2.50 + 100 × $10.
        let (context, _) = config.episode_context(&config.model_defaults(), &unnamed);
        assert_eq!(context.prices.strategy, None);
        config.pricing.agent_model = Some("gpt-4o".into());
        close(summary_cost(&config, &unnamed), 0.0035);
        config.mock.model = Some("gpt-4o".into());
        assert_eq!(config.strategy_model(), Some("gpt-4o"));
        close(summary_cost(&config, &opus), 0.0035);
        config.pricing.strategy_model = Some("gpt-4o-mini".into());
        assert_eq!(config.strategy_model(), Some("gpt-4o-mini"));
        // 1,000 × $0.15 + 100 × $0.60.
        close(summary_cost(&config, &opus), 0.00021);
        close(summary_cost(&config, &unnamed), 0.00021);
        assert_eq!(
            config.report_settings().strategy_model.as_deref(),
            Some("gpt-4o-mini")
        );
    }
}
