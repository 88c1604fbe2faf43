//! Per-pool settings from GARM's `extra_specs`: one typed definition that drives parsing,
//! validation (`ValidatePoolInfo`) and the JSON schema (`GetExtraSpecsJSONSchema`).

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::{Deployment, EnvDelivery, SiteKey};
use crate::error::Error;
use crate::manifest_safety::Container;

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

/// The pool's `extra_specs`. Unknown keys are refused, except GARM's own; so is any sequence
/// where an object belongs (`crate::object`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(remote = "Self", default, deny_unknown_fields)]
pub struct ExtraSpecs {
    /// Edge Connect flavor for this pool's runners (overrides the pool flavor).
    pub flavor: Option<String>,
    /// Zones to place runners in (newer API). Replaces the config's placement.
    pub zones: Option<Vec<SiteKey>>,
    /// Cloudlets to place runners on (older API). Replaces the config's placement.
    pub cloudlets: Option<Vec<SiteKey>>,
    /// How to choose among several zones / cloudlets.
    pub placement_strategy: Option<PlacementStrategy>,
    /// Extra environment variables for the runner container.
    pub env: BTreeMap<String, String>,
    /// Container command (overrides `edge_connect.command`).
    pub command: Option<String>,
    /// Container arguments (override `edge_connect.command_args`).
    pub command_args: Option<Vec<String>>,
    /// `kubernetes` or `docker` (overrides `edge_connect.deployment`).
    pub deployment: Option<Deployment>,
    /// `env_vars` or `envvars_yaml` (overrides `edge_connect.env_delivery`; `envvars_yaml`
    /// needs deployment kubernetes).
    pub env_delivery: Option<EnvDelivery>,
    /// Registry user for a private runner image.
    pub image_pull_username: Option<String>,
    /// NAME of an environment variable (passed through by GARM) holding the registry password.
    /// The password itself never goes into extra specs: GARM hands them to the runner.
    pub image_pull_password_env: Option<String>,
    /// `none` (default: the platform generates the runner's pod), `dind` (a privileged Docker
    /// daemon sidecar in the runner's pod, written by the provider) or `buildkit` (a rootless
    /// BuildKit sidecar, for image builds; its seccomp and AppArmor profiles are Unconfined,
    /// which Pod Security baseline forbids). Both need deployment kubernetes and env_delivery
    /// env_vars.
    pub docker: Option<crate::pod::DockerMode>,
    /// The sidecar's image, fully qualified (default: the provider's pinned
    /// `docker.io/library/docker:<version>-dind` for `dind`,
    /// `docker.io/moby/buildkit:<version>-rootless` for `buildkit`).
    #[schemars(length(max = 512))]
    pub docker_image: Option<String>,
    /// `dind`: the job image of a runner label (label -> fully qualified image); Forgejo and
    /// Gitea runners register each label as `NAME:docker://IMAGE`. At most 32 labels.
    #[schemars(schema_with = "job_images_schema")]
    pub job_images: BTreeMap<String, String>,
    /// `dind`: the job image of the labels `job_images` does not map (default
    /// `docker.io/library/node:22-bookworm`).
    #[schemars(length(max = 512))]
    pub default_job_image: Option<String>,
    /// The runner's size instead of a flavor: vCPUs, memory and disk of the whole pod. The
    /// provider then writes the pod and gives each container requests and limits within it.
    pub resources: Option<crate::pod::Resources>,
    /// `false`: this pool's runners neither use nor start their site's cache (the provider
    /// config's `[site_cache]`).
    pub site_cache: Option<bool>,
    /// GARM-injected (v0.2.0+): base64 install-script wrapper; accepted and ignored.
    pub runner_install_template: Option<String>,
    /// GARM cloud-init key; accepted and ignored.
    pub pre_install_scripts: Option<HashMap<String, String>>,
    /// GARM cloud-init key; accepted and ignored.
    pub extra_context: Option<HashMap<String, String>>,
    /// `resources` split between the pod's containers, by [`ExtraSpecs::from_value`]: the one
    /// split of a command.
    #[serde(skip)]
    pub shares: Option<(crate::pod::Share, Option<crate::pod::Share>)>,
}

crate::object::object_only!(ExtraSpecs, "an object of extra specs");

