//! CreateInstance: one App, then one AppInst; on any failure, nothing is left behind.

use std::time::Duration;

use super::placement::{self, site_unusable};
use super::wait::{backoff, Deadline};
use super::Provider;
use crate::config::{Deployment, EnvDelivery, Placement};
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::{BootstrapInstance, InstanceStatus, ProviderInstance};
use crate::naming::edge_name;
use crate::runner_env::runner_env;
use edge_connect::models::{env_vars_yaml, AppKey, ConfigFile, FlavorKey, NewApp};
use edge_connect::{ApiError, ApiErrorKind, AppInstState, StreamEnd, Subject};

/// Extra time granted to the rollback of a failed create, beyond the command's deadline.
const ROLLBACK_GRACE: Duration = Duration::from_secs(120);

impl Provider {
    pub(super) async fn create(
        &self,
        bootstrap: &BootstrapInstance,
        pool_id: &str,
        extra_specs: Option<&serde_json::Value>,
        deadline: Deadline,
    ) -> Result<ProviderInstance, Error> {
        // Everything that can be refused locally is refused before the first API call.
        let specs = ExtraSpecs::from_value(extra_specs)?;
        let name = edge_name(&bootstrap.name);
        let sites = placement::candidates(&self.config, &specs, &bootstrap.name);
        let app = self.new_app(bootstrap, pool_id, &specs, &name, &sites)?;
        let app_key = app.key.clone();

        tracing::info!(app = %name, image = %app.image_path, flavor = %app.default_flavor.name, "creating App");
        self.report(&format!("creating App {name}"));
        if let Err(e) = self.client.create_app(&app).await {
            return Err(match e.kind {
                ApiErrorKind::AlreadyExists => Error::Duplicate(format!(
                    "instance {} already exists on Edge Connect (App {name})",
                    bootstrap.name
                )),
                // Login failed or no connection was made: CreateApp never left this process,
                // so there is nothing to roll back (and an unreachable server would only make
                // the rollback wait out its whole grace).
                ApiErrorKind::Transport if never_sent(&e) => e.into(),
                // The request may have reached the server: make sure no App stays behind.
                ApiErrorKind::Transport => self.rollback(&name, &app_key, deadline, e.into()).await,
                _ => self.explain(e).await,
            });
        }

        match self.deploy(&name, &app_key, &sites, deadline).await {
            Ok(()) => {
                tracing::info!(app = %name, "created");
                Ok(ProviderInstance {
                    provider_id: name,
                    name: bootstrap.name.clone(),
                    os_type: bootstrap.os_type.clone(),
                    os_name: String::new(),
                    os_version: String::new(),
                    os_arch: bootstrap.arch.clone(),
                    addresses: Vec::new(),
                    status: InstanceStatus::Running,
                    provider_fault: None,
                })
            }
            Err(e) => Err(self.rollback(&name, &app_key, deadline, e).await),
        }
    }

