//! Placing the AppInst: the first configured site that takes it, each site addressed as the
//! server's answers say, a refusing site cleaned before the next is tried, the create stream
//! watched for a runner that will not start, and a broken, timed-out or unfinished stream
//! decided by looking at the AppInst instead of creating it again.

use edge_connect::appinst_start::{self, StartProblem, StartReason};
use edge_connect::models::{AppKey, NewAppInst, Site};
use edge_connect::{Answer, ApiError, ApiErrorKind, AppInstState, StreamEnd, Subject};

use super::placement::{self, site_unusable, Target};
use super::start_watch::start_watch;
use super::wait::{backoff, Deadline};
use super::Provider;
use crate::config::Placement;
use crate::error::Error;
use crate::runner_env::app_inst_marks;

/// Why a site did not take the AppInst; nothing of ours is left there.
struct Refusal {
    /// In words, for the final message.
    why: String,
    /// The controller's refusal, when it was one (`explain` lists what exists).
    api: Option<ApiError>,
}

/// Why a deploy failed.
pub(super) struct DeployFailure {
    /// What to report.
    pub error: Error,
    /// The runner will not start and its create stream was closed: on a site whose CRM runs on
    /// the edge the AppInst stays `Creating` (and cannot be deleted) until the CRM's own wait
    /// ends, up to 15 minutes (docs/edge-connect-behaviours.md B7, B12), so a rollback should
    /// not wait that long (GARM deletes the instance after a failed create).
    pub start_failure: bool,
}

impl From<Error> for DeployFailure {
    fn from(error: Error) -> Self {
        DeployFailure {
            error,
            start_failure: false,
        }
    }
}

impl Provider {
    /// Creates the AppInst of `app_key` (named as its App) on the first site that takes it,
    /// each site addressed as `targets` says. A site that refuses it (the controller's refusal,
    /// a capacity refusal, a `CreateError`, a pod that cannot be scheduled) is left clean before
    /// the next one is tried: the AppInst name is unique across sites on Gen3. `image` names the
    /// image in the messages (Start does not know it); the AppInst carries the marks of
    /// `pool_id`'s runners.
    pub(super) async fn deploy(
        &self,
        app_key: &AppKey,
        pool_id: &str,
        sites: &[Placement],
        targets: Vec<Target>,
        image: Option<&str>,
        deadline: Deadline,
    ) -> Result<(), DeployFailure> {
        let (mut tried, mut last) = (Vec::new(), None);
        for (site, target) in sites.iter().zip(targets) {
            let Err(refusal) = self
                .place(app_key, pool_id, site, target, image, deadline)
                .await?
            else {
                return Ok(());
            };
            // With one site only the final error says it, so GARM mode's stderr stays one line.
            if sites.len() > 1 {
                tracing::warn!(%site, error = refusal.why, "site cannot take the AppInst; trying the next one");
            } else {
                tracing::info!(%site, error = refusal.why, "site cannot take the AppInst");
            }
            self.report(&format!("{site} cannot take it: {}", refusal.why));
            tried.push(format!("{site}: {}", refusal.why));
            last = Some(refusal);
        }
        if tried.len() > 1 {
            return Err(Error::failed(format!(
                "no site could take the AppInst ({} tried): {}",
                tried.len(),
                tried.join("; ")
            ))
            .into());
        }
        Err(match last {
            Some(Refusal { api: Some(e), .. }) => self.explain(e).await,
            Some(refusal) => Error::failed(refusal.why),
            None => Error::failed("no site to place the AppInst on".to_string()),
        }
        .into())
    }

