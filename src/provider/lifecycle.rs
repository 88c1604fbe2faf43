//! StartInstance and StopInstance.
//!
//! Edge Connect has no "stop" for a container AppInst. Stop removes the AppInst and keeps the App
//! (with the runner's environment), so the instance reads `stopped`; Start deploys a new AppInst
//! from that App on the recorded sites. Both are idempotent. A runner's GARM token is only valid
//! until the runner registers, so a started runner that had already registered cannot register
//! again; GARM only starts runners it considers offline.

use super::{Outcome, Provider};
use crate::error::Error;
use crate::garm::InstanceStatus;

impl Provider {
    pub(super) async fn stop(&self, instance: &str) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance).await?;
        // Normally one; two after a failover past a site that held the first.
        for inst in &runner.app_insts {
            self.report(&format!("removing AppInst {}", inst.key.name));
            self.delete_app_inst(&runner.key, &inst.key, None).await?;
        }
        tracing::info!(instance, "stopped");
        Ok(Outcome::Done)
    }

    pub(super) async fn start(&self, instance: &str) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance).await?;
        let running = |inst: &&edge_connect::models::AppInst| {
            super::status::garm_status(Some(inst)).0 == InstanceStatus::Running
        };
        if let Some(inst) = runner.app_insts.iter().find(running) {
            tracing::info!(instance, state = %inst.state, "already started");
            return Ok(Outcome::Done);
        }
        // A failed or vanishing AppInst is replaced by a fresh one.
        for inst in &runner.app_insts {
            self.delete_app_inst(&runner.key, &inst.key, None).await?;
        }
        // The sites recorded on the App, else the configured one.
        let mut sites = runner.vars.placements();
        if sites.is_empty() {
            sites.push(self.config.placement());
        }
        let targets = self.targets(&sites).await?;
        self.deploy(
            &runner.key,
            &runner.vars.pool_id,
            &sites,
            targets,
            None,
            None,
        )
        .await
        .map_err(|failure| failure.error)?;
        tracing::info!(instance, "started");
        Ok(Outcome::Done)
    }
}
