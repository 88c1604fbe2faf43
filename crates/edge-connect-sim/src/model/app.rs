//! The App: stored in the MC's output order, and as sent (every field optional).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::enums::{AccessType, ImageType};
use super::keys::{AppKey, FlavorKey};
use super::values::{
    ConfigFile, KubernetesResources, NodeResources, SecretMap, TimestampIn, REDACTED,
};
use super::{is_false, is_zero_u32};
use crate::clock::Timestamp;

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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ConfigFile>,
    #[serde(skip_serializing_if = "is_false")]
    pub internal_ports: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "AccessType::is_zero")]
    pub access_type: AccessType,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// No `omitempty` in Go: `null` when unset.
    pub required_outbound_connections: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_serverless: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub global_id: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env_vars: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "SecretMap::is_empty")]
    pub secret_env_vars: SecretMap,
    /// The secret values are gone from the controller's encrypted storage (Vault) while the
    /// App still lists their names: a duplicate CreateApp with secrets wiped them
    /// (main `pkg/controller/app_api.go:694-708`). Not shown.
    #[serde(skip)]
    pub secrets_wiped: bool,
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
            if !self.secret_env_vars.is_empty() && !self.secrets_wiped {
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
    pub command: String,
    pub command_args: Vec<String>,
    pub annotations: String,
    pub deployment: String,
    pub deployment_manifest: String,
    pub deployment_generator: String,
    pub configs: Vec<ConfigFile>,
    pub internal_ports: bool,
    pub revision: String,
    pub access_type: AccessType,
    pub created_at: TimestampIn,
    pub updated_at: TimestampIn,
    pub required_outbound_connections: Option<Vec<Value>>,
    pub allow_serverless: bool,
    pub global_id: String,
    pub env_vars: BTreeMap<String, String>,
    pub secret_env_vars: BTreeMap<String, String>,
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
        if self.created_at.seconds_set {
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
            command: self.command.clone(),
            command_args: self.command_args.clone(),
            annotations: self.annotations.clone(),
            deployment: self.deployment.clone(),
            deployment_manifest: self.deployment_manifest.clone(),
            deployment_generator: self.deployment_generator.clone(),
            configs: self.configs.clone(),
            internal_ports: self.internal_ports,
            revision: self.revision.clone(),
            access_type: self.access_type,
            created_at: Timestamp::default(),
            updated_at: Timestamp::default(),
            required_outbound_connections: self.required_outbound_connections.clone(),
            allow_serverless: self.allow_serverless,
            global_id: self.global_id.clone(),
            env_vars: self.env_vars.clone(),
            secret_env_vars: SecretMap(self.secret_env_vars.clone()),
            secrets_wiped: false,
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

#[cfg(test)]
mod tests {
    use super::*;

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
