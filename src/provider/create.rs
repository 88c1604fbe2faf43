//! CreateInstance: one App, then one AppInst; on any failure, nothing is left behind.

use std::time::Duration;

use super::delete::Busy;
use super::deploy::{Held, AFTER_START_FAILURE};
use super::placement::{self, Target};
use super::status::RunnerView;
use super::wait::{retry_transient, Deadline};
use super::{Outcome, Provider};
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::{BootstrapInstance, InstanceStatus, ProviderInstance};
use crate::metrics::Facts;
use crate::naming::edge_name;
use edge_connect::models::{App, AppKey, NewApp};
use edge_connect::{ApiErrorKind, Rpc, MAX_COLLECTED};

/// The bound of the rollback of a runner that cannot start: a central CRM undoes the create
/// within seconds of the stream's end, and the rollback waits for that; a CRM on the edge keeps
/// the AppInst until its own wait ends (up to 15 minutes), which the rollback reports after
/// [`HELD_PATIENCE`] instead of waiting: GARM's DeleteInstance after the failed create removes
/// it then (docs/reliability.md).
const START_FAILURE_ROLLBACK: Duration = Duration::from_secs(30);

/// How long a runner's AppInst waits at most for the controller to take up its site's cache
/// create: the controller's first lines come within moments; a silent one is not waited for.
const CACHE_TAKEN_UP: Duration = Duration::from_secs(10);

