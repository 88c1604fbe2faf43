//! The operator side of the simulated region: flavors, cloudlets (edge sites) and zones, and
//! the Show RPCs that list them.

use axum::response::Response;

use super::clock::Timestamp;
use super::config::{flavor_size, site_location, ApiGeneration, SimConfig};
use super::enums::TrackedState;
use super::filter;
use super::http::Call;
use super::model::{key_json, Cloudlet, Flavor, FlavorKey, FlavorName, Loc, SiteKey, Zone};
use super::stream::{bytes_body, ndjson_response, push_data_line};
use super::wire::{decode, ApiError};
use serde::Serialize;
use serde_json::Value;

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

impl Infra {
    /// Builds the sites of a configuration.
    pub(crate) fn new(config: &SimConfig) -> Self {
        let created = Timestamp::now();
        let flavors = config
            .flavors
            .iter()
            .map(|name| {
                let size = flavor_size(name);
                Flavor {
                    key: FlavorKey { name: name.clone() },
                    ram: size.ram,
                    vcpus: size.vcpus,
                    disk: size.disk,
                }
            })
            .collect();
        let gen3 = config.api == ApiGeneration::Gen3;
        let zones: Vec<Zone> = if gen3 {
            config
                .zones
                .iter()
                .map(|(org, name)| Zone {
                    key: SiteKey::new(org, name),
                    description: name.clone(),
                    location: loc(name),
                    created_at: created,
                    updated_at: Timestamp::default(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let cloudlets = config
            .cloudlets
            .iter()
            .map(|(org, name)| Cloudlet {
                key: SiteKey::new(org, name),
                location: loc(name),
                ip_support: "Dynamic",
                num_dynamic_ips: 254,
                state: TrackedState::Ready,
                platform_type: "Kubernetes",
                deployment: "kubernetes",
                created_at: created,
                updated_at: Timestamp::default(),
                zone: if gen3 {
                    zones
                        .iter()
                        .find(|z| z.key.name == *name)
                        .map(|z| z.key.name.clone())
                        .unwrap_or_default()
                } else {
                    String::new()
                },
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

    /// A cloudlet by key.
    pub(crate) fn cloudlet(&self, key: &SiteKey) -> Option<&Cloudlet> {
        self.cloudlets
            .iter()
            .find(|c| c.key.organization == key.organization && c.key.name == key.name)
    }

    /// A zone by key.
    pub(crate) fn zone(&self, key: &SiteKey) -> Option<&Zone> {
        self.zones
            .iter()
            .find(|z| z.key.organization == key.organization && z.key.name == key.name)
    }

    /// The cloudlet that hosts a zone's instances: the one with the zone's name, else the first.
    pub(crate) fn cloudlet_for_zone(&self, zone: &SiteKey) -> Option<&Cloudlet> {
        self.cloudlets
            .iter()
            .find(|c| c.key.name == zone.name)
            .or_else(|| self.cloudlets.first())
    }
}

/// Streams every item that matches the (normalised) filter object, in output form.
fn show_matching<T: Serialize, I: for<'de> serde::Deserialize<'de> + Serialize>(
    items: &[T],
    call: &Call,
    go_wrapper: &str,
) -> Result<Response, ApiError> {
    // Decoding validates types; re-serialising gives the filter in output form.
    let typed: I = decode(call.object.clone(), go_wrapper)?;
    call.authorize_view()?;
    call.check_region()?;
    let pruned = filter::prune(serde_json::to_value(&typed).unwrap_or(Value::Null));
    let mut buf = Vec::new();
    for item in items {
        let keep = match &pruned {
            None => true,
            Some(f) => filter::matches(f, &serde_json::to_value(item).unwrap_or(Value::Null)),
        };
        if keep {
            push_data_line(&mut buf, item);
        }
    }
    Ok(ndjson_response(bytes_body(buf)))
}

/// Filter shape of a flavor (`key`, sizes).
#[derive(Serialize, serde::Deserialize, Default)]
#[serde(default)]
struct FlavorFilter {
    key: FlavorKey,
    ram: u64,
    vcpus: u64,
    disk: u64,
}

/// Filter shape of a cloudlet or zone (`key` only; other fields are informational).
#[derive(Serialize, serde::Deserialize, Default)]
#[serde(default)]
struct SiteFilter {
    key: SiteKey,
}

/// `ShowFlavor`.
pub(crate) fn show_flavors(call: &Call) -> Result<Response, ApiError> {
    show_matching::<Flavor, FlavorFilter>(&call.shared.infra.flavors, call, "Flavor")
}

/// `ShowCloudlet`.
pub(crate) fn show_cloudlets(call: &Call) -> Result<Response, ApiError> {
    show_matching::<Cloudlet, SiteFilter>(&call.shared.infra.cloudlets, call, "Cloudlet")
}

/// `ShowZone` (Gen3).
pub(crate) fn show_zones(call: &Call) -> Result<Response, ApiError> {
    show_matching::<Zone, SiteFilter>(&call.shared.infra.zones, call, "Zone")
}

fn flavor_names(infra: &Infra) -> Response {
    let mut buf = Vec::new();
    for flavor in &infra.flavors {
        push_data_line(
            &mut buf,
            &FlavorName {
                name: &flavor.key.name,
            },
        );
    }
    ndjson_response(bytes_body(buf))
}

/// `ShowFlavorsForZone` (Gen3): every flavor is offered in every zone.
pub(crate) fn show_flavors_for_zone(call: &Call) -> Result<Response, ApiError> {
    let key: SiteKey = decode(call.object.clone(), "ZoneKey")?;
    call.authorize_view()?;
    call.check_region()?;
    let infra = &call.shared.infra;
    if infra.zone(&key).is_none() {
        return Err(ApiError::bad_request(format!(
            "Zone key {} not found",
            key_json(&key)
        )));
    }
    Ok(flavor_names(infra))
}

/// `ShowFlavorsForCloudlet` (Gen2).
pub(crate) fn show_flavors_for_cloudlet(call: &Call) -> Result<Response, ApiError> {
    let key: SiteKey = decode(call.object.clone(), "CloudletKey")?;
    call.authorize_view()?;
    call.check_region()?;
    let infra = &call.shared.infra;
    if infra.cloudlet(&key).is_none() {
        return Err(ApiError::bad_request(format!(
            "Cloudlet key {} not found",
            key_json(&key)
        )));
    }
    Ok(flavor_names(infra))
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
        assert_eq!(infra.flavor("EU.small").map(|f| f.ram), Some(2048));
    }
}
