//! The dataset parser and validator on arbitrary bytes: a line either parses or gives an error, never a panic.
#![no_main]

use ctxbench::history::dataset::{parse_episode, DatasetReader};
use ctxbench::history::validate::check_episode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Whole files, through the streaming reader (BOM, CRLF, invalid UTF-8, blank lines).
    for episode in DatasetReader::new(data, std::path::Path::new("fuzz.jsonl")).flatten() {
        let _ = check_episode(&episode.1);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(episode) = parse_episode(text) {
            let _ = check_episode(&episode);
        }
    }
});