impl Provider {
    pub(super) async fn create(
        &self,
        bootstrap: &BootstrapInstance,
        pool_id: &str,
        specs: ExtraSpecs,
        facts: &mut Facts,
    ) -> Result<Outcome, Error> {
        // Everything that can be refused locally is refused before the first API call.
        let name = edge_name(&bootstrap.name);
        let sites = placement::candidates(&self.config, &specs, &bootstrap.name);
        let no_cache = crate::site_cache::Use::default();
        let mut app = self.new_app(bootstrap, pool_id, &specs, &name, &sites, &no_cache)?;
        let forge = crate::runner_env::forge_type(bootstrap.instance_token.expose());
        let services = self.cache_services(
            specs.docker.unwrap_or_default(),
            forge.unwrap_or("github"),
            specs.site_cache == Some(false),
        );
        let duplicate = || {
            Error::Duplicate(format!(
                "instance {} already exists on Edge Connect (App {name})",
                crate::text::echo(&bootstrap.name)
            ))
        };

        // A CreateApp for a name that exists wipes that App's secret env vars before failing
        // with "already exists" (main `pkg/controller/app_api.go:694-716`): look first, and
        // never send one that could collide with a live runner.
        // The site's caches are looked up beside that ShowApp: one more call, no more round
        // trips. A cache that cannot be read is one the runner does without.
        let caches = async {
            if services.is_empty() {
                return None;
            }
            let found = self.cache_app_insts(&self.controller_id).await.inspect_err(|e| {
                tracing::warn!(error = %e, "the site cache could not be read; the runner runs without it");
            });
            found.ok()
        };
        let (apps, caches) = tokio::join!(self.apps_named(&name), caches);
        if apps?.iter().any(|a| a.key.name == name) {
            return Err(duplicate());
        }
        let (used, start) = match (sites.first(), caches) {
            (Some(site), Some(caches)) => self.cache_use(&caches, site, &services),
            _ => (no_cache.clone(), Vec::new()),
        };
        if used != no_cache {
            tracing::info!(mirror = ?used.mirror, actions_cache = ?used.actions, "the runner uses its site's cache");
            app = self.new_app(bootstrap, pool_id, &specs, &name, &sites, &used)?;
        }
        // The first runner of a site starts its missing caches beside its own create, which
        // never waits for them; the start ends with the create (docs/site-cache.md, "How the
        // provider runs it").
        // The runner's own AppInst is asked for only once each cache's create has been taken
        // up by the controller (its first line) or has ended: a CRM on the edge then finishes
        // it even if the runner is Ready first (B38).
        let (sent, taken_up): (Vec<_>, Vec<_>) = start
            .iter()
            .map(|_| tokio::sync::oneshot::channel())
            .unzip();
        let starting = async {
            // No cache to start, no ShowCloudlet for one.
            if let Some(site) = sites.first().filter(|_| !start.is_empty()) {
                self.start_caches(site, &start, sent).await;
            }
        };
        let placing = async {
            let targets = self.targets(&sites).await?;
            // What must be read back after CreateApp: an older controller drops fields it does not
            // know (docs/edge-connect-behaviours.md B1). A placement through zones only (see
            // `placement::target`) can only succeed on a zones (Gen3, 2024-09) controller, and those
            // keep env_vars (2024-03); pull credentials exist only since 2025-10, so they are always
            // confirmed.
            // With an envVarsYaml config, `env_vars` hold only a copy of the ownership markers
            // (for ShowApp's filter): nothing depends on the server keeping them.
            let env_in_config = app.configs.iter().any(|c| c.kind == "envVarsYaml");
            let confirm_env_vars = !env_in_config
                && (!app.env_vars.is_empty() || !app.secret_env_vars.is_empty())
                && targets.iter().any(|t| matches!(t, Target::Cloudlet(_)));

            tracing::info!(app = %name, image = %app.image_path, flavor = %app.default_flavor.name, "creating App");
            self.report(&format!("creating App {name}"));
            // Marked until its answer: a create stopped before it (a signal) has an App the
            // controller may still make (see `Provider::unanswered_create_app`).
            self.create_app_sent(Some(std::time::Instant::now()));
            let answer = self.client.create_app(&app).await;
            self.create_app_sent(None);
            let made = match answer {
                Err(e) => match e.kind {
                    ApiErrorKind::AlreadyExists => return Err(duplicate()),
                    // Login failed or no connection was made: CreateApp never left this process,
                    // so there is nothing to roll back (and an unreachable server would only make
                    // the rollback wait out its whole grace).
                    ApiErrorKind::Unreachable => return Err(e.into()),
                    ApiErrorKind::Transport if e.rpc == Rpc::Login => return Err(e.into()),
                    // The request may have reached the server: make sure no App stays behind.
                    ApiErrorKind::Transport => Err(Error::from(e).into()),
                    _ => return Err(self.explain(e).await),
                },
                Ok(()) => {
                    let image = Some(app.image_path.as_str());
                    // The runner container's memory, for the message of one killed for lack of it.
                    let memory = specs.shares.map(|(runner, _)| runner.memory);
                    let deploy = async {
                        self.confirm_kept(&app, confirm_env_vars).await?;
                        let taken_up = futures_util::future::join_all(taken_up);
                        let _ = tokio::time::timeout(CACHE_TAKEN_UP, taken_up).await;
                        self.deploy(&app.key, pool_id, &sites, targets, image, memory)
                            .await
                    };
                    deploy.await.map(|site| facts.placed(site))
                }
            };
            let Err(failure) = made.inspect_err(|failure| facts.failed(failure)) else {
                tracing::info!(app = %name, "created");
                let instance = ProviderInstance {
                    provider_id: name.clone(),
                    name: bootstrap.name.clone(),
                    os_type: bootstrap.os_type.clone(),
                    os_arch: bootstrap.arch.clone(),
                    status: InstanceStatus::Running,
                    ..ProviderInstance::default()
                };
                let view = RunnerView {
                    instance,
                    ..RunnerView::default()
                };
                return Ok(Outcome::Instance(Box::new(view)));
            };
            let (rollback, busy) = if failure.start_failure {
                let bound = format!("the rollback's {} s", START_FAILURE_ROLLBACK.as_secs());
                let bounded = self.until(Deadline::after(START_FAILURE_ROLLBACK), bound);
                (bounded, AFTER_START_FAILURE)
            } else {
                (self.for_cleanup(), Busy::Wait)
            };
            Err(rollback
                .rollback(&app.key, busy, failure.error, &failure.held)
                .await)
        };
        tokio::pin!(placing);
        // The runner's create does not wait for its caches' start, which ends with it.
        tokio::select! {
            biased;
            out = &mut placing => out,
            () = starting => placing.await,
        }
    }

