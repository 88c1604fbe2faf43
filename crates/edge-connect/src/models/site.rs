//! Zones, cloudlets and flavors as the region-wide Show calls return them.

use serde::Deserialize;

use super::{FlavorKey, SiteRef};

/// A flavor as ShowFlavor / ShowFlavorsForZone return it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Flavor {
    /// `ShowFlavor` shape.
    pub key: Option<FlavorKey>,
    /// `ShowFlavorsForZone` shape.
    pub name: Option<String>,
}

impl Flavor {
    /// The flavor's name in either shape.
    pub fn flavor_name(&self) -> &str {
        self.name
            .as_deref()
            .or(self.key.as_ref().map(|k| k.name.as_str()))
            .unwrap_or_default()
    }
}

/// A zone or cloudlet as ShowZone / ShowCloudlet return it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Site {
    pub key: SiteRef,
    /// The zone a Gen3 cloudlet belongs to (empty for zones and on Gen2).
    pub zone: String,
}
