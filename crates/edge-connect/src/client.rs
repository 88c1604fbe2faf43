//! The client itself: what it is built from, what its calls share (connection pool, token,
//! counters) and its deadline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use crate::deadline::Deadline;
use crate::error::ApiError;
use crate::options::{ClientOptions, Credentials, SetupError};
use crate::proxy::ProxyChoice;
use crate::rpc::Rpc;
use crate::scrub::Scrubber;
use crate::token_cache::TokenCache;
use crate::transport::{host_port, Wait};
use secret::Secret;
use strum::EnumCount as _;

/// A hook that is told, in one line, about each retry the client makes (so that a CLI can show
/// "retrying login: ... (attempt 3)" instead of sitting silent).
pub type RetryReport = Arc<dyn Fn(&str) + Send + Sync>;

/// A hook that is told about each request the client sent: its RPC, the HTTP status of the
/// answer (`None` when none came: unreachable, reset, timed out) and how long it took (the
/// provider's metrics, docs/operations.md "Metrics").
pub type CallReport = Arc<dyn Fn(Rpc, Option<u16>, Duration) + Send + Sync>;

/// A client for one Edge Connect URL, region and user, bound to one [`Deadline`]: every call,
/// retry, login and wait ends by it. [`Client::until`] gives the same client (same connections,
/// token and counters) under another deadline.
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    pub(crate) store: Option<Arc<TokenCache>>,
    pub(crate) report: Option<RetryReport>,
    pub(crate) calls: Option<CallReport>,
    pub(crate) deadline: Deadline,
    /// The command's scrubber: the session token is added to it when it is learnt.
    pub(crate) scrubber: Scrubber,
}

/// What every handle of one client shares.
pub(crate) struct Shared {
    pub(crate) http: reqwest::Client,
    pub(crate) base: reqwest::Url,
    pub(crate) options: ClientOptions,
    pub(crate) credentials: Credentials,
    /// Since when every connection attempt failed (reset by any answer). Shared by all calls, so
    /// that a rollback after an unreachable create does not wait out the bound again.
    pub(crate) unreachable_since: std::sync::Mutex<Option<Instant>>,
    pub(crate) proxy: Option<ProxyChoice>,
    pub(crate) token: Mutex<Option<Secret>>,
    /// A login that failed for good, remembered so that concurrent calls of one command do not
    /// each try again (the MC delays every wrong-password answer by seconds and locks accounts).
    pub(crate) refused_login: OnceLock<ApiError>,
    pub(crate) logins: AtomicUsize,
    pub(crate) requests: AtomicUsize,
    /// The URL of each RPC, by its place in [`Rpc`], made at its first call: a RemoveAll posts
    /// hundreds of times to two URLs, and making one is a parse.
    pub(crate) urls: [OnceLock<reqwest::Url>; Rpc::COUNT],
}

