//! GetInstance and ListInstances.

use super::{Outcome, OwnedRunner, Provider};
use crate::error::Error;
use crate::metrics::Facts;

impl Provider {
    /// The runner behind `instance`, or NotFound (exit 30 for GARM).
    pub(super) async fn existing_runner(&self, instance: &str) -> Result<OwnedRunner, Error> {
        self.find_runner(instance).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "instance {} not found",
                crate::text::echo(instance)
            ))
        })
    }

    pub(super) async fn get(&self, instance: &str, facts: &mut Facts) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance).await?;
        facts.found(&runner);
        Ok(Outcome::Instance(Box::new(self.view_of(runner))))
    }

    /// Exactly this controller's runners of one pool (or of every pool when `pool_id` is None).
    pub(super) async fn list(&self, pool_id: Option<&str>) -> Result<Outcome, Error> {
        let runners = self.runners("", pool_id, None).await?.0;
        // Each runner is dropped as its view is made.
        let views = runners.into_iter().map(|r| self.view_of(r)).collect();
        Ok(Outcome::Instances(views))
    }
}