    /// The organization's Apps of this name, any version (ShowApp, retried while transient).
    pub(super) async fn apps_named(&self, name: &str) -> Result<Vec<App>, Error> {
        let filter = AppKey {
            version: String::new(),
            ..self.app_key(name)
        };
        let (client, filter) = (&self.client, &filter);
        Ok(retry_transient(client, "ShowApp", || async move {
            let apps = client.show_apps(filter, &[]).await?;
            edge_connect::collect(Rpc::ShowApp, apps, MAX_COLLECTED).await
        })
        .await?)
    }

    /// Reads the App back and confirms that the server kept the fields the runner and the
    /// ownership markers depend on (docs/edge-connect-behaviours.md B1: an older controller
    /// drops unknown fields without an error, and the runner would then leak). Decided from
    /// this answer alone; nothing is remembered for later commands.
    ///
    /// `env_vars` (bootstrap variables and ownership markers) are confirmed when asked for; pull
    /// credentials (a private image) whenever they were sent.
    async fn confirm_kept(&self, sent: &NewApp, env_vars: bool) -> Result<(), Error> {
        let name = &sent.key.name;
        let pull_credentials = sent.username.is_some();
        if !env_vars && !pull_credentials {
            return Ok(());
        }
        let apps = self.apps_named(name).await?;
        let Some(shown) = apps.iter().find(|a| a.key == sent.key) else {
            return Err(Error::failed(format!(
                "App {name} is not listed right after CreateApp succeeded"
            )));
        };
        if env_vars && !shown.has_plain_env_var(crate::runner_env::ENV_CONTROLLER_ID) {
            // Only an App shown without any env_vars says that the platform drops the field;
            // one that shows other values is an answer that does not match what was sent.
            return Err(if shown.shows_env_vars() {
                Error::failed(format!(
                    "App {name} is shown without the env_vars it was created with; not deployed"
                ))
            } else {
                Error::failed(ENV_VARS_DROPPED)
            });
        }
        if pull_credentials && sent.username.as_deref() != Some(shown.username.as_str()) {
            return Err(Error::failed(PULL_CREDENTIALS_DROPPED));
        }
        Ok(())
    }

    /// Removes whatever a failed create left (its AppInsts in any state, then the App) by the
    /// client's deadline (the rollback's or the cleanup grace's) and returns the error to
    /// report, noting a failed cleanup (a later DeleteInstance finishes it). The AppInsts in
    /// `held` are known to be held by their sites' CRMs: not asked about again, they keep the
    /// App (DeleteApp would be refused while an AppInst of it exists) and are named first, in
    /// the order of the sites.
    async fn rollback(&self, app_key: &AppKey, busy: Busy, cause: Error, held: &[Held]) -> Error {
        let name = &app_key.name;
        self.report(&format!("create failed ({cause}); removing {name}"));
        let cleanup = async {
            let rest = self.remove_app_insts_of(app_key, None, held, busy).await;
            let mut troubles: Vec<String> = held.iter().map(|h| h.why.to_string()).collect();
            troubles.extend(rest.err().map(|e| e.to_string()));
            if !troubles.is_empty() {
                return Err(Error::failed(troubles.join("; ")));
            }
            self.delete_app(app_key).await
        };
        match cleanup.await {
            Ok(()) => {
                tracing::info!(app = %name, "rolled back");
                cause
            }
            // The cause leads, the cleanup's trouble follows; who removes what is left is the
            // door's to say ([`Error::left_behind`]).
            Err(cleanup_error) => {
                tracing::error!(app = %name, error = %cleanup_error, "rollback failed");
                Error::left_behind(format!(
                    "{cause}; cleanup of {name} failed too ({cleanup_error})"
                ))
            }
        }
    }
}

const ENV_VARS_DROPPED: &str = "this Edge Connect drops App env_vars (a release before 2024-03-28), so the runner would get no bootstrap and the App no ownership markers; set edge_connect.env_delivery = \"envvars_yaml\" (deployment kubernetes; the runner's secrets are then readable by members of the organization) or upgrade Edge Connect";

const PULL_CREDENTIALS_DROPPED: &str = "this Edge Connect drops App image pull credentials (a release before 2025-10-17); use an image it can pull without them and remove image_pull_username / image_pull_password_env from the pool's extra specs";