    /// One site: CreateAppInst, and what its answer means: `Ok(())` the AppInst is Ready there,
    /// `Err` the site refused it. A `Zone not specified` for a cloudlet key contradicts what
    /// ShowCloudlet said: the cloudlet is asked for again and the create retried once with what
    /// the server says now.
    async fn place(
        &self,
        app_key: &AppKey,
        pool_id: &str,
        site: &Placement,
        mut target: Target,
        image: Option<&str>,
        deadline: Deadline,
    ) -> Result<Result<(), Refusal>, DeployFailure> {
        let name = &app_key.name;
        let mut redecided = false;
        loop {
            let request = NewAppInst {
                annotations: app_inst_marks(&self.controller_id, pool_id),
                ..placement::new_app_inst(name, self.organization(), app_key.clone(), &target)
            };
            self.report(&format!("creating AppInst {name} in {site} ({target})"));
            let e = match self.create_watching(&request, deadline).await {
                // A pod that cannot be scheduled is a refusal of the site; an image,
                // configuration or crash problem would be the same anywhere: it ends the create.
                Err(reason) => {
                    let why = cannot_start_message(image, site, reason.problem(), reason);
                    tracing::warn!(app = %name, %site, %reason, "the runner will not start");
                    if reason.problem() != StartProblem::Capacity {
                        return Err(DeployFailure {
                            error: Error::failed(why),
                            start_failure: true,
                        });
                    }
                    self.remove_app_insts_of(app_key, deadline).await?;
                    return Ok(Err(Refusal { why, api: None }));
                }
                Ok(Ok(StreamEnd::Completed(last))) if appinst_start::created(&last) => {
                    return Ok(Ok(()))
                }
                Ok(Err(e))
                    if !matches!(e.kind, ApiErrorKind::Transport | ApiErrorKind::Unreachable) =>
                {
                    e
                }
                Ok(unsettled) => {
                    // The stream broke, timed out server-side or ended without its result line:
                    // the work may go on server-side and the stream does not say whether the
                    // AppInst exists. ShowAppInst does; it is never created a second time.
                    tracing::warn!(outcome = ?unsettled, "CreateAppInst ended without its result; reading the AppInst");
                    self.report(
                        "the CreateAppInst stream ended without its result; checking the AppInst",
                    );
                    return Ok(self.await_ready(name, deadline).await.map(Ok)?);
                }
            };
            if e.zone_not_specified() {
                if let (Placement::Cloudlet(key), false) = (site, redecided) {
                    redecided = true;
                    let cloudlets = self.show_cloudlets(deadline).await?;
                    target = placement::target(site, &cloudlets);
                    if let Target::Zone(_) = target {
                        continue;
                    }
                    let why = placement::no_zone(key, &cloudlets);
                    return Ok(Err(Refusal { why, api: None }));
                }
            }
            let accepted = matches!(e.answer, Answer::Trailer(_));
            let (why, api) = if site_unusable(&e, &target) {
                if e.kind == ApiErrorKind::Forbidden {
                    // Gen2 answers a cloudlet outside the organization's cloudlet pools with 403
                    // (docs/edge-connect-behaviours.md B3): not a problem of the organization.
                    let org = self.organization();
                    let why = format!(
                        "{site} is not in a cloudlet pool of organization {org} (HTTP 403)"
                    );
                    (why, None)
                } else {
                    (e.message.clone(), Some(e))
                }
            } else if accepted && matches!(e.kind, ApiErrorKind::Rejected | ApiErrorKind::Server) {
                // The controller took the AppInst and the site failed to make it (CreateError,
                // undone by the controller; docs/edge-connect-behaviours.md B13 for docker).
                if appinst_start::docker_pull_failed(&e.message) {
                    let why = cannot_start_message(image, site, StartProblem::Image, &e.message);
                    return Err(Error::failed(why).into());
                }
                match appinst_start::pod_reasons(&e.message).first() {
                    Some(&reason) => (
                        cannot_start_message(image, site, reason.problem(), reason),
                        None,
                    ),
                    None => (e.message.clone(), None),
                }
            } else {
                return Err(Error::from(e).into());
            };
            if accepted {
                // The refusal came as a stream result: the AppInst may exist on this site.
                self.remove_app_insts_of(app_key, deadline).await?;
            }
            return Ok(Err(Refusal { why, api }));
        }
    }

    /// CreateAppInst with its status lines watched; `Err` when they said the runner will not
    /// start (the stream was then closed). Refusals before the stream started (429, 5xx as the
    /// HTTP status) are repeated within the deadline: nothing was made.
    async fn create_watching(
        &self,
        request: &NewAppInst,
        deadline: Deadline,
    ) -> Result<Result<StreamEnd, ApiError>, StartReason> {
        let grace =
            std::time::Duration::from_secs(self.config.edge_connect.start_failure_grace_secs);
        let (mut watch, mut verdict) = start_watch(grace);
        let client = self.client.until(deadline);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = {
                let mut progress = |m: &str| {
                    self.report(m);
                    watch.observe(m);
                };
                let call = client.create_app_inst(request, &mut progress);
                tokio::select! {
                    biased;
                    // Closing the stream makes a central CRM's controller undo the create
                    // (docs/edge-connect-behaviours.md B7); the rollback then waits for that.
                    reason = verdict.reason() => return Err(reason),
                    result = call => result,
                }
            };
            if let Some(reason) = verdict.decided() {
                return Err(reason);
            }
            match result {
                Err(e)
                    if e.is_transient()
                        && matches!(e.answer, Answer::Status(_))
                        && deadline.has_room_for(backoff(attempt)) =>
                {
                    tracing::warn!(error = %e, attempt, "CreateAppInst refused, retrying");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                other => return Ok(other),
            }
        }
    }

