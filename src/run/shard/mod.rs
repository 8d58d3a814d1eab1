//! Shards and their merge. `run --shard I/N` replays the episodes at dataset positions k with k mod N = I (a
//! round-robin split: streamable, no count needed, and the merged order follows from it) and writes a complete
//! run directory of them, keeping its journal as `shard.jsonl`. A shard neither parses nor hashes the other
//! shards' lines: each of its journal's entries holds its own line's hash. `merge` checks that the shards are the
//! N of one run (same configuration and format; each index once), reads the dataset once to hash it and to check
//! every line against the shard that replayed it ([`lines`]), interleaves their rows back into dataset order and
//! re-adds their journaled results in that order — the resume path with every episode finished — so that the
//! tables and per-strategy figures equal one run's byte for byte.

mod lines;
mod tables;

use std::collections::BTreeMap;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use super::journal::{scan_journal, JOURNAL};
use super::writer::{Target, Writer};
use super::{staging, RunConfig};
use crate::error::{Error, Result};

/// What a shard run keeps of its journal: its head (format and configuration) and one entry per episode.
pub const SHARD_FILE: &str = "shard.jsonl";

/// One shard of a run: index `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Zero-based.
    pub index: usize,
    /// How many shards the dataset is split into.
    pub count: usize,
}

impl Shard {
    /// Reads `I/N`, `slurm` (a Slurm array task: I = `SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN`, N =
    /// `SLURM_ARRAY_TASK_COUNT`) or `k8s/N` (a Kubernetes indexed job: I = `JOB_COMPLETION_INDEX`).
    ///
    /// # Errors
    /// A malformed spec, a missing or non-numeric variable, or I ≥ N.
    pub fn parse(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let var = |name: &str| -> Result<usize> {
            let value = env(name).ok_or_else(|| {
                Error::Config(format!("--shard {spec}: the environment has no {name}"))
            })?;
            value.trim().parse().map_err(|_| {
                Error::Config(format!("--shard {spec}: {name} is '{value}', not a number"))
            })
        };
        let number = |s: &str| -> Result<usize> {
            s.trim().parse().map_err(|_| {
                Error::Config(format!(
                    "--shard '{spec}': expected I/N (e.g. 0/4), slurm or k8s/N"
                ))
            })
        };
        let shard = match spec.split_once('/') {
            None if spec == "slurm" => {
                let min =
                    env("SLURM_ARRAY_TASK_MIN").map_or(Ok(0), |_| var("SLURM_ARRAY_TASK_MIN"))?;
                let id = var("SLURM_ARRAY_TASK_ID")?;
                Shard {
                    index: id.checked_sub(min).ok_or_else(|| {
                        Error::Config(format!(
                            "--shard slurm: SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"
                        ))
                    })?,
                    count: var("SLURM_ARRAY_TASK_COUNT")?,
                }
            }
            Some(("k8s", n)) => Shard {
                index: var("JOB_COMPLETION_INDEX")?,
                count: number(n)?,
            },
            Some((i, n)) => Shard {
                index: number(i)?,
                count: number(n)?,
            },
            None => return Err(number("").unwrap_err()),
        };
        if shard.count == 0 || shard.index >= shard.count {
            return Err(Error::Config(format!(
                "--shard {spec}: shard {} of {} does not exist (I counts from 0 and must be below N)",
                shard.index, shard.count
            )));
        }
        Ok(shard)
    }

    /// Whether the episode at dataset position `position` (from 0) is this shard's.
    #[must_use]
    pub fn holds(&self, position: usize) -> bool {
        position % self.count == self.index
    }

    /// The shard as the run's configuration records it.
    #[must_use]
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({"index": self.index, "count": self.count})
    }
}

/// A shard run directory, as the merge reads it.
struct ShardDir {
    dir: PathBuf,
    shard: Shard,
    config: serde_json::Value,
    /// The episode of each journal entry, in its dataset order (the entries themselves are streamed).
    episodes: Vec<String>,
    /// The hash of each of those episodes' lines, as the shard read them.
    lines: Vec<u128>,
    /// The dataset its summary names, if it can be read.
    dataset: Option<String>,
}

