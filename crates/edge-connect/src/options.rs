//! What a [`Client`](crate::Client) needs to know, independent of any config file format: the
//! provider builds these from its own config.

use std::path::PathBuf;
use std::time::Duration;

use crate::secret::Secret;

/// Where and how to reach one Master Controller.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Base URL of the console / Master Controller (`https://host`, no `/api/v1`).
    pub url: String,
    /// Region every controller call is sent to.
    pub region: String,
    /// Bound for one HTTP request, and for the silence between two chunks of an answer.
    pub request_timeout: Duration,
    /// Extra PEM CA certificates to trust.
    pub ca_bundle: Option<PathBuf>,
    /// Do not verify TLS certificates (tests against self-signed servers only).
    pub insecure_skip_verify: bool,
}

/// Login credentials.
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
