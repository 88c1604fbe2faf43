//! GARM operations expressed in Edge Connect calls.
//!
//! Data flows one way: a GARM request becomes an [`Operation`], the operation makes Edge Connect
//! calls through [`Client`], and the result is an [`Outcome`] that the front door prints.

mod app_request;
mod create;
mod delete;
mod deploy;
mod inventory;
mod lifecycle;
pub mod placement;
pub mod site_cache;
mod start_watch;
pub mod status;
pub mod wait;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::{BootstrapInstance, GarmCommand};
use crate::metrics::{Facts, Recorder};
use crate::runner_env::RunnerVars;
use edge_connect::models::{AppInst, AppKey};
use edge_connect::Client;
use wait::Deadline;

/// One provider command, with everything it needs from GARM.
#[derive(Debug)]
pub enum Operation {
    /// Create a runner.
    Create {
        /// Bootstrap params from stdin.
        bootstrap: Box<BootstrapInstance>,
        /// Pool id (`GARM_POOL_ID`, else the bootstrap's `pool_id`).
        pool_id: String,
        /// The pool's settings (the bootstrap's extra specs, else the decoded
        /// `GARM_POOL_EXTRASPECS`), read once; a refusal is the create's, reported when it runs.
        specs: Result<Box<ExtraSpecs>, Error>,
    },
    /// Delete a runner by provider id or GARM name. An AppInst that Edge Connect will not delete
    /// yet is waited for within the deadline, with progress, when `wait` (a person's delete);
    /// otherwise (GARM's DeleteInstance) it is reported at once, and GARM's retries wait.
    Delete {
        /// `GARM_INSTANCE_ID`.
        instance: String,
        /// Wait while the platform holds an AppInst busy.
        wait: bool,
    },
    /// Show one runner.
    Get {
        /// `GARM_INSTANCE_ID`.
        instance: String,
    },
    /// Show the runners of one pool of this controller (`GARM_POOL_ID`), or of every pool (CLI).
    List {
        /// `GARM_POOL_ID`.
        pool_id: Option<String>,
    },
    /// Delete every runner of this controller, the runners that run first; an AppInst that Edge
    /// Connect will not delete yet is waited for when `wait` (a person's remove-all), else
    /// (GARM's RemoveAllInstances) reported at once, everything else removed.
    RemoveAll {
        /// Wait while the platform holds an AppInst busy.
        wait: bool,
    },
    /// Redeploy a stopped runner.
    Start {
        /// `GARM_INSTANCE_ID`.
        instance: String,
    },
    /// Remove a runner's AppInst, keeping its App; an AppInst that Edge Connect will not delete
    /// yet is waited for when `wait` (a person's stop), else (GARM's StopInstance) reported at
    /// once, after the one that runs is removed.
    Stop {
        /// `GARM_INSTANCE_ID`.
        instance: String,
        /// Wait while the platform holds an AppInst busy.
        wait: bool,
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
        let own = bootstrap.extra_specs.as_ref().filter(|v| !v.is_null());
        let specs = ExtraSpecs::from_value(own.or(pool_extra_specs.as_ref())).map(Box::new);
        Operation::Create {
            bootstrap: Box::new(bootstrap),
            pool_id,
            specs,
        }
    }

    /// The GARM command it is, and its pool when it names one: the labels of its metrics (a
    /// command GARM names by instance takes the pool from [`Provider::run_in`]).
    fn command(&self) -> (GarmCommand, Option<&str>) {
        match self {
            Operation::Create { pool_id, .. } => (GarmCommand::CreateInstance, Some(pool_id)),
            Operation::Delete { .. } => (GarmCommand::DeleteInstance, None),
            Operation::Get { .. } => (GarmCommand::GetInstance, None),
            Operation::List { pool_id } => (GarmCommand::ListInstances, pool_id.as_deref()),
            Operation::RemoveAll { .. } => (GarmCommand::RemoveAllInstances, None),
            Operation::Start { .. } => (GarmCommand::StartInstance, None),
            Operation::Stop { .. } => (GarmCommand::StopInstance, None),
        }
    }

    /// The GARM instance name or provider id the operation is about, if it is about one.
    pub fn instance(&self) -> Option<&str> {
        match self {
            Operation::Create { bootstrap, .. } => Some(&bootstrap.name),
            Operation::Delete { instance, .. }
            | Operation::Get { instance }
            | Operation::Start { instance }
            | Operation::Stop { instance, .. } => Some(instance),
            Operation::List { .. } | Operation::RemoveAll { .. } => None,
        }
    }
}

