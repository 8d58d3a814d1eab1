//! The resume journal: beside a run's tables while it goes on, a head line (the journal format and the run's
//! configuration), then one line per finished episode with everything the tables need from it. `run
//! --resume` reads it back entry by entry (constant memory) and drops a last line a crash cut short; a completed
//! run removes it. A journal of another format, or not a journal at all, is refused with a clear error.

use std::collections::{HashMap, HashSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::metrics::series::ChartData;
use crate::metrics::EpisodeResult;

/// The journal's file name in the run directory.
pub const JOURNAL: &str = "resume.jsonl";

/// The journal's framing this ctxbench writes and reads: what an entry holds besides the metric values (5: the
/// head line carries the metrics' layout; 7: a shard's entries carry their line's hash, `line_xxh3`, instead of
/// the dataset's SHA-256). Raise it by hand when [`EpisodeResult`]'s other fields change; a change to the metrics
/// changes the head's `metrics` instead ([`metrics_layout`]), with no edit here. A journal of another framing or
/// layout is refused with a clear error.
pub const JOURNAL_VERSION: u32 = 7;

/// The layout of the metric values the journal's entries hold by position: the standard catalog's
/// [`crate::metrics::Catalog::layout_digest`], which changes with any metric's value names or order.
#[must_use]
pub fn metrics_layout() -> &'static str {
    static LAYOUT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LAYOUT.get_or_init(|| {
        crate::metrics::Catalog::standard()
            .layout_digest()
            .to_owned()
    })
}

/// The journal's first line: its framing, its metrics' layout, and the run's configuration.
#[derive(Serialize, Deserialize)]
struct Head {
    ctxbench_journal: u32,
    metrics: String,
    config: serde_json::Value,
}

/// The head line of a journal of this ctxbench for a run of `config`.
#[must_use]
pub(super) fn head_line(config: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "ctxbench_journal": JOURNAL_VERSION,
        "metrics": metrics_layout(),
        "config": config,
    })
}

/// One finished episode, as journaled: what the tables need from it.
#[derive(Serialize, Deserialize)]
pub(super) struct Finished {
    /// A run's: the SHA-256 of the dataset it was replayed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sha256: Option<String>,
    /// A shard's, which hashes its own lines only: its line's [`crate::history::dataset::line_hash`], 32 hex
    /// digits. A resumed shard checks its finished episodes' lines by it, and `merge` every line of the dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) line_xxh3: Option<String>,
    /// Its metrics (its step rows are in `steps.csv`).
    #[serde(flatten)]
    pub(super) result: EpisodeResult,
    /// Its per-step series, when it was the episode with the largest context so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) chart: Option<ChartData>,
}

/// The journal file being written.
pub(super) struct Journal {
    file: std::fs::File,
    path: PathBuf,
    fresh: bool,
}

impl Journal {
    /// Starts a journal, or continues one after its first `whole` bytes (the lines [`scan_journal`] read whole: a
    /// line cut short by a crash goes, so that the next entry starts a line of its own).
    pub(super) fn open(path: &Path, whole: Option<u64>) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(whole.is_some())
            .write(true)
            .truncate(whole.is_none())
            .open(path)
            .map_err(|e| Error::io("open", path, e))?;
        if let Some(len) = whole {
            file.set_len(len)
                .map_err(|e| Error::io("truncate", path, e))?;
        }
        Ok(Self {
            file,
            path: path.to_owned(),
            // Without a whole first line, the configuration is written again.
            fresh: whole.is_none_or(|len| len == 0),
        })
    }

    /// Appends the entries of `done` (after the head line with `config`, for a fresh journal) and syncs them.
    pub(super) fn append(&mut self, config: &serde_json::Value, done: &[Finished]) -> Result<()> {
        use std::io::Write as _;
        let mut text = String::new();
        if std::mem::take(&mut self.fresh) {
            text.push_str(&head_line(config).to_string());
            text.push('\n');
        }
        for f in done {
            let line = serde_json::to_string(f).map_err(|e| Error::Serialize {
                what: "resume journal",
                message: e.to_string(),
            })?;
            text.push_str(&line);
            text.push('\n');
        }
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::io("write", &self.path, e))
    }

    /// Renames the journal of a completed run to `name` beside it (a shard's entries, for the merge).
    pub(super) fn keep_as(self, name: &str) -> Result<()> {
        std::fs::rename(&self.path, self.path.with_file_name(name))
            .map_err(|e| Error::io("rename", &self.path, e))
    }

    /// Removes the journal of a run that completed.
    pub(super) fn finish(self) -> Result<()> {
        std::fs::remove_file(&self.path).map_err(|e| Error::io("remove", &self.path, e))
    }
}

