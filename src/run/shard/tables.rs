//! The merge's row tables: each shard's rows read one episode's group at a time, and interleaved back into
//! dataset order.

use std::io::{BufRead as _, Read as _, Write as _};
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

/// A CSV table's header and rows with their episode (the first field), streamed: each row as the bytes the
/// shard wrote, so that the merge copies them instead of writing them again field by field (the records are
/// parsed only to find where each ends and whose it is).
fn csv_rows(path: &Path) -> Result<(Vec<u8>, CsvRows)> {
    let bad = |e: csv::Error| Error::csv(path, &e);
    let mut parser = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(false)
        .from_path(path)
        .map_err(bad)?;
    let open = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    let raw = std::io::BufReader::new(open);
    let mut record = csv::ByteRecord::new();
    // The header, then the first row.
    parser.read_byte_record(&mut record).map_err(bad)?;
    let mut rows = CsvRows {
        path: path.to_owned(),
        parser,
        raw,
        record,
        next: None,
    };
    rows.next = rows.parse_next().transpose()?;
    let header_end = rows.next.as_ref().map_or(u64::MAX, |(_, start)| *start);
    let mut header = Vec::new();
    (&mut rows.raw)
        .take(header_end)
        .read_to_end(&mut header)
        .map_err(|e| Error::io("read", path, e))?;
    Ok((terminated(header), rows))
}

/// `bytes` ending with a line feed (a last row written without one still ends its line in the merge).
fn terminated(mut bytes: Vec<u8>) -> Vec<u8> {
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
}

/// A CSV table's rows after its header: `(episode, the row's bytes)`. The rows are parsed one ahead of the
/// bytes read, as a row ends where the next starts.
struct CsvRows {
    path: PathBuf,
    parser: csv::Reader<std::fs::File>,
    /// The same file, read from where the next row starts.
    raw: std::io::BufReader<std::fs::File>,
    record: csv::ByteRecord,
    /// The next row's episode and where it starts.
    next: Option<(String, u64)>,
}

impl CsvRows {
    /// The episode and start of the row after the one parsed last, `None` at the end.
    fn parse_next(&mut self) -> Option<Result<(String, u64)>> {
        match self.parser.read_byte_record(&mut self.record) {
            Ok(false) => None,
            Ok(true) => {
                let start = self.record.position().map_or(0, csv::Position::byte);
                let episode = std::str::from_utf8(self.record.get(0).unwrap_or_default())
                    .map(str::to_owned)
                    .map_err(|e| Error::Parse {
                        path: self.path.clone(),
                        line: self
                            .record
                            .position()
                            .map_or(1, |p| usize::try_from(p.line()).unwrap_or(usize::MAX)),
                        message: format!("an episode that is not UTF-8: {e}"),
                    });
                Some(episode.map(|e| (e, start)))
            }
            Err(e) => Some(Err(Error::csv(&self.path, &e))),
        }
    }
}

impl Iterator for CsvRows {
    type Item = Result<(String, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let (episode, start) = self.next.take()?;
        let following = self.parse_next();
        let end = match following {
            None => u64::MAX,
            Some(Ok((_, next_start))) => next_start,
            Some(Err(e)) => return Some(Err(e)),
        };
        self.next = following.and_then(Result::ok);
        let mut bytes = Vec::new();
        if let Err(e) = (&mut self.raw)
            .take(end.saturating_sub(start))
            .read_to_end(&mut bytes)
        {
            return Some(Err(Error::io("read", &self.path, e)));
        }
        Some(Ok((episode, terminated(bytes))))
    }
}

/// A JSON Lines table's lines with their `episode`, streamed.
fn jsonl_rows(path: &Path) -> Result<impl Iterator<Item = Result<(String, String)>>> {
    /// The one field a line is read for (the rest are skipped, not built).
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        episode: std::borrow::Cow<'a, str>,
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    let path = path.to_owned();
    Ok(std::io::BufReader::new(file)
        .lines()
        .enumerate()
        .map(move |(i, line)| {
            let line = line.map_err(|e| Error::io("read", &path, e))?;
            let episode = serde_json::from_str::<Line<'_>>(&line)
                .map(|l| l.episode.into_owned())
                .map_err(|_| Error::Parse {
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
            let mut w = std::io::BufWriter::new(out);
            if let Some(h) = &header {
                w.write_all(h)?;
            }
            interleave(shards, merged, &mut groups, |rows| {
                for r in &rows {
                    w.write_all(r).map_err(|e| Error::io("write", &path, e))?;
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
    /// manager, interleaving a CSV one under its header (each row's bytes as the shard wrote them, rows over
    /// several lines whole) and a JSON Lines one by its lines' episodes; a shard without one of them is
    /// refused, named.
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
                // A quoted field over two lines with a comma and quotes in it; a last row without its line feed.
                "episode,n\ne0,1\ne0,\"two\nlines, \"\"quoted\"\"\"\ne2,3\ne4,4",
                "{\"episode\":\"e0\",\"k\":1}\n{\"episode\":\"e4\",\"k\":2}\n",
            ),
            (
                "episode,n\ne1,5\n\"e3\",6\n",
                "{\"episode\":\"e3\",\"k\":3}\n",
            ),
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
                    lines: Vec::new(),
                    dataset: None,
                }
            })
            .collect();
        let exports = crate::report::ExportManager::new(&staging)
            .with_table(Box::new(Extra("extra.csv", false)))
            .with_table(Box::new(Extra("extra.jsonl", true)));
        merge_tables(&shards, &order(&shards), &staging, &exports).unwrap();
        assert_eq!(
            std::fs::read_to_string(staging.join("extra.csv")).unwrap(),
            "episode,n\ne0,1\ne0,\"two\nlines, \"\"quoted\"\"\"\ne1,5\ne2,3\n\"e3\",6\ne4,4\n"
        );
        assert_eq!(
            std::fs::read_to_string(staging.join("extra.jsonl")).unwrap(),
            "{\"episode\":\"e0\",\"k\":1}\n{\"episode\":\"e3\",\"k\":3}\n{\"episode\":\"e4\",\"k\":2}\n"
        );
        // A row whose episode is not UTF-8 is refused, naming the file and its line.
        let csv = shards[1].dir.join("extra.csv");
        std::fs::write(&csv, b"episode,n\ne1,5\n\xff3,6\n").unwrap();
        let err = merge_tables(&shards, &order(&shards), &staging, &exports)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not UTF-8") && err.contains(&format!("{}' at line 3", csv.display())),
            "{err}"
        );
        std::fs::write(&csv, files[1].0).unwrap();
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
