//! Importers from agents' own trace formats into [`Episode`]s, with format detection.
//!
//! Each format is one file with one [`Importer`]: its name (what `--format` takes), a `sniff` that says how
//! sure it is that a text is its format, and an `import` from the whole text (a file may hold several
//! episodes, e.g. an eval-output JSONL). [`IMPORTERS`] lists them; detection asks every importer and takes the
//! surest, so the table's order matters only between equally sure importers. What a source records about real
//! usage (provider prompt tokens per call, cost, exit status) is kept in the episode's `meta`. Malformed input
//! gives an error naming the file and the position (line, or JSON path), never a panic.
//!
//! **Adding an importer**: one file implementing [`Importer`], and one line in [`IMPORTERS`].

pub mod aider;
pub mod anthropic;
pub mod calls;
pub mod claude_code;
pub mod compacted;
pub mod conversation;
pub mod inspect;
pub mod mini_swe_agent;
pub mod native;
pub mod openai;
pub mod openhands;
pub mod openinference;
pub mod otel;
pub mod otlp;
pub mod smolagents;
pub mod swe_agent;
pub mod tau_bench;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use conversation::{
    arguments_of, bad, episode, parse_json, parse_jsonl, text_of, Conversation,
};

use super::Episode;
use crate::error::Result;

/// What an importer may look at to recognise its format: the text, its first line parsed as a JSON object
/// (JSONL formats), and the whole text parsed as JSON (JSON formats), each when it parses.
pub struct Sniff<'a> {
    /// The file's text (a byte-order mark and leading white space removed).
    pub text: &'a str,
    /// The first line, when it is a JSON object.
    pub first_line: Option<serde_json::Map<String, Value>>,
    /// The whole text, when it is one JSON value.
    pub document: Option<Value>,
}

impl<'a> Sniff<'a> {
    /// Parses what importers look at.
    #[must_use]
    pub fn new(text: &'a str) -> Self {
        let text = text.trim_start_matches('\u{feff}').trim_start();
        let first_line = match serde_json::from_str(text.lines().next().unwrap_or("")) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        };
        Self {
            text,
            first_line,
            document: serde_json::from_str(text).ok(),
        }
    }

    /// The whole document's object, when it is one.
    #[must_use]
    pub fn object(&self) -> Option<&serde_json::Map<String, Value>> {
        self.document.as_ref().and_then(Value::as_object)
    }

    /// The whole document's list, when it is one.
    #[must_use]
    pub fn list(&self) -> Option<&Vec<Value>> {
        self.document.as_ref().and_then(Value::as_array)
    }
}

/// How sure a sniff is: the surest importer wins detection.
pub mod sure {
    /// A marker only this format writes (a format tag, a unique key).
    pub const CERTAIN: u8 = 100;
    /// A shape only this format has among the known ones.
    pub const LIKELY: u8 = 60;
    /// A generic shape another format may refine (plain chat messages).
    pub const GENERIC: u8 = 20;
}

/// One trace format.
pub trait Importer: Sync {
    /// The name `--format` takes.
    fn name(&self) -> &'static str;
    /// What it reads, in a sentence.
    fn about(&self) -> &'static str;
    /// How sure it is that the text is its format ([`sure`]), or `None` when it is not.
    fn sniff(&self, sniff: &Sniff<'_>) -> Option<u8>;
    /// The episodes of the whole text read from `origin`.
    ///
    /// # Errors
    /// Names the file and the position of what is malformed.
    fn import(&self, text: &str, origin: &Path) -> Result<Vec<Episode>>;

    /// Why a text that no importer reads, but that this format's tools wrote, is not a trace (a file of
    /// expected messages, say), so that detection can say so instead of "cannot detect". Default: never.
    fn refuse(&self, _sniff: &Sniff<'_>) -> Option<String> {
        None
    }

    /// How sure it is that a file that is not UTF-8 text (a zip archive, say) is its format. Text formats
    /// keep the default: never.
    fn sniff_binary(&self, _bytes: &[u8]) -> Option<u8> {
        None
    }

    /// The episodes of a file's bytes. The default reads them as UTF-8 text and calls [`Importer::import`].
    ///
    /// # Errors
    /// As [`Importer::import`], or bytes that are not UTF-8, naming the line.
    fn import_bytes(&self, bytes: &[u8], origin: &Path) -> Result<Vec<Episode>> {
        self.import(utf8(bytes, origin)?, origin)
    }

    /// Whether the files of one recording may be split (an OpenTelemetry Collector writes spans, logs and
    /// metrics to files of their own): then every file of the format given in one command is read by one
    /// [`Importer::import_files`]. Default: no, each file is read alone.
    fn joins_files(&self) -> bool {
        false
    }

    /// The episodes of several files given together (only called when [`Importer::joins_files`]). The
    /// default reads each alone, in order.
    ///
    /// # Errors
    /// As [`Importer::import`], naming the file.
    fn import_files(&self, files: &[(PathBuf, Vec<u8>)]) -> Result<Vec<Episode>> {
        let mut out = Vec::new();
        for (path, bytes) in files {
            out.extend(self.import_bytes(bytes, path)?);
        }
        Ok(out)
    }
}

/// The text of `bytes`, or an error naming the line and byte where they stop being UTF-8.
///
/// # Errors
/// Bytes that are not UTF-8.
pub fn utf8<'a>(bytes: &'a [u8], origin: &Path) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        let line = bytes[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
        bad(
            origin,
            line,
            format!("invalid UTF-8 at byte {valid} of the file"),
        )
    })
}

