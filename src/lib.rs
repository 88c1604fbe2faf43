//! garm-provider-edge-connect: a GARM external provider for Deutsche Telekom Edge Connect.
//!
//! A command flows one way: GARM's environment and stdin (`garm`) or the CLI ([`front`])
//! become a `provider::Operation`; the one `pipeline` loads the [`config`], builds the
//! `edge_connect` client and the provider, which turns the operation into Edge Connect calls;
//! the front door prints the outcome as GARM expects. `docs/architecture.md` draws the layers.
//!
//! Only what the binary and the integration tests need is public: the front doors, the config,
//! the extra specs, the runner's pod and the site cache's configuration.

mod check;
pub mod config;
#[cfg(feature = "demo")]
pub mod demo;
mod error;
pub mod extra_specs;
pub mod front;
mod garm;
mod logging;
mod manifest_safety;
mod metrics;
mod naming;
mod object;
mod pipeline;
pub mod pod;
mod provider;
mod runner_env;
pub mod site_cache;
mod text;

/// The provider's version, as `GetVersion` prints it: the release tag a release build names in
/// `GARM_PROVIDER_VERSION` (`v0.1.0`, `v0.2.0-rc.1`); otherwise `v` and Cargo.toml's version,
/// with the git commit as semver build metadata when built from a git checkout
/// (`v0.1.0+abc1234`, still a valid semver version; see build.rs).
pub const VERSION: &str = concat!(
    env!("GARM_PROVIDER_VERSION"),
    env!("GARM_PROVIDER_BUILD_METADATA")
);
