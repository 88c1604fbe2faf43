//! The one deadline of a command, the backoff between retries, and the one retry loop.
//!
//! A [`Client`](crate::Client) is built with the command's [`Deadline`]: every call it makes,
//! every retry and login inside a call, and every wait for an answer ends by it. Extra time (a
//! failed create's rollback) is another, later `Deadline`, given explicitly through
//! [`Client::until`](crate::Client::until): nothing travels implicitly with a future.

use std::time::{Duration, Instant};

/// The time budget of one command: the instant by which everything it does must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    end: Instant,
}

impl Deadline {
    /// A deadline `budget` from now (a budget too large for the clock means "far away", never a
    /// panic).
    pub fn after(budget: Duration) -> Self {
        let now = Instant::now();
        let end = now
            .checked_add(budget)
            .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
            .unwrap_or(now);
        Deadline { end }
    }

    /// Time left (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now())
    }

    /// True once the deadline has passed.
    pub fn expired(&self) -> bool {
        self.remaining().is_zero()
    }

    /// True when there is time to wait `pause` and still try once more.
    pub fn has_room_for(&self, pause: Duration) -> bool {
        self.remaining() > pause
    }

    /// A later deadline, `grace` after this one (or after now, if this one has passed): the
    /// budget of cleanup work after the main budget is spent.
    pub fn extended(&self, grace: Duration) -> Self {
        let from = self.end.max(Instant::now());
        Deadline {
            end: from.checked_add(grace).unwrap_or(from),
        }
    }
}

/// Backoff delay before retry `attempt` (1-based): exponential from 250 ms, capped at 8 s, with
/// up to 50 % jitter so that many concurrent processes do not retry in lockstep.
pub fn backoff(attempt: u32) -> Duration {
    let base_ms = 250u64
        .saturating_mul(1 << attempt.saturating_sub(1).min(5))
        .min(8_000);
    Duration::from_millis(base_ms / 2 + fastrand::u64(..=base_ms / 2))
}

/// Runs `attempt` until it succeeds or `again` ends it: told each failure and how many attempts
/// were made, `again` gives the pause before the next attempt, or the error to return (each
/// caller decides which failures are worth another attempt within its deadline). The one retry
/// loop of the client and the provider.
pub async fn retry<T, E, F>(
    mut attempt: impl AsyncFnMut() -> Result<T, E>,
    mut again: impl FnMut(E, u32) -> Result<Duration, F>,
) -> Result<T, F> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match attempt().await {
            Ok(done) => return Ok(done),
            Err(e) => tokio::time::sleep(again(e, attempts)?).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        for attempt in 1..20 {
            assert!(backoff(attempt) <= Duration::from_millis(8_000));
        }
        assert!(backoff(1) <= Duration::from_millis(250));
        assert!(backoff(6) >= Duration::from_millis(4_000));
    }

    #[test]
    fn huge_budgets_and_graces_do_not_panic() {
        let d = Deadline::after(Duration::MAX);
        assert!(d.end > Instant::now());
        assert!(!d.expired());
        assert!(!d.extended(Duration::MAX).expired());
    }

    #[test]
    fn a_grace_counts_from_the_later_of_the_deadline_and_now() {
        let passed = Deadline::after(Duration::ZERO);
        assert!(passed.expired());
        assert!(!passed.has_room_for(Duration::ZERO));
        let grace = passed.extended(Duration::from_secs(60));
        assert!(grace.remaining() > Duration::from_secs(59));
        let far = Deadline::after(Duration::from_secs(600));
        assert!(far.extended(Duration::from_secs(60)).end >= far.end + Duration::from_secs(60));
    }

    #[tokio::test]
    async fn retry_pauses_as_told_and_ends_with_the_error_it_is_given() {
        let mut calls = 0;
        let result: Result<(), String> = retry(
            async || {
                calls += 1;
                Err(calls)
            },
            |n, attempts| {
                assert_eq!(n, attempts);
                if n < 3 {
                    Ok(Duration::ZERO)
                } else {
                    Err(format!("gave up after {n}"))
                }
            },
        )
        .await;
        assert_eq!(result.unwrap_err(), "gave up after 3");
        assert_eq!(calls, 3);
    }
}
