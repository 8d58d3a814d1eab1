//! Progress on the terminal: a bar of finished episodes on stderr, with their total and an ETA once the
//! dataset's episodes are counted (a background pass over its lines), and what Ctrl-C leaves to resume.

use std::io::IsTerminal as _;
use std::path::Path;

use crate::run::Progress;

/// A progress bar the library reports to.
pub struct Bar(pub indicatif::ProgressBar);

/// A bar of finished episodes on stderr (indicatif hides it when stderr is not a terminal). When stderr is a
/// terminal, the episodes of `dataset` are counted in the background and the bar gets its total, percentage
/// and ETA.
pub fn progress_bar(dataset: &Path) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner().with_message("episodes replayed");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    if std::io::stderr().is_terminal() {
        let (bar, dataset) = (bar.clone(), dataset.to_owned());
        std::thread::spawn(move || {
            if let Some(total) = count_episodes(&dataset) {
                bar.set_length(total);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{bar:30} {pos}/{len} episodes ({percent}%) [{elapsed}, ETA {eta}]",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
            }
        });
    }
    bar
}

/// The non-blank lines of the dataset's files: its episodes.
fn count_episodes(dataset: &Path) -> Option<u64> {
    use std::io::BufRead as _;
    let mut total = 0;
    for file in crate::history::dataset::dataset_files(dataset).ok()? {
        let reader = crate::history::dataset::open_file(&file).ok()?;
        for line in reader.split(b'\n') {
            if line.ok()?.iter().any(|b| !b.is_ascii_whitespace()) {
                total += 1;
            }
        }
    }
    Some(total)
}

/// On Ctrl-C, says how to continue before the process ends: the finished episodes are journaled in the
/// staging directory, and `command` with `--resume` continues from them.
pub fn on_interrupt(command: String, staging: &Path) {
    let staging = staging.to_owned();
    let _ = ctrlc::set_handler(move || {
        eprintln!(
            "\ninterrupted: the episodes journaled so far are in '{}'; `{command} --resume` continues the run",
            staging.display()
        );
        std::process::exit(130);
    });
}

impl Progress for Bar {
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}
