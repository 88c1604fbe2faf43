//! Layer 6: the HTTP front: routing (404/405 before anything else), latency and early faults, token
//! check, request decoding, dispatch to the RPC handlers, and the request log.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{request::Parts, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::{stream, StreamExt};

use crate::config::ApiGeneration;
use crate::context::{Call, Shared};
use crate::handlers::{app, appinst, appinst_show, auth, control, infra};
use crate::lock;
use crate::protocol::decode::{envelope, normalize, parse_json, BODY_LIMIT};
use crate::protocol::ApiError;
use crate::reqlog::{PendingEntry, RequestLogEntry};

/// The controller RPCs the simulator serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rpc {
    CreateApp,
    DeleteApp,
    ShowApp,
    CreateAppInst,
    DeleteAppInst,
    ShowAppInst,
    ShowFlavor,
    ShowCloudlet,
    ShowZone,
    ShowFlavorsForZone,
}

/// An RPC with its name in the URL, its wrapper key in the request (lower-case) and that key's
/// Go field name (for error texts).
type RpcEntry = (Rpc, &'static str, &'static str, &'static str);

const RPCS: [RpcEntry; 10] = [
    (Rpc::CreateApp, "CreateApp", "app", "App"),
    (Rpc::DeleteApp, "DeleteApp", "app", "App"),
    (Rpc::ShowApp, "ShowApp", "app", "App"),
    (Rpc::CreateAppInst, "CreateAppInst", "appinst", "AppInst"),
    (Rpc::DeleteAppInst, "DeleteAppInst", "appinst", "AppInst"),
    (Rpc::ShowAppInst, "ShowAppInst", "appinst", "AppInst"),
    (Rpc::ShowFlavor, "ShowFlavor", "flavor", "Flavor"),
    (Rpc::ShowCloudlet, "ShowCloudlet", "cloudlet", "Cloudlet"),
    (Rpc::ShowZone, "ShowZone", "zone", "Zone"),
    (
        Rpc::ShowFlavorsForZone,
        "ShowFlavorsForZone",
        "zonekey",
        "ZoneKey",
    ),
];

impl Rpc {
    /// The RPC for a URL segment with its wrapper keys, if this generation has it (zones are
    /// Gen3-only). Route matching is case-sensitive, as in
    /// echo.
    fn parse(name: &str, api: ApiGeneration) -> Option<RpcEntry> {
        let entry = RPCS.into_iter().find(|e| e.1 == name)?;
        let available = match entry.0 {
            Rpc::ShowZone | Rpc::ShowFlavorsForZone => api == ApiGeneration::Gen3,
            _ => true,
        };
        available.then_some(entry)
    }

    async fn run(self, call: Call) -> Result<Response, ApiError> {
        match self {
            Rpc::CreateApp => app::create(call),
            Rpc::DeleteApp => app::delete(call),
            Rpc::ShowApp => app::show(call),
            Rpc::CreateAppInst => appinst::create(call).await,
            Rpc::DeleteAppInst => appinst::delete(call).await,
            Rpc::ShowAppInst => appinst_show::show(call),
            Rpc::ShowFlavor => infra::show_flavors(&call),
            Rpc::ShowCloudlet => infra::show_cloudlets(&call),
            Rpc::ShowZone => infra::show_zones(&call),
            Rpc::ShowFlavorsForZone => infra::show_flavors_for_zone(&call),
        }
    }
}

enum Route {
    Login,
    Ctrl(RpcEntry),
    Control(String),
    NotFound,
}

impl Route {
    fn resolve(path: &str, shared: &Shared) -> Route {
        if path == "/api/v1/login" {
            Route::Login
        } else if let Some(name) = path.strip_prefix("/api/v1/auth/ctrl/") {
            Rpc::parse(name, shared.config.api).map_or(Route::NotFound, Route::Ctrl)
        } else if let Some(rest) = path.strip_prefix("/__sim/") {
            if shared.config.faults_enabled {
                Route::Control(rest.to_string())
            } else {
                Route::NotFound
            }
        } else {
            Route::NotFound
        }
    }

    fn rpc_name(&self) -> &'static str {
        match self {
            Route::Login => "login",
            Route::Ctrl((_, name, _, _)) => name,
            Route::Control(_) | Route::NotFound => "",
        }
    }
}

/// The whole HTTP surface of the simulator.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    // One fallback handler does all routing, so 404/405 and their JSON bodies are ours.
    Router::new().fallback(dispatch).with_state(shared)
}

