//! `ctxbench run --dry-run`: what a run with a real LLM would send and cost, without sending anything.
//!
//! The dataset is replayed with the mock LLM standing in for the model; every call a strategy or a probe
//! makes is counted as the real client would send it: identical requests of one episode once (the client
//! shares them), input tokens by the tokenizer's chat accounting, output tokens as the mock's answer (capped at
//! `[llm] max_tokens` when set), priced at the model's uncached price. The mock's summaries are as long as its
//! `summary_max_tokens` budget lets them be, so the output estimate is of that order; a model that writes
//! longer or shorter summaries moves it, and a summary that differs changes what later calls send.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Mutex;

use rayon::prelude::*;

use super::pipeline::replay_episode;
use super::RunConfig;
use crate::error::{Error, Result};
use crate::history::dataset::stream;
use crate::llm::mock::MockLlm;
use crate::llm::pricing::Price;
use crate::llm::{CallMeta, EpisodeHint, Llm, LlmRequest, LlmResponse};
use crate::replay::calls::Purpose;
use crate::replay::EpisodeReplay;

/// The estimate for one strategy's calls of one purpose.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DryRow {
    /// The strategy.
    pub strategy: String,
    /// Summaries (its own calls) or probes.
    pub purpose: Purpose,
    /// Calls made.
    pub calls: u64,
    /// Requests sent: calls less those identical to an earlier one of the same episode.
    pub requests: u64,
    /// Input tokens of the requests sent.
    pub input_tokens: u64,
    /// Output tokens of the requests sent.
    pub output_tokens: u64,
}

/// What a run would send and cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DryRun {
    /// The model called.
    pub model: String,
    /// Its price, when known.
    pub price: Option<Price>,
    /// The judge (`[judge]`, or the mock's stand-in, which costs nothing) and its price.
    pub judge: (String, Option<Price>),
    /// Episodes replayed.
    pub episodes: usize,
    /// Per strategy and purpose, in config order (summaries, then probes).
    pub rows: Vec<DryRow>,
}

impl DryRow {
    /// The cost of the requests sent, at the uncached price.
    #[must_use]
    pub fn usd(&self, price: Option<Price>) -> Option<f64> {
        price.map(|p| p.cost_usd_no_cache(self.input_tokens, self.output_tokens))
    }
}

impl DryRun {
    /// The estimate as a Markdown table with its total.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        let usd = |v: Option<f64>| v.map_or_else(|| "unknown".into(), |v| format!("${v:.4}"));
        let mut out = format!(
            "Dry run: {} episodes, model {}, judge {} (nothing was sent)\n\n| strategy | calls for | calls | requests sent | input tokens | output tokens | USD |\n|---|---|---:|---:|---:|---:|---:|\n",
            self.episodes, self.model, self.judge.0
        );
        let mut total = DryRow::default();
        let mut total_usd = Some(0.0);
        for r in &self.rows {
            let price = if r.purpose == Purpose::Judge {
                self.judge.1
            } else {
                self.price
            };
            let cost = r.usd(price);
            total_usd = total_usd.zip(cost).map(|(a, b)| a + b);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.strategy,
                match r.purpose {
                    Purpose::Strategy => "summaries",
                    Purpose::Probe => "probes",
                    Purpose::Judge => "judge",
                },
                r.calls,
                r.requests,
                r.input_tokens,
                r.output_tokens,
                usd(cost)
            );
            total.calls += r.calls;
            total.requests += r.requests;
            total.input_tokens += r.input_tokens;
            total.output_tokens += r.output_tokens;
        }
        let _ = writeln!(
            out,
            "| total | | {} | {} | {} | {} | {} |",
            total.calls,
            total.requests,
            total.input_tokens,
            total.output_tokens,
            usd(total_usd)
        );
        out.push_str(
            "\nOutput tokens are the mock's (summaries up to its summary_max_tokens, capped at [llm] max_tokens); \
             requests identical to an earlier one of the same episode are sent once. --max-cost USD stops a \
             real run before it passes a sum.\n",
        );
        out
    }
}

/// The mock, with each answer marked by a hash of its request, so identical requests can be told apart.
struct Hashing<'m>(&'m MockLlm);

