//! The GARM external-provider protocol, and nothing else: the environment GARM sets and the
//! bootstrap JSON on stdin (one typed [`Request`]), the instance JSON on stdout and the exit
//! codes. A leaf: it imports nothing of the crate and nothing of the client, so the front doors
//! and the provider depend on it, never the reverse.

pub mod bootstrap;
pub mod env;
pub mod error;
pub mod exit;
pub mod instance;

pub use bootstrap::{BootstrapInstance, Hidden};
pub use env::{GarmCommand, Request};
pub use error::ProtocolError;
pub use instance::{Address, InstanceStatus, ProviderInstance};
