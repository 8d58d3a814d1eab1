//! What the binary carries, so that an installed ctxbench works from any folder: the configurations of
//! `configs/` embedded, and the bundled dataset generated in memory.
//!
//! A clone holds them as files; an installed binary (`cargo install`, a Python wheel) is run where they are
//! not. A path that names one of them (`configs/default.toml`, `datasets/default.jsonl`, as the README and
//! the help give them, relative to the current folder) reads the file when one is there, and the bundled
//! copy otherwise, so that the same command works in a clone and anywhere else, and a run records the same
//! dataset path either way. The dataset is not embedded: it is `ctxbench gen --seed 42` (8.8 MB), which
//! the generator writes byte for byte in about 70 ms, once per process.

use std::path::Path;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The bundled dataset's path: where `ctxbench gen` writes it and a clone holds it.
pub const DATASET: &str = "datasets/default.jsonl";

/// The seed of the bundled dataset.
pub const DATASET_SEED: u64 = 42;

/// The embedded files, by the path a clone holds them at.
pub const FILES: &[(&str, &str)] = &[
    (
        "configs/default.toml",
        include_str!("../configs/default.toml"),
    ),
    ("configs/sweep.toml", include_str!("../configs/sweep.toml")),
    (
        "configs/sweep_presets.toml",
        include_str!("../configs/sweep_presets.toml"),
    ),
    (
        "configs/templates/deepseek-v3.2-thinking.jinja",
        include_str!("../configs/templates/deepseek-v3.2-thinking.jinja"),
    ),
    (
        "configs/templates/deepseek-v3.2.jinja",
        include_str!("../configs/templates/deepseek-v3.2.jinja"),
    ),
    (
        "configs/templates/deepseek-v3.jinja",
        include_str!("../configs/templates/deepseek-v3.jinja"),
    ),
];

/// The embedded text of `path` when it names a bundled file and no file is there.
#[must_use]
pub fn embedded(path: &Path) -> Option<&'static str> {
    let (_, text) = FILES.iter().find(|(name, _)| path == Path::new(name))?;
    (!exists(path)).then_some(*text)
}

/// The text of `path`: the file, or the embedded copy where `path` names a bundled file that is not there.
///
/// # Errors
/// A file that cannot be read, named.
pub fn read_to_string(path: &Path) -> Result<String> {
    match embedded(path) {
        Some(text) => Ok(text.to_owned()),
        None => std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e)),
    }
}

/// Whether `path` names the bundled dataset and no file is there: reading it reads [`dataset`].
#[must_use]
pub fn is_generated_dataset(path: &Path) -> bool {
    path == Path::new(DATASET) && !exists(path)
}

/// The bundled dataset's bytes, `ctxbench gen --seed 42`'s output, generated on first use.
#[must_use]
pub fn dataset() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut bytes = Vec::with_capacity(9 << 20);
        crate::history::dataset::write_episodes(&mut bytes, &crate::gen::generate(DATASET_SEED))
            .expect("writing to memory does not fail");
        bytes
    })
}

/// Whether anything (a file, a folder, a broken link) is at `path`.
fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each embedded file is the clone's, byte for byte (a build embeds what the clone holds).
    #[test]
    fn embedded_files_are_the_clones() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        for (name, text) in FILES {
            assert_eq!(
                std::fs::read_to_string(root.join(name)).unwrap(),
                *text,
                "{name}"
            );
        }
    }

    /// Every file of `configs/` is embedded, and the dataset generated in memory is the clone's, byte for byte.
    #[test]
    fn every_config_is_embedded_and_the_dataset_is_the_clones() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs = vec![root.join("configs")];
        let mut found = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let name = path.strip_prefix(root).unwrap().to_str().unwrap();
                    found.push(name.replace('\\', "/"));
                }
            }
        }
        found.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(n, _)| (*n).to_owned()).collect();
        embedded.sort();
        assert_eq!(
            found, embedded,
            "add the new file of configs/ to bundled::FILES"
        );
        assert!(
            dataset() == std::fs::read(root.join(DATASET)).unwrap().as_slice(),
            "the bundled dataset generated in memory differs from {DATASET}"
        );
    }

    /// `configs/default.toml` is the default run written out, as the README says, and the grids parse.
    #[test]
    fn the_bundled_configs_are_what_they_say() {
        let default = crate::run::RunConfig::from_file(Path::new("configs/default.toml")).unwrap();
        assert_eq!(default, crate::run::RunConfig::default());
        for grid in ["configs/sweep.toml", "configs/sweep_presets.toml"] {
            crate::sweep::SweepConfig::parse(&read_to_string(Path::new(grid)).unwrap(), grid)
                .unwrap();
        }
    }

    /// A path names a bundled file only as given relative to the current folder, and only where no file is.
    #[test]
    fn only_the_bundled_relative_paths_are_embedded() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(embedded(&tmp.path().join("configs/default.toml")).is_none());
        assert!(embedded(Path::new("configs/none.toml")).is_none());
        assert!(!is_generated_dataset(&tmp.path().join(DATASET)));
        // The tests run in the clone, where the files are.
        assert!(embedded(Path::new("configs/default.toml")).is_none());
        assert!(!is_generated_dataset(Path::new(DATASET)));
    }
}
