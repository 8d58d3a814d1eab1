//! Each episode's window: its model's, as a run's [`Defaults`] take it, or the one the replayer was made with.

use super::Replayer;
use crate::history::Episode;
use crate::llm::pricing::Defaults;

impl<'a> Replayer<'a> {
    /// The same replayer, each episode in its model's window as `defaults` take it (`--window`, else its model's
    /// input limit, else the configuration's) instead of the one window it was made with.
    #[must_use]
    pub fn with_windows(mut self, defaults: &'a Defaults) -> Self {
        self.windows = Some(defaults);
        self
    }

    /// The window `episode` is replayed in.
    #[must_use]
    pub fn window_of(&self, episode: &Episode) -> usize {
        self.windows
            .map_or(self.context_window, |d| d.window_of(episode))
    }
}