/// Every importer, each once.
pub static IMPORTERS: &[&dyn Importer] = &[
    &native::Native,
    &aider::Aider,
    &claude_code::ClaudeCode,
    &smolagents::Smolagents,
    &openhands::OpenHands,
    &mini_swe_agent::MiniSweAgent,
    &swe_agent::SweAgent,
    &tau_bench::TauBench,
    &anthropic::Anthropic,
    &openai::OpenAi,
    &inspect::Inspect,
    &otel::OTel,
    &openinference::OpenInference,
];

/// The importer named `name`.
#[must_use]
pub fn by_name(name: &str) -> Option<&'static dyn Importer> {
    IMPORTERS.iter().copied().find(|i| i.name() == name)
}

/// The names `--format` takes: `auto`, then every importer's.
#[must_use]
pub fn format_names() -> Vec<&'static str> {
    std::iter::once("auto")
        .chain(IMPORTERS.iter().map(|i| i.name()))
        .collect()
}

/// The importer surest that `text` (read from `origin`) is its format.
///
/// # Errors
/// When nothing matches, naming the file.
pub fn detect(text: &str, origin: &Path) -> Result<&'static dyn Importer> {
    let sniff = Sniff::new(text);
    let mut best: Option<(u8, &'static dyn Importer)> = None;
    for &importer in IMPORTERS {
        if let Some(score) = importer.sniff(&sniff) {
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, importer));
            }
        }
    }
    if let Some((_, importer)) = best {
        return Ok(importer);
    }
    if let Some(why) = IMPORTERS.iter().find_map(|i| i.refuse(&sniff)) {
        return Err(bad(origin, 1, format!("not a trace: {why}")));
    }
    let what = if sniff.document.is_some() || sniff.first_line.is_some() {
        "cannot detect the format of this JSON"
    } else {
        "cannot detect the format: not JSON, JSONL, or aider markdown"
    };
    Err(bad(
        origin,
        1,
        format!("{what} (give it with --format; `ctxbench import --help` lists the formats)"),
    ))
}

/// When the file at `path` is an agent's trace in a format ctxbench imports (not a ctxbench dataset), the
/// sentence that says so and how to convert it. Reads at most the first 256 MB.
#[must_use]
pub fn trace_hint(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(256 << 20)
        .read_to_end(&mut bytes)
        .ok()?;
    let importer = match IMPORTERS.iter().find(|i| i.sniff_binary(&bytes).is_some()) {
        Some(&binary) => binary,
        None => detect(&String::from_utf8_lossy(&bytes), path).ok()?,
    };
    (importer.name() != native::Native.name()).then(|| {
        format!(
            "this looks like an agent trace (format {}), not a ctxbench dataset: `ctxbench import {} -o out.jsonl` converts it",
            importer.name(),
            path.display()
        )
    })
}

