//! The Edge Connect HTTP client: login, unary calls, NDJSON streams, re-login on 401.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::error::ApiError;
use crate::options::{ClientOptions, Credentials, SetupError};
use crate::proxy::ProxyChoice;
use crate::secret::Secret;
use crate::token_store::{LoginLock, TokenStore};
use crate::transport::{Wait, MAX_LINE, MAX_SHOW_OBJECTS};

/// How a streamed AppInst operation ended without an error trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The stream ended normally; the last progress message is kept.
    Completed(String),
    /// The MC gave up waiting (`Timed out while work still in progress ...`): the work may still
    /// finish, so the caller must look at the object's state.
    StillInProgress(String),
}

/// A hook that is told, in one line, about each retry the client makes (so that a CLI can show
/// "retrying login: ... (attempt 3)" instead of sitting silent).
pub type RetryReport = Arc<dyn Fn(&str) + Send + Sync>;

/// At most this many login attempts when no deadline bounds the retries.
const LOGIN_ATTEMPTS_WITHOUT_DEADLINE: u32 = 4;

/// A client for one Edge Connect URL, region and user.
pub struct Client {
    http: reqwest::Client,
    base: reqwest::Url,
    /// `host:port` of the URL, for messages (never the path or query).
    host: String,
    region: String,
    credentials: Credentials,
    request_timeout: Duration,
    /// The command's deadline (from [`ClientOptions::command_timeout`]); a
    /// [`within_deadline`](crate::within_deadline) scope replaces it.
    deadline: Option<Instant>,
    connect_retry: Duration,
    /// Since when every connection attempt failed (reset by any answer). Shared by all calls, so
    /// that a rollback after an unreachable create does not wait out the bound again.
    unreachable_since: std::sync::Mutex<Option<Instant>>,
    proxy: Option<ProxyChoice>,
    report: Option<RetryReport>,
    /// Values that must not appear in any message, whatever a server or a library echoes.
    redact: Vec<String>,
    token: Mutex<Option<Secret>>,
    /// A login that failed for good, remembered so that concurrent calls of one command do not
    /// each try again (the MC delays every wrong-password answer by seconds and locks accounts).
    refused_login: std::sync::Mutex<Option<ApiError>>,
    store: Option<Box<dyn TokenStore>>,
    logins: AtomicUsize,
    requests: AtomicUsize,
}

