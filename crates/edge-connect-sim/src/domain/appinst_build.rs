//! A new AppInst: the key rules of each generation, where it is placed, what the controller
//! fills in, and the Ready instances of a seed request.

use crate::clock::{Rng, Timestamp};
use crate::config::{ApiGeneration, LoadBalancer};
use crate::model::enums::{LProto, Liveness, TrackedState};
use crate::model::{
    key_json, App, AppInst, AppInstIn, AppInstKey, AppInstKeyIn, Cloudlet, ClusterKey, Infra,
    InstPort, RuntimeInfo, SiteKey,
};
use crate::protocol::ApiError;

use super::app_config::deploys_to_kubernetes;
use super::names::{dns_sanitize, valid_name};
use super::ports;

/// The multi-tenant cluster every instance lands on.
const DEFAULT_CLUSTER: &str = "defaultmt";
const DEFAULT_CLUSTER_ORG: &str = "edgecloudorg";

pub(crate) fn default_cluster() -> ClusterKey {
    ClusterKey {
        name: DEFAULT_CLUSTER.into(),
        organization: DEFAULT_CLUSTER_ORG.into(),
    }
}

/// `AppInstKey.ValidateKey` of the generation; returns the stored key form.
pub(crate) fn validate_inst_key(
    key: &AppInstKeyIn,
    api: ApiGeneration,
) -> Result<AppInstKey, ApiError> {
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
pub(crate) fn stored_key(key: &AppInstKeyIn, api: ApiGeneration) -> AppInstKey {
    AppInstKey {
        name: key.name.clone(),
        organization: key.organization.clone(),
        cloudlet_key: (api == ApiGeneration::Gen2).then(|| key.cloudlet_key.clone()),
    }
}

pub(crate) fn not_found(key: &AppInstKey) -> ApiError {
    ApiError::bad_request(format!("AppInst key {} not found", key_json(key)))
}

pub(crate) fn already_exists(key: &AppInstKey) -> String {
    format!("AppInst key {} already exists", key_json(key))
}

/// Where a new instance goes.
pub(crate) struct Placement {
    /// The cloudlet the instance runs on.
    pub cloudlet: Cloudlet,
    /// The zone asked for (Gen3).
    pub zone: Option<SiteKey>,
    /// The cluster it lands in.
    pub cluster: ClusterKey,
}

/// Gen3 placement, as `getPotentialCloudlets` (edgexr/edge-cloud-platform@eb39b06ec
/// `pkg/controller/appinst_zone.go:53-87`): a given cluster decides the cloudlet; otherwise
/// the zone must be given (`zone not specified`) and exist, and one of its cloudlets is
/// chosen (`no available edge sites in zone X` when it has none). A top-level `cloudlet_key`
/// never gets here: the MC refuses it as internal-only (`appinst.pb.go:11363-11371`), and the
/// controller's own use of it (`appinst_zone.go:69-72`) is for internal tools. Here a zone's
/// cloudlet is the one ShowCloudlet shows in it (`model::site`).
pub(crate) fn place_gen3(infra: &Infra, input: &AppInstIn) -> Result<Placement, ApiError> {
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

/// The container's name in the generated manifest (`domain::manifest`), and the docker
/// container's.
pub(crate) fn container_name(app: &App) -> String {
    dns_sanitize(&format!("{}{}", app.key.name, app.key.version))
}

/// Container id the instance reports once running: the pod's name for Kubernetes.
pub(crate) fn container_id(rng: &Rng, app: &App) -> String {
    let base = container_name(app);
    if deploys_to_kubernetes(&app.deployment) {
        format!("{base}-deployment-{}-{}", rng.alnum(9), rng.alnum(5))
    } else {
        base
    }
}

/// The DNS name under which Edge Connect publishes AppInsts (docs/edge-connect-behaviours.md
/// B37, the `appDNSRoot` of the controller; Edge Connect's as seen in its hostnames).
const APP_DNS_ROOT: &str = "app.edge.telekom.com";

/// `dnsSanitizeTrunc` (main `pkg/controller/dnslabelgen.go:136-142`).
fn dns_trunc(s: &str, max: usize) -> String {
    let mut label = dns_sanitize(s);
    label.truncate(max);
    label
}

/// A base label cut to a DNS label's room, as `genNextDnsLabel` cuts the first candidate
/// (`dnslabelgen.go:149-162`; a taken label would get a digit, the simulator's never are).
fn label_within(mut label: String, max: usize) -> String {
    label.truncate(max);
    label
}

/// The AppInst's DNS label (`AppInstApi.setDnsLabel`, `dnslabelgen.go:80-106`).
fn inst_dns_label(key: &AppInstKey) -> String {
    let org = dns_trunc(&key.organization, 60);
    let mut name = dns_trunc(&key.name, 60);
    if name.len() + 1 + org.len() > 63 {
        name.truncate(32);
    }
    label_within(format!("{name}-{org}"), 63)
}

/// The `uri` of a new AppInst (`getAppInstURI`, main `pkg/controller/appinst_api.go:414-441`;
/// docs/edge-connect-behaviours.md B37): empty without exposed ports, else the AppInst's own
/// name, the shared load balancer's or the cluster's, under the cloudlet's DNS label.
fn inst_uri(
    app: &App,
    input: &AppInstIn,
    key: &AppInstKey,
    placement: &Placement,
    region: &str,
    mapped: &[InstPort],
) -> String {
    if app.internal_ports || mapped.is_empty() {
        return String::new();
    }
    let cloudlet = &placement.cloudlet.key;
    let base = format!(
        "{}.{}.{APP_DNS_ROOT}",
        label_within(
            format!(
                "{}-{}",
                dns_trunc(&cloudlet.name, 40),
                dns_trunc(&cloudlet.organization, 20)
            ),
            50
        ),
        dns_sanitize(region)
    );
    let own = app.deployment == "vm"
        || input.dedicated_ip
        || mapped.iter().any(|p| p.proto == LProto::Http);
    match placement.cloudlet.load_balancer {
        _ if own => format!("{}.{base}", inst_dns_label(key)),
        LoadBalancer::Shared => format!("shared.{base}"),
        LoadBalancer::Dedicated => format!(
            "{}.{base}",
            label_within(
                format!(
                    "{}-{}",
                    dns_trunc(&placement.cluster.name, 40),
                    dns_trunc(&placement.cluster.organization, 20)
                ),
                63
            )
        ),
        LoadBalancer::PerService => format!("{}.{base}", inst_dns_label(key)),
    }
}

/// Where a new AppInst is reached: its `uri` and `mapped_ports`.
pub(crate) struct Exposure {
    pub uri: String,
    pub mapped: Vec<InstPort>,
}

/// The address the controller gives a new AppInst of `app` at `placement`, beside the
/// site's other live AppInsts (`others`); an error is the controller's refusal text (B36).
pub(crate) fn expose(
    app: &App,
    input: &AppInstIn,
    key: &AppInstKey,
    placement: &Placement,
    region: &str,
    others: &[ports::Held],
) -> Result<Exposure, String> {
    let specs = ports::parse(&app.access_ports).unwrap_or_default();
    let lb = placement.cloudlet.load_balancer;
    let mapped = ports::assign(&specs, app, input.dedicated_ip, lb, others)?;
    let uri = inst_uri(app, input, key, placement, region, &mapped);
    Ok(Exposure { uri, mapped })
}

/// A new instance in `CreateRequested`, with everything the controller fills in.
pub(crate) fn build_inst(
    api: ApiGeneration,
    rng: &Rng,
    key: AppInstKey,
    input: &AppInstIn,
    app: &App,
    placement: Placement,
    exposure: Exposure,
) -> AppInst {
    let gen3 = api == ApiGeneration::Gen3;
    let Exposure { uri, mapped } = exposure;
    let cloudlet = &placement.cloudlet;
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
    // Gen2 instances have no resources of their own; Gen3 ones take the App's unless sized.
    let (kubernetes_resources, node_resources) = if !gen3 {
        (None, None)
    } else if use_input_resources {
        (
            input.kubernetes_resources.clone(),
            input.node_resources.clone(),
        )
    } else {
        (app.kubernetes_resources.clone(), app.node_resources.clone())
    };
    AppInst {
        unique_id: dns_sanitize(&format!(
            "{}-{}-{}-{}",
            key.organization, key.name, cloudlet.key.name, cloudlet.key.organization
        )),
        app_key: app.key.clone(),
        cluster_key: placement.cluster,
        cloudlet_key: gen3.then(|| cloudlet.key.clone()),
        zone_key: gen3.then(|| placement.zone.unwrap_or_default()),
        cloudlet_loc: cloudlet.location.clone(),
        // `static_uri` came on 2024-08-12 (`d146152dd`), before Gen3 and after the last
        // public MC (Gen2).
        static_uri: if gen3 { uri.clone() } else { String::new() },
        uri,
        liveness: Liveness::Static,
        mapped_ports: (!mapped.is_empty()).then_some(mapped),
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
        obj_id: if gen3 { rng.ulid() } else { String::new() },
        annotations: input.annotations.clone(),
        kubernetes_resources,
        node_resources,
        enable_ipv6: input.enable_ipv6,
        is_standalone: app.is_standalone || input.is_standalone,
        namespace,
        tags: input.tags.clone(),
        key,
        ..AppInst::default()
    }
}

/// A Ready instance of `app` for seeding, on the first zone (Gen3) or cloudlet (Gen2).
pub(crate) fn seeded_inst(
    api: ApiGeneration,
    infra: &Infra,
    rng: &Rng,
    region: &str,
    app: &App,
) -> Option<AppInst> {
    let (cloudlet, zone) = match api {
        ApiGeneration::Gen3 => {
            let zone = infra.zones.first()?;
            let cloudlet = infra.cloudlet_for_zone(&zone.key)?.clone();
            (cloudlet, Some(zone.key.clone()))
        }
        ApiGeneration::Gen2 => (infra.cloudlets.first()?.clone(), None),
    };
    let key_in = AppInstKeyIn {
        name: app.key.name.clone(),
        organization: app.key.organization.clone(),
        cloudlet_key: cloudlet.key.clone(),
    };
    let key = stored_key(&key_in, api);
    let container = container_id(rng, app);
    let placement = Placement {
        cloudlet,
        zone,
        cluster: default_cluster(),
    };
    // A seeded instance is placed alone: it takes its ports as if the site held no other.
    let input = AppInstIn::default();
    let exposure = expose(app, &input, &key, &placement, region, &[]).unwrap_or(Exposure {
        uri: String::new(),
        mapped: Vec::new(),
    });
    let mut inst = build_inst(api, rng, key, &input, app, placement, exposure);
    inst.state = TrackedState::Ready;
    inst.runtime_info.container_ids = vec![container];
    Some(inst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SiteKey;

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
