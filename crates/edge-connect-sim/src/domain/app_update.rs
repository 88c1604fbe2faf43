//! UpdateApp's field mask: which fields a request carries and how they are copied in.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{App, AppIn};

/// Go names used in `Cannot update <Field> when AppInst exists`.
pub(crate) const IN_USE_FIXED: [(&str, &str); 4] = [
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
pub(crate) fn copy_in_fields(cur: &mut App, input: &AppIn, fields: &BTreeSet<String>) {
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
