//! The client's API: one method of [`Client`] per RPC.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::appinst_start::Progress;
use crate::client::Client;
use crate::error::ApiError;
use crate::models::{App, AppInst, AppInstKey, AppKey, Flavor, NewApp, NewAppInst, Site, SiteRef};
use crate::rpc::Rpc;
use crate::stream::{collect, Show, StreamEnd};

/// At most this many objects of a Show answer are collected when all of it is wanted (zones,
/// cloudlets, flavors of a region; the Apps of one name): a region has tens, a name one; an
/// endless answer ends in an error naming the bound.
pub const MAX_COLLECTED: usize = 10_000;

impl Client {
    /// `CreateApp`.
    pub async fn create_app(&self, app: &NewApp) -> Result<(), ApiError> {
        self.unary(Rpc::CreateApp, app).await
    }

    /// `DeleteApp` (key only).
    pub async fn delete_app(&self, key: &AppKey) -> Result<(), ApiError> {
        self.unary(Rpc::DeleteApp, &KeyOnly { key }).await
    }

    /// `ShowApp` of the Apps whose key matches `filter` (empty parts are wildcards) and whose
    /// `env_vars` hold every one of `env_vars`: the Apps as they arrive, for the caller to keep
    /// what it needs. A server that does not know `env_vars` answers as if none were given
    /// (docs/edge-connect-behaviours.md B23): the caller still decides what is its own.
    pub async fn show_apps(
        &self,
        filter: &AppKey,
        env_vars: &[(&str, &str)],
    ) -> Result<Show<App>, ApiError> {
        let mut app = json!({ "key": app_key(filter) });
        if !env_vars.is_empty() {
            app["env_vars"] = string_map(env_vars);
        }
        self.show(Rpc::ShowApp, &app).await
    }

    /// `CreateAppInst`, its stream read to the end; each progress line goes to `progress`, read
    /// (the CRM's pod status lines with the pods they name).
    pub async fn create_app_inst(
        &self,
        inst: &NewAppInst,
        progress: &mut (dyn FnMut(Progress<'_>) + Send),
    ) -> Result<StreamEnd, ApiError> {
        self.operation(Rpc::CreateAppInst, inst, progress).await
    }

    /// `DeleteAppInst` (key only), its stream read to the end.
    pub async fn delete_app_inst(
        &self,
        key: &AppInstKey,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamEnd, ApiError> {
        let progress = &mut |p: Progress<'_>| progress(p.line);
        self.operation(Rpc::DeleteAppInst, &KeyOnly { key }, progress)
            .await
    }

    /// `ShowAppInst` of the AppInsts that deploy the App `app` (its empty parts are wildcards),
    /// whatever their names, and whose `annotations` hold every one of `annotations`: the
    /// AppInsts as they arrive. The controller compares each non-empty part of the filter's
    /// `app_key` (docs/edge-connect-behaviours.md B24); a server older than annotations answers
    /// as if none were given (B23).
    pub async fn show_app_insts(
        &self,
        app: &AppKey,
        annotations: &[(&str, &str)],
    ) -> Result<Show<AppInst>, ApiError> {
        let mut inst = json!({
            "key": non_empty([("organization", &app.organization)]),
            "app_key": app_key(app),
        });
        if !annotations.is_empty() {
            inst["annotations"] = string_map(annotations);
        }
        self.show(Rpc::ShowAppInst, &inst).await
    }

    /// `ShowZone` (Gen3). A 404 means the server predates zones.
    pub async fn show_zones(&self) -> Result<Vec<Site>, ApiError> {
        self.show_all(Rpc::ShowZone, &json!({})).await
    }

    /// `ShowCloudlet`.
    pub async fn show_cloudlets(&self) -> Result<Vec<Site>, ApiError> {
        self.show_all(Rpc::ShowCloudlet, &json!({})).await
    }

    /// `ShowFlavor`: every flavor of the region.
    pub async fn show_flavors(&self) -> Result<Vec<Flavor>, ApiError> {
        self.show_all(Rpc::ShowFlavor, &json!({})).await
    }

    /// `ShowFlavorsForZone`.
    pub async fn show_flavors_for_zone(&self, zone: &SiteRef) -> Result<Vec<Flavor>, ApiError> {
        self.show_all(Rpc::ShowFlavorsForZone, zone).await
    }

    /// Every object of a Show answer, at most [`MAX_COLLECTED`].
    async fn show_all<T: DeserializeOwned + Send + 'static>(
        &self,
        rpc: Rpc,
        filter: &impl Serialize,
    ) -> Result<Vec<T>, ApiError> {
        collect(rpc, self.show(rpc, filter).await?, MAX_COLLECTED).await
    }
}

/// The body of a delete: `{"key": ...}`.
#[derive(Serialize)]
struct KeyOnly<'a, K> {
    key: &'a K,
}

/// A key filter of the parts that are set (an empty string would match only empty names).
fn non_empty<const N: usize>(parts: [(&str, &String); N]) -> Value {
    let set = parts.into_iter().filter(|(_, v)| !v.is_empty());
    Value::Object(set.map(|(k, v)| (k.to_string(), json!(v))).collect())
}

/// An `AppKey` filter: the parts of `key` that are set.
fn app_key(key: &AppKey) -> Value {
    non_empty([
        ("organization", &key.organization),
        ("name", &key.name),
        ("version", &key.version),
    ])
}

/// A map filter (`env_vars`, `annotations`): each pair must be on the object.
fn string_map(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}
