//! What the protocol layer can refuse: GARM's environment or stdin is not what the external
//! provider interface promises.

/// A malformed GARM input (environment, stdin), as one line that names the variable or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

impl ProtocolError {
    /// A refusal with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ProtocolError(message.into())
    }
}