/// What an operation produced.
#[derive(Debug)]
pub enum Outcome {
    /// Create / Get: serializes as GARM's instance; the operator's fields are for tables.
    Instance(Box<status::RunnerView>),
    /// List, likewise.
    Instances(Vec<status::RunnerView>),
    /// Delete / RemoveAll / Start / Stop: nothing to print.
    Done,
}

/// Receives human-readable progress (CLI mode shows it on stderr; GARM mode only logs it).
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

/// The provider: a config, a client and the controller it acts for.
#[derive(Clone)]
pub struct Provider {
    client: Client,
    config: Config,
    controller_id: String,
    environment: HashMap<String, String>,
    progress: Progress,
    /// Where the command's metrics events go.
    metrics: Recorder,
    /// The site cache's secret (`site_cache.actions_cache`), masked since the pipeline read it.
    site_cache_secret: Option<edge_connect::Secret>,
    /// The client's deadline in the words a wait that runs out names it by.
    bound: String,
    /// When the CreateApp now waiting for its answer was sent (shared with the providers made
    /// from this one): a create dropped during it leaves a request the controller may still
    /// carry out.
    create_app_in_flight: Arc<std::sync::Mutex<Option<std::time::Instant>>>,
    /// RemoveAll's limit of calls in flight, which its deletes go through.
    throttle: Option<Arc<delete::Throttle>>,
}

/// The one grace of cleanup after a failure or an interrupt (a failed create's rollback, what an
/// interrupted CLI create, start or deploy test made): it ends this long after the command's
/// deadline, or after now once that has passed (docs/operations.md, "Cleanup grace").
pub const CLEANUP_GRACE: Duration = Duration::from_secs(120);

/// How often in-progress AppInsts are polled.
const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// An App of this controller (its key and what its environment records) together with the
/// AppInsts that deploy it, in [`removal_order`]: normally none (stopped) or one, two after a
/// failover past a site that holds the first (docs/architecture.md, "Failover").
#[derive(Debug, Clone)]
struct OwnedRunner {
    key: AppKey,
    vars: RunnerVars,
    app_insts: Vec<AppInst>,
}

/// What a command returns for its metrics, as each command learns it.
impl Facts {
    /// A delete, stop, start or get found `runner`: the pool its App records and the site of
    /// its AppInst (the one that runs, first in removal order; none: stopped).
    fn found(&mut self, runner: &OwnedRunner) {
        self.pool.clone_from(&runner.vars.pool_id);
        self.site = crate::metrics::site_of(runner.app_insts.first());
    }

    /// The runner is Ready on `site`.
    fn placed(&mut self, site: String) {
        (self.site, self.placed) = (site, true);
    }

    /// A deploy failed: its last site, and its last start failure.
    fn failed(&mut self, failure: &deploy::DeployFailure) {
        self.site.clone_from(&failure.site);
        self.start_failure = failure.reason.clone().unwrap_or_default();
    }
}

/// The one order in which every command meets a runner's AppInsts: the one that runs (`Ready`)
/// first, then those Edge Connect deletes once a transient state ends, and last those still
/// creating, which a CRM on the edge holds for up to 15 minutes (docs/edge-connect-behaviours.md
/// B12, B17); the answer's order within each. A delete thus removes the runner that runs at
/// once, whatever holds the other.
fn removal_order(insts: &mut [AppInst]) {
    insts.sort_by_key(|inst| match &inst.state {
        edge_connect::AppInstState::Ready => 0,
        state if delete::creating(state) => 2,
        _ => 1,
    });
}

impl Provider {
    /// A provider acting for `controller_id`, its calls under the deadline of `client` (the
    /// command's). `environment` is the process environment, used for values that extra specs
    /// reference by name (image pull passwords).
    pub fn new(
        client: Client,
        config: Config,
        controller_id: impl Into<String>,
        environment: HashMap<String, String>,
        progress: Progress,
        metrics: Recorder,
        site_cache_secret: Option<edge_connect::Secret>,
    ) -> Self {
        Provider {
            client,
            metrics,
            site_cache_secret,
            bound: wait::command_bound(&config),
            config,
            controller_id: controller_id.into(),
            environment,
            progress,
            create_app_in_flight: Arc::default(),
            throttle: None,
        }
    }

    /// This provider with its client under `deadline` (named `bound`) instead of the command's.
    fn until(&self, deadline: Deadline, bound: String) -> Provider {
        Provider {
            client: self.client.until(deadline),
            bound,
            ..self.clone()
        }
    }

