//! The AppInst: stored in the output shape of its generation, and as sent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::enums::{
    CrmOverride, HealthCheck, IpAccess, LProto, Liveness, PowerState, TrackedState,
};
use super::keys::{AppInstKey, AppInstKeyIn, AppKey, ClusterKey, FlavorKey, SiteKey};
use super::site::Loc;
use super::values::{ConfigFile, KubernetesResources, NodeResources, TimestampIn};
use super::{is_false, is_zero_i32, is_zero_u32, is_zero_u64};
use crate::clock::Timestamp;

/// One mapped port of an AppInst.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct InstPort {
    pub proto: LProto,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub internal_port: i32,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub public_port: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fqdn_prefix: String,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub end_port: i32,
    #[serde(skip_serializing_if = "is_false")]
    pub tls: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub nginx: bool,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub max_pkt_size: u64,
    #[serde(skip_serializing_if = "is_false")]
    pub internal_vis_only: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path_prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub service_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host_prefix: String,
}

/// `AppInstRuntime`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RuntimeInfo {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub container_ids: Vec<String>,
}

/// `FedAppInstKey` (always `{}` here).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct FedKey {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub federation_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub app_inst_id: String,
}

/// A stored AppInst in the output shape of the generation that created it: Gen3 sets
/// `cloudlet_key`/`zone_key` at top level, Gen2 puts the cloudlet into `key`.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct AppInst {
    pub key: AppInstKey,
    pub app_key: AppKey,
    pub cluster_key: ClusterKey,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloudlet_key: Option<SiteKey>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_key: Option<SiteKey>,
    pub cloudlet_loc: Loc,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uri: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub static_uri: String,
    #[serde(skip_serializing_if = "Liveness::is_zero")]
    pub liveness: Liveness,
    /// No `omitempty` in Go: `null` when the App has no ports.
    pub mapped_ports: Option<Vec<InstPort>>,
    pub flavor: FlavorKey,
    #[serde(skip_serializing_if = "TrackedState::is_zero")]
    pub state: TrackedState,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    #[serde(skip_serializing_if = "CrmOverride::is_zero")]
    pub crm_override: CrmOverride,
    pub runtime_info: RuntimeInfo,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ConfigFile>,
    #[serde(skip_serializing_if = "HealthCheck::is_zero")]
    pub health_check: HealthCheck,
    #[serde(skip_serializing_if = "PowerState::is_zero")]
    pub power_state: PowerState,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "is_false")]
    pub dedicated_ip: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unique_id: String,
    pub fed_key: FedKey,
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub compatibility_version: u32,
    pub virtual_cluster_key: ClusterKey,
    #[serde(skip_serializing_if = "is_false")]
    pub enable_ipv6: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub obj_id: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_resources: Option<KubernetesResources>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_resources: Option<NodeResources>,
    #[serde(skip_serializing_if = "is_false")]
    pub is_standalone: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

/// An AppInst as sent in a request. Output-only fields are decoded too, so a create can be
/// refused for carrying them (`IsValidArgsForCreateAppInst`) and Show can filter on them.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppInstIn {
    pub key: AppInstKeyIn,
    pub app_key: AppKey,
    pub cluster_key: ClusterKey,
    pub cloudlet_key: SiteKey,
    pub zone_key: SiteKey,
    pub cloudlet_loc: Loc,
    pub uri: String,
    pub static_uri: String,
    pub liveness: Liveness,
    pub mapped_ports: Option<Vec<Value>>,
    pub flavor: FlavorKey,
    pub cloudlet_flavor: String,
    pub state: TrackedState,
    pub errors: Option<Vec<String>>,
    pub crm_override: CrmOverride,
    pub runtime_info: RuntimeInfoIn,
    pub created_at: TimestampIn,
    pub auto_cluster_ip_access: IpAccess,
    pub revision: String,
    pub force_update: bool,
    pub update_multiple: bool,
    pub configs: Vec<ConfigFile>,
    pub health_check: HealthCheck,
    pub power_state: PowerState,
    pub external_volume_size: u64,
    pub availability_zone: String,
    pub vm_flavor: String,
    pub opt_res: String,
    pub updated_at: TimestampIn,
    pub internal_port_to_lb_ip: Option<BTreeMap<String, String>>,
    pub dedicated_ip: bool,
    pub unique_id: String,
    pub dns_label: String,
    pub fed_key: FedKey,
    pub compatibility_version: u32,
    pub virtual_cluster_key: ClusterKey,
    pub enable_ipv6: bool,
    pub obj_id: String,
    pub annotations: BTreeMap<String, String>,
    pub kubernetes_resources: Option<KubernetesResources>,
    pub node_resources: Option<NodeResources>,
    pub is_standalone: bool,
    pub namespace: String,
    pub tags: BTreeMap<String, String>,
}

