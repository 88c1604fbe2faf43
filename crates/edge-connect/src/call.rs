//! One request: the POST with its retries while the host cannot be reached, the token and its
//! renewal on 401, and the unary calls built on them.

use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::{json, Value};

use crate::client::{host_port, Client};
use crate::error::ApiError;
use crate::secret::Secret;
use crate::transport::Wait;

impl Client {
    /// One POST, retried (when `retry_unreachable`) only while the host cannot be reached at
    /// all (nothing was sent, so even a create may be repeated), for at most `connect_retry`
    /// since the first failure; the answer's headers must come within `headers`. Returns any
    /// answer but a redirect, which is refused.
    pub(crate) async fn post(
        &self,
        rpc: &str,
        url: &reqwest::Url,
        body: &Value,
        token: Option<&Secret>,
        retry_unreachable: bool,
        headers: Wait,
    ) -> Result<reqwest::Response, ApiError> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.shared.requests.fetch_add(1, Ordering::Relaxed);
            let mut request = self.shared.http.post(url.clone()).json(body);
            if let Some(token) = token {
                request = request.bearer_auth(token.expose());
            }
            match headers.run(rpc, "the answer", request.send()).await? {
                Ok(response) => {
                    if let Ok(mut since) = self.shared.unreachable_since.lock() {
                        *since = None;
                    }
                    let status = response.status();
                    if status.is_redirection() {
                        let target = response
                            .headers()
                            .get(reqwest::header::LOCATION)
                            .and_then(|l| l.to_str().ok())
                            .and_then(|l| url.join(l).ok())
                            .map(|u| host_port(&u));
                        tracing::warn!(
                            rpc,
                            status = status.as_u16(),
                            target = target.as_deref().unwrap_or("?"),
                            "redirect refused"
                        );
                        return Err(ApiError::redirect(rpc, status.as_u16(), target.as_deref()));
                    }
                    return Ok(response);
                }
                Err(e) if crate::transport::is_unreachable(&e) => {
                    let since = match self.shared.unreachable_since.lock() {
                        Ok(mut since) => *since.get_or_insert_with(Instant::now),
                        Err(_) => Instant::now(),
                    };
                    let spent = since.elapsed();
                    let message = crate::transport::transport_message(&e);
                    let detail =
                        self.scrub(message.strip_prefix("cannot connect: ").unwrap_or(&message));
                    let left = self.shared.connect_retry.saturating_sub(spent);
                    let pause = crate::deadline::backoff(attempt).min(left);
                    if !retry_unreachable {
                        return Err(ApiError::host_unreachable(
                            rpc,
                            &self.destination(),
                            &detail,
                            None,
                        ));
                    }
                    let bound = if left.is_zero() {
                        Some("edge_connect.connect_retry_secs")
                    } else if !self.deadline.has_room_for(pause) {
                        Some("the command's deadline, edge_connect.operation_timeout_secs")
                    } else {
                        None
                    };
                    if let Some(bound) = bound {
                        return Err(ApiError::host_unreachable(
                            rpc,
                            &self.destination(),
                            &detail,
                            Some((spent, bound)),
                        ));
                    }
                    self.tell(&format!(
                        "retrying {rpc}: cannot connect to {} (attempt {})",
                        self.destination(),
                        attempt + 1
                    ));
                    tokio::time::sleep(pause).await;
                }
                Err(e) => return Err(self.scrubbed(crate::transport::request_error(rpc, &e))),
            }
        }
    }

    /// Sends `{"region": ..., wrapper: object}` to `/api/v1/auth/ctrl/<rpc>`; logs in again once
    /// when the token is refused. Returns the response with status 200, or the error. `headers`
    /// bounds the wait for the answer's headers.
    pub(crate) async fn send(
        &self,
        rpc: &str,
        wrapper: &str,
        object: &Value,
        headers: Wait,
    ) -> Result<reqwest::Response, ApiError> {
        let body = json!({ "region": self.shared.region, wrapper: object });
        let url = self.url(&format!("/api/v1/auth/ctrl/{rpc}"));
        let mut token = self.token().await?;
        let mut relogged = false;
        loop {
            let started = Instant::now();
            let response = self
                .post(rpc, &url, &body, Some(&token), true, headers)
                .await?;
            let status = response.status().as_u16();
            if status == 200 {
                tracing::info!(
                    rpc,
                    status,
                    ms = started.elapsed().as_millis() as u64,
                    "edge connect call"
                );
                return Ok(response);
            }
            let bytes = crate::transport::read_error_body(response, rpc, self.wait(true)).await;
            let message = self.scrub(&crate::transport::error_message(&bytes, status));
            tracing::info!(rpc, status, ms = started.elapsed().as_millis() as u64, error = %message, "edge connect call");
            if status == 401 && !relogged {
                relogged = true;
                token = self.renew_token(&token).await?;
                continue;
            }
            return Err(ApiError::from_status(rpc, status, &message));
        }
    }

    /// A unary call (CreateApp, DeleteApp, UpdateApp): success is HTTP 200 with `{}`.
    pub async fn unary(&self, rpc: &str, wrapper: &str, object: &Value) -> Result<(), ApiError> {
        let response = self.send(rpc, wrapper, object, self.wait(true)).await?;
        crate::transport::read_body(response, rpc, self.wait(true)).await?;
        Ok(())
    }
}
