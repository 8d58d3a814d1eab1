//! `ctxbench import`: traces to a dataset. Stdout says what each file held (its format, its episodes with their
//! items, findings and probes); warnings go to stderr, grouped by cause and then by file, and every line fits
//! 100 columns.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::console::{count, hanging};
use crate::history::Episode;

/// The width every line fits.
const WIDTH: usize = 100;

/// The files `import` reads for `paths`: a file as given, a directory's regular files (recursively, sorted,
/// hidden ones and `*.md` notes named README or MANIFEST left out), each marked whether it came from a
/// directory (then a file in no known format is skipped with a warning rather than an error).
fn import_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            out.push((path.clone(), false));
            continue;
        }
        let mut found = Vec::new();
        let mut dirs = vec![path.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir)
                .with_context(|| format!("failed to read the directory '{}'", dir.display()))?
            {
                let entry = entry?;
                let p = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let stem = name.split('.').next().unwrap_or("").to_ascii_uppercase();
                if name.starts_with('.') || stem == "README" || stem == "MANIFEST" {
                    continue;
                }
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    found.push(p);
                }
            }
        }
        found.sort();
        out.extend(found.into_iter().map(|p| (p, true)));
    }
    Ok(out)
}

/// The file an episode came from: the one its importer recorded (`meta.origin`; the files of an
/// OpenTelemetry export are read together, each episode from its own), else `read`.
fn origin_of(ep: &Episode, read: &Path) -> PathBuf {
    ep.meta
        .get("origin")
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| read.to_owned(), PathBuf::from)
}

/// An episode's figures: `5 items, 1 finding, 2 probes`.
fn figures(ep: &Episode) -> String {
    format!(
        "{}, {}, {}",
        count(ep.items.len(), "item", "items"),
        if ep.findings.is_empty() {
            "no findings".to_owned()
        } else {
            count(ep.findings.len(), "finding", "findings")
        },
        count(ep.probes.len(), "probe", "probes")
    )
}

/// Warnings of one cause, each file with what it concerns.
#[derive(Default)]
struct Group {
    /// (file, episode ids or the reason).
    files: Vec<(PathBuf, Vec<String>)>,
}

impl Group {
    fn add(&mut self, file: &Path, what: String) {
        match self.files.iter_mut().find(|(f, _)| f == file) {
            Some((_, list)) => list.push(what),
            None => self.files.push((file.to_owned(), vec![what])),
        }
    }

    fn len(&self) -> usize {
        self.files.iter().map(|(_, l)| l.len()).sum()
    }

    /// The group under its heading, a line per file (wrapped), to `err`.
    fn write(&self, err: &mut impl Write, heading: &str) -> Result<()> {
        if self.files.is_empty() {
            return Ok(());
        }
        writeln!(err, "{}", hanging(&format!("warning: {heading}"), WIDTH, 2))?;
        for (file, list) in &self.files {
            let line = format!("  {}: {}", file.display(), list.join(", "));
            writeln!(err, "{}", hanging(&line, WIDTH, 4))?;
        }
        Ok(())
    }
}

