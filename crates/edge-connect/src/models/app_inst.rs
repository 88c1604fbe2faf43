//! An AppInst: as CreateAppInst takes it and as ShowAppInst shows it (both key shapes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{AppInstKey, AppKey, SiteRef};

/// The body of a CreateAppInst request.
#[derive(Debug, Clone, Serialize)]
pub struct NewAppInst {
    /// Key (with `cloudlet_key` inside for the older shape).
    pub key: AppInstKey,
    /// The App to deploy.
    pub app_key: AppKey,
    /// The zone (newer shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_key: Option<SiteRef>,
    /// Marks a ShowAppInst can filter on (servers from 2024-08-20 on keep them; older ones
    /// drop them, docs/edge-connect-behaviours.md B23).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An AppInst as ShowAppInst returns it (either shape).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct AppInst {
    pub key: AppInstKey,
    /// Deployed App (absent in the oldest shape).
    pub app_key: Option<AppKey>,
    /// Zone (newer shape).
    pub zone_key: Option<SiteRef>,
    /// Chosen cloudlet (newer shape: output only).
    pub cloudlet_key: Option<SiteRef>,
    /// Tracked state.
    pub state: crate::state::AppInstState,
    /// Errors the controller recorded for it (with an `*Error` state, or while it retries).
    #[serde(deserialize_with = "super::first_items")]
    pub errors: Vec<String>,
    /// Base FQDN, when the App has ports.
    pub uri: String,
    /// Its access ports as the site's load balancer maps them (B36); `null` reads as none.
    #[serde(deserialize_with = "super::first_items")]
    pub mapped_ports: Vec<MappedPort>,
    /// Creation time as the server writes it (RFC 3339); empty when absent or in another form
    /// (an older server's `{seconds, nanos}`), which must not make the whole line unreadable.
    #[serde(deserialize_with = "text_or_nothing")]
    pub created_at: String,
}

/// One mapped port: where a client reaches an access port (docs/edge-connect-behaviours.md B36,
/// B37).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MappedPort {
    /// The port the App listens on.
    pub internal_port: u32,
    /// The port the load balancer gave it.
    pub public_port: u32,
    /// Prepended to the AppInst's `uri` (a Service's name and `.` behind an IP per Service).
    pub fqdn_prefix: String,
    /// The load balancer terminates TLS on it.
    pub tls: bool,
}

impl AppInst {
    /// `host:port` where `internal_port` is reached from outside, with whether it speaks TLS:
    /// `<fqdn_prefix><uri>:<public_port>`, once the AppInst has a `uri` (B37).
    pub fn address(&self, internal_port: u32) -> Option<(String, bool)> {
        let port = self
            .mapped_ports
            .iter()
            .find(|p| p.internal_port == internal_port && p.public_port != 0)?;
        (!self.uri.is_empty()).then(|| {
            let host = format!("{}{}", port.fqdn_prefix, self.uri);
            (format!("{host}:{}", port.public_port), port.tls)
        })
    }

    /// Why it is not Ready, in the controller's words: its errors, or else its state.
    pub fn failure(&self) -> String {
        match self.errors.as_slice() {
            [] => self.state.to_string(),
            errors => errors.join("; "),
        }
    }

    /// The cloudlet the instance runs on, whichever shape the server used.
    pub fn cloudlet(&self) -> Option<&SiteRef> {
        self.cloudlet_key.as_ref().filter(|c| !c.is_empty()).or(self
            .key
            .cloudlet_key
            .as_ref()
            .filter(|c| !c.is_empty()))
    }
}

fn text_or_nothing<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(text) => text,
        _ => String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AppInstState;

    #[test]
    fn reads_both_key_shapes_and_any_created_at() {
        let gen2: AppInst = serde_json::from_str(
            r#"{"key":{"name":"r","organization":"o","cloudlet_key":{"organization":"TDG","name":"c"}},"state":"Ready","created_at":{"seconds":5}}"#,
        )
        .unwrap();
        assert_eq!(gen2.cloudlet().map(|c| c.name.as_str()), Some("c"));
        assert_eq!(gen2.created_at, "");
        let gen3: AppInst = serde_json::from_str(
            r#"{"key":{"name":"r","organization":"o"},"zone_key":{"organization":"TDG","name":"z"},"cloudlet_key":{"organization":"TDG","name":"c3"},"mapped_ports":null,"state":"Creating","created_at":"2026-01-02T03:04:05Z"}"#,
        )
        .unwrap();
        assert_eq!(gen3.cloudlet().map(|c| c.name.as_str()), Some("c3"));
        assert_eq!(gen3.state, AppInstState::Creating);
        assert_eq!(gen3.created_at, "2026-01-02T03:04:05Z");
    }
}
