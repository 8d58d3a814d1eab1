//! The retry loop every request goes through (calls and the preflight check), and its backoff.

use std::future::Future;
use std::time::{Duration, Instant};

use super::config::OpenAiConfig;
use super::limits::{Limits, Priority, Turn};
use super::wire::{Answer, Failure};

/// Which failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Policy {
    /// Every failure that another attempt may fix: 429, 5xx, connection errors, timeouts.
    Call,
    /// Only those the server answered (a rate limit, a server error): a refused key, an unknown model or
    /// nothing listening stops the run before it starts.
    Preflight,
}

/// How a request went over its attempts.
pub(super) struct Outcome {
    /// The answer, or the last attempt's failure.
    pub result: Result<Answer, Failure>,
    /// Attempts made, the first included.
    pub attempts: u32,
    /// The last attempt's time on the wire, in milliseconds.
    pub latency_ms: f64,
}

/// Makes `attempt` until it answers, a failure is not to be retried under `policy`, or `max_retries` retries
/// were made. The call holds one place in `limits` (asked for at `priority`) over all its attempts, so that a
/// retry never queues behind newer calls, and each attempt waits for its start there (a pause, the rate); a
/// call's attempts are counted on the wire (the preflight's are not: it is a check before the run). A 429
/// pauses every request of the client for the wait the server asked for, else [`backoff`] (with its jitter
/// from `seed`) ([`Limits::pause`]), and the refused call goes again when the pause ends, before any call
/// not refused ([`Limits::refused`]); after another failure the call waits as long itself.
pub(super) async fn retrying<F, A>(
    config: &OpenAiConfig,
    limits: &Limits,
    (policy, priority): (Policy, Priority),
    seed: &[u8],
    mut attempt: F,
) -> Outcome
where
    F: FnMut() -> A,
    A: Future<Output = Result<Answer, Failure>>,
{
    let _permit = limits.acquire(priority).await;
    let mut attempts = 0;
    let mut turn = Turn::New;
    let mut refused = None;
    loop {
        attempts += 1;
        limits.ready_to_send(turn).await;
        let wire = (policy == Policy::Call).then(|| limits.on_wire());
        let sent = Instant::now();
        let result = attempt().await;
        let latency_ms = sent.elapsed().as_secs_f64() * 1e3;
        drop(wire);
        // Answered: a refused call no longer holds the others back once it is counted again (if refused again).
        let answered = refused.take();
        let rate_limited = matches!(&result, Err(f) if f.status == Some(429));
        if let Err(f) = &result {
            if rate_limited {
                limits.pause(sent, wait(config, attempts, seed, f));
            }
        }
        match result {
            Err(f) if attempts <= config.max_retries && retried(policy, &f) => {
                if rate_limited {
                    refused = Some(limits.refused());
                    turn = Turn::Refused;
                } else {
                    turn = Turn::New;
                    drop(answered);
                    tokio::time::sleep(wait(config, attempts, seed, &f)).await;
                }
            }
            result => {
                return Outcome {
                    result,
                    attempts,
                    latency_ms,
                }
            }
        }
    }
}

/// The wait before retrying after `f`, the `n`th attempt's failure: what the server asked for, else the
/// [`backoff`].
fn wait(config: &OpenAiConfig, n: u32, seed: &[u8], f: &Failure) -> Duration {
    f.retry_after
        .unwrap_or_else(|| backoff(config, n, seed, f.status))
}

fn retried(policy: Policy, f: &Failure) -> bool {
    f.retry && (policy == Policy::Call || f.status.is_some())
}

