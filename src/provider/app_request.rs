//! The CreateApp body for a runner: image, flavor, the pool's container (deployment, command,
//! environment delivery), the runner environment and image pull credentials, each checked
//! against what Edge Connect keeps intact before anything is sent.

use super::Provider;
use crate::config::{Deployment, EnvDelivery, Placement};
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::BootstrapInstance;
use crate::runner_env::{
    runner_env, ENV_CACHE_SECRET, ENV_CACHE_SERVER, ENV_CONTROLLER_ID, ENV_POOL_ID,
};
use edge_connect::appinst_start::deployment_name;
use edge_connect::models::{
    env_vars_yaml, ConfigFile, FlavorKey, KubernetesResources, NewApp, NodePoolResources,
};

impl Provider {
    /// The CreateApp body: image, flavor, command and the runner environment.
    pub(super) fn new_app(
        &self,
        bootstrap: &BootstrapInstance,
        pool_id: &str,
        specs: &ExtraSpecs,
        name: &str,
        sites: &[Placement],
        cache: &crate::site_cache::Use,
    ) -> Result<NewApp, Error> {
        // The verdict `check --extra-specs` and `validate-extra-specs --config` give.
        let container = specs.under(&self.config)?;
        // GARM's pool flavor, unless empty or `default`.
        let garm = Some(bootstrap.flavor.trim()).filter(|f| !f.is_empty() && *f != "default");
        // A pool sized by `resources` sends no flavor: Edge Connect takes one or the other
        // (docs/edge-connect-behaviours.md B32). GARM's pool flavor is then not used; the log
        // says so (README, "A runner's size").
        let flavor = if specs.resources.is_some() {
            if let Some(garm) = garm {
                tracing::warn!(
                    "the pool's flavor {} is not used: extra_specs.resources gives the runner's size",
                    crate::text::echo(garm)
                );
            }
            String::new()
        } else {
            // The pool's extra specs, GARM's pool flavor, or the config's default.
            let default = &self.config.edge_connect.default_flavor;
            let flavor = specs.flavor.as_deref().or(garm).or(default.as_deref());
            flavor.map(str::to_string).ok_or_else(|| {
                Error::failed("no flavor: set the pool's flavor, extra_specs.flavor or edge_connect.default_flavor")
            })?
        };
        let (deployment, delivery) = (container.deployment, container.env_delivery);
        let mut env = runner_env(
            bootstrap,
            &self.controller_id,
            pool_id,
            sites,
            &specs.env,
            deployment == Deployment::Docker,
        );
        specs.pod().runner_env(&mut env.plain);
        // The site's actions cache, with its secret (docs/runner-contract.md, "The site's
        // actions cache").
        if let (Some(url), Some(secret)) = (&cache.actions, &self.site_cache_secret) {
            env.plain.insert(ENV_CACHE_SERVER.into(), url.clone());
            env.secret.insert(ENV_CACHE_SECRET.into(), secret.clone());
        }
        let secret: std::collections::BTreeMap<_, _> = env
            .secret
            .iter()
            .map(|(k, v)| (k.clone(), v.expose().to_string()))
            .collect();
        for (name, value) in env.plain.iter().chain(&secret) {
            crate::manifest_safety::check_env_value(deployment, delivery, name, value)
                .map_err(Error::failed)?;
        }
        let (username, credentials) = match (
            &specs.image_pull_username,
            &specs.image_pull_password_env,
        ) {
            (Some(user), Some(var)) => {
                let password = self.environment.get(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                    Error::failed(format!(
                        "extra_specs.image_pull_password_env names {}, which is not set in the provider's environment (add its prefix to GARM's environment_variables)",
                        crate::text::echo(var)
                    ))
                })?;
                // Masked in output since the pipeline started (`pipeline::protect`).
                (Some(user.clone()), Some(password.clone()))
            }
            _ => (None, None),
        };
        let key = self.app_key(name);
        let deployment_manifest = specs
            .pod()
            .manifest(
                deployment_name(&key.name, &key.version),
                &bootstrap.image,
                &container,
                env.plain.keys().chain(secret.keys()),
                cache.mirror.as_deref(),
            )
            .map_err(Error::failed)?;
        let (env_vars, secret_env_vars, configs) = match delivery {
            EnvDelivery::EnvVars => (env.plain, secret, Vec::new()),
            EnvDelivery::EnvvarsYaml => {
                // The ownership markers also in `env_vars`, where a ShowApp can filter on them
                // (docs/edge-connect-behaviours.md B23); a server without `env_vars` drops them
                // and reads them from the config. The platform gives env_vars to the container
                // by `envFrom`, which the config's `env` entries of the same name override with
                // the same values (main `pkg/k8smgmt/manifest.go:56-61, 313-326`).
                let markers = [ENV_CONTROLLER_ID, ENV_POOL_ID]
                    .into_iter()
                    .filter_map(|name| Some((name.to_string(), env.plain.get(name)?.clone())))
                    .collect();
                let mut all = env.plain;
                all.extend(secret);
                (
                    markers,
                    Default::default(),
                    vec![ConfigFile {
                        kind: "envVarsYaml".to_string(),
                        config: env_vars_yaml(&all),
                    }],
                )
            }
        };
        Ok(NewApp {
            key,
            image_type: "Docker",
            image_path: bootstrap.image.clone(),
            deployment: deployment.as_str(),
            default_flavor: FlavorKey { name: flavor },
            kubernetes_resources: specs.resources.map(|r| KubernetesResources {
                cpu_pool: NodePoolResources {
                    total_vcpus: r.milli_cpu(),
                    total_memory: r.memory,
                    total_disk: r.disk,
                },
            }),
            command: container.command,
            command_args: container.command_args,
            configs,
            env_vars,
            secret_env_vars,
            username,
            credentials,
            deployment_manifest,
            access_ports: String::new(),
        })
    }
}
