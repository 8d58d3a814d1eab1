//! A failed command's message on stderr: what failed, why (each cause once), and what to do, every line within
//! 100 columns.

use std::fmt::Write as _;
use std::path::Path;

use crate::error::Error;

/// An error that says what to do about it: the hint is printed after the causes, as `hint: …`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Hinted {
    /// What failed and why.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl Hinted {
    /// An error of `message` with `hint`.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// The message of `err`: `error: …`, then each cause not said already (`caused by: …`), then what to do
/// (`hint: …`) where it is known and not said already; every line wrapped at `width` columns.
#[must_use]
pub fn describe(err: &anyhow::Error, width: usize) -> String {
    let causes = causes(err);
    let mut out = String::new();
    for (i, cause) in causes.iter().enumerate() {
        let label = if i == 0 { "error: " } else { "  caused by: " };
        let _ = writeln!(
            out,
            "{}",
            super::console::hanging(&format!("{label}{cause}"), width, 4)
        );
    }
    if let Some(hint) = hint(err).filter(|h| !causes.iter().any(|c| c.contains(h.as_str()))) {
        let _ = writeln!(
            out,
            "{}",
            super::console::hanging(&format!("  hint: {hint}"), width, 4)
        );
    }
    out
}

/// The messages of `err`'s chain, each once: a cause whose text the message before it already holds (an I/O
/// error under the library's error that names its file and says it) is left out, and so are the
/// operating system's error numbers.
fn causes(err: &anyhow::Error) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = plain(cause.to_string().trim_end());
        let said = out
            .iter()
            .any(|before| before.to_lowercase().contains(&text.to_lowercase()));
        if !said && !text.is_empty() {
            out.push(text);
        }
    }
    out
}

/// `text` without the operating system's error number (` (os error 2)`).
fn plain(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(at) = out.find(" (os error ") {
        let Some(end) = out[at..].find(')') else {
            break;
        };
        out.replace_range(at..=at + end, "");
    }
    out
}

/// What to do about `err`: the hint an error carries ([`Hinted`]), else one for the library's errors whose
/// remedy is known (a missing dataset or configuration, a file that does not parse, a failed LLM call).
fn hint(err: &anyhow::Error) -> Option<String> {
    if let Some(h) = err.chain().find_map(|c| c.downcast_ref::<Hinted>()) {
        return Some(h.hint.clone());
    }
    let library = err.chain().find_map(|c| c.downcast_ref::<Error>())?;
    match library {
        Error::Io { path, source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Some(missing(path))
        }
        Error::Parse { path, .. } | Error::Invalid { path, .. } if is_dataset(path) => {
            Some(format!(
            "`ctxbench validate {}` lists every problem; an agent's own trace is converted with \
             `ctxbench import TRACE -o FILE.jsonl`",
            path.display()
        ))
        }
        Error::Llm(_) => Some(
            "check [llm]'s base_url, model and api_key_env; `ctxbench run --resume` with the same \
             arguments continues where the run stopped"
                .into(),
        ),
        _ => None,
    }
}

/// What to do about a file that is not there, by what it is.
fn missing(path: &Path) -> String {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if is_dataset(path) {
        format!(
            "`ctxbench import TRACES -o {0}` converts an agent's traces into a dataset; `ctxbench gen \
             -o {0}` writes the bundled one",
            path.display()
        )
    } else if ext == "toml" {
        format!(
            "`ctxbench init -o {0}` writes a starting configuration there (`ctxbench init sweep -o {0}`, \
             a sweep grid)",
            path.display()
        )
    } else if path.file_name().is_some_and(|n| n == "summary.json") {
        "give the directory a run wrote (`ctxbench run` writes reports/NAME; `--out` another)"
            .into()
    } else {
        format!("check the path '{}'", path.display())
    }
}

/// Whether `path` looks like a dataset (JSON lines).
fn is_dataset(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing_dataset() -> anyhow::Error {
        let io = std::io::Error::from_raw_os_error(2);
        anyhow::Error::new(Error::io("open", "data/mine.jsonl", io))
            .context("run 'default' failed before finishing an episode")
    }

    /// The example: the cause once, without the error number, and the commands that make a dataset.
    #[test]
    fn a_missing_dataset_says_its_cause_once_and_what_makes_one() {
        let text = describe(&missing_dataset(), 100);
        assert_eq!(
            text,
            "error: run 'default' failed before finishing an episode\n  caused by: failed to open \
             'data/mine.jsonl': No such file or directory\n  hint: `ctxbench import TRACES -o \
             data/mine.jsonl` converts an agent's traces into a dataset;\n    `ctxbench gen -o \
             data/mine.jsonl` writes the bundled one\n"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    #[test]
    fn a_carried_hint_wins_and_is_not_repeated() {
        let err = anyhow::Error::new(Hinted::new("'a.toml' exists", "give --force"));
        assert_eq!(
            describe(&err, 100),
            "error: 'a.toml' exists\n  hint: give --force\n"
        );
        let said = anyhow::Error::new(Hinted::new("'a.toml' exists: give --force", "give --force"));
        assert_eq!(
            describe(&said, 100),
            "error: 'a.toml' exists: give --force\n"
        );
    }

    #[test]
    fn long_lines_wrap_within_the_width() {
        let err = anyhow::anyhow!("{}", "word ".repeat(60));
        let text = describe(&err, 100);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert!(
            text.lines().skip(1).all(|l| l.starts_with("    ")),
            "{text}"
        );
    }

    #[test]
    fn a_missing_config_points_to_init() {
        let io = std::io::Error::from_raw_os_error(2);
        let err = anyhow::Error::new(Error::io("read", "mine.toml", io));
        assert!(
            describe(&err, 100).contains("hint: `ctxbench init -o mine.toml` writes"),
            "{}",
            describe(&err, 100)
        );
    }
}
