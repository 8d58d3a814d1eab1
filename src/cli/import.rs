//! `ctxbench import`: traces to a dataset. Stdout says what each file held (its format, its episodes with their
//! items, findings and probes); warnings go to stderr, grouped by cause and then by file, and every line fits
//! 100 columns.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::args::ImportArgs;
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

/// An episode's figures, with how many of its findings the agent found and needs later (`found`, what
/// retention at need measures): `5 items, 2 findings (1 found, needed later), 2 probes`.
fn figures(ep: &Episode, found: usize) -> String {
    format!(
        "{}, {}, {}",
        count(ep.items.len(), "item", "items"),
        if ep.findings.is_empty() {
            "no findings".to_owned()
        } else {
            format!(
                "{} ({found} found, needed later)",
                count(ep.findings.len(), "finding", "findings")
            )
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

/// What an import has gathered: the episodes, the files it skipped, the episodes without a finding the agent
/// found and needs later (which retention at need leaves out), the calibrations of unrecorded context and how
/// many episodes took the given tools.
#[derive(Default)]
struct Imported {
    episodes: Vec<Episode>,
    skipped: Group,
    without_found_needs: Group,
    calibrated: Vec<crate::replay::unrecorded::Calibration>,
    given_tools: usize,
}

/// Tool definitions given with `--tools`, and their file.
type GivenTools<'a> = Option<(&'a Path, Vec<serde_json::Value>)>;

pub(super) fn cmd_import(stdout: &mut impl Write, args: &ImportArgs) -> Result<bool> {
    let tokenizer = args.tokens.overrides().build()?;
    let tools: GivenTools = args
        .tools
        .as_deref()
        .map(|t| {
            crate::history::import::read_tools(t)
                .map(|defs| (t, defs))
                .context("failed to read the tool definitions")
        })
        .transpose()?;
    let mut done = Imported::default();
    // Each file alone, except the files of one OpenTelemetry export (spans, logs), which are read together.
    for imported in
        crate::history::import::import_paths(&import_inputs(&args.files)?, Some(&args.format))
    {
        let read = imported.path;
        let mut eps = match imported.episodes {
            Ok(eps) => eps,
            Err(e) if imported.in_dir => {
                done.skipped.add(&read, skip_reason(&e, &read));
                continue;
            }
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("failed to import '{}'", read.display()))
                )
            }
        };
        for ep in &mut eps {
            done.prepare(ep, tools.as_ref(), &tokenizer, args.unrecorded)?;
        }
        done.list(stdout, &eps, &read, &args.format)?;
        done.episodes.extend(eps);
    }
    done.finish(stdout, args, tools.as_ref(), &tokenizer)
}

/// Why a file in a folder was skipped: the error without the file's name, which the group line gives.
fn skip_reason(e: &crate::error::Error, read: &Path) -> String {
    match e {
        crate::error::Error::Parse {
            path,
            line,
            message,
        } if path == read => {
            if *line > 1 {
                format!("line {line}: {message}")
            } else {
                message.clone()
            }
        }
        _ => e.to_string(),
    }
}

impl Imported {
    /// `ep` given the user's tools where its trace records none (or only the ones ctxbench ships for its
    /// format), and its unrecorded context calibrated when `unrecorded` keeps it.
    fn prepare(
        &mut self,
        ep: &mut Episode,
        tools: Option<&(&Path, Vec<serde_json::Value>)>,
        tokenizer: &std::sync::Arc<crate::tokens::Tokenizer>,
        unrecorded: crate::run::UnrecordedMode,
    ) -> Result<()> {
        // Tools ctxbench ships for a format (tau-bench's, `meta.tools_from`) give way to the user's.
        let shipped = ep.meta.contains_key("tools_from");
        if let Some((_, defs)) = tools.filter(|_| ep.tools.is_empty() || shipped) {
            ep.tools.clone_from(defs);
            ep.meta.remove("tools_from");
            self.given_tools += 1;
        }
        if unrecorded == crate::run::UnrecordedMode::Keep {
            if let Ok(c) = crate::replay::unrecorded::calibrate(ep, tokenizer)? {
                self.calibrated.push(c);
            }
        }
        Ok(())
    }

