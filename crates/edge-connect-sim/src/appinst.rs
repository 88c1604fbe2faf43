//! The AppInst RPCs — CreateAppInst, UpdateAppInst, DeleteAppInst, ShowAppInst — in both
//! key generations (spec §5.3, §6.1, §11.18–23). Validation and the store change happen under
//! the state lock, so concurrent creates of one key see each other; the rest of the work runs
//! in an [`Op`] task that the HTTP stream watches.

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::app::{deploys_to_kubernetes, valid_name, validate_config_kinds, validate_key};
use super::clock::Timestamp;
use super::config::ApiGeneration;
use super::enums::{Liveness, TrackedState};
use super::filter;
use super::http::Call;
use super::infra::Infra;
use super::lock;
use super::manifest::dns_sanitize;
use super::model::{
    key_json, App, AppInst, AppInstIn, AppInstKey, AppInstKeyIn, Cloudlet, ClusterKey, RuntimeInfo,
    SiteKey,
};
use super::ops::{Op, OpKind};
use super::ports;
use super::server::Shared;
use super::stream::{event_body, ndjson_response, show_body, StreamEvent};
use super::wire::{decode, field_names, ApiError};

/// The multi-tenant cluster every instance lands on.
const DEFAULT_CLUSTER: &str = "defaultmt";
const DEFAULT_CLUSTER_ORG: &str = "edgecloudorg";

fn default_cluster() -> ClusterKey {
    ClusterKey {
        name: DEFAULT_CLUSTER.into(),
        organization: DEFAULT_CLUSTER_ORG.into(),
    }
}

/// `AppInstKey.ValidateKey` of the generation; returns the stored key form.
fn validate_inst_key(key: &AppInstKeyIn, api: ApiGeneration) -> Result<AppInstKey, ApiError> {
    if !valid_name(&key.name) {
        return Err(ApiError::bad_request("Invalid app instance name"));
    }
    if !valid_name(&key.organization) {
        return Err(ApiError::bad_request("Invalid app instance organization"));
    }
    if api == ApiGeneration::Gen2 {
        let ck = &key.cloudlet_key;
        if !valid_name(&ck.organization) {
            return Err(ApiError::bad_request(format!(
                "Invalid cloudlet organization name {}",
                ck.organization
            )));
        }
        if !valid_name(&ck.name) {
            return Err(ApiError::bad_request("Invalid cloudlet name"));
        }
    }
    Ok(stored_key(key, api))
}

/// The key as stored: Gen2 keeps the cloudlet in the key, Gen3 ignores it.
fn stored_key(key: &AppInstKeyIn, api: ApiGeneration) -> AppInstKey {
    AppInstKey {
        name: key.name.clone(),
        organization: key.organization.clone(),
        cloudlet_key: (api == ApiGeneration::Gen2).then(|| key.cloudlet_key.clone()),
    }
}

/// RFC 1123 label, as Kubernetes requires of namespaces.
fn valid_namespace(ns: &str) -> bool {
    ns.len() <= 63
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !ns.starts_with('-')
        && !ns.ends_with('-')
}

fn not_found(key: &AppInstKey) -> ApiError {
    ApiError::bad_request(format!("AppInst key {} not found", key_json(key)))
}

fn already_exists(key: &AppInstKey) -> String {
    format!("AppInst key {} already exists", key_json(key))
}

/// Where a new instance goes.
struct Placement {
    cloudlet: Cloudlet,
    zone: Option<SiteKey>,
    cluster: ClusterKey,
}

/// Gen3 placement: `zone_key` (or the default cluster) picks the cloudlet.
fn place_gen3(infra: &Infra, input: &AppInstIn) -> Result<Placement, ApiError> {
    let cluster = &input.cluster_key;
    let cluster_given = !cluster.name.is_empty();
    if cluster_given
        && (cluster.name != DEFAULT_CLUSTER || cluster.organization != DEFAULT_CLUSTER_ORG)
    {
        return Err(ApiError::bad_request(format!(
            "Cluster key {} not found",
            key_json(cluster)
        )));
    }
    if input.zone_key.name.is_empty() {
        if cluster_given {
            let cloudlet = infra.cloudlets.first().cloned().ok_or_else(|| {
                ApiError::bad_request(format!("cannot deploy to cluster {}", cluster.name))
            })?;
            return Ok(Placement {
                cloudlet,
                zone: None,
                cluster: default_cluster(),
            });
        }
        return Err(ApiError::bad_request("zone not specified"));
    }
    let zone = infra.zone(&input.zone_key).ok_or_else(|| {
        ApiError::bad_request(format!("Zone key {} not found", key_json(&input.zone_key)))
    })?;
    let cloudlet = infra.cloudlet_for_zone(&zone.key).cloned().ok_or_else(|| {
        ApiError::bad_request(format!("no available edge sites in zone {}", zone.key.name))
    })?;
    Ok(Placement {
        cloudlet,
        zone: Some(zone.key.clone()),
        cluster: default_cluster(),
    })
}

