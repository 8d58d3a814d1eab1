//! The native dataset format: JSON Lines, one [`Episode`] per line, read as a stream.
//!
//! A dataset file is never loaded whole: [`DatasetReader`] yields one episode at a time, so a 1 GB file costs
//! the memory of its largest episode. Blank lines are skipped, a UTF-8 byte-order mark on the first line and
//! a `\r` before each `\n` are accepted.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::Episode;
use crate::error::{Error, Result};

/// Streams the episodes of one JSONL file, each with its one-based line number.
pub struct DatasetReader<R> {
    reader: R,
    path: PathBuf,
    line: usize,
    buf: Vec<u8>,
    /// Whether anything (an episode or an error) came out of the file yet.
    yielded: bool,
    /// Whether an episode came out of the file yet.
    parsed: bool,
    /// The file is an agent's trace, not a dataset: nothing more comes out after the error that says so.
    done: bool,
    /// Only the episodes at positions k (counted over every file of the dataset) with k mod N = I: (I, N, the
    /// position counter); the others' lines are not parsed.
    every: Option<(usize, usize, Arc<AtomicUsize>)>,
}

impl DatasetReader<Box<dyn BufRead + Send>> {
    /// Opens `path` for streaming.
    ///
    /// # Errors
    /// Fails when the file cannot be opened.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self::new(open_file(path)?, path))
    }
}

/// Opens one dataset file for reading: the file, or the bundled dataset generated in memory where `path` names
/// it and no file is there ([`crate::bundled`]).
///
/// # Errors
/// Fails when the file cannot be opened.
pub fn open_file(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    if crate::bundled::is_generated_dataset(path) {
        return Ok(Box::new(crate::bundled::dataset()));
    }
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
}

impl<R: BufRead> DatasetReader<R> {
    /// Streams episodes from `reader`; `path` names the source in errors.
    pub fn new(reader: R, path: &Path) -> Self {
        Self {
            reader,
            path: path.to_owned(),
            line: 0,
            buf: Vec::new(),
            yielded: false,
            parsed: false,
            done: false,
            every: None,
        }
    }

    /// Reads the next line that holds an episode into `buf`, unchecked, and gives its number; `None` at the end.
    fn next_line(&mut self) -> Option<Result<usize>> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => return Some(Err(Error::io("read", &self.path, e))),
            }
            self.line += 1;
            if holds_episode(&self.buf, self.line == 1) {
                return Some(Ok(self.line));
            }
        }
    }
}

impl<R: BufRead> Iterator for DatasetReader<R> {
    type Item = Result<(usize, Episode)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_hashed()
            .map(|r| r.map(|(line, episode, _)| (line, episode)))
    }
}

impl<R: BufRead> DatasetReader<R> {
    /// The next episode with its line number and, when reading a shard, its line's [`line_hash`].
    fn next_hashed(&mut self) -> Option<Result<(usize, Episode, Option<u128>)>> {
        if self.done {
            return None;
        }
        let mut hash = None;
        let next = loop {
            let next = self.next_line();
            // Another shard's line is counted, neither decoded, parsed nor hashed; this shard's is hashed from
            // the bytes just read, so that the merge can check it against the dataset.
            if let (Some(Ok(_)), Some((index, count, position))) = (&next, &self.every) {
                let k = position.fetch_add(1, Ordering::Relaxed);
                if k % count != *index {
                    self.yielded = true;
                    continue;
                }
                hash = Some(line_hash(&self.buf));
            }
            break next;
        };
        let Some(next) = next else {
            // A file with nothing in it is a mistake (a failed export, a wrong path), not an empty dataset.
            if !self.yielded {
                self.yielded = true;
                return Some(Err(Error::Parse {
                    path: self.path.clone(),
                    line: self.line.max(1),
                    message: "no episode: the file is empty or holds only blank lines".into(),
                }));
            }
            return None;
        };
        self.yielded = true;
        let line = match next {
            Ok(line) => line,
            Err(e) => return Some(Err(e)),
        };
        let parsed = match line_text(&self.buf, line == 1) {
            Ok(text) => parse_episode(text),
            Err(e) => Err(format!(
                "invalid UTF-8 at byte {} of the line",
                e.valid_up_to()
            )),
        };
        match parsed {
            Ok(ep) => {
                self.parsed = true;
                Some(Ok((line, ep, hash)))
            }
            Err(mut message) => {
                // A first line that is no episode (or binary: an Inspect AI `.eval` archive): an agent's own
                // trace given where a dataset belongs?
                if !self.parsed {
                    if let Some(hint) = crate::history::import::trace_hint(&self.path) {
                        message = format!("{hint} ({message})");
                        self.done = true;
                    }
                }
                Some(Err(Error::Parse {
                    path: self.path.clone(),
                    line,
                    message,
                }))
            }
        }
    }
}

