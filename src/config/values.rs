//! The value types of the config: sites, placement, log level and format. (Deployment and
//! environment delivery live with the rules that depend on them, in `manifest_safety`.)

use schemars::JsonSchema;
use serde::Deserialize;

/// An organization + name pair naming a cloudlet or a zone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema, serde::Serialize)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct SiteKey {
    /// Operator organization, e.g. `TelekomOP`.
    pub organization: String,
    /// Cloudlet or zone name, e.g. `Munich`.
    pub name: String,
    /// A federation partner's cloudlet: the partner's organization, which a Gen2 AppInst key
    /// must repeat (c39 `api/edgeproto/cloudletkey.pb.go:34-38`; else `Specified Cloudlet not
    /// found`). Empty for the operator's own sites.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub federated_organization: String,
}

crate::object::object_only!(SiteKey, "an object of organization and name", serialize);

impl From<&SiteKey> for edge_connect::models::SiteRef {
    fn from(key: &SiteKey) -> Self {
        edge_connect::models::SiteRef {
            organization: key.organization.clone(),
            name: key.name.clone(),
            federated_organization: key.federated_organization.clone(),
        }
    }
}

/// Where an AppInst goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Placement {
    /// A cloudlet (older API shape).
    Cloudlet(SiteKey),
    /// A zone (newer API shape).
    Zone(SiteKey),
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Cloudlet(k) => write!(f, "cloudlet {}/{}", k.organization, k.name),
            Placement::Zone(k) => write!(f, "zone {}/{}", k.organization, k.name),
        }
    }
}

/// Log level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// One line per Edge Connect call and per outcome.
    #[default]
    Info,
    /// More detail.
    Debug,
    /// Everything.
    Trace,
}

/// Log format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}
