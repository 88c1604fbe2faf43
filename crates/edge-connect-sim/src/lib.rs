//! An in-memory Edge Connect (EdgeXR Master Controller) that speaks the same REST API.
//!
//! The simulator behaves as the real controller does on the RPCs the provider uses, derived
//! from the EdgeXR source (docs/edge-connect-behaviours.md): password login with real HS512
//! JWTs, the MC's 401/403/404/405 answers, region checks, lenient JSON (case-insensitive keys,
//! unknown fields ignored), App create/delete/show with the controller's validation texts,
//! AppInst create/delete/show as NDJSON streams whose state changes are visible while they
//! run, both AppInst key generations, the CRM's reports on containers that cannot start, and
//! fault injection plus seeding under `/__sim/*` for tests.
//!
//! Start it in-process with [`spawn`] (own runtime, any test) or [`serve`] (current runtime),
//! or run the `edge-connect-sim` binary:
//!
//! ```no_run
//! use edge_connect_sim::{spawn, Fault, SimConfig};
//!
//! let sim = spawn(SimConfig::default()).expect("simulator starts");
//! println!("Edge Connect at {}", sim.url());
//! sim.inject(Fault::http_status("CreateAppInst", 503));
//! ```
//!
//! # Layers
//!
//! Each layer imports only from the layers below it (and from the leaf modules). The
//! workspace's `tests/it/layers.rs` reads this table and fails when an import points up or a
//! module is missing from it.
//!
//! | Layer | Modules | Job |
//! |---|---|---|
//! | 7 top | `server` | start/stop, the handles tests hold |
//! | 6 | `router` | routing, early faults, auth, dispatch, request log |
//! | 5 | `handlers` (`app`, `appinst`, `appinst_show`, `infra`, `auth`, `control`, `seed`) | one function per RPC |
//! | 4 | `context` | `Shared` (the running simulator) and `Call` (one request) |
//! | 3 | `domain` | validation, placement, state machines, manifest and YAML reading, templating, containers, ports, tokens |
//! | 2 | `protocol` | request decoding, reply encoding, errors, NDJSON streams |
//! | 1 | `model` | objects, enums, store, inventory, Show filters |
//! | leaf | `config`, `clock`, `faults`, `reqlog`, `gojson`, `trial_config` | configuration, time and ids, fault queue, request log, Go's JSON encoding, a provider config for trials |
//!
//! # Behaviours verified in the EdgeXR source
//!
//! | docs/edge-connect-behaviours.md | Behaviour | Turned on by | Test (`tests/it/`) |
//! |---|---|---|---|
//! | B1 | unknown App and AppInst fields dropped silently, in a create and in a Show filter | [`SimConfig::release`] = [`ServerRelease::BeforeEnvVars`] / [`ServerRelease::BeforeRegistryCredentials`] | `fidelity::a_release_before_*` |
//! | B2 | `&`, `<`, `>`, U+2028/9 escaped as Go does | always | `json::*` |
//! | B3 | Gen2 `Specified Cloudlet not found`; 403 outside the cloudlet pools | [`SimConfig::cloudlet_pools`] (Gen2) | `fidelity::gen2_unknown_cloudlet_is_not_found_and_a_foreign_pool_is_forbidden` |
//! | B4 | Gen3 drops `key.cloudlet_key`: `Zone not specified`; cloudlets reached by zone | Gen3 (default) | `fidelity::gen3_*`, `appinst::a_zone_and_its_cloudlet_agree_whatever_their_names` |
//! | B5 | command words pasted unquoted into YAML, `[[ ]]` templating, envVarsYaml | always | `fidelity::words_*`, `fidelity::a_template_action_*`, `fidelity::env_vars_yaml_*` |
//! | B6 | docker: command as one argument, `k=v` env file | docker Apps | `fidelity::docker_*` |
//! | B7 | client leaving a create: undo on central-CRM sites | [`CloudletSettings::crm_on_edge`] = false | `fidelity::a_client_leaving_*`, `startup::a_client_leaving_*` |
//! | B8 | duplicate CreateApp wipes the existing App's secrets | always | `fidelity::a_duplicate_create_app_*` |
//! | B9 | app version key rule; `federated_organization` in Gen2 keys | [`CloudletSettings::federated_organization`] | `fidelity::app_versions_*`, `fidelity::gen2_federated_*` |
//! | B10 | 511 for a two-factor login without a code | [`SimConfig::two_factor_users`] | `fidelity::a_two_factor_user_*` |
//! | B12 | pod status lines of the CRM's wait, Ready after `maxWait` | [`SimConfig::images`], [`SimConfig::crm_max_wait`] | `startup::*` |
//! | B13 | docker: a failed pull fails the create (`CreateError`, undone) | [`SimConfig::images`] | `startup::a_docker_*` |
//! | B14 | a full site: `No resources available for deployment` | [`SimControl::set_capacity`] | `appinst::*capacity*`, `startup::a_full_gen2_site_*` |
//! | B22 | pods named as a Deployment's; a container waiting with any kubelet reason; a container seen terminated (`Error`) at every poll; a pod placed late; a site whose nodes take no pod | [`ImageFault::Waits`], [`ImageFault::Terminates`], [`ImageFault::ScheduledAfter`], [`CloudletSettings::pods_unscheduled`] | `startup::a_waiting_reason_stays_*`, `startup::a_container_seen_terminated_*` |
//! | B25, B26 | a user manifest kept as sent: every document decodes (JSON or YAML) as a built-in kind, access ports in a LoadBalancer Service | a CreateApp with `deployment_manifest` | `docker_pods::*` |
//! | B27, B28 | the CRM's decode: `spec.replicas` required, short image names fail the create | a user manifest | `docker_pods::*` |
//! | B30, B31 | pods named from the manifest's Deployment, a line lists every container not running; a pod the site's Pod Security refuses: `no pods found`, then after 10 s the ReplicaSet's message | [`CloudletSettings::pod_security`] | `docker_pods::*` |
//! | B23 | Show filters on the server: App `env_vars` and AppInst `annotations` matched as subsets; dropped with the field by a release that does not know it | always; [`ServerRelease::BeforeEnvVars`] drops both | `fidelity::show_filters_on_env_vars_and_annotations_as_subsets_where_the_release_knows_them` |
//! | B24 | ShowAppInst filtered by `app_key`, each non-empty part compared | always | `fidelity::show_app_inst_filters_on_the_app_part_by_part` |
//! | B33, B35-B37 | an AppInst's namespace; `mapped_ports` and `uri`/`static_uri` as the site's load balancer gives them: the shared one moves a held port to 10000 and up and refuses ranges, a dedicated one refuses a port in use, an IP per Service keeps ports, names them by Service (`fqdn_prefix`) and puts HTTP behind the ingress | [`CloudletSettings::load_balancer`] ([`LoadBalancer::Shared`] by default) | `access_ports::*` |
//!
//! What each container would get is visible through [`SimControl::containers`].

use std::sync::{Mutex, MutexGuard, PoisonError};

mod clock;
mod config;
mod context;
mod domain;
mod faults;
mod gojson;
mod handlers;
mod model;
mod protocol;
mod reqlog;
mod router;
mod server;
mod trial_config;

pub use clock::civil_from_days;
pub use config::{
    ApiGeneration, CloudletPool, CloudletSettings, ImageFault, ImageRule, LoadBalancer,
    PodSecurity, ServerRelease, SimConfig, CRM_MAX_WAIT,
};
pub use faults::{Fault, FaultKind};
pub use handlers::seed::Seed;
pub use reqlog::RequestLogEntry;
pub use server::{serve, spawn, SimControl, SimHandle, SimServer};
pub use trial_config::{
    write_credentials, write_trial_files, ProviderConfig, SiteTable, TrialFiles,
};

/// Locks a mutex, recovering the data if a previous holder panicked: one failed request must
/// not take the whole simulator down.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
