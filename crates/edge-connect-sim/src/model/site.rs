//! The operator side of a region: flavors, cloudlets (edge sites) and zones as Show prints
//! them, and the inventory derived from the configuration at start.

use serde::{Deserialize, Serialize};

use super::enums::TrackedState;
use super::is_zero_f64;
use super::keys::{FlavorKey, SiteKey};
use crate::clock::Timestamp;
use crate::config::{flavor_size, site_location, ApiGeneration, SimConfig};

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

/// A flavor as ShowFlavor prints it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Flavor {
    pub key: FlavorKey,
    pub ram: u64,
    pub vcpus: u64,
    pub disk: u64,
}

/// A flavor name line of ShowFlavorsForZone.
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
    /// Whether the CRM runs on the site (`SimConfig::cloudlet_settings`); not shown.
    #[serde(skip)]
    pub crm_on_edge: bool,
    /// Whether its nodes take no new pod (`CloudletSettings::pods_unscheduled`); not shown.
    #[serde(skip)]
    pub pods_unscheduled: bool,
    /// The Pod Security level its cluster enforces (`CloudletSettings::pod_security`).
    #[serde(skip)]
    pub pod_security: crate::config::PodSecurity,
    /// How it exposes access ports (`CloudletSettings::load_balancer`); not shown.
    #[serde(skip)]
    pub load_balancer: crate::config::LoadBalancer,
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

/// Flavors, cloudlets and zones derived from the configuration at start.
#[derive(Debug)]
pub(crate) struct Infra {
    /// Every flavor, in configured order.
    pub flavors: Vec<Flavor>,
    /// Every cloudlet, in configured order.
    pub cloudlets: Vec<Cloudlet>,
    /// Every zone, in configured order (empty in Gen2).
    pub zones: Vec<Zone>,
}

fn loc(name: &str) -> Loc {
    let (latitude, longitude) = site_location(name);
    Loc {
        latitude,
        longitude,
        ..Loc::default()
    }
}

/// The zone (name) of each configured cloudlet. A cloudlet belongs to at most one zone, of its
/// own operator organization (main `api/edgeproto/objs.go:1431-1440`: `Cloudlet.GetZone` is
/// `{Name: Zone, Organization: Key.Organization}`): to the zone of its own name if there is one,
/// else a zone that has no cloudlet yet takes the first cloudlet of its organization that has
/// no zone. A zone left without a cloudlet places nothing (`no available edge sites in zone`).
fn zone_homes(config: &SimConfig) -> Vec<Option<String>> {
    let mut homes: Vec<Option<String>> = config
        .cloudlets
        .iter()
        .map(|(org, name)| {
            config
                .zones
                .iter()
                .any(|(z_org, z_name)| z_org == org && z_name == name)
                .then(|| name.clone())
        })
        .collect();
    for (z_org, z_name) in &config.zones {
        if homes.iter().flatten().any(|home| home == z_name) {
            continue;
        }
        let free = config
            .cloudlets
            .iter()
            .zip(homes.iter_mut())
            .find(|((org, _), home)| org == z_org && home.is_none());
        if let Some((_, home)) = free {
            *home = Some(z_name.clone());
        }
    }
    homes
}

impl Infra {
    /// Builds the sites of a configuration.
    pub(crate) fn new(config: &SimConfig) -> Self {
        let created = Timestamp::now();
        let flavors = config
            .flavors
            .iter()
            .map(|name| {
                let (ram, vcpus, disk) = flavor_size(name);
                Flavor {
                    key: FlavorKey { name: name.clone() },
                    ram,
                    vcpus,
                    disk,
                }
            })
            .collect();
        let gen3 = config.api == ApiGeneration::Gen3;
        // Gen2 has no zones.
        let zones = config
            .zones
            .iter()
            .filter(|_| gen3)
            .map(|(org, name)| Zone {
                key: SiteKey::new(org, name),
                description: name.clone(),
                location: loc(name),
                created_at: created,
                updated_at: Timestamp::default(),
            })
            .collect();
        let homes = zone_homes(config);
        let cloudlets = config
            .cloudlets
            .iter()
            .zip(homes)
            .map(|((org, name), zone)| {
                let settings = config.cloudlet_settings(org, name);
                Cloudlet {
                    key: SiteKey {
                        federated_organization: settings.federated_organization,
                        ..SiteKey::new(org, name)
                    },
                    crm_on_edge: settings.crm_on_edge,
                    pods_unscheduled: settings.pods_unscheduled,
                    pod_security: settings.pod_security,
                    load_balancer: settings.load_balancer,
                    location: loc(name),
                    ip_support: "Dynamic",
                    num_dynamic_ips: 254,
                    state: TrackedState::Ready,
                    platform_type: "Kubernetes",
                    deployment: "kubernetes",
                    created_at: created,
                    updated_at: Timestamp::default(),
                    zone: zone.filter(|_| gen3).unwrap_or_default(),
                }
            })
            .collect();
        Infra {
            flavors,
            cloudlets,
            zones,
        }
    }

    /// A flavor by name.
    pub(crate) fn flavor(&self, name: &str) -> Option<&Flavor> {
        self.flavors.iter().find(|f| f.key.name == name)
    }

    /// A cloudlet by its whole key (`federated_organization` included, as the controller's
    /// store lookup does).
    pub(crate) fn cloudlet(&self, key: &SiteKey) -> Option<&Cloudlet> {
        self.cloudlets.iter().find(|c| c.key == *key)
    }

    /// A zone by key.
    pub(crate) fn zone(&self, key: &SiteKey) -> Option<&Zone> {
        self.zones
            .iter()
            .find(|z| z.key.organization == key.organization && z.key.name == key.name)
    }

    /// The cloudlet that hosts a zone's instances: the one ShowCloudlet shows in the zone.
    pub(crate) fn cloudlet_for_zone(&self, zone: &SiteKey) -> Option<&Cloudlet> {
        self.cloudlets
            .iter()
            .find(|c| c.key.organization == zone.organization && c.zone == zone.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_map_to_cloudlets() {
        let config = SimConfig {
            cloudlets: vec![("op".into(), "a".into()), ("op".into(), "b".into())],
            zones: vec![("op".into(), "b".into()), ("op".into(), "z".into())],
            ..SimConfig::default()
        };
        let infra = Infra::new(&config);
        let b = infra.cloudlet_for_zone(&SiteKey::new("op", "b")).unwrap();
        assert_eq!(b.key.name, "b");
        let z = infra.cloudlet_for_zone(&SiteKey::new("op", "z")).unwrap();
        assert_eq!(z.key.name, "a");
        assert_eq!(infra.cloudlets[0].zone, "z");
        assert_eq!(infra.flavor("EU.small").map(|f| f.ram), Some(2048));
    }

    #[test]
    fn a_zone_without_a_free_cloudlet_of_its_operator_is_empty() {
        let config = SimConfig {
            cloudlets: vec![("op".into(), "a".into()), ("other".into(), "b".into())],
            zones: vec![("op".into(), "x".into()), ("op".into(), "y".into())],
            ..SimConfig::default()
        };
        let infra = Infra::new(&config);
        assert_eq!(
            infra
                .cloudlet_for_zone(&SiteKey::new("op", "x"))
                .unwrap()
                .key
                .name,
            "a"
        );
        assert!(infra.cloudlet_for_zone(&SiteKey::new("op", "y")).is_none());
        assert_eq!(infra.cloudlets[1].zone, "");
    }
}
