//! The AppInst RPCs CreateAppInst and DeleteAppInst in both key generations
//! (docs/edge-connect-behaviours.md B4, B17). Validation and the store change happen under the
//! state lock, so concurrent creates of one key see each other; the rest of the work runs in an
//! [`Op`] task that the HTTP stream watches.

use axum::response::Response;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::config::{ApiGeneration, ImageFault};
use crate::context::{Call, Shared};
use crate::domain::app_config::{deploys_to_kubernetes, validate_config_kinds, validate_key};
use crate::domain::appinst_build::{
    already_exists, build_inst, container_id, container_name, default_cluster, expose, not_found,
    place_gen3, validate_inst_key, Placement,
};
use crate::domain::appinst_lifecycle::{Op, OpKind};
use crate::domain::container::deploy_error;
use crate::domain::names::valid_namespace;
use crate::domain::ports::Held;
use crate::domain::startup::{docker_pull_error, pod_wait, refused_pod};
use crate::domain::user_manifest::{self, admission, PodContainer};
use crate::lock;
use crate::model::enums::TrackedState;
use crate::model::store::State;
use crate::model::{key_json, App, AppInstIn, AppInstKey, Cloudlet};
use crate::protocol::decode::decode;
use crate::protocol::stream::{event_body, ndjson_response, StreamEvent};
use crate::protocol::{capitalize, ApiError};

/// Replies with the operation's stream once its first line is there (the MC sends the 200
/// header only with the first object).
async fn stream_reply(mut rx: UnboundedReceiver<StreamEvent>) -> Result<Response, ApiError> {
    match rx.recv().await {
        Some(first) => Ok(ndjson_response(event_body(first, rx))),
        None => Ok(ndjson_response(axum::body::Body::empty())),
    }
}

/// A reply of a few lines and an error result, written before any operation starts.
async fn refusal(lines: Vec<String>, error: String) -> Result<Response, ApiError> {
    let (tx, rx) = unbounded_channel();
    let events = lines
        .into_iter()
        .map(StreamEvent::Line)
        .chain([StreamEvent::Fail(error)]);
    for event in events {
        // The receiver is still in hand, so sending cannot fail.
        let _ = tx.send(event);
    }
    drop(tx);
    stream_reply(rx).await
}

