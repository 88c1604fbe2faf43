//! The GARM external-provider protocol, and nothing else: the environment GARM sets, the
//! bootstrap JSON on stdin, the instance JSON on stdout and the exit codes. It imports nothing
//! of the provider above it, so the front doors and the provider depend on it, never the reverse.

pub mod bootstrap;
pub mod env;
pub mod error;
pub mod exit;
pub mod instance;

pub use bootstrap::BootstrapInstance;
pub use error::ProtocolError;
pub use instance::{Address, InstanceStatus, ProviderInstance};
