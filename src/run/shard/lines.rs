//! The merge's one pass over the dataset: its SHA-256 for the merged summary (what one run records), and each
//! line checked against the hash the shard that replayed it journaled. A shard never hashes the other shards'
//! lines; between them the N shards vouch for every line, and the merge holds each to its own.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::ShardDir;
use crate::error::{Error, Result};
use crate::history::dataset::{for_each_line, line_hash};

/// What to do when the dataset the merge reads is not the one the shards replayed.
const WHAT_TO_DO: &str =
    "run the shards again on the dataset as it is, or give the dataset they replayed with \
                          --dataset PATH";

/// The dataset to check the shards against: `given` (`merge --dataset`), else the one their summaries name.
///
/// # Errors
/// A dataset that is not there (saying where it was looked for and how to give it), or shards whose summaries
/// name different datasets.
pub(super) fn dataset_of(shards: &[ShardDir], given: Option<&Path>) -> Result<PathBuf> {
    let dataset = match given {
        Some(path) => path.to_owned(),
        None => {
            let mut named = shards
                .iter()
                .filter_map(|s| s.dataset.as_deref().map(|d| (s, d)));
            let Some((first, path)) = named.next() else {
                return Err(Error::Config(format!(
                    "no shard's summary.json names its dataset (is '{}' missing?): give the dataset the shards \
                     replayed with --dataset PATH",
                    shards[0].dir.join("summary.json").display()
                )));
            };
            if let Some((other, its)) = named.find(|(_, d)| d != &path) {
                return Err(Error::Config(format!(
                    "'{}' replayed the dataset '{path}' and '{}' '{its}': shards of different datasets (or of one \
                     dataset under two paths: then give it with --dataset PATH)",
                    first.dir.display(),
                    other.dir.display()
                )));
            }
            PathBuf::from(path)
        }
    };
    if !dataset.exists() && !crate::bundled::is_generated_dataset(&dataset) {
        let how = if given.is_some() {
            "check the path given with --dataset"
        } else {
            "run `ctxbench merge` from where the shards were run, or give the dataset with --dataset PATH"
        };
        return Err(Error::Config(format!(
            "the dataset '{}' is not there: the merge reads it once, to check each shard's lines and to hash it \
             for the merged summary; {how}",
            dataset.display()
        )));
    }
    Ok(dataset)
}

/// Reads `dataset` once: each line at position k must hash as shard k mod N's (k div N)-th entry says, and the
/// shards must hold every line. Returns the dataset's SHA-256, as a run computes it.
///
/// # Errors
/// A line no shard replayed as it is now (naming the line, its file, the shard and its directory), a dataset
/// with more or fewer episodes than the shards replayed, or a file that cannot be read.
pub(super) fn check_lines(dataset: &Path, shards: &[ShardDir]) -> Result<String> {
    let count = shards.len();
    let replayed: usize = shards.iter().map(|s| s.lines.len()).sum();
    let mut sha256 = Sha256::new();
    let mut positions = 0;
    for_each_line(dataset, |line| {
        sha256.update(line.bytes);
        let Some(k) = line.position else {
            return Ok(());
        };
        positions = k + 1;
        let shard = &shards[k % count];
        match shard.lines.get(k / count) {
            Some(&hash) if hash != line_hash(line.bytes) => Err(Error::Config(format!(
                "line {} of '{}' is not the line shard {}/{count} in '{}' replayed there (its episode '{}'): the \
                 dataset changed since that shard ran, or is not the one the shards read; {WHAT_TO_DO}",
                line.line,
                line.file.display(),
                shard.shard.index,
                shard.dir.display(),
                shard.episodes[k / count],
            ))),
            _ => Ok(()),
        }
    })?;
    if positions != replayed {
        return Err(Error::Config(format!(
            "'{}' holds {positions} episodes where the {count} shards replayed {replayed}: the dataset changed \
             since they ran, or is not the one they read; {WHAT_TO_DO}",
            dataset.display()
        )));
    }
    Ok(format!("{:x}", sha256.finalize()))
}