    /// This provider under a command's deadline again, from now: a person's cleanup after a
    /// failed create, a deploy test's.
    pub fn anew(&self) -> Provider {
        let deadline = wait::command_deadline(&self.config);
        self.until(deadline, wait::command_bound(&self.config))
    }

    /// The deadline of this provider's calls in words: the command's
    /// (`edge_connect.operation_timeout_secs=…`), a rollback's or a cleanup's.
    pub fn bound(&self) -> &str {
        &self.bound
    }

    /// Records that a CreateApp was sent at `sent` (`None`: its answer came).
    fn create_app_sent(&self, sent: Option<std::time::Instant>) {
        *self
            .create_app_in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = sent;
    }

    /// When a create was stopped while its CreateApp waited for the answer (a person's signal
    /// drops the create where it is): until when the controller may still make that App, the
    /// time its answer would have come by (`edge_connect.request_timeout_secs` after it was
    /// sent). A cleanup that found nothing before then looks again.
    pub fn unanswered_create_app(&self) -> Option<std::time::Instant> {
        let sent = *self
            .create_app_in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sent.map(|at| at + Duration::from_secs(self.config.edge_connect.request_timeout_secs))
    }

    /// The Edge Connect client (for request counters).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// This provider for cleanup after a failure or an interrupt: its client's deadline extended
    /// by [`CLEANUP_GRACE`].
    pub fn for_cleanup(&self) -> Provider {
        let bound = format!(
            "the cleanup grace (the command's deadline plus {} s)",
            CLEANUP_GRACE.as_secs()
        );
        self.until(self.client.deadline().extended(CLEANUP_GRACE), bound)
    }

    /// Runs one operation within the deadline of its client, its beginning and end recorded as
    /// metrics events from what it returned (docs/operations.md, "Metrics").
    pub async fn run(&self, operation: Operation) -> Result<Outcome, Error> {
        self.run_in(operation, None).await
    }

    /// [`Provider::run`] for GARM, whose `GARM_POOL_ID` (`pool`, interface v0.1.1) names the
    /// pool of a command about one runner as well (not RemoveAllInstances': it is about none).
    pub async fn run_in(
        &self,
        operation: Operation,
        pool: Option<String>,
    ) -> Result<Outcome, Error> {
        let (command, named) = operation.command();
        let pool = pool.filter(|_| operation.instance().is_some());
        let pool = named.map(str::to_string).or(pool).unwrap_or_default();
        let command = format!("{command:?}");
        let (began, logins) = (std::time::Instant::now(), self.client.logins());
        self.metrics.begin(&command, &pool);
        let mut facts = Facts {
            pool: pool.clone(),
            ..Facts::default()
        };
        let result = self.dispatch(operation, &mut facts).await;
        if let (Ok(Outcome::Instances(list)), false) = (&result, pool.is_empty()) {
            // A stopped runner (no AppInst, no state) is on no site, whatever its App records.
            let sites = list.iter().map(|r| match r.state.is_empty() {
                true => "",
                false => r.site.as_str(),
            });
            self.metrics.listed(&pool, sites);
        }
        let logins = self.client.logins() - logins;
        let labels = (command.as_str(), pool.as_str());
        self.metrics.end(labels, began, facts, &result, logins);
        result
    }

    /// The operation's work; `facts` receives what the metrics of its end say.
    async fn dispatch(&self, operation: Operation, facts: &mut Facts) -> Result<Outcome, Error> {
        match operation {
            Operation::Create {
                bootstrap,
                pool_id,
                specs,
            } => self.create(&bootstrap, &pool_id, *specs?, facts).await,
            Operation::Delete { instance, wait } => self.delete(&instance, wait, facts).await,
            Operation::Get { instance } => self.get(&instance, facts).await,
            Operation::List { pool_id } => self.list(pool_id.as_deref()).await,
            Operation::RemoveAll { wait } => self.remove_all(wait).await,
            Operation::Start { instance } => self.start(&instance, facts).await,
            Operation::Stop { instance, wait } => self.stop(&instance, wait, facts).await,
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

    /// Tells `message` to whoever follows the command (a person's stderr, GARM's log).
    pub fn report(&self, message: &str) {
        (self.progress)(message);
    }

    /// Waits one poll interval, or fails saying that `what` did not happen by the deadline.
    async fn sleep_within(&self, what: &str) -> Result<(), Error> {
        if !self.client.deadline().has_room_for(POLL_INTERVAL) {
            // The bound named is the one waited for (a cleanup has its own).
            return Err(Error::failed(format!("{what} within {}", self.bound())));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
        Ok(())
    }
}