pub(super) fn cmd_import(
    stdout: &mut impl Write,
    format: &str,
    paths: &[PathBuf],
    out: &Path,
    tools: Option<&Path>,
    tokens: &super::args::TokenizerArgs,
    unrecorded: crate::run::UnrecordedMode,
) -> Result<bool> {
    let tokenizer = tokens.tokenizer()?;
    let mut calibrated = Vec::new();
    let tools = tools
        .map(|t| {
            crate::history::import::read_tools(t)
                .map(|defs| (t, defs))
                .context("failed to read the tool definitions")
        })
        .transpose()?;
    let mut episodes = Vec::new();
    let mut given_tools = 0;
    let (mut skipped, mut without_findings) = (Group::default(), Group::default());
    // Each file alone, except the files of one OpenTelemetry export (spans, logs), which are read together.
    for imported in crate::history::import::import_paths(&import_inputs(paths)?, Some(format)) {
        let (read, in_dir) = (imported.path, imported.in_dir);
        let mut eps = match imported.episodes {
            Ok(eps) => eps,
            Err(e) if in_dir => {
                // The error names the file; the group line does already.
                let reason = match &e {
                    crate::error::Error::Parse {
                        path,
                        line,
                        message,
                    } if *path == read => {
                        if *line > 1 {
                            format!("line {line}: {message}")
                        } else {
                            message.clone()
                        }
                    }
                    _ => e.to_string(),
                };
                skipped.add(&read, reason);
                continue;
            }
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("failed to import '{}'", read.display()))
                )
            }
        };
        for ep in &mut eps {
            // Tools ctxbench ships for a format (tau-bench's, `meta.tools_from`) give way to the user's.
            let shipped = ep.meta.contains_key("tools_from");
            if let Some((_, defs)) = tools.as_ref().filter(|_| ep.tools.is_empty() || shipped) {
                ep.tools.clone_from(defs);
                ep.meta.remove("tools_from");
                given_tools += 1;
            }
            if unrecorded == crate::run::UnrecordedMode::Keep {
                if let Ok(c) = crate::replay::unrecorded::calibrate(ep, &tokenizer)? {
                    calibrated.push(c);
                }
            }
        }
        // The episodes by the file they came from, in the order read.
        let mut files: Vec<(PathBuf, Vec<&Episode>)> = Vec::new();
        for ep in &eps {
            let file = origin_of(ep, &read);
            if let Some(issue) = crate::history::validate::check_episode(ep)
                .into_iter()
                .next()
            {
                bail!(
                    "imported episode '{}' from '{}' is invalid: {}: {}",
                    ep.id,
                    file.display(),
                    issue.field,
                    issue.message
                );
            }
            if ep.findings.is_empty() {
                without_findings.add(&file, ep.id.clone());
            }
            match files.iter_mut().find(|(f, _)| *f == file) {
                Some((_, list)) => list.push(ep),
                None => files.push((file, vec![ep])),
            }
        }
        for (file, list) in files {
            let detected = list[0]
                .meta
                .get("format")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(format);
            if let [ep] = list.as_slice() {
                let line = format!(
                    "{}: {detected} trace, episode '{}': {}",
                    file.display(),
                    ep.id,
                    figures(ep)
                );
                writeln!(stdout, "{}", hanging(&line, WIDTH, 4))?;
                continue;
            }
            writeln!(
                stdout,
                "{}",
                hanging(
                    &format!(
                        "{}: {detected} trace, {}",
                        file.display(),
                        count(list.len(), "episode", "episodes")
                    ),
                    WIDTH,
                    4
                )
            )?;
            for ep in list {
                let line = format!("  '{}': {}", ep.id, figures(ep));
                writeln!(stdout, "{}", hanging(&line, WIDTH, 4))?;
            }
        }
        episodes.extend(eps);
    }
    let mut err = std::io::stderr().lock();
    skipped.write(
        &mut err,
        &format!(
            "skipped {}, not a trace ctxbench reads:",
            count(skipped.len(), "file", "files")
        ),
    )?;
    if episodes.is_empty() {
        bail!(
            "nothing was imported from {}{}; '{}' was not written",
            paths
                .iter()
                .map(|p| format!("'{}'", p.display()))
                .collect::<Vec<_>>()
                .join(", "),
            if skipped.len() > 0 {
                format!(
                    " ({} in no known format)",
                    count(skipped.len(), "file", "files")
                )
            } else {
                String::new()
            },
            out.display()
        );
    }
    without_findings.write(
        &mut err,
        &format!(
            "{} without findings: none could be found automatically, so retention is not measured on {} \
             (add findings by hand: README, Dataset format):",
            count(without_findings.len(), "episode", "episodes"),
            if without_findings.len() == 1 {
                "it"
            } else {
                "them"
            }
        ),
    )?;
    if let Some((path, defs)) = &tools {
        let line = format!(
            "gave the {} of {} to {given_tools} of {} (the others record their own)",
            count(defs.len(), "tool definition", "tool definitions"),
            path.display(),
            count(episodes.len(), "episode", "episodes")
        );
        writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
    }
    write_calibrated(stdout, &calibrated, &tokenizer)?;
    let mut bytes = Vec::new();
    crate::history::dataset::write_episodes(&mut bytes, &episodes)?;
    crate::files::write_atomic(out, &bytes)?;
    let line = format!(
        "wrote {} to {} ({} without findings{})",
        count(episodes.len(), "episode", "episodes"),
        out.display(),
        without_findings.len(),
        if skipped.len() > 0 {
            format!(", {} skipped", count(skipped.len(), "file", "files"))
        } else {
            String::new()
        }
    );
    writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
    Ok(true)
}

/// What import added of the context the traces did not record: per episode, its share of the input.
fn write_calibrated(
    stdout: &mut impl Write,
    calibrated: &[crate::replay::unrecorded::Calibration],
    tokenizer: &crate::tokens::Tokenizer,
) -> Result<()> {
    if calibrated.is_empty() {
        return Ok(());
    }
    let line = format!(
        "{} record each call's prompt tokens but not all of each prompt: before each call point, a block of \
         unrecorded context (its size, no text) now makes up the difference, counted with {}; every strategy \
         sends it (`run --unrecorded ignore` leaves it out):",
        count(calibrated.len(), "episode", "episodes"),
        tokenizer.name()
    );
    writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
    for c in calibrated {
        let mut line = format!(
            "  {}: {} of the input was not recorded ({} tokens over {}: {})",
            c.episode,
            crate::report::pct(Some(c.unrecorded_share())),
            c.unrecorded_tokens,
            count(c.call_points, "call point", "call points"),
            c.leaves_out,
        );
        if c.estimated > 0 {
            line += &format!(
                "; {} without usage took the nearest recorded call's block",
                count(c.estimated, "call point", "call points")
            );
        }
        if c.over > 0 {
            line += &format!(
                "; at {} the replay already exceeds the record (the tokenizer counts more)",
                count(c.over, "call point", "call points")
            );
        }
        writeln!(stdout, "{}", hanging(&line, WIDTH, 4))?;
    }
    Ok(())
}