/// A line's text as the reader takes it: without the byte-order mark of a file's `first` line, without its line
/// ending.
fn line_text(raw: &[u8], first: bool) -> std::result::Result<&str, std::str::Utf8Error> {
    std::str::from_utf8(without_bom(raw, first)).map(|text| text.trim_end_matches(['\n', '\r']))
}

/// A line's bytes without the byte-order mark a file's `first` line may start with.
fn without_bom(raw: &[u8], first: bool) -> &[u8] {
    if first {
        raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw)
    } else {
        raw
    }
}

/// Whether a line (its bytes, line ending included; a file's `first` line may start with a byte-order mark) holds
/// an episode: every line but blank ones, which take no position. The reader and the shard split count lines by
/// it, and the merge: it looks at a line's first bytes only, unless they are not ASCII (another shard's line is
/// neither decoded nor copied). A line that is not UTF-8 holds one (its reader fails on it).
fn holds_episode(raw: &[u8], first: bool) -> bool {
    // The ASCII bytes `char::is_whitespace` trims.
    match without_bom(raw, first)
        .iter()
        .find(|b| !matches!(b, b'\t'..=b'\r' | b' '))
    {
        None => false,
        Some(b) if b.is_ascii() => true,
        Some(_) => line_text(raw, first).map_or(true, |text| !text.trim().is_empty()),
    }
}

/// The hash a shard journals for each of its episodes' lines, and the merge checks against the dataset: xxh3-128
/// of the line's bytes as in the file (its line ending, and a first line's byte-order mark, included). Not a
/// cryptographic hash: it tells a changed line from the one a shard replayed, at a thirtieth of SHA-256's cost.
#[must_use]
pub fn line_hash(raw: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(raw)
}

/// The digest of a shard's own lines, as its summary records it: xxh3-128 of their [`line_hash`]es in dataset
/// order (each as 16 little-endian bytes).
#[derive(Clone, Default)]
pub struct LinesDigest(xxhash_rust::xxh3::Xxh3);

impl LinesDigest {
    /// Adds the next line's hash.
    pub fn add(&mut self, hash: u128) {
        self.0.update(&hash.to_le_bytes());
    }

    /// The digest, as 32 hex digits.
    #[must_use]
    pub fn hex(&self) -> String {
        format!("{:032x}", self.0.digest128())
    }
}

/// A line of a dataset file, as [`for_each_line`] gives it.
pub struct RawLine<'a> {
    /// The file.
    pub file: &'a Path,
    /// Its one-based line number in the file.
    pub line: usize,
    /// Its bytes, line ending included.
    pub bytes: &'a [u8],
    /// Its dataset position (from 0, over every file) when it holds an episode, as the reader and the shard split
    /// count them (blank lines take none).
    pub position: Option<usize>,
}

/// Calls `each` on every line of every dataset file under `path` in order, unparsed: every byte of the dataset
/// goes through it once (what `merge` hashes and checks its shards' lines with, in one pass).
///
/// # Errors
/// As [`dataset_files`], a file that cannot be read (named), or the first error of `each`.
pub fn for_each_line(path: &Path, mut each: impl FnMut(RawLine<'_>) -> Result<()>) -> Result<()> {
    let mut position = 0;
    let mut buf = Vec::new();
    for file in dataset_files(path)? {
        let mut reader = open_file(&file)?;
        let mut line = 0;
        loop {
            buf.clear();
            if reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::io("read", &file, e))?
                == 0
            {
                break;
            }
            line += 1;
            let holds = holds_episode(&buf, line == 1);
            each(RawLine {
                file: &file,
                line,
                bytes: &buf,
                position: holds.then_some(position),
            })?;
            position += usize::from(holds);
        }
    }
    Ok(())
}

/// The [`LinesDigest`] of the lines at positions k with k mod N = I, for `every` = (I, N): what a shard's summary
/// records of the dataset it read, computed again (`ctxbench show` of a shard run).
///
/// # Errors
/// As [`for_each_line`].
pub fn shard_digest(path: &Path, every: (usize, usize)) -> Result<String> {
    let mut digest = LinesDigest::default();
    for_each_line(path, |line| {
        if line.position.is_some_and(|k| k % every.1 == every.0) {
            digest.add(line_hash(line.bytes));
        }
        Ok(())
    })?;
    Ok(digest.hex())
}