    /// The CreateApp body: image, flavor, command and the runner environment.
    fn new_app(
        &self,
        bootstrap: &BootstrapInstance,
        pool_id: &str,
        specs: &ExtraSpecs,
        name: &str,
        sites: &[Placement],
    ) -> Result<NewApp, Error> {
        let ec = &self.config.edge_connect;
        let flavor = specs
            .flavor
            .clone()
            .or_else(|| {
                let f = bootstrap.flavor.trim();
                (!f.is_empty() && f != "default").then(|| f.to_string())
            })
            .or_else(|| ec.default_flavor.clone())
            .ok_or_else(|| {
                Error::input("no flavor: set the pool's flavor, extra_specs.flavor or edge_connect.default_flavor")
            })?;
        let deployment = specs.deployment.unwrap_or(ec.deployment);
        let delivery = specs.env_delivery.unwrap_or(ec.env_delivery);
        if delivery == EnvDelivery::EnvvarsYaml && deployment != Deployment::Kubernetes {
            return Err(Error::input(
                "env_delivery envvars_yaml needs deployment kubernetes",
            ));
        }
        let env = runner_env(
            bootstrap,
            &self.controller_id,
            pool_id,
            sites,
            &specs.env,
            deployment == Deployment::Docker,
        );
        let (username, credentials) = match (
            &specs.image_pull_username,
            &specs.image_pull_password_env,
        ) {
            (Some(user), Some(var)) => {
                let password = self.environment.get(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                    Error::input(format!(
                        "extra_specs.image_pull_password_env names {var}, which is not set in the provider's environment (add its prefix to GARM's environment_variables)"
                    ))
                })?;
                (Some(user.clone()), Some(password.clone()))
            }
            _ => (None, None),
        };
        let secret_values = env
            .secret
            .iter()
            .map(|(k, v)| (k.clone(), v.expose().to_string()));
        let (env_vars, secret_env_vars, configs) = match delivery {
            EnvDelivery::EnvVars => (env.plain.clone(), secret_values.collect(), Vec::new()),
            EnvDelivery::EnvvarsYaml => {
                let mut all = env.plain.clone();
                all.extend(secret_values);
                (
                    Default::default(),
                    Default::default(),
                    vec![ConfigFile {
                        kind: "envVarsYaml".to_string(),
                        config: env_vars_yaml(&all),
                    }],
                )
            }
        };
        Ok(NewApp {
            key: self.app_key(name),
            image_type: "Docker",
            image_path: bootstrap.image.clone(),
            deployment: deployment.as_str(),
            default_flavor: FlavorKey { name: flavor },
            command: specs
                .command
                .clone()
                .or_else(|| ec.command.clone())
                .filter(|c| !c.is_empty()),
            command_args: specs
                .command_args
                .clone()
                .unwrap_or_else(|| ec.command_args.clone()),
            configs,
            env_vars,
            secret_env_vars,
            username,
            credentials,
        })
    }

    /// Creates the AppInst on the first site that takes it.
    pub(super) async fn deploy(
        &self,
        name: &str,
        app_key: &AppKey,
        sites: &[Placement],
        deadline: Deadline,
    ) -> Result<(), Error> {
        let mut last_refusal: Option<ApiError> = None;
        for site in sites {
            let request = placement::new_app_inst(name, self.organization(), app_key.clone(), site);
            self.report(&format!("creating AppInst {name} in {site}"));
            let mut attempt = 0;
            let outcome = loop {
                attempt += 1;
                let mut progress = |m: &str| self.report(m);
                let left = deadline.remaining();
                let call = self.client.create_app_inst(&request, &mut progress);
                let result = match tokio::time::timeout(left, call).await {
                    Ok(r) => r,
                    Err(_) => Err(ApiError::transport(
                        "CreateAppInst",
                        "deadline reached while the stream was running",
                    )),
                };
                match result {
                    // Refused before anything was made (429 / 5xx as HTTP status): safe to repeat.
                    Err(e)
                        if e.is_transient()
                            && e.status.is_some_and(|s| s != 200)
                            && deadline.remaining() > backoff(attempt) =>
                    {
                        tracing::warn!(error = %e, attempt, "CreateAppInst refused, retrying");
                        tokio::time::sleep(backoff(attempt)).await;
                    }
                    other => break other,
                }
            };
            match outcome {
                Ok(StreamEnd::Completed(_)) => return Ok(()),
                Ok(StreamEnd::StillInProgress(message)) => {
                    self.report(&message);
                    return self.await_ready(name, deadline).await;
                }
                Err(e) if e.kind == ApiErrorKind::Transport => {
                    // The stream broke, but the work may go on server-side: watch the object
                    // instead of creating it a second time.
                    tracing::warn!(error = %e, "CreateAppInst stream broke; polling the AppInst");
                    self.report("stream interrupted; checking the AppInst state");
                    return self.await_ready(name, deadline).await;
                }
                Err(e) if site_unusable(&e) => {
                    tracing::warn!(%site, error = %e, "site cannot take the AppInst; trying the next one");
                    self.report(&format!("{site} cannot take it: {}", e.message));
                    last_refusal = Some(e);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(match last_refusal {
            Some(e) if sites.len() > 1 => Error::Other(format!(
                "no site could take the AppInst ({} tried); last: {e}",
                sites.len()
            )),
            Some(e) => self.explain(e).await,
            None => Error::Other("no site to place the AppInst on".to_string()),
        })
    }

    /// Adds what the operator needs to fix a refusal: the flavors or sites that do exist. Costs a
    /// Show call, on the error path only.
    async fn explain(&self, e: ApiError) -> Error {
        let listing = if e.missing() == Some(Subject::Flavor) {
            self.client.show_flavors().await.ok().map(|f| {
                format!(
                    "flavors in region {}: {}",
                    self.client.region(),
                    join(f.iter().map(|f| f.flavor_name().to_string()))
                )
            })
        } else if e.missing() == Some(Subject::Zone) {
            self.client.show_zones().await.ok().map(|z| {
                format!(
                    "zones: {}",
                    join(
                        z.iter()
                            .map(|z| format!("{}/{}", z.key.organization, z.key.name))
                    )
                )
            })
        } else if e.missing() == Some(Subject::Cloudlet) {
            self.client.show_cloudlets().await.ok().map(|c| {
                format!(
                    "cloudlets: {}",
                    join(
                        c.iter()
                            .map(|c| format!("{}/{}", c.key.organization, c.key.name))
                    )
                )
            })
        } else {
            None
        };
        match listing {
            Some(listing) => Error::Other(format!("{e}; {listing}")),
            None => e.into(),
        }
    }

    /// Polls the AppInst until it is Ready, failed, gone, or the deadline passes.
    async fn await_ready(&self, name: &str, deadline: Deadline) -> Result<(), Error> {
        loop {
            let insts = self.app_insts_named(name, deadline).await?;
            match insts.first() {
                Some(i) if i.state == AppInstState::Ready => return Ok(()),
                Some(i) if i.state.is_error() => {
                    let detail = if i.errors.is_empty() {
                        i.state.to_string()
                    } else {
                        i.errors.join("; ")
                    };
                    return Err(Error::Other(format!("AppInst {name} failed: {detail}")));
                }
                Some(_) => {}
                None => {
                    return Err(Error::Other(format!(
                        "AppInst {name} was not created (Edge Connect undid it)"
                    )))
                }
            }
            if deadline.remaining() <= self.poll_interval {
                return Err(Error::Other(format!(
                    "AppInst {name} not Ready within edge_connect.operation_timeout_secs={}s",
                    self.config.edge_connect.operation_timeout_secs
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }

    /// Removes whatever a failed create left (AppInst in any state, then the App) and returns the
    /// error to report, noting a failed cleanup (GARM's DeleteInstance will finish it).
    async fn rollback(
        &self,
        name: &str,
        app_key: &AppKey,
        deadline: Deadline,
        cause: Error,
    ) -> Error {
        let deadline = deadline.extended(ROLLBACK_GRACE);
        self.report(&format!("create failed ({cause}); removing {name}"));
        let cleanup = async {
            for inst in self.app_insts_named(name, deadline).await? {
                self.delete_app_inst(&inst.key, deadline).await?;
            }
            self.delete_app(app_key, deadline).await
        };
        match cleanup.await {
            Ok(()) => {
                tracing::info!(app = %name, "rolled back");
                cause
            }
            Err(cleanup_error) => {
                tracing::error!(app = %name, error = %cleanup_error, "rollback failed");
                let message = format!("{cause}; cleanup of {name} failed too ({cleanup_error}), DeleteInstance will retry it");
                match cause {
                    Error::Duplicate(_) => Error::Duplicate(message),
                    _ => Error::Other(message),
                }
            }
        }
    }
}

/// Whether a failed CreateApp certainly never reached the server: its login failed first, or
/// the connection could not be made. These are the client's own words for those cases
/// (`ApiError::transport("login", ..)`, reqwest's `is_connect`), not the controller's.
fn never_sent(e: &ApiError) -> bool {
    e.rpc == "login" || e.message.starts_with("cannot connect")
}

fn join(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
