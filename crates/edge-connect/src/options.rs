//! What a [`Client`](crate::Client) needs to know, independent of any config file format: the
//! provider builds these from its own config.

use std::path::PathBuf;
use std::time::Duration;

use secret::Secret;

/// Where and how to reach one Master Controller. No `Debug`: `url` may hold a password (which
/// [`Client::new`](crate::Client::new) refuses), so the options are never printed whole.
#[derive(Clone)]
pub struct ClientOptions {
    /// Base URL of the console / Master Controller (`https://host`, no `/api/v1`).
    pub url: String,
    /// Region every controller call is sent to.
    pub region: String,
    /// Bound for the wait for an answer's headers, and for the silence between two chunks of a
    /// unary or Show answer. (CreateAppInst and DeleteAppInst streams, headers included, are not
    /// closed for silence: closing one makes the controller undo the work; only the client's
    /// [`Deadline`](crate::Deadline) ends them.)
    pub request_timeout: Duration,
    /// How long a host that cannot be reached at all (connection refused, name not resolved)
    /// is retried before the call fails with [`ApiErrorKind::Unreachable`](crate::ApiErrorKind).
    /// Short on purpose: an unreachable address is usually a configuration error, and the
    /// operator should see it in seconds, not after the whole deadline.
    pub connect_retry: Duration,
    /// Extra PEM CA certificates to trust.
    pub ca_bundle: Option<PathBuf>,
    /// Do not verify TLS certificates (tests against self-signed servers only).
    pub insecure_skip_verify: bool,
}

/// Default for [`ClientOptions::connect_retry`].
pub const DEFAULT_CONNECT_RETRY: Duration = Duration::from_secs(20);

/// Login credentials. `Debug` shows the user name and `***` for the password.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// User name or e-mail (or API key id).
    pub username: String,
    /// Password (or API key).
    pub password: Secret,
}

/// The client could not be built from its options (bad URL, unreadable CA bundle): a message
/// naming the option, for the caller to prefix with where the option came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);
