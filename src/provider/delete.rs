//! Deleting runners: DeleteInstance, RemoveAllInstances, and the AppInst and App deletes that
//! Stop, Start and a failed create share, each waiting out the controller's transient states.

use edge_connect::models::{App, AppInst, AppInstKey, AppKey};
use edge_connect::ApiErrorKind;

use super::wait::{retry_transient, Deadline};
use super::Provider;
use crate::error::Error;

impl Provider {
    /// Deletes an AppInst, waiting out transient states ("AppInst busy") within the deadline.
    pub(super) async fn delete_app_inst(
        &self,
        key: &AppInstKey,
        deadline: Deadline,
    ) -> Result<(), Error> {
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
                    if e.already_being_deleted() {
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

    pub(super) async fn wait_app_inst_gone(
        &self,
        key: &AppInstKey,
        deadline: Deadline,
    ) -> Result<(), Error> {
        loop {
            if self.app_insts_named(&key.name, deadline).await?.is_empty() {
                return Ok(());
            }
            self.sleep_within(deadline).await?;
        }
    }

    /// Deletes an App, waiting while it is still in use by an AppInst that is going away.
    pub(super) async fn delete_app(&self, key: &AppKey, deadline: Deadline) -> Result<(), Error> {
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

    /// Removes an AppInst (if any) and the App: the whole runner.
    pub(super) async fn remove_runner(
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
    pub(super) async fn delete(&self, instance: &str, deadline: Deadline) -> Result<(), Error> {
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
    pub(super) async fn remove_all(&self, deadline: Deadline) -> Result<(), Error> {
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
}
