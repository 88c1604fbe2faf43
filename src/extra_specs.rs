//! Per-pool settings from GARM's `extra_specs`: one typed definition that drives parsing,
//! validation (`ValidatePoolInfo`) and the JSON schema (`GetExtraSpecsJSONSchema`).

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::{Deployment, EnvDelivery, SiteKey};
use crate::error::Error;

/// How a pool with several sites picks one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlacementStrategy {
    /// Try the sites in order; move on when a site has no capacity or lacks the flavor.
    #[default]
    Failover,
    /// Start at a site chosen from the instance name (stable across retries), then fail over.
    Spread,
}

/// The pool's `extra_specs`. Unknown keys are refused, except GARM's own.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtraSpecs {
    /// Edge Connect flavor for this pool's runners (overrides the pool flavor).
    #[serde(default)]
    pub flavor: Option<String>,
    /// Zones to place runners in (newer API). Replaces the config's placement.
    #[serde(default)]
    pub zones: Option<Vec<SiteKey>>,
    /// Cloudlets to place runners on (older API). Replaces the config's placement.
    #[serde(default)]
    pub cloudlets: Option<Vec<SiteKey>>,
    /// How to choose among several zones / cloudlets.
    #[serde(default)]
    pub placement_strategy: Option<PlacementStrategy>,
    /// Extra environment variables for the runner container.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Container command (overrides the config).
    #[serde(default)]
    pub command: Option<String>,
    /// Container arguments (override the config).
    #[serde(default)]
    pub command_args: Option<Vec<String>>,
    /// `kubernetes` or `docker` (overrides the config).
    #[serde(default)]
    pub deployment: Option<Deployment>,
    /// `env_vars` or `envvars_yaml` (overrides the config).
    #[serde(default)]
    pub env_delivery: Option<EnvDelivery>,
    /// Registry user for a private runner image.
    #[serde(default)]
    pub image_pull_username: Option<String>,
    /// NAME of an environment variable (passed through by GARM) holding the registry password.
    /// The password itself never goes into extra specs: GARM hands them to the runner.
    #[serde(default)]
    pub image_pull_password_env: Option<String>,
    /// GARM-injected (v0.2.0+): base64 install-script wrapper; accepted and ignored.
    #[serde(default)]
    pub runner_install_template: Option<String>,
    /// GARM cloud-init key; accepted and ignored.
    #[serde(default)]
    pub pre_install_scripts: Option<HashMap<String, String>>,
    /// GARM cloud-init key; accepted and ignored.
    #[serde(default)]
    pub extra_context: Option<HashMap<String, String>>,
}

impl ExtraSpecs {
    /// Parses and validates a JSON value (`null` and absent mean "no settings").
    pub fn from_value(value: Option<&serde_json::Value>) -> Result<Self, Error> {
        let specs = match value {
            None | Some(serde_json::Value::Null) => ExtraSpecs::default(),
            // Named by key, never by value: extra specs travel with secrets (a proxy_config sent
            // here by mistake, env values), and serde's own message would quote them.
            Some(v) => {
                serde_path_to_error::deserialize::<_, ExtraSpecs>(v.clone()).map_err(|e| {
                    let what = crate::text::describe_serde(&e.inner().to_string(), false);
                    Error::input(format!(
                        "invalid extra_specs: {}",
                        crate::text::keyed(&e.path().to_string(), &what)
                    ))
                })?
            }
        };
        specs
            .validate()
            .map_err(|m| Error::input(format!("invalid extra_specs: {m}")))?;
        Ok(specs)
    }

    fn validate(&self) -> Result<(), String> {
        if self.flavor.as_deref().is_some_and(|f| f.trim().is_empty()) {
            return Err("flavor: must not be empty".into());
        }
        if self.zones.is_some() && self.cloudlets.is_some() {
            return Err("give either zones or cloudlets, not both".into());
        }
        for (key, list) in [("zones", &self.zones), ("cloudlets", &self.cloudlets)] {
            if let Some(list) = list {
                if list.is_empty() {
                    return Err(format!("{key}: must list at least one site"));
                }
                if list
                    .iter()
                    .any(|s| s.name.trim().is_empty() || s.organization.trim().is_empty())
                {
                    return Err(format!("{key}: every site needs name and organization"));
                }
            }
        }
        for name in self.env.keys() {
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "env: `{}` is not a valid environment variable name",
                    crate::text::echo(name)
                ));
            }
            if crate::runner_env::RESERVED.contains(&name.as_str()) {
                return Err(format!(
                    "env: `{name}` is set by the provider and cannot be overridden"
                ));
            }
        }
        // The deployment may come from the provider config, which ValidatePoolInfo does not
        // read: check the words against the kubernetes rules always, and the docker rules when
        // the pool itself says docker. CreateInstance checks the effective combination again.
        let deployments: &[Deployment] = match self.deployment {
            Some(d) => &[d][..],
            None => &[Deployment::Kubernetes][..],
        };
        if self.command.is_some() || self.command_args.is_some() {
            for deployment in deployments {
                crate::manifest_safety::check_command(
                    *deployment,
                    "extra_specs.command",
                    self.command.as_deref(),
                    self.command_args.as_deref().unwrap_or_default(),
                )?;
            }
        }
        for (name, value) in &self.env {
            crate::manifest_safety::check_env_value(
                self.deployment.unwrap_or(Deployment::Kubernetes),
                self.env_delivery.unwrap_or(EnvDelivery::EnvVars),
                name,
                value,
            )?;
        }
        if self.image_pull_username.is_some() != self.image_pull_password_env.is_some() {
            return Err("image_pull_username and image_pull_password_env go together".into());
        }
        if let Some(var) = &self.image_pull_password_env {
            check_pull_password_env(var, None)?;
        }
        if let (Some(Deployment::Docker), Some(EnvDelivery::EnvvarsYaml)) =
            (self.deployment, self.env_delivery)
        {
            return Err("env_delivery: envvars_yaml needs deployment kubernetes".into());
        }
        Ok(())
    }

    /// Refuses an `image_pull_password_env` the provider must not hand to a registry: one of
    /// its own credential variables, or (with the operator's `image_pull_password_env_prefix`)
    /// a name outside the prefix. `ValidatePoolInfo` and CreateInstance call it with the
    /// config's prefix; [`ExtraSpecs::from_value`] checks the fixed names on its own.
    pub fn check_pull_password_env(&self, prefix: Option<&str>) -> Result<(), Error> {
        match &self.image_pull_password_env {
            Some(var) => check_pull_password_env(var, prefix)
                .map_err(|m| Error::input(format!("invalid extra_specs: {m}"))),
            None => Ok(()),
        }
    }

    /// The JSON schema, generated from this type.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(ExtraSpecs)).unwrap_or_default()
    }
}