impl Client {
    /// Builds a client; nothing is sent until the first call.
    ///
    /// Refused here: a URL with `user:password@`, a proxy environment that cannot be used, and
    /// a plain `http://` URL that the proxy environment would send through a proxy (the
    /// password and tokens would cross it unencrypted).
    ///
    /// `deadline` is the command's: every call of the client ends by it (see [`Client::until`]
    /// for cleanup work granted more time).
    pub fn new(
        config: &ClientOptions,
        credentials: Credentials,
        deadline: Deadline,
    ) -> Result<Self, SetupError> {
        // The parser's message does not repeat the URL, which may hold a password.
        let base = reqwest::Url::parse(config.url.trim_end_matches('/'))
            .map_err(|e| SetupError(format!("edge_connect.url: {e}")))?;
        if !base.username().is_empty() || base.password().is_some() {
            return Err(SetupError(
                "edge_connect.url: must not contain a user name or password (`user:password@`); put the credentials in credentials_file or EDP_EDGE_CONNECT_USERNAME/EDP_EDGE_CONNECT_PASSWORD".into(),
            ));
        }
        if base.host_str().is_none() {
            return Err(SetupError("edge_connect.url: has no host".into()));
        }
        let proxy = crate::proxy::choose(&base, &|name| std::env::var(name).ok())?;
        if let Some(p) = proxy.as_ref().filter(|_| base.scheme() == "http") {
            return Err(SetupError(format!(
                "edge_connect.url is plain http and {} sends it through the proxy {}: the password and tokens would cross it unencrypted; use https, or exempt {} in NO_PROXY",
                p.variable,
                p.address,
                base.host_str().unwrap_or("the host")
            )));
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.request_timeout.min(Duration::from_secs(15)))
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
        if let Some(p) = &proxy {
            let reqwest_proxy = reqwest::Proxy::all(p.url.as_str()).map_err(|_| {
                SetupError(format!(
                    "{}: not a usable proxy URL (value not shown)",
                    p.variable
                ))
            })?;
            builder = builder.proxy(reqwest_proxy);
            tracing::info!(proxy = %p.address, from = p.variable, "using a proxy for Edge Connect");
        }
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
            shared: Arc::new(Shared {
                http,
                base,
                options: config.clone(),
                credentials,
                unreachable_since: std::sync::Mutex::new(None),
                proxy,
                token: Mutex::new(None),
                refused_login: OnceLock::new(),
                logins: AtomicUsize::new(0),
                requests: AtomicUsize::new(0),
                urls: Default::default(),
            }),
            store: None,
            report: None,
            calls: None,
            deadline,
            scrubber: Scrubber::new(),
        })
    }

    /// Uses a token cache (if any) for tokens across processes.
    pub fn with_token_cache(mut self, cache: Option<TokenCache>) -> Self {
        self.store = cache.map(Arc::new);
        self
    }

    /// Adds the session token to `scrubber` as soon as it is learnt (a login, the token cache),
    /// so that the writers sharing it mask the token even where it is not JWT-shaped.
    pub fn with_scrubber(mut self, scrubber: Scrubber) -> Self {
        self.scrubber = scrubber;
        self
    }

    /// The scrubber given by [`Client::with_scrubber`] (one that masks only bearer tokens and
    /// JWT-shaped words otherwise).
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// Tells `report` about every retry the client makes by itself (login, unreachable host).
    pub fn with_retry_report(mut self, report: RetryReport) -> Self {
        self.report = Some(report);
        self
    }

    /// Tells `report` about every request sent (none when `None`).
    pub fn with_call_report(mut self, report: Option<CallReport>) -> Self {
        self.calls = report;
        self
    }

    pub(crate) fn report_call(&self, rpc: Rpc, status: Option<u16>, took: Duration) {
        if let Some(report) = &self.calls {
            report(rpc, status, took);
        }
    }

    /// This client (its connections, token and counters) under another deadline: a failed
    /// create's rollback runs its calls with `client.until(deadline.extended(grace))`.
    pub fn until(&self, deadline: Deadline) -> Client {
        Client {
            deadline,
            ..self.clone()
        }
    }

    /// The deadline every call of this client ends by.
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The proxy used for the Edge Connect URL, as `host:port` (never its credentials), or
    /// `None` for a direct connection.
    pub fn proxy(&self) -> Option<&str> {
        self.shared.proxy.as_ref().map(|p| p.address.as_str())
    }

    /// Number of logins this client made (all its handles together).
    pub fn logins(&self) -> usize {
        self.shared.logins.load(Ordering::Relaxed)
    }

    /// Number of HTTP requests this client sent (logins included; all its handles together).
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// The configured region.
    pub fn region(&self) -> &str {
        &self.shared.options.region
    }

    /// The URL `rpc` is posted to: the login's, or `/api/v1/auth/ctrl/<rpc>`, under the
    /// configured URL's path.
    pub(crate) fn url_of(&self, rpc: Rpc) -> &reqwest::Url {
        self.shared.urls[rpc as usize].get_or_init(|| {
            let mut url = self.shared.base.clone();
            let path = match rpc {
                Rpc::Login => "/api/v1/login".to_string(),
                _ => format!("/api/v1/auth/ctrl/{rpc}"),
            };
            url.set_path(&format!("{}{path}", url.path().trim_end_matches('/')));
            url
        })
    }

    /// Bounds for reading an answer: the silence bound (if `silence`) and the deadline.
    pub(crate) fn wait(&self, silence: bool) -> Wait {
        Wait {
            silence: silence.then_some(self.shared.options.request_timeout),
            deadline: self.deadline,
        }
    }

    pub(crate) fn tell(&self, line: &str) {
        tracing::warn!("{line}");
        if let Some(report) = &self.report {
            report(line);
        }
    }

    /// Where the connection goes, for "cannot connect" messages.
    pub(crate) fn destination(&self) -> String {
        let host = host_port(&self.shared.base);
        match &self.shared.proxy {
            Some(p) => format!("the proxy {} (for {host})", p.address),
            None => host,
        }
    }
}