    /// Checks the episodes read from `read` and prints them by the file they came from, in the order read:
    /// a line per file, and a line per episode where a file held several.
    fn list(
        &mut self,
        stdout: &mut impl Write,
        eps: &[Episode],
        read: &Path,
        format: &str,
    ) -> Result<()> {
        let mut files: Vec<(PathBuf, Vec<(&Episode, usize)>)> = Vec::new();
        for ep in eps {
            let file = origin_of(ep, read);
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
            let found = crate::history::findings::found_needed_later(ep);
            if found == 0 {
                self.without_found_needs.add(&file, ep.id.clone());
            }
            match files.iter_mut().find(|(f, _)| *f == file) {
                Some((_, list)) => list.push((ep, found)),
                None => files.push((file, vec![(ep, found)])),
            }
        }
        for (file, list) in files {
            let detected = list[0]
                .0
                .meta
                .get("format")
                .and_then(serde_json::Value::as_str)
                .unwrap_or(format);
            let head = format!("{}: {detected} trace, ", file.display());
            if let [(ep, found)] = list.as_slice() {
                let line = format!("{head}episode '{}': {}", ep.id, figures(ep, *found));
                writeln!(stdout, "{}", hanging(&line, WIDTH, 4))?;
                continue;
            }
            let line = head + &count(list.len(), "episode", "episodes");
            writeln!(stdout, "{}", hanging(&line, WIDTH, 4))?;
            for (ep, found) in list {
                let line = format!("  '{}': {}", ep.id, figures(ep, found));
                writeln!(stdout, "{}", hanging(&line, WIDTH, 4))?;
            }
        }
        Ok(())
    }

    /// The warnings (stderr), the tools given and the unrecorded context added, then the dataset written;
    /// an error, writing nothing, when nothing was imported.
    fn finish(
        &self,
        stdout: &mut impl Write,
        args: &ImportArgs,
        tools: Option<&(&Path, Vec<serde_json::Value>)>,
        tokenizer: &crate::tokens::Tokenizer,
    ) -> Result<bool> {
        let (episodes, skipped) = (&self.episodes, &self.skipped);
        let mut err = std::io::stderr().lock();
        let skipped_files = count(skipped.len(), "file", "files");
        skipped.write(
            &mut err,
            &format!("skipped {skipped_files}, not a trace ctxbench reads:"),
        )?;
        if episodes.is_empty() {
            let given: Vec<String> = args
                .files
                .iter()
                .map(|p| format!("'{}'", p.display()))
                .collect();
            bail!(
                "nothing was imported from {}{}; '{}' was not written",
                given.join(", "),
                if skipped.len() > 0 {
                    format!(" ({skipped_files} in no known format)")
                } else {
                    String::new()
                },
                args.out.display()
            );
        }
        let n = self.without_found_needs.len();
        if n == episodes.len() {
            let line = "warning: no episode has a finding the agent found and needed later, so retention will \
                        measure nothing here: add findings (README, Dataset format: the facts a tool showed the \
                        agent and the turns that use them), or import sessions in which the agent uses what a tool \
                        showed it";
            writeln!(err, "{}", hanging(line, WIDTH, 2))?;
        } else {
            self.without_found_needs.write(
                &mut err,
                &format!(
                    "{} without a finding the agent found and needed later: retention at need leaves {} out \
                     (add findings by hand: README, Dataset format):",
                    count(n, "episode", "episodes"),
                    if n == 1 { "it" } else { "them" }
                ),
            )?;
        }
        if let Some((path, defs)) = tools {
            let line = format!(
                "gave the {} of {} to {} of {} (the others record their own)",
                count(defs.len(), "tool definition", "tool definitions"),
                path.display(),
                self.given_tools,
                count(episodes.len(), "episode", "episodes")
            );
            writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
        }
        write_calibrated(stdout, &self.calibrated, tokenizer)?;
        let mut bytes = Vec::new();
        crate::history::dataset::write_episodes(&mut bytes, episodes)?;
        crate::files::write_atomic(&args.out, &bytes)?;
        let line = format!(
            "wrote {} to {} ({n} without a found finding needed later{})",
            count(episodes.len(), "episode", "episodes"),
            args.out.display(),
            if skipped.len() > 0 {
                format!(", {skipped_files} skipped")
            } else {
                String::new()
            }
        );
        writeln!(stdout, "{}", hanging(&line, WIDTH, 2))?;
        Ok(true)
    }
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
            crate::replay::fit::what_is_left_out(&c.leaves_out, c.constant),
        );
        if let Some(k) = c.k {
            line += &format!(
                "; the history and what strategies write counted in the model's tokens, at k = {k:.3} × {} \
                 (fitted from the record)",
                tokenizer.name()
            );
        }
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
