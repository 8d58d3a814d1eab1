//! The merge's row tables: each shard's rows read one episode's group at a time, and interleaved back into
//! dataset order.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use super::{ShardDir, SHARD_FILE};
use crate::error::{Error, Result};

/// A shard's rows of one table, read one episode's group at a time: `(episode, row)` items, consecutive rows of
/// one episode forming its group.
struct Groups<T, I: Iterator<Item = Result<(String, T)>>> {
    rows: std::iter::Peekable<I>,
}

impl<T, I: Iterator<Item = Result<(String, T)>>> Groups<T, I> {
    fn new(rows: I) -> Self {
        Self {
            rows: rows.peekable(),
        }
    }

    /// The episode of the next group, if any (an error is left for [`Groups::take`]).
    fn next_episode(&mut self) -> Option<&str> {
        match self.rows.peek() {
            Some(Ok((episode, _))) => Some(episode),
            _ => None,
        }
    }

    /// The next group's rows.
    fn take(&mut self) -> Result<Vec<T>> {
        let mut out = Vec::new();
        let Some(first) = self.rows.next().transpose()? else {
            return Ok(out);
        };
        out.push(first.1);
        while let Some(Ok((episode, _))) = self.rows.peek() {
            if *episode != first.0 {
                break;
            }
            if let Some(Ok((_, row))) = self.rows.next() {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// An error the reader met, or rows left over.
    fn finish(&mut self, dir: &Path) -> Result<()> {
        match self.rows.next() {
            None => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok((episode, _))) => Err(Error::Config(format!(
                "'{}' has rows of episode '{episode}' out of its {SHARD_FILE}'s order: the shard's tables and its \
                 records do not match",
                dir.display()
            ))),
        }
    }
}

/// A CSV table's header and rows with their episode (the first field), streamed.
fn csv_rows(
    path: &Path,
) -> Result<(
    csv::StringRecord,
    impl Iterator<Item = Result<(String, csv::StringRecord)>>,
)> {
    let bad = {
        let path = path.to_owned();
        move |e: csv::Error| Error::Parse {
            path: path.clone(),
            line: e
                .position()
                .map_or(1, |p| usize::try_from(p.line()).unwrap_or(usize::MAX)),
            message: e.to_string(),
        }
    };
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .map_err(&bad)?;
    let header = reader.headers().map_err(&bad)?.clone();
    let rows = reader.into_records().map(move |r| {
        let r = r.map_err(&bad)?;
        Ok((r.get(0).unwrap_or_default().to_owned(), r))
    });
    Ok((header, rows))
}

/// A JSON Lines table's lines with their `episode`, streamed.
fn jsonl_rows(path: &Path) -> Result<impl Iterator<Item = Result<(String, String)>>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    let path = path.to_owned();
    Ok(std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .map(move |(i, line)| {
            let line = line.map_err(|e| Error::io("read", &path, e))?;
            let episode = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v.get("episode").and_then(|e| e.as_str().map(str::to_owned)))
                .ok_or_else(|| Error::Parse {
                    path: path.clone(),
                    line: i + 1,
                    message: "a line without its episode".into(),
                })?;
            Ok((episode, line))
        }))
}

/// The path of a shard's table `file`, which every shard run writes.
fn table_path(shard: &ShardDir, file: &str) -> Result<PathBuf> {
    let path = shard.dir.join(file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::Config(format!(
            "'{}' has no {file}, a table every run writes: was the shard run by another ctxbench? Run it again \
             with this one",
            shard.dir.display()
        )))
    }
}

/// For each episode of `merged` in order, its rows from its shard (an episode without rows in the table has
/// none), handed to `emit`.
fn interleave<T, I: Iterator<Item = Result<(String, T)>>>(
    shards: &[ShardDir],
    merged: &[(usize, usize)],
    groups: &mut [Groups<T, I>],
    mut emit: impl FnMut(Vec<T>) -> Result<()>,
) -> Result<()> {
    for &(s, j) in merged {
        if groups[s].next_episode() == Some(shards[s].episodes[j].as_str()) {
            emit(groups[s].take()?)?;
        }
    }
    for (g, shard) in groups.iter_mut().zip(shards) {
        g.finish(&shard.dir)?;
    }
    Ok(())
}