impl Llm for Hashing<'_> {
    fn model(&self) -> &str {
        self.0.model()
    }

    fn generate(&self, request: &LlmRequest) -> Result<LlmResponse> {
        let mut response = self.0.generate(request)?;
        let bytes = serde_json::to_vec(request).unwrap_or_default();
        response.meta = CallMeta {
            request_hash: Some(format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes))),
            ..CallMeta::default()
        };
        Ok(response)
    }

    fn start_episode(&self, hint: &EpisodeHint<'_>) {
        self.0.start_episode(hint);
    }
}

/// One episode's rows, keyed by the strategy's position in the config (the baseline first) and the calls'
/// purpose: the calls made, and of the distinct requests among them (an identical request is sent once) the
/// input and output tokens, the output capped at the model's `max_tokens`.
fn episode_rows(
    config: &RunConfig,
    replayed: &super::pipeline::Replays,
    cap: Option<u64>,
) -> Vec<((usize, u8), DryRow)> {
    let all: Vec<&EpisodeReplay> = replayed
        .own_baseline()
        .into_iter()
        .chain(&replayed.replays)
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut local: Vec<((usize, u8), DryRow)> = Vec::new();
    for &r in &all {
        // The baseline comes first; when it is also a configured strategy it is counted once.
        let Some(at) = (if r.strategy == "(baseline)" {
            Some(0)
        } else {
            config
                .strategies
                .iter()
                .position(|s| s.name == r.strategy)
                .map(|p| p + 1)
        }) else {
            continue;
        };
        if local
            .iter()
            .any(|((a, _), row)| *a == at && row.strategy == r.strategy)
        {
            continue;
        }
        for purpose in [Purpose::Strategy, Purpose::Probe, Purpose::Judge] {
            let mut row = DryRow {
                strategy: r.strategy.clone(),
                purpose,
                ..DryRow::default()
            };
            for c in r.calls.iter().filter(|c| c.purpose == purpose) {
                row.calls += 1;
                if c.request_hash.clone().is_some_and(|h| seen.insert(h)) {
                    row.requests += 1;
                    row.input_tokens += c.input_tokens;
                    row.output_tokens += cap.map_or(c.output_tokens, |m| c.output_tokens.min(m));
                }
            }
            local.push(((at, purpose as u8), row));
        }
    }
    local
}

/// Estimates what `config`'s run on `dataset` would send to its `[llm]`.
///
/// # Errors
/// A config without `[llm]`, or a dataset that cannot be read.
pub fn dry_run(config: &RunConfig, dataset: &Path) -> Result<DryRun> {
    config.validate()?;
    let llm = config.llm.as_ref().ok_or_else(|| {
        Error::Config(
            "--dry-run estimates the calls to a real LLM: the config has no [llm] (with the mock, a run costs \
             nothing)"
                .into(),
        )
    })?;
    // Nothing is sent: the mock answers, each answer marked by its request.
    let session = super::session::Session::open(config, super::session::Models::MockOnly)?;
    let hashing = Hashing(session.mock());
    let replayer = session.replayer_with(&hashing, &hashing);
    let cap = llm.max_tokens.map(u64::from);
    // (strategy, purpose) → row, keyed by position so the table follows the config.
    let rows: Mutex<BTreeMap<(usize, u8), DryRow>> = Mutex::new(BTreeMap::new());
    let episodes = Mutex::new(0usize);
    stream(dataset)?
        .par_bridge()
        .try_for_each(|entry| -> Result<()> {
            let (_, _, mut episode) = entry?;
            crate::replay::unrecorded::resize(&mut episode, session.tokenizer())?;
            let replayed = replay_episode(&replayer, &episode, &config.strategies)?;
            let local = episode_rows(config, &replayed, cap);
            let mut rows = rows
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (key, row) in local {
                let total = rows.entry(key).or_insert_with(|| DryRow {
                    strategy: row.strategy.clone(),
                    purpose: row.purpose,
                    ..DryRow::default()
                });
                total.calls += row.calls;
                total.requests += row.requests;
                total.input_tokens += row.input_tokens;
                total.output_tokens += row.output_tokens;
            }
            *episodes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
            Ok(())
        })?;
    Ok(DryRun {
        model: llm.model.clone(),
        price: config.prices().strategy,
        judge: (
            config
                .judge
                .as_ref()
                .map_or_else(|| "the mock's stand-in".to_owned(), |j| j.model.clone()),
            config.prices().judge,
        ),
        episodes: episodes
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        rows: rows
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .into_values()
            .filter(|r| r.calls > 0)
            .collect(),
    })
}
