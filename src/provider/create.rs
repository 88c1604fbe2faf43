//! CreateInstance: one App, then one AppInst; on any failure, nothing is left behind.

use std::time::Duration;

use super::placement::{self, site_unusable};
use super::wait::{backoff, retry_transient, Deadline};
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

        let needs = Needs {
            env_vars: !app.env_vars.is_empty() || !app.secret_env_vars.is_empty(),
            pull_credentials: app.username.is_some(),
        };
        // What this server is known to drop is refused before anything is made.
        self.refuse_known_drops(needs)?;
        // A CreateApp for a name that exists wipes that App's secret env vars before failing
        // with "already exists" (main `pkg/controller/app_api.go:694-716`): look first, and
        // never send one that could collide with a live runner.
        if self.app_exists(&name, deadline).await? {
            return Err(Error::Duplicate(format!(
                "instance {} already exists on Edge Connect (App {name})",
                bootstrap.name
            )));
        }

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

        if let Err(e) = self.confirm_kept(&name, &app, needs, deadline).await {
            return Err(self.rollback(&name, &app_key, deadline, e).await);
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

    /// Fails when the server is known to drop a field this App needs.
    fn refuse_known_drops(&self, needs: Needs) -> Result<(), Error> {
        let facts = self.client.facts();
        if needs.env_vars && facts.keeps_env_vars == Some(false) {
            return Err(Error::config(ENV_VARS_DROPPED));
        }
        if needs.pull_credentials && facts.keeps_pull_credentials == Some(false) {
            return Err(Error::config(PULL_CREDENTIALS_DROPPED));
        }
        Ok(())
    }

    /// True when an App of this name exists in the organization (any version, anyone's).
    async fn app_exists(&self, name: &str, deadline: Deadline) -> Result<bool, Error> {
        let filter = AppKey {
            organization: self.organization().to_string(),
            name: name.to_string(),
            version: String::new(),
        };
        let apps = retry_transient(deadline, "ShowApp", || self.client.show_apps(&filter)).await?;
        Ok(apps.iter().any(|a| a.key.name == name))
    }

    /// After the first create against a server, reads the App back and confirms the server
    /// kept the fields the runner and the ownership markers depend on (spec §13 row 1: an
    /// older MC drops unknown fields without an error, and the runner would then leak). The
    /// answer is remembered with the token, so later creates skip the extra ShowApp.
    async fn confirm_kept(
        &self,
        name: &str,
        sent: &NewApp,
        needs: Needs,
        deadline: Deadline,
    ) -> Result<(), Error> {
        let facts = self.client.facts();
        let unknown_env = needs.env_vars && facts.keeps_env_vars.is_none();
        let unknown_pull = needs.pull_credentials && facts.keeps_pull_credentials.is_none();
        if !unknown_env && !unknown_pull {
            return Ok(());
        }
        let filter = AppKey {
            organization: self.organization().to_string(),
            name: name.to_string(),
            version: String::new(),
        };
        let apps = retry_transient(deadline, "ShowApp", || self.client.show_apps(&filter)).await?;
        let Some(shown) = apps.iter().find(|a| a.key == sent.key) else {
            return Err(Error::Other(format!(
                "App {name} is not listed right after CreateApp succeeded"
            )));
        };
        let env_kept = shown.has_plain_env_var(crate::runner_env::ENV_CONTROLLER_ID);
        let pull_kept = sent.username.as_deref() == Some(shown.username.as_str());
        self.client.learn(|f| {
            if unknown_env {
                f.keeps_env_vars = Some(env_kept);
            }
            if unknown_pull {
                f.keeps_pull_credentials = Some(pull_kept);
            }
        });
        if unknown_env && !env_kept {
            return Err(Error::config(ENV_VARS_DROPPED));
        }
        if unknown_pull && !pull_kept {
            return Err(Error::config(PULL_CREDENTIALS_DROPPED));
        }
        Ok(())
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
        let command = specs
            .command
            .clone()
            .or_else(|| ec.command.clone())
            .filter(|c| !c.is_empty());
        let command_args = specs
            .command_args
            .clone()
            .unwrap_or_else(|| ec.command_args.clone());
        // The pool may combine the config's command with its own deployment (or the reverse):
        // check what will really be sent, values included.
        let key = if specs.command.is_some() {
            "extra_specs.command"
        } else {
            "edge_connect.command"
        };
        crate::manifest_safety::check_command(deployment, key, command.as_deref(), &command_args)
            .map_err(Error::input)?;
        let plain = env.plain.iter().map(|(k, v)| (k, v.as_str()));
        let secret = env.secret.iter().map(|(k, v)| (k, v.expose()));
        for (name, value) in plain.chain(secret) {
            crate::manifest_safety::check_env_value(deployment, delivery, name, value)
                .map_err(Error::input)?;
        }
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
            command,
            command_args,
            configs,
            env_vars,
            secret_env_vars,
            username,
            credentials,
        })
    }

    /// Creates the AppInst on the first site that takes it. A site that refuses it is left
    /// clean (an AppInst left in CreateError is removed) before the next one is tried: the
    /// AppInst name is unique across sites on Gen3.
    pub(super) async fn deploy(
        &self,
        name: &str,
        app_key: &AppKey,
        sites: &[Placement],
        deadline: Deadline,
    ) -> Result<(), Error> {
        let mut last_refusal: Option<Refusal> = None;
        for site in sites {
            let target = match self.target_for(site, deadline).await? {
                Ok(target) => target,
                Err(why) => {
                    self.site_refused(sites, site, &why);
                    last_refusal = Some(Refusal::Local(why));
                    continue;
                }
            };
            let request =
                placement::new_app_inst(name, self.organization(), app_key.clone(), &target);
            self.report(&format!("creating AppInst {name} in {site} ({target})"));
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
                Err(e) if site_unusable(&e, &target) => {
                    let why = match e.kind {
                        // Gen2 answers a cloudlet outside the organization's cloudlet pools with
                        // 403 (c39 `pkg/mc/orm/authz_cloudlet.go:355-357`): not a problem of the
                        // organization as a whole.
                        ApiErrorKind::Forbidden => format!(
                            "{site} is not in a cloudlet pool of organization {} (HTTP 403)",
                            self.organization()
                        ),
                        _ => e.message.clone(),
                    };
                    self.site_refused(sites, site, &why);
                    if e.status == Some(200) {
                        // The refusal came as a stream trailer: the AppInst may exist in
                        // CreateError on this site.
                        self.remove_app_insts_of(name, app_key, deadline).await?;
                    }
                    last_refusal = Some(match e.kind {
                        ApiErrorKind::Forbidden => Refusal::Local(why),
                        _ => Refusal::Api(e),
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(match last_refusal {
            Some(r) if sites.len() > 1 => Error::Other(format!(
                "no site could take the AppInst ({} tried); last: {}",
                sites.len(),
                r
            )),
            Some(Refusal::Api(e)) => self.explain(e).await,
            Some(Refusal::Local(why)) => Error::Other(why),
            None => Error::Other("no site to place the AppInst on".to_string()),
        })
    }

    /// Logs and reports a site that cannot take the AppInst; with one site only the final error
    /// says it, so GARM mode's stderr stays one line.
    fn site_refused(&self, sites: &[Placement], site: &Placement, why: &str) {
        if sites.len() > 1 {
            tracing::warn!(%site, error = why, "site cannot take the AppInst; trying the next one");
        } else {
            tracing::info!(%site, error = why, "site cannot take the AppInst");
        }
        self.report(&format!("{site} cannot take it: {why}"));
    }

    /// Deletes the AppInsts named `name` that deploy `app_key` (never another App's AppInst of
    /// the same name).
    async fn remove_app_insts_of(
        &self,
        name: &str,
        app_key: &AppKey,
        deadline: Deadline,
    ) -> Result<(), Error> {
        for inst in self.app_insts_named(name, deadline).await? {
            if inst.app_key.as_ref().is_none_or(|k| k == app_key) {
                self.delete_app_inst(&inst.key, deadline).await?;
            }
        }
        Ok(())
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
            self.remove_app_insts_of(name, app_key, deadline).await?;
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

/// Fields of the App the runner depends on.
#[derive(Debug, Clone, Copy)]
struct Needs {
    /// `env_vars` / `secret_env_vars` (bootstrap variables and ownership markers).
    env_vars: bool,
    /// `username` / `credentials` (a private image).
    pull_credentials: bool,
}

const ENV_VARS_DROPPED: &str = "this Edge Connect drops App env_vars (a release before 2024-03-28), so the runner would get no bootstrap and the App no ownership markers; set edge_connect.env_delivery = \"envvars_yaml\" (deployment kubernetes; the runner's secrets are then readable by members of the organization) or upgrade Edge Connect";

const PULL_CREDENTIALS_DROPPED: &str = "this Edge Connect drops App image pull credentials (a release before 2025-10-17); use an image it can pull without them and remove image_pull_username / image_pull_password_env from the pool's extra specs";

/// Why a site did not take the AppInst.
enum Refusal {
    /// The controller refused it.
    Api(ApiError),
    /// The provider found the site unusable (unknown cloudlet, no zone, not in the pools).
    Local(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Api(e) => e.fmt(f),
            Refusal::Local(why) => f.write_str(why),
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
