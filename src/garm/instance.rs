//! `ProviderInstance`: what Create/Get print and List prints an array of.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The statuses GARM accepts from a provider. Everything else (`pending_create`, `creating`, ...)
/// is GARM-internal and makes GARM reject the whole answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstanceStatus {
    /// Deployed (or still deploying: GARM has no pending slot).
    Running,
    /// The App exists but has no AppInst (stopped on purpose, or being deleted).
    Stopped,
    /// The deployment failed; `provider_fault` says why.
    Error,
    /// A state this provider cannot map.
    #[default]
    Unknown,
}

/// An address of the instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    /// Host name or IP.
    pub address: String,
    /// `public` or `private`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// GARM's `ProviderInstance`, serialised with GARM's field names. Its `os_name` and
/// `os_version` are never sent: Edge Connect does not tell them, and GARM reads an absent field
/// as empty, as it read them before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderInstance {
    /// Stable id GARM passes back as `GARM_INSTANCE_ID`.
    pub provider_id: String,
    /// GARM's instance name (reconciliation matches on it).
    pub name: String,
    /// `linux` / `windows`.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub os_type: String,
    /// Architecture (`amd64`, `arm64`).
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub os_arch: String,
    /// Reachable addresses (Edge Connect gives one only for Apps with ports).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub addresses: Vec<Address>,
    /// One of the four statuses GARM accepts.
    pub status: InstanceStatus,
    /// Base64 of a human-readable fault (GARM decodes it as Go `[]byte`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub provider_fault: Option<String>,
}

impl ProviderInstance {
    /// Sets `provider_fault` from plain text, base64-encoding it as GARM expects. The caller
    /// masks the text first (a server's, an AppInst's errors): base64 would hide a secret from
    /// any later look.
    pub fn with_fault(mut self, fault: &str) -> Self {
        self.provider_fault = (!fault.is_empty())
            .then(|| base64::engine::general_purpose::STANDARD.encode(fault.as_bytes()));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_with_garm_names_and_base64_fault() {
        let i = ProviderInstance {
            provider_id: "garm-a".into(),
            name: "garm-a".into(),
            os_type: "linux".into(),
            os_arch: "amd64".into(),
            addresses: vec![],
            status: InstanceStatus::Error,
            provider_fault: None,
        }
        .with_fault("image pull failed");
        let json = serde_json::to_string(&i).unwrap();
        assert_eq!(
            json,
            r#"{"provider_id":"garm-a","name":"garm-a","os_type":"linux","os_arch":"amd64","status":"error","provider_fault":"aW1hZ2UgcHVsbCBmYWlsZWQ="}"#
        );
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(i.provider_fault.as_deref().unwrap_or_default())
            .unwrap();
        assert_eq!(decoded, b"image pull failed");
    }
}
