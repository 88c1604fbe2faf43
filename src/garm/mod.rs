//! The GARM external-provider protocol, and nothing else: the environment GARM sets (one typed
//! [`Request`]) and the bootstrap JSON on stdin, the instance JSON on stdout and the exit codes.
//! A leaf: it imports nothing of the crate and nothing of the client (its secrets are the
//! workspace's one `secret::Secret`), so the front doors and the provider depend on it, never
//! the reverse.

pub mod bootstrap;
pub mod env;
pub mod error;
pub mod exit;
pub mod instance;

pub use bootstrap::BootstrapInstance;
pub use env::{read_stdin, GarmCommand, Request};
pub use error::ProtocolError;
pub use instance::{Address, InstanceStatus, ProviderInstance};
