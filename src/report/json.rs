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