fn read_shard(dir: &Path) -> Result<ShardDir> {
    let path = dir.join(SHARD_FILE);
    let file = std::fs::File::open(&path).map_err(|_| {
        Error::Config(format!(
            "'{}' is not a completed shard run: it has no {SHARD_FILE} (run `ctxbench run --shard I/N` to its end, \
             or --resume it)",
            dir.display()
        ))
    })?;
    let mut lines = std::io::BufReader::new(file).lines();
    let head_line = lines
        .next()
        .transpose()
        .map_err(|e| Error::io("read", &path, e))?
        .ok_or_else(|| Error::Parse {
            path: path.clone(),
            line: 1,
            message: "empty shard journal".into(),
        })?;
    // The head is checked as a resume journal's is (format version first).
    let head: serde_json::Value = serde_json::from_str(&head_line).map_err(|e| Error::Parse {
        path: path.clone(),
        line: 1,
        message: format!("not a ctxbench shard journal ({e})"),
    })?;
    if let Some(what) = super::journal::format_mismatch(&head, super::journal::metrics_layout()) {
        return Err(Error::Config(format!(
            "cannot merge '{}': {what}; this ctxbench merges journal format {} with metrics layout {}: run the \
             shards again with this version",
            path.display(),
            super::journal::JOURNAL_VERSION,
            super::journal::metrics_layout()
        )));
    }
    let mut config = head.get("config").cloned().unwrap_or_default();
    let shard = config
        .as_object_mut()
        .and_then(|c| c.remove("shard"))
        .and_then(|s| {
            Some(Shard {
                index: usize::try_from(s.get("index")?.as_u64()?).ok()?,
                count: usize::try_from(s.get("count")?.as_u64()?).ok()?,
            })
        })
        .ok_or_else(|| {
            Error::Config(format!(
                "'{}' is not a shard run: its configuration has no shard",
                dir.display()
            ))
        })?;
    let (mut episodes, mut hashes) = (Vec::new(), Vec::new());
    for (i, line) in lines.enumerate() {
        let line = line.map_err(|e| Error::io("read", &path, e))?;
        #[derive(serde::Deserialize)]
        struct Id {
            episode: String,
            line_xxh3: Option<String>,
        }
        let id: Id = serde_json::from_str(&line).map_err(|e| Error::Parse {
            path: path.clone(),
            line: i + 2,
            message: e.to_string(),
        })?;
        hashes.push(super::journal::line_of(
            &path,
            i + 2,
            id.line_xxh3.as_deref(),
        )?);
        episodes.push(id.episode);
    }
    let dataset = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["dataset"]["path"].as_str().map(str::to_owned));
    Ok(ShardDir {
        dir: dir.to_owned(),
        shard,
        config,
        episodes,
        lines: hashes,
        dataset,
    })
}

