//! The one deadline of a command, and the backoff between retries.
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
}