/// Container name the instance reports once running.
fn container_id(shared: &Shared, app: &App) -> String {
    let base = dns_sanitize(&format!("{}{}", app.key.name, app.key.version));
    if deploys_to_kubernetes(&app.deployment) {
        format!(
            "{base}-deployment-{}-{}",
            shared.rng.alnum(9),
            shared.rng.alnum(5)
        )
    } else {
        base
    }
}

/// A new instance in `CreateRequested`, with everything the controller fills in.
fn build_inst(
    shared: &Shared,
    region: &str,
    key: AppInstKey,
    input: &AppInstIn,
    app: &App,
    placement: Placement,
) -> AppInst {
    let gen3 = shared.config.api == ApiGeneration::Gen3;
    let cloudlet = &placement.cloudlet;
    let ports = ports::parse(&app.access_ports).unwrap_or_default();
    let uri = if ports.is_empty() {
        String::new()
    } else {
        format!(
            "{}-{}.{}-{}.{}.app.edge.telekom.com",
            placement.cluster.name,
            placement.cluster.organization,
            dns_sanitize(&cloudlet.key.name),
            dns_sanitize(&cloudlet.key.organization),
            dns_sanitize(region)
        )
    };
    let k8s = deploys_to_kubernetes(&app.deployment);
    let namespace = if gen3 && k8s {
        if input.namespace.is_empty() {
            dns_sanitize(&format!("{}-{}", key.name, key.organization))
        } else {
            input.namespace.clone()
        }
    } else {
        String::new()
    };
    let use_input_resources = !input.flavor.name.is_empty()
        || input.kubernetes_resources.is_some()
        || input.node_resources.is_some();
    AppInst {
        unique_id: dns_sanitize(&format!(
            "{}-{}-{}-{}",
            key.organization, key.name, cloudlet.key.name, cloudlet.key.organization
        )),
        app_key: app.key.clone(),
        cluster_key: placement.cluster,
        cloudlet_key: gen3.then(|| cloudlet.key.clone()),
        zone_key: if gen3 {
            Some(placement.zone.unwrap_or_default())
        } else {
            None
        },
        cloudlet_loc: cloudlet.location.clone(),
        uri,
        liveness: Liveness::Static,
        mapped_ports: (!ports.is_empty()).then(|| ports::mapped(&ports)),
        flavor: if input.flavor.name.is_empty() {
            app.default_flavor.clone()
        } else {
            input.flavor.clone()
        },
        state: TrackedState::CreateRequested,
        runtime_info: RuntimeInfo::default(),
        created_at: Timestamp::now(),
        revision: app.revision.clone(),
        configs: input.configs.clone(),
        dedicated_ip: input.dedicated_ip,
        compatibility_version: if gen3 { 3 } else { 2 },
        obj_id: if gen3 {
            shared.rng.ulid()
        } else {
            String::new()
        },
        annotations: input.annotations.clone(),
        kubernetes_resources: if !gen3 {
            None
        } else if use_input_resources {
            input.kubernetes_resources.clone()
        } else {
            app.kubernetes_resources.clone()
        },
        node_resources: if !gen3 {
            None
        } else if use_input_resources {
            input.node_resources.clone()
        } else {
            app.node_resources.clone()
        },
        enable_ipv6: input.enable_ipv6,
        is_standalone: app.is_standalone || input.is_standalone,
        namespace,
        tags: input.tags.clone(),
        key,
        ..AppInst::default()
    }
}

/// Replies with the operation's stream once its first line is there (the MC sends the 200
/// header only with the first object).
async fn stream_reply(mut rx: UnboundedReceiver<StreamEvent>) -> Result<Response, ApiError> {
    match rx.recv().await {
        Some(first) => Ok(ndjson_response(event_body(first, rx))),
        None => Ok(ndjson_response(axum::body::Body::empty())),
    }
}

