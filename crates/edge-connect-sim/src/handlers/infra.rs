//! The Show RPCs of the operator inventory: flavors, cloudlets, zones.

use axum::response::Response;
use serde::Serialize;
use serde_json::Value;

use crate::context::Call;
use crate::model::{filter, key_json, Cloudlet, Flavor, FlavorKey, FlavorName, SiteKey, Zone};
use crate::protocol::decode::decode;
use crate::protocol::stream::{bytes_body, ndjson_response, push_data_line};
use crate::protocol::ApiError;

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
    for item in items
        .iter()
        .filter(|item| filter::keeps(pruned.as_ref(), item))
    {
        push_data_line(&mut buf, item);
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
/// Cloudlets in pools none of the user's organizations belongs to are left out, as the MC's
/// `AuthzCloudlet.Ok` filter does (c39faca8f `pkg/mc/orm/authz_cloudlet.go:231-242`).
pub(crate) fn show_cloudlets(call: &Call) -> Result<Response, ApiError> {
    let config = &call.shared.config;
    let visible: Vec<Cloudlet> = call
        .shared
        .infra
        .cloudlets
        .iter()
        .filter(|c| {
            config
                .orgs
                .iter()
                .any(|org| config.cloudlet_usable_by(&c.key.organization, &c.key.name, org))
        })
        .cloned()
        .collect();
    show_matching::<Cloudlet, SiteFilter>(&visible, call, "Cloudlet")
}

/// `ShowZone` (Gen3).
pub(crate) fn show_zones(call: &Call) -> Result<Response, ApiError> {
    show_matching::<Zone, SiteFilter>(&call.shared.infra.zones, call, "Zone")
}

/// `ShowFlavorsForZone` (Gen3): every flavor is offered at every site.
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
    let mut buf = Vec::new();
    for flavor in &infra.flavors {
        push_data_line(
            &mut buf,
            &FlavorName {
                name: &flavor.key.name,
            },
        );
    }
    Ok(ndjson_response(bytes_body(buf)))
}
