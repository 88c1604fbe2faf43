//! ShowAppInst: every visible instance matching the filter, in the generation's shape.

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;

use crate::config::ApiGeneration;
use crate::context::Call;
use crate::lock;
use crate::model::{filter, AppInst, AppInstIn, RuntimeInfo};
use crate::protocol::decode::decode;
use crate::protocol::stream::{ndjson_response, show_body};
use crate::protocol::ApiError;

/// The non-key part of a ShowAppInst filter, in output form (zero fields pruned).
fn rest_filter(input: &AppInstIn, api: ApiGeneration) -> Option<Value> {
    // Gen2 has no top-level cloudlet_key/zone_key: there they are unknown fields, ignored.
    let gen3 = api == ApiGeneration::Gen3;
    let probe = AppInst {
        app_key: input.app_key.clone(),
        cluster_key: input.cluster_key.clone(),
        cloudlet_key: (gen3 && !input.cloudlet_key.is_empty()).then(|| input.cloudlet_key.clone()),
        zone_key: (gen3 && !input.zone_key.is_empty()).then(|| input.zone_key.clone()),
        cloudlet_loc: input.cloudlet_loc.clone(),
        uri: input.uri.clone(),
        liveness: input.liveness,
        flavor: input.flavor.clone(),
        state: input.state,
        errors: input.errors.clone().unwrap_or_default(),
        crm_override: input.crm_override,
        runtime_info: RuntimeInfo {
            container_ids: input.runtime_info.container_ids.clone().unwrap_or_default(),
        },
        revision: input.revision.clone(),
        configs: input.configs.clone(),
        health_check: input.health_check,
        power_state: input.power_state,
        dedicated_ip: input.dedicated_ip,
        unique_id: input.unique_id.clone(),
        compatibility_version: input.compatibility_version,
        enable_ipv6: input.enable_ipv6,
        obj_id: input.obj_id.clone(),
        annotations: input.annotations.clone(),
        kubernetes_resources: input.kubernetes_resources.clone(),
        node_resources: input.node_resources.clone(),
        is_standalone: input.is_standalone,
        namespace: input.namespace.clone(),
        tags: input.tags.clone(),
        ..AppInst::default()
    };
    let mut value = serde_json::to_value(&probe).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("key");
    }
    filter::prune(value)
}

/// `ShowAppInst`: every visible instance matching the filter, in the generation's shape.
pub(crate) fn show(call: Call) -> Result<Response, ApiError> {
    let input: AppInstIn = decode(
        call.known_fields(call.shared.config.release.unknown_app_inst_fields()),
        "AppInst",
    )?;
    call.authorize_view()?;
    call.check_region()?;
    let gen2 = call.api() == ApiGeneration::Gen2;
    let wanted = &input.key;
    let cloudlet = &wanted.cloudlet_key;
    let rest = rest_filter(&input, call.api());
    let items: Vec<Arc<AppInst>> = {
        let st = lock(&call.shared.state);
        call.visible_orgs(&wanted.organization)
            .into_iter()
            .flat_map(|org| st.insts_of(org, &wanted.name))
            .filter(|inst| {
                let ck = inst.key.cloudlet_key.clone().unwrap_or_default();
                !gen2
                    || ((cloudlet.organization.is_empty()
                        || ck.organization == cloudlet.organization)
                        && (cloudlet.name.is_empty() || ck.name == cloudlet.name))
            })
            .filter(|inst| filter::keeps(rest.as_ref(), inst.as_ref()))
            .cloned()
            .collect()
    };
    Ok(ndjson_response(show_body(items)))
}
