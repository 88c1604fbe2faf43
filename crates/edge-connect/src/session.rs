//! The Edge Connect HTTP client: login, unary calls, NDJSON streams, re-login on 401.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::error::ApiError;
use crate::options::{ClientOptions, Credentials, SetupError};
use crate::secret::Secret;
use crate::token_store::{LoginLock, TokenStore};

/// How a streamed AppInst operation ended without an error trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The stream ended normally; the last progress message is kept.
    Completed(String),
    /// The MC gave up waiting (`Timed out while work still in progress ...`): the work may still
    /// finish, so the caller must look at the object's state.
    StillInProgress(String),
}

/// A client for one Edge Connect URL, region and user.
pub struct Client {
    http: reqwest::Client,
    base: reqwest::Url,
    region: String,
    credentials: Credentials,
    request_timeout: Duration,
    token: Mutex<Option<Secret>>,
    /// A refused login, remembered so that concurrent calls of one command do not each try
    /// again (the MC delays every wrong-password answer by seconds and locks accounts).
    refused_login: std::sync::Mutex<Option<ApiError>>,
    store: Option<Box<dyn TokenStore>>,
    /// What is known about the server (see [`crate::ServerFacts`]).
    facts: std::sync::Mutex<crate::ServerFacts>,
    logins: AtomicUsize,
    requests: AtomicUsize,
}

