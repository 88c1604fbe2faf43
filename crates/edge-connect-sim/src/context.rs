//! Layer 4: what a request handler works with. [`Shared`] is the running simulator (config,
//! inventory, store, faults, log, tokens); [`Call`] is one authenticated controller call.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::clock::Rng;
use crate::config::{ApiGeneration, SimConfig};
use crate::domain::container::container_of;
use crate::domain::tokens::TokenAuthority;
use crate::domain::user_manifest;
use crate::faults::{Fault, FaultKind, FaultTable};
use crate::lock;
use crate::model::store::State;
use crate::model::{Infra, SiteKey};
use crate::protocol::decode::check_region;
use crate::protocol::ApiError;
use crate::reqlog::RequestLog;

/// Everything a running simulator shares between requests and operations.
pub(crate) struct Shared {
    /// The configuration it was started with.
    pub config: SimConfig,
    /// Flavors, cloudlets, zones.
    pub infra: Infra,
    /// Apps and AppInsts.
    pub state: Arc<Mutex<State>>,
    /// Pending injected faults.
    pub faults: Mutex<FaultTable>,
    /// Answered calls.
    pub log: Arc<RequestLog>,
    /// Login tokens.
    pub tokens: TokenAuthority,
    /// Ids and names.
    pub rng: Rng,
    /// Turns true when the simulator stops; operations in flight end early.
    pub shutdown: watch::Receiver<bool>,
}

impl Shared {
    pub(crate) fn new(config: SimConfig, shutdown: watch::Receiver<bool>) -> anyhow::Result<Self> {
        let rng = Rng::new();
        let log = RequestLog::open(config.state_dir.as_deref())?;
        Ok(Shared {
            infra: Infra::new(&config),
            tokens: TokenAuthority::new(config.token_ttl, &rng)?,
            state: Arc::new(Mutex::new(State::default())),
            faults: Mutex::new(FaultTable::default()),
            log: Arc::new(log),
            rng,
            shutdown,
            config,
        })
    }

    /// Queues a fault; `expire_tokens` takes effect at once.
    pub(crate) fn inject(&self, fault: Fault) {
        if fault.kind == FaultKind::ExpireTokens {
            self.tokens.revoke_all();
        } else {
            lock(&self.faults).push(fault);
        }
    }

    /// Faults still waiting.
    pub(crate) fn pending_faults(&self) -> Vec<Fault> {
        lock(&self.faults).list()
    }

    /// Limits instances on a cloudlet or zone.
    pub(crate) fn set_capacity(&self, org: &str, name: &str, max: Option<usize>) {
        lock(&self.state).set_capacity(SiteKey::new(org, name), max);
    }

    /// Back to a fresh simulator: no objects, faults, limits, log entries or login count.
    /// Issued tokens stay valid.
    pub(crate) fn reset(&self) {
        lock(&self.state).clear();
        lock(&self.faults).clear();
        self.log.clear();
        self.tokens.reset_logins();
    }

    /// Every App in Show form with real secret values.
    pub(crate) fn apps_json(&self) -> Vec<Value> {
        lock(&self.state)
            .all_apps()
            .map(|a| a.revealed_json())
            .collect()
    }

    /// Every AppInst in Show form.
    pub(crate) fn insts_json(&self) -> Vec<Value> {
        lock(&self.state)
            .all_insts()
            .map(|i| serde_json::to_value(i.as_ref()).unwrap_or(Value::Null))
            .collect()
    }

    /// What each AppInst's container gets (see [`crate::domain::container`]).
    pub(crate) fn containers_json(&self) -> Vec<Value> {
        let st = lock(&self.state);
        st.all_insts()
            .map(|inst| {
                let mut row = json!({
                    "organization": inst.key.organization,
                    "name": inst.key.name,
                });
                let app = st.app(&inst.app_key);
                let own_manifest = app
                    .filter(|a| a.deployment == "kubernetes" && a.deployment_generator.is_empty());
                if let Some(pod) = own_manifest.and_then(|a| user_manifest::container_envs(a)) {
                    row["pod"] = Value::Array(pod);
                }
                let spec = app.map(|app| container_of(app));
                match spec {
                    Some(Ok(spec)) => {
                        row["container"] = serde_json::to_value(spec).unwrap_or(Value::Null)
                    }
                    Some(Err(e)) => row["error"] = Value::String(e),
                    None => row["error"] = Value::String("App not found".into()),
                }
                row
            })
            .collect()
    }

    /// The full dump of `GET /__sim/state`.
    pub(crate) fn state_json(&self) -> Value {
        let capacity: Vec<Value> = lock(&self.state)
            .capacities()
            .map(|(site, max)| {
                json!({"organization": site.organization, "name": site.name, "max_app_insts": max})
            })
            .collect();
        json!({
            "api": self.config.api.to_string(),
            "apps": self.apps_json(),
            "app_insts": self.insts_json(),
            "capacity": capacity,
            "faults": self.pending_faults(),
            "token_ttl_secs": self.tokens.ttl().as_secs_f64(),
            "logins": self.tokens.logins(),
        })
    }
}

/// One authenticated controller call: the decoded wrapper plus access to the simulator.
pub(crate) struct Call {
    /// Simulator state and configuration.
    pub shared: Arc<Shared>,
    /// The `region` of the request (checked by the handler, in the MC's order).
    pub region: String,
    /// The wrapped object, keys normalised.
    pub object: Value,
}

impl Call {
    /// The wrapped object without `unknown` fields: the MC decodes with plain `json.Unmarshal`,
    /// so a field the imitated release does not have is dropped without an error (c39faca8f
    /// `pkg/mc/orm/server.go:1363-1366`; see `ServerRelease`), in a filter as in a create.
    pub(crate) fn known_fields(&self, unknown: &[&str]) -> Value {
        let mut object = self.object.clone();
        if let Value::Object(map) = &mut object {
            for field in unknown {
                map.remove(*field);
            }
        }
        object
    }

    /// The API generation spoken.
    pub(crate) fn api(&self) -> ApiGeneration {
        self.shared.config.api
    }

    /// RBAC for create/update/delete: the caller must belong to `org` (unknown and empty
    /// organizations are refused the same way, so names cannot be probed). The MC checks this
    /// before it hands the request to the controller, so a key the controller would refuse still
    /// gets 403 first (edgexr/edge-cloud-platform@0414893 `pkg/mc/orm/app.mc2.go`: every App RPC
    /// calls `authorized(ctx, user, obj.Key.Organization, ResourceApps, ActionManage)` before
    /// `ctrlclient.*Obj`).
    pub(crate) fn authorize(&self, org: &str) -> Result<(), ApiError> {
        if self.shared.config.orgs.iter().any(|o| o == org) {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }

    /// RBAC for Show: 403 only when the caller can see no organization at all.
    pub(crate) fn authorize_view(&self) -> Result<(), ApiError> {
        if self.shared.config.orgs.is_empty() {
            Err(ApiError::forbidden())
        } else {
            Ok(())
        }
    }

    /// `No region specified` / `Region "X" not found`.
    pub(crate) fn check_region(&self) -> Result<(), ApiError> {
        check_region(&self.shared.config.regions, &self.region)
    }

    /// Organizations whose objects a Show may return, narrowed by the filter's organization.
    pub(crate) fn visible_orgs<'a>(&'a self, filter_org: &'a str) -> Vec<&'a str> {
        self.shared
            .config
            .orgs
            .iter()
            .map(String::as_str)
            .filter(|o| filter_org.is_empty() || *o == filter_org)
            .collect()
    }
}