/// What `run --resume` reads from the journal before the replay starts.
pub(super) struct JournalHead {
    /// The episodes finished.
    pub(super) ids: HashSet<String>,
    /// The hash of the dataset they were replayed from (a run's; a shard's entries hold none).
    pub(super) sha256: Option<String>,
    /// A shard's: each finished episode's line hash, which its line in the dataset must still have.
    pub(super) lines: HashMap<String, u128>,
    /// Bytes of the journal's whole lines: the configuration and every entry before the first line a crash cut
    /// short (that batch is redone).
    pub(super) len: u64,
}

/// An entry's episode and hashes, read without its rows.
#[derive(Deserialize)]
struct FinishedId {
    episode: String,
    sha256: Option<String>,
    line_xxh3: Option<String>,
}

/// An entry's `line_xxh3` (line `number` of the journal at `path`), which every entry of a shard has.
pub(super) fn line_of(path: &Path, number: usize, line_xxh3: Option<&str>) -> Result<u128> {
    line_xxh3
        .and_then(|hex| u128::from_str_radix(hex, 16).ok())
        .ok_or_else(|| Error::Parse {
            path: path.to_owned(),
            line: number,
            message: "a shard's entry without a valid line_xxh3 (its line's hash): was the file edited? run the \
                      shard again from the start"
                .into(),
        })
}

/// Reads the journal's head line: its format must be this ctxbench's.
fn read_head(path: &Path, line: &str) -> Result<serde_json::Value> {
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| Error::Parse {
        path: path.to_owned(),
        line: 1,
        message: format!("not a ctxbench resume journal ({e})"),
    })?;
    if let Some(what) = format_mismatch(&value, metrics_layout()) {
        return Err(Error::Config(format!(
            "cannot resume from '{}': {what}; this ctxbench reads journal format {JOURNAL_VERSION} with metrics \
             layout {}. Run again without --resume (or with another --out) to start over",
            path.display(),
            metrics_layout()
        )));
    }
    let head: Head = serde_json::from_value(value).map_err(|e| Error::Parse {
        path: path.to_owned(),
        line: 1,
        message: e.to_string(),
    })?;
    Ok(head.config)
}

/// What makes a journal's head line `value` (a run's or a shard's) unreadable here: a framing other than
/// [`JOURNAL_VERSION`], or metric values of another layout than `layout`; `None` when it is readable.
pub(super) fn format_mismatch(value: &serde_json::Value, layout: &str) -> Option<String> {
    match value
        .get("ctxbench_journal")
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if v == u64::from(JOURNAL_VERSION) => {}
        Some(v) => return Some(format!("it is in journal format {v}")),
        None if value.get("strategies").is_some() => {
            return Some(
                "it was written by an older ctxbench (journal format 1, without a version)".into(),
            )
        }
        None => return Some("it is not a ctxbench resume journal".into()),
    }
    match value.get("metrics").and_then(serde_json::Value::as_str) {
        Some(l) if l == layout => None,
        other => Some(format!(
            "its metric values were written by a ctxbench with other metrics (layout {}), which this one would \
             misread",
            other.unwrap_or("(none)")
        )),
    }
}

/// Checks the journal's configuration against this run's and reads which episodes it holds.
pub(super) fn scan_journal(path: &Path, config: &serde_json::Value) -> Result<JournalHead> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Config(format!(
                "nothing to resume: '{}' is missing (the run completed, or never wrote a batch)",
                path.display()
            )))
        }
        Err(e) => return Err(Error::io("read", path, e)),
    };
    let mut head = JournalHead {
        ids: HashSet::new(),
        sha256: None,
        lines: HashMap::new(),
        len: 0,
    };
    let shard = config.get("shard").is_some();
    let mut lines = journal_lines(path, file, None);
    match lines.next().transpose()? {
        Some((_, line, end)) => {
            if read_head(path, &line)? != *config {
                return Err(Error::Config(format!(
                    "cannot resume the run in '{}': its configuration differs from this one (run with the same \
                     --config, --strategies and --window)",
                    path.parent().unwrap_or(path).display()
                )));
            }
            head.len = end;
        }
        None => return Ok(head),
    }
    for line in lines {
        let (number, line, end) = line?;
        let Some(f) = parse_entry::<FinishedId>(path, number, &line)? else {
            break;
        };
        if shard {
            head.lines.insert(
                f.episode.clone(),
                line_of(path, number, f.line_xxh3.as_deref())?,
            );
        } else if let Some(sha256) = f.sha256 {
            head.sha256.get_or_insert(sha256);
        }
        head.ids.insert(f.episode);
        head.len = end;
    }
    Ok(head)
}

