//! The fields the controller stamps on a new App, and the App a seed request describes.

use std::collections::BTreeMap;

use crate::clock::Timestamp;
use crate::model::enums::ImageType;
use crate::model::{App, AppKey, FlavorKey, Infra, KubernetesResources, SecretMap};
use crate::protocol::ApiError;

use super::app_config::configure;

/// App compatibility version reported by current controllers.
const APP_COMPATIBILITY_VERSION: u32 = 2;

/// Fills the fields the controller sets on a new App.
pub(crate) fn stamp_new(app: &mut App) {
    app.created_at = Timestamp::now();
    app.compatibility_version = APP_COMPATIBILITY_VERSION;
}

/// Builds the App a seed request describes (also used by the benchmark and tests).
pub(crate) fn seeded_app(
    infra: &Infra,
    key: AppKey,
    env_vars: BTreeMap<String, String>,
    secret_env_vars: BTreeMap<String, String>,
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
    stamp_new(&mut app);
    Ok(app)
}
