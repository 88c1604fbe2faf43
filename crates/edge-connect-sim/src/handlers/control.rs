//! The `/__sim/*` control endpoints for tests (no token; only with faults enabled): faults,
//! seeding, state dump, reset, request log, capacity, containers.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::seed::Seed;
use crate::context::Shared;
use crate::faults::Fault;
use crate::protocol::decode::BODY_LIMIT;
use crate::protocol::encode::{json_response, unary_ok};
use crate::protocol::ApiError;
use crate::reqlog::EntryJson;

/// One fault or a list of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum Faults {
    One(Fault),
    Many(Vec<Fault>),
}

#[derive(Deserialize)]
struct Capacity {
    organization: String,
    name: String,
    #[serde(default)]
    max_app_insts: Option<usize>,
}

const ENDPOINTS: [&str; 7] = [
    "containers",
    "faults",
    "seed",
    "state",
    "reset",
    "requests",
    "capacity",
];

/// Serves one `/__sim/<sub>` request.
pub(crate) async fn handle(
    shared: &Arc<Shared>,
    method: &Method,
    sub: &str,
    body: Body,
) -> Response {
    match route(shared, method, sub, body).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn route(
    shared: &Arc<Shared>,
    method: &Method,
    sub: &str,
    body: Body,
) -> Result<Response, ApiError> {
    match (method.as_str(), sub) {
        ("POST", "faults") => {
            match read::<Faults>(body).await? {
                Faults::One(f) => shared.inject(f),
                Faults::Many(list) => list.into_iter().for_each(|f| shared.inject(f)),
            }
            Ok(unary_ok())
        }
        ("GET", "faults") => json(&shared.pending_faults()),
        ("POST", "seed") => {
            let seed = read::<Seed>(body).await?;
            let seeded = super::seed::seed(shared, &seed)
                .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e))?;
            json(&seeded)
        }
        ("GET", "state") => json(&shared.state_json()),
        ("GET", "containers") => json(&shared.containers_json()),
        ("POST", "reset") => {
            shared.reset();
            Ok(unary_ok())
        }
        ("GET", "requests") => {
            let entries = shared.log.timed_entries();
            let rows: Vec<EntryJson<'_>> =
                entries.iter().map(|(t, e)| EntryJson::new(*t, e)).collect();
            json(&rows)
        }
        ("POST", "capacity") => {
            let c = read::<Capacity>(body).await?;
            shared.set_capacity(&c.organization, &c.name, c.max_app_insts);
            Ok(unary_ok())
        }
        (_, sub) if ENDPOINTS.contains(&sub) => Err(ApiError::method_not_allowed()),
        _ => Err(ApiError::not_found()),
    }
}

async fn read<T: DeserializeOwned>(body: Body) -> Result<T, ApiError> {
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large"))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("Invalid JSON data: {e}")))
}

fn json<T: serde::Serialize>(value: &T) -> Result<Response, ApiError> {
    let body = serde_json::to_vec(value).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode reply: {e}"),
        )
    })?;
    Ok(json_response(StatusCode::OK, body))
}
