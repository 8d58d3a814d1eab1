//! Scratch space the counting threads share: taken from a pool for one text and put back after it.
//!
//! Each thread kept its own (a table of piece counts, 128 KiB, and the regex's search cache, about 300 KiB,
//! per encoding): what a run held grew with the threads that had counted, and a real-model run has as many
//! threads as requests may be in flight, each of them counting while the others wait for their answers: at
//! `max_concurrency` 64, 26 threads had made a regex cache by the peak of a run of 100 generated episodes and
//! 55 by that of 1,000, 18 and 28 MB of heap (docs/performance-history.md). A pool holds as many as threads
//! counted at the same moment; the one put back last is taken first, so a thread that counts text after text
//! while no other does keeps finding its own, still in its core's cache. The first threads to count, as many
//! as the cores, keep their own as before ([`owns_scratch`]): a mock run, whose workers are as many as the
//! cores, takes no lock (taking from the pool cost its bundled run 4% more CPU, two threads on two cores).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Threads alive that keep scratch space of their own.
static OWNERS: AtomicUsize = AtomicUsize::new(0);

/// Whether a thread keeps scratch space of its own; given back when it ends.
struct Owner(bool);

impl Owner {
    fn claim() -> Self {
        static CORES: OnceLock<usize> = OnceLock::new();
        let cores =
            *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
        Self(
            OWNERS
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                    (n < cores).then_some(n + 1)
                })
                .is_ok(),
        )
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        if self.0 {
            OWNERS.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

thread_local! {
    static OWNER: Owner = Owner::claim();
}

/// Whether this thread keeps scratch space of its own: one of the first threads alive to count, as many as
/// the cores. The others (a real-model run's workers past the cores, which wait for answers most of the
/// time) take theirs from a [`Pool`].
pub(super) fn owns_scratch() -> bool {
    OWNER.try_with(|o| o.0).unwrap_or(false)
}

/// Values of `T` for one user at a time.
pub(super) struct Pool<T>(Mutex<Vec<T>>);

impl<T> Pool<T> {
    pub(super) const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// Runs `f` with a value of the pool (the one put back last, else `make`'s) and puts it back.
    pub(super) fn with<R>(&self, make: impl FnOnce() -> T, f: impl FnOnce(&mut T) -> R) -> R {
        let taken = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut value = taken.unwrap_or_else(make);
        let result = f(&mut value);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(value);
        result
    }

    /// The values made so far and not in use.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn a_pool_holds_as_many_as_used_at_once_not_one_per_thread() {
        let pool: Pool<Vec<u8>> = Pool::new();
        // Eight threads one after the other: one value, reused.
        for _ in 0..8 {
            std::thread::scope(|s| {
                s.spawn(|| pool.with(|| vec![0; 16], |v| v[0] += 1));
            });
        }
        assert_eq!(pool.len(), 1);
        assert_eq!(pool.with(Vec::new, |v| v[0]), 8);
        // Three at once: three values.
        let together = Barrier::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| pool.with(Vec::new, |_| together.wait()));
            }
        });
        assert_eq!(pool.len(), 3);
    }

    #[test]
    fn at_most_as_many_threads_as_cores_keep_their_own() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let together = Barrier::new(cores + 3);
        let owners = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..cores + 3 {
                s.spawn(|| {
                    if owns_scratch() {
                        owners.fetch_add(1, Ordering::Relaxed);
                    }
                    together.wait();
                });
            }
        });
        // Other tests' threads may own some too: never more than the cores in all.
        assert!(owners.load(Ordering::Relaxed) <= cores);
    }
}
