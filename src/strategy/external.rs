//! External: a strategy implemented by another program, in any language, spoken to in JSON lines.
//!
//! ## Protocol
//! ctxbench starts `command` once per episode and writes one line per call point to its standard input:
//!
//! ```json
//! {"step": 3, "context_window": 128000, "input_tokens": 51234,
//!  "request": {"instructions": ["..."], "contents": [{"type": "message", "role": "user", "content": "..."}]}}
//! ```
//!
//! The program answers each line with one line on its standard output: the reduced request, in the same
//! form, and optionally the LLM calls it made:
//!
//! ```json
//! {"request": {"instructions": [], "contents": [...]}, "llm_calls": [{"input_tokens": 900, "output_tokens": 120, "latency_ms": 850.0}]}
//! ```
//!
//! `{"unchanged": true}` keeps the request as it was. Items are in the dataset's item format. The program
//! reads until end of input; what it writes to standard error is shown when it fails.
//!
//! ## Failures
//! No answer within `timeout_ms`, an exit, a line that is not JSON or not of this form: each stops the run
//! with an error naming the program, the step and what was wrong (the offending line, cut). The program is
//! killed when its episode ends.
//!
//! ## Parameters
//! - `command` (required): program and arguments, e.g. `["python3", "scripts/external_keep_last.py", "40"]`.
//! - `timeout_ms` (10000): how long one answer may take.
//!
//! ## Example
//! `{"type": "external", "command": ["python3", "my_strategy.py"], "timeout_ms": 5000}`

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Applied, CallPoint, Change, LlmCall, Strategy, StrategySpec};
use crate::error::{Error, Result};
use crate::llm::{Llm, LlmRequest};

fn default_timeout_ms() -> u64 {
    10_000
}

/// Parameters of [`External`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// How long one answer may take, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

impl StrategySpec for ExternalConfig {
    /// Checks the parameters.
    /// When the command is empty or the timeout is zero.
    fn validate(&self) -> Result<()> {
        if self.command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(Error::Config("external strategy needs a command".into()));
        }
        if self.timeout_ms == 0 {
            return Err(Error::Config("external timeout_ms must be above 0".into()));
        }
        Ok(())
    }

    fn build(&self) -> Box<dyn Strategy> {
        Box::new(External::new(self.clone()))
    }
}

/// One call point, as sent to the program.
#[derive(Serialize)]
struct Call<'a> {
    step: usize,
    context_window: usize,
    input_tokens: usize,
    request: &'a LlmRequest,
}

/// The program's answer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    #[serde(default)]
    request: Option<LlmRequest>,
    #[serde(default)]
    unchanged: bool,
    #[serde(default)]
    llm_calls: Vec<LlmCall>,
}

/// A running program.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The external strategy; see the module docs.
pub struct External {
    config: ExternalConfig,
    process: Option<Process>,
}

impl External {
    /// A strategy that starts its program at the first call point.
    #[must_use]
    pub fn new(config: ExternalConfig) -> Self {
        Self {
            config,
            process: None,
        }
    }

    fn fail(&self, step: usize, message: impl std::fmt::Display) -> Error {
        let stderr = self
            .process
            .as_ref()
            .map(|p| {
                p.stderr
                    .lock()
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let stderr = if stderr.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends: {}", tail(&stderr, 500))
        };
        Error::Strategy {
            strategy: format!("external `{}`", self.config.command.join(" ")),
            message: format!("step {step}: {message}{stderr}"),
        }
    }

    fn start(&mut self) -> Result<&mut Process> {
        if self.process.is_none() {
            let (program, args) = self
                .config
                .command
                .split_first()
                .ok_or_else(|| Error::Config("external strategy needs a command".into()))?;
            let mut child = Command::new(program)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| Error::Strategy {
                    strategy: format!("external `{}`", self.config.command.join(" ")),
                    message: format!("cannot start `{program}`: {e}"),
                })?;
            let stdin = child.stdin.take().expect("stdin is piped");
            let stdout = child.stdout.take().expect("stdout is piped");
            let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
            let (tx, lines) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            let stderr = Arc::new(Mutex::new(String::new()));
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr_pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut s) = sink.lock() {
                        s.push_str(&String::from_utf8_lossy(&buf[..n]));
                        if s.len() > 8192 {
                            let cut = s.len() - 4096;
                            let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                            s.drain(..cut);
                        }
                    }
                }
            });
            self.process = Some(Process {
                child,
                stdin,
                lines,
                stderr,
            });
        }
        Ok(self.process.as_mut().expect("started above"))
    }

    /// Sends one call point and waits for the answer.
    fn exchange(&mut self, state: &CallPoint, req: &LlmRequest) -> Result<String> {
        let line = serde_json::to_string(&Call {
            step: state.step,
            context_window: state.context_window,
            input_tokens: state.input_tokens(req),
            request: req,
        })
        .map_err(|e| self.fail(state.step, format!("cannot encode the request: {e}")))?;
        let timeout = Duration::from_millis(self.config.timeout_ms);
        let process = self.start()?;
        let sent = writeln!(process.stdin, "{line}").and_then(|()| process.stdin.flush());
        let received = process.lines.recv_timeout(timeout);
        let exited = process.child.try_wait().ok().flatten();
        if let Err(e) = sent {
            return Err(self.fail(
                state.step,
                format!("cannot write to the program: {e} (did it exit?)"),
            ));
        }
        match received {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(self.fail(state.step, format!("cannot read its answer: {e}"))),
            Err(RecvTimeoutError::Timeout) => Err(self.fail(
                state.step,
                format!("no answer within {} ms", self.config.timeout_ms),
            )),
            Err(RecvTimeoutError::Disconnected) => {
                // Give the exit status a moment to land.
                let status = exited.or_else(|| {
                    std::thread::sleep(Duration::from_millis(50));
                    self.process
                        .as_mut()
                        .and_then(|p| p.child.try_wait().ok().flatten())
                });
                let how = status.map_or_else(
                    || "closed its output".to_owned(),
                    |s| format!("exited ({s})"),
                );
                Err(self.fail(state.step, format!("the program {how} without answering")))
            }
        }
    }
}

/// The last `n` bytes of `s` (on a character boundary).
fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    &s[start..]
}

/// The first `n` characters of `s`, marked when cut.
fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

impl Strategy for External {
    fn apply(&mut self, state: &CallPoint, req: &mut LlmRequest, _: &dyn Llm) -> Result<Applied> {
        let line = self.exchange(state, req)?;
        let answer: Answer = serde_json::from_str(&line).map_err(|e| {
            self.fail(
                state.step,
                format!(
                    "its answer is not a valid answer ({e}): {}",
                    cut(&line, 200)
                ),
            )
        })?;
        let mut dropped = 0;
        let change = match (answer.request, answer.unchanged) {
            (Some(_), true) => {
                return Err(self.fail(state.step, "its answer has both `request` and `unchanged`"))
            }
            (None, false) => {
                return Err(self.fail(
                    state.step,
                    format!(
                        "its answer has neither `request` nor `unchanged: true`: {}",
                        cut(&line, 200)
                    ),
                ))
            }
            (None, true) => Change::Unchanged,
            (Some(reduced), false) => {
                dropped = req.contents.len().saturating_sub(reduced.contents.len());
                // Another program's request is taken as new, unless it is the very request handed in.
                let change = if reduced == *req {
                    Change::Unchanged
                } else {
                    Change::Replaced
                };
                *req = reduced;
                change
            }
        };
        Ok(Applied {
            llm_calls: answer.llm_calls,
            dropped_items: dropped,
            ..Applied::new(change)
        })
    }
}