/// The backoff before retry `n` (1-based): `backoff_ms` doubled per retry, plus up to half of it again as
/// jitter derived from the request (`seed`), so that concurrent workers spread out while a run stays
/// reproducible. A 429 that named no wait backs off at least `rate_limit_backoff_s`, doubling to 60 s (or to
/// `rate_limit_backoff_s` when that is more): a per-minute limit has room again within the retries.
pub(super) fn backoff(config: &OpenAiConfig, n: u32, seed: &[u8], status: Option<u16>) -> Duration {
    let base = config
        .backoff_ms
        .saturating_mul(1 << n.min(16).saturating_sub(1));
    let jitter = u64::from(seed.first().copied().unwrap_or(0) ^ u8::try_from(n % 256).unwrap_or(0));
    let wait = Duration::from_millis(base + base * jitter / 512);
    if status == Some(429) {
        let first = config.rate_limit_backoff_s.max(0.0);
        let floor =
            (first * f64::from(1u32 << n.min(6).saturating_sub(1))).min(60.0_f64.max(first));
        wait.max(Duration::from_secs_f64(floor))
    } else {
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(backoff_ms: u64, rate_limit_backoff_s: f64) -> OpenAiConfig {
        OpenAiConfig {
            backoff_ms,
            rate_limit_backoff_s,
            max_retries: 3,
            ..OpenAiConfig::default()
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_from_the_request() {
        let c = config(100, 10.0);
        // Seed byte 0: the jitter is n itself, out of 512.
        let ms = |n, seed: u8| backoff(&c, n, &[seed], None).as_millis();
        assert_eq!(
            [ms(1, 0), ms(2, 0), ms(3, 0), ms(4, 0)],
            [100, 200, 400 + 400 * 3 / 512, 800 + 800 * 4 / 512]
        );
        // The largest jitter adds just under half.
        assert_eq!(ms(1, 0xfe), 100 + 100 * 0xff / 512);
        assert_eq!(ms(2, 0xff), 200 + 200 * 0xfd / 512);
        // Different requests wait different times; the same one, the same.
        assert_ne!(ms(3, 7), ms(3, 200));
        assert_eq!(ms(3, 7), ms(3, 7));
        // An empty seed is seed 0; a huge retry number does not overflow.
        assert_eq!(backoff(&c, 1, &[], None).as_millis(), 100);
        assert!(backoff(&c, 1000, &[0], None) >= Duration::from_millis(100 << 15));
    }

    #[test]
    fn a_silent_rate_limit_backs_off_for_its_window() {
        let c = config(10, 10.0);
        let s = |n| backoff(&c, n, &[0], Some(429)).as_secs_f64();
        assert_eq!(
            [s(1), s(2), s(3), s(4), s(5)],
            [10.0, 20.0, 40.0, 60.0, 60.0]
        );
        // A first wait above 60 s stays the ceiling.
        let slow = config(10, 90.0);
        assert_eq!(backoff(&slow, 3, &[0], Some(429)).as_secs_f64(), 90.0);
        // Other statuses back off from backoff_ms only.
        assert_eq!(backoff(&c, 2, &[0], Some(503)).as_millis(), 20);
        // A longer exponential backoff wins over the floor.
        let long = config(30_000, 1.0);
        assert_eq!(
            backoff(&long, 2, &[0], Some(429)).as_millis(),
            60_000 + 60_000 * 2 / 512
        );
    }

    fn fail(retry: bool, status: Option<u16>) -> Failure {
        Failure {
            retry,
            status,
            retry_after: Some(Duration::from_millis(1)),
            message: "no".into(),
        }
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        super::super::runtime().unwrap().block_on(f)
    }

    fn run(policy: Policy, mut script: Vec<Result<Answer, Failure>>) -> (Outcome, usize) {
        let limits = Limits::new(1, 0);
        let mut made = 0;
        script.reverse();
        let outcome = block_on(retrying(
            &config(1, 0.0),
            &limits,
            (policy, Priority::Waited),
            b"seed",
            || {
                made += 1;
                std::future::ready(script.pop().unwrap())
            },
        ));
        (outcome, made)
    }

    fn answer() -> Result<Answer, Failure> {
        Ok(Answer {
            text: "ok".into(),
            usage: None,
            status: 200,
        })
    }

    #[test]
    fn retried_failures_until_an_answer() {
        let (o, made) = run(
            Policy::Call,
            vec![Err(fail(true, Some(503))), Err(fail(true, None)), answer()],
        );
        assert_eq!((o.attempts, made), (3, 3));
        assert_eq!(o.result.unwrap().text, "ok");
    }

    #[test]
    fn gives_up_after_max_retries() {
        let (o, made) = run(Policy::Call, vec![Err(fail(true, Some(500))); 10]);
        assert_eq!((o.attempts, made), (4, 4));
        assert_eq!(o.result.unwrap_err().status, Some(500));
    }

    #[test]
    fn a_failure_retrying_cannot_fix_is_not_retried() {
        let (o, made) = run(Policy::Call, vec![Err(fail(false, Some(401))), answer()]);
        assert_eq!((o.attempts, made), (1, 1));
        assert!(o.result.is_err());
    }

    #[test]
    fn the_preflight_retries_only_what_the_server_answered() {
        let (o, _) = run(
            Policy::Preflight,
            vec![Err(fail(true, Some(429))), answer()],
        );
        assert_eq!(o.attempts, 2);
        assert!(o.result.is_ok());
        // Nothing listening: stop at once, before the run starts.
        let (o, made) = run(Policy::Preflight, vec![Err(fail(true, None)), answer()]);
        assert_eq!((o.attempts, made), (1, 1));
        assert!(o.result.is_err());
    }

    #[test]
    fn the_wait_the_server_asked_for_is_waited_by_every_request() {
        let limits = std::sync::Arc::new(Limits::new(2, 0));
        let started = Instant::now();
        let (o, other) = block_on(async {
            let retried = {
                let limits = std::sync::Arc::clone(&limits);
                tokio::spawn(async move {
                    let mut first = true;
                    retrying(
                        &config(1, 0.0),
                        &limits,
                        (Policy::Call, Priority::Waited),
                        b"",
                        || {
                            std::future::ready(if std::mem::take(&mut first) {
                                Err(Failure {
                                    retry_after: Some(Duration::from_millis(200)),
                                    ..fail(true, Some(429))
                                })
                            } else {
                                answer()
                            })
                        },
                    )
                    .await
                })
            };
            // Another request, started after the 429, waits for the same pause.
            tokio::time::sleep(Duration::from_millis(30)).await;
            limits.ready_to_send(Turn::New).await;
            let other = started.elapsed();
            (retried.await.unwrap(), other)
        });
        assert!(o.result.is_ok());
        assert_eq!(o.attempts, 2);
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(other >= Duration::from_millis(190), "{other:?}");
    }
}
