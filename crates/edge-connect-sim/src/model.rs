//! The objects of the API (keys, App, AppInst and their parts) in two forms: lenient input
//! structs that decode what a client sends, and stored structs that serialise straight into
//! the MC's output shape (Go field order, `omitempty` rules of spec §1).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::clock::Timestamp;
use super::enums::{
    AccessType, CrmOverride, DeleteType, HealthCheck, ImageType, IpAccess, LProto, Liveness,
    PowerState, TrackedState, VmAppOsType,
};

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}

fn is_zero_f64(n: &f64) -> bool {
    *n == 0.0
}

/// Compact JSON of a key for messages (`App key {...} not found`). Keys are plain strings,
/// so serialisation cannot fail; the fallback only keeps the signature total.
pub(crate) fn key_json<T: Serialize>(key: &T) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| "{}".to_string())
}

/// `AppKey {organization, name, version}` — field order matters for messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct AppKey {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub organization: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// `CloudletKey` / `ZoneKey` share this shape `{organization, name, federated_organization}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SiteKey {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub organization: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub federated_organization: String,
}

impl SiteKey {
    /// A key from `(organization, name)`.
    pub(crate) fn new(organization: &str, name: &str) -> Self {
        SiteKey {
            organization: organization.to_string(),
            name: name.to_string(),
            federated_organization: String::new(),
        }
    }

    /// True when no field is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.organization.is_empty()
            && self.name.is_empty()
            && self.federated_organization.is_empty()
    }
}

/// `ClusterKey {name, organization}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ClusterKey {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub organization: String,
}

/// `FlavorKey {name}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct FlavorKey {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// The AppInst key. Gen3: `{name, organization}`; Gen2 adds `cloudlet_key`, which is then
/// always printed (a non-pointer struct in Go).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub(crate) struct AppInstKey {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub organization: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloudlet_key: Option<SiteKey>,
}

impl Ord for AppInstKey {
    /// Organization first, so one organization's instances are one range of the store.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.organization, &self.name, &self.cloudlet_key).cmp(&(
            &other.organization,
            &other.name,
            &other.cloudlet_key,
        ))
    }
}

impl PartialOrd for AppInstKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The AppInst key as sent: Gen2 fields are all accepted; the generation decides what counts.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppInstKeyIn {
    pub name: String,
    pub organization: String,
    pub cloudlet_key: SiteKey,
}

/// A timestamp as sent: an RFC3339 string or the legacy `{seconds, nanos}` object.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TimestampIn {
    /// Non-zero seconds (or a non-empty string) were given.
    pub seconds_set: bool,
    /// Non-zero nanoseconds were given.
    pub nanos_set: bool,
}

impl<'de> Deserialize<'de> for TimestampIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(TimestampIn {
                seconds_set: !s.is_empty() && !s.starts_with("0001-01-01T00:00:00"),
                nanos_set: false,
            }),
            Value::Object(map) => {
                let nonzero = |k: &str| {
                    map.iter()
                        .find(|(key, _)| key.eq_ignore_ascii_case(k))
                        .and_then(|(_, v)| v.as_f64())
                        .is_some_and(|n| n != 0.0)
                };
                Ok(TimestampIn {
                    seconds_set: nonzero("seconds"),
                    nanos_set: nonzero("nanos"),
                })
            }
            other => Err(D::Error::custom(format!(
                "{}expected Timestamp, but got {}|",
                super::enums::ENUM_MARK,
                json_kind(&other)
            ))),
        }
    }
}

/// Go's name for the kind of a JSON value in unmarshal errors.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A decimal CPU count (`Udec64`): printed as an integer when whole, else a decimal string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Udec64 {
    /// Thousandths.
    pub milli: u64,
}

impl Udec64 {
    /// A whole number of units.
    pub(crate) fn whole(n: u64) -> Self {
        Udec64 {
            milli: n.saturating_mul(1000),
        }
    }

