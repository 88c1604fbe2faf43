//! Waiting, in one place: the command's deadline and retries with backoff for idempotent Edge
//! Connect calls.

use edge_connect::{ApiError, Client, Retries};

pub use edge_connect::Deadline;

/// The command's deadline: `edge_connect.operation_timeout_secs` from now, made once per
/// command (`pipeline::open`) and carried by its client.
pub fn command_deadline(config: &crate::config::Config) -> Deadline {
    Deadline::after(std::time::Duration::from_secs(
        config.edge_connect.operation_timeout_secs,
    ))
}

/// The command's deadline in the words a wait that runs out names it by.
pub fn command_bound(config: &crate::config::Config) -> String {
    let secs = config.edge_connect.operation_timeout_secs;
    format!("edge_connect.operation_timeout_secs={secs}s")
}

/// Runs an idempotent call of `client`, retrying transient failures (transport, 429, 5xx) with
/// backoff until it succeeds, fails for good, or the client's deadline leaves no room for
/// another attempt.
pub async fn retry_transient<T>(
    client: &Client,
    what: &str,
    call: impl AsyncFnMut() -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    edge_connect::retry(call, transient(client.deadline(), what)).await
}

/// [`Retries`] within `deadline`, each retry logged with what is retried.
pub(super) fn transient(
    deadline: Deadline,
    what: &str,
) -> impl FnMut(ApiError, u32) -> Result<std::time::Duration, ApiError> + '_ {
    let mut retries = Retries::within(deadline);
    move |e, attempt| {
        retries.after(e, attempt, |e, wait| {
            tracing::warn!(call = what, attempt, wait_ms = wait.as_millis() as u64, error = %e, "transient failure, retrying");
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn transient_failures_are_retried_and_final_errors_end_them() {
        let mut calls = 0;
        let deadline = Deadline::after(Duration::from_secs(30));
        let call = async || {
            calls += 1;
            let status = if calls < 3 { 503 } else { 400 };
            Err(ApiError::from_status(
                edge_connect::Rpc::ShowApp,
                status,
                "refused",
            ))
        };
        let result: Result<(), ApiError> =
            edge_connect::retry(call, transient(deadline, "ShowApp")).await;
        assert_eq!(
            result.unwrap_err().answer,
            edge_connect::Answer::Status(400)
        );
        assert_eq!(calls, 3);
    }
}
