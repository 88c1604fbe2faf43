//! Reading Master Controller answers: bodies and stream chunks under a silence timeout, the
//! error message of a refused call, and reqwest errors turned into one-line [`ApiError`]s.

use std::time::Duration;

use serde::Deserialize;

use crate::error::ApiError;

#[derive(Deserialize)]
struct MessageBody {
    #[serde(default)]
    message: String,
}

pub(crate) async fn read_body(
    mut response: reqwest::Response,
    rpc: &str,
    timeout: Duration,
) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk(&mut response, rpc, timeout).await? {
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The next piece of a response body; `None` at its end. Silence longer than `timeout` (no byte,
/// not even a progress line) or a broken connection is a transport error.
pub(crate) async fn next_chunk(
    response: &mut reqwest::Response,
    rpc: &str,
    timeout: Duration,
) -> Result<Option<bytes::Bytes>, ApiError> {
    tokio::time::timeout(timeout, response.chunk())
        .await
        .map_err(|_| ApiError::transport(rpc, "no answer within request_timeout_secs"))?
        .map_err(|e| {
            ApiError::transport(rpc, format!("connection broke: {}", transport_message(&e)))
        })
}

pub(crate) fn error_message(body: &[u8], status: u16) -> String {
    serde_json::from_slice::<MessageBody>(body)
        .ok()
        .map(|m| m.message)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| format!("HTTP {status} without a message"))
}

/// reqwest's error chain, minus the URL (it holds no secret, but is noise in a one-line error).
/// A failed request: a certificate problem is final (retrying cannot fix it), anything else is a
/// transport error worth retrying.
pub(crate) fn request_error(rpc: &str, e: &reqwest::Error) -> ApiError {
    let message = transport_message(e);
    let lower = message.to_ascii_lowercase();
    if lower.contains("certificate") || lower.contains("handshake") {
        ApiError {
            kind: crate::ApiErrorKind::Tls,
            rpc: rpc.to_string(),
            status: None,
            message: format!("{message} (set edge_connect.ca_bundle for a private CA)"),
        }
    } else {
        ApiError::transport(rpc, message)
    }
}

fn transport_message(e: &reqwest::Error) -> String {
    let mut msg = if e.is_connect() {
        "cannot connect".to_string()
    } else if e.is_timeout() {
        "timed out".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}