    /// Deletes the AppInsts named as the App `app_key` that deploy it (never another App's
    /// AppInst of the same name).
    pub(super) async fn remove_app_insts_of(
        &self,
        app_key: &AppKey,
        deadline: Deadline,
    ) -> Result<(), Error> {
        for inst in self.app_insts_named(&app_key.name, deadline).await? {
            // An AppInst that names no App cannot be confirmed as ours: never deleted.
            if inst.app_key.as_ref() == Some(app_key) {
                self.delete_app_inst(&inst.key, deadline, None).await?;
            }
        }
        Ok(())
    }

    /// Adds what the operator needs to fix a refusal: the flavors or sites that do exist. Costs a
    /// Show call, on the error path only.
    pub(super) async fn explain(&self, e: ApiError) -> Error {
        let sites = |what: &str, shown: Result<Vec<Site>, ApiError>| {
            (what.to_string(), shown.map(|s| placement::names(&s)))
        };
        let (what, names): (String, Result<Vec<String>, ApiError>) = match e.missing() {
            Some(Subject::Flavor) => (
                format!("flavors in region {}", self.client.region()),
                self.client
                    .show_flavors()
                    .await
                    .map(|f| f.iter().map(|f| f.flavor_name().to_string()).collect()),
            ),
            Some(Subject::Zone) => sites("zones", self.client.show_zones().await),
            Some(Subject::Cloudlet) => sites("cloudlets", self.client.show_cloudlets().await),
            _ => return e.into(),
        };
        match names {
            Ok(names) if names.is_empty() => Error::failed(format!("{e}; {what}: none")),
            Ok(names) => Error::failed(format!("{e}; {what}: {}", names.join(", "))),
            Err(_) => e.into(),
        }
    }

    /// Waits until the AppInst is Ready; fails when it failed, is gone, or the deadline passes.
    async fn await_ready(&self, name: &str, deadline: Deadline) -> Result<(), Error> {
        let what = format!("AppInst {name} not Ready");
        match self.settled(name, None, deadline, &what).await? {
            Some(i) if i.state == AppInstState::Ready => Ok(()),
            Some(i) => {
                let detail = if i.errors.is_empty() {
                    i.state.to_string()
                } else {
                    i.errors.join("; ")
                };
                Err(Error::failed(format!("AppInst {name} failed: {detail}")))
            }
            None => Err(Error::failed(format!(
                "AppInst {name} was not created (Edge Connect undid it)"
            ))),
        }
    }
}

/// One line naming the image, the site, the reason and what to check.
fn cannot_start_message(
    image: Option<&str>,
    site: &Placement,
    problem: StartProblem,
    reason: impl std::fmt::Display,
) -> String {
    let image = image.map_or_else(
        || "the runner's image".to_string(),
        |i| format!("image {i}"),
    );
    let on = match site {
        Placement::Zone(k) | Placement::Cloudlet(k) => format!("{}/{}", k.organization, k.name),
    };
    match problem {
        StartProblem::Image => format!(
            "{image} cannot be pulled on {on} ({reason}): check the image name and tag, and image_pull_username / image_pull_password_env for a private registry"
        ),
        StartProblem::Config => format!(
            "the container of {image} cannot be created on {on} ({reason}): check the pool's command, command_args and env against the image"
        ),
        StartProblem::Crash => format!(
            "the container of {image} keeps crashing on {on} ({reason}): check that its entrypoint starts the runner and stays up, and the container's log"
        ),
        StartProblem::Capacity => format!(
            "the runner cannot be scheduled on {on} ({reason}): the site has no room for its flavor; choose a smaller flavor or another site"
        ),
    }
}
