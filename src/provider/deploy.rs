//! Placing the AppInst: the first configured site that takes it, each site addressed as the
//! server's API generation requires, a refusing site cleaned before the next is tried, and a
//! broken or timed-out stream followed by watching the AppInst instead of creating it again.

use super::placement::{self, site_unusable};
use super::wait::{backoff, Deadline};
use super::Provider;
use crate::config::Placement;
use crate::error::Error;
use edge_connect::models::AppKey;
use edge_connect::{ApiError, ApiErrorKind, AppInstState, StreamEnd, Subject};

impl Provider {
    /// Creates the AppInst on the first site that takes it. A site that refuses it is left
    /// clean (an AppInst left in CreateError is removed) before the next one is tried: the
    /// AppInst name is unique across sites on Gen3.
    pub(super) async fn deploy(
        &self,
        name: &str,
        app_key: &AppKey,
        sites: &[Placement],
        deadline: Deadline,
    ) -> Result<(), Error> {
        let mut last_refusal: Option<Refusal> = None;
        for site in sites {
            let target = match self.target_for(site, deadline).await? {
                Ok(target) => target,
                Err(why) => {
                    self.site_refused(sites, site, &why);
                    last_refusal = Some(Refusal::Local(why));
                    continue;
                }
            };
            let request =
                placement::new_app_inst(name, self.organization(), app_key.clone(), &target);
            self.report(&format!("creating AppInst {name} in {site} ({target})"));
            let mut attempt = 0;
            let outcome = loop {
                attempt += 1;
                let mut progress = |m: &str| self.report(m);
                let left = deadline.remaining();
                let call = self.client.create_app_inst(&request, &mut progress);
                let result = match tokio::time::timeout(left, call).await {
                    Ok(r) => r,
                    Err(_) => Err(ApiError::transport(
                        edge_connect::Rpc::CreateAppInst,
                        "deadline reached while the stream was running",
                    )),
                };
                match result {
                    // Refused before anything was made (429 / 5xx as HTTP status): safe to repeat.
                    Err(e)
                        if e.is_transient()
                            && e.status.is_some_and(|s| s != 200)
                            && deadline.remaining() > backoff(attempt) =>
                    {
                        tracing::warn!(error = %e, attempt, "CreateAppInst refused, retrying");
                        tokio::time::sleep(backoff(attempt)).await;
                    }
                    other => break other,
                }
            };
            match outcome {
                Ok(StreamEnd::Completed(_)) => return Ok(()),
                Ok(StreamEnd::StillInProgress(message)) => {
                    self.report(&message);
                    return self.await_ready(name, deadline).await;
                }
                Err(e) if e.kind == ApiErrorKind::Transport => {
                    // The stream broke, but the work may go on server-side: watch the object
                    // instead of creating it a second time.
                    tracing::warn!(error = %e, "CreateAppInst stream broke; polling the AppInst");
                    self.report("stream interrupted; checking the AppInst state");
                    return self.await_ready(name, deadline).await;
                }
                Err(e) if site_unusable(&e, &target) => {
                    let why = match e.kind {
                        // Gen2 answers a cloudlet outside the organization's cloudlet pools with
                        // 403 (c39 `pkg/mc/orm/authz_cloudlet.go:355-357`): not a problem of the
                        // organization as a whole.
                        ApiErrorKind::Forbidden => format!(
                            "{site} is not in a cloudlet pool of organization {} (HTTP 403)",
                            self.organization()
                        ),
                        _ => e.message.clone(),
                    };
                    self.site_refused(sites, site, &why);
                    if e.status == Some(200) {
                        // The refusal came as a stream trailer: the AppInst may exist in
                        // CreateError on this site.
                        self.remove_app_insts_of(name, app_key, deadline).await?;
                    }
                    last_refusal = Some(match e.kind {
                        ApiErrorKind::Forbidden => Refusal::Local(why),
                        _ => Refusal::Api(e),
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(match last_refusal {
            Some(r) if sites.len() > 1 => Error::failed(format!(
                "no site could take the AppInst ({} tried); last: {}",
                sites.len(),
                r
            )),
            Some(Refusal::Api(e)) => self.explain(e).await,
            Some(Refusal::Local(why)) => Error::failed(why),
            None => Error::failed("no site to place the AppInst on".to_string()),
        })
    }

    /// Logs and reports a site that cannot take the AppInst; with one site only the final error
    /// says it, so GARM mode's stderr stays one line.
    fn site_refused(&self, sites: &[Placement], site: &Placement, why: &str) {
        if sites.len() > 1 {
            tracing::warn!(%site, error = why, "site cannot take the AppInst; trying the next one");
        } else {
            tracing::info!(%site, error = why, "site cannot take the AppInst");
        }
        self.report(&format!("{site} cannot take it: {why}"));
    }

    /// Deletes the AppInsts named `name` that deploy `app_key` (never another App's AppInst of
    /// the same name).
    pub(super) async fn remove_app_insts_of(
        &self,
        name: &str,
        app_key: &AppKey,
        deadline: Deadline,
    ) -> Result<(), Error> {
        for inst in self.app_insts_named(name, deadline).await? {
            // An AppInst that names no App cannot be confirmed as ours: never deleted.
            if inst.app_key.as_ref() == Some(app_key) {
                self.delete_app_inst(&inst.key, deadline).await?;
            }
        }
        Ok(())
    }

    /// Adds what the operator needs to fix a refusal: the flavors or sites that do exist. Costs a
    /// Show call, on the error path only.
    pub(super) async fn explain(&self, e: ApiError) -> Error {
        let listing = if e.missing() == Some(Subject::Flavor) {
            self.client.show_flavors().await.ok().map(|f| {
                format!(
                    "flavors in region {}: {}",
                    self.client.region(),
                    join(f.iter().map(|f| f.flavor_name().to_string()))
                )
            })
        } else if e.missing() == Some(Subject::Zone) {
            self.client.show_zones().await.ok().map(|z| {
                format!(
                    "zones: {}",
                    join(
                        z.iter()
                            .map(|z| format!("{}/{}", z.key.organization, z.key.name))
                    )
                )
            })
        } else if e.missing() == Some(Subject::Cloudlet) {
            self.client.show_cloudlets().await.ok().map(|c| {
                format!(
                    "cloudlets: {}",
                    join(
                        c.iter()
                            .map(|c| format!("{}/{}", c.key.organization, c.key.name))
                    )
                )
            })
        } else {
            None
        };
        match listing {
            Some(listing) => Error::failed(format!("{e}; {listing}")),
            None => e.into(),
        }
    }

    /// Polls the AppInst until it is Ready, failed, gone, or the deadline passes.
    async fn await_ready(&self, name: &str, deadline: Deadline) -> Result<(), Error> {
        loop {
            let insts = self.app_insts_named(name, deadline).await?;
            match insts.first() {
                Some(i) if i.state == AppInstState::Ready => return Ok(()),
                Some(i) if i.state.is_error() => {
                    let detail = if i.errors.is_empty() {
                        i.state.to_string()
                    } else {
                        i.errors.join("; ")
                    };
                    return Err(Error::failed(format!("AppInst {name} failed: {detail}")));
                }
                Some(_) => {}
                None => {
                    return Err(Error::failed(format!(
                        "AppInst {name} was not created (Edge Connect undid it)"
                    )))
                }
            }
            if deadline.remaining() <= self.poll_interval {
                return Err(Error::failed(format!(
                    "AppInst {name} not Ready within edge_connect.operation_timeout_secs={}s",
                    self.config.edge_connect.operation_timeout_secs
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }
}

/// Why a site did not take the AppInst.
enum Refusal {
    /// The controller refused it.
    Api(ApiError),
    /// The provider found the site unusable (unknown cloudlet, no zone, not in the pools).
    Local(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Api(e) => e.fmt(f),
            Refusal::Local(why) => f.write_str(why),
        }
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
