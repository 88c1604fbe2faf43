//! The fields the controller stamps on a new App, and the App a seed request describes.

use std::collections::BTreeMap;

use crate::clock::{Rng, Timestamp};
use crate::model::enums::ImageType;
use crate::model::{App, AppKey, FlavorKey, Infra, KubernetesResources, SecretMap};
use crate::protocol::ApiError;

use super::app_config::configure;
use super::names::dns_sanitize;

/// App compatibility version reported by current controllers.
const APP_COMPATIBILITY_VERSION: u32 = 2;

/// Fills the fields the controller sets on a new App.
pub(crate) fn stamp_new(rng: &Rng, app: &mut App, region: &str) {
    app.created_at = Timestamp::now();
    app.obj_id = rng.ulid();
    app.compatibility_version = APP_COMPATIBILITY_VERSION;
    app.global_id = dns_sanitize(&format!(
        "{}-{}{}{}",
        region, app.key.name, app.key.version, app.key.organization
    ));
}

/// Builds the App a seed request describes (also used by the benchmark and tests).
pub(crate) fn seeded_app(
    infra: &Infra,
    rng: &Rng,
    key: AppKey,
    env_vars: BTreeMap<String, String>,
    secret_env_vars: BTreeMap<String, String>,
    region: &str,
) -> Result<App, ApiError> {
    let mut app = App {
        key,
        image_path: "ghcr.io/actions/actions-runner:latest".into(),
        image_type: ImageType::Docker,
        deployment: "kubernetes".into(),
        default_flavor: FlavorKey {
            name: infra
                .flavors
                .first()
                .map(|f| f.key.name.clone())
                .unwrap_or_default(),
        },
        env_vars,
        secret_env_vars: SecretMap(secret_env_vars),
        ..App::default()
    };
    if app.default_flavor.name.is_empty() {
        app.kubernetes_resources = Some(KubernetesResources::default());
    }
    configure(infra, &mut app)?;
    stamp_new(rng, &mut app, region);
    Ok(app)
}
