//! Reading Master Controller answers: bodies and stream chunks under a silence bound and the
//! call's deadline, with a cap on what is held, the error message of a refused call, and reqwest
//! errors turned into one-line [`ApiError`]s.

use std::time::Duration;

use crate::deadline::Deadline;
use crate::error::{ApiError, ApiErrorKind};
use crate::rpc::Rpc;

/// At most this much of a refused call's body is read: the message is one short line, and a
/// hostile or broken server must not make the process hold an endless body.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;
/// A unary answer (`{}`, a login token) larger than this is a protocol error.
pub(crate) const MAX_UNARY_BODY: usize = 1024 * 1024;
/// How long the next piece of an answer may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wait {
    /// Longest silence between two chunks (`None`: silence is not timed, only the deadline).
    pub(crate) silence: Option<Duration>,
    /// The call's deadline.
    pub(crate) deadline: Deadline,
}

impl Wait {
    /// The time allowed for the next event, and whether running out of it means the deadline
    /// (rather than silence) was reached.
    fn budget(&self) -> (Duration, bool) {
        let left = self.deadline.remaining();
        match self.silence {
            Some(s) if s < left => (s, false),
            _ => (left, true),
        }
    }

    /// Runs `future` within this wait; `what` names what was awaited in the error.
    pub(crate) async fn run<T>(
        &self,
        rpc: Rpc,
        what: &str,
        future: impl std::future::Future<Output = T>,
    ) -> Result<T, ApiError> {
        let (budget, is_deadline) = self.budget();
        let ran_out = || {
            let message = if is_deadline {
                format!("the command's deadline (edge_connect.operation_timeout_secs) was reached while waiting for {what}")
            } else {
                format!(
                    "nothing came within {} s (edge_connect.request_timeout_secs) while waiting for {what}",
                    budget.as_secs_f64()
                )
            };
            ApiError::transport(rpc, message)
        };
        // tokio's timeout polls the future before its timer: with no time left, a server that
        // always has the next piece ready would never be stopped. So a passed deadline ends the
        // wait before anything is polled (docs/reliability.md: every call ends by the deadline).
        if budget.is_zero() {
            return Err(ran_out());
        }
        tokio::time::timeout(budget, future)
            .await
            .map_err(|_| ran_out())
    }
}

/// An answer's body into `body`, at most `cap` bytes: more is a protocol error, with the first
/// `cap` bytes in `body` (a refused call's message is read this way, and any error of the
/// read costs only the message, never the status, which is what the caller acts on).
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    rpc: Rpc,
    wait: Wait,
    cap: usize,
    body: &mut Vec<u8>,
) -> Result<(), ApiError> {
    while let Some(chunk) = next_chunk(&mut response, rpc, wait).await? {
        if body.len() + chunk.len() > cap {
            body.extend_from_slice(&chunk[..cap - body.len()]);
            let message = format!("answer larger than {} KiB; not read further", cap / 1024);
            return Err(ApiError::protocol(rpc, message));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(())
}

/// The next piece of a response body; `None` at its end. Running out of `wait` or a broken
/// connection is a transport error.
pub(crate) async fn next_chunk(
    response: &mut reqwest::Response,
    rpc: Rpc,
    wait: Wait,
) -> Result<Option<bytes::Bytes>, ApiError> {
    wait.run(rpc, "the next part of the answer", response.chunk())
        .await?
        .map_err(|e| {
            ApiError::transport(rpc, format!("connection broke: {}", transport_message(&e)))
        })
}

/// A request body as JSON, serialised once for all attempts of the call.
pub(crate) fn json_body(rpc: Rpc, body: &impl serde::Serialize) -> Result<bytes::Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(bytes::Bytes::from)
        .map_err(|e| ApiError::protocol(rpc, format!("cannot write the request: {e}")))
}

/// The `message` of an error body, or a stand-in naming the status. (Every [`ApiError`] makes
/// its message one clean, bounded line.)
pub(crate) fn error_message(body: &[u8], status: u16) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| Some(v.get("message")?.as_str()?.to_string()))
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| format!("HTTP {status} without a readable message"))
}

/// `host:port` of `url`, for messages (never its user, password, path or query).
pub(crate) fn host_port(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("?");
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// A failed request: `Ok` with why when the host could not be reached at all (refused, no
/// route, name not resolved: nothing was sent, so a retry cannot repeat anything); else the
/// call's error: a certificate problem is final (retrying cannot fix it), anything else a
/// transport error worth retrying. (A TLS handshake failure is also a "connect" error to
/// reqwest; it is not unreachability.)
pub(crate) fn request_error(rpc: Rpc, e: &reqwest::Error) -> Result<String, ApiError> {
    let message = transport_message(e);
    let lower = message.to_ascii_lowercase();
    // rustls read a plain-HTTP answer where the TLS handshake's first record belonged (its
    // `InvalidContentType`): the URL says `https://` for a port that serves `http://`.
    let tls = if message.contains("InvalidContentType") {
        let at = e.url().map_or_else(|| "the server".into(), host_port);
        format!(
            "{at} answered in plain HTTP, not TLS: edge_connect.url says https:// for a port that serves http:// (give the port that serves TLS)"
        )
    } else if lower.contains("certificate") || lower.contains("handshake") {
        format!("{message} (set edge_connect.ca_bundle for a private CA)")
    } else if e.is_connect() && !lower.contains("tls") {
        let detail = message.strip_prefix("cannot connect: ").unwrap_or(&message);
        return Ok(detail.to_string());
    } else {
        return Err(ApiError::transport(rpc, message));
    };
    Err(ApiError {
        kind: ApiErrorKind::Tls,
        ..ApiError::transport(rpc, tls)
    })
}

/// reqwest's error chain without reqwest's own line, which holds the request URL: the chain
/// says what failed, and the URL is known to the operator (and must not carry a query's
/// secrets into a log).
pub(crate) fn transport_message(e: &reqwest::Error) -> String {
    let what = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "request failed"
    };
    let chain = std::iter::successors(std::error::Error::source(e), |s| s.source());
    chain.fold(what.to_string(), |msg, s| format!("{msg}: {s}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_bound_wins() {
        let w = Wait {
            silence: Some(Duration::from_secs(60)),
            deadline: Deadline::after(Duration::from_secs(1)),
        };
        assert!(matches!(w.budget(), (d, true) if d <= Duration::from_secs(1)));
        let w = Wait {
            silence: Some(Duration::from_secs(1)),
            deadline: Deadline::after(Duration::from_secs(60)),
        };
        assert_eq!(w.budget(), (Duration::from_secs(1), false));
        let w = Wait {
            silence: None,
            deadline: Deadline::after(Duration::from_secs(60)),
        };
        assert!(matches!(w.budget(), (d, true) if d > Duration::from_secs(59)));
    }

    #[test]
    fn error_messages_fall_back_to_the_status() {
        assert_eq!(error_message(br#"{"message":"Boom"}"#, 400), "Boom");
        assert_eq!(
            error_message(b"{\"message\":\"cut", 503),
            "HTTP 503 without a readable message"
        );
    }
}