/// `job_images` in the schema: its bounds, which schemars cannot say of a map.
fn job_images_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    let string = |max: usize| serde_json::json!({"type": "string", "maxLength": max});
    let schema = serde_json::json!({
        "type": "object",
        "maxProperties": crate::pod::MAX_JOB_IMAGES,
        "additionalProperties": string(crate::pod::MAX_IMAGE_LEN),
        "propertyNames": string(crate::pod::MAX_LABEL_LEN),
    });
    // A JSON Schema object reads as one; `true` (any value) is never reached.
    serde_json::from_value(schema).unwrap_or(schemars::schema::Schema::Bool(true))
}

impl ExtraSpecs {
    /// The one verdict on a pool's extra specs: parsed and checked alone, then, when the
    /// provider config is at hand, resolved over it ([`ExtraSpecs::under`]). `check
    /// --extra-specs`, `validate-extra-specs` (with `--config`) and `ValidatePoolInfo` (with
    /// GARM's config file) ask it; CreateInstance asks the same two functions in two steps
    /// (the specs when it reads stdin, the config when it builds the App).
    pub fn judge(
        value: Option<&serde_json::Value>,
        config: Option<&crate::config::Config>,
    ) -> Result<Self, Error> {
        let specs = Self::from_value(value)?;
        if let Some(config) = config {
            specs.under(config)?;
        }
        Ok(specs)
    }

    /// The pool over the provider config: its container resolved over `[edge_connect]`
    /// ([`ExtraSpecs::container`]), its pod and environment values against that container, its
    /// pull password variable against the config's prefix (what holds without the config,
    /// [`ExtraSpecs::from_value`] checked). Each refusal names the key and where its value came
    /// from, the pool's `extra_specs.*` or the config's `edge_connect.*`.
    pub fn under(&self, config: &crate::config::Config) -> Result<Container, Error> {
        let container = self
            .container(config.edge_connect.container())
            .map_err(Error::failed)?;
        let invalid = |m: String| Error::failed(format!("invalid extra_specs: {m}"));
        self.pod()
            .check(&container, &|key| self.whence(key))
            .map_err(invalid)?;
        self.check_env(&container).map_err(|m| {
            let source = match container.deployment {
                Deployment::Docker => format!("{} is docker", self.source("deployment")),
                Deployment::Kubernetes => {
                    format!("{} is envvars_yaml", self.source("env_delivery"))
                }
            };
            invalid(format!("{m}; {source}"))
        })?;
        self.check_pull_prefix(config.image_pull_password_env_prefix.as_deref())?;
        Ok(container)
    }

    /// True when the resolved value of `key` (`deployment`, `env_delivery`, `command`,
    /// `command_args`) is the pool's own setting, not the provider config's.
    fn pools(&self, key: &str) -> bool {
        match key {
            "deployment" => self.deployment.is_some(),
            "env_delivery" => self.env_delivery.is_some(),
            "command" => self.command.is_some(),
            _ => self.command_args.is_some(),
        }
    }

    /// Where the resolved value of `key` comes from, as a refusal names it.
    fn source(&self, key: &str) -> String {
        if self.pools(key) {
            format!("extra_specs.{key}")
        } else {
            format!("edge_connect.{key} in the provider config")
        }
    }

    /// Where the resolved `deployment` or `env_delivery` comes from, and, when from the config,
    /// what to give the pool for a pod of the provider's (kubernetes, env_vars).
    fn whence(&self, key: &str) -> (String, &'static str) {
        let advice = match (self.pools(key), key) {
            (true, _) => "",
            (false, "deployment") => "; give the pool \"deployment\": \"kubernetes\"",
            (false, _) => "; give the pool \"env_delivery\": \"env_vars\"",
        };
        (self.source(key), advice)
    }

