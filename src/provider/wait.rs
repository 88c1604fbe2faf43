//! Waiting, in one place: the command's deadline and retries with backoff for idempotent Edge
//! Connect calls.

use std::future::Future;

use edge_connect::{ApiError, Client};

pub use edge_connect::{backoff, Deadline};

/// A deadline and the words that name it in a wait that runs out: the two travel together.
#[derive(Debug, Clone)]
pub struct Bound {
    /// When everything under it ends.
    pub deadline: Deadline,
    /// What a person is told it is (`edge_connect.operation_timeout_secs=30s`).
    pub label: String,
}

impl Bound {
    /// The command's: `edge_connect.operation_timeout_secs` from now.
    pub fn command(config: &crate::config::Config) -> Self {
        let secs = config.edge_connect.operation_timeout_secs;
        Bound {
            deadline: Deadline::after(std::time::Duration::from_secs(secs)),
            label: format!("edge_connect.operation_timeout_secs={secs}s"),
        }
    }
}

/// Runs an idempotent call of `client`, retrying transient failures (transport, 429, 5xx) with
/// backoff until it succeeds, fails for good, or the client's deadline leaves no room for
/// another attempt.
pub async fn retry_transient<T, F, Fut>(client: &Client, what: &str, call: F) -> Result<T, ApiError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    retry_by(client.deadline(), what, call).await
}

async fn retry_by<T, F, Fut>(deadline: Deadline, what: &str, mut call: F) -> Result<T, ApiError>
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
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn transient_failures_are_retried_and_final_errors_end_them() {
        let mut calls = 0;
        let result: Result<(), ApiError> =
            retry_by(Deadline::after(Duration::from_secs(30)), "ShowApp", || {
                calls += 1;
                let status = if calls < 3 { 503 } else { 400 };
                async move {
                    Err(ApiError::from_status(
                        edge_connect::Rpc::ShowApp,
                        status,
                        "refused",
                    ))
                }
            })
            .await;
        assert_eq!(
            result.unwrap_err().answer,
            edge_connect::Answer::Status(400)
        );
        assert_eq!(calls, 3);
    }
}
