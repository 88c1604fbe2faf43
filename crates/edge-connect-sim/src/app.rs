//! The App RPCs — CreateApp, UpdateApp, DeleteApp, ShowApp — with the controller's
//! validation order and texts (`App.Validate`, `configureApp`, spec §5.2, §6.2, §11.11–17).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;

use super::clock::Timestamp;
use super::enums::{AccessType, ImageType, VmAppOsType};
use super::filter;
use super::http::Call;
use super::infra::Infra;
use super::lock;
use super::manifest::{self, dns_sanitize, KUBERNETES_BASIC};
use super::model::{
    key_json, App, AppIn, AppKey, KubernetesResources, NodePoolResources, NodePoolTopology,
    NodeResources, SecretMap, Udec64,
};
use super::ports;
use super::server::Shared;
use super::stream::{ndjson_response, show_body};
use super::wire::{decode, field_names, unary_ok, ApiError};

const DEPLOYMENTS: [&str; 4] = ["kubernetes", "vm", "helm", "docker"];
const CONFIG_KINDS: [&str; 3] = [
    "helmCustomizationYaml",
    "appAccessCustomization",
    "envVarsYaml",
];
/// Registry the controller falls back to for docker Apps without an image (Edge Connect's
/// Harbor).
const DEFAULT_REGISTRY: &str = "docker.edge.telekom.com";
/// App compatibility version reported by current controllers.
const APP_COMPATIBILITY_VERSION: u32 = 2;

/// `^[0-9a-zA-Z][-_0-9a-zA-Z .&,!]*$` (`util.ValidName`).
pub(crate) fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || "-_ .&,!".contains(c))
}

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