/// Calls `entry` on each entry of the journal's first `whole` bytes, in order (the configuration line skipped).
pub(super) fn read_journal(
    path: &Path,
    whole: u64,
    mut entry: impl FnMut(Finished) -> Result<()>,
) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    for line in journal_lines(path, file, Some(whole)).skip(1) {
        let (number, line, _) = line?;
        match parse_entry::<Finished>(path, number, &line)? {
            Some(f) => entry(f)?,
            None => break,
        }
    }
    Ok(())
}

/// One entry (line `number` of the journal), or `None` for a line a crash cut short.
fn parse_entry<T: serde::de::DeserializeOwned>(
    path: &Path,
    number: usize,
    line: &str,
) -> Result<Option<T>> {
    match serde_json::from_str::<T>(line) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.is_eof() => Ok(None),
        Err(e) => Err(Error::Parse {
            path: path.to_owned(),
            line: number,
            message: e.to_string(),
        }),
    }
}

/// The whole lines of a journal: (1-based number, text, the offset where the line ends), within its first
/// `whole` bytes when given. A last line without its newline was cut short by a crash and is not one.
fn journal_lines(
    path: &Path,
    file: std::fs::File,
    whole: Option<u64>,
) -> impl Iterator<Item = Result<(usize, String, u64)>> + '_ {
    use std::io::BufRead as _;
    let mut reader = std::io::BufReader::new(file.take(whole.unwrap_or(u64::MAX)));
    let (mut number, mut end) = (0usize, 0u64);
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let mut buf = Vec::new();
        let line = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) if buf.last() != Some(&b'\n') => return None,
            Ok(n) => {
                number += 1;
                end += u64::try_from(n).unwrap_or(u64::MAX);
                buf.pop();
                String::from_utf8(buf)
                    .map(|text| (number, text, end))
                    .map_err(|e| Error::Parse {
                        path: path.to_owned(),
                        line: number,
                        message: format!("not UTF-8: {e}"),
                    })
            }
            Err(e) => Err(Error::io("read", path, e)),
        };
        failed = line.is_err();
        Some(line)
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// A crash can cut the journal's last line short: a resume reads the lines before it, and the entries it
    /// journals start on a line of their own, so that the next resume reads them too.
    #[test]
    fn a_journal_line_cut_short_is_dropped_before_the_next_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let config = serde_json::json!({"seed": 42});
        let head_line = head_line(&config);
        let entry = |id: &str| format!("{{\"episode\":\"{id}\",\"sha256\":\"abc\"}}\n");
        let whole = format!("{head_line}\n{}{}", entry("a"), entry("b"));
        std::fs::write(&path, format!("{whole}{{\"episode\":\"c\",\"sha2")).unwrap();

        let head = scan_journal(&path, &config).unwrap();
        let ids = |h: &JournalHead| {
            let mut ids: Vec<String> = h.ids.iter().cloned().collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(&head), ["a", "b"]);
        assert_eq!(head.sha256.as_deref(), Some("abc"));
        assert_eq!(head.len, whole.len() as u64);

        // The resumed run journals another episode: it follows the whole lines.
        let mut journal = Journal::open(&path, Some(head.len)).unwrap();
        assert!(!journal.fresh, "the configuration line is kept");
        journal.file.write_all(entry("d").as_bytes()).unwrap();
        drop(journal);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{whole}{}", entry("d"))
        );
        assert_eq!(ids(&scan_journal(&path, &config).unwrap()), ["a", "b", "d"]);

        // Another configuration, or a line that is whole but wrong, is an error naming the file.
        let other = serde_json::json!({"seed": 7});
        let err = scan_journal(&path, &other).err().unwrap().to_string();
        assert!(err.contains("configuration differs"), "{err}");
        std::fs::write(&path, format!("{whole}{{\"episode\": 3}}\n")).unwrap();
        let err = scan_journal(&path, &config).err().unwrap().to_string();
        assert!(err.contains(JOURNAL) && err.contains("at line 4:"), "{err}");

        // A journal of the first format (a bare configuration line), of a later one, or something else: a clear
        // error that says what to do, never a parse failure.
        for (first, says) in [
            (
                r#"{"seed":42,"strategies":[]}"#.to_owned(),
                "older ctxbench (journal format 1",
            ),
            (
                r#"{"ctxbench_journal":9,"config":{}}"#.to_owned(),
                "journal format 9",
            ),
            (
                r#"{"hello":"world"}"#.to_owned(),
                "not a ctxbench resume journal",
            ),
            // Written by a ctxbench whose metrics differ (a value renamed, added, moved): its entries' values
            // would be read into the wrong slots.
            (
                format!(
                    r#"{{"ctxbench_journal":{JOURNAL_VERSION},"metrics":"0123456789abcdef","config":{config}}}"#
                ),
                "written by a ctxbench with other metrics (layout 0123456789abcdef)",
            ),
            (
                format!(r#"{{"ctxbench_journal":{JOURNAL_VERSION},"config":{config}}}"#),
                "other metrics (layout (none))",
            ),
        ] {
            std::fs::write(&path, format!("{first}\n{}", entry("a"))).unwrap();
            let err = scan_journal(&path, &config).err().unwrap().to_string();
            assert!(
                err.contains(says) && err.contains("without --resume"),
                "{err}"
            );
        }

        // A journal without a whole first line holds nothing, and its configuration is written again.
        std::fs::write(&path, "{\"seed\":").unwrap();
        let head = scan_journal(&path, &config).unwrap();
        assert!(head.ids.is_empty() && head.len == 0);
        assert!(Journal::open(&path, Some(head.len)).unwrap().fresh);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }
}