/// Writes every row table of `exports` under `staging`: the shards' rows interleaved into the `merged` order, a
/// group at a time — a CSV table's header, then its rows (whose first field is the episode); a JSON Lines
/// table's lines (each with its `episode`).
pub(super) fn merge_tables(
    shards: &[ShardDir],
    merged: &[(usize, usize)],
    staging: &Path,
    exports: &crate::report::ExportManager,
) -> Result<()> {
    for table in exports.row_tables() {
        let file = table.file_name();
        let path = staging.join(file);
        if table.json_lines() {
            let mut groups = shards
                .iter()
                .map(|s| Ok(Groups::new(jsonl_rows(&table_path(s, file)?)?)))
                .collect::<Result<Vec<_>>>()?;
            crate::files::write_atomic_with(&path, |out| {
                let mut w = std::io::BufWriter::new(out);
                interleave(shards, merged, &mut groups, |lines| {
                    for l in &lines {
                        writeln!(w, "{l}").map_err(|e| Error::io("write", &path, e))?;
                    }
                    Ok(())
                })
                .map_err(|e| std::io::Error::other(e.to_string()))?;
                w.flush()
            })?;
            continue;
        }
        let mut header = None;
        let mut groups = Vec::new();
        for s in shards {
            let (h, rows) = csv_rows(&table_path(s, file)?)?;
            header = header.or(Some(h));
            groups.push(Groups::new(rows));
        }
        crate::files::write_atomic_with(&path, |out| {
            let mut w = csv::Writer::from_writer(std::io::BufWriter::new(out));
            if let Some(h) = &header {
                w.write_record(h)?;
            }
            interleave(shards, merged, &mut groups, |rows| {
                for r in &rows {
                    w.write_record(r)
                        .map_err(|e| Error::io("write", &path, e.into()))?;
                }
                Ok(())
            })
            .map_err(|e| std::io::Error::other(e.to_string()))?;
            w.flush()
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{order, Shard};
    use super::*;

    /// A row table the run's manager appends to is merged whatever it is: the merge reads its tables from the
    /// manager, interleaving a CSV one under its header and a JSON Lines one by its lines' episodes; a shard
    /// without one of them is refused, named.
    #[test]
    fn every_row_table_of_the_manager_is_merged() {
        struct Extra(&'static str, bool);
        impl crate::report::RowExporter for Extra {
            fn file_name(&self) -> &'static str {
                self.0
            }
            fn header(&self) -> Result<Vec<u8>> {
                Ok(Vec::new())
            }
            fn rows(&self, _: &crate::metrics::EpisodeResult) -> Result<Vec<u8>> {
                Ok(Vec::new())
            }
            fn json_lines(&self) -> bool {
                self.1
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let (staging, episodes) = (dir.path().join("out"), ["e0", "e1", "e2", "e3", "e4"]);
        std::fs::create_dir(&staging).unwrap();
        let files = [
            (
                "episode,n\ne0,1\ne0,2\ne2,3\ne4,4\n",
                "{\"episode\":\"e0\",\"k\":1}\n{\"episode\":\"e4\",\"k\":2}\n",
            ),
            ("episode,n\ne1,5\ne3,6\n", "{\"episode\":\"e3\",\"k\":3}\n"),
        ];
        let shards: Vec<ShardDir> = files
            .iter()
            .enumerate()
            .map(|(index, (csv, jsonl))| {
                let d = dir.path().join(format!("s{index}"));
                std::fs::create_dir(&d).unwrap();
                std::fs::write(d.join("extra.csv"), csv).unwrap();
                std::fs::write(d.join("extra.jsonl"), jsonl).unwrap();
                ShardDir {
                    dir: d,
                    shard: Shard { index, count: 2 },
                    config: serde_json::Value::Null,
                    episodes: episodes
                        .iter()
                        .skip(index)
                        .step_by(2)
                        .map(|e| (*e).to_owned())
                        .collect(),
                    sha256: String::new(),
                }
            })
            .collect();
        let exports = crate::report::ExportManager::new(&staging)
            .with_table(Box::new(Extra("extra.csv", false)))
            .with_table(Box::new(Extra("extra.jsonl", true)));
        merge_tables(&shards, &order(&shards), &staging, &exports).unwrap();
        assert_eq!(
            std::fs::read_to_string(staging.join("extra.csv")).unwrap(),
            "episode,n\ne0,1\ne0,2\ne1,5\ne2,3\ne3,6\ne4,4\n"
        );
        assert_eq!(
            std::fs::read_to_string(staging.join("extra.jsonl")).unwrap(),
            "{\"episode\":\"e0\",\"k\":1}\n{\"episode\":\"e3\",\"k\":3}\n{\"episode\":\"e4\",\"k\":2}\n"
        );
        std::fs::remove_file(shards[1].dir.join("extra.jsonl")).unwrap();
        let err = merge_tables(&shards, &order(&shards), &staging, &exports)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("has no extra.jsonl")
                && err.contains(&shards[1].dir.display().to_string()),
            "{err}"
        );
    }
}