/// `runtime_info` as sent; `container_ids` present at all (even `[]`) counts as set.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RuntimeInfoIn {
    pub container_ids: Option<Vec<String>>,
}

impl AppInstIn {
    /// `IsValidArgsForCreateAppInst` / `...DeleteAppInst`: the first internal-only field set,
    /// by its Go name. `top_level_cloudlet` is false in Gen2, where that field does not exist.
    pub(crate) fn invalid_internal_field(&self, top_level_cloudlet: bool) -> Option<&'static str> {
        let loc = &self.cloudlet_loc;
        let checks: &[(bool, &'static str)] = &[
            (loc.latitude != 0.0, "CloudletLoc.Latitude"),
            (loc.longitude != 0.0, "CloudletLoc.Longitude"),
            (
                loc.horizontal_accuracy != 0.0,
                "CloudletLoc.HorizontalAccuracy",
            ),
            (loc.vertical_accuracy != 0.0, "CloudletLoc.VerticalAccuracy"),
            (loc.altitude != 0.0, "CloudletLoc.Altitude"),
            (loc.course != 0.0, "CloudletLoc.Course"),
            (loc.speed != 0.0, "CloudletLoc.Speed"),
            (!self.uri.is_empty(), "Uri"),
            (!self.liveness.is_zero(), "Liveness"),
            (self.mapped_ports.is_some(), "MappedPorts"),
            (!self.state.is_zero(), "State"),
            (self.errors.is_some(), "Errors"),
            (
                self.runtime_info.container_ids.is_some(),
                "RuntimeInfo.ContainerIds",
            ),
            (self.created_at.seconds_set, "CreatedAt.Seconds"),
            (self.created_at.nanos_set, "CreatedAt.Nanos"),
            (
                !self.auto_cluster_ip_access.is_zero(),
                "AutoClusterIpAccess",
            ),
            (!self.revision.is_empty(), "Revision"),
            (self.force_update, "ForceUpdate"),
            (self.update_multiple, "UpdateMultiple"),
            (!self.power_state.is_zero(), "PowerState"),
            (self.external_volume_size != 0, "ExternalVolumeSize"),
            (!self.availability_zone.is_empty(), "AvailabilityZone"),
            (!self.vm_flavor.is_empty(), "VmFlavor"),
            (!self.opt_res.is_empty(), "OptRes"),
            (self.updated_at.seconds_set, "UpdatedAt.Seconds"),
            (self.updated_at.nanos_set, "UpdatedAt.Nanos"),
            (self.internal_port_to_lb_ip.is_some(), "InternalPortToLbIp"),
            (!self.unique_id.is_empty(), "UniqueId"),
            (!self.dns_label.is_empty(), "DnsLabel"),
            (
                !self.fed_key.federation_name.is_empty(),
                "FedKey.FederationName",
            ),
            (!self.fed_key.app_inst_id.is_empty(), "FedKey.AppInstId"),
            (self.compatibility_version != 0, "CompatibilityVersion"),
            (
                !self.virtual_cluster_key.name.is_empty(),
                "VirtualClusterKey.Name",
            ),
            (
                !self.virtual_cluster_key.organization.is_empty(),
                "VirtualClusterKey.Organization",
            ),
            (!self.static_uri.is_empty(), "StaticUri"),
        ];
        if let Some((_, name)) = checks.iter().find(|(set, _)| *set) {
            return Some(name);
        }
        if top_level_cloudlet {
            let ck = &self.cloudlet_key;
            if !ck.organization.is_empty() {
                return Some("CloudletKey.Organization");
            }
            if !ck.name.is_empty() {
                return Some("CloudletKey.Name");
            }
            if !ck.federated_organization.is_empty() {
                return Some("CloudletKey.FederatedOrganization");
            }
        }
        None
    }
}