/// `CreateAppInst`.
pub(crate) async fn create(call: Call) -> Result<Response, ApiError> {
    let input: AppInstIn = decode(
        call.known_fields(call.shared.config.release.unknown_app_inst_fields()),
        "AppInst",
    )?;
    let api = call.api();
    let gen3 = api == ApiGeneration::Gen3;
    if let Some(field) = input.invalid_internal_field(gen3) {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    if !gen3 {
        // Gen2 MC: a cloudlet in cloudlet pools is usable only by the pools' member
        // organizations (c39faca8f `pkg/mc/orm/authz_cloudlet.go:231-242`); otherwise the MC
        // answers 403 before the controller is asked (`authz_cloudlet.go:355-357`). An unknown
        // cloudlet is in no pool, so the controller answers `Specified Cloudlet not found`.
        let ck = &input.key.cloudlet_key;
        if !call.shared.config.cloudlet_usable_by(
            &ck.organization,
            &ck.name,
            &input.key.organization,
        ) {
            return Err(ApiError::forbidden());
        }
    }
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
                    // c39faca8f `cmd/controller/appinst_api.go:532-534`: the key's cloudlet
                    // (federated_organization included) must exist.
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
    let mut operation = match outcome {
        Outcome::PreviousFailed(errors) => {
            // Go prints a []string with %v as `[a b]` (c39 `cmd/controller/appinst_api.go:564-565`).
            let lines = vec![
                format!("Previous create failed, [{}]", errors.join(" ")),
                "Use DeleteAppInst to remove and try again".to_string(),
            ];
            return refusal(lines, already_exists(&key)).await;
        }
        Outcome::Refused { lines, error } => return refusal(lines, error).await,
        Outcome::Started(operation) => *operation,
    };
    // Taken only now, so a create refused above leaves the fault for the next one.
    operation.fault = lock(&shared.faults).take_stream("CreateAppInst");
    stream_reply(operation.spawn()).await
}

/// An operation on the store with nothing of a create's own (no CRM error, no pod wait, no
/// container, and a client that leaves does not undo it).
fn op(
    shared: &Shared,
    key: AppInstKey,
    epoch: u64,
    kind: OpKind,
    fault: Option<crate::faults::StreamFault>,
) -> Op {
    Op {
        state: shared.state.clone(),
        duration: shared.config.create_delay,
        shutdown: shared.shutdown.clone(),
        key,
        epoch,
        kind,
        fault,
        crm_error: None,
        pod_wait: None,
        container_id: String::new(),
        undo_on_disconnect: false,
    }
}

/// What a create did under the lock.
enum Outcome {
    /// Stored in `CreateRequested`; the operation to run (its stream fault still to take).
    Started(Box<Op>),
    /// The key is taken by an instance in `CreateError` with these errors.
    PreviousFailed(Vec<String>),
    /// The site refuses it after placement (Gen3): the placement's progress lines, then the
    /// error.
    Refused { lines: Vec<String>, error: String },
}

/// The rest of the create checks, then the new instance is stored.
fn start(
    shared: &Shared,
    st: &mut State,
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
    if let Some(max) = st.site_limit_reached(&placement.cloudlet.key, placement.zone.as_ref()) {
        return full_site(shared.config.api, max);
    }
    let site = &placement.cloudlet.key;
    // An App without ports (every runner) needs nothing of the others: no scan of the store.
    let held: Vec<Held> = if app.access_ports.is_empty() {
        Vec::new()
    } else {
        st.all_insts()
            .filter(|i| i.key != *key && !i.state.is_delete())
            .filter(|i| i.cloudlet_key.as_ref().or(i.key.cloudlet_key.as_ref()) == Some(site))
            .map(|i| Held {
                name: &i.key.name,
                ports: i.mapped_ports.as_deref().unwrap_or_default(),
                dedicated_ip: i.dedicated_ip,
                internal_ports: st.app(&i.app_key).is_some_and(|a| a.internal_ports),
            })
            .collect()
    };
    let exposure = expose(app, input, key, &placement, region, &held);
    let exposure = match exposure {
        Ok(exposure) => exposure,
        Err(error) => return ports_refused(shared.config.api, error),
    };
    let crm_on_edge = placement.cloudlet.crm_on_edge;
    // The pod: the manifest's own Deployment and containers, or the generated one's
    // (docs/edge-connect-behaviours.md B30).
    let user_manifest = app.deployment == "kubernetes" && app.deployment_generator.is_empty();
    let (pod, manifest_error) = if user_manifest {
        match user_manifest::pod_of(&app.deployment_manifest) {
            Ok(pod) => (Some(pod), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let (deployment, containers) = pod.unwrap_or_else(|| {
        (
            format!("{}-deployment", container_name(app)),
            vec![PodContainer {
                name: container_name(app),
                image: app.image_path.clone(),
                ..PodContainer::default()
            }],
        )
    });
    let container = if deploys_to_kubernetes(&app.deployment) {
        // Kubernetes names a Deployment's pods `<deployment>-<template hash>-<suffix>`.
        format!(
            "{deployment}-{}-{}",
            shared.rng.alnum(9),
            shared.rng.alnum(5)
        )
    } else {
        container_id(&shared.rng, app)
    };
    let replicaset = container
        .rsplit_once('-')
        .map(|(rs, _)| rs)
        .unwrap_or_default();
    let refused = (app.deployment == "kubernetes" && manifest_error.is_none())
        .then(|| admission(placement.cloudlet.pod_security, replicaset, &containers))
        .flatten();
    // The first container whose image the site cannot start, if any.
    let (failing, image_fault) = if placement.cloudlet.pods_unscheduled {
        (0, Some(ImageFault::Unschedulable))
    } else {
        containers
            .iter()
            .enumerate()
            .find_map(|(i, c)| Some((i, shared.config.image_fault(&c.image)?)))
            .map_or((0, None), |(i, f)| (i, Some(f)))
    };
    let crm_error = manifest_error
        .or_else(|| deploy_error(app))
        .or_else(|| {
            (app.deployment == "docker" && image_fault == Some(ImageFault::CannotPull))
                .then(|| docker_pull_error(&app.image_path))
        })
        .map(|e| format!("Create App Inst failed: {e}"));
    // Helm AppInsts are not waited for (main `pkg/platform/common/vmlayer/appinst.go:505-512`).
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    let pod_wait = (app.deployment == "kubernetes").then(|| match &refused {
        Some(message) => refused_pod(replicaset, message, shared.config.crm_max_wait),
        None => pod_wait(
            image_fault,
            &container,
            &names,
            failing,
            shared.config.crm_max_wait,
        ),
    });
    let inst = build_inst(
        shared.config.api,
        &shared.rng,
        key.clone(),
        input,
        app,
        placement,
        exposure,
    );
    st.insert_inst(inst);
    Ok(Outcome::Started(Box::new(Op {
        crm_error,
        pod_wait,
        container_id: container,
        undo_on_disconnect: !crm_on_edge,
        ..op(shared, key.clone(), st.epoch, OpKind::Create, None)
    })))
}

/// A site that has reached its AppInst limit refuses the create as the controller refuses a
/// site without resources (docs/edge-connect-behaviours.md B14). Gen3 (main
/// `pkg/controller/appinst_api.go:637-771`): the zone's cloudlet is found, its multi-tenant
/// cluster is skipped for lack of resources (`appinst_zone.go:264-285`, skip reason `not enough
/// resources`, `potential_cloudlet.go:84`), no cloudlet can take a new cluster, and the
/// progress messages gathered so far are sent before the error (`appinst_api.go:931-939`), so
/// the error comes as the stream's result. The detailed `not enough resources available: …`
/// (`cloudlet_resource_check.go:254`) only goes to the controller's log on this path. Gen2
/// (c39 `cmd/controller/appinst_api.go:831-836`, `clusterinst_api.go:315-321`): the resource
/// check fails before any message; the simulator names its AppInst limit as the controller
/// names a resource (which resource a real site runs out of, RAM or vCPUs, depends on it).
fn full_site(api: ApiGeneration, max: usize) -> Result<Outcome, ApiError> {
    match api {
        ApiGeneration::Gen3 => Ok(Outcome::Refused {
            lines: vec![
                "Found 1 potential cloudlets for deployment".into(),
                "Found 0 potential clusters for deployment, some skipped because not enough resources".into(),
                "No existing cluster available".into(),
            ],
            error: "No resources available for deployment".into(),
        }),
        ApiGeneration::Gen2 => Err(ApiError::bad_request(format!(
            "Not enough resources available: required Instances is 1 but only 0 out of {max} is available"
        ))),
    }
}

/// Ports the site cannot give (docs/edge-connect-behaviours.md B36): the controller's
/// transaction fails after placement (main `pkg/controller/appinst_api.go:1188-1251`), so Gen3
/// streams the placement lines and then the error, as for a full site; Gen2 answers 400.
fn ports_refused(api: ApiGeneration, error: String) -> Result<Outcome, ApiError> {
    match api {
        ApiGeneration::Gen3 => Ok(Outcome::Refused {
            lines: vec![
                "Found 1 potential cloudlets for deployment".into(),
                "Found 1 potential clusters for deployment".into(),
                "Chose multi-tenant cluster defaultmt to deploy AppInst".into(),
            ],
            error: capitalize(&error),
        }),
        ApiGeneration::Gen2 => Err(ApiError::bad_request(error)),
    }
}

/// `DeleteAppInst`.
pub(crate) async fn delete(call: Call) -> Result<Response, ApiError> {
    let input: AppInstIn = decode(
        call.known_fields(call.shared.config.release.unknown_app_inst_fields()),
        "AppInst",
    )?;
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
    let rx = op(&shared, key, epoch, OpKind::Delete, fault).spawn();
    stream_reply(rx).await
}
