//! GARM operations expressed in Edge Connect calls.
//!
//! Data flows one way: a GARM request becomes an [`Operation`], the operation makes Edge Connect
//! calls through [`Client`], and the result is an [`Outcome`] that the front door prints.

mod create;
mod lifecycle;
pub mod placement;
mod query;
pub mod retry;
pub mod status;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, Placement};
use crate::error::Error;
use crate::garm::{BootstrapInstance, ProviderInstance};
use crate::naming::edge_name;
use crate::runner_env::{Ownership, ENV_OS_ARCH, ENV_OS_TYPE};
use edge_connect::models::{App, AppInst, AppInstKey, AppKey};
use edge_connect::{ApiErrorKind, Client};
use retry::{retry_transient, Deadline};

/// One provider command, with everything it needs from GARM.
#[derive(Debug)]
pub enum Operation {
    /// Create a runner.
    Create {
        /// Bootstrap params from stdin.
        bootstrap: Box<BootstrapInstance>,
        /// Pool id (`GARM_POOL_ID`, else the bootstrap's `pool_id`).
        pool_id: String,
        /// Extra specs: the bootstrap's, else the decoded `GARM_POOL_EXTRASPECS`.
        extra_specs: Option<serde_json::Value>,
    },
    /// Delete a runner by provider id or GARM name.
    Delete {
        /// `GARM_INSTANCE_ID`.
        instance: String,
    },
    /// Show one runner.
    Get {
        /// `GARM_INSTANCE_ID`.
        instance: String,
    },
    /// Show the runners of one pool of this controller.
    List {
        /// `GARM_POOL_ID`.
        pool_id: String,
    },
    /// Show the runners of every pool of this controller (CLI).
    ListAll,
    /// Delete every runner of this controller.
    RemoveAll,
    /// Redeploy a stopped runner.
    Start {
        /// `GARM_INSTANCE_ID`.
        instance: String,
    },
    /// Remove a runner's AppInst, keeping its App.
    Stop {
        /// `GARM_INSTANCE_ID`.
        instance: String,
    },
}

impl Operation {
    /// A create, with GARM's fallbacks applied in one place for both front doors: the pool is
    /// `pool_id` (GARM_POOL_ID, or --pool-id) else the bootstrap's own `pool_id`; the extra specs
    /// are the bootstrap's (stdin carries them for pools and scale sets alike) else
    /// `pool_extra_specs` (GARM_POOL_EXTRASPECS, interface v0.1.1 only).
    pub fn create(
        bootstrap: BootstrapInstance,
        pool_id: Option<String>,
        pool_extra_specs: Option<serde_json::Value>,
    ) -> Self {
        let pool_id = pool_id.unwrap_or_else(|| bootstrap.pool_id.clone());
        let extra_specs = match &bootstrap.extra_specs {
            Some(v) if !v.is_null() => Some(v.clone()),
            _ => pool_extra_specs,
        };
        Operation::Create {
            bootstrap: Box::new(bootstrap),
            pool_id,
            extra_specs,
        }
    }

    /// The GARM instance name or provider id the operation is about, if it is about one.
    pub fn instance(&self) -> Option<&str> {
        match self {
            Operation::Create { bootstrap, .. } => Some(&bootstrap.name),
            Operation::Delete { instance }
            | Operation::Get { instance }
            | Operation::Start { instance }
            | Operation::Stop { instance } => Some(instance),
            Operation::List { .. } | Operation::ListAll | Operation::RemoveAll => None,
        }
    }
}

/// What an operation produced.
#[derive(Debug)]
pub enum Outcome {
    /// Create / Get.
    Instance(ProviderInstance),
    /// List.
    Instances(Vec<ProviderInstance>),
    /// Delete / RemoveAll / Start / Stop: nothing to print.
    Done,
}

/// Receives human-readable progress (CLI mode shows it on stderr; GARM mode only logs it).
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// The provider: a config, a client and the controller it acts for.
pub struct Provider {
    client: Client,
    config: Config,
    controller_id: String,
    environment: HashMap<String, String>,
    progress: Progress,
    poll_interval: Duration,
}

/// An App of this controller together with its AppInst (if any).
#[derive(Debug, Clone)]
struct Runner {
    app: App,
    owner: Ownership,
    app_inst: Option<AppInst>,
}

