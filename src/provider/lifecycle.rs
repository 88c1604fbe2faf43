//! StartInstance and StopInstance.
//!
//! Edge Connect has no "stop" for a container AppInst. Stop removes the AppInst and keeps the App
//! (with the runner's environment), so the instance reads `stopped`; Start deploys a new AppInst
//! from that App on the recorded sites. Both are idempotent. A runner's GARM token is only valid
//! until the runner registers, so a started runner that had already registered cannot register
//! again; GARM only starts runners it considers offline.

use super::delete::{Busy, REPORT_AT_ONCE};
use super::status::garm_status;
use super::{Outcome, Provider};
use crate::error::Error;
use crate::garm::InstanceStatus;
use crate::metrics::Facts;

impl Provider {
    /// Stop: the runner's AppInsts removed, the one that runs first; one that Edge Connect will
    /// not delete yet is waited for when `wait` (a person's stop), else named at once with the
    /// time its CRM lets it go.
    pub(super) async fn stop(
        &self,
        instance: &str,
        wait: bool,
        facts: &mut Facts,
    ) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance).await?;
        facts.found(&runner);
        // Normally one; two after a failover past a site that held the first.
        let busy = if wait { Busy::Wait } else { REPORT_AT_ONCE };
        self.remove_app_insts(&runner, busy)
            .await
            .map_err(|e| match e.leaves_something() {
                true => Error::left_behind(format!(
                    "{e}; stopping {instance} again after that stops it"
                )),
                false => e,
            })?;
        tracing::info!(instance, "stopped");
        Ok(Outcome::Done)
    }

    pub(super) async fn start(&self, instance: &str, facts: &mut Facts) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance).await?;
        facts.found(&runner);
        let running = |inst: &&_| garm_status(Some(inst)).0 == InstanceStatus::Running;
        if let Some(inst) = runner.app_insts.iter().find(running) {
            tracing::info!(instance, state = %inst.state, "already started");
            return Ok(Outcome::Done);
        }
        // A failed or vanishing AppInst is replaced by a fresh one (none is still creating:
        // that one counts as started).
        self.remove_app_insts(&runner, Busy::Wait).await?;
        // The sites recorded on the App, else the configured one.
        let mut sites = runner.vars.placements();
        if sites.is_empty() {
            sites.push(self.config.placement());
        }
        let targets = self.targets(&sites).await?;
        let pool = &runner.vars.pool_id;
        let deploy = self.deploy(&runner.key, pool, &sites, targets, None, None);
        let placed = deploy.await.inspect_err(|failure| facts.failed(failure));
        facts.placed(placed.map_err(|failure| failure.error)?);
        tracing::info!(instance, "started");
        Ok(Outcome::Done)
    }
}
