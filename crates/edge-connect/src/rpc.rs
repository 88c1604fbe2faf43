//! Typed Edge Connect calls built on [`Client`]: one function per RPC the provider uses.

use serde_json::{json, Value};

use crate::client::Client;
use crate::error::ApiError;
use crate::models::{App, AppInst, AppInstKey, AppKey, Flavor, NewApp, NewAppInst, Site, SiteRef};
use crate::stream::StreamEnd;

impl Client {
    /// `CreateApp`.
    pub async fn create_app(&self, app: &NewApp) -> Result<(), ApiError> {
        let body = serde_json::to_value(app)
            .map_err(|e| ApiError::protocol("CreateApp", e.to_string()))?;
        self.unary("CreateApp", "app", &body).await
    }

    /// `DeleteApp` (key only).
    pub async fn delete_app(&self, key: &AppKey) -> Result<(), ApiError> {
        self.unary("DeleteApp", "app", &json!({ "key": key })).await
    }

    /// `ShowApp` with a key filter (empty parts are wildcards).
    pub async fn show_apps(&self, filter: &AppKey) -> Result<Vec<App>, ApiError> {
        self.show_apps_where(filter, None, |_| true).await
    }

    /// `ShowApp`, keeping only the Apps `keep` accepts (as they stream in); lines without
    /// `needle` are skipped unparsed.
    pub async fn show_apps_where(
        &self,
        filter: &AppKey,
        needle: Option<&[u8]>,
        keep: impl FnMut(&App) -> bool,
    ) -> Result<Vec<App>, ApiError> {
        let filter = json!({ "key": key_filter(filter) });
        self.show_where("ShowApp", "app", &filter, needle, keep)
            .await
    }

    /// `ShowApp` parsed into `T` (any lenient view of an App, e.g. [`crate::models::AppEnv`]),
    /// keeping only what `keep` accepts; lines without `needle` are skipped unparsed.
    pub async fn show_apps_as<T: serde::de::DeserializeOwned>(
        &self,
        filter: &AppKey,
        needle: Option<&[u8]>,
        keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let filter = json!({ "key": key_filter(filter) });
        self.show_where("ShowApp", "app", &filter, needle, keep)
            .await
    }

    /// `CreateAppInst`, stream read to the end.
    pub async fn create_app_inst(
        &self,
        inst: &NewAppInst,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamEnd, ApiError> {
        let body = serde_json::to_value(inst)
            .map_err(|e| ApiError::protocol("CreateAppInst", e.to_string()))?;
        self.stream("CreateAppInst", "appinst", &body, progress)
            .await
    }

    /// `DeleteAppInst` (key only), stream read to the end.
    pub async fn delete_app_inst(
        &self,
        key: &AppInstKey,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<StreamEnd, ApiError> {
        self.stream("DeleteAppInst", "appinst", &json!({ "key": key }), progress)
            .await
    }

    /// `ShowAppInst` with a key filter.
    pub async fn show_app_insts(&self, filter: &AppInstKey) -> Result<Vec<AppInst>, ApiError> {
        self.show_app_insts_where(filter, |_| true).await
    }

    /// `ShowAppInst`, handing every AppInst to `keep` as it streams in and holding only those it
    /// accepts. A `keep` that files what it needs elsewhere and returns `false` holds nothing
    /// here: the answer for a whole organization is never in memory at once.
    pub async fn show_app_insts_where(
        &self,
        filter: &AppInstKey,
        keep: impl FnMut(&AppInst) -> bool,
    ) -> Result<Vec<AppInst>, ApiError> {
        self.show_app_insts_as(filter, keep).await
    }

    /// `ShowAppInst` parsed into `T`, a narrower view of an AppInst than [`AppInst`] (fewer
    /// fields allocated per line: an organization's answer can hold tens of thousands).
    pub async fn show_app_insts_as<T: serde::de::DeserializeOwned>(
        &self,
        filter: &AppInstKey,
        keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        self.show_app_insts_filtered(filter, |_| false, keep).await
    }

    /// [`Client::show_app_insts_as`] with a raw-line pre-filter (see [`Client::show_filtered`]).
    pub async fn show_app_insts_filtered<T: serde::de::DeserializeOwned>(
        &self,
        filter: &AppInstKey,
        skip: impl FnMut(&[u8]) -> bool,
        keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<T>, ApiError> {
        let mut key = serde_json::Map::new();
        if !filter.name.is_empty() {
            key.insert("name".into(), json!(filter.name));
        }
        if !filter.organization.is_empty() {
            key.insert("organization".into(), json!(filter.organization));
        }
        self.show_filtered("ShowAppInst", "appinst", &json!({ "key": key }), skip, keep)
            .await
    }

    /// `ShowZone` (newer API). A 404 means the server predates zones.
    pub async fn show_zones(&self) -> Result<Vec<Site>, ApiError> {
        self.show("ShowZone", "zone", &json!({})).await
    }

    /// `ShowCloudlet`.
    pub async fn show_cloudlets(&self) -> Result<Vec<Site>, ApiError> {
        self.show("ShowCloudlet", "cloudlet", &json!({})).await
    }

    /// `ShowFlavor`: every flavor of the region.
    pub async fn show_flavors(&self) -> Result<Vec<Flavor>, ApiError> {
        self.show("ShowFlavor", "flavor", &json!({})).await
    }

    /// `ShowFlavorsForZone`.
    pub async fn show_flavors_for_zone(&self, zone: &SiteRef) -> Result<Vec<Flavor>, ApiError> {
        self.show("ShowFlavorsForZone", "zonekey", &json!(zone))
            .await
    }
}

fn key_filter(key: &AppKey) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in [
        ("organization", &key.organization),
        ("name", &key.name),
        ("version", &key.version),
    ] {
        if !v.is_empty() {
            map.insert(k.to_string(), json!(v));
        }
    }
    Value::Object(map)
}
