//! What a report renders: the typed results of a run ([`RunReport`], written as `summary.json`), with what it
//! reads of the run's configuration ([`Settings`]).

use serde::{Deserialize, Serialize};

use crate::metrics::needs::LostFinding;
use crate::metrics::series::ChartData;
use crate::metrics::StrategyMetrics;

use super::{analysis, explorer, recommend};

/// Everything a report needs about a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Format version of `summary.json`.
    pub version: u32,
    /// The ctxbench version that wrote it.
    pub tool_version: String,
    /// The run's name.
    pub run: String,
    /// Whether every episode finished.
    pub complete: bool,
    /// The dataset.
    pub dataset: DatasetInfo,
    /// The full configuration, so the run can be repeated.
    pub config: serde_json::Value,
    /// What the report reads of the configuration, typed (from the run's configuration, or read back from
    /// `config` by [`rebuild::load`]).
    #[serde(skip)]
    pub settings: Settings,
    /// What counted the tokens, and for which model it stands in when it is not the agent model's own.
    #[serde(default)]
    pub tokenizer: TokenizerInfo,
    /// Per source format, the baseline's replay against the usage the traces record (empty for data that
    /// records none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelity: Vec<crate::metrics::fidelity::FormatFidelity>,
    /// The models the traces name, each with the source of its price, its window and its episodes (empty when
    /// no trace names one: every episode is then the configuration's agent model, in its `context_window`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<crate::llm::pricing::ModelGroup>,
    /// Per-strategy results, in configuration order.
    pub strategies: Vec<StrategyMetrics>,
    /// What to pick: the cheapest strategy that qualifies under the run's rule, and every strategy's standing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<recommend::Recommendation>,
    /// What the analysis decided besides the pick: the intervals each figure shows, the reading's facts, the
    /// general sentences the data supports (required: a summary without it was written by another version).
    pub analysis: analysis::Analysis,
    /// Per strategy, the findings it lost at the most needs (at most [`MOST_LOST`] each; ties in dataset
    /// order).
    #[serde(default)]
    pub most_lost: Vec<LostFinding>,
    /// Paired differences between neighbours on the Pareto frontier of savings and retention at need, with
    /// their 95% intervals.
    #[serde(default)]
    pub comparisons: Vec<crate::metrics::intervals::PairedDifference>,
    /// One thing each summarizing strategy had its model write (the first, in dataset order).
    #[serde(default)]
    pub examples: Vec<crate::metrics::ExampleCall>,
    /// Episodes left out of every figure because an LLM call failed (`--keep-going`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedEpisode>,
    /// Known limits of these numbers.
    pub notes: Vec<String>,
    /// Time per strategy (written to `timings.csv` only).
    #[serde(skip)]
    pub timings: Vec<Timing>,
    /// Per-step series for the charts (of the episode with the largest baseline context).
    #[serde(skip)]
    pub charts: ChartData,
    /// The explorer pages in the run directory (`episodes/`), which the reports link: an episode named in them
    /// links to its page with every strategy, and every page is listed.
    #[serde(skip)]
    pub pages: Vec<explorer::PageFile>,
}

impl RunReport {
    /// The largest window any episode was replayed in: its model's (`models`), or the configuration's for the
    /// episodes that name none (all of them when `models` is empty).
    #[must_use]
    pub fn largest_window(&self) -> usize {
        crate::llm::pricing::ModelGroup::largest_window(
            &self.models,
            self.dataset.episodes,
            self.settings.context_window,
        )
    }
}

/// What the report reads of a run's configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The agent model's context window, in tokens.
    pub context_window: usize,
    /// The model of episodes whose trace names none (`[pricing] agent_model`); `None`: they are unpriced.
    pub agent_model: Option<String>,
    /// The strategies' model, as priced, when the configuration names one (`[pricing] strategy_model`, else
    /// `[llm]`'s, else `[mock]`'s); `None`: each episode's own.
    pub strategy_model: Option<String>,
    /// Whether a real model answered (`[llm]`): else the mock's summaries and answers.
    pub real_llm: bool,
    /// The strategies, in order.
    pub strategies: Vec<crate::strategy::NamedStrategy>,
}

impl Settings {
    /// The settings recorded in a `summary.json`'s `config`.
    #[must_use]
    pub fn from_config(config: &serde_json::Value) -> Self {
        let llm_model = config["llm"]["model"].as_str().map(str::to_owned);
        Self {
            context_window: config["context_window"]
                .as_u64()
                .map_or(0, |w| usize::try_from(w).unwrap_or(usize::MAX)),
            agent_model: config["pricing"]["agent_model"].as_str().map(str::to_owned),
            strategy_model: config["pricing"]["strategy_model"]
                .as_str()
                .map(str::to_owned)
                .or(llm_model)
                .or_else(|| config["mock"]["model"].as_str().map(str::to_owned)),
            real_llm: !config.get("llm").is_none_or(serde_json::Value::is_null),
            strategies: serde_json::from_value(config["strategies"].clone()).unwrap_or_default(),
        }
    }
}

/// What counted a run's tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerInfo {
    /// The tokenizer (`o200k_base`, or a `tokenizer.json` with its chat template).
    pub name: String,
    /// The agent model whose own tokenizer it stands in for, when it is not that model's (a Claude model
    /// counted with `o200k_base`: Anthropic publishes no tokenizer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stands_in_for: Option<String>,
    /// Whether it is the agent model's own (a tokenizer.json given with `--tokenizer`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_own: bool,
}

/// An episode left out because an LLM call failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedEpisode {
    /// The episode.
    pub episode: String,
    /// The failure.
    pub error: String,
}

/// One strategy's times: its own compute per call point (LLM calls excluded) and its LLM calls (probes
/// included) as the client measured them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// The strategy.
    pub strategy: String,
    /// Median compute time of a call point, in microseconds.
    pub compute_p50_us: f64,
    /// 95th percentile of it.
    pub compute_p95_us: f64,
    /// LLM calls.
    pub llm_calls: u64,
    /// Median LLM call latency, in milliseconds.
    pub llm_p50_ms: f64,
    /// 95th percentile of it.
    pub llm_p95_ms: f64,
}

/// The dataset a run read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetInfo {
    /// Path as given.
    pub path: String,
    /// SHA-256 of the dataset files' bytes, in file order; empty in a shard's summary (a shard does not hash the
    /// other shards' lines: `merge` hashes the dataset, and checks each shard's lines against it).
    pub sha256: String,
    /// A shard's: the digest of its own lines (`history::dataset::LinesDigest`), the dataset as it read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_xxh3: Option<String>,
    /// Episodes replayed.
    pub episodes: usize,
    /// Items in those episodes.
    pub items: usize,
}
