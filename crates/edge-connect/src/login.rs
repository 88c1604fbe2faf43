//! Logging in: with retries of transient failures, one refusal shared by every call of the
//! command, and one login shared by processes starting together (through the token store).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::Client;
use crate::error::ApiError;
use crate::secret::Secret;
use crate::token_store::LoginLock;

impl Client {
    /// Logs in once with the configured credentials and returns a fresh token: one attempt, no
    /// retry, for diagnostics (`check`) that must tell the truth at once. The calls log in by
    /// themselves, with retries.
    pub async fn login(&self) -> Result<Secret, ApiError> {
        self.login_attempt(false).await
    }

    /// Logs in, retrying transient failures (transport, 429, 5xx, no answer in time) with
    /// backoff within the deadline, and an unreachable host for `connect_retry`; a refused login
    /// (wrong credentials, two-factor authentication required) is final at once.
    async fn login_retrying(&self) -> Result<Secret, ApiError> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            match self.login_attempt(true).await {
                Err(e) if e.is_transient() => {
                    let pause = crate::deadline::backoff(attempt);
                    if !self.deadline.has_room_for(pause) {
                        return Err(e);
                    }
                    self.tell(&format!(
                        "retrying login: {} (attempt {})",
                        e.message,
                        attempt + 1
                    ));
                    tokio::time::sleep(pause).await;
                }
                other => return other,
            }
        }
    }

    async fn login_attempt(&self, retry_unreachable: bool) -> Result<Secret, ApiError> {
        let started = Instant::now();
        let body = json!({
            "username": self.shared.credentials.username,
            "password": self.shared.credentials.password.expose(),
        });
        let response = self
            .post(
                "login",
                &self.url("/api/v1/login"),
                &body,
                None,
                retry_unreachable,
                self.wait(true),
            )
            .await?;
        let status = response.status().as_u16();
        if status != 200 {
            let bytes = crate::transport::read_error_body(response, "login", self.wait(true)).await;
            let message = self.scrub(&crate::transport::error_message(&bytes, status));
            tracing::info!(rpc = "login", status, ms = started.elapsed().as_millis() as u64, error = %message, "edge connect call");
            return Err(ApiError::from_status("login", status, &message));
        }
        let bytes = crate::transport::read_body(response, "login", self.wait(true)).await?;
        tracing::info!(
            rpc = "login",
            status,
            ms = started.elapsed().as_millis() as u64,
            "edge connect call"
        );
        #[derive(serde::Deserialize)]
        struct TokenBody {
            token: String,
        }
        let token: TokenBody = serde_json::from_slice(&bytes)
            .map_err(|_| ApiError::protocol("login", "login answer has no token"))?;
        if token.token.is_empty() {
            return Err(ApiError::protocol(
                "login",
                "login answer has an empty token",
            ));
        }
        self.shared.logins.fetch_add(1, Ordering::Relaxed);
        let token = Secret::new(token.token);
        if let Some(store) = &self.store {
            store.save(&token);
        }
        Ok(token)
    }

    /// Logs in unless a login of this client was already refused.
    async fn login_once_refused(&self) -> Result<Secret, ApiError> {
        if let Some(e) = self
            .shared
            .refused_login
            .lock()
            .ok()
            .and_then(|r| r.clone())
        {
            return Err(e);
        }
        let result = self.login_retrying().await;
        if let Err(e) = &result {
            // Any final refusal (credentials, a redirect, an unreachable host after its bound):
            // the calls running alongside must not each repeat it.
            if !e.is_transient() {
                if let Ok(mut slot) = self.shared.refused_login.lock() {
                    *slot = Some(e.clone());
                }
            }
        }
        result
    }

    /// A token: the one in hand, a cached one, or a fresh login.
    pub(crate) async fn token(&self) -> Result<Secret, ApiError> {
        let mut slot = self.shared.token.lock().await;
        if let Some(t) = slot.as_ref() {
            return Ok(t.clone());
        }
        let token = match self.store.as_ref().and_then(|s| s.load()) {
            Some(t) => t,
            None => self.shared_login(None).await?,
        };
        *slot = Some(token.clone());
        Ok(token)
    }

    /// Logs in, unless another process does so at the same time: then waits for its token in
    /// the store (at most one request timeout) instead of logging in as well. `refused` is a
    /// token the server just refused, which a store entry must differ from to be used.
    async fn shared_login(&self, refused: Option<&Secret>) -> Result<Secret, ApiError> {
        let Some(store) = &self.store else {
            return self.login_once_refused().await;
        };
        let fresh = || store.load().filter(|t| Some(t) != refused);
        let waited_since = Instant::now();
        loop {
            match store.try_login_lock() {
                LoginLock::Acquired(_guard) => {
                    // Someone may have finished logging in between our look and the lock.
                    if let Some(t) = fresh() {
                        return Ok(t);
                    }
                    return self.login_once_refused().await;
                }
                LoginLock::Unavailable => return self.login_once_refused().await,
                LoginLock::Busy => {
                    if let Some(t) = fresh() {
                        return Ok(t);
                    }
                    if waited_since.elapsed() >= self.shared.request_timeout
                        || !self.deadline.has_room_for(Duration::from_millis(25))
                    {
                        return self.login_once_refused().await;
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        }
    }

    /// Replaces a refused token by a fresh login (unless another task already did).
    pub(crate) async fn renew_token(&self, refused: &Secret) -> Result<Secret, ApiError> {
        let mut slot = self.shared.token.lock().await;
        if let Some(current) = slot.as_ref() {
            if current != refused {
                return Ok(current.clone());
            }
        }
        if let Some(store) = &self.store {
            store.discard(refused);
        }
        let token = self.shared_login(Some(refused)).await?;
        *slot = Some(token.clone());
        Ok(token)
    }
}