/// `App.Validate(fields)`: key, access ports (when given), template delimiter, config kinds.
fn validate(input: &AppIn, ports_given: bool) -> Result<(), ApiError> {
    validate_key(&input.key)?;
    if ports_given && !input.access_ports.is_empty() {
        ports::parse(&input.access_ports).map_err(ApiError::bad_request)?;
    }
    if !input.template_delimiter.is_empty() && input.template_delimiter.split(' ').count() != 2 {
        return Err(ApiError::bad_request(format!(
            "invalid app template delimiter {}, valid format '<START-DELIM> <END-DELIM>'",
            input.template_delimiter
        )));
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

/// Lower-case with only `[a-z0-9._-]` kept (`util.DockerSanitize`).
fn docker_sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '.' | '_' | '-' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
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
    if deployment == "helm" && !app.deployment_manifest.is_empty() {
        return Err(ApiError::bad_request(
            "Manifest is not used for Helm deployments. Use config files for customizations",
        ));
    }
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
    if deployment == "vm" && !app.command.is_empty() {
        return Err(ApiError::bad_request(
            "Invalid argument, command is not supported for VM based deployments",
        ));
    }
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
    if app.scale_with_cluster && deployment != "kubernetes" {
        return Err(ApiError::bad_request(
            "app scaling is only supported for Kubernetes deployments",
        ));
    }
    if app.vm_app_os_type != VmAppOsType::Unknown && deployment != "vm" {
        return Err(ApiError::bad_request(
            "VM App OS Type is only supported for VM deployments",
        ));
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
    }
    resolve_resources(infra, app)?;
    if app.allow_serverless {
        if deployment != "kubernetes" {
            return Err(ApiError::bad_request(
                "Allow serverless only supported for deployment type Kubernetes",
            ));
        }
        if app.scale_with_cluster {
            return Err(ApiError::bad_request(
                "Allow serverless does not support scale with cluster",
            ));
        }
        if app.deployment_generator != KUBERNETES_BASIC {
            return Err(ApiError::bad_request(
                "Allow serverless only allowed for system generated manifests",
            ));
        }
    }
    validate_skip_hc_ports(app, &ports)?;
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

/// `validateSkipHcPorts`: every skipped port must be one of the access ports.
fn validate_skip_hc_ports(app: &App, ports: &[ports::PortSpec]) -> Result<(), ApiError> {
    if app.skip_hc_ports.is_empty() || app.skip_hc_ports == "all" {
        return Ok(());
    }
    let skip = ports::parse(&app.skip_hc_ports)
        .map_err(|e| ApiError::bad_request(format!("Cannot parse skipHcPorts: {e}")))?;
    for s in &skip {
        if s.proto == "udp" {
            return Err(ApiError::bad_request(
                "Protocol L_PROTO_UDP unsupported for healthchecks",
            ));
        }
        let last = if s.end_port == 0 { s.port } else { s.end_port };
        for n in s.port..=last {
            let found = ports.iter().any(|p| {
                let end = if p.end_port == 0 { p.port } else { p.end_port };
                p.proto == s.proto && p.port <= n && n <= end
            });
            if !found {
                return Err(ApiError::bad_request(format!(
                    "skipHcPort {n} not found in accessPorts"
                )));
            }
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
fn precheck(input: &AppIn) -> Result<(), ApiError> {
    if input.serverless_config.is_some() {
        return Err(ApiError::bad_request(
            "serverless config is deprecated, please replace with KubernetesResources",
        ));
    }
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

/// Fills the fields the controller sets on a new App.
pub(crate) fn stamp_new(shared: &Shared, app: &mut App, region: &str) {
    app.created_at = Timestamp::now();
    app.obj_id = shared.rng.ulid();
    app.compatibility_version = APP_COMPATIBILITY_VERSION;
    app.global_id = dns_sanitize(&format!(
        "{}-{}{}{}",
        region, app.key.name, app.key.version, app.key.organization
    ));
}

/// `CreateApp`.
pub(crate) fn create(call: Call) -> Result<Response, ApiError> {
    let input: AppIn = decode(call.object.clone(), "App")?;
    if let Some(field) = input.invalid_create_field() {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    validate(&input, true)?;
    let shared = &call.shared;
    let mut st = lock(&shared.state);
    if st.app(&input.key).is_some() {
        return Err(ApiError::bad_request(format!(
            "App key {} already exists",
            key_json(&input.key)
        )));
    }
    precheck(&input)?;
    let mut app = input.to_app();
    configure(&shared.infra, &mut app)?;
    stamp_new(shared, &mut app, &call.region);
    st.put_app(app);
    Ok(unary_ok())
}

/// Go names used in `Cannot update <Field> when AppInst exists`.
const IN_USE_FIXED: [(&str, &str); 4] = [
    ("access_ports", "Access Ports"),
    ("skip_hc_ports", "Skip Hc Ports"),
    ("deployment", "Deployment"),
    ("deployment_generator", "Deployment Generator"),
];

/// `update_list_action` on a map: `add` merges, `remove` deletes the keys, else replace.
fn update_map(
    current: &mut BTreeMap<String, String>,
    given: &BTreeMap<String, String>,
    action: &str,
) {
    match action {
        "add" => current.extend(given.iter().map(|(k, v)| (k.clone(), v.clone()))),
        "remove" => current.retain(|k, _| !given.contains_key(k)),
        _ => *current = given.clone(),
    }
}

/// `CopyInFields`: copies the fields present in the request.
fn copy_in_fields(cur: &mut App, input: &AppIn, fields: &BTreeSet<String>) {
    let action = input.update_list_action.as_str();
    for field in fields {
        match field.as_str() {
            "image_path" => cur.image_path = input.image_path.clone(),
            "image_type" => cur.image_type = input.image_type,
            "access_ports" => cur.access_ports = input.access_ports.clone(),
            "default_flavor" => cur.default_flavor = input.default_flavor.clone(),
            "username" => cur.username = input.username.clone(),
            "credentials" => cur.credentials = input.credentials.clone(),
            "auth_public_key" => cur.auth_public_key = input.auth_public_key.clone(),
            "command" => cur.command = input.command.clone(),
            "command_args" => cur.command_args = input.command_args.clone(),
            "annotations" => cur.annotations = input.annotations.clone(),
            "deployment" => cur.deployment = input.deployment.clone(),
            "deployment_manifest" => cur.deployment_manifest = input.deployment_manifest.clone(),
            "deployment_generator" => cur.deployment_generator = input.deployment_generator.clone(),
            "android_package_name" => cur.android_package_name = input.android_package_name.clone(),
            "configs" => cur.configs = input.configs.clone(),
            "scale_with_cluster" => cur.scale_with_cluster = input.scale_with_cluster,
            "internal_ports" => cur.internal_ports = input.internal_ports,
            "official_fqdn" => cur.official_fqdn = input.official_fqdn.clone(),
            "md5sum" => cur.md5sum = input.md5sum.clone(),
            "access_type" => cur.access_type = input.access_type,
            "auto_prov_policies" => cur.auto_prov_policies = input.auto_prov_policies.clone(),
            "template_delimiter" => cur.template_delimiter = input.template_delimiter.clone(),
            "skip_hc_ports" => cur.skip_hc_ports = input.skip_hc_ports.clone(),
            "trusted" => cur.trusted = input.trusted,
            "required_outbound_connections" => {
                cur.required_outbound_connections = input.required_outbound_connections.clone()
            }
            "allow_serverless" => cur.allow_serverless = input.allow_serverless,
            "vm_app_os_type" => cur.vm_app_os_type = input.vm_app_os_type,
            "alert_policies" => cur.alert_policies = input.alert_policies.clone(),
            "env_vars" => update_map(&mut cur.env_vars, &input.env_vars, action),
            "secret_env_vars" => {
                update_map(&mut cur.secret_env_vars.0, &input.secret_env_vars, action)
            }
            "kubernetes_resources" => {
                cur.kubernetes_resources = input.kubernetes_resources.clone();
                if !fields.contains("default_flavor") {
                    // Explicit resources replace the flavor (the flavor would override them).
                    cur.default_flavor = Default::default();
                }
            }
            "node_resources" => {
                cur.node_resources = input.node_resources.clone();
                if !fields.contains("default_flavor") {
                    cur.default_flavor = Default::default();
                }
            }
            "app_annotations" => {
                update_map(&mut cur.app_annotations, &input.app_annotations, action)
            }
            "is_standalone" => cur.is_standalone = input.is_standalone,
            "manages_own_namespaces" => cur.manages_own_namespaces = input.manages_own_namespaces,
            "tags" => update_map(&mut cur.tags, &input.tags, action),
            _ => {}
        }
    }
}

/// `UpdateApp`: applies only the fields present, regenerates derived data, sets a new
/// revision and `updated_at`.
pub(crate) fn update(call: Call) -> Result<Response, ApiError> {
    let fields = field_names(&call.object);
    let input: AppIn = decode(call.object.clone(), "App")?;
    if let Some(field) = input.invalid_create_field() {
        return Err(ApiError::internal_field(field));
    }
    call.authorize(&input.key.organization)?;
    call.check_region()?;
    validate(&input, fields.contains("access_ports"))?;
    if input.serverless_config.is_some() {
        return Err(ApiError::bad_request(
            "serverless config is deprecated, please replace with KubernetesResources",
        ));
    }
    if fields.contains("default_flavor")
        && !input.default_flavor.name.is_empty()
        && fields.contains("kubernetes_resources")
    {
        return Err(ApiError::bad_request(
            "cannot specify both flavor and KubernetesResources",
        ));
    }
    let shared = &call.shared;
    let mut st = lock(&shared.state);
    let in_use = st.first_inst_of(&input.key).is_some();
    let Some(current) = st.app(&input.key) else {
        return Err(ApiError::bad_request(format!(
            "App key {} not found",
            key_json(&input.key)
        )));
    };
    if in_use {
        if let Some((_, name)) = IN_USE_FIXED.iter().find(|(f, _)| fields.contains(*f)) {
            return Err(ApiError::bad_request(format!(
                "Cannot update {name} when AppInst exists"
            )));
        }
    }
    let mut cur = App::clone(current);
    if fields.contains("deployment") {
        // A new deployment kind invalidates the old manifest; regenerate unless one is sent.
        cur.deployment_manifest.clear();
    }
    if fields.contains("deployment_manifest") {
        cur.deployment_generator.clear();
    } else if fields.contains("access_ports") && cur.deployment == "kubernetes" {
        if cur.deployment_generator.is_empty() {
            return Err(ApiError::bad_request(
                "kubernetes manifest which was previously specified must be provided again when changing access ports",
            ));
        }
        cur.deployment_manifest.clear();
    }
    copy_in_fields(&mut cur, &input, &fields);
    if !cur.deployment_generator.is_empty() {
        cur.deployment_manifest.clear();
    }
    let now = Timestamp::now();
    cur.revision = if input.revision.is_empty() {
        now.revision()
    } else {
        input.revision.clone()
    };
    configure(&shared.infra, &mut cur)?;
    cur.updated_at = now;
    st.put_app(cur);
    Ok(unary_ok())
}

/// `DeleteApp`: refused while instances exist.
pub(crate) fn delete(call: Call) -> Result<Response, ApiError> {
    let input: AppIn = decode(call.object.clone(), "App")?;
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
    let input: AppIn = decode(call.object.clone(), "App")?;
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
            .flat_map(|org| -> Box<dyn Iterator<Item = &Arc<App>> + '_> {
                if key.name.is_empty() {
                    Box::new(st.apps_in_org(org))
                } else {
                    Box::new(st.apps_named(org, &key.name))
                }
            })
            .filter(|app| {
                (key.name.is_empty() || app.key.name == key.name)
                    && (key.version.is_empty() || app.key.version == key.version)
            })
            .filter(|app| match &rest {
                None => true,
                Some(f) => filter::matches(
                    f,
                    &serde_json::to_value(app.as_ref()).unwrap_or(Value::Null),
                ),
            })
            .cloned()
            .collect()
    };
    Ok(ndjson_response(show_body(items)))
}

/// Builds the App a seed request describes (also used by the benchmark and tests).
pub(crate) fn seeded_app(
    shared: &Shared,
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
        default_flavor: super::model::FlavorKey {
            name: shared
                .infra
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
    configure(&shared.infra, &mut app)?;
    stamp_new(shared, &mut app, region);
    Ok(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_controller_regex() {
        assert!(valid_name("garm-r-7f3a9c"));
        assert!(valid_name("A b.&,!_-"));
        assert!(!valid_name(""));
        assert!(!valid_name("-x"));
        assert!(!valid_name("a/b"));
    }

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
