//! Where a run writes until it completes. A run goes into `OUT.partial` beside its output directory and is
//! swapped in for `OUT` only once complete, so a run that fails midway keeps what it finished (there, with its
//! journal, for `--resume`) and never touches the previous complete run in `OUT`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::journal::JOURNAL;
use crate::error::{Error, Result};

/// Files any ctxbench run directory holds once a checkpoint has written it.
const RUN_FILES: [&str; 3] = ["summary.json", "steps.csv", JOURNAL];

/// `OUT` with `suffix` added to its last component.
fn sibling(out: &Path, suffix: &str) -> Result<PathBuf> {
    let mut name: OsString = out
        .file_name()
        .ok_or_else(|| {
            Error::Config(format!(
                "--out '{}' does not name a directory (give a path such as reports/mine)",
                out.display()
            ))
        })?
        .to_owned();
    name.push(suffix);
    Ok(out.with_file_name(name))
}

/// The staging directory of a run whose output directory is `out`: `OUT.partial`.
///
/// # Errors
/// When `out` has no last component (`/`, `..`).
pub fn staging_dir(out: &Path) -> Result<PathBuf> {
    sibling(out, ".partial")
}

/// How many episodes the journal in `dir` vouches for (0 without a journal).
#[must_use]
pub fn finished_in(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join(JOURNAL))
        .map(|text| text.lines().skip(1).filter(|l| l.ends_with('}')).count())
        .unwrap_or(0)
}

/// Checks that `out` may be replaced by a run: absent, empty, or a ctxbench run directory. A folder of other
/// files is refused rather than swapped away.
///
/// # Errors
/// `out` is a file, or a directory that holds files but none of a run's.
pub fn check_out(out: &Path) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(Error::Config(format!(
            "--out '{}' is a file, not a directory: choose another --out",
            out.display()
        )));
    }
    let empty = std::fs::read_dir(out)
        .map_err(|e| Error::io("read", out, e))?
        .next()
        .is_none();
    if empty || RUN_FILES.iter().any(|f| out.join(f).exists()) {
        return Ok(());
    }
    Err(Error::Config(format!(
        "--out '{}' holds files but is not a ctxbench run directory; a completed run replaces its output \
         directory, so choose an empty or new one",
        out.display()
    )))
}

/// Prepares the staging directory of a fresh run (`resume` false) or finds the one to resume.
///
/// # Errors
/// A fresh run over an interrupted one (it says how to resume or start over), `--resume` with nothing to
/// resume, or a directory that cannot be created.
pub fn prepare(out: &Path, resume: bool) -> Result<PathBuf> {
    check_out(out)?;
    let staging = staging_dir(out)?;
    let finished = finished_in(&staging);
    if resume {
        if !staging.join(JOURNAL).exists() {
            return Err(Error::Config(format!(
                "nothing to resume: no interrupted run in '{}' (a completed run is in '{}'; run without \
                 --resume to start again)",
                staging.display(),
                out.display()
            )));
        }
    } else if finished > 0 {
        return Err(Error::Config(format!(
            "an interrupted run with {finished} finished episode(s) is in '{}': `ctxbench run --resume` with \
             the same arguments continues it; remove that directory to start over",
            staging.display()
        )));
    } else if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| Error::io("remove", &staging, e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| Error::io("create", &staging, e))?;
    Ok(staging)
}

/// Puts a completed run in `staging` in place of `out`, the previous run in `out` removed only after.
///
/// # Errors
/// A rename or removal that fails (the complete run is then in `staging` or `out`, and the message says where).
pub fn swap_in(staging: &Path, out: &Path) -> Result<()> {
    if out.exists() {
        let old = sibling(out, ".old")?;
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(|e| Error::io("remove", &old, e))?;
        }
        std::fs::rename(out, &old).map_err(|e| Error::io("move the previous run aside", out, e))?;
        std::fs::rename(staging, out)
            .map_err(|e| Error::io("move the completed run into place", staging, e))?;
        std::fs::remove_dir_all(&old).map_err(|e| Error::io("remove the previous run", &old, e))
    } else {
        if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
        }
        std::fs::rename(staging, out)
            .map_err(|e| Error::io("move the completed run into place", staging, e))
    }
}

/// Removes the staging directory of a run that stopped before finishing any episode: there is nothing to resume.
pub fn discard_if_empty(staging: &Path) {
    if finished_in(staging) == 0 {
        let _ = std::fs::remove_dir_all(staging);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_run_replaces_the_previous_one_and_a_stopped_one_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("runs").join("mine");
        let staging = prepare(&out, false).unwrap();
        assert_eq!(staging, dir.path().join("runs").join("mine.partial"));
        std::fs::write(staging.join("summary.json"), "first").unwrap();
        swap_in(&staging, &out).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("summary.json")).unwrap(),
            "first"
        );
        assert!(!staging.exists());

        // A second run stops after one episode: the first run is untouched, the second waits to be resumed.
        let staging = prepare(&out, false).unwrap();
        std::fs::write(staging.join(JOURNAL), "{\"head\":1}\n{\"episode\":1}\n").unwrap();
        assert_eq!(finished_in(&staging), 1);
        let err = prepare(&out, false).unwrap_err().to_string();
        assert!(
            err.contains("--resume") && err.contains("1 finished episode(s)"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("summary.json")).unwrap(),
            "first"
        );
        let resumed = prepare(&out, true).unwrap();
        std::fs::remove_file(resumed.join(JOURNAL)).unwrap();
        std::fs::write(resumed.join("summary.json"), "second").unwrap();
        swap_in(&resumed, &out).unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("summary.json")).unwrap(),
            "second"
        );
        assert!(!dir.path().join("runs").join("mine.old").exists());
        assert!(prepare(&out, true)
            .unwrap_err()
            .to_string()
            .contains("nothing to resume"));
    }

    #[test]
    fn a_folder_that_is_not_a_run_is_never_swapped_away() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = prepare(dir.path(), false).unwrap_err().to_string();
        assert!(err.contains("not a ctxbench run directory"), "{err}");
        let file = dir.path().join("notes.txt");
        assert!(prepare(&file, false)
            .unwrap_err()
            .to_string()
            .contains("is a file"));
        assert!(staging_dir(Path::new("/")).is_err());
        // A run that finished nothing leaves nothing behind.
        let out = dir.path().join("empty");
        let staging = prepare(&out, false).unwrap();
        std::fs::write(staging.join(JOURNAL), "{\"head\":1}\n").unwrap();
        discard_if_empty(&staging);
        assert!(!staging.exists());
    }
}
