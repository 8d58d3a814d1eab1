//! How many requests may be in flight and how fast they may start, the pause every request shares after a
//! 429, how many started calls may wait for a place, and how many requests were on the wire over time.
//!
//! - At most `max` requests hold a place ([`Limits::acquire`]); a freed place goes to the call a replay waits
//!   for ([`Priority::Waited`], a strategy's summary) before the others (probes, the judge), each class in
//!   the order it asked.
//! - A 429 pauses every request of the client, not only the one it answered ([`Limits::pause`]): the endpoint
//!   said it is at its limit, and the requests of one client share it. A 429 to a request sent before the last
//!   pause began tells nothing new and does not lengthen it.
//! - After a pause the refused calls go first ([`Limits::refused`]): each kept its place through the pause,
//!   and no other call is sent until every refused call waiting to go again has its answer. A per-minute limit
//!   (LiteLLM's `rpm`) admits its first requests of the next minute; a refused call that went after newer
//!   calls would find that minute spent by them and be refused again, to its last retry.
//! - The backlog ([`Backlog`]): calls started and not yet answered that hold their request (its items, whose
//!   texts are shared; the body is written when it is sent); the thread
//!   that starts one waits while there are `4 × max_concurrency`, so that memory follows the concurrency, not
//!   the dataset, and the endpoint always has a full queue to draw from.
//! - Occupancy is measured on the wire, from a request's first byte sent to its last byte read, as the
//!   endpoint sees it: a request waiting for its place, for the rate or for a pause is not in flight.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch};

/// Which calls get a freed place first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Priority {
    /// A call a replay waits for: a strategy's, whose answer the next request depends on.
    Waited = 0,
    /// A call nothing waits for until the episode ends: a probe's, the judge's.
    Background = 1,
}

/// The places in flight, the rate, the shared pause and the occupancy of one client.
pub(super) struct Limits {
    places: Mutex<Places>,
    max: usize,
    next_start: Mutex<Instant>,
    spacing: Option<Duration>,
    pause: Mutex<Pause>,
    /// Refused calls waiting to go again (from their 429 to their next answer); other calls wait for none.
    refused: watch::Sender<usize>,
    wire: Mutex<Occupancy>,
}

/// Whose turn a request waits for in [`Limits::ready_to_send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    /// A call's first attempt, or a retry after a failure other than a 429: after every refused call.
    New,
    /// A call refused with a 429 going again: first when the pause ends.
    Refused,
}

/// A refused call waiting to go again, counted until dropped (its next attempt answered, or the call gone).
pub(super) struct Refused<'a>(&'a Limits);

impl Drop for Refused<'_> {
    fn drop(&mut self) {
        self.0.refused.send_modify(|n| *n -= 1);
    }
}

/// Places held, and the calls waiting for one, by priority.
#[derive(Default)]
struct Places {
    held: usize,
    waiting: [VecDeque<oneshot::Sender<()>>; 2],
}

/// The pause a 429 asked for: until when, and when it was last set.
#[derive(Default)]
struct Pause {
    until: Option<Instant>,
    set: Option<Instant>,
}

/// Requests on the wire over time.
#[derive(Default)]
struct Occupancy {
    now: usize,
    /// Requests on the wire × seconds.
    weighted: f64,
    last: Option<Instant>,
    first: Option<Instant>,
}

/// One request's place in flight, given back (to the first call waiting for one) when dropped.
pub(super) struct Permit<'a>(&'a Limits);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A request on the wire, counted until dropped.
pub(super) struct OnWire<'a>(&'a Limits);

impl Drop for OnWire<'_> {
    fn drop(&mut self) {
        self.0.wire_change(false);
    }
}