impl Client {
    /// Builds a client; nothing is sent until the first call.
    pub fn new(config: &ClientOptions, credentials: Credentials) -> Result<Self, SetupError> {
        let base = reqwest::Url::parse(config.url.trim_end_matches('/'))
            .map_err(|e| SetupError(format!("edge_connect.url: {e}")))?;
        let request_timeout = config.request_timeout;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(request_timeout.min(Duration::from_secs(15)))
            .user_agent(concat!(
                "garm-provider-edge-connect/",
                env!("CARGO_PKG_VERSION")
            ))
            .use_rustls_tls();
        if let Some(path) = &config.ca_bundle {
            let pem = std::fs::read(path).map_err(|e| {
                SetupError(format!(
                    "edge_connect.ca_bundle: cannot read {}: {e}",
                    path.display()
                ))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                SetupError(format!("edge_connect.ca_bundle: {}: {e}", path.display()))
            })?;
            if certs.is_empty() {
                return Err(SetupError(format!(
                    "edge_connect.ca_bundle: {} holds no PEM certificate",
                    path.display()
                )));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if config.insecure_skip_verify {
            tracing::warn!(
                "edge_connect.insecure_skip_verify is set: TLS certificates are NOT verified"
            );
            builder = builder.danger_accept_invalid_certs(true);
        }
        let http = builder
            .build()
            .map_err(|e| SetupError(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            base,
            region: config.region.clone(),
            credentials,
            request_timeout,
            token: Mutex::new(None),
            refused_login: std::sync::Mutex::new(None),
            store: None,
            facts: std::sync::Mutex::new(crate::ServerFacts::default()),
            logins: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
        })
    }

    /// Uses a token store (cache) for tokens across processes; facts it kept about the server
    /// are taken over while they are fresh.
    pub fn with_token_store(mut self, store: Box<dyn TokenStore>) -> Self {
        if let Some(facts) = store.load_facts().filter(crate::ServerFacts::is_fresh) {
            *self.facts_slot() = facts;
        }
        self.store = Some(store);
        self
    }

    pub(crate) fn token_store(&self) -> Option<&dyn TokenStore> {
        self.store.as_deref()
    }

    pub(crate) fn facts_slot(&self) -> std::sync::MutexGuard<'_, crate::ServerFacts> {
        self.facts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Number of logins this client made.
    pub fn logins(&self) -> usize {
        self.logins.load(Ordering::Relaxed)
    }

    /// Number of HTTP requests this client sent (logins included).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// The configured region.
    pub fn region(&self) -> &str {
        &self.region
    }

    fn url(&self, path: &str) -> reqwest::Url {
        let mut url = self.base.clone();
        let joined = format!("{}{}", url.path().trim_end_matches('/'), path);
        url.set_path(&joined);
        url
    }

    /// Logs in with the configured credentials and returns a fresh token.
    pub async fn login(&self) -> Result<Secret, ApiError> {
        let started = Instant::now();
        self.requests.fetch_add(1, Ordering::Relaxed);
        let body = json!({
            "username": self.credentials.username,
            "password": self.credentials.password.expose(),
        });
        let response = tokio::time::timeout(
            self.request_timeout,
            self.http.post(self.url("/api/v1/login")).json(&body).send(),
        )
        .await
        .map_err(|_| ApiError::transport("login", "timed out"))?
        .map_err(|e| crate::transport::request_error("login", &e))?;
        let status = response.status().as_u16();
        let bytes = crate::transport::read_body(response, "login", self.request_timeout).await?;
        tracing::info!(
            rpc = "login",
            status,
            ms = started.elapsed().as_millis() as u64,
            "edge connect call"
        );
        if status != 200 {
            return Err(ApiError::from_status(
                "login",
                status,
                &crate::transport::error_message(&bytes, status),
            ));
        }
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
        self.logins.fetch_add(1, Ordering::Relaxed);
        let token = Secret::new(token.token);
        if let Some(store) = &self.store {
            store.save(&token);
        }
        Ok(token)
    }

    /// Logs in unless a login of this client was already refused.
    async fn login_once_refused(&self) -> Result<Secret, ApiError> {
        if let Some(e) = self.refused_login.lock().ok().and_then(|r| r.clone()) {
            return Err(e);
        }
        let result = self.login().await;
        if let Err(e) = &result {
            if e.kind == crate::ApiErrorKind::Auth {
                if let Ok(mut slot) = self.refused_login.lock() {
                    *slot = Some(e.clone());
                }
            }
        }
        result
    }

    /// A token: the one in hand, a cached one, or a fresh login.
    async fn token(&self) -> Result<Secret, ApiError> {
        let mut slot = self.token.lock().await;
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
                    if waited_since.elapsed() >= self.request_timeout {
                        return self.login_once_refused().await;
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        }
    }

    /// Replaces a refused token by a fresh login (unless another task already did).
    async fn renew_token(&self, refused: &Secret) -> Result<Secret, ApiError> {
        let mut slot = self.token.lock().await;
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

    /// Sends `{"region": ..., wrapper: object}` to `/api/v1/auth/ctrl/<rpc>`; logs in again once
    /// when the token is refused. Returns the response with status 200, or the error.
    async fn send(
        &self,
        rpc: &str,
        wrapper: &str,
        object: &Value,
    ) -> Result<reqwest::Response, ApiError> {
        let body = json!({ "region": self.region, wrapper: object });
        let url = self.url(&format!("/api/v1/auth/ctrl/{rpc}"));
        let mut token = self.token().await?;
        let mut relogged = false;
        loop {
            let started = Instant::now();
            self.requests.fetch_add(1, Ordering::Relaxed);
            let response = tokio::time::timeout(
                self.request_timeout,
                self.http
                    .post(url.clone())
                    .bearer_auth(token.expose())
                    .json(&body)
                    .send(),
            )
            .await
            .map_err(|_| ApiError::transport(rpc, "timed out waiting for the answer"))?
            .map_err(|e| crate::transport::request_error(rpc, &e))?;
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
            let bytes = crate::transport::read_body(response, rpc, self.request_timeout).await?;
            let message = crate::transport::error_message(&bytes, status);
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
        let response = self.send(rpc, wrapper, object).await?;
        crate::transport::read_body(response, rpc, self.request_timeout).await?;
        Ok(())
    }

    /// A Show call: every `{"data": ...}` line, parsed as `T`. An empty body means no match.
    pub async fn show<T: DeserializeOwned>(
        &self,
        rpc: &str,
        wrapper: &str,
        filter: &Value,
    ) -> Result<Vec<T>, ApiError> {
        self.show_where(rpc, wrapper, filter, None, |_| true).await
    }

    /// A Show call that keeps only the objects `keep` accepts. Lines are parsed straight into `T`
    /// as they arrive and dropped unless kept, so memory follows what is kept, not the size of
    /// the organization's inventory. With `needle`, a data line that does not contain those bytes
    /// is dropped without being parsed at all (a quick pre-filter for `keep`, which must reject
    /// every object whose line lacks the needle).
    pub async fn show_where<T: DeserializeOwned>(
        &self,
        rpc: &str,
        wrapper: &str,
        filter: &Value,
        needle: Option<&[u8]>,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let finder = needle.map(memchr::memmem::Finder::new);
        let mut response = self.send(rpc, wrapper, filter).await?;
        let mut items = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut take = |line: &[u8]| -> Result<(), ApiError> {
            // Only data lines are skipped: a `result` trailer must always be read.
            if let Some(finder) = &finder {
                if line.starts_with(b"{\"data\"") && finder.find(line).is_none() {
                    return Ok(());
                }
            }
            if let Some(item) = crate::lines::parse_typed_line::<T>(rpc, line)? {
                if keep(&item) {
                    items.push(item);
                }
            }
            Ok(())
        };
        while let Some(chunk) =
            crate::transport::next_chunk(&mut response, rpc, self.request_timeout).await?
        {
            pending.extend_from_slice(&chunk);
            crate::lines::for_each_line(&mut pending, &mut take)?;
        }
        take(&pending)?;
        Ok(items)
    }

    /// A streamed AppInst operation: progress messages go to `progress` as they arrive; a
    /// `result` trailer becomes an error.
    pub async fn stream(
        &self,
        rpc: &str,
        wrapper: &str,
        object: &Value,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamEnd, ApiError> {
        let mut response = self.send(rpc, wrapper, object).await?;
        let mut buffer: Vec<u8> = Vec::new();
        let mut last = String::new();
        let mut timed_out = None;
        let mut handle_line = |line: &[u8], last: &mut String| -> Result<(), ApiError> {
            let data = crate::lines::parse_line(rpc, line)?;
            if let Some(message) = data.as_ref().and_then(crate::lines::progress_message) {
                tracing::debug!(rpc, message, "progress");
                progress(message);
                if message.starts_with("Timed out while work still in progress") {
                    timed_out = Some(message.to_string());
                }
                *last = message.to_string();
            }
            Ok(())
        };
        while let Some(chunk) =
            crate::transport::next_chunk(&mut response, rpc, self.request_timeout).await?
        {
            buffer.extend_from_slice(&chunk);
            crate::lines::for_each_line(&mut buffer, |line| handle_line(line, &mut last))?;
        }
        handle_line(&buffer, &mut last)?;
        Ok(match timed_out {
            Some(message) => StreamEnd::StillInProgress(message),
            None => StreamEnd::Completed(last),
        })
    }
}
