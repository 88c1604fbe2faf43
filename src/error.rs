//! The provider's error type and its mapping to GARM exit codes.

use edge_connect::{ApiError, SetupError};

use crate::garm::{exit, ProtocolError};

/// Everything that can make a provider command fail.
///
/// Each variant carries one human-readable line: it is printed on stderr, which GARM stores as
/// the instance's `provider_fault`, so it must name the cause and never hold a secret.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The instance does not exist (exit 30).
    #[error("{0}")]
    NotFound(String),
    /// An instance with this name already exists (exit 31).
    #[error("{0}")]
    Duplicate(String),
    /// Bad input from GARM or the user: environment, stdin, arguments, extra specs.
    #[error("{0}")]
    Input(String),
    /// The provider config or credentials are unusable.
    #[error("{0}")]
    Config(String),
    /// Edge Connect refused or failed a call.
    #[error("{0}")]
    EdgeConnect(#[from] ApiError),
    /// Local I/O and anything else.
    #[error("{0}")]
    Other(String),
    /// The user stopped a CLI command (Ctrl-C), exit 130 as shells report SIGINT.
    #[error("{0}")]
    Interrupted(String),
}

/// Exit code of a CLI command stopped by Ctrl-C (128 + SIGINT, what a shell reports).
pub const EXIT_INTERRUPTED: u8 = 130;

impl From<SetupError> for Error {
    fn from(e: SetupError) -> Self {
        Error::Config(e.0)
    }
}

impl From<ProtocolError> for Error {
    fn from(e: ProtocolError) -> Self {
        Error::Input(e.0)
    }
}

impl Error {
    /// Bad input.
    pub fn input(msg: impl Into<String>) -> Self {
        Error::Input(msg.into())
    }

    /// Bad config.
    pub fn config(msg: impl Into<String>) -> Self {
        Error::Config(msg.into())
    }

    /// The GARM exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::NotFound(_) => exit::NOT_FOUND,
            Error::Duplicate(_) => exit::DUPLICATE,
            Error::Interrupted(_) => EXIT_INTERRUPTED,
            _ => exit::FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_garm_provider_common() {
        assert_eq!(Error::NotFound("x".into()).exit_code(), 30);
        assert_eq!(Error::Duplicate("x".into()).exit_code(), 31);
        assert_eq!(Error::input("x").exit_code(), 1);
        assert_eq!(Error::config("x").exit_code(), 1);
    }
}
