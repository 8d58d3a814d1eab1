//! `summary.json`: version first, then the run, the dataset, the config and per-strategy results.

use super::{Exporter, RunReport};
use crate::error::{Error, Result};

/// The self-describing summary a run can be re-reported from.
pub struct SummaryJson;

impl Exporter for SummaryJson {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }
    fn serialize(&self, run: &RunReport) -> Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(run).map_err(|e| Error::Serialize {
            what: "summary.json",
            message: e.to_string(),
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// `llm_calls.jsonl`: one line per LLM call of the run (a strategy's summary, a probe's question), with how
/// the call went and what the model said ([`crate::replay::calls::CallRecord`]), episode by episode.
pub struct LlmCallsJsonl;

/// A line of `llm_calls.jsonl`: the call's episode and strategy, then the call.
#[derive(serde::Serialize)]
struct CallLine<'a> {
    episode: &'a str,
    strategy: &'a str,
    #[serde(flatten)]
    call: &'a crate::replay::calls::CallRecord,
}

impl super::RowExporter for LlmCallsJsonl {
    fn file_name(&self) -> &'static str {
        "llm_calls.jsonl"
    }

    fn header(&self) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn rows(&self, episode: &crate::metrics::EpisodeResult) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for (strategy, calls) in &episode.calls {
            for call in calls {
                serde_json::to_writer(
                    &mut out,
                    &CallLine {
                        episode: &episode.episode,
                        strategy,
                        call,
                    },
                )
                .map_err(|e| Error::Serialize {
                    what: "llm_calls.jsonl",
                    message: e.to_string(),
                })?;
                out.push(b'\n');
            }
        }
        Ok(out)
    }

    fn json_lines(&self) -> bool {
        true
    }
}
