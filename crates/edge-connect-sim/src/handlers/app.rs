//! The App RPCs CreateApp, DeleteApp and ShowApp, with the controller's order of checks
//! (docs/edge-connect-behaviours.md B1, B8, B16, B17).

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;

use crate::context::Call;
use crate::domain::app_build::stamp_new;
use crate::domain::app_config::{configure, precheck, validate};
use crate::lock;
use crate::model::store::State;
use crate::model::{filter, key_json, App, AppIn};
use crate::protocol::decode::decode;
use crate::protocol::encode::unary_ok;
use crate::protocol::stream::{ndjson_response, show_body};
use crate::protocol::ApiError;

/// The App object without the fields the imitated release does not have.
fn known_fields(call: &Call) -> Value {
    call.known_fields(call.shared.config.release.unknown_app_fields())
}

/// `CreateApp`.
pub(crate) fn create(call: Call) -> Result<Response, ApiError> {
    let input: AppIn = decode(known_fields(&call), "App")?;
    if let Some(field) = input.invalid_create_field() {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    validate(&input)?;
    let shared = &call.shared;
    let mut st = lock(&shared.state);
    let stored = store_new(&call, &mut st, &input);
    if stored.is_err() && !input.secret_env_vars.is_empty() {
        // main `pkg/controller/app_api.go:694-708`: the controller writes the request's secret
        // env vars to Vault under the App key *before* it finds the key taken (or any other
        // error), and its cleanup deletes that Vault entry, so an existing App of that key
        // keeps the names of its secrets but loses their values.
        if let Some(existing) = st.app(&input.key) {
            let mut wiped = App::clone(existing);
            wiped.secrets_wiped = true;
            st.put_app(wiped);
        }
    }
    stored
}

/// The create under the state lock, from the existence check on.
fn store_new(call: &Call, st: &mut State, input: &AppIn) -> Result<Response, ApiError> {
    if st.app(&input.key).is_some() {
        return Err(ApiError::bad_request(format!(
            "App key {} already exists",
            key_json(&input.key)
        )));
    }
    precheck(input)?;
    let mut app = input.to_app();
    configure(&call.shared.infra, &mut app)?;
    stamp_new(&call.shared.rng, &mut app, &call.region);
    st.put_app(app);
    Ok(unary_ok())
}

/// `DeleteApp`: refused while instances exist.
pub(crate) fn delete(call: Call) -> Result<Response, ApiError> {
    let input: AppIn = decode(known_fields(&call), "App")?;
    if let Some(field) = input.invalid_create_field() {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    let mut st = lock(&call.shared.state);
    if st.app(&input.key).is_none() {
        return Err(ApiError::bad_request(format!(
            "App key {} not found",
            key_json(&input.key)
        )));
    }
    if let Some(inst) = st.first_inst_of(&input.key) {
        return Err(ApiError::bad_request(format!(
            "Application in use by static AppInst {}",
            key_json(inst)
        )));
    }
    st.remove_app(&input.key);
    Ok(unary_ok())
}

/// `ShowApp`: every visible App matching the filter, one line each.
pub(crate) fn show(call: Call) -> Result<Response, ApiError> {
    let input: AppIn = decode(known_fields(&call), "App")?;
    call.authorize_view()?;
    call.check_region()?;
    let key = input.key.clone();
    let mut rest = serde_json::to_value(input.to_app()).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut rest {
        map.remove("key");
    }
    let rest = filter::prune(rest);
    let items: Vec<Arc<App>> = {
        let st = lock(&call.shared.state);
        call.visible_orgs(&key.organization)
            .into_iter()
            .flat_map(|org| st.apps_of(org, &key.name))
            .filter(|app| key.version.is_empty() || app.key.version == key.version)
            .filter(|app| filter::keeps(rest.as_ref(), app.as_ref()))
            .cloned()
            .collect()
    };
    Ok(ndjson_response(show_body(items)))
}
