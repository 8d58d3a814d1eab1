//! `--max-cost`: the most a run may spend, shared by its clients (the model's and the judge's).
//!
//! A call reserves what it may cost before it is sent, under the same lock that checks the room left, and
//! settles what it did cost when it is done; calls in flight together cannot all pass the check on the same
//! spend. What a call may cost is its input tokens and `max_tokens` (or 1,000) output tokens at the uncached
//! price: a reply that costs more than that (a provider counting more prompt tokens than the tokenizer, or a
//! longer reply when `max_tokens` is unset) can pass the budget by the difference, and no call is sent after.
//!
//! A call that would fit once the calls in flight settle waits for them ([`Budget::reserve_waiting`]) instead
//! of being refused: at a high concurrency, what calls in flight hold reserved is far more than they cost.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::error::{Error, Result};

/// The most a run may spend, and what its clients spent and hold reserved.
#[derive(Debug, Default)]
pub struct Budget {
    /// The most USD to spend.
    pub max_usd: f64,
    /// (spent, reserved by calls in flight), in USD.
    state: Mutex<(f64, f64)>,
    /// Told whenever a reservation is settled or given back.
    settled: tokio::sync::Notify,
}

/// What one call in flight holds of the budget; given back (as nothing spent) when dropped unsettled.
#[must_use = "a reservation is given back at once when dropped"]
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    usd: f64,
}

impl Budget {
    /// A budget of `max_usd`.
    #[must_use]
    pub fn new(max_usd: f64) -> Arc<Self> {
        Arc::new(Self {
            max_usd,
            state: Mutex::new((0.0, 0.0)),
            settled: tokio::sync::Notify::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, (f64, f64)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the clients spent so far (calls settled).
    #[must_use]
    pub fn spent(&self) -> f64 {
        self.state().0
    }

    /// What calls in flight hold reserved.
    #[must_use]
    pub fn reserved(&self) -> f64 {
        self.state().1
    }

    /// Reserves `usd` for one call, when the spend, what calls in flight reserved and `usd` stay within the
    /// budget.
    ///
    /// # Errors
    /// The call is not to be sent: the error says what it would cost, what was spent and reserved, and the
    /// budget.
    pub fn reserve(self: &Arc<Self>, usd: f64) -> Result<Reservation> {
        let mut state = self.state();
        let (spent, reserved) = *state;
        if spent + reserved + usd > self.max_usd {
            return Err(Error::Llm(format!(
                "not sent: this call (about ${usd:.4}) could take the spend from ${spent:.4} (and ${reserved:.4} \
                 held by calls in flight) past --max-cost ${:.4}",
                self.max_usd
            )));
        }
        state.1 += usd;
        Ok(Reservation {
            budget: Arc::clone(self),
            usd,
        })
    }

    /// [`Budget::reserve`], waiting for the calls in flight to settle while `usd` would fit without what they
    /// hold reserved.
    ///
    /// # Errors
    /// As [`Budget::reserve`], once what was spent leaves no room for `usd`.
    pub async fn reserve_waiting(self: &Arc<Self>, usd: f64) -> Result<Reservation> {
        loop {
            let settled = self.settled.notified();
            let mut settled = std::pin::pin!(settled);
            // Told of every settlement from here on, before the check.
            settled.as_mut().enable();
            match self.reserve(usd) {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let (spent, reserved) = *self.state();
                    if reserved <= 0.0 || spent + usd > self.max_usd {
                        return Err(e);
                    }
                }
            }
            settled.await;
        }
    }
}

impl Reservation {
    /// Gives the reservation back and counts what the call cost.
    pub fn settle(mut self, usd: f64) {
        {
            let mut state = self.budget.state();
            state.1 = (state.1 - self.usd).max(0.0);
            state.0 += usd;
        }
        self.usd = 0.0;
        self.budget.settled.notify_waiters();
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.usd > 0.0 {
            let mut state = self.budget.state();
            state.1 = (state.1 - self.usd).max(0.0);
            drop(state);
            self.budget.settled.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_holds_room_until_settled() {
        let b = Budget::new(1.0);
        let first = b.reserve(0.6).unwrap();
        assert_eq!(b.reserved(), 0.6);
        let err = b.reserve(0.6).unwrap_err().to_string();
        assert!(
            err.contains("$0.6000 held by calls in flight") && err.contains("--max-cost $1.0000"),
            "{err}"
        );
        // The call cost less than it held: the rest is free again.
        first.settle(0.25);
        assert_eq!((b.spent(), b.reserved()), (0.25, 0.0));
        b.reserve(0.75).unwrap().settle(0.75);
        assert_eq!(b.spent(), 1.0);
        assert!(b.reserve(0.01).is_err(), "the budget is spent");
        assert!(b.reserve(0.0).is_ok(), "a free call passes");
    }

    #[test]
    fn a_failed_call_gives_its_reservation_back() {
        let b = Budget::new(1.0);
        drop(b.reserve(0.9).unwrap());
        assert_eq!((b.spent(), b.reserved()), (0.0, 0.0));
        assert!(b.reserve(0.9).is_ok());
    }

    #[test]
    fn a_call_that_fits_once_the_calls_in_flight_settle_waits_for_them() {
        let b = Budget::new(1.0);
        let held = b.reserve(0.8).unwrap();
        let rt = super::super::runtime().unwrap();
        let waiting = {
            let b = Arc::clone(&b);
            rt.spawn(async move { b.reserve_waiting(0.5).await.map(|r| r.settle(0.5)) })
        };
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(!waiting.is_finished(), "it waits while $0.80 is held");
        // The call in flight cost less than it held: the waiting one fits.
        held.settle(0.3);
        rt.block_on(waiting).unwrap().unwrap();
        assert!((b.spent() - 0.8).abs() < 1e-9);
        // Nothing in flight and no room: refused at once.
        let err = rt.block_on(b.reserve_waiting(0.5)).unwrap_err().to_string();
        assert!(err.contains("not sent"), "{err}");
    }

    #[test]
    fn concurrent_reservations_never_pass_the_budget() {
        // 16 workers, 200 calls each, of 0.01 each: no more than 100 may be reserved or spent.
        let b = Budget::new(1.0);
        let sent = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    for _ in 0..200 {
                        if let Ok(r) = b.reserve(0.01) {
                            sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            assert!(b.spent() + b.reserved() <= 1.0 + 1e-9);
                            std::thread::yield_now();
                            r.settle(0.01);
                        }
                    }
                });
            }
        });
        let sent = sent.into_inner();
        assert!((99..=100).contains(&sent), "{sent}");
        assert!(b.spent() <= 1.0 + 1e-9, "{}", b.spent());
    }
}
