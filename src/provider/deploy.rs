//! Placing the AppInst: the first configured site that takes it, each site addressed as the
//! server's answers say, a refusing site cleaned before the next is tried, the create stream
//! watched for a runner that will not start, and a broken, timed-out or unfinished stream
//! decided by looking at the AppInst instead of creating it again.

use edge_connect::appinst_start::{self, StartProblem, StartReason};
use edge_connect::models::{AppKey, NewAppInst};
use edge_connect::{ApiError, ApiErrorKind, AppInstState, StreamEnd, Subject};

use super::placement::{self, site_unusable, Target};
use super::start_watch::start_watch;
use super::wait::{backoff, Deadline};
use super::Provider;
use crate::config::Placement;
use crate::error::Error;

/// How one site answered.
enum Placed {
    /// The AppInst is Ready there.
    Running,
    /// The site cannot take it; nothing of ours is left there.
    Refused(Refusal),
}

/// Why a site did not take the AppInst.
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

impl From<DeployFailure> for Error {
    fn from(failure: DeployFailure) -> Self {
        failure.error
    }
}

/// How a CreateAppInst stream ended.
enum Watched {
    /// The stream ended (or failed) by itself.
    Ended(Result<StreamEnd, ApiError>),
    /// The status lines said the runner will not start; the stream was closed.
    CannotStart(StartReason),
}

impl Provider {
    /// Creates the AppInst on the first site that takes it. A site that refuses it (the
    /// controller's refusal, a capacity refusal, a `CreateError`, a pod that cannot be
    /// scheduled) is left clean before the next one is tried: the AppInst name is unique across
    /// sites on Gen3. `image` names the image in the messages (Start does not know it).
    pub(super) async fn deploy(
        &self,
        name: &str,
        app_key: &AppKey,
        sites: &[Placement],
        image: Option<&str>,
        deadline: Deadline,
    ) -> Result<(), DeployFailure> {
        let mut tried: Vec<(String, Refusal)> = Vec::new();
        for site in sites {
            let target = self.target_for(site, deadline).await?;
            match self
                .place(name, app_key, site, target, image, deadline)
                .await?
            {
                Placed::Running => return Ok(()),
                Placed::Refused(refusal) => {
                    self.site_refused(sites, site, &refusal.why);
                    tried.push((site.to_string(), refusal));
                }
            }
        }
        if tried.len() > 1 {
            let each: Vec<String> = tried
                .iter()
                .map(|(site, r)| format!("{site}: {}", r.why))
                .collect();
            return Err(Error::Other(format!(
                "no site could take the AppInst ({} tried): {}",
                tried.len(),
                each.join("; ")
            ))
            .into());
        }
        Err(match tried.pop() {
            Some((_, Refusal { api: Some(e), .. })) => self.explain(e).await,
            Some((_, refusal)) => Error::Other(refusal.why),
            None => Error::Other("no site to place the AppInst on".to_string()),
        }
        .into())
    }

