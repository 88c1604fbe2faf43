//! GetInstance and ListInstances.

use super::status::RunnerView;
use super::wait::Deadline;
use super::Provider;
use crate::error::Error;

impl Provider {
    pub(super) async fn get(
        &self,
        instance: &str,
        deadline: Deadline,
    ) -> Result<RunnerView, Error> {
        match self.find_runner(instance, deadline).await? {
            Some(runner) => Ok(self.view_of(runner)),
            None => Err(Error::NotFound(format!(
                "instance {} not found",
                crate::text::echo(instance)
            ))),
        }
    }

    /// Exactly this controller's runners of one pool (or of every pool when `pool_id` is None).
    pub(super) async fn list(
        &self,
        pool_id: Option<&str>,
        deadline: Deadline,
    ) -> Result<Vec<RunnerView>, Error> {
        let runners = self.runners(pool_id, deadline).await?;
        // Each runner is dropped as its view is made.
        Ok(runners.into_iter().map(|r| self.view_of(r)).collect())
    }
}
