//! Waiting, in one place: the command's deadline and retries with backoff for idempotent Edge
//! Connect calls.

use std::future::Future;
use std::time::{Duration, Instant};

use edge_connect::ApiError;

pub use edge_connect::backoff;

/// The time budget of one provider command.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    end: Instant,
}

impl Deadline {
    /// A deadline `budget` from now (a budget too large for the clock means "far away", never a
    /// panic).
    pub fn after(budget: Duration) -> Self {
        Deadline {
            end: edge_connect::instant_after(budget),
        }
    }

    /// The instant it passes.
    #[cfg(test)]
    pub fn instant(&self) -> Instant {
        self.end
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
        let from = self.end.max(Instant::now());
        Deadline {
            end: from.checked_add(grace).unwrap_or(from),
        }
    }

    /// Runs `future` with every Edge Connect call in it (logins included) ending by this
    /// deadline, whatever the server does.
    pub async fn bound<F: Future>(&self, future: F) -> F::Output {
        edge_connect::within_deadline(self.end, future).await
    }
}

/// Runs an idempotent call, retrying transient failures (transport, 429, 5xx) with backoff
/// until it succeeds, fails for good, or the deadline leaves no room for another attempt. Every
/// attempt runs under the deadline (see [`Deadline::bound`]).
pub async fn retry_transient<T, F, Fut>(
    deadline: Deadline,
    what: &str,
    call: F,
) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    retry_transient_reporting(deadline, what, &|_| {}, call).await
}

/// [`retry_transient`], telling `progress` about each retry in one line ("retrying ShowApp:
/// HTTP 503 ... (attempt 3)"), so that the CLI is not silent while it waits. Pass the
/// provider's `Progress` as `&*progress`.
pub async fn retry_transient_reporting<T, F, Fut>(
    deadline: Deadline,
    what: &str,
    progress: &(dyn Fn(&str) + Send + Sync),
    mut call: F,
) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        match deadline.bound(call()).await {
            Err(e) if e.is_transient() => {
                let wait = backoff(attempt);
                if deadline.remaining() <= wait {
                    return Err(e);
                }
                tracing::warn!(call = what, attempt, wait_ms = wait.as_millis() as u64, error = %e, "transient failure, retrying");
                progress(&format!(
                    "retrying {what}: {} (attempt {})",
                    e.message,
                    attempt + 1
                ));
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn backoff_grows_and_is_capped() {
        for attempt in 1..20 {
            let d = backoff(attempt);
            assert!(d <= Duration::from_millis(8_000), "{attempt}: {d:?}");
        }
        assert!(backoff(1) <= Duration::from_millis(250));
        assert!(backoff(6) >= Duration::from_millis(4_000));
    }

    #[test]
    fn huge_budgets_and_graces_do_not_panic() {
        let d = Deadline::after(Duration::from_secs(u64::MAX));
        assert!(!d.expired());
        assert!(!d.extended(Duration::MAX).expired());
    }

    #[tokio::test]
    async fn retries_are_reported_and_final_errors_end_them() {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = lines.clone();
        let progress = move |l: &str| seen.lock().unwrap().push(l.to_string());
        let mut calls = 0;
        let result: Result<(), ApiError> = retry_transient_reporting(
            Deadline::after(Duration::from_secs(30)),
            "ShowApp",
            &progress,
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err(ApiError::from_status("ShowApp", 503, "Service unavailable"))
                    } else {
                        Err(ApiError::from_status("ShowApp", 400, "Invalid"))
                    }
                }
            },
        )
        .await;
        assert_eq!(result.unwrap_err().status, Some(400));
        assert_eq!(calls, 3);
        let lines = lines.lock().unwrap();
        assert_eq!(
            *lines,
            [
                "retrying ShowApp: Service unavailable (attempt 2)",
                "retrying ShowApp: Service unavailable (attempt 3)"
            ]
        );
    }

    #[tokio::test]
    async fn every_attempt_runs_under_the_deadline() {
        let deadline = Deadline::after(Duration::from_secs(30));
        let seen = retry_transient(deadline, "X", || async {
            Ok::<_, ApiError>(edge_connect::scoped_deadline())
        })
        .await
        .unwrap();
        assert_eq!(seen, Some(deadline.instant()));
    }
}
