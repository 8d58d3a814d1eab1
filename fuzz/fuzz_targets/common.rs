//! What every importer target checks: arbitrary text either imports or gives an error, never a panic; an
//! imported episode validates (or is reported) and survives a JSON round trip.

use ctxbench::history::import::import_text;

// Each target uses one of the two checks.
#[allow(dead_code)]
pub fn check_import(data: &[u8], format: Option<&str>) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for episode in import_text(text, std::path::Path::new("fuzz"), format)
        .into_iter()
        .flatten()
    {
        let _ = ctxbench::history::validate::check_episode(&episode);
        let line = serde_json::to_string(&episode).expect("an imported episode serializes");
        ctxbench::history::dataset::parse_episode(&line).expect("an imported episode parses back");
    }
}

/// [`check_import`] for formats that take bytes (an Inspect AI `.eval` zip archive as well as text).
#[allow(dead_code)]
pub fn check_import_bytes(data: &[u8], format: Option<&str>) {
    for episode in ctxbench::history::import::import_bytes(data, std::path::Path::new("fuzz"), format)
        .into_iter()
        .flatten()
    {
        let _ = ctxbench::history::validate::check_episode(&episode);
        let line = serde_json::to_string(&episode).expect("an imported episode serializes");
        ctxbench::history::dataset::parse_episode(&line).expect("an imported episode parses back");
    }
}
