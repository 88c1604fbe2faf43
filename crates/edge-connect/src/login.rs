//! Logging in: with retries of transient failures, one refusal shared by every call of the
//! command, and one login shared by processes starting together (through the token cache).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::Client;
use crate::error::{ApiError, Retries};
use crate::rpc::Rpc;
use crate::token_cache::LoginLock;
use crate::transport::{read_body, MAX_UNARY_BODY};
use secret::Secret;

impl Client {
    /// Logs in once with the configured credentials and returns a fresh token: one attempt, no
    /// retry, for diagnostics (`check`) that must tell the truth at once. The calls log in by
    /// themselves, with retries.
    pub async fn login(&self) -> Result<Secret, ApiError> {
        let token = self.login_attempt(false).await?;
        // Masked in the command's output from now on: a JWT is masked by its shape anyway, any
        // other token only because it is known.
        self.scrubber.protect_token(&token);
        Ok(token)
    }

    async fn login_attempt(&self, retry_unreachable: bool) -> Result<Secret, ApiError> {
        let body = crate::transport::json_body(
            Rpc::Login,
            &json!({
                "username": self.shared.credentials.username,
                "password": self.shared.credentials.password.expose(),
            }),
        )?;
        let wait = self.wait(true);
        let response = self
            .post(Rpc::Login, body, None, retry_unreachable, wait)
            .await?;
        let mut bytes = Vec::new();
        read_body(response, Rpc::Login, wait, MAX_UNARY_BODY, &mut bytes).await?;
        #[derive(serde::Deserialize)]
        struct TokenBody {
            token: String,
        }
        let token: TokenBody = serde_json::from_slice(&bytes)
            .map_err(|_| ApiError::protocol(Rpc::Login, "login answer has no token"))?;
        if token.token.is_empty() {
            return Err(ApiError::protocol(
                Rpc::Login,
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

    /// Logs in unless a login of this client was already refused, retrying transient failures
    /// (transport, 429, 5xx, no answer in time) with backoff within the deadline, and an
    /// unreachable host for `connect_retry`; a refused login (wrong credentials, two-factor
    /// authentication required) is final at once.
    async fn login_once_refused(&self) -> Result<Secret, ApiError> {
        if let Some(e) = self.shared.refused_login.get() {
            return Err(e.clone());
        }
        let mut retries = Retries::within(self.deadline);
        let again = |e: ApiError, attempts| {
            retries.after(e, attempts, |e, _| {
                self.tell(&format!(
                    "retrying login: {} (attempt {})",
                    e.message,
                    attempts + 1
                ))
            })
        };
        let result = crate::deadline::retry(async || self.login_attempt(true).await, again).await;
        // Any final refusal (credentials, a redirect, an unreachable host after its bound): the
        // calls running alongside must not each repeat it.
        if let Some(e) = result.as_ref().err().filter(|e| !e.is_transient()) {
            _ = self.shared.refused_login.set(e.clone());
        }
        result
    }

    /// A token: the one in hand, a cached one, or a fresh login. `refused` is a token the
    /// server just refused: it is discarded and replaced (unless another task already did).
    pub(crate) async fn token(&self, refused: Option<&Secret>) -> Result<Secret, ApiError> {
        let mut slot = self.shared.token.lock().await;
        if let Some(t) = slot.as_ref().filter(|t| Some(*t) != refused) {
            return Ok(t.clone());
        }
        if let (Some(store), Some(refused)) = (&self.store, refused) {
            store.discard(refused);
        }
        let token = self.shared_login(refused).await?;
        // Learnt from a login or the token cache: masked from now on (see `login`).
        self.scrubber.protect_token(&token);
        *slot = Some(token.clone());
        Ok(token)
    }

    /// A cached token, else a login, unless another process logs in at the same time: then
    /// waits for its token in the cache (at most one request timeout) instead of logging in as
    /// well. `refused` is a token the server just refused, which a cached one must differ from.
    async fn shared_login(&self, refused: Option<&Secret>) -> Result<Secret, ApiError> {
        let Some(store) = &self.store else {
            return self.login_once_refused().await;
        };
        let fresh = || store.load().filter(|t| Some(t) != refused);
        let waited_since = Instant::now();
        let pause = Duration::from_millis(25);
        loop {
            if let Some(t) = fresh() {
                return Ok(t);
            }
            match store.try_login_lock() {
                LoginLock::Acquired(_guard) => {
                    // Someone may have finished logging in between our look and the lock.
                    return match fresh() {
                        Some(t) => Ok(t),
                        None => self.login_once_refused().await,
                    };
                }
                LoginLock::Busy
                    if waited_since.elapsed() < self.shared.options.request_timeout
                        && self.deadline.has_room_for(pause) =>
                {
                    tokio::time::sleep(pause).await
                }
                _ => return self.login_once_refused().await,
            }
        }
    }
}
