//! Progress on the terminal: a spinner counting finished episodes on stderr.

use crate::run::Progress;

/// A progress bar the library reports to.
pub struct Bar(pub indicatif::ProgressBar);

/// A spinner counting finished episodes on stderr; indicatif hides it when stderr is not a terminal.
pub fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner().with_message("episodes replayed");
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos} {msg} [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

impl Progress for Bar {
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}
