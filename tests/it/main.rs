//! The provider's integration tests: one binary, a module per area. The important ones run the
//! built `garm-provider-edge-connect` as GARM does (bare environment, bootstrap JSON on stdin)
//! against the simulator over real HTTP on 127.0.0.1; `support` is their shared harness.

mod support;

mod check_leftovers;
mod cli_check;
mod cli_table;
mod create_decisions;
mod deploy_manifests;
mod docker_pods;
mod docs_facts;
mod docs_links;
mod extra_specs_schema;
mod failed_over;
mod fidelity;
mod first_run;
mod garm_errors;
mod garm_lifecycle;
mod hardening_client;
mod helm_chart;
mod input_bounds;
mod layers;
mod logging;
mod metrics;
mod pool_verdicts;
mod readme_reasons;
mod reliability_faults;
mod reliability_load;
mod robustness;
mod runner_entrypoint;
mod runner_env_contract;
/// The fake GARM and stub runners of the entrypoint tests.
mod runner_harness;
mod scale;
mod scale_set_pool_ids;
mod secrets_scrubbed;
mod site_cache;
mod site_cache_mirror;
mod start_failures;
mod terminal_text;
mod tls;
mod trial;