/// Parses one episode from JSON text; the error names the JSON path of the offending field.
///
/// # Errors
/// A message such as ``at `items[3].role`: unknown variant `robot`…``.
pub fn parse_episode(text: &str) -> std::result::Result<Episode, String> {
    let first = text.trim_start().chars().next();
    if first != Some('{') {
        let found = match first {
            Some('[') => "an array".to_owned(),
            Some('"') => "a string".to_owned(),
            Some('n') if text.trim() == "null" => "null".to_owned(),
            Some(c) => format!("{c:?}"),
            None => "nothing".to_owned(),
        };
        return Err(format!(
            "expected a JSON object (one episode per line), found {found}"
        ));
    }
    // The plain parser first; the path-aware one, slower (the bundled dataset reads in 22 ms with it, 16
    // without), only to describe an error.
    if let Ok(episode) = serde_json::from_str::<Episode>(text) {
        return Ok(episode);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let episode: Episode =
        serde_path_to_error::deserialize(&mut de).map_err(|e| describe_json_error(&e))?;
    de.end()
        .map_err(|e| format!("trailing characters after the episode: {e}"))?;
    Ok(episode)
}

/// Formats a path-aware serde error as ``at `path`: message``.
pub(crate) fn describe_json_error(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let inner = e.inner();
    let what = if inner.is_eof() {
        format!("truncated JSON ({inner})")
    } else {
        inner.to_string()
    };
    if path == "." || path.is_empty() {
        what
    } else {
        format!("at `{path}`: {what}")
    }
}

/// The dataset files named by `path`: the file itself, or every `*.jsonl` file of a directory, sorted (the
/// bundled dataset's path where it is generated in memory).
///
/// # Errors
/// Fails when the path does not exist or a directory holds no `.jsonl` file.
pub fn dataset_files(path: &Path) -> Result<Vec<PathBuf>> {
    if crate::bundled::is_generated_dataset(path) {
        return Ok(vec![path.to_owned()]);
    }
    let meta = std::fs::metadata(path).map_err(|e| Error::io("open", path, e))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| Error::io("list", path, e))? {
        let entry = entry.map_err(|e| Error::io("list", path, e))?;
        let p = entry.path();
        if p.extension().is_some_and(|ext| ext == "jsonl") && p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(Error::Config(format!(
            "directory '{}' holds no .jsonl dataset file",
            path.display()
        )));
    }
    Ok(files)
}

/// Streams every episode of every dataset file under `path`, with its file and line.
///
/// # Errors
/// Fails as [`dataset_files`] does; each item fails as [`DatasetReader`] does.
pub fn stream(
    path: &Path,
) -> Result<impl Iterator<Item = Result<(PathBuf, usize, Episode)>> + Send> {
    Ok(stream_every(path, None)?.map(|r| r.map(|(file, line, episode, _)| (file, line, episode))))
}

/// An episode as [`stream_every`] reads it: its file, its one-based line, the episode, and when reading a shard
/// its line's [`line_hash`].
pub type Read = (PathBuf, usize, Episode, Option<u128>);

/// [`stream`] of the episodes at positions k (from 0, over every file) with k mod N = I, for `every` = (I, N),
/// each with its line's [`line_hash`]; the other lines are counted without being parsed or hashed.
///
/// # Errors
/// As [`stream`].
pub fn stream_every(
    path: &Path,
    every: Option<(usize, usize)>,
) -> Result<impl Iterator<Item = Result<Read>> + Send> {
    let files = dataset_files(path)?;
    let position = Arc::new(AtomicUsize::new(0));
    Ok(files.into_iter().flat_map(move |file| {
        let every = every.map(|(i, n)| (i, n, Arc::clone(&position)));
        let reader = DatasetReader::open(&file).map(|mut r| {
            r.every = every;
            r
        });
        let iter: Box<dyn Iterator<Item = Result<Read>> + Send> = match reader {
            Ok(mut r) => {
                let f = file.clone();
                Box::new(std::iter::from_fn(move || {
                    r.next_hashed()
                        .map(|res| res.map(|(line, ep, hash)| (f.clone(), line, ep, hash)))
                }))
            }
            Err(e) => Box::new(std::iter::once(Err(e))),
        };
        iter
    }))
}

/// Reads every episode under `path` into memory (for small datasets and tests).
///
/// # Errors
/// The first parse error.
pub fn read_all(path: &Path) -> Result<Vec<Episode>> {
    stream(path)?.map(|r| r.map(|(_, _, ep)| ep)).collect()
}

