//! The GARM external-provider protocol: environment, stdin, stdout shapes and exit codes.

pub mod bootstrap;
pub mod env;
pub mod instance;
pub mod mode;

pub use bootstrap::BootstrapInstance;
pub use env::{GarmCommand, GarmEnv, InterfaceVersion, SUPPORTED_INTERFACE_VERSIONS};
pub use instance::{Address, InstanceStatus, ProviderInstance};
