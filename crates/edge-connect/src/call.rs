//! One request: the POST with its retries while the host cannot be reached, the token and its
//! renewal on 401, and the unary calls built on them.

use std::sync::atomic::Ordering;
use std::time::Instant;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::client::Client;
use crate::error::{Answer, ApiError};
use crate::rpc::Rpc;
use crate::transport::{host_port, json_body, read_body, Wait, MAX_ERROR_BODY, MAX_UNARY_BODY};
use secret::Secret;

impl Client {
    /// One POST of `rpc` (the login, or `/api/v1/auth/ctrl/<rpc>` with `token`), retried (when
    /// `retry_unreachable`) only while the host cannot be reached at all (nothing was sent, so
    /// even a create may be repeated), for at most `connect_retry` since the first failure; the
    /// answer's headers must come within `headers`. Returns an answer with status 200; any
    /// other status is the error it says, and a redirect is refused.
    pub(crate) async fn post(
        &self,
        rpc: Rpc,
        body: bytes::Bytes,
        token: Option<&Secret>,
        retry_unreachable: bool,
        headers: Wait,
    ) -> Result<reqwest::Response, ApiError> {
        let url = self.url_of(rpc);
        let started = Instant::now();
        // A failed attempt is `Ok` with why while the host could not be reached (worth another
        // attempt), `Err` with the call's error otherwise.
        let attempt = async || {
            self.shared.requests.fetch_add(1, Ordering::Relaxed);
            let mut request = self
                .shared
                .http
                .post(url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            if let Some(token) = token {
                request = request.bearer_auth(token.expose());
            }
            let sent = Instant::now();
            let e = match headers.run(rpc, "the answer", request.send()).await {
                Ok(Ok(response)) => {
                    return self.answer(rpc, url, response, started).await.map_err(Err)
                }
                Err(timeout) => Err(timeout),
                Ok(Err(e)) => crate::transport::request_error(rpc, &e),
            };
            self.report_call(rpc, None, sent.elapsed());
            Err(e)
        };
        // Why the host could not be reached, for an attempt the deadline cuts off after it: that
        // says what went wrong, the cut only that time ran out (as `Retries` does for answers).
        let mut earlier: Option<String> = None;
        let unreachable = |detail: &str, tried| {
            ApiError::host_unreachable(rpc, &self.destination(), detail, tried)
        };
        let again = |e: Result<String, ApiError>, attempts| {
            let since = match self.shared.unreachable_since.lock() {
                Ok(mut since) => *since.get_or_insert_with(Instant::now),
                Err(_) => Instant::now(),
            };
            let spent = since.elapsed();
            let detail = match (e, earlier.take()) {
                (Ok(detail), _) => detail,
                (Err(_cut), Some(detail)) if retry_unreachable && self.deadline.expired() => {
                    let bound = "the command's deadline, edge_connect.operation_timeout_secs";
                    return Err(unreachable(&detail, Some((spent, bound))));
                }
                (Err(e), _) => return Err(e),
            };
            let left = self.shared.options.connect_retry.saturating_sub(spent);
            let pause = crate::deadline::backoff(attempts).min(left);
            let bound = if left.is_zero() {
                "edge_connect.connect_retry_secs"
            } else if !self.deadline.has_room_for(pause) {
                "the command's deadline, edge_connect.operation_timeout_secs"
            } else {
                ""
            };
            if !retry_unreachable || !bound.is_empty() {
                return Err(unreachable(
                    &detail,
                    retry_unreachable.then_some((spent, bound)),
                ));
            }
            self.tell(&format!(
                "retrying {rpc}: cannot connect to {} (attempt {})",
                self.destination(),
                attempts + 1
            ));
            earlier = Some(detail);
            Ok(pause)
        };
        crate::deadline::retry(attempt, again).await
    }

    /// An answer that came: a 200 is returned, a redirect refused, any other status is the
    /// error it says. One log line either way.
    async fn answer(
        &self,
        rpc: Rpc,
        url: &reqwest::Url,
        response: reqwest::Response,
        started: Instant,
    ) -> Result<reqwest::Response, ApiError> {
        if let Ok(mut since) = self.shared.unreachable_since.lock() {
            *since = None;
        }
        let status = response.status().as_u16();
        self.report_call(rpc, Some(status), started.elapsed());
        if response.status().is_redirection() {
            let target = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok())
                .map(|u| host_port(&u));
            let target = target.as_deref();
            tracing::warn!(
                rpc = rpc.name(),
                status,
                target = target.unwrap_or("?"),
                "redirect refused"
            );
            return Err(ApiError::redirect(rpc, status, target));
        }
        if status == 200 {
            let ms = started.elapsed().as_millis() as u64;
            tracing::info!(rpc = rpc.name(), status, ms, "edge connect call");
            return Ok(response);
        }
        let mut bytes = Vec::new();
        // The message only: the status is what the caller acts on.
        let _ = read_body(response, rpc, self.wait(true), MAX_ERROR_BODY, &mut bytes).await;
        let e = ApiError::from_status(
            rpc,
            status,
            &crate::transport::error_message(&bytes, status),
        );
        let ms = started.elapsed().as_millis() as u64;
        tracing::info!(rpc = rpc.name(), status, ms, error = %e.message, "edge connect call");
        Err(e)
    }

    /// Sends `{"region": ..., wrapper: object}` to `rpc`; logs in again once when the token is
    /// refused. Returns the response with status 200, or the error. `headers` bounds the wait
    /// for the answer's headers.
    pub(crate) async fn send(
        &self,
        rpc: Rpc,
        object: &impl Serialize,
        headers: Wait,
    ) -> Result<reqwest::Response, ApiError> {
        let body = json_body(
            rpc,
            &Wrapped {
                region: &self.shared.options.region,
                wrapper: rpc.wrapper(),
                object,
            },
        )?;
        let token = self.token(None).await?;
        match self
            .post(rpc, body.clone(), Some(&token), true, headers)
            .await
        {
            Err(e) if e.answer == Answer::Status(401) => {
                let token = self.token(Some(&token)).await?;
                self.post(rpc, body, Some(&token), true, headers).await
            }
            other => other,
        }
    }

    /// A unary call (CreateApp, DeleteApp): success is HTTP 200 with `{}`.
    pub(crate) async fn unary(&self, rpc: Rpc, object: &impl Serialize) -> Result<(), ApiError> {
        let wait = self.wait(true);
        let response = self.send(rpc, object, wait).await?;
        read_body(response, rpc, wait, MAX_UNARY_BODY, &mut Vec::new()).await
    }
}

/// `{"region": ..., "<wrapper>": object}`, written straight from the object (no JSON tree
/// between).
struct Wrapped<'a, T> {
    region: &'a str,
    wrapper: &'static str,
    object: &'a T,
}

impl<T: Serialize> Serialize for Wrapped<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("region", self.region)?;
        map.serialize_entry(self.wrapper, self.object)?;
        map.end()
    }
}