/// Checks that `shards` are the N shards of one run, each once, and returns them by index.
fn check(mut shards: Vec<ShardDir>) -> Result<Vec<ShardDir>> {
    let first = shards
        .first()
        .ok_or_else(|| Error::Config("merge needs shard directories".into()))?;
    let count = first.shard.count;
    for s in &shards[1..] {
        if s.shard.count != count {
            return Err(Error::Config(format!(
                "'{}' is a shard of {} and '{}' of {}: they are not from one split",
                first.dir.display(),
                count,
                s.dir.display(),
                s.shard.count
            )));
        }
        if s.config != first.config {
            let differ: Vec<String> = first
                .config
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| s.config.get(k.as_str()) != Some(*v))
                .map(|(k, _)| k.clone())
                .collect();
            return Err(Error::Config(format!(
                "'{}' and '{}' were run with different configurations (they differ in: {}); merge shards of one \
                 run only",
                first.dir.display(),
                s.dir.display(),
                if differ.is_empty() { "keys".to_owned() } else { differ.join(", ") }
            )));
        }
    }
    let mut by_index: BTreeMap<usize, &ShardDir> = BTreeMap::new();
    for s in &shards {
        if let Some(other) = by_index.insert(s.shard.index, s) {
            return Err(Error::Config(format!(
                "shard {}/{count} is given twice: '{}' and '{}'",
                s.shard.index,
                other.dir.display(),
                s.dir.display()
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Config(format!(
            "missing shard(s) {}: merge needs all {count} shard directories",
            missing.join(", ")
        )));
    }
    shards.sort_by_key(|s| s.shard.index);
    // A round-robin split of T episodes gives shard i ⌈(T − i) / N⌉ of them.
    let total: usize = shards.iter().map(|s| s.episodes.len()).sum();
    for s in &shards {
        let expected = (total + count - 1 - s.shard.index) / count;
        if s.episodes.len() != expected {
            return Err(Error::Config(format!(
                "shard {}/{count} in '{}' holds {} episodes where a split of {total} gives it {expected}: was it \
                 run on another dataset, or is it incomplete?",
                s.shard.index,
                s.dir.display(),
                s.episodes.len()
            )));
        }
    }
    Ok(shards)
}

/// The merged dataset order: position k is shard k mod N's (k div N)-th episode.
fn order(shards: &[ShardDir]) -> Vec<(usize, usize)> {
    let total: usize = shards.iter().map(|s| s.episodes.len()).sum();
    (0..total)
        .map(|k| (k % shards.len(), k / shards.len()))
        .collect()
}

/// Merges the shard run directories `dirs` into the run directory `out` (through `OUT.partial`, as a run). The
/// dataset is the one the shards' summaries name, or `dataset` when given (it moved): it is read once, hashed for
/// the merged summary, and each of its lines checked against the shard that replayed it.
///
/// # Errors
/// Shards that are not the N of one run (naming them), a dataset that is missing or is not the one they
/// replayed (naming its line and the shard), unreadable or inconsistent files, or a failed write.
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    name: &str,
    dataset: Option<&Path>,
) -> Result<super::RunOutcome> {
    let shards = check(
        dirs.iter()
            .map(|d| read_shard(d))
            .collect::<Result<Vec<_>>>()?,
    )?;
    let merged = order(&shards);
    // Episode ids are unique across the dataset, as a single run checks.
    let mut seen = std::collections::HashMap::new();
    for s in &shards {
        for e in &s.episodes {
            if let Some(other) = seen.insert(e.as_str(), &s.dir) {
                return Err(Error::Config(format!(
                    "episode '{e}' is in '{}' and in '{}': duplicate episode ids",
                    other.display(),
                    s.dir.display()
                )));
            }
        }
    }
    let dataset = lines::dataset_of(&shards, dataset)?;
    let sha256 = lines::check_lines(&dataset, &shards)?;
    let staging = staging::prepare(out, false)?;
    let result = merge_into(&shards, &merged, &staging, name, &dataset, sha256);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    let outcome = result?;
    staging::swap_in(&staging, out)?;
    Ok(super::RunOutcome {
        dir: out.to_owned(),
        ..outcome
    })
}

/// Writes the merged run `name` of `dataset` (whose SHA-256 is `sha256`) into `staging`.
fn merge_into(
    shards: &[ShardDir],
    merged: &[(usize, usize)],
    staging: &Path,
    name: &str,
    dataset: &Path,
    sha256: String,
) -> Result<super::RunOutcome> {
    // The row tables, those the run's writer appends to (its manager's row exporters), interleaved into
    // dataset order.
    let catalog = std::sync::Arc::new(crate::metrics::Catalog::standard());
    tables::merge_tables(
        shards,
        merged,
        staging,
        &crate::report::ExportManager::standard(staging, &catalog),
    )?;
    // The journal of a run with every episode finished: the shards' entries in dataset order, streamed.
    let config_json = shards[0].config.clone();
    let journal = staging.join(JOURNAL);
    let mut entries = shards
        .iter()
        .map(|s| {
            let path = s.dir.join(SHARD_FILE);
            std::fs::File::open(&path)
                .map(|f| std::io::BufReader::new(f).lines().skip(1))
                .map_err(|e| Error::io("read", &path, e))
        })
        .collect::<Result<Vec<_>>>()?;
    crate::files::write_atomic_with(&journal, |file| {
        let mut w = std::io::BufWriter::new(file);
        let head = super::journal::head_line(&config_json);
        writeln!(w, "{head}")?;
        for &(s, _) in merged {
            let line = entries[s]
                .next()
                .ok_or_else(|| std::io::Error::other("a shard's records ended early"))??;
            writeln!(w, "{line}")?;
        }
        w.flush()
    })?;
    let head = scan_journal(&journal, &config_json)?;
    let mut plain = config_json.clone();
    if let Some(c) = plain.as_object_mut() {
        c.remove("judge_digest");
    }
    let config: RunConfig = serde_json::from_value(plain).map_err(|e| {
        Error::Config(format!(
        "the shards' configuration cannot be read back ({e}): were they run by another ctxbench?"
    ))
    })?;
    let writer = Writer::start(
        &config,
        &config_json,
        Target {
            dataset,
            out: staging,
            name,
            sha256,
            journal: Some(&head),
            // Interleaved above from the shards, every row of every episode in the journal.
            complete_tables: true,
            // The merge adds no episode: its llm_calls.jsonl is the shards'.
            calls: super::CallLog::default_for(&config),
        },
    )?;
    Ok(super::RunOutcome {
        report: writer.finish()?,
        dir: staging.to_owned(),
        llm: None,
        judge: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_come_from_flags_slurm_and_kubernetes() {
        let none = |_: &str| None;
        assert_eq!(
            Shard::parse("2/5", none).unwrap(),
            Shard { index: 2, count: 5 }
        );
        let slurm = |k: &str| match k {
            "SLURM_ARRAY_TASK_ID" => Some("12".to_owned()),
            "SLURM_ARRAY_TASK_MIN" => Some("10".to_owned()),
            "SLURM_ARRAY_TASK_COUNT" => Some("4".to_owned()),
            _ => None,
        };
        assert_eq!(
            Shard::parse("slurm", slurm).unwrap(),
            Shard { index: 2, count: 4 }
        );
        let k8s = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "3".to_owned());
        assert_eq!(
            Shard::parse("k8s/7", k8s).unwrap(),
            Shard { index: 3, count: 7 }
        );
        for bad in ["5/5", "x/3", "3", "slurm", "k8s/4", "1/0"] {
            let err = Shard::parse(bad, none).unwrap_err().to_string();
            assert!(err.contains("--shard"), "{bad}: {err}");
        }
        let s = Shard { index: 1, count: 3 };
        assert_eq!((0..7).filter(|&k| s.holds(k)).collect::<Vec<_>>(), [1, 4]);
    }
}