    fn is_zero(&self) -> bool {
        self.milli == 0
    }
}

impl fmt::Display for Udec64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let frac = self.milli % 1000;
        if frac == 0 {
            write!(f, "{}", self.milli / 1000)
        } else {
            let digits = format!("{frac:03}");
            write!(f, "{}.{}", self.milli / 1000, digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Udec64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.milli.is_multiple_of(1000) {
            s.serialize_u64(self.milli / 1000)
        } else {
            s.serialize_str(&self.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for Udec64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let parsed = match &value {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match parsed {
            Some(f) if f >= 0.0 && f.is_finite() => Ok(Udec64 {
                milli: (f * 1000.0).round() as u64,
            }),
            _ => Err(D::Error::custom(format!(
                "{}expected Udec64, but got {}|",
                super::enums::ENUM_MARK,
                json_kind(&value)
            ))),
        }
    }
}

/// `NodePoolTopology`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NodePoolTopology {
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub min_node_vcpus: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub min_node_memory: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub min_node_disk: u64,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub min_number_of_nodes: i32,
}

/// `NodePoolResources`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NodePoolResources {
    pub total_vcpus: Udec64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub total_memory: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub total_disk: u64,
    pub topology: NodePoolTopology,
}

/// `KubernetesResources` (2024-10+), filled from the flavor for kubernetes Apps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct KubernetesResources {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pool: Option<NodePoolResources>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_pool: Option<NodePoolResources>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_kubernetes_version: String,
}

/// `NodeResources`, filled from the flavor for docker/VM Apps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NodeResources {
    #[serde(skip_serializing_if = "Udec64::is_zero")]
    pub vcpus: Udec64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub ram: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub disk: u64,
}

/// `ConfigFile {kind, config}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ConfigFile {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub config: String,
}

/// A map whose values are printed as `"***"` (secret env vars, spec §7).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SecretMap(pub BTreeMap<String, String>);

impl SecretMap {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for SecretMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.keys().map(|k| (k, REDACTED)))
    }
}

/// What Show prints instead of a secret.
pub(crate) const REDACTED: &str = "***";

/// A stored App, serialised in the MC's output order.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct App {
    pub key: AppKey,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image_path: String,
    #[serde(skip_serializing_if = "ImageType::is_zero")]
    pub image_type: ImageType,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub access_ports: String,
    pub default_flavor: FlavorKey,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(
        skip_serializing_if = "String::is_empty",
        serialize_with = "redact_string"
    )]
    pub credentials: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub auth_public_key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub command: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command_args: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub annotations: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deployment: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deployment_manifest: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deployment_generator: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub android_package_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ConfigFile>,
    #[serde(skip_serializing_if = "is_false")]
    pub scale_with_cluster: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub internal_ports: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub official_fqdn: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub md5sum: String,
    #[serde(skip_serializing_if = "AccessType::is_zero")]
    pub access_type: AccessType,
    #[serde(skip_serializing_if = "is_false")]
    pub delete_prepare: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub auto_prov_policies: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub template_delimiter: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub skip_hc_ports: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "is_false")]
    pub trusted: bool,
    /// No `omitempty` in Go: `null` when unset.
    pub required_outbound_connections: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_serverless: bool,
    #[serde(skip_serializing_if = "VmAppOsType::is_zero")]
    pub vm_app_os_type: VmAppOsType,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alert_policies: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub global_id: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env_vars: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "SecretMap::is_empty")]
    pub secret_env_vars: SecretMap,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_resources: Option<KubernetesResources>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_resources: Option<NodeResources>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub obj_id: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub app_annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "is_false")]
    pub is_standalone: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub manages_own_namespaces: bool,
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub compatibility_version: u32,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
}

fn redact_string<S: Serializer>(_: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(REDACTED)
}