async fn dispatch(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let start = Instant::now();
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let route = Route::resolve(&path, &shared);
    if let Route::Control(sub) = &route {
        // Control calls are the test's own, so they stay out of the request log.
        return control::handle(&shared, &parts.method, sub, body).await;
    }
    let rpc = route.rpc_name();
    // A call runs to its end whether or not its client waits for the answer: the MC runs the
    // controller call under the request's context (docs/edge-connect-behaviours.md B7), and
    // a unary call the controller has committed stays done when its client leaves, so a client
    // that gave up on a CreateApp may find the App made later. Streams keep their own undo on
    // a closed stream (B7). The task is detached from the connection.
    let call = tokio::spawn(async move {
        let response = match api(&shared, &route, &parts, body, &path).await {
            Ok(response) => response,
            Err(err) => err.into_response(),
        };
        logged(&shared, &parts.method, path, rpc, start, response)
    });
    call.await
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn api(
    shared: &Arc<Shared>,
    route: &Route,
    parts: &Parts,
    body: Body,
    path: &str,
) -> Result<Response, ApiError> {
    if matches!(route, Route::NotFound | Route::Control(_)) {
        return Err(ApiError::not_found());
    }
    if parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    // The request is read whole first, as the MC binds it before calling the controller.
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large"))?;
    pause(shared.config.latency).await;
    let early = lock(&shared.faults).take_early(route.rpc_name());
    pause(early.delay).await;
    if let Some((status, message)) = early.reply {
        return Err(fault_reply(status, message, path));
    }
    match route {
        Route::Login => auth::login(&shared.config, &shared.tokens, &parts.headers, &bytes).await,
        Route::Ctrl((rpc, _, wrapper, go_wrapper)) => {
            shared.tokens.authenticate(&parts.headers)?;
            let env = envelope(normalize(parse_json(&bytes)?), wrapper, go_wrapper)?;
            let call = Call {
                shared: shared.clone(),
                region: env.region,
                object: env.object,
            };
            rpc.run(call).await
        }
        Route::Control(_) | Route::NotFound => Err(ApiError::not_found()),
    }
}

async fn pause(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// The reply of an injected `http_status` fault, with the MC's texts as defaults.
fn fault_reply(status: u16, message: Option<String>, path: &str) -> ApiError {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = message.unwrap_or_else(|| match code {
        StatusCode::TOO_MANY_REQUESTS => {
            format!("{path} is rejected, please retry later. Error is: rate limit exceeded")
        }
        StatusCode::SERVICE_UNAVAILABLE => "Service temporarily unavailable".into(),
        other => other.canonical_reason().unwrap_or("Error").to_string(),
    });
    ApiError::new(code, message)
}

/// Records the call in the request log: complete replies now, streams when they end.
fn logged(
    shared: &Arc<Shared>,
    method: &Method,
    path: String,
    rpc: &str,
    start: Instant,
    response: Response,
) -> Response {
    let pending = PendingEntry {
        log: shared.log.clone(),
        entry: RequestLogEntry {
            method: method.to_string(),
            path,
            rpc: rpc.to_string(),
            status: response.status().as_u16(),
            duration: Duration::ZERO,
        },
        start,
    };
    if response.body().size_hint().exact().is_some() {
        drop(pending);
        return response;
    }
    let (parts, body) = response.into_parts();
    let watched = stream::unfold(
        (body.into_data_stream(), pending),
        |(mut inner, pending)| async move {
            // At the end `pending` is dropped, so the entry is logged before the stream ends
            // and a client that has read the whole stream always finds it.
            let item = inner.next().await?;
            Some((item, (inner, pending)))
        },
    );
    Response::from_parts(parts, Body::from_stream(watched))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpcs_depend_on_the_generation() {
        assert_eq!(
            Rpc::parse("ShowZone", ApiGeneration::Gen3).map(|e| e.0),
            Some(Rpc::ShowZone)
        );
        assert_eq!(Rpc::parse("ShowZone", ApiGeneration::Gen2), None);
        assert_eq!(Rpc::parse("showapp", ApiGeneration::Gen3), None);
    }

    #[test]
    fn fault_replies_have_mc_defaults() {
        assert_eq!(
            fault_reply(429, None, "/api/v1/auth/ctrl/ShowApp").message,
            "/api/v1/auth/ctrl/ShowApp is rejected, please retry later. Error is: rate limit exceeded"
        );
        assert_eq!(
            fault_reply(503, None, "/x").message,
            "Service temporarily unavailable"
        );
        assert_eq!(
            fault_reply(500, None, "/x").message,
            "Internal Server Error"
        );
        assert_eq!(fault_reply(500, Some("boom".into()), "/x").message, "boom");
    }
}