impl Provider {
    /// A provider acting for `controller_id`. `environment` is the process environment, used for
    /// values that extra specs reference by name (image pull passwords).
    pub fn new(
        client: Client,
        config: Config,
        controller_id: impl Into<String>,
        environment: HashMap<String, String>,
        progress: Progress,
    ) -> Self {
        Provider {
            client,
            config,
            controller_id: controller_id.into(),
            environment,
            progress,
            poll_interval: Duration::from_secs(2),
        }
    }

    /// Overrides how often in-progress AppInsts are polled (tests use a short interval).
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The Edge Connect client (for request counters).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs one operation within the configured deadline.
    pub async fn run(&self, operation: Operation) -> Result<Outcome, Error> {
        let deadline = Deadline::after(Duration::from_secs(
            self.config.edge_connect.operation_timeout_secs,
        ));
        match operation {
            Operation::Create {
                bootstrap,
                pool_id,
                extra_specs,
            } => self
                .create(&bootstrap, &pool_id, extra_specs.as_ref(), deadline)
                .await
                .map(Outcome::Instance),
            Operation::Delete { instance } => self
                .delete(&instance, deadline)
                .await
                .map(|_| Outcome::Done),
            Operation::Get { instance } => {
                self.get(&instance, deadline).await.map(Outcome::Instance)
            }
            Operation::List { pool_id } => self
                .list(Some(&pool_id), deadline)
                .await
                .map(Outcome::Instances),
            Operation::ListAll => self.list(None, deadline).await.map(Outcome::Instances),
            Operation::RemoveAll => self.remove_all(deadline).await.map(|_| Outcome::Done),
            Operation::Start { instance } => {
                self.start(&instance, deadline).await.map(|_| Outcome::Done)
            }
            Operation::Stop { instance } => {
                self.stop(&instance, deadline).await.map(|_| Outcome::Done)
            }
        }
    }

    fn organization(&self) -> &str {
        &self.config.edge_connect.organization
    }

    fn app_key(&self, name: &str) -> AppKey {
        AppKey {
            organization: self.organization().to_string(),
            name: name.to_string(),
            version: self.config.edge_connect.app_version.clone(),
        }
    }

    fn report(&self, message: &str) {
        (self.progress)(message);
    }

    /// Finds the runner behind a provider id or GARM name, if it belongs to this controller.
    async fn find_runner(
        &self,
        instance: &str,
        deadline: Deadline,
    ) -> Result<Option<Runner>, Error> {
        let name = edge_name(instance);
        let (apps, insts) = self.show_both(&name, deadline, None, |_| true).await?;
        let Some(app) = apps.into_iter().find(|a| a.key.name == name) else {
            return Ok(None);
        };
        let Some(owner) = self.owned(&app) else {
            tracing::warn!(app = %name, "an App with this name exists but belongs to another controller or was not made by this provider; not touching it");
            return Ok(None);
        };
        let app_inst = insts.into_iter().find(|i| {
            i.key.name == name && i.app_key.as_ref().is_none_or(|k| k.name == app.key.name)
        });
        Ok(Some(Runner {
            app,
            owner,
            app_inst,
        }))
    }

    /// Apps and AppInsts of this organization named `name` (all of them for ""), fetched in
    /// parallel: one round trip of latency. Only Apps that `keep` accepts are held in memory.
    async fn show_both(
        &self,
        name: &str,
        deadline: Deadline,
        needle: Option<&[u8]>,
        keep: impl Fn(&App) -> bool,
    ) -> Result<(Vec<App>, Vec<AppInst>), Error> {
        let app_filter = AppKey {
            organization: self.organization().to_string(),
            name: name.to_string(),
            version: String::new(),
        };
        let inst_filter = AppInstKey {
            name: name.to_string(),
            organization: self.organization().to_string(),
            cloudlet_key: None,
        };
        let (apps, insts) = tokio::join!(
            retry_transient(deadline, "ShowApp", || self.client.show_apps_where(
                &app_filter,
                needle,
                &keep
            )),
            retry_transient(deadline, "ShowAppInst", || self
                .client
                .show_app_insts(&inst_filter)),
        );
        Ok((apps?, insts?))
    }

