//! App validation and normalisation with the controller's order and texts (`App.Validate`,
//! `configureApp`, `resolveAppResourcesSpec`; main `pkg/controller/app_api.go`).

use crate::model::enums::{AccessType, ImageType};
use crate::model::{
    key_json, App, AppIn, AppKey, Infra, KubernetesResources, NodePoolResources, NodePoolTopology,
    NodeResources, Udec64,
};
use crate::protocol::ApiError;

use super::container::env_vars_yaml;
use super::manifest::{self, KUBERNETES_BASIC};
use super::names::{docker_sanitize, valid_name};
use super::ports;

const DEPLOYMENTS: [&str; 4] = ["kubernetes", "vm", "helm", "docker"];
const CONFIG_KINDS: [&str; 3] = [
    "helmCustomizationYaml",
    "appAccessCustomization",
    "envVarsYaml",
];
/// Registry the controller falls back to for docker Apps without an image (Edge Connect's
/// Harbor).
const DEFAULT_REGISTRY: &str = "docker.edge.telekom.com";

/// `AppKey.ValidateKey`: name, then version, then organization.
pub(crate) fn validate_key(key: &AppKey) -> Result<(), ApiError> {
    if !valid_name(&key.name) {
        return Err(ApiError::bad_request("Invalid app name"));
    }
    if !valid_name(&key.version) {
        return Err(ApiError::bad_request("Invalid app version"));
    }
    if !valid_name(&key.organization) {
        return Err(ApiError::bad_request("Invalid app organization"));
    }
    Ok(())
}

/// `validateCustomizationConfigs`: only known config kinds.
pub(crate) fn validate_config_kinds(
    kinds: impl IntoIterator<Item = String>,
) -> Result<(), ApiError> {
    for kind in kinds {
        if !CONFIG_KINDS.contains(&kind.as_str()) {
            return Err(ApiError::bad_request(format!(
                "Invalid Config Kind - {kind}"
            )));
        }
    }
    Ok(())
}

/// `App.Validate(fields)`: key, access ports, config kinds.
pub(crate) fn validate(input: &AppIn) -> Result<(), ApiError> {
    validate_key(&input.key)?;
    if !input.access_ports.is_empty() {
        ports::parse(&input.access_ports).map_err(ApiError::bad_request)?;
    }
    validate_config_kinds(input.configs.iter().map(|c| c.kind.clone()))
}

/// Kubernetes and Helm Apps run on a Kubernetes cluster (`AppDeploysToKubernetes`).
pub(crate) fn deploys_to_kubernetes(deployment: &str) -> bool {
    deployment == "kubernetes" || deployment == "helm"
}

fn valid_for_image(image: ImageType, deployment: &str) -> bool {
    match image {
        ImageType::Docker => deployment == "kubernetes" || deployment == "docker",
        ImageType::Qcow | ImageType::Ovf | ImageType::Ova => deployment == "vm",
        ImageType::Helm => deployment == "helm",
        ImageType::Unknown => false,
    }
}

/// `k8smgmt.FixImagePath`: images without a registry host come from Docker Hub.
fn fix_image_path(path: &str) -> String {
    let mut parts = path.split('/');
    let first = parts.next().unwrap_or_default();
    let has_more = parts.next().is_some();
    if first == "localhost" {
        path.replacen("localhost/", "", 1)
    } else if !has_more || !first.contains('.') {
        format!("docker.io/{path}")
    } else {
        path.to_string()
    }
}

