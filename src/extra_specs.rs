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
    /// GARM-injected (v0.2.0+): base64 install-script wrapper; accepted and ignored.
    pub runner_install_template: Option<String>,
    /// GARM cloud-init key; accepted and ignored.
    pub pre_install_scripts: Option<HashMap<String, String>>,
    /// GARM cloud-init key; accepted and ignored.
    pub extra_context: Option<HashMap<String, String>>,
}

crate::object::object_only!(ExtraSpecs, "an object of extra specs");

/// The longest image reference a pool may give, in bytes: distribution's reference grammar
/// takes a name of at most 255 characters (`NameTotalLengthMax`) and a tag of at most 128, and
/// a sha256 digest adds 71 (docs/runner-contract.md, "Docker in the runner's pod").
pub const MAX_IMAGE_LEN: usize = 512;
/// The most labels `job_images` may map: each becomes part of one environment variable of the
/// runner (`RUNNER_JOB_IMAGES`), which stays below some 20 KB with them.
pub const MAX_JOB_IMAGES: usize = 32;
/// The longest label `job_images` may name, in bytes.
pub const MAX_LABEL_LEN: usize = 64;

/// `job_images` in the schema: its bounds, which schemars cannot say of a map.
fn job_images_schema(generator: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
    use schemars::schema::{InstanceType, ObjectValidation, SchemaObject, StringValidation};
    let string = |max: usize| {
        schemars::schema::Schema::Object(SchemaObject {
            instance_type: Some(InstanceType::String.into()),
            string: Some(Box::new(StringValidation {
                max_length: Some(max as u32),
                ..Default::default()
            })),
            ..Default::default()
        })
    };
    let mut schema = match generator.subschema_for::<BTreeMap<String, String>>() {
        schemars::schema::Schema::Object(o) => o,
        other => return other,
    };
    schema.object = Some(Box::new(ObjectValidation {
        max_properties: Some(MAX_JOB_IMAGES as u32),
        additional_properties: Some(Box::new(string(MAX_IMAGE_LEN))),
        property_names: Some(Box::new(string(MAX_LABEL_LEN))),
        ..Default::default()
    }));
    schemars::schema::Schema::Object(schema)
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
    /// ([`ExtraSpecs::container`]), its Docker settings and environment values against that
    /// container, its pull password variable against the config's prefix. Each refusal names
    /// the key and where its value came from, the pool's `extra_specs.*` or the config's
    /// `edge_connect.*`.
    pub fn under(&self, config: &crate::config::Config) -> Result<Container, Error> {
        let container = self
            .container(config.edge_connect.container())
            .map_err(Error::failed)?;
        let invalid = |m: String| Error::failed(format!("invalid extra_specs: {m}"));
        self.check_docker(&container).map_err(invalid)?;
        for (name, value) in &self.env {
            crate::manifest_safety::check_env_value(
                container.deployment,
                container.env_delivery,
                name,
                value,
            )
            .map_err(|m| {
                let source = match container.deployment {
                    Deployment::Docker => format!("{} is docker", self.source("deployment")),
                    Deployment::Kubernetes => {
                        format!("{} is envvars_yaml", self.source("env_delivery"))
                    }
                };
                invalid(format!("{m}; {source}"))
            })?;
        }
        self.check_pull_password_env(config.image_pull_password_env_prefix.as_deref())?;
        Ok(container)
    }

    /// Where the resolved value of `key` (`deployment`, `env_delivery`, `command`,
    /// `command_args`) comes from, as a refusal names it: the pool's own setting, or the
    /// provider config's.
    fn source(&self, key: &str) -> String {
        let pools = match key {
            "deployment" => self.deployment.is_some(),
            "env_delivery" => self.env_delivery.is_some(),
            "command" => self.command.is_some(),
            _ => self.command_args.is_some(),
        };
        if pools {
            format!("extra_specs.{key}")
        } else {
            format!("edge_connect.{key} in the provider config")
        }
    }

    /// Parses and validates a JSON value (`null` and absent mean "no settings").
    pub fn from_value(value: Option<&serde_json::Value>) -> Result<Self, Error> {
        let specs = match value {
            None | Some(serde_json::Value::Null) => ExtraSpecs::default(),
            // Named by key, never by value: extra specs travel with secrets (a proxy_config sent
            // here by mistake, env values), and serde's own message would quote them.
            Some(v) => {
                serde_path_to_error::deserialize::<_, ExtraSpecs>(v.clone()).map_err(|e| {
                    let what = crate::text::describe_serde(&e.inner().to_string(), false);
                    Error::failed(format!(
                        "invalid extra_specs: {}",
                        crate::text::keyed(&e.path().to_string(), &what)
                    ))
                })?
            }
        };
        specs
            .validate()
            .map_err(|m| Error::failed(format!("invalid extra_specs: {m}")))?;
        specs.check_pull_password_env(None)?;
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
        for (name, value) in &self.env {
            crate::manifest_safety::check_env_value(
                container.deployment,
                container.env_delivery,
                name,
                value,
            )?;
        }
        self.check_docker(&container)?;
        if self.image_pull_username.is_some() != self.image_pull_password_env.is_some() {
            return Err("image_pull_username and image_pull_password_env go together".into());
        }
        Ok(())
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
            let from = if self.source(key).starts_with("extra_specs") {
                "extra_specs"
            } else {
                "edge_connect"
            };
            format!("{from}.{key}")
        })?;
        Ok(container)
    }

    /// The pool's Docker settings against its resolved container. The runner's pod with a
    /// sidecar is a manifest of the provider's: only deployment kubernetes carries one, and
    /// `envvars_yaml` would put the runner's secrets into the sidecar after the values that
    /// blank them there (docs/edge-connect-behaviours.md B27). Images are fully qualified
    /// (B28).
    pub fn check_docker(&self, container: &Container) -> Result<(), String> {
        let mode = self.docker.unwrap_or_default();
        if let Some(resources) = &self.resources {
            if self.flavor.is_some() {
                return Err(
                    "give flavor or resources, not both: Edge Connect takes one or the other"
                        .into(),
                );
            }
            resources.split(mode)?;
            if container.deployment != crate::config::Deployment::Kubernetes {
                return Err(format!(
                    "resources: needs deployment kubernetes, and {} is docker{}",
                    self.source("deployment"),
                    self.to_kubernetes()
                ));
            }
        }
        if mode != crate::pod::DockerMode::Dind {
            // A buildkit pod runs no job containers: its labels stay host labels.
            for (key, set, needs) in [
                (
                    "docker_image",
                    self.docker_image.is_some() && mode == crate::pod::DockerMode::None,
                    "docker = \"dind\" or \"buildkit\"",
                ),
                (
                    "job_images",
                    !self.job_images.is_empty(),
                    "docker = \"dind\"",
                ),
                (
                    "default_job_image",
                    self.default_job_image.is_some(),
                    "docker = \"dind\"",
                ),
            ] {
                if set {
                    return Err(format!("{key}: needs {needs}"));
                }
            }
            if mode == crate::pod::DockerMode::None {
                return Ok(());
            }
        }
        if container.deployment != crate::config::Deployment::Kubernetes {
            return Err(format!(
                "docker: \"{}\" needs deployment kubernetes, and {} is docker{}",
                mode.as_str(),
                self.source("deployment"),
                self.to_kubernetes()
            ));
        }
        if container.env_delivery != crate::config::EnvDelivery::EnvVars {
            let advice = if self.env_delivery.is_some() {
                ""
            } else {
                "; give the pool \"env_delivery\": \"env_vars\""
            };
            return Err(format!(
                "docker: \"{}\" needs env_delivery env_vars, and {} is envvars_yaml, which would hand the runner's secrets to the sidecar{advice}",
                mode.as_str(),
                self.source("env_delivery"),
            ));
        }
        let images = self
            .docker_image
            .iter()
            .map(|i| ("docker_image".to_string(), i))
            .chain(
                self.default_job_image
                    .iter()
                    .map(|i| ("default_job_image".to_string(), i)),
            )
            .chain(
                self.job_images
                    .iter()
                    .map(|(label, i)| (format!("job_images.{}", crate::text::echo(label)), i)),
            );
        for (key, image) in images {
            if image.len() > MAX_IMAGE_LEN {
                return Err(format!(
                    "{key}: {} bytes is longer than any image reference ({MAX_IMAGE_LEN} at most)",
                    image.len()
                ));
            }
            // The runner joins its labels with `,` (NAME:docker://IMAGE,...), and the example
            // entrypoint refuses an image that holds one (docs/runner-contract.md); no image
            // reference holds one either.
            if image.contains(',') {
                return Err(format!(
                    "{key}: `{}` holds a `,`, which no image reference holds and a runner label cannot carry",
                    crate::text::echo(image)
                ));
            }
            if !crate::pod::fully_qualified(image) {
                return Err(format!(
                    "{key}: `{}` does not name its registry; Edge Connect needs every image of the pod fully qualified (docker.io/library/...)",
                    crate::text::echo(image)
                ));
            }
        }
        if self.job_images.len() > MAX_JOB_IMAGES {
            return Err(format!(
                "job_images: {} labels are more than {MAX_JOB_IMAGES}, the most one runner's environment carries",
                self.job_images.len()
            ));
        }
        for label in self.job_images.keys() {
            if label.len() > MAX_LABEL_LEN {
                return Err(format!(
                    "job_images: a label of {} bytes is longer than {MAX_LABEL_LEN}",
                    label.len()
                ));
            }
            if label.is_empty()
                || label.contains([':', ','])
                || label.chars().any(char::is_whitespace)
            {
                return Err(format!(
                    "job_images: `{}` is not a runner label (no `:`, `,` or spaces)",
                    crate::text::echo(label)
                ));
            }
        }
        Ok(())
    }

    /// The runner's image as this pool needs it: a pool whose pod the provider writes (with
    /// `docker` or `resources`) needs it fully qualified, as the CRM reads the registry of every
    /// image of the pod (docs/edge-connect-behaviours.md B28). CreateInstance and `check
    /// --image` ask it.
    pub fn check_runner_image(&self, image: &str) -> Result<(), String> {
        let pod = self.docker.unwrap_or_default() != crate::pod::DockerMode::None
            || self.resources.is_some();
        if pod && !crate::pod::fully_qualified(image) {
            return Err(format!(
                "the pool's image `{}` does not name its registry; a pool with docker or resources needs it fully qualified (docker.io/..., ghcr.io/...), as Edge Connect reads the registry of every image of the pod",
                crate::text::echo(image)
            ));
        }
        Ok(())
    }

    /// What to do when the resolved deployment is docker and the pool needs kubernetes.
    fn to_kubernetes(&self) -> &'static str {
        if self.deployment.is_some() {
            ""
        } else {
            "; give the pool \"deployment\": \"kubernetes\""
        }
    }

    /// Refuses an `image_pull_password_env` the provider must not hand to a registry: one of
    /// its own credential variables (the platform sends pull credentials to whatever registry
    /// the pool's image names), or (with the operator's `image_pull_password_env_prefix`) a
    /// name outside the prefix. `ValidatePoolInfo` and CreateInstance call it with the config's
    /// prefix; [`ExtraSpecs::from_value`] without one (the fixed names only).
    pub fn check_pull_password_env(&self, prefix: Option<&str>) -> Result<(), Error> {
        let Some(var) = &self.image_pull_password_env else {
            return Ok(());
        };
        let shown = crate::text::echo(var);
        // The credentials config/credentials.rs reads. Other `EDP_EDGE_CONNECT_*` names stay
        // usable: the documented setup passes registry passwords under the same GARM prefix.
        let upper = var.to_ascii_uppercase();
        if upper == crate::config::ENV_USERNAME
            || upper == crate::config::ENV_PASSWORD
            || PROXY_VARIABLES.contains(&upper.as_str())
        {
            return Err(Error::failed(format!(
                "invalid extra_specs: image_pull_password_env: {shown} holds the provider's own credentials, which must not be sent to a registry; name a variable that holds only the registry password"
            )));
        }
        match prefix.filter(|p| !var.starts_with(p)) {
            Some(prefix) => Err(Error::failed(format!(
                "invalid extra_specs: image_pull_password_env: {shown} does not start with {prefix} (image_pull_password_env_prefix in the provider config)"
            ))),
            None => Ok(()),
        }
    }

    /// The JSON schema, generated from this type.
    pub fn json_schema() -> Result<serde_json::Value, Error> {
        serde_json::to_value(schemars::schema_for!(ExtraSpecs)).map_err(|e| {
            Error::caused_by(format!("cannot generate the extra specs schema: {e}"), e)
        })
    }
}

/// Proxy variables the client reads (crates/edge-connect/src/proxy.rs); their URLs may hold
/// the proxy's user and password.
const PROXY_VARIABLES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"];

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

    #[test]
    fn null_means_defaults() {
        let s = ExtraSpecs::from_value(Some(&serde_json::Value::Null)).unwrap();
        assert!(s.flavor.is_none());
    }
}