    /// One site: CreateAppInst, and what its answer means. A `Zone not specified` for a
    /// cloudlet key contradicts what ShowCloudlet said: the cloudlet is asked for again and the
    /// create retried once with what the server says now.
    async fn place(
        &self,
        name: &str,
        app_key: &AppKey,
        site: &Placement,
        mut target: Target,
        image: Option<&str>,
        deadline: Deadline,
    ) -> Result<Placed, DeployFailure> {
        let mut redecided = false;
        loop {
            let request =
                placement::new_app_inst(name, self.organization(), app_key.clone(), &target);
            self.report(&format!("creating AppInst {name} in {site} ({target})"));
            let outcome = match self.create_watching(&request, deadline).await {
                Watched::Ended(outcome) => outcome,
                Watched::CannotStart(reason) => {
                    return self
                        .cannot_start(name, app_key, site, reason, image, deadline)
                        .await
                }
            };
            let e = match outcome {
                Ok(StreamEnd::Completed(last)) if appinst_start::created(&last) => {
                    return Ok(Placed::Running)
                }
                Ok(end) => {
                    // Timed out server-side, or ended without its result line: the stream does
                    // not say whether the AppInst exists, ShowAppInst does.
                    let last = match &end {
                        StreamEnd::Completed(m) | StreamEnd::StillInProgress(m) => m,
                    };
                    tracing::warn!(last = %last, "CreateAppInst ended without its result; reading the AppInst");
                    self.report(
                        "the CreateAppInst stream ended without its result; checking the AppInst",
                    );
                    return Ok(self
                        .await_ready(name, deadline)
                        .await
                        .map(|()| Placed::Running)?);
                }
                Err(e) => e,
            };
            if e.kind == ApiErrorKind::Transport {
                // The stream broke, but the work may go on server-side: watch the object
                // instead of creating it a second time.
                tracing::warn!(error = %e, "CreateAppInst stream broke; polling the AppInst");
                self.report("stream interrupted; checking the AppInst state");
                return Ok(self
                    .await_ready(name, deadline)
                    .await
                    .map(|()| Placed::Running)?);
            }
            if e.zone_not_specified() {
                if let (Placement::Cloudlet(key), false) = (site, redecided) {
                    redecided = true;
                    let cloudlets = self.show_cloudlets(deadline).await?;
                    target = placement::target(site, &cloudlets);
                    if let Target::Zone(_) = target {
                        continue;
                    }
                    return Ok(Placed::Refused(Refusal {
                        why: placement::no_zone(key, &cloudlets),
                        api: None,
                    }));
                }
            }
            let accepted = e.status == Some(200);
            if site_unusable(&e, &target) {
                let forbidden = e.kind == ApiErrorKind::Forbidden;
                // Gen2 answers a cloudlet outside the organization's cloudlet pools with 403
                // (docs/edge-connect-behaviours.md B3): not a problem of the organization.
                let why = if forbidden {
                    format!(
                        "{site} is not in a cloudlet pool of organization {} (HTTP 403)",
                        self.organization()
                    )
                } else {
                    e.message.clone()
                };
                if accepted {
                    // The refusal came as a stream result: the AppInst may exist on this site.
                    self.remove_app_insts_of(name, app_key, deadline).await?;
                }
                let api = (!forbidden).then_some(e);
                return Ok(Placed::Refused(Refusal { why, api }));
            }
            if accepted && matches!(e.kind, ApiErrorKind::Rejected | ApiErrorKind::Server) {
                // The controller took the AppInst and the site failed to make it (CreateError,
                // undone by the controller; docs/edge-connect-behaviours.md B13 for docker).
                if appinst_start::docker_pull_failed(&e.message) {
                    return Err(Error::Other(format!(
                        "{} cannot be pulled on {} ({}): check the image name and tag, and image_pull_username / image_pull_password_env for a private registry",
                        image_words(image),
                        site_name(site),
                        e.message
                    ))
                    .into());
                }
                self.remove_app_insts_of(name, app_key, deadline).await?;
                let why = match appinst_start::pod_reasons(&e.message).first() {
                    Some(&reason) => cannot_start_message(image, site, reason),
                    None => e.message.clone(),
                };
                return Ok(Placed::Refused(Refusal { why, api: None }));
            }
            return Err(Error::from(e).into());
        }
    }

    /// CreateAppInst with its status lines watched. Refusals before the stream started (429,
    /// 5xx as the HTTP status) are repeated within the deadline: nothing was made.
    async fn create_watching(&self, request: &NewAppInst, deadline: Deadline) -> Watched {
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
                    reason = verdict.reason() => return Watched::CannotStart(reason),
                    result = call => result,
                }
            };
            if let Some(reason) = verdict.decided() {
                return Watched::CannotStart(reason);
            }
            match result {
                Err(e)
                    if e.is_transient()
                        && e.status.is_some_and(|s| s != 200)
                        && deadline.has_room_for(backoff(attempt)) =>
                {
                    tracing::warn!(error = %e, attempt, "CreateAppInst refused, retrying");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                other => return Watched::Ended(other),
            }
        }
    }

    /// The runner will not start on this site. A pod that cannot be scheduled is a refusal of
    /// the site (its AppInst is removed, the next site is tried); an image, configuration or
    /// crash problem would be the same anywhere, so it ends the create.
    async fn cannot_start(
        &self,
        name: &str,
        app_key: &AppKey,
        site: &Placement,
        reason: StartReason,
        image: Option<&str>,
        deadline: Deadline,
    ) -> Result<Placed, DeployFailure> {
        let message = cannot_start_message(image, site, reason);
        tracing::warn!(app = %name, %site, %reason, "the runner will not start");
        if reason.problem() != StartProblem::Capacity {
            return Err(DeployFailure {
                error: Error::Other(message),
                start_failure: true,
            });
        }
        self.remove_app_insts_of(name, app_key, deadline).await?;
        Ok(Placed::Refused(Refusal {
            why: message,
            api: None,
        }))
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
            Some(listing) => Error::Other(format!("{e}; {listing}")),
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
                    return Err(Error::Other(format!("AppInst {name} failed: {detail}")));
                }
                Some(_) => {}
                None => {
                    return Err(Error::Other(format!(
                        "AppInst {name} was not created (Edge Connect undid it)"
                    )))
                }
            }
            if !deadline.has_room_for(self.poll_interval) {
                return Err(Error::Other(format!(
                    "AppInst {name} not Ready within edge_connect.operation_timeout_secs={}s",
                    self.config.edge_connect.operation_timeout_secs
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }
}

/// `organization/name` of a site, as the operator wrote it.
fn site_name(site: &Placement) -> String {
    match site {
        Placement::Zone(k) | Placement::Cloudlet(k) => format!("{}/{}", k.organization, k.name),
    }
}

fn image_words(image: Option<&str>) -> String {
    image.map_or_else(
        || "the runner's image".to_string(),
        |i| format!("image {i}"),
    )
}

/// One line naming the image, the site, the reason and what to check.
fn cannot_start_message(image: Option<&str>, site: &Placement, reason: StartReason) -> String {
    let image = image_words(image);
    let on = site_name(site);
    match reason.problem() {
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

fn join(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
