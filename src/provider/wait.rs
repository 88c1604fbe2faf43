//! Waiting, in one place: the command's deadline and retries with backoff for idempotent Edge
//! Connect calls.

use std::future::Future;
use std::time::{Duration, Instant};

use edge_connect::ApiError;

/// The time budget of one provider command.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    end: Instant,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub fn after(budget: Duration) -> Self {
        Deadline {
            end: Instant::now() + budget,
        }
    }

    /// Time left (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now())
    }

    /// True once the deadline has passed.
    pub fn expired(&self) -> bool {
        self.remaining().is_zero()
    }

    /// A later deadline, for cleanup after the main budget is spent.
    pub fn extended(&self, grace: Duration) -> Self {
        Deadline {
            end: self.end.max(Instant::now()) + grace,
        }
    }
}

/// Backoff delay before attempt `attempt` (1-based): exponential from 250 ms, capped at 8 s,
/// with up to 50 % jitter so that many concurrent processes do not retry in lockstep.
pub fn backoff(attempt: u32) -> Duration {
    let base_ms = 250u64
        .saturating_mul(1 << attempt.saturating_sub(1).min(5))
        .min(8_000);
    let jitter_seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64 ^ u64::from(std::process::id()))
        .unwrap_or(0);
    let jitter = jitter_seed % (base_ms / 2 + 1);
    Duration::from_millis(base_ms / 2 + jitter)
}

/// Runs an idempotent call, retrying transient failures (transport, 429, 5xx) with backoff
/// until it succeeds, fails for good, or the deadline leaves no room for another attempt.
pub async fn retry_transient<T, F, Fut>(
    deadline: Deadline,
    what: &str,
    mut call: F,
) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        match call().await {
            Err(e) if e.is_transient() => {
                let wait = backoff(attempt);
                if deadline.remaining() <= wait {
                    return Err(e);
                }
                tracing::warn!(call = what, attempt, wait_ms = wait.as_millis() as u64, error = %e, "transient failure, retrying");
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        for attempt in 1..20 {
            let d = backoff(attempt);
            assert!(d <= Duration::from_millis(8_000), "{attempt}: {d:?}");
        }
        assert!(backoff(1) <= Duration::from_millis(250));
        assert!(backoff(6) >= Duration::from_millis(4_000));
    }
}
