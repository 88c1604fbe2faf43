//! GetInstance and ListInstances.

use super::wait::Deadline;
use super::{Outcome, OwnedRunner, Provider};
use crate::error::Error;

impl Provider {
    /// The runner behind `instance`, or NotFound (exit 30 for GARM).
    pub(super) async fn existing_runner(
        &self,
        instance: &str,
        deadline: Deadline,
    ) -> Result<OwnedRunner, Error> {
        self.find_runner(instance, deadline).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "instance {} not found",
                crate::text::echo(instance)
            ))
        })
    }

    pub(super) async fn get(&self, instance: &str, deadline: Deadline) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance, deadline).await?;
        Ok(Outcome::Instance(Box::new(self.view_of(runner))))
    }

    /// Exactly this controller's runners of one pool (or of every pool when `pool_id` is None).
    pub(super) async fn list(
        &self,
        pool_id: Option<&str>,
        deadline: Deadline,
    ) -> Result<Outcome, Error> {
        let runners = self.runners("", pool_id, deadline).await?.0;
        // Each runner is dropped as its view is made.
        let views = runners.into_iter().map(|r| self.view_of(r)).collect();
        Ok(Outcome::Instances(views))
    }
}
