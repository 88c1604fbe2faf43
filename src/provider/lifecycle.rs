//! StartInstance and StopInstance.
//!
//! Edge Connect has no "stop" for a container AppInst. Stop removes the AppInst and keeps the App
//! (with the runner's environment), so the instance reads `stopped`; Start deploys a new AppInst
//! from that App on the recorded sites. Both are idempotent. A runner's GARM token is only valid
//! until the runner registers, so a started runner that had already registered cannot register
//! again; GARM only starts runners it considers offline.

use super::wait::Deadline;
use super::Provider;
use crate::error::Error;

impl Provider {
    /// The runner behind `instance`, or NotFound (exit 30 for GARM).
    async fn existing_runner(
        &self,
        instance: &str,
        deadline: Deadline,
    ) -> Result<super::OwnedRunner, Error> {
        self.find_runner(instance, deadline).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "instance {} not found",
                crate::text::echo(instance)
            ))
        })
    }

    pub(super) async fn stop(&self, instance: &str, deadline: Deadline) -> Result<(), Error> {
        let runner = self.existing_runner(instance, deadline).await?;
        if let Some(inst) = runner.app_inst() {
            self.report(&format!("removing AppInst {}", inst.key.name));
            self.delete_app_inst(&inst.key, deadline).await?;
        }
        tracing::info!(instance, "stopped");
        Ok(())
    }

    pub(super) async fn start(&self, instance: &str, deadline: Deadline) -> Result<(), Error> {
        let runner = self.existing_runner(instance, deadline).await?;
        if let Some(inst) = runner.app_inst() {
            if super::status::garm_status(Some(inst)).0 == crate::garm::InstanceStatus::Running {
                tracing::info!(instance, state = %inst.state, "already started");
                return Ok(());
            }
            // A failed or vanishing AppInst is replaced by a fresh one.
            self.delete_app_inst(&inst.key, deadline).await?;
        }
        let sites = self.recorded_placements(&runner.vars);
        self.deploy(&runner.key.name, &runner.key, &sites, None, deadline)
            .await?;
        tracing::info!(instance, "started");
        Ok(())
    }
}