impl App {
    /// The Show form, but with the real secret values (for tests that check delivery).
    pub(crate) fn revealed_json(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            if !self.secret_env_vars.is_empty() {
                let real: serde_json::Map<String, Value> = self
                    .secret_env_vars
                    .0
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                map.insert("secret_env_vars".into(), Value::Object(real));
            }
            if !self.credentials.is_empty() {
                map.insert(
                    "credentials".into(),
                    Value::String(self.credentials.clone()),
                );
            }
        }
        value
    }
}

/// An App as sent in a request; every field optional, unknown fields ignored.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppIn {
    pub key: AppKey,
    pub image_path: String,
    pub image_type: ImageType,
    pub access_ports: String,
    pub default_flavor: FlavorKey,
    pub username: String,
    pub credentials: String,
    pub auth_public_key: String,
    pub command: String,
    pub command_args: Vec<String>,
    pub annotations: String,
    pub deployment: String,
    pub deployment_manifest: String,
    pub deployment_generator: String,
    pub android_package_name: String,
    pub del_opt: DeleteType,
    pub configs: Vec<ConfigFile>,
    pub scale_with_cluster: bool,
    pub internal_ports: bool,
    pub revision: String,
    pub official_fqdn: String,
    pub md5sum: String,
    pub auto_prov_policy: String,
    pub access_type: AccessType,
    pub delete_prepare: bool,
    pub auto_prov_policies: Vec<String>,
    pub template_delimiter: String,
    pub skip_hc_ports: String,
    pub created_at: TimestampIn,
    pub updated_at: TimestampIn,
    pub trusted: bool,
    pub required_outbound_connections: Option<Vec<Value>>,
    pub allow_serverless: bool,
    pub serverless_config: Option<Value>,
    pub vm_app_os_type: VmAppOsType,
    pub alert_policies: Vec<String>,
    pub global_id: String,
    pub env_vars: BTreeMap<String, String>,
    pub secret_env_vars: BTreeMap<String, String>,
    pub update_list_action: String,
    pub kubernetes_resources: Option<KubernetesResources>,
    pub node_resources: Option<NodeResources>,
    pub obj_id: String,
    pub app_annotations: BTreeMap<String, String>,
    pub is_standalone: bool,
    pub manages_own_namespaces: bool,
    pub compatibility_version: u32,
    pub tags: BTreeMap<String, String>,
}

impl AppIn {
    /// `IsValidArgsForCreateApp`: internal-only fields that a create must not set.
    pub(crate) fn invalid_create_field(&self) -> Option<&'static str> {
        if !self.del_opt.is_zero() {
            Some("DelOpt")
        } else if !self.auto_prov_policy.is_empty() {
            Some("AutoProvPolicy")
        } else if self.delete_prepare {
            Some("DeletePrepare")
        } else if self.created_at.seconds_set {
            Some("CreatedAt.Seconds")
        } else if self.created_at.nanos_set {
            Some("CreatedAt.Nanos")
        } else if self.updated_at.seconds_set {
            Some("UpdatedAt.Seconds")
        } else if self.updated_at.nanos_set {
            Some("UpdatedAt.Nanos")
        } else {
            None
        }
    }

    /// The stored form of the given fields, before any server-side defaults.
    pub(crate) fn to_app(&self) -> App {
        App {
            key: self.key.clone(),
            image_path: self.image_path.clone(),
            image_type: self.image_type,
            access_ports: self.access_ports.clone(),
            default_flavor: self.default_flavor.clone(),
            username: self.username.clone(),
            credentials: self.credentials.clone(),
            auth_public_key: self.auth_public_key.clone(),
            command: self.command.clone(),
            command_args: self.command_args.clone(),
            annotations: self.annotations.clone(),
            deployment: self.deployment.clone(),
            deployment_manifest: self.deployment_manifest.clone(),
            deployment_generator: self.deployment_generator.clone(),
            android_package_name: self.android_package_name.clone(),
            configs: self.configs.clone(),
            scale_with_cluster: self.scale_with_cluster,
            internal_ports: self.internal_ports,
            revision: self.revision.clone(),
            official_fqdn: self.official_fqdn.clone(),
            md5sum: self.md5sum.clone(),
            access_type: self.access_type,
            delete_prepare: self.delete_prepare,
            auto_prov_policies: self.auto_prov_policies.clone(),
            template_delimiter: self.template_delimiter.clone(),
            skip_hc_ports: self.skip_hc_ports.clone(),
            created_at: Timestamp::default(),
            updated_at: Timestamp::default(),
            trusted: self.trusted,
            required_outbound_connections: self.required_outbound_connections.clone(),
            allow_serverless: self.allow_serverless,
            vm_app_os_type: self.vm_app_os_type,
            alert_policies: self.alert_policies.clone(),
            global_id: self.global_id.clone(),
            env_vars: self.env_vars.clone(),
            secret_env_vars: SecretMap(self.secret_env_vars.clone()),
            kubernetes_resources: self.kubernetes_resources.clone(),
            node_resources: self.node_resources.clone(),
            obj_id: self.obj_id.clone(),
            app_annotations: self.app_annotations.clone(),
            is_standalone: self.is_standalone,
            manages_own_namespaces: self.manages_own_namespaces,
            compatibility_version: self.compatibility_version,
            tags: self.tags.clone(),
        }
    }
}