/// A call waiting for a place: when dropped after the place was handed to it, it gives the place back.
struct Queued<'a> {
    limits: &'a Limits,
    rx: oneshot::Receiver<()>,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.rx.close();
        if self.rx.try_recv().is_ok() {
            self.limits.release();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Limits {
    /// At most `max` in flight, and at most `per_minute` starts a minute (0: no limit).
    pub(super) fn new(max: usize, per_minute: u32) -> Self {
        Self {
            places: Mutex::new(Places::default()),
            max,
            next_start: Mutex::new(Instant::now()),
            spacing: (per_minute > 0)
                .then(|| Duration::from_secs_f64(60.0 / f64::from(per_minute))),
            pause: Mutex::new(Pause::default()),
            refused: watch::Sender::new(0),
            wire: Mutex::new(Occupancy::default()),
        }
    }

    /// Waits for a place in flight (a freed place goes to the first call of the highest priority waiting).
    pub(super) async fn acquire(&self, priority: Priority) -> Permit<'_> {
        loop {
            let rx = {
                let mut places = lock(&self.places);
                // A free place means no one waits: a place freed while someone waited was handed over.
                if places.held < self.max {
                    places.held += 1;
                    return Permit(self);
                }
                let (tx, rx) = oneshot::channel();
                places.waiting[priority as usize].push_back(tx);
                rx
            };
            let mut queued = Queued { limits: self, rx };
            if (&mut queued.rx).await.is_ok() {
                return Permit(self);
            }
        }
    }

    /// Gives a place back: to the first call waiting for one, else to the pool.
    fn release(&self) {
        let mut places = lock(&self.places);
        for class in 0..places.waiting.len() {
            while let Some(tx) = places.waiting[class].pop_front() {
                // A waiter that is gone (its call dropped) takes nothing.
                if tx.send(()).is_ok() {
                    return;
                }
            }
        }
        places.held -= 1;
    }

    /// Waits for the request's start: the end of a pause a 429 asked for, then (for a [`Turn::New`]) until no
    /// refused call waits to go again, then the rate's next start time; and again while a pause began or a
    /// call was refused meanwhile.
    pub(super) async fn ready_to_send(&self, turn: Turn) {
        let mut refused = self.refused.subscribe();
        loop {
            self.paused().await;
            if turn == Turn::New {
                // The sender lives as long as `self`: the wait cannot fail.
                let _ = refused.wait_for(|n| *n == 0).await;
            }
            if let Some(spacing) = self.spacing {
                let start = {
                    let mut next = lock(&self.next_start);
                    let start = (*next).max(Instant::now());
                    *next = start + spacing;
                    start
                };
                tokio::time::sleep_until(start.into()).await;
            }
            let paused = lock(&self.pause)
                .until
                .is_some_and(|until| until > Instant::now());
            if !paused && (turn == Turn::Refused || *refused.borrow() == 0) {
                return;
            }
        }
    }

    /// Waits for the end of the pause a 429 asked for (and of one that began meanwhile).
    async fn paused(&self) {
        loop {
            let until = lock(&self.pause).until;
            match until {
                Some(until) if until > Instant::now() => {
                    tokio::time::sleep_until(until.into()).await;
                }
                _ => return,
            }
        }
    }

    /// A call refused with a 429 that will go again: no [`Turn::New`] request starts until the guard is
    /// dropped.
    pub(super) fn refused(&self) -> Refused<'_> {
        self.refused.send_modify(|n| *n += 1);
        Refused(self)
    }

    /// A 429 to a request sent at `sent`: every request of the client waits `wait` from now, unless the
    /// request was sent before the last pause began (that pause already answered the same signal).
    pub(super) fn pause(&self, sent: Instant, wait: Duration) {
        let mut pause = lock(&self.pause);
        if pause.set.is_some_and(|set| sent < set) {
            return;
        }
        let now = Instant::now();
        pause.until = Some(pause.until.map_or(now + wait, |u| u.max(now + wait)));
        pause.set = Some(now);
    }

    /// Counts a request on the wire until the guard is dropped.
    pub(super) fn on_wire(&self) -> OnWire<'_> {
        self.wire_change(true);
        OnWire(self)
    }

    /// One request more (or fewer) on the wire: adds the time since the count last changed at the old count.
    fn wire_change(&self, more: bool) {
        let mut o = lock(&self.wire);
        let now = Instant::now();
        if let Some(last) = o.last {
            #[allow(clippy::cast_precision_loss)]
            let weighted = (now - last).as_secs_f64() * o.now as f64;
            o.weighted += weighted;
        }
        o.last = Some(now);
        o.first.get_or_insert(now);
        if more {
            o.now += 1;
        } else {
            o.now -= 1;
        }
    }

    /// The mean requests on the wire from the first request's start to the last one's end.
    pub(super) fn mean_in_flight(&self) -> Option<f64> {
        let o = lock(&self.wire);
        let span = (o.last? - o.first?).as_secs_f64();
        (span > 0.0).then(|| o.weighted / span)
    }
}

/// Calls started and not yet answered that hold their request, at most `max`; see the module docs.
pub(super) struct Backlog {
    held: Mutex<usize>,
    freed: Condvar,
    max: usize,
}

impl Backlog {
    /// At most `max` calls.
    pub(super) fn new(max: usize) -> Self {
        Self {
            held: Mutex::new(0),
            freed: Condvar::new(),
            max,
        }
    }

    /// Waits, blocking the calling thread (a replay's, never a task's), until a call may join the backlog.
    pub(super) fn enter(&self) {
        let mut held = lock(&self.held);
        while *held >= self.max {
            held = self
                .freed
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *held += 1;
    }

    /// A call of the backlog was answered.
    pub(super) fn leave(&self) {
        *lock(&self.held) -= 1;
        self.freed.notify_one();
    }

    /// Calls in the backlog now.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        *lock(&self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        super::super::runtime().unwrap().block_on(f)
    }

