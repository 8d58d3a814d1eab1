//! Single flight: identical requests in flight together are sent once, the later ones waiting for the first's
//! answer. A request leaves the map when it is answered (or fails, or its task ends without an answer), so the
//! map holds only what is in flight: a run of any length keeps no answer in memory (finished answers are
//! shared through the disk cache).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

use crate::llm::LlmResponse;

/// What a request in flight ends with: its response, or its error's message.
pub(super) type Outcome = Result<LlmResponse, String>;

/// The requests in flight, by key; cloned, the same map.
#[derive(Default, Clone)]
pub(super) struct Flights(Arc<Mutex<HashMap<String, watch::Receiver<Option<Outcome>>>>>);

/// Joining a flight: lead it (send the request), or wait for its leader's answer.
pub(super) enum Joined {
    Lead(Leader),
    Wait(Flight),
}

/// A later identical request, waiting for the leader's answer.
pub(super) struct Flight(watch::Receiver<Option<Outcome>>);

/// The first of identical requests in flight: it must [`Leader::land`]; dropped without landing (its task
/// ended), it lands with an error so that no one waits forever.
pub(super) struct Leader {
    flights: Flights,
    key: String,
    answer: watch::Sender<Option<Outcome>>,
    landed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Flights {
    /// Joins the flight of `key`, leading it when there is none.
    pub(super) fn join(&self, key: &str) -> Joined {
        let mut map = lock(&self.0);
        if let Some(answer) = map.get(key) {
            return Joined::Wait(Flight(answer.clone()));
        }
        let (tx, rx) = watch::channel(None);
        map.insert(key.to_owned(), rx);
        Joined::Lead(Leader {
            flights: self.clone(),
            key: key.to_owned(),
            answer: tx,
            landed: false,
        })
    }

    /// Requests in flight.
    pub(super) fn len(&self) -> usize {
        lock(&self.0).len()
    }
}

impl Flight {
    /// Waits for the leader's answer.
    pub(super) async fn wait(mut self) -> Outcome {
        match self.0.wait_for(Option::is_some).await {
            Ok(answer) => answer.clone().unwrap_or_else(|| Err(abandoned())),
            Err(_) => Err(abandoned()),
        }
    }
}

fn abandoned() -> String {
    "the identical request this one waited for was abandoned".into()
}

impl Leader {
    /// Gives `outcome` to the requests waiting and takes the flight off the map: a later identical request
    /// leads its own.
    pub(super) fn land(mut self, outcome: Outcome) {
        self.publish(outcome);
    }

    fn publish(&mut self, outcome: Outcome) {
        self.landed = true;
        lock(&self.flights.0).remove(&self.key);
        self.answer.send_replace(Some(outcome));
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if !self.landed {
            self.publish(Err(abandoned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{CallMeta, Usage};

    fn response(text: &str) -> LlmResponse {
        LlmResponse {
            text: text.into(),
            usage: Usage::default(),
            latency_ms: 1.0,
            meta: CallMeta::default(),
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        super::super::runtime().unwrap().block_on(f)
    }

    #[test]
    fn waiters_get_the_leaders_answer_and_the_map_empties() {
        let flights = Flights::default();
        let Joined::Lead(leader) = flights.join("k") else {
            panic!("the first leads")
        };
        let waiters: Vec<Flight> = (0..3)
            .map(|_| match flights.join("k") {
                Joined::Wait(f) => f,
                Joined::Lead(_) => panic!("the others wait"),
            })
            .collect();
        assert!(matches!(flights.join("other"), Joined::Lead(_)));
        assert_eq!(flights.len(), 1, "a leader dropped leaves the map");
        block_on(async {
            let handles: Vec<_> = waiters
                .into_iter()
                .map(|f| tokio::spawn(f.wait()))
                .collect();
            leader.land(Ok(response("foo")));
            for h in handles {
                assert_eq!(h.await.unwrap().unwrap().text, "foo");
            }
        });
        assert_eq!(flights.len(), 0);
        assert!(
            matches!(flights.join("k"), Joined::Lead(_)),
            "a later identical request leads its own flight"
        );
    }

    #[test]
    fn a_leader_that_never_lands_releases_its_waiters() {
        let flights = Flights::default();
        let Joined::Lead(leader) = flights.join("k") else {
            panic!()
        };
        let Joined::Wait(waiter) = flights.join("k") else {
            panic!()
        };
        drop(leader);
        assert!(block_on(waiter.wait()).unwrap_err().contains("abandoned"));
        assert_eq!(flights.len(), 0);
    }

    #[test]
    fn the_map_stays_empty_over_many_requests() {
        let flights = Flights::default();
        std::thread::scope(|s| {
            for t in 0..4 {
                let flights = &flights;
                s.spawn(move || {
                    for i in 0..2_500 {
                        match flights.join(&format!("{}", i % 50 + t)) {
                            Joined::Lead(l) => l.land(Ok(response("x"))),
                            Joined::Wait(f) => assert!(block_on(f.wait()).is_ok()),
                        }
                        assert!(flights.len() <= 4, "only what is in flight");
                    }
                });
            }
        });
        assert_eq!(flights.len(), 0);
    }
}