/// Proxy variables the client reads (crates/edge-connect/src/proxy.rs); their URLs may hold
/// the proxy's user and password.
const PROXY_VARIABLES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"];

/// `var` may name a registry password: not one of the provider's credentials (the platform
/// sends pull credentials to whatever registry the pool's image names), and inside `prefix`
/// when the operator set one.
fn check_pull_password_env(var: &str, prefix: Option<&str>) -> Result<(), String> {
    let shown = crate::text::echo(var);
    // The credentials config/credentials.rs reads. Other `EDP_EDGE_CONNECT_*` names stay
    // usable: the documented setup passes registry passwords under the same GARM prefix.
    let upper = var.to_ascii_uppercase();
    if upper == crate::config::ENV_USERNAME
        || upper == crate::config::ENV_PASSWORD
        || PROXY_VARIABLES.contains(&upper.as_str())
    {
        return Err(format!(
            "image_pull_password_env: {shown} holds the provider's own credentials, which must not be sent to a registry; name a variable that holds only the registry password"
        ));
    }
    if let Some(prefix) = prefix {
        if !var.starts_with(prefix) {
            return Err(format!(
                "image_pull_password_env: {shown} does not start with {prefix} (image_pull_password_env_prefix in the provider config)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn garm_injected_keys_are_accepted() {
        let v = json!({"runner_install_template":"IyEv","pre_install_scripts":{"a.sh":"ZWNobw=="},"extra_context":{"k":"v"}});
        assert!(ExtraSpecs::from_value(Some(&v)).is_ok());
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = ExtraSpecs::from_value(Some(&json!({"flavour":"x"})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("flavour"), "{err}");
        let err = ExtraSpecs::from_value(Some(&json!({"flavor": 3})))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("invalid extra_specs"), "{err}");
        let err = ExtraSpecs::from_value(Some(&json!({"env":{"BEARER_TOKEN":"x"}})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("BEARER_TOKEN"), "{err}");
        let err = ExtraSpecs::from_value(Some(&json!({"zones":[]})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("zones"), "{err}");
    }

    #[test]
    fn the_providers_own_credentials_cannot_be_a_pull_password() {
        for var in [
            "EDP_EDGE_CONNECT_PASSWORD",
            "EDP_EDGE_CONNECT_USERNAME",
            "edp_edge_connect_password",
            "HTTPS_PROXY",
            "all_proxy",
        ] {
            let err = ExtraSpecs::from_value(Some(
                &json!({"image_pull_username":"x","image_pull_password_env":var}),
            ))
            .unwrap_err()
            .to_string();
            assert_eq!(
                err,
                format!("invalid extra_specs: image_pull_password_env: {var} holds the provider's own credentials, which must not be sent to a registry; name a variable that holds only the registry password")
            );
        }
        let ok = ExtraSpecs::from_value(Some(
            &json!({"image_pull_username":"x","image_pull_password_env":"EDP_EDGE_CONNECT_REGISTRY_PASSWORD"}),
        ))
        .unwrap();
        assert!(ok
            .check_pull_password_env(Some("EDP_EDGE_CONNECT_REGISTRY_"))
            .is_ok());
        let ok = ExtraSpecs::from_value(Some(
            &json!({"image_pull_username":"x","image_pull_password_env":"REGISTRY_PASSWORD"}),
        ))
        .unwrap();
        assert!(ok.check_pull_password_env(None).is_ok());
        assert!(ok.check_pull_password_env(Some("REGISTRY_")).is_ok());
        assert_eq!(
            ok.check_pull_password_env(Some("GARM_PULL_")).unwrap_err().to_string(),
            "invalid extra_specs: image_pull_password_env: REGISTRY_PASSWORD does not start with GARM_PULL_ (image_pull_password_env_prefix in the provider config)"
        );
    }

    #[test]
    fn null_means_defaults() {
        let s = ExtraSpecs::from_value(Some(&serde_json::Value::Null)).unwrap();
        assert!(s.flavor.is_none());
    }
}