/// `Loc` of a site; zero coordinates are omitted (`{}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Loc {
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub latitude: f64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub longitude: f64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub horizontal_accuracy: f64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub vertical_accuracy: f64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub altitude: f64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub course: f64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub speed: f64,
}

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

/// A flavor as ShowFlavor prints it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Flavor {
    pub key: FlavorKey,
    pub ram: u64,
    pub vcpus: u64,
    pub disk: u64,
}

/// A flavor name line of ShowFlavorsForZone / ShowFlavorsForCloudlet.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct FlavorName<'a> {
    pub name: &'a str,
}

/// A cloudlet as ShowCloudlet prints it (the fields a client may look at).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Cloudlet {
    pub key: SiteKey,
    pub location: Loc,
    pub ip_support: &'static str,
    pub num_dynamic_ips: u32,
    pub state: TrackedState,
    pub platform_type: &'static str,
    pub deployment: &'static str,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub zone: String,
}

/// A zone as ShowZone prints it (Gen3).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Zone {
    pub key: SiteKey,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub location: Loc,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_json_keeps_go_field_order_and_omits_empty() {
        let key = AppKey {
            organization: "acme".into(),
            name: "r1".into(),
            version: "1".into(),
        };
        assert_eq!(
            key_json(&key),
            r#"{"organization":"acme","name":"r1","version":"1"}"#
        );
        let partial = AppKey {
            organization: "acme".into(),
            ..AppKey::default()
        };
        assert_eq!(key_json(&partial), r#"{"organization":"acme"}"#);
        let inst = AppInstKey {
            name: "r1".into(),
            organization: "acme".into(),
            cloudlet_key: Some(SiteKey::new("TDG", "x")),
        };
        assert_eq!(
            key_json(&inst),
            r#"{"name":"r1","organization":"acme","cloudlet_key":{"organization":"TDG","name":"x"}}"#
        );
    }

    #[test]
    fn udec64_prints_like_go() {
        assert_eq!(
            serde_json::to_string(&Udec64::whole(2)).ok(),
            Some("2".into())
        );
        assert_eq!(
            serde_json::to_string(&Udec64 { milli: 500 }).ok(),
            Some("\"0.5\"".into())
        );
    }

    #[test]
    fn secrets_are_redacted_in_output_but_revealed_on_request() {
        let mut app = App::default();
        app.secret_env_vars
            .0
            .insert("TOKEN".into(), "s3cret".into());
        let shown = serde_json::to_value(&app).unwrap();
        assert_eq!(shown["secret_env_vars"]["TOKEN"], "***");
        assert_eq!(app.revealed_json()["secret_env_vars"]["TOKEN"], "s3cret");
    }
}
