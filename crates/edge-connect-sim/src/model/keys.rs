//! Object keys, serialised in Go field order (messages embed them as JSON).

use serde::{Deserialize, Serialize};

/// Compact JSON of a key for messages (`App key {...} not found`). Keys are plain strings,
/// so serialisation cannot fail; the fallback only keeps the signature total.
/// Written like Go's `json.Marshal` (`GetKeyString`, e.g. main `api/edgeproto/app.pb.go:2424-2445`),
/// so `&`, `<`, `>` in a key appear as `\u0026`, `\u003c`, `\u003e` inside the message.
pub(crate) fn key_json<T: Serialize>(key: &T) -> String {
    String::from_utf8(crate::gojson::go_json(key))
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "{}".to_string())
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
}