    /// The AppInsts of this organization with exactly this name.
    async fn app_insts_named(&self, name: &str, deadline: Deadline) -> Result<Vec<AppInst>, Error> {
        let filter = AppInstKey {
            name: name.to_string(),
            organization: self.organization().to_string(),
            cloudlet_key: None,
        };
        let insts = retry_transient(deadline, "ShowAppInst", || {
            self.client.show_app_insts(&filter)
        })
        .await?;
        Ok(insts.into_iter().filter(|i| i.key.name == name).collect())
    }

    /// Ownership of an App, if it belongs to this controller.
    fn owned(&self, app: &App) -> Option<Ownership> {
        // The controller id first: most Apps of a busy organization are not ours.
        if app.env_var(crate::runner_env::ENV_CONTROLLER_ID).as_deref()
            != Some(self.controller_id.as_str())
        {
            return None;
        }
        let owner = Ownership::of_app(app)?;
        (owner.controller_id == self.controller_id
            && edge_name(&owner.instance_name) == app.key.name)
            .then_some(owner)
    }

    /// The GARM view of a runner.
    fn instance_of(&self, runner: &Runner) -> ProviderInstance {
        let (status, fault) = status::garm_status(runner.app_inst.as_ref());
        let mut addresses = Vec::new();
        if let Some(uri) = runner
            .app_inst
            .as_ref()
            .map(|i| i.uri.as_str())
            .filter(|u| !u.is_empty())
        {
            addresses.push(crate::garm::Address {
                address: uri.to_string(),
                kind: "public".to_string(),
            });
        }
        let instance = ProviderInstance {
            provider_id: runner.app.key.name.clone(),
            name: runner.owner.instance_name.clone(),
            os_type: runner.app.env_var(ENV_OS_TYPE).unwrap_or_default(),
            os_name: String::new(),
            os_version: String::new(),
            os_arch: runner.app.env_var(ENV_OS_ARCH).unwrap_or_default(),
            addresses,
            status,
            provider_fault: None,
        };
        match fault {
            Some(f) => instance.with_fault(&f),
            None => instance,
        }
    }

