//! The library error type and its `Result` alias.

use std::path::PathBuf;

/// Everything that can go wrong inside the ctxbench library.
///
/// Each variant carries what a user needs to find and fix the problem: the file, the line, the episode or
/// the strategy, and the offending value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be opened, read or written.
    #[error("failed to {action} '{path}': {source}")]
    Io {
        /// What was being done (`read`, `write`, `create`…).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line of a dataset or trace could not be parsed.
    #[error("failed to parse '{path}' at line {line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// One-based line number.
        line: usize,
        /// What is wrong, with the JSON path of the field where known.
        message: String,
    },
    /// A dataset or trace parsed but is not a valid history (dangling tool result, bad finding…).
    #[error("invalid episode '{episode}' in '{path}' at line {line}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// One-based line number.
        line: usize,
        /// The episode id.
        episode: String,
        /// What is wrong.
        message: String,
    },
    /// A configuration value is missing or out of range.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A strategy could not do its work.
    #[error("strategy '{strategy}' failed: {message}")]
    Strategy {
        /// The strategy name.
        strategy: String,
        /// What went wrong.
        message: String,
    },
    /// An LLM call failed.
    #[error("llm call failed: {0}")]
    Llm(String),
    /// A tokenizer could not be loaded.
    #[error("failed to load tokenizer '{encoding}': {message}")]
    Tokenizer {
        /// The encoding name.
        encoding: String,
        /// Why it failed.
        message: String,
    },
    /// A strategy's results lack a figure the analysis decides with (results another version wrote).
    #[error("strategy '{strategy}' lacks a figure the analysis needs ({message}): re-run it with this version")]
    Figures {
        /// The strategy name.
        strategy: String,
        /// The figure missing or of the wrong type.
        message: String,
    },
    /// A model's chat template failed to render a request: counting stops rather than count it as 0 tokens.
    #[error(
        "the chat template '{file}' failed to render{}: {message} (rendering {what}; fix the template or give \
         another with --chat-template)",
        line.map_or_else(String::new, |l| format!(" at line {l}"))
    )]
    Template {
        /// The template's file.
        file: String,
        /// The line of the template where it failed, when the renderer says.
        line: Option<usize>,
        /// The renderer's message (a `raise_exception` call's own).
        message: String,
        /// What was being rendered (`a tool message`).
        what: String,
    },
    /// A report could not be serialized.
    #[error("failed to serialize {what}: {message}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// Why it failed.
        message: String,
    },
}

/// The library's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the action and path it happened on.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// A CSV file that does not parse: the path, the line the csv reader was at, and its message.
    pub fn csv(path: impl Into<PathBuf>, e: &csv::Error) -> Self {
        Error::Parse {
            path: path.into(),
            line: e
                .position()
                .map_or(1, |p| usize::try_from(p.line()).unwrap_or(usize::MAX)),
            message: e.to_string(),
        }
    }
}