    /// What the pool asks of its pod, for the module that owns it.
    pub fn pod(&self) -> crate::pod::Asked<'_> {
        crate::pod::Asked {
            docker: self.docker.unwrap_or_default(),
            docker_image: self.docker_image.as_ref(),
            job_images: &self.job_images,
            default_job_image: self.default_job_image.as_ref(),
            shares: self.shares,
        }
    }

    /// Parses and validates a JSON value (`null` and absent mean "no settings").
    pub fn from_value(value: Option<&serde_json::Value>) -> Result<Self, Error> {
        let mut specs = match value {
            None | Some(serde_json::Value::Null) => ExtraSpecs::default(),
            // Named by key, never by value: extra specs travel with secrets (a proxy_config sent
            // here by mistake, env values), and serde's own message would quote them.
            Some(v) => serde_path_to_error::deserialize(v).map_err(|e| {
                let what = crate::text::describe_serde(&e.inner().to_string(), false, &[]);
                Error::failed(format!(
                    "invalid extra_specs: {}",
                    crate::text::keyed(&e.path().to_string(), &what)
                ))
            })?,
        };
        specs
            .validate()
            .map_err(|m| Error::failed(format!("invalid extra_specs: {m}")))?;
        Ok(specs)
    }

    /// The pool alone; splits its size ([`ExtraSpecs::shares`]).
    fn validate(&mut self) -> Result<(), String> {
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
            if !crate::naming::is_env_name(name) {
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
        // ValidatePoolInfo does not read the provider config: the pool's own settings are
        // checked over the defaults (so its command words always meet the kubernetes rules, and
        // the docker ones when the pool says docker); CreateInstance resolves them over the
        // config's and checks again.
        let container = self.container(Container::default())?;
        self.check_env(&container)?;
        if let Some(resources) = &self.resources {
            if self.flavor.is_some() {
                return Err(
                    "give flavor or resources, not both: Edge Connect takes one or the other"
                        .into(),
                );
            }
            self.shares = Some(resources.split(self.docker.unwrap_or_default())?);
        }
        self.pod().check(&container, &|key| self.whence(key))?;
        if self.image_pull_username.is_some() != self.image_pull_password_env.is_some() {
            return Err("image_pull_username and image_pull_password_env go together".into());
        }
        // Not one of the provider's own credential variables (config/credentials.rs, the proxy
        // ones): the platform sends pull credentials to whatever registry the pool's image
        // names. Other `EDP_EDGE_CONNECT_*` names stay usable: the documented setup passes
        // registry passwords under the same GARM prefix. The operator's
        // `image_pull_password_env_prefix` is [`ExtraSpecs::under`]'s.
        let own = [crate::config::ENV_USERNAME, crate::config::ENV_PASSWORD];
        let proxies = edge_connect::proxy::URL_VARIABLES.iter().flatten();
        if let Some(var) = &self.image_pull_password_env {
            let upper = var.to_ascii_uppercase();
            if own.iter().chain(proxies).any(|name| *name == upper) {
                return Err(format!("image_pull_password_env: {} holds the provider's own credentials, which must not be sent to a registry; name a variable that holds only the registry password", crate::text::echo(var)));
            }
        }
        Ok(())
    }

    /// The pool's `env` values against what `container`'s deployment and delivery keep intact.
    fn check_env(&self, container: &Container) -> Result<(), String> {
        let (deployment, delivery) = (container.deployment, container.env_delivery);
        self.env.iter().try_for_each(|(name, value)| {
            crate::manifest_safety::check_env_value(deployment, delivery, name, value)
        })
    }

    /// The pool's runner container: its `command`, `command_args`, `deployment` and
    /// `env_delivery` over `config`'s (the provider config's `[edge_connect]` values,
    /// `EdgeConnectConfig::container`), checked together. The one place these four are
    /// resolved: CreateInstance's App, ValidatePoolInfo and `check --extra-specs` use it. A
    /// refusal names each value's key, `extra_specs.*` or `edge_connect.*`.
    pub fn container(&self, config: Container) -> Result<Container, String> {
        let container = Container {
            deployment: self.deployment.unwrap_or(config.deployment),
            env_delivery: self.env_delivery.unwrap_or(config.env_delivery),
            // An empty command (the pool's or the config's) runs the image's entrypoint.
            command: self
                .command
                .clone()
                .or(config.command)
                .filter(|c| !c.is_empty()),
            command_args: self.command_args.clone().unwrap_or(config.command_args),
        };
        container.check(&|key| {
            let from = if self.pools(key) {
                "extra_specs"
            } else {
                "edge_connect"
            };
            format!("{from}.{key}")
        })?;
        Ok(container)
    }

    /// Refuses an `image_pull_password_env` outside the operator's
    /// `image_pull_password_env_prefix`, when the provider config gives one.
    fn check_pull_prefix(&self, prefix: Option<&str>) -> Result<(), Error> {
        match (&self.image_pull_password_env, prefix) {
            (Some(var), Some(prefix)) if !var.starts_with(prefix) => Err(Error::failed(format!(
                "invalid extra_specs: image_pull_password_env: {} does not start with {prefix} (image_pull_password_env_prefix in the provider config)",
                crate::text::echo(var)
            ))),
            _ => Ok(()),
        }
    }

    /// The JSON schema, generated from this type.
    pub fn json_schema() -> Result<serde_json::Value, Error> {
        serde_json::to_value(schemars::schema_for!(ExtraSpecs)).map_err(|e| {
            Error::caused_by(format!("cannot generate the extra specs schema: {e}"), e)
        })
    }
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
            .check_pull_prefix(Some("EDP_EDGE_CONNECT_REGISTRY_"))
            .is_ok());
        let ok = ExtraSpecs::from_value(Some(
            &json!({"image_pull_username":"x","image_pull_password_env":"REGISTRY_PASSWORD"}),
        ))
        .unwrap();
        assert!(ok.check_pull_prefix(None).is_ok());
        assert!(ok.check_pull_prefix(Some("REGISTRY_")).is_ok());
        assert_eq!(
            ok.check_pull_prefix(Some("GARM_PULL_")).unwrap_err().to_string(),
            "invalid extra_specs: image_pull_password_env: REGISTRY_PASSWORD does not start with GARM_PULL_ (image_pull_password_env_prefix in the provider config)"
        );
    }

    #[test]
    fn the_pools_values_lie_over_the_configs_each_named_by_where_it_came_from() {
        let config = Container {
            deployment: Deployment::Docker,
            env_delivery: EnvDelivery::EnvVars,
            command: Some("/entrypoint.sh".into()),
            command_args: Vec::new(),
        };
        let args = ExtraSpecs {
            command_args: Some(vec!["--once".into()]),
            ..Default::default()
        };
        assert_eq!(
            args.container(config.clone()).unwrap_err(),
            "extra_specs.command_args: docker deployments do not pass arguments to the container; leave it empty and bake them into the image's CMD"
        );
        let kubernetes = ExtraSpecs {
            deployment: Some(Deployment::Kubernetes),
            env_delivery: Some(EnvDelivery::EnvvarsYaml),
            ..args
        };
        assert_eq!(
            kubernetes.container(config.clone()).unwrap(),
            Container {
                deployment: Deployment::Kubernetes,
                env_delivery: EnvDelivery::EnvvarsYaml,
                command: Some("/entrypoint.sh".into()),
                command_args: vec!["--once".into()],
            }
        );
        let no_command = ExtraSpecs {
            command: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(no_command.container(config).unwrap().command, None);
    }

    /// The split is read once, by the provider: a pool cannot hand in shares of its own.
    #[test]
    fn the_shares_are_the_providers_split_never_the_pools() {
        let forged = json!({"shares": [{"milli_cpu": 1, "memory": 1}, null]});
        let err = ExtraSpecs::from_value(Some(&forged))
            .unwrap_err()
            .to_string();
        assert!(err.contains("shares"), "{err}");
        let schema = ExtraSpecs::json_schema().unwrap();
        assert!(schema["properties"].get("shares").is_none());
        let sized = json!({"docker": "buildkit", "resources": {"cpu": 2, "memory": 4096}});
        let half = crate::pod::Share {
            milli_cpu: 1000,
            memory: 2048,
        };
        let specs = ExtraSpecs::from_value(Some(&sized)).unwrap();
        assert_eq!(specs.shares, Some((half, Some(half))));
        assert_eq!(specs.pod().shares, specs.shares);
    }

    #[test]
    fn the_schema_bounds_job_images_as_creates_do() {
        let schema = ExtraSpecs::json_schema().unwrap();
        let string = |max: usize| json!({"type": "string", "maxLength": max});
        let mut job_images = schema["properties"]["job_images"].clone();
        job_images.as_object_mut().unwrap().remove("description");
        assert_eq!(
            job_images,
            json!({
                "type": "object",
                "default": {},
                "maxProperties": crate::pod::MAX_JOB_IMAGES,
                "additionalProperties": string(crate::pod::MAX_IMAGE_LEN),
                "propertyNames": string(crate::pod::MAX_LABEL_LEN),
            })
        );
    }

    #[test]
    fn null_means_defaults() {
        let s = ExtraSpecs::from_value(Some(&serde_json::Value::Null)).unwrap();
        assert!(s.flavor.is_none());
    }
}
