//! garm-provider-edge-connect: a GARM external provider for Deutsche Telekom Edge Connect.
//!
//! The crate holds two programs that share this library: the provider itself
//! (`garm-provider-edge-connect`) and an in-memory Edge Connect simulator (`edge-connect-sim`)
//! used by the tests, the demo and local trials.
//!
//! A command flows one way: GARM's environment and stdin ([`garm`]) or the CLI ([`cli`]) become a
//! [`provider::Operation`]; the [`provider`] turns it into Edge Connect calls through the
//! [`edge_connect`] client; the outcome is printed as GARM expects.

pub mod check;
pub mod config;
#[cfg(feature = "demo")]
pub mod demo;
pub mod error;
pub mod extra_specs;
pub mod front;
pub mod garm;
pub mod logging;
pub mod manifest_safety;
pub mod naming;
pub mod pipeline;
pub mod provider;
pub mod runner_env;
pub mod text;

/// The provider's version, as `GetVersion` prints it: `v0.1.0`, with the git commit as semver
/// build metadata when built from a git checkout (`v0.1.0+abc1234`, still a valid semver
/// version; see build.rs).
pub const VERSION: &str = concat!(
    "v",
    env!("CARGO_PKG_VERSION"),
    env!("GARM_PROVIDER_BUILD_METADATA")
);
