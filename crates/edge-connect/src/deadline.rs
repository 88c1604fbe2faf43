//! The deadline a call runs under, and the backoff between retries.
//!
//! A deadline travels with the future (a task-local value) rather than as a parameter of every
//! RPC function, so that a caller's retry helper can put every call it makes, and every login
//! those calls trigger, under its own deadline without each call site passing it on.

use std::future::Future;
use std::time::{Duration, Instant};

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `future` with every Edge Connect call inside it ending by `deadline`. It replaces, for
/// that future, the client's own deadline ([`ClientOptions::command_timeout`](crate::ClientOptions)):
/// a rollback that was granted extra time after the command's budget runs under its later
/// deadline. Nested calls replace the outer deadline in the same way.
pub async fn within_deadline<F: Future>(deadline: Instant, future: F) -> F::Output {
    DEADLINE.scope(deadline, future).await
}

/// The deadline of the enclosing [`within_deadline`], if any.
pub fn scoped_deadline() -> Option<Instant> {
    scoped()
}

pub(crate) fn scoped() -> Option<Instant> {
    DEADLINE.try_with(|d| *d).ok()
}

/// `now + budget`, or a far-away instant when that does not fit (a budget of `u64::MAX`
/// seconds must not panic).
pub fn instant_after(budget: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(budget)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

/// Backoff delay before retry `attempt` (1-based): exponential from 250 ms, capped at 8 s, with
/// up to 50 % jitter so that many concurrent processes do not retry in lockstep.
pub fn backoff(attempt: u32) -> Duration {
    let base_ms = 250u64
        .saturating_mul(1 << attempt.saturating_sub(1).min(5))
        .min(8_000);
    let jitter_seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()) ^ u64::from(std::process::id()))
        .unwrap_or(0);
    let jitter = jitter_seed % (base_ms / 2 + 1);
    Duration::from_millis(base_ms / 2 + jitter)
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
    fn huge_budgets_do_not_panic() {
        assert!(instant_after(Duration::MAX) > Instant::now());
    }

    #[tokio::test]
    async fn the_innermost_scope_wins() {
        assert_eq!(scoped(), None);
        let outer = Instant::now() + Duration::from_secs(10);
        let inner = Instant::now() + Duration::from_secs(100);
        within_deadline(outer, async {
            assert_eq!(scoped(), Some(outer));
            within_deadline(inner, async { assert_eq!(scoped(), Some(inner)) }).await;
        })
        .await;
    }
}