/// Imports one file in the format named `format` (detected when `None` or `auto`), adding automatic findings
/// to episodes that have none.
///
/// # Errors
/// Names the file and the position of what is malformed.
pub fn import_file(path: &Path, format: Option<&str>) -> Result<Vec<Episode>> {
    let bytes = std::fs::read(path).map_err(|e| crate::error::Error::io("read", path, e))?;
    import_bytes(&bytes, path, format)
}

/// Imports a file's bytes read from `origin`: text, or a binary format (an Inspect AI `.eval` archive).
///
/// # Errors
/// As [`import_file`].
pub fn import_bytes(bytes: &[u8], origin: &Path, format: Option<&str>) -> Result<Vec<Episode>> {
    let importer = importer_of(bytes, origin, format)?;
    let episodes = importer.import_bytes(bytes, origin)?;
    finish(episodes, origin)
}

/// Imports text read from `origin`.
///
/// # Errors
/// As [`import_file`], or an unknown format name.
pub fn import_text(text: &str, origin: &Path, format: Option<&str>) -> Result<Vec<Episode>> {
    import_bytes(text.as_bytes(), origin, format)
}

/// The importer named `format`, or the one detected from `bytes` (`None` or `auto`).
fn importer_of(bytes: &[u8], origin: &Path, format: Option<&str>) -> Result<&'static dyn Importer> {
    if std::str::from_utf8(bytes).is_ok_and(|t| t.trim().is_empty()) {
        return Err(bad(origin, 1, "the file is empty"));
    }
    if let Some(name) = format.filter(|f| *f != "auto") {
        return by_name(name).ok_or_else(|| {
            crate::error::Error::Config(format!(
                "unknown trace format '{name}'; known: {}",
                format_names().join(", ")
            ))
        });
    }
    let binary = IMPORTERS
        .iter()
        .filter_map(|&i| i.sniff_binary(bytes).map(|score| (score, i)))
        .max_by_key(|&(score, _)| score);
    if let Some((_, importer)) = binary {
        return Ok(importer);
    }
    detect(utf8(bytes, origin)?, origin)
}

/// What every import ends with: no episode without items, and automatic findings and open probes for
/// episodes that have no findings.
fn finish(mut episodes: Vec<Episode>, origin: &Path) -> Result<Vec<Episode>> {
    for ep in &mut episodes {
        if ep.items.is_empty() {
            return Err(bad(
                origin,
                1,
                format!("episode '{}' has no message, call or result", ep.id),
            ));
        }
        if ep.findings.is_empty() {
            super::findings::extract(ep);
            super::open_probes::add(ep);
        }
    }
    Ok(episodes)
}

/// What [`import_paths`] read from one file, or from the files of one recording read together.
#[derive(Debug)]
pub struct Imported {
    /// The file, or the first of the files read together.
    pub path: PathBuf,
    /// Every file read (one, unless the format joins files).
    pub files: Vec<PathBuf>,
    /// Whether every file came from a directory (a caller may then skip a file it cannot read).
    pub in_dir: bool,
    /// The episodes, or what is wrong.
    pub episodes: Result<Vec<Episode>>,
}