/// Writes episodes as JSON Lines.
///
/// # Errors
/// Fails when writing fails.
pub fn write_episodes<'a, W: Write>(
    mut out: W,
    episodes: impl IntoIterator<Item = &'a Episode>,
) -> std::io::Result<()> {
    for ep in episodes {
        serde_json::to_writer(&mut out, ep)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Vec<Result<(usize, Episode)>> {
        DatasetReader::new(text, Path::new("t.jsonl")).collect()
    }

    #[test]
    fn reads_lines_skipping_blanks_and_bom_and_crlf() {
        let line =
            r#"{"id":"a","source":"s","items":[{"type":"message","role":"user","content":"hi"}]}"#;
        let text = format!("\u{feff}{line}\r\n\n{}\n", line.replace("\"a\"", "\"b\""));
        let eps = read(text.as_bytes());
        assert_eq!(eps.len(), 2);
        let (line_no, ep) = eps[1].as_ref().unwrap();
        assert_eq!((*line_no, ep.id.as_str()), (3, "b"));
    }

    /// A shard hashes its own lines only, from the bytes it read for them: what it yields does not depend on the
    /// other shards' lines, even ones that are no episode. [`for_each_line`] gives every byte once and numbers
    /// positions as the reader counts them (blank lines take none), so that the merge checks the same lines.
    #[test]
    fn a_shard_hashes_its_own_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.jsonl");
        let line = |id: &str| {
            format!(
                r#"{{"id":"{id}","source":"s","items":[{{"type":"message","role":"user","content":"hi"}}]}}"#
            )
        };
        let lines = [
            format!("\u{feff}{}\r\n", line("a")),
            "\n".to_owned(),
            format!("{}\n", line("b")),
            "  \r\n".to_owned(),
            format!("{}\n", line("c")),
            line("d"),
        ];
        let shard = |i: usize| -> Vec<(usize, String, u128)> {
            stream_every(&path, Some((i, 2)))
                .unwrap()
                .map(|r| {
                    let (_, line, ep, hash) = r.unwrap();
                    (
                        line,
                        ep.id,
                        hash.expect("a shard's episodes come with their line's hash"),
                    )
                })
                .collect()
        };
        let hash = |i: usize| line_hash(lines[i].as_bytes());
        std::fs::write(&path, lines.concat()).unwrap();
        let first = shard(0);
        assert_eq!(first, [(1, "a".into(), hash(0)), (5, "c".into(), hash(4))]);
        assert_eq!(
            shard(1),
            [(3, "b".into(), hash(2)), (6, "d".into(), hash(5))]
        );
        assert!(stream_every(&path, None)
            .unwrap()
            .all(|r| r.unwrap().3.is_none()));
        let digest = shard_digest(&path, (0, 2)).unwrap();
        let mut expected = LinesDigest::default();
        expected.add(hash(0));
        expected.add(hash(4));
        assert_eq!(digest, expected.hex());

        // Shard 1's line changed, to something that is not even JSON: shard 0 reads and hashes what it did.
        let changed = lines.concat().replace(&line("b"), "not an episode");
        std::fs::write(&path, &changed).unwrap();
        assert_eq!(shard(0), first);
        assert_eq!(shard_digest(&path, (0, 2)).unwrap(), digest);
        assert_ne!(shard_digest(&path, (1, 2)).unwrap(), digest);

        let (mut bytes, mut seen) = (Vec::new(), Vec::new());
        for_each_line(&path, |l| {
            bytes.extend_from_slice(l.bytes);
            seen.push((l.line, l.position));
            Ok(())
        })
        .unwrap();
        assert_eq!(bytes, changed.as_bytes());
        let positions = [Some(0), None, Some(1), None, Some(2), Some(3)];
        assert_eq!(seen, (1..=6).zip(positions).collect::<Vec<_>>());
    }

    /// Which lines take a position, from their first bytes, as the text's `trim` would say.
    #[test]
    fn blank_lines_take_no_position() {
        for (raw, first, holds) in [
            (&b"{\"id\":1}\n"[..], false, true),
            (b"\n", false, false),
            (b" \t\x0b\x0c\r\n", false, false),
            (b"\xEF\xBB\xBF\r\n", true, false),
            (b"\xEF\xBB\xBF\r\n", false, true),
            ("\u{a0}\u{3000}\n".as_bytes(), false, false),
            ("  \u{a0}{".as_bytes(), false, true),
            (b"\xff\n", false, true),
        ] {
            assert_eq!(
                holds_episode(raw, first),
                holds,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
            if let Ok(text) = line_text(raw, first) {
                assert_eq!(!text.trim().is_empty(), holds, "{text:?}");
            }
        }
    }

    #[test]
    fn parse_errors_name_line_and_field() {
        let text = b"{\"id\":\"a\",\"source\":\"s\",\"items\":[{\"type\":\"message\",\"role\":\"robot\",\"content\":\"x\"}]}\n";
        let err = read(text).remove(0).unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
        assert!(err.contains("`items[0]`"), "{err}");
        assert!(err.contains("robot"), "{err}");
    }

    #[test]
    fn invalid_utf8_and_truncation_are_errors() {
        let err = read(b"{\"id\":\"\xff\"}\n")
            .remove(0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid UTF-8"), "{err}");
        let err = read(b"{\"id\":\"a\",\"source\":")
            .remove(0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("truncated JSON"), "{err}");
    }
}
