//! What the protocol layer can refuse: GARM's environment or stdin is not what the external
//! provider interface promises. The front door words it: echoing what GARM sent, and keeping the
//! values out of a parse error, is the writer's job, not the protocol's.

/// A malformed GARM input (environment, stdin).
#[derive(Debug)]
pub enum ProtocolError {
    /// In words that quote nothing GARM sent.
    Refused(String),
    /// `GARM_COMMAND` names no command GARM has (as sent).
    UnknownCommand(String),
    /// `GARM_INTERFACE_VERSION` names a version this provider does not speak (as sent).
    UnsupportedVersion(String),
    /// The bootstrap params do not parse: where (a key, or nothing for the text itself) and
    /// serde's error, whose message may quote a secret value.
    Bootstrap(Option<String>, serde_json::Error),
}

impl ProtocolError {
    /// A refusal with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ProtocolError::Refused(message.into())
    }
}