    #[test]
    fn never_more_than_the_limit_in_flight() {
        let limits = Arc::new(Limits::new(3, 0));
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        block_on(async {
            let tasks: Vec<_> = (0..12)
                .map(|_| {
                    let (limits, now, most) = (limits.clone(), now.clone(), most.clone());
                    tokio::spawn(async move {
                        let _permit = limits.acquire(Priority::Background).await;
                        let _wire = limits.on_wire();
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        now.fetch_sub(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 3);
        let mean = limits.mean_in_flight().unwrap();
        assert!(mean > 0.0 && mean <= 3.0, "{mean}");
        assert_eq!(lock(&limits.places).held, 0, "every place was given back");
    }

    #[test]
    fn a_freed_place_goes_to_the_call_a_replay_waits_for() {
        let limits = Arc::new(Limits::new(1, 0));
        let order = Arc::new(Mutex::new(Vec::new()));
        block_on(async {
            let first = limits.acquire(Priority::Background).await;
            let mut tasks = Vec::new();
            for (name, priority) in [
                ("probe 1", Priority::Background),
                ("probe 2", Priority::Background),
                ("summary", Priority::Waited),
            ] {
                let (limits, order) = (limits.clone(), order.clone());
                tasks.push(tokio::spawn(async move {
                    let _permit = limits.acquire(priority).await;
                    lock(&order).push(name);
                }));
                // Each asks before the next.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            drop(first);
            for t in tasks {
                t.await.unwrap();
            }
        });
        assert_eq!(*lock(&order), ["summary", "probe 1", "probe 2"]);
        assert_eq!(lock(&limits.places).held, 0);
    }

    #[test]
    fn a_waiter_that_gives_up_takes_no_place() {
        let limits = Limits::new(1, 0);
        block_on(async {
            let held = limits.acquire(Priority::Background).await;
            // Asks, and gives up before a place is free.
            let gave_up = tokio::time::timeout(
                Duration::from_millis(10),
                limits.acquire(Priority::Background),
            )
            .await;
            assert!(gave_up.is_err());
            drop(held);
            let _again = limits.acquire(Priority::Waited).await;
        });
        assert_eq!(lock(&limits.places).held, 0);
    }

    #[test]
    fn starts_are_spaced_by_the_rate() {
        // 1,200 a minute: one every 50 ms; the first starts at once.
        let limits = Limits::new(8, 1200);
        let started = Instant::now();
        block_on(async {
            for _ in 0..3 {
                limits.ready_to_send(Turn::New).await;
            }
        });
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(Limits::new(1, 0).spacing, None);
    }

    #[test]
    fn a_429_pauses_every_request_once() {
        let limits = Limits::new(8, 0);
        let before = Instant::now();
        limits.pause(before, Duration::from_millis(150));
        // A second 429 to a request sent before the pause began does not lengthen it.
        limits.pause(before, Duration::from_secs(30));
        block_on(limits.ready_to_send(Turn::New));
        let waited = before.elapsed();
        assert!(
            waited >= Duration::from_millis(140) && waited < Duration::from_secs(5),
            "{waited:?}"
        );
        // A 429 to a request sent after it lengthens it.
        let after = Instant::now();
        limits.pause(after, Duration::from_millis(60));
        block_on(limits.ready_to_send(Turn::New));
        assert!(after.elapsed() >= Duration::from_millis(55));
    }

    #[test]
    fn after_a_pause_the_refused_calls_go_before_the_others() {
        let limits = Arc::new(Limits::new(8, 0));
        let order = Arc::new(Mutex::new(Vec::new()));
        block_on(async {
            limits.pause(Instant::now(), Duration::from_millis(50));
            let refused = limits.refused();
            let new = {
                let (limits, order) = (limits.clone(), order.clone());
                tokio::spawn(async move {
                    limits.ready_to_send(Turn::New).await;
                    lock(&order).push("new");
                })
            };
            limits.ready_to_send(Turn::Refused).await;
            lock(&order).push("refused");
            // Its answer takes a while: the new call still waits for it.
            tokio::time::sleep(Duration::from_millis(40)).await;
            assert_eq!(*lock(&order), ["refused"]);
            lock(&order).push("answered");
            drop(refused);
            new.await.unwrap();
        });
        assert_eq!(*lock(&order), ["refused", "answered", "new"]);
        assert_eq!(*limits.refused.borrow(), 0);
    }

    #[test]
    fn nothing_on_the_wire_yet_has_no_mean() {
        assert_eq!(Limits::new(2, 0).mean_in_flight(), None);
    }

    #[test]
    fn the_backlog_holds_its_starters_at_its_size() {
        let backlog = Backlog::new(2);
        backlog.enter();
        backlog.enter();
        let entered = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                backlog.enter();
                entered.fetch_add(1, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(30));
            assert_eq!(entered.load(Ordering::SeqCst), 0, "the third waits");
            backlog.leave();
        });
        assert_eq!((entered.into_inner(), backlog.len()), (1, 2));
    }
}