/// The reply to re-creating an instance left in `CreateError`.
async fn previous_create_failed(errors: &[String], key: &AppInstKey) -> Result<Response, ApiError> {
    let (tx, rx) = unbounded_channel();
    // Go prints a []string with %v as `[a b]`.
    let events = [
        StreamEvent::Line(format!("Previous create failed, [{}]", errors.join(" "))),
        StreamEvent::Line("Use DeleteAppInst to remove and try again".into()),
        StreamEvent::Fail(already_exists(key)),
    ];
    for event in events {
        // The receiver is still in hand, so sending cannot fail.
        let _ = tx.send(event);
    }
    drop(tx);
    stream_reply(rx).await
}

/// `CreateAppInst`.
pub(crate) async fn create(call: Call) -> Result<Response, ApiError> {
    let input: AppInstIn = decode(call.object.clone(), "AppInst")?;
    let api = call.api();
    let gen3 = api == ApiGeneration::Gen3;
    if let Some(field) = input.invalid_internal_field(gen3) {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    if gen3 {
        let cluster = &input.cluster_key;
        if !cluster.name.is_empty() && cluster.organization.is_empty() {
            return Err(ApiError::bad_request(
                "cluster organization must also be specified with cluster name",
            ));
        }
        if cluster.name.is_empty() && !cluster.organization.is_empty() {
            return Err(ApiError::bad_request(
                "cluster name must also be specified with cluster organization",
            ));
        }
    }
    let key = validate_inst_key(&input.key, api)?;
    validate_key(&input.app_key)?;
    if gen3 && !input.namespace.is_empty() && !valid_namespace(&input.namespace) {
        return Err(ApiError::bad_request(format!(
            "invalid namespace: {} is not a valid RFC 1123 label",
            input.namespace
        )));
    }
    let shared = call.shared.clone();
    let outcome = {
        let mut st = lock(&shared.state);
        let app = st.app(&input.app_key).cloned().ok_or_else(|| {
            ApiError::bad_request(format!("App key {} not found", key_json(&input.app_key)))
        })?;
        if gen3 && !input.namespace.is_empty() && !deploys_to_kubernetes(&app.deployment) {
            return Err(ApiError::bad_request(
                "namespace can only be specified for Kubernetes deployments",
            ));
        }
        let gen2_cloudlet = match &key.cloudlet_key {
            Some(ck) => Some(
                shared
                    .infra
                    .cloudlet(ck)
                    .cloned()
                    .ok_or_else(|| ApiError::bad_request("Specified Cloudlet not found"))?,
            ),
            None => None,
        };
        match st
            .inst(&key)
            .map(|existing| (existing.state, existing.errors.clone()))
        {
            Some((TrackedState::CreateError, errors)) => Outcome::PreviousFailed(errors),
            Some((state, _)) if state != TrackedState::DeleteError => {
                return Err(ApiError::bad_request(already_exists(&key)));
            }
            // Absent, or left in DeleteError: a new create may start.
            _ => start(
                &shared,
                &mut st,
                &call.region,
                &key,
                &input,
                &app,
                gen2_cloudlet,
            )?,
        }
    };
    let (epoch, container) = match outcome {
        Outcome::PreviousFailed(errors) => return previous_create_failed(&errors, &key).await,
        Outcome::Started(epoch, container) => (epoch, container),
    };
    let fault = lock(&shared.faults).take_stream("CreateAppInst");
    let rx = Op {
        shared,
        key,
        epoch,
        kind: OpKind::Create,
        fault,
        container_id: container,
    }
    .spawn();
    stream_reply(rx).await
}

/// What a create did under the lock.
enum Outcome {
    /// Stored in `CreateRequested` (epoch, container id).
    Started(u64, String),
    /// The key is taken by an instance in `CreateError` with these errors.
    PreviousFailed(Vec<String>),
}

/// The rest of the create checks, then the new instance is stored.
fn start(
    shared: &Shared,
    st: &mut super::store::State,
    region: &str,
    key: &AppInstKey,
    input: &AppInstIn,
    app: &App,
    gen2_cloudlet: Option<Cloudlet>,
) -> Result<Outcome, ApiError> {
    validate_config_kinds(input.configs.iter().map(|c| c.kind.clone()))?;
    if !input.flavor.name.is_empty() && shared.infra.flavor(&input.flavor.name).is_none() {
        return Err(ApiError::bad_request(format!(
            "Flavor key {} not found",
            key_json(&input.flavor)
        )));
    }
    let placement = match gen2_cloudlet {
        Some(cloudlet) => Placement {
            cloudlet,
            zone: None,
            cluster: default_cluster(),
        },
        None => place_gen3(&shared.infra, input)?,
    };
    if st.site_full(&placement.cloudlet.key, placement.zone.as_ref()) {
        return Err(ApiError::bad_request(
            "no resources available for deployment",
        ));
    }
    let container = container_id(shared, app);
    let inst = build_inst(shared, region, key.clone(), input, app, placement);
    st.insert_inst(inst);
    Ok(Outcome::Started(st.epoch, container))
}

/// `DeleteAppInst`.
pub(crate) async fn delete(call: Call) -> Result<Response, ApiError> {
    let input: AppInstIn = decode(call.object.clone(), "AppInst")?;
    let api = call.api();
    if let Some(field) = input.invalid_internal_field(api == ApiGeneration::Gen3) {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    let key = validate_inst_key(&input.key, api)?;
    let shared = call.shared.clone();
    let epoch = {
        let mut st = lock(&shared.state);
        let epoch = st.epoch;
        let inst = st.inst_mut(&key).ok_or_else(|| not_found(&key))?;
        if inst.state.is_delete() {
            return Err(ApiError::bad_request(
                "AppInst busy, already under deletion",
            ));
        }
        if inst.state.is_transient() {
            return Err(ApiError::bad_request("AppInst busy, cannot be deleted"));
        }
        inst.state = TrackedState::DeletePrepare;
        epoch
    };
    let fault = lock(&shared.faults).take_stream("DeleteAppInst");
    let rx = Op {
        shared,
        key,
        epoch,
        kind: OpKind::Delete,
        fault,
        container_id: String::new(),
    }
    .spawn();
    stream_reply(rx).await
}

/// `UpdateAppInst`: applies the changeable fields present and redeploys with the App's
/// current revision.
pub(crate) async fn update(call: Call) -> Result<Response, ApiError> {
    let fields = field_names(&call.object);
    let input: AppInstIn = decode(call.object.clone(), "AppInst")?;
    let api = call.api();
    if let Some(field) = input.invalid_internal_field(api == ApiGeneration::Gen3) {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    let key = validate_inst_key(&input.key, api)?;
    validate_config_kinds(input.configs.iter().map(|c| c.kind.clone()))?;
    let shared = call.shared.clone();
    let epoch = {
        let mut st = lock(&shared.state);
        let epoch = st.epoch;
        let revision = st
            .inst(&key)
            .and_then(|i| st.app(&i.app_key))
            .map(|a| a.revision.clone());
        let inst = st.inst_mut(&key).ok_or_else(|| not_found(&key))?;
        if inst.state != TrackedState::Ready && inst.state != TrackedState::UpdateError {
            return Err(ApiError::bad_request(
                "AppInst is not ready or update_error",
            ));
        }
        for field in &fields {
            match field.as_str() {
                "configs" => inst.configs = input.configs.clone(),
                "annotations" => inst.annotations = input.annotations.clone(),
                "tags" => inst.tags = input.tags.clone(),
                "kubernetes_resources" => {
                    inst.kubernetes_resources = input.kubernetes_resources.clone()
                }
                "node_resources" => inst.node_resources = input.node_resources.clone(),
                _ => {}
            }
        }
        if let Some(revision) = revision {
            inst.revision = revision;
        }
        inst.state = TrackedState::UpdateRequested;
        epoch
    };
    let fault = lock(&shared.faults).take_stream("UpdateAppInst");
    let rx = Op {
        shared,
        key,
        epoch,
        kind: OpKind::Update,
        fault,
        container_id: String::new(),
    }
    .spawn();
    stream_reply(rx).await
}

/// The non-key part of a ShowAppInst filter, in output form (zero fields pruned).
fn rest_filter(input: &AppInstIn, api: ApiGeneration) -> Option<Value> {
    // Gen2 has no top-level cloudlet_key/zone_key: there they are unknown fields, ignored.
    let gen3 = api == ApiGeneration::Gen3;
    let probe = AppInst {
        app_key: input.app_key.clone(),
        cluster_key: input.cluster_key.clone(),
        cloudlet_key: (gen3 && !input.cloudlet_key.is_empty()).then(|| input.cloudlet_key.clone()),
        zone_key: (gen3 && !input.zone_key.is_empty()).then(|| input.zone_key.clone()),
        cloudlet_loc: input.cloudlet_loc.clone(),
        uri: input.uri.clone(),
        liveness: input.liveness,
        flavor: input.flavor.clone(),
        state: input.state,
        errors: input.errors.clone().unwrap_or_default(),
        crm_override: input.crm_override,
        runtime_info: RuntimeInfo {
            container_ids: input.runtime_info.container_ids.clone().unwrap_or_default(),
        },
        revision: input.revision.clone(),
        configs: input.configs.clone(),
        health_check: input.health_check,
        power_state: input.power_state,
        dedicated_ip: input.dedicated_ip,
        unique_id: input.unique_id.clone(),
        compatibility_version: input.compatibility_version,
        enable_ipv6: input.enable_ipv6,
        obj_id: input.obj_id.clone(),
        annotations: input.annotations.clone(),
        kubernetes_resources: input.kubernetes_resources.clone(),
        node_resources: input.node_resources.clone(),
        is_standalone: input.is_standalone,
        namespace: input.namespace.clone(),
        tags: input.tags.clone(),
        ..AppInst::default()
    };
    let mut value = serde_json::to_value(&probe).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("key");
    }
    filter::prune(value)
}

/// `ShowAppInst`: every visible instance matching the filter, in the generation's shape.
pub(crate) fn show(call: Call) -> Result<Response, ApiError> {
    let input: AppInstIn = decode(call.object.clone(), "AppInst")?;
    call.authorize_view()?;
    call.check_region()?;
    let gen2 = call.api() == ApiGeneration::Gen2;
    let wanted = &input.key;
    let cloudlet = &wanted.cloudlet_key;
    let rest = rest_filter(&input, call.api());
    let items: Vec<Arc<AppInst>> = {
        let st = lock(&call.shared.state);
        call.visible_orgs(&wanted.organization)
            .into_iter()
            .flat_map(|org| -> Box<dyn Iterator<Item = &Arc<AppInst>> + '_> {
                if wanted.name.is_empty() {
                    Box::new(st.insts_in_org(org))
                } else {
                    Box::new(st.insts_named(org, &wanted.name))
                }
            })
            .filter(|inst| {
                let k = &inst.key;
                let ck = k.cloudlet_key.clone().unwrap_or_default();
                (wanted.name.is_empty() || k.name == wanted.name)
                    && (!gen2
                        || ((cloudlet.organization.is_empty()
                            || ck.organization == cloudlet.organization)
                            && (cloudlet.name.is_empty() || ck.name == cloudlet.name)))
            })
            .filter(|inst| match &rest {
                None => true,
                Some(f) => filter::matches(
                    f,
                    &serde_json::to_value(inst.as_ref()).unwrap_or(Value::Null),
                ),
            })
            .cloned()
            .collect()
    };
    Ok(ndjson_response(show_body(items)))
}

/// A Ready instance of `app` for seeding, on the first zone (Gen3) or cloudlet (Gen2).
pub(crate) fn seeded_inst(shared: &Shared, region: &str, app: &App) -> Option<AppInst> {
    let api = shared.config.api;
    let cloudlet = match api {
        ApiGeneration::Gen3 => {
            let zone = shared.infra.zones.first()?;
            shared.infra.cloudlet_for_zone(&zone.key)?.clone()
        }
        ApiGeneration::Gen2 => shared.infra.cloudlets.first()?.clone(),
    };
    let zone = shared.infra.zones.first().map(|z| z.key.clone());
    let key_in = AppInstKeyIn {
        name: app.key.name.clone(),
        organization: app.key.organization.clone(),
        cloudlet_key: cloudlet.key.clone(),
    };
    let key = stored_key(&key_in, api);
    let container = container_id(shared, app);
    let placement = Placement {
        cloudlet,
        zone: if api == ApiGeneration::Gen3 {
            zone
        } else {
            None
        },
        cluster: default_cluster(),
    };
    let mut inst = build_inst(shared, region, key, &AppInstIn::default(), app, placement);
    inst.state = TrackedState::Ready;
    inst.runtime_info.container_ids = vec![container];
    Some(inst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_rfc1123_labels() {
        assert!(valid_namespace("garm-r1-acme"));
        assert!(!valid_namespace("Garm"));
        assert!(!valid_namespace("-x"));
        assert!(!valid_namespace(&"a".repeat(64)));
    }

    #[test]
    fn gen2_keys_carry_the_cloudlet() {
        let key = AppInstKeyIn {
            name: "r1".into(),
            organization: "acme".into(),
            cloudlet_key: SiteKey::default(),
        };
        assert_eq!(
            validate_inst_key(&key, ApiGeneration::Gen2)
                .unwrap_err()
                .message,
            "Invalid cloudlet organization name "
        );
        assert_eq!(
            validate_inst_key(&key, ApiGeneration::Gen3)
                .unwrap()
                .cloudlet_key,
            None
        );
    }
}