/// `configureApp`: defaults, compatibility rules, image path normalisation, generated
/// manifest, resources from the flavor. Shared by create, update and seeding.
pub(crate) fn configure(infra: &Infra, app: &mut App) -> Result<(), ApiError> {
    if app.deployment.is_empty() {
        app.deployment = match app.image_type {
            ImageType::Docker => "kubernetes",
            ImageType::Qcow | ImageType::Ovf | ImageType::Ova => "vm",
            ImageType::Helm => "helm",
            ImageType::Unknown => {
                return Err(ApiError::bad_request(format!(
                    "unknown image type {}",
                    app.image_type.proto_name()
                )))
            }
        }
        .to_string();
    } else if app.image_type == ImageType::Unknown {
        app.image_type = match app.deployment.as_str() {
            "docker" | "kubernetes" => ImageType::Docker,
            "helm" => ImageType::Helm,
            _ => ImageType::Unknown,
        };
    }
    let deployment = app.deployment.clone();
    if !DEPLOYMENTS.contains(&deployment.as_str()) {
        return Err(ApiError::bad_request(format!(
            "Invalid deployment, must be one of [{}]",
            DEPLOYMENTS.join(" ")
        )));
    }
    if !valid_for_image(app.image_type, &deployment) {
        return Err(ApiError::bad_request(
            "Deployment is not valid for image type",
        ));
    }
    for cfg in &app.configs {
        let wrong = match cfg.kind.as_str() {
            "helmCustomizationYaml" => deployment != "helm",
            "envVarsYaml" => deployment != "kubernetes",
            _ => false,
        };
        if wrong {
            return Err(ApiError::bad_request(format!(
                "Invalid Config Kind({}) for deployment type({deployment})",
                cfg.kind
            )));
        }
        if cfg.config.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Empty config for config kind {}",
                cfg.kind
            )));
        }
    }
    if (!app.env_vars.is_empty() || !app.secret_env_vars.0.is_empty())
        && deployment != "docker"
        && deployment != "kubernetes"
    {
        return Err(ApiError::bad_request(
            "environment variables and secret environment variables are only supported for docker and kubernetes deployments",
        ));
    }
    if app.access_type == AccessType::Direct {
        return Err(ApiError::bad_request(
            "Access Type Direct no longer supported",
        ));
    }
    app.access_type = AccessType::LoadBalancer;
    if app.image_path.is_empty()
        && app.image_type == ImageType::Docker
        && app.deployment_manifest.is_empty()
    {
        app.image_path = format!(
            "{DEFAULT_REGISTRY}/{}/images/{}:{}",
            docker_sanitize(&app.key.organization),
            docker_sanitize(&app.key.name),
            docker_sanitize(&app.key.version)
        );
    }
    if app.image_type == ImageType::Docker {
        for scheme in ["http://", "https://"] {
            if let Some(rest) = app.image_path.strip_prefix(scheme) {
                app.image_path = rest.to_string();
            }
        }
    }
    if app.image_type == ImageType::Docker && !app.image_path.is_empty() {
        app.image_path = fix_image_path(&app.image_path);
    }
    if !app.username.is_empty() && app.credentials.is_empty() {
        return Err(ApiError::bad_request(
            "registry username specified but credentials missing",
        ));
    }
    if app.username.is_empty() && !app.credentials.is_empty() {
        return Err(ApiError::bad_request(
            "registry credentials specified but username missing",
        ));
    }
    let ports = ports::parse(&app.access_ports).map_err(ApiError::bad_request)?;
    if app.deployment_manifest.is_empty() && deployment == "kubernetes" {
        app.deployment_generator = KUBERNETES_BASIC.to_string();
        app.deployment_manifest = manifest::generate(app, &ports);
        manifest::check_words(app, &app.deployment_manifest).map_err(ApiError::bad_request)?;
    } else if deployment == "kubernetes" {
        // A manifest of the App's own, kept as sent (docs/edge-connect-behaviours.md B25).
        super::user_manifest::check_create_app(&app.deployment_manifest, &ports)
            .map_err(ApiError::bad_request)?;
    }
    if deployment == "kubernetes" {
        // main `pkg/controller/app_api.go:668-674`: the env vars are read (templated with
        // test values) already at CreateApp.
        env_vars_yaml(app).map_err(ApiError::bad_request)?;
    }
    resolve_resources(infra, app)?;
    if app.allow_serverless {
        if deployment != "kubernetes" {
            return Err(ApiError::bad_request(
                "Allow serverless only supported for deployment type Kubernetes",
            ));
        }
        if app.deployment_generator != KUBERNETES_BASIC {
            return Err(ApiError::bad_request(
                "Allow serverless only allowed for system generated manifests",
            ));
        }
    }
    if !deploys_to_kubernetes(&deployment) {
        let http: Vec<String> = ports
            .iter()
            .filter(|p| p.proto == "http")
            .map(|p| p.port.to_string())
            .collect();
        if !http.is_empty() {
            return Err(ApiError::bad_request(format!(
                "http ports [{}] not allowed for {deployment} deployment",
                http.join(" ")
            )));
        }
    }
    Ok(())
}

/// `resolveAppResourcesSpec`: a flavor must exist and fills the resources for the
/// deployment kind; without one, explicit resources are required.
fn resolve_resources(infra: &Infra, app: &mut App) -> Result<(), ApiError> {
    let k8s = deploys_to_kubernetes(&app.deployment);
    if !app.default_flavor.name.is_empty() {
        let flavor = infra.flavor(&app.default_flavor.name).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Flavor key {} not found",
                key_json(&app.default_flavor)
            ))
        })?;
        if k8s {
            app.node_resources = None;
            app.kubernetes_resources = Some(KubernetesResources {
                cpu_pool: Some(NodePoolResources {
                    total_vcpus: Udec64::whole(flavor.vcpus),
                    total_memory: flavor.ram,
                    total_disk: flavor.disk,
                    topology: NodePoolTopology {
                        min_node_vcpus: flavor.vcpus,
                        min_node_memory: flavor.ram,
                        min_node_disk: flavor.disk,
                        min_number_of_nodes: 0,
                    },
                }),
                ..KubernetesResources::default()
            });
        } else {
            app.kubernetes_resources = None;
            app.node_resources = Some(NodeResources {
                vcpus: Udec64::whole(flavor.vcpus),
                ram: flavor.ram,
                disk: flavor.disk,
            });
        }
        return Ok(());
    }
    if k8s {
        if app.node_resources.is_some() {
            return Err(ApiError::bad_request(
                "cannot specify node resources for Kubernetes deployment",
            ));
        }
        if app.kubernetes_resources.is_none() {
            return Err(ApiError::bad_request(
                "missing flavor or Kubernetes resources",
            ));
        }
    } else {
        if app.kubernetes_resources.is_some() {
            return Err(ApiError::bad_request(format!(
                "cannot specify Kubernetes resources for {} deployment",
                app.deployment
            )));
        }
        if app.node_resources.is_none() {
            return Err(ApiError::bad_request("missing flavor or node resources"));
        }
    }
    Ok(())
}

/// Checks of the request itself that the controller makes before touching the store.
pub(crate) fn precheck(input: &AppIn) -> Result<(), ApiError> {
    if !input.default_flavor.name.is_empty() && input.kubernetes_resources.is_some() {
        return Err(ApiError::bad_request(
            "cannot specify both flavor and KubernetesResources",
        ));
    }
    if !input.default_flavor.name.is_empty() && input.node_resources.is_some() {
        return Err(ApiError::bad_request(
            "cannot specify both flavor and NodeResources",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_paths_get_a_registry() {
        assert_eq!(fix_image_path("nginx:latest"), "docker.io/nginx:latest");
        assert_eq!(fix_image_path("library/nginx"), "docker.io/library/nginx");
        assert_eq!(
            fix_image_path("ghcr.io/actions/actions-runner:2"),
            "ghcr.io/actions/actions-runner:2"
        );
        assert_eq!(fix_image_path("localhost/x/y"), "x/y");
    }
}
