//! The provider's error: the four kinds a caller acts on, each with one human-readable line.
//!
//! A leaf: it imports nothing of the crate. Which exit code a kind gets is the front doors'
//! business (`front::exit_code`).

use edge_connect::ApiError;

/// Everything that can make a provider command fail.
///
/// The message is printed on stderr, which GARM stores as the instance's `provider_fault`, so
/// it names the cause and never holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The instance does not exist (GARM: exit 30).
    #[error("{0}")]
    NotFound(String),
    /// An instance with this name already exists (GARM: exit 31).
    #[error("{0}")]
    Duplicate(String),
    /// The user stopped a CLI command (Ctrl-C).
    #[error("{0}")]
    Interrupted(String),
    /// Anything else: bad input or config, a refusal or failure of Edge Connect, local I/O.
    #[error("{message}")]
    Failed {
        /// The line to print.
        message: String,
        /// The error it came from, when there is one (for the log and for callers that look
        /// deeper).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl Error {
    /// A failure described by `message` alone.
    pub fn failed(message: impl Into<String>) -> Self {
        Error::Failed {
            message: message.into(),
            source: None,
        }
    }

    /// A failure of `source`, described by `message` (which should include what it says).
    pub fn caused_by(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Failed {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A failure described by `message` that leaves part of the runner behind ([`LeftBehind`]).
    pub fn left_behind(message: impl Into<String>) -> Self {
        Error::caused_by(message, LeftBehind)
    }

    /// Whether this failure leaves part of the runner behind ([`Error::left_behind`]).
    pub fn leaves_something(&self) -> bool {
        std::error::Error::source(self).is_some_and(|s| s.is::<LeftBehind>())
    }
}

/// The mark of a failure that leaves part of a runner on Edge Connect for a later DeleteInstance
/// (a rollback that could not finish, an AppInst its site's CRM holds). Only the GARM door knows
/// that GARM runs that DeleteInstance, and says so; a person's door says what it did itself.
#[derive(Debug, thiserror::Error)]
#[error("part of the runner is left on Edge Connect")]
pub struct LeftBehind;

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::caused_by(e.to_string(), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_its_source_and_prints_its_message() {
        let io = std::io::Error::other("disk full");
        let e = Error::caused_by("cannot write the log: disk full", io);
        assert_eq!(e.to_string(), "cannot write the log: disk full");
        let source = std::error::Error::source(&e).map(|s| s.to_string());
        assert_eq!(source.as_deref(), Some("disk full"));
        assert!(std::error::Error::source(&Error::failed("x")).is_none());
        assert!(Error::left_behind("x").leaves_something());
        assert!(!Error::failed("x").leaves_something());
        assert!(!Error::caused_by("x", std::io::Error::other("y")).leaves_something());
    }
}
