//! ctxbench's own JSONL, copied through (so `import` can mix datasets with traces).

use std::path::Path;

use super::{sure, Importer, Sniff};
use crate::error::Result;
use crate::history::dataset::DatasetReader;
use crate::history::Episode;

/// The native dataset format.
pub struct Native;

impl Importer for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    fn about(&self) -> &'static str {
        "ctxbench's own dataset JSONL (copied through)"
    }

    fn sniff(&self, s: &Sniff<'_>) -> Option<u8> {
        let o = s.first_line.as_ref()?;
        (o.contains_key("items") && o.contains_key("source") && o.contains_key("id"))
            .then_some(sure::CERTAIN)
    }

    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>> {
        DatasetReader::new(text.as_bytes(), origin)
            .map(|r| r.map(|(_, e)| e))
            .collect()
    }
}