#[cfg(test)]
mod shard_entries {
    use super::*;

    /// A shard's entries hold their line's hash, not the dataset's SHA-256: a resumed shard reads each finished
    /// episode's, and an entry without one is an error naming the journal's line.
    #[test]
    fn a_shard_journal_holds_each_episodes_line_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(JOURNAL);
        let config = serde_json::json!({"seed": 42, "shard": {"index": 1, "count": 4}});
        let head = head_line(&config);
        let entry =
            |id: &str, line: &str| format!("{{\"line_xxh3\":\"{line}\",\"episode\":\"{id}\"}}\n");
        std::fs::write(
            &path,
            format!(
                "{head}\n{}{}",
                entry("a", "00ff"),
                entry("b", &"1".repeat(32))
            ),
        )
        .unwrap();
        let scanned = scan_journal(&path, &config).unwrap();
        assert_eq!(scanned.sha256, None);
        assert_eq!(scanned.lines.len(), 2);
        assert_eq!(scanned.lines["a"], 0xff);
        assert_eq!(
            scanned.lines["b"],
            u128::from_str_radix(&"1".repeat(32), 16).unwrap()
        );

        std::fs::write(
            &path,
            format!(
                "{head}\n{}{{\"sha256\":\"abc\",\"episode\":\"c\"}}\n",
                entry("a", "0")
            ),
        )
        .unwrap();
        let err = scan_journal(&path, &config).err().unwrap().to_string();
        assert!(
            err.contains("at line 3") && err.contains("line_xxh3"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod layout {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use sha2::{Digest, Sha256};

    use super::{Finished, JOURNAL_VERSION};
    use crate::metrics::series::ChartData;
    use crate::replay::Replayer;

    /// What [`JOURNAL_VERSION`] was raised for: the fields of a journal entry, at every depth (their metric
    /// values are the catalog's layout digest's). A change of the fields without a raise fails
    /// `the_journal_version_is_raised_when_an_entry_changes`.
    const PINNED: (u32, &str) = (7, "ba7d52de7778c54a");

    fn paths(v: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, v) in o {
                    let here = format!("{at}/{k}");
                    out.insert(here.clone());
                    paths(v, &here, out);
                }
            }
            serde_json::Value::Array(a) => {
                for v in a {
                    paths(v, &format!("{at}[]"), out);
                }
            }
            _ => {}
        }
    }

    /// An entry of a replayed episode, every strategy of the default run, with its chart series.
    fn entry() -> serde_json::Value {
        let episode = crate::replay::tests::episode();
        let tok = crate::tokens::Tokenizer::shared_default().unwrap();
        let llm = crate::llm::mock::MockLlm::new(Default::default(), Arc::clone(&tok));
        let strategies = crate::strategy::defaults();
        let replays = Replayer::new(tok, &llm, 4000)
            .replay_all(&episode, &strategies)
            .unwrap();
        let catalog = crate::metrics::Catalog::standard();
        let context = crate::metrics::Context {
            prices: crate::run::RunConfig::default().prices(),
            context_window: 4000,
        };
        let result = catalog.episode_result(&episode, &replays, &replays[0], &replays[0], &context);
        // Both hashes, a run's and a shard's (an entry has one of them), so that every field is counted.
        let finished = Finished {
            sha256: Some("0".repeat(64)),
            line_xxh3: Some("0".repeat(32)),
            result,
            chart: Some(ChartData::of_episode(&episode, &replays, &context)),
        };
        serde_json::to_value(&finished).unwrap()
    }

    #[test]
    fn the_journal_version_is_raised_when_an_entry_changes() {
        let mut fields = BTreeSet::new();
        paths(&entry(), "", &mut fields);
        let digest = Sha256::digest(fields.iter().cloned().collect::<Vec<_>>().join("\n"));
        let digest: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            (JOURNAL_VERSION, digest.as_str()),
            PINNED,
            "a journal entry's fields changed ({} fields): raise JOURNAL_VERSION and pin ({}, \"{digest}\") \
             in run::journal::layout::PINNED",
            fields.len(),
            JOURNAL_VERSION + 1
        );
    }
}
