//! Waiting, in one place: the command's deadline and retries with backoff for idempotent Edge
//! Connect calls.

use std::future::Future;

use edge_connect::ApiError;

pub use edge_connect::{backoff, Deadline};

/// Runs an idempotent call, retrying transient failures (transport, 429, 5xx) with backoff
/// until it succeeds, fails for good, or `deadline` leaves no room for another attempt. The
/// calls themselves end by the deadline of the client that makes them: a caller with a later
/// deadline than the command's (a rollback) calls through `client.until(deadline)`.
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
        match call().await {
            Err(e) if e.is_transient() => {
                let wait = backoff(attempt);
                if !deadline.has_room_for(wait) {
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
    use std::time::Duration;

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
}