/// Imports `files` (each marked whether it came from a directory) in the format named `format`: each file
/// alone, except that the files of a format that joins files ([`Importer::joins_files`]: OpenTelemetry
/// exports, whose spans and logs may be in files of their own) are read together, at the place of the first.
///
/// # Errors
/// None itself: each [`Imported`] holds its own result.
#[must_use]
pub fn import_paths(files: &[(PathBuf, bool)], format: Option<&str>) -> Vec<Imported> {
    let mut out: Vec<Imported> = Vec::new();
    // Per format that joins files: its name, its place in `out`, and its files with their bytes.
    type Joined = (&'static str, usize, Vec<(PathBuf, Vec<u8>)>);
    let mut joined: Vec<Joined> = Vec::new();
    for (path, in_dir) in files {
        let read = std::fs::read(path)
            .map_err(|e| crate::error::Error::io("read", path, e))
            .and_then(|bytes| importer_of(&bytes, path, format).map(|i| (i, bytes)));
        let (importer, bytes) = match read {
            Ok(found) => found,
            Err(e) => {
                out.push(Imported {
                    path: path.clone(),
                    files: vec![path.clone()],
                    in_dir: *in_dir,
                    episodes: Err(e),
                });
                continue;
            }
        };
        if importer.joins_files() {
            if let Some((_, at, group)) = joined.iter_mut().find(|(n, ..)| *n == importer.name()) {
                out[*at].files.push(path.clone());
                out[*at].in_dir &= *in_dir;
                group.push((path.clone(), bytes));
            } else {
                joined.push((importer.name(), out.len(), vec![(path.clone(), bytes)]));
                out.push(Imported {
                    path: path.clone(),
                    files: vec![path.clone()],
                    in_dir: *in_dir,
                    episodes: Ok(Vec::new()),
                });
            }
            continue;
        }
        let episodes = importer
            .import_bytes(&bytes, path)
            .and_then(|eps| finish(eps, path));
        out.push(Imported {
            path: path.clone(),
            files: vec![path.clone()],
            in_dir: *in_dir,
            episodes,
        });
    }
    for (name, at, group) in joined {
        let importer = by_name(name).expect("a joined format is a registered importer");
        out[at].episodes = importer
            .import_files(&group)
            .and_then(|eps| finish(eps, &group[0].0));
    }
    out
}

/// Reads tool definitions for traces that do not record theirs (`ctxbench import --tools`): a JSON array of
/// definitions as the provider APIs take them (`{"type": "function", "function": {…}}`, a bare function or
/// Anthropic's `{name, description, input_schema}`), or an object whose `tools` is one.
///
/// # Errors
/// A file that cannot be read, is not JSON, or holds a definition without a name.
pub fn read_tools(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| crate::error::Error::io("read", path, e))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| bad(path, e.line(), e.to_string()))?;
    let tools =
        match value {
            Value::Array(tools) => tools,
            Value::Object(mut o) => match o.remove("tools") {
                Some(Value::Array(tools)) => tools,
                _ => return Err(bad(
                    path,
                    1,
                    "expected a JSON array of tool definitions, or an object whose `tools` is one",
                )),
            },
            _ => {
                return Err(bad(
                    path,
                    1,
                    "expected a JSON array of tool definitions, or an object whose `tools` is one",
                ))
            }
        };
    for (i, tool) in tools.iter().enumerate() {
        let f = tool.get("function").unwrap_or(tool);
        if f.get("name").and_then(Value::as_str).is_none() {
            return Err(bad(
                path,
                1,
                format!(
                    "tool definition {i} has no `name` (give `{{\"type\": \"function\", \"function\": {{\"name\": …, \
                     \"parameters\": …}}}}` or Anthropic's `{{\"name\": …, \"input_schema\": …}}`)"
                ),
            ));
        }
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_importer_is_listed_once() {
        let names = format_names();
        let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for i in IMPORTERS {
            assert!(!i.about().is_empty());
            assert!(by_name(i.name()).is_some());
        }
    }

    #[test]
    fn the_surest_importer_wins_whatever_the_order() {
        // Chat messages with Anthropic blocks are Anthropic, without them OpenAI; a mini-swe-agent list is
        // plain messages too, but its own markers win.
        for (text, want) in [
            (r#"{"messages":[{"role":"user","content":"hi"}]}"#, "openai"),
            (
                r#"{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":{}}]}]}"#,
                "anthropic",
            ),
            (
                r#"[{"role":"user","content":"<returncode>0</returncode><output>ok</output>"}]"#,
                "mini-swe-agent",
            ),
            (r#"{"traj":[],"reward":1}"#, "tau-bench"),
            (
                "# aider chat started at 2024-08-09 19:32:47\n\n#### hi\n",
                "aider",
            ),
        ] {
            assert_eq!(detect(text, Path::new("t")).unwrap().name(), want, "{text}");
        }
        let err = detect("not json", Path::new("t"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("--format"), "{err}");
        // A file the project's own scripts write next to a trace is refused with the reason.
        let expected =
            r#"{"openhands_ai":"0.62.0","events":"openhands_session.json","native":[],"text":[]}"#;
        let err = detect(expected, Path::new("t")).err().unwrap().to_string();
        assert!(
            err.contains("not a trace") && err.contains("openhands_session.json"),
            "{err}"
        );
        // An aider transcript cut without its session header is still aider's.
        let cut = "#### /run ./test.py  \n> ok  \n\nThe test passes.\n";
        assert_eq!(detect(cut, Path::new("t")).unwrap().name(), "aider");
    }
}