/// The proxy (`host:port`, never its credentials) that a client for `url` would use under the
/// current process environment, or `None` for a direct connection. Errors are the ones
/// [`Client::new`] would return for the proxy environment.
pub fn proxy_for(url: &str) -> Result<Option<String>, SetupError> {
    let base = parse_url(url)?;
    Ok(crate::proxy::choose(&base, &env_var)?.map(|p| p.address))
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn parse_url(url: &str) -> Result<reqwest::Url, SetupError> {
    // The parser's message does not repeat the URL, which may hold a password.
    let base = reqwest::Url::parse(url.trim_end_matches('/'))
        .map_err(|e| SetupError(format!("edge_connect.url: {e}")))?;
    if !base.username().is_empty() || base.password().is_some() {
        return Err(SetupError(
            "edge_connect.url: must not contain a user name or password (`user:password@`); put the credentials in credentials_file or EDP_EDGE_CONNECT_USERNAME/EDP_EDGE_CONNECT_PASSWORD".into(),
        ));
    }
    if base.host_str().is_none() {
        return Err(SetupError("edge_connect.url: has no host".into()));
    }
    Ok(base)
}

/// `%XX` sequences decoded (lossily, for redaction only).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn host_port(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("?");
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

impl Client {
    /// Builds a client; nothing is sent until the first call.
    ///
    /// Refused here: a URL with `user:password@`, a proxy environment that cannot be used, and
    /// a plain `http://` URL that the proxy environment would send through a proxy (the
    /// password and tokens would cross it unencrypted).
    pub fn new(config: &ClientOptions, credentials: Credentials) -> Result<Self, SetupError> {
        let base = parse_url(&config.url)?;
        let host = host_port(&base);
        let proxy = crate::proxy::choose(&base, &env_var)?;
        if let Some(p) = &proxy {
            if base.scheme() == "http" {
                return Err(SetupError(format!(
                    "edge_connect.url is plain http and {} sends it through the proxy {}: the password and tokens would cross it unencrypted; use https, or exempt {} in NO_PROXY",
                    p.variable,
                    p.address,
                    base.host_str().unwrap_or("the host")
                )));
            }
        }
        let request_timeout = config.request_timeout;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(request_timeout.min(Duration::from_secs(15)))
            // A redirect would resend the login's password or an App's secrets to wherever the
            // Location points; the Master Controller never redirects an API call.
            .redirect(reqwest::redirect::Policy::none())
            // The proxy is decided above from the same environment, so that what `check`
            // reports is what is used.
            .no_proxy()
            .user_agent(concat!(
                "garm-provider-edge-connect/",
                env!("CARGO_PKG_VERSION")
            ))
            .use_rustls_tls();
        let mut redact = vec![credentials.password.expose().to_string()];
        if let Some(p) = &proxy {
            let reqwest_proxy = reqwest::Proxy::all(p.url.as_str()).map_err(|_| {
                SetupError(format!(
                    "{}: not a usable proxy URL (value not shown)",
                    p.variable
                ))
            })?;
            builder = builder.proxy(reqwest_proxy);
            if let Some(password) = p.url.password() {
                // As written in the variable and as sent (percent-decoded).
                redact.push(password.to_string());
                redact.push(percent_decode(password));
            }
            tracing::info!(proxy = %p.address, from = p.variable, "using a proxy for Edge Connect");
        }
        // Too short a value would blank out ordinary words of every message.
        redact.retain(|r| r.len() >= 4);
        redact.dedup();
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
            host,
            region: config.region.clone(),
            credentials,
            request_timeout,
            deadline: config.command_timeout.map(crate::deadline::instant_after),
            connect_retry: config.connect_retry,
            unreachable_since: std::sync::Mutex::new(None),
            proxy,
            report: None,
            redact,
            token: Mutex::new(None),
            refused_login: std::sync::Mutex::new(None),
            store: None,
            logins: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
        })
    }

    /// Uses a token store (cache) for tokens across processes.
    pub fn with_token_store(mut self, store: Box<dyn TokenStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Ends every call by `deadline` (replacing [`ClientOptions::command_timeout`]); a
    /// [`within_deadline`](crate::within_deadline) scope still takes precedence.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Tells `report` about every retry the client makes by itself (login, unreachable host).
    pub fn with_retry_report(mut self, report: RetryReport) -> Self {
        self.report = Some(report);
        self
    }

    /// The proxy used for the Edge Connect URL, as `host:port` (never its credentials), or
    /// `None` for a direct connection.
    pub fn proxy(&self) -> Option<&str> {
        self.proxy.as_ref().map(|p| p.address.as_str())
    }

    /// `host:port` of the Edge Connect URL.
    pub fn host(&self) -> &str {
        &self.host
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

    /// The deadline of the current call: the enclosing scope's, else the client's.
    fn deadline(&self) -> Option<Instant> {
        crate::deadline::scoped().or(self.deadline)
    }

    /// Bounds for reading an answer: the silence bound (if `silence`) and the deadline.
    fn wait(&self, silence: bool) -> Wait {
        Wait {
            silence: silence.then_some(self.request_timeout),
            deadline: self.deadline(),
        }
    }

    /// True when the deadline leaves room to sleep `pause` and try again.
    fn room_for(&self, pause: Duration) -> Option<bool> {
        self.deadline()
            .map(|d| d.saturating_duration_since(Instant::now()) > pause)
    }

    fn tell(&self, line: &str) {
        tracing::warn!("{line}");
        if let Some(report) = &self.report {
            report(line);
        }
    }

    /// `text` with every value that must stay secret replaced by `***`: a server may echo what
    /// it was sent, a library may print what it was given.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.redact {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }

    fn scrubbed(&self, mut e: ApiError) -> ApiError {
        e.message = self.scrub(&e.message);
        e
    }

    /// Where the connection goes, for "cannot connect" messages.
    fn destination(&self) -> String {
        match &self.proxy {
            Some(p) => format!("the proxy {} (for {})", p.address, self.host),
            None => self.host.clone(),
        }
    }

    /// Bounds for an AppInst operation stream, headers included (the controller sends the
    /// headers with the first progress line): the deadline only, silence is not timed; without
    /// a deadline, the silence bound, so that nothing waits forever.
    fn operation_wait(&self) -> Wait {
        let deadline = self.deadline();
        Wait {
            silence: deadline.is_none().then_some(self.request_timeout),
            deadline,
        }
    }

    /// One POST, retried (when `retry_unreachable`) only while the host cannot be reached at
    /// all (nothing was sent, so even a create may be repeated), for at most `connect_retry`
    /// since the first failure; the answer's headers must come within `headers`. Returns any
    /// answer but a redirect, which is refused.
    async fn post(
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
            self.requests.fetch_add(1, Ordering::Relaxed);
            let mut request = self.http.post(url.clone()).json(body);
            if let Some(token) = token {
                request = request.bearer_auth(token.expose());
            }
            match headers.run(rpc, "the answer", request.send()).await? {
                Ok(response) => {
                    if let Ok(mut since) = self.unreachable_since.lock() {
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
                    let since = match self.unreachable_since.lock() {
                        Ok(mut since) => *since.get_or_insert_with(Instant::now),
                        Err(_) => Instant::now(),
                    };
                    let spent = since.elapsed();
                    let message = crate::transport::transport_message(&e);
                    let detail =
                        self.scrub(message.strip_prefix("cannot connect: ").unwrap_or(&message));
                    let left = self.connect_retry.saturating_sub(spent);
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
                    } else if self.room_for(pause) == Some(false) {
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
                    let again = self
                        .room_for(pause)
                        .unwrap_or(attempt < LOGIN_ATTEMPTS_WITHOUT_DEADLINE);
                    if !again {
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
            "username": self.credentials.username,
            "password": self.credentials.password.expose(),
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
        let result = self.login_retrying().await;
        if let Err(e) = &result {
            // Any final refusal (credentials, a redirect, an unreachable host after its bound):
            // the calls running alongside must not each repeat it.
            if !e.is_transient() {
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
                    if waited_since.elapsed() >= self.request_timeout
                        || self.room_for(Duration::from_millis(25)) == Some(false)
                    {
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
    /// when the token is refused. Returns the response with status 200, or the error. `headers`
    /// bounds the wait for the answer's headers.
    async fn send(
        &self,
        rpc: &str,
        wrapper: &str,
        object: &Value,
        headers: Wait,
    ) -> Result<reqwest::Response, ApiError> {
        let body = json!({ "region": self.region, wrapper: object });
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
        keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let finder = needle.map(memchr::memmem::Finder::new);
        let skip = |line: &[u8]| finder.as_ref().is_some_and(|f| f.find(line).is_none());
        self.show_filtered(rpc, wrapper, filter, skip, keep).await
    }

    /// A Show call like [`Client::show_where`] whose data lines first go to `skip`: a line it
    /// returns true for is dropped unparsed. `skip` must only accept lines that `keep` would
    /// reject (e.g. a line whose leading key names an object the caller does not hold, see
    /// [`crate::leading_key_name`]); a `result` trailer never reaches it.
    pub async fn show_filtered<T: DeserializeOwned>(
        &self,
        rpc: &str,
        wrapper: &str,
        filter: &Value,
        mut skip: impl FnMut(&[u8]) -> bool,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let mut response = self.send(rpc, wrapper, filter, self.wait(true)).await?;
        let mut items = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut take = |line: &[u8]| -> Result<(), ApiError> {
            // Only data lines are skipped: a `result` trailer must always be read.
            if line.starts_with(b"{\"data\"") && skip(line) {
                return Ok(());
            }
            if let Some(item) = crate::lines::parse_typed_line::<T>(rpc, line)? {
                if keep(&item) {
                    if items.len() >= MAX_SHOW_OBJECTS {
                        return Err(ApiError::protocol(
                            rpc,
                            format!(
                                "answered more than {MAX_SHOW_OBJECTS} objects; not read further"
                            ),
                        ));
                    }
                    items.push(item);
                }
            }
            Ok(())
        };
        let wait = self.wait(true);
        while let Some(chunk) = crate::transport::next_chunk(&mut response, rpc, wait).await? {
            pending.extend_from_slice(&chunk);
            crate::lines::for_each_line(&mut pending, rpc, MAX_LINE, &mut take)?;
        }
        take(&pending)?;
        Ok(items)
    }

    /// A streamed AppInst operation: progress messages go to `progress` as they arrive; a
    /// `result` trailer becomes an error.
    ///
    /// Silence does not end the stream when a deadline applies: the controller runs the work
    /// under the request, and a client that hangs up makes it undo a create ("Deleting AppInst
    /// due to failure"). Only the deadline ends it; without one, the silence bound does, so that
    /// nothing waits forever.
    pub async fn stream(
        &self,
        rpc: &str,
        wrapper: &str,
        object: &Value,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamEnd, ApiError> {
        let mut response = self
            .send(rpc, wrapper, object, self.operation_wait())
            .await?;
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
        let wait = self.operation_wait();
        while let Some(chunk) = crate::transport::next_chunk(&mut response, rpc, wait).await? {
            buffer.extend_from_slice(&chunk);
            crate::lines::for_each_line(&mut buffer, rpc, MAX_LINE, |line| {
                handle_line(line, &mut last)
            })?;
        }
        handle_line(&buffer, &mut last)?;
        Ok(match timed_out {
            Some(message) => StreamEnd::StillInProgress(message),
            None => StreamEnd::Completed(last),
        })
    }
}
