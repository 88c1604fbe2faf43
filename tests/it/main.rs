//! The provider's integration tests: one binary, a module per area. The important ones run the
//! built `garm-provider-edge-connect` as GARM does (bare environment, bootstrap JSON on stdin)
//! against the simulator over real HTTP on 127.0.0.1; `support` is their shared harness.

mod support;

mod cli_check;
mod docs_links;
mod extra_specs_schema;
mod garm_errors;
mod garm_lifecycle;
mod logging;
mod reliability_faults;
mod reliability_load;
mod runner_env_contract;
mod scale;
mod tls;