    /// Deletes an AppInst, waiting out transient states ("AppInst busy") within the deadline.
    async fn delete_app_inst(&self, key: &AppInstKey, deadline: Deadline) -> Result<(), Error> {
        loop {
            let result = retry_transient(deadline, "DeleteAppInst", || async {
                let mut progress = |m: &str| self.report(m);
                self.client.delete_app_inst(key, &mut progress).await
            })
            .await;
            match result {
                Ok(_) => return Ok(()),
                Err(e) if e.kind == ApiErrorKind::NotFound => return Ok(()),
                Err(e) if e.kind == ApiErrorKind::Busy && !deadline.expired() => {
                    if e.message.contains("already under deletion") {
                        // Someone else (a concurrent DeleteInstance) is deleting it: wait until gone.
                        self.wait_app_inst_gone(key, deadline).await?;
                        return Ok(());
                    }
                    self.report(&format!("AppInst {} is busy; waiting", key.name));
                    self.sleep_within(deadline).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn wait_app_inst_gone(&self, key: &AppInstKey, deadline: Deadline) -> Result<(), Error> {
        loop {
            if self.app_insts_named(&key.name, deadline).await?.is_empty() {
                return Ok(());
            }
            self.sleep_within(deadline).await?;
        }
    }

    /// Deletes an App, waiting while it is still in use by an AppInst that is going away.
    async fn delete_app(&self, key: &AppKey, deadline: Deadline) -> Result<(), Error> {
        loop {
            match retry_transient(deadline, "DeleteApp", || self.client.delete_app(key)).await {
                Ok(()) => return Ok(()),
                Err(e) if e.kind == ApiErrorKind::NotFound => return Ok(()),
                Err(e) if e.kind == ApiErrorKind::Busy && !deadline.expired() => {
                    self.sleep_within(deadline).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn sleep_within(&self, deadline: Deadline) -> Result<(), Error> {
        if deadline.remaining() <= self.poll_interval {
            return Err(Error::Other(format!(
                "gave up after edge_connect.operation_timeout_secs={}s",
                self.config.edge_connect.operation_timeout_secs
            )));
        }
        tokio::time::sleep(self.poll_interval).await;
        Ok(())
    }

    /// Removes an AppInst (if any) and the App: the whole runner.
    async fn remove_runner(
        &self,
        app: &App,
        app_inst: Option<&AppInst>,
        deadline: Deadline,
    ) -> Result<(), Error> {
        if let Some(inst) = app_inst {
            self.delete_app_inst(&inst.key, deadline).await?;
        }
        self.delete_app(&app.key, deadline).await
    }

    /// Delete: by provider id or GARM name; already gone is success.
    async fn delete(&self, instance: &str, deadline: Deadline) -> Result<(), Error> {
        let Some(runner) = self.find_runner(instance, deadline).await? else {
            tracing::info!(instance, "nothing to delete");
            return Ok(());
        };
        self.remove_runner(&runner.app, runner.app_inst.as_ref(), deadline)
            .await?;
        tracing::info!(instance, "deleted");
        Ok(())
    }

    /// RemoveAll: every runner of this controller, any pool.
    async fn remove_all(&self, deadline: Deadline) -> Result<(), Error> {
        use futures_util::stream::{self, StreamExt};
        let runners = self.runners(None, deadline).await?;
        let total = runners.len();
        let failures: Vec<String> = stream::iter(runners)
            .map(|r| async move {
                self.remove_runner(&r.app, r.app_inst.as_ref(), deadline)
                    .await
                    .map_err(|e| format!("{}: {e}", r.owner.instance_name))
            })
            .buffer_unordered(8)
            .filter_map(|r| async move { r.err() })
            .collect()
            .await;
        if failures.is_empty() {
            tracing::info!(total, "removed all instances of this controller");
            Ok(())
        } else {
            Err(Error::Other(format!(
                "{} of {total} instances could not be removed; first: {}",
                failures.len(),
                failures[0]
            )))
        }
    }

    /// Every runner of this controller (and pool, when given): two Show calls whatever the count.
    async fn runners(
        &self,
        pool_id: Option<&str>,
        deadline: Deadline,
    ) -> Result<Vec<Runner>, Error> {
        // Only this controller's (and pool's) Apps are kept while the answer streams in: an
        // organization may hold thousands of other Apps.
        let keep = |app: &App| {
            self.owned(app)
                .is_some_and(|owner| pool_id.is_none_or(|p| p == owner.pool_id))
        };
        // An App of this pool (or controller) holds the id verbatim in its JSON line, whichever
        // way its environment is delivered, as long as the id needs no JSON escaping.
        let needle = pool_id
            .filter(|p| appears_verbatim_in_json(p))
            .or(Some(self.controller_id.as_str()).filter(|c| appears_verbatim_in_json(c)));
        let (apps, insts) = self
            .show_both("", deadline, needle.map(str::as_bytes), keep)
            .await?;
        let mut by_name: HashMap<String, AppInst> =
            insts.into_iter().map(|i| (i.key.name.clone(), i)).collect();
        let mut runners: Vec<Runner> = apps
            .into_iter()
            .filter_map(|app| {
                let owner = self.owned(&app)?;
                if pool_id.is_some_and(|p| p != owner.pool_id) {
                    return None;
                }
                let app_inst = by_name.remove(&app.key.name);
                Some(Runner {
                    app,
                    owner,
                    app_inst,
                })
            })
            .collect();
        runners.sort_by(|a, b| a.owner.instance_name.cmp(&b.owner.instance_name));
        Ok(runners)
    }

    /// The placement recorded on an App (or the configured one).
    fn recorded_placements(&self, app: &App) -> Vec<Placement> {
        let recorded: Vec<Placement> = app
            .env_var(crate::runner_env::ENV_PLACEMENT)
            .map(|v| {
                v.split(';')
                    .filter_map(crate::runner_env::parse_placement_tag)
                    .collect()
            })
            .unwrap_or_default();
        if recorded.is_empty() {
            vec![self.config.placement()]
        } else {
            recorded
        }
    }
}

/// True when `s` is written as-is inside a JSON string, also inside a JSON string that itself
/// sits in a JSON string (the envvars_yaml delivery): no quote, backslash or control character.
fn appears_verbatim_in_json(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c == '"' || c == '\\' || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_json_would_escape_are_not_used_as_needles() {
        assert!(appears_verbatim_in_json(
            "9dcf590a-1192-4a9c-b3e4-e0902974c2c0"
        ));
        assert!(appears_verbatim_in_json("My Scale Set-6B8E Ü"));
        assert!(!appears_verbatim_in_json("quote\"d"));
        assert!(!appears_verbatim_in_json("back\\slash"));
        assert!(!appears_verbatim_in_json("tab\there"));
        assert!(!appears_verbatim_in_json(""));
    }
}
