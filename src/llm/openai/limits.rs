//! How many requests may be in flight, how fast they may start, and how many were in flight over time.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A counting semaphore and a start-spacing limiter, shared by the rayon workers; it also measures how many
/// requests were in flight over time.
pub(super) struct Limits {
    in_flight: Mutex<usize>,
    /// (time-weighted in-flight sum in seconds, when the count last changed, when the first request started).
    occupancy: Mutex<(f64, Option<Instant>, Option<Instant>)>,
    freed: Condvar,
    max: usize,
    next_start: Mutex<Instant>,
    spacing: Option<Duration>,
}

/// One request's place in flight, given back when dropped.
pub(super) struct Permit<'a>(&'a Limits);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let limits = self.0;
        let mut n = lock(&limits.in_flight);
        limits.note(*n);
        *n -= 1;
        limits.freed.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Limits {
    /// At most `max` in flight, and at most `per_minute` starts a minute (0: no limit).
    pub(super) fn new(max: usize, per_minute: u32) -> Self {
        Self {
            in_flight: Mutex::new(0),
            occupancy: Mutex::new((0.0, None, None)),
            freed: Condvar::new(),
            max,
            next_start: Mutex::new(Instant::now()),
            spacing: (per_minute > 0)
                .then(|| Duration::from_secs_f64(60.0 / f64::from(per_minute))),
        }
    }

    /// Waits for a place in flight, then for the request's start time.
    pub(super) fn acquire(&self) -> Permit<'_> {
        let mut n = lock(&self.in_flight);
        while *n >= self.max {
            n = self.freed.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
        self.note(*n);
        *n += 1;
        drop(n);
        let permit = Permit(self);
        if let Some(spacing) = self.spacing {
            let wait = {
                let mut next = lock(&self.next_start);
                let now = Instant::now();
                let start = (*next).max(now);
                *next = start + spacing;
                start - now
            };
            std::thread::sleep(wait);
        }
        permit
    }

    /// Adds the time since the count last changed, at `n` in flight.
    fn note(&self, n: usize) {
        let mut o = lock(&self.occupancy);
        let now = Instant::now();
        if let Some(last) = o.1 {
            #[allow(clippy::cast_precision_loss)]
            let weighted = (now - last).as_secs_f64() * n as f64;
            o.0 += weighted;
        }
        o.1 = Some(now);
        o.2.get_or_insert(now);
    }

    /// The mean requests in flight from the first start to the last end.
    pub(super) fn mean_in_flight(&self) -> Option<f64> {
        let o = lock(&self.occupancy);
        let span = (o.1? - o.2?).as_secs_f64();
        (span > 0.0).then(|| o.0 / span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn never_more_than_the_limit_in_flight() {
        let limits = Limits::new(3, 0);
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    let _permit = limits.acquire();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 3);
        let mean = limits.mean_in_flight().unwrap();
        assert!(mean > 0.0 && mean <= 3.0, "{mean}");
        assert_eq!(*lock(&limits.in_flight), 0, "every permit was given back");
    }

    #[test]
    fn starts_are_spaced_by_the_rate() {
        // 1,200 a minute: one every 50 ms; the first starts at once.
        let limits = Limits::new(8, 1200);
        let started = Instant::now();
        for _ in 0..3 {
            drop(limits.acquire());
        }
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(Limits::new(1, 0).spacing, None);
    }

    #[test]
    fn nothing_in_flight_yet_has_no_mean() {
        assert_eq!(Limits::new(2, 0).mean_in_flight(), None);
    }
}
