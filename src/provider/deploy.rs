//! Placing the AppInst: the first configured site that takes it, each site addressed as the
//! server's answers say, a refusing site cleaned before the next is tried, the create stream
//! watched for a runner that will not start, and a broken, timed-out or unfinished stream
//! decided by looking at the AppInst instead of creating it again.

use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};

use edge_connect::appinst_start::{self, Admission, Forbidden, NotStarted, Progress, StartProblem};
use edge_connect::models::{AppKey, NewAppInst, Site};
use edge_connect::{Answer, ApiError, ApiErrorKind, AppInstState, StreamEnd, Subject};

use super::delete::Busy;
use super::placement::{self, site_unusable, Target};
use super::start_watch::{start_watch, StartFailure};
use super::wait::transient;
use super::Provider;
use crate::config::Placement;
use crate::error::Error;
use crate::naming::MAX_NAME_LEN;
use crate::runner_env::app_inst_marks;

/// What one placement attempt on a site came to.
enum Attempt {
    /// The AppInst is Ready there.
    Placed,
    /// The site cannot take it; the next site may be tried.
    Refused(Refusal),
    /// The create ends here.
    Failed(DeployFailure),
}

/// Why a site did not take the AppInst.
#[derive(Default)]
struct Refusal {
    /// In words, for the final message.
    why: String,
    /// The controller's refusal, when it was one (`explain` lists what exists).
    api: Option<ApiError>,
    /// The metrics label of the start failure it was, if it was one.
    start_failure: Option<String>,
    /// Why its AppInst is still there, when it could not be removed yet (the site's CRM holds
    /// it): the AppInst name is unique across zones, so a later site places the runner under a
    /// second name ([`app_inst_name`]).
    held: Option<Error>,
}

/// How long the cleanup of a site that did not start the runner waits for its AppInst to start
/// going: a central CRM undoes the create within seconds of the stream's end (B7); a CRM on the
/// edge holds it until its own wait ends (B12, B17), which no command waits for.
pub(super) const HELD_PATIENCE: Duration = Duration::from_secs(6);

/// A delete of an AppInst of a runner that did not start: given [`HELD_PATIENCE`] to go.
pub(super) const AFTER_START_FAILURE: Busy = Busy::Report {
    patience: HELD_PATIENCE,
};

/// Why a deploy failed.
pub(super) struct DeployFailure {
    /// What to report.
    pub error: Error,
    /// The runner will not start and its create stream was closed: on a site whose CRM runs on
    /// the edge the AppInst stays `Creating` (and cannot be deleted) until the CRM's own wait
    /// ends, up to 15 minutes (docs/edge-connect-behaviours.md B7, B12), so a rollback should
    /// not wait that long (GARM deletes the instance after a failed create).
    pub start_failure: bool,
    /// The AppInsts that could not be removed just now (their sites' CRMs hold them, or their
    /// delete was refused), in the order of the sites: the rollback does not ask again, and
    /// reports them after the cause.
    pub held: Vec<Held>,
    /// The last site tried (`ORG/NAME`).
    pub site: String,
    /// The metrics label of the last start failure met, if any.
    pub reason: Option<String>,
}

/// An AppInst of the runner that could not be removed (a site's CRM holds it, B17, or its delete
/// was refused): its name and why.
pub(super) struct Held {
    /// The AppInst's name.
    pub name: String,
    /// What holds it and until when.
    pub why: Error,
}

impl From<Error> for DeployFailure {
    fn from(error: Error) -> Self {
        DeployFailure {
            error,
            start_failure: false,
            held: Vec::new(),
            site: String::new(),
            reason: None,
        }
    }
}

/// What one deploy places: the runner's App, the pool whose marks its AppInst carries, and the
/// image the messages name.
struct Runner<'a> {
    app_key: &'a AppKey,
    pool_id: &'a str,
    image: Option<&'a str>,
    /// The runner container's memory limit in MB, when the pool sets one.
    memory: Option<u64>,
}

impl Provider {
    /// Creates the AppInst of `app_key` on the first site that takes it, each site addressed as
    /// `targets` says. A site that refuses it (the controller's refusal, a capacity refusal, a
    /// `CreateError`, a pod that cannot be scheduled) is left clean before the next one is
    /// tried; when its CRM holds the AppInst (B17), the next sites place it under a second
    /// name ([`app_inst_name`]): the AppInst name is unique across zones on Gen3 (B4). `image`
    /// names the image in the messages (Start does not know it); the AppInst carries the marks
    /// of `pool_id`'s runners. Returns the site (`ORG/NAME`) that took it.
    pub(super) async fn deploy(
        &self,
        app_key: &AppKey,
        pool_id: &str,
        sites: &[Placement],
        targets: Vec<Target>,
        image: Option<&str>,
        memory: Option<u64>,
    ) -> Result<String, DeployFailure> {
        let (mut tried, mut last, mut reason) = (Vec::new(), None, None);
        let mut held: Vec<Held> = Vec::new();
        let runner = Runner {
            app_key,
            pool_id,
            image,
            memory,
        };
        for (i, (site, target)) in sites.iter().zip(targets).enumerate() {
            // The last site gets the rest of the deadline, as the only one of a pool does.
            let failover = i + 1 < sites.len();
            let name_taken = held.iter().any(|h| h.name == app_key.name);
            let name = app_inst_name(&app_key.name, i, name_taken);
            let on = site_name(site);
            let mut refusal = match self.place(&runner, &name, site, target, failover).await {
                Attempt::Placed => {
                    for h in &held {
                        // Not waited for: GARM's DeleteInstance of the runner removes it
                        // (docs/architecture.md, "Failover").
                        tracing::warn!(app_inst = %h.name, error = %h.why, "an earlier site still holds an AppInst of this runner; DeleteInstance removes it");
                    }
                    return Ok(on);
                }
                Attempt::Refused(refusal) => refusal,
                Attempt::Failed(mut failure) => {
                    failure.reason = failure.reason.or(reason);
                    failure.site = on;
                    // A runner that does not start on the last site after others refused it:
                    // every site is named, the first cause first.
                    if failure.start_failure && !tried.is_empty() {
                        tried.push(format!("{site}: {}", failure.error));
                        failure.error = no_site(&tried);
                    }
                    held.append(&mut failure.held);
                    failure.held = held;
                    return Err(failure);
                }
            };
            reason = refusal.start_failure.take().or(reason);
            // With one site only the final error says it, so GARM mode's stderr stays one line.
            if sites.len() > 1 {
                tracing::warn!(%site, error = refusal.why, "site cannot take the AppInst; trying the next one");
                if let Some(next) = sites.get(i + 1) {
                    self.metrics.failover(pool_id, &on, &site_name(next));
                }
            } else {
                tracing::info!(%site, error = refusal.why, "site cannot take the AppInst");
            }
            self.report(&format!("{site} cannot take it: {}", refusal.why));
            tried.push(format!("{site}: {}", refusal.why));
            if let Some(why) = refusal.held.take() {
                held.push(Held { name, why });
            }
            last = Some(refusal);
        }
        let error = match last {
            _ if tried.len() > 1 => no_site(&tried),
            Some(Refusal { api: Some(e), .. }) => self.explain(e).await,
            Some(refusal) => Error::failed(refusal.why),
            None => Error::failed("no site to place the AppInst on".to_string()),
        };
        Err(DeployFailure {
            error,
            // A held AppInst is a runner that did not start: the rollback is the short one.
            start_failure: !held.is_empty(),
            held,
            site: sites.last().map(site_name).unwrap_or_default(),
            reason,
        })
    }

    /// One site: CreateAppInst, and what its answer means. A `Zone not specified` for a cloudlet
    /// key contradicts what ShowCloudlet said: the cloudlet is asked for again and the create
    /// retried once with what the server says now.
    /// `name`: the AppInst's name on this site ([`app_inst_name`]). `failover`: another site
    /// follows this one.
    async fn place(
        &self,
        runner: &Runner<'_>,
        name: &str,
        site: &Placement,
        mut target: Target,
        failover: bool,
    ) -> Attempt {
        let (app_key, image) = (runner.app_key, runner.image);
        let mut redecided = false;
        loop {
            let request = NewAppInst {
                annotations: app_inst_marks(&self.controller_id, runner.pool_id),
                ..placement::new_app_inst(name, self.organization(), app_key.clone(), &target)
            };
            self.report(&format!("creating AppInst {name} in {site} ({target})"));
            let e = match self.create_watching(&request, failover).await {
                // A pod no node takes is a refusal of the site (when another can be tried); an
                // image, configuration or crash problem would be the same anywhere: it ends the
                // create.
                Err(failure) => {
                    let (why, refused, label) =
                        self.start_failure_message(image, runner.memory, site, &failure);
                    tracing::warn!(app = %name, %site, ?failure, "the runner will not start");
                    let label = self.start_failed(runner, site, label);
                    if !refused {
                        return Attempt::Failed(DeployFailure {
                            start_failure: true,
                            reason: label,
                            ..Error::failed(why).into()
                        });
                    }
                    return Attempt::Refused(Refusal {
                        why,
                        start_failure: label,
                        held: self.clean_site(app_key, name).await,
                        ..Refusal::default()
                    });
                }
                Ok(Ok(StreamEnd::Created)) => return Attempt::Placed,
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
                    return match self.await_ready(app_key, name).await {
                        Ok(()) => Attempt::Placed,
                        Err(e) => Attempt::Failed(e.into()),
                    };
                }
            };
            if e.zone_not_specified() {
                if let (Placement::Cloudlet(key), false) = (site, redecided) {
                    redecided = true;
                    let cloudlets = match self.show_cloudlets().await {
                        Ok(cloudlets) => cloudlets,
                        Err(e) => return Attempt::Failed(e.into()),
                    };
                    target = placement::target(site, &cloudlets);
                    if let Target::Zone(_) = target {
                        continue;
                    }
                    return Attempt::Refused(Refusal {
                        why: placement::no_zone(key, &cloudlets),
                        ..Refusal::default()
                    });
                }
            }
            let accepted = matches!(e.answer, Answer::Trailer(_));
            let (why, api, start_failure) = if site_unusable(&e, &target) {
                if e.kind == ApiErrorKind::Forbidden {
                    // Gen2 answers a cloudlet outside the organization's cloudlet pools with 403
                    // (docs/edge-connect-behaviours.md B3): not a problem of the organization.
                    let org = self.organization();
                    let why = format!(
                        "{site} is not in a cloudlet pool of organization {org} (HTTP 403)"
                    );
                    (why, None, None)
                } else {
                    (e.message.clone(), Some(e), None)
                }
            } else if let Some(not_started) = e.not_started() {
                // The controller took the AppInst and the site failed to make it (CreateError,
                // undone by the controller; docs/edge-connect-behaviours.md B13 for docker).
                match not_started {
                    NotStarted::PullFailed(docker) => {
                        let why = cannot_start_message(image, site, StartProblem::Image, &docker);
                        return Attempt::Failed(DeployFailure {
                            reason: self.start_failed(runner, site, "DockerPull"),
                            ..Error::failed(why).into()
                        });
                    }
                    NotStarted::Container(container, reason) => {
                        let failure = StartFailure::Container { container, reason };
                        let (why, _, label) =
                            self.start_failure_message(image, runner.memory, site, &failure);
                        (why, None, self.start_failed(runner, site, label))
                    }
                    NotStarted::Admission(refused) => {
                        (admission_refused(&refused, site), None, None)
                    }
                }
            } else if accepted && matches!(e.kind, ApiErrorKind::Rejected | ApiErrorKind::Server) {
                (e.message.clone(), None, None)
            } else {
                return Attempt::Failed(Error::from(e).into());
            };
            if accepted {
                // The refusal came as a stream result: the AppInst may exist on this site. A
                // cleanup that fails follows the refusal in the message, never replaces it.
                if let Some(cleanup) = self.clean_site(app_key, name).await {
                    // Known to stay: the rollback names it after the cause and does not ask
                    // for the delete just refused again.
                    return Attempt::Failed(DeployFailure {
                        start_failure: true,
                        reason: start_failure,
                        held: vec![Held {
                            name: name.to_string(),
                            why: cleanup,
                        }],
                        ..Error::failed(why).into()
                    });
                }
            }
            return Attempt::Refused(Refusal {
                why,
                api,
                start_failure,
                ..Refusal::default()
            });
        }
    }

    /// Records at once that the runner does not start on `site` (a cleanup follows, and GARM
    /// may kill the command during it); the metrics `label`, for the failure.
    fn start_failed(&self, runner: &Runner<'_>, site: &Placement, label: &str) -> Option<String> {
        self.metrics
            .start_failure(runner.pool_id, &site_name(site), label);
        Some(label.to_string())
    }

    /// CreateAppInst with its status lines watched; `Err` when they said the runner will not
    /// start (the stream was then closed). Refusals before the stream started (429, 5xx as the
    /// HTTP status) are repeated within the deadline: nothing was made.
    ///
    /// `failover`: a pod no node takes within the grace fails this site (another follows);
    /// otherwise it is waited for up to the deadline, and one still unplaced then fails too.
    async fn create_watching(
        &self,
        request: &NewAppInst,
        failover: bool,
    ) -> Result<Result<StreamEnd, ApiError>, StartFailure> {
        let grace = Duration::from_secs(self.config.edge_connect.start_failure_grace_secs);
        let key = &request.app_key;
        let deployment = appinst_start::deployment_name(&key.name, &key.version);
        let (mut watch, mut verdict) = start_watch(deployment, grace, failover);
        let quiet_bound = Duration::from_secs(self.config.edge_connect.request_timeout_secs);
        // One CreateAppInst, `Err` when it was refused before its stream started (429, 5xx as
        // the HTTP status): nothing was made, and it may be sent again.
        let attempt = async || {
            let heard = AtomicBool::new(false);
            let result = {
                let mut progress = |p: Progress<'_>| {
                    heard.store(true, Ordering::Relaxed);
                    self.report(p.line);
                    watch.observe(&p.pods);
                };
                let call = self.client.create_app_inst(request, &mut progress);
                // With another site to try, a site that says nothing at all within
                // request_timeout_secs is given up: the controller sends its placement lines
                // within moments (main `pkg/controller/appinst_api.go:637-771`), and only the
                // CRM's pod wait is quiet, after them.
                let silent = async {
                    if failover {
                        tokio::time::sleep(quiet_bound).await;
                        if !heard.load(Ordering::Relaxed) {
                            return;
                        }
                    }
                    std::future::pending::<()>().await
                };
                tokio::select! {
                    biased;
                    // Closing the stream makes a central CRM's controller undo the create
                    // (docs/edge-connect-behaviours.md B7); the rollback then waits for that.
                    failure = verdict.reason() => return Ok(Err(failure)),
                    () = silent => return Ok(Err(StartFailure::Silent)),
                    result = call => result,
                }
            };
            if let Some(failure) = verdict.decided() {
                return Ok(Err(failure));
            }
            Ok(match result {
                // The deadline ended the stream while no node had taken the pod.
                Err(e) if e.kind == ApiErrorKind::Transport && verdict.unplaced() => {
                    tracing::warn!(error = %e, "CreateAppInst ended with the pod still unplaced");
                    Err(StartFailure::NeverPlaced { crm_gave_up: false })
                }
                // The CRM stops waiting after 15 minutes and calls the AppInst Ready whatever
                // its pod does (B12): one no node took is no runner.
                Ok(StreamEnd::Created) if verdict.unplaced() => {
                    Err(StartFailure::NeverPlaced { crm_gave_up: true })
                }
                // Likewise a container still failing when the CRM stopped waiting.
                Ok(StreamEnd::Created) => verdict.failing().map_or(Ok(result), Err),
                Err(e) if e.is_transient() && matches!(e.answer, Answer::Status(_)) => {
                    return Err(e)
                }
                other => Ok(other),
            })
        };
        let mut again = transient(self.client.deadline(), "CreateAppInst");
        edge_connect::retry(attempt, |e, n| again(e, n).map_err(|e| Ok(Err(e))))
            .await
            .unwrap_or_else(|end| end)
    }

    /// Deletes the AppInsts that deploy the App `app_key` (found by the App, B24), those named
    /// `only` when given (one site's), treating one that Edge Connect will not delete yet as
    /// `busy` says; an AppInst named in `known_held` is not asked about again. Every AppInst is
    /// tried; the errors are joined in the order of the answer.
    pub(super) async fn remove_app_insts_of(
        &self,
        app_key: &AppKey,
        only: Option<&str>,
        known_held: &[Held],
        busy: Busy,
    ) -> Result<(), Error> {
        let mut errors = Vec::new();
        for inst in self.app_insts_of(app_key).await? {
            let name = inst.key.name.as_str();
            if only.is_some_and(|n| n != name) || known_held.iter().any(|h| h.name == name) {
                continue;
            }
            if let Err(e) = self.delete_app_inst_or_report(app_key, &inst, busy).await {
                errors.push(e.to_string());
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(Error::failed(errors.join("; "))),
        }
    }

    /// A site that did not take the runner: its AppInst (`name`) is removed if Edge Connect
    /// lets it go within [`HELD_PATIENCE`], so that the next site can be tried with the same
    /// name; why one is still held then (it is left, and the next site is tried under a second
    /// name).
    async fn clean_site(&self, app_key: &AppKey, name: &str) -> Option<Error> {
        let removed = self.remove_app_insts_of(app_key, Some(name), &[], AFTER_START_FAILURE);
        removed.await.err()
    }

    /// The message for a runner that does not start on `site`, whether it is a refusal of the
    /// site (another site may take it) rather than a failure of the runner, and its metrics
    /// label: kubelet's reason when the client knows it, else the provider's own verdict
    /// (docs/operations.md, "Metrics").
    fn start_failure_message<'a>(
        &self,
        image: Option<&str>,
        memory: Option<u64>,
        site: &Placement,
        failure: &'a StartFailure,
    ) -> (String, bool, &'a str) {
        let on = site_name(site);
        match failure {
            StartFailure::Container { container, reason } => {
                let problem = appinst_start::problem(reason);
                let message = match sidecar_message(container, site, reason) {
                    Some(message) => message,
                    // The kernel killed it at its memory limit: the limit, and what raises it.
                    None if reason == "OOMKilled" => match memory {
                        Some(mb) => format!(
                            "the runner's container ran out of its memory of {mb} MB on {on} (OOMKilled): raise extra_specs.resources.memory"
                        ),
                        None => format!(
                            "the runner's container ran out of memory on {on} (OOMKilled): give the pool more memory (extra_specs.resources.memory, or a larger flavor)"
                        ),
                    },
                    None => cannot_start_message(image, site, problem, reason),
                };
                let label = crate::metrics::kubelet_reason(reason);
                (message, problem == StartProblem::Capacity, label)
            }
            StartFailure::Unplaced => (
                format!(
                    "no node of {on} took the runner's pod within edge_connect.start_failure_grace_secs={}s (Pending (0/0))",
                    self.config.edge_connect.start_failure_grace_secs
                ),
                true,
                "Unplaced",
            ),
            StartFailure::Silent => (
                format!(
                    "{on} answered nothing to CreateAppInst within edge_connect.request_timeout_secs={}s",
                    self.config.edge_connect.request_timeout_secs
                ),
                true,
                "Silent",
            ),
            StartFailure::NeverPlaced { crm_gave_up } => {
                let bound = if *crm_gave_up {
                    "before the site's CRM stopped waiting for it".to_string()
                } else {
                    format!(
                        "within edge_connect.operation_timeout_secs={}s",
                        self.config.edge_connect.operation_timeout_secs
                    )
                };
                (
                    format!(
                        "no node of {on} took the runner's pod {bound} (Pending (0/0)): the site may be short of nodes or of room for the flavor; ask its operator, or list another site in the pool's zones"
                    ),
                    false,
                    "NeverPlaced",
                )
            }
        }
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

    /// Waits until the AppInst `name` of `app_key` is Ready; fails when it failed, is gone, or
    /// the deadline passes.
    async fn await_ready(&self, app_key: &AppKey, name: &str) -> Result<(), Error> {
        let what = format!("AppInst {name} not Ready");
        match self.settled(app_key, name, None, &what).await? {
            Some(i) if i.state == AppInstState::Ready => Ok(()),
            Some(i) => Err(Error::failed(format!(
                "AppInst {name} failed: {}",
                i.failure()
            ))),
            None => Err(Error::failed(format!(
                "AppInst {name} was not created (Edge Connect undid it)"
            ))),
        }
    }
}

/// The failure of a runner no site took: every site tried, with its cause.
fn no_site(tried: &[String]) -> Error {
    let (n, causes) = (tried.len(), tried.join("; "));
    Error::failed(format!(
        "no site could take the AppInst ({n} tried): {causes}"
    ))
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
    let on = site_name(site);
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
        StartProblem::Other => format!(
            "the container of {image} does not start on {on} ({reason}): check the image, and the pool's command, command_args and env against it"
        ),
    }
}

/// The message for the sidecar of a `dind` or `buildkit` pool (`crate::pod`) that does not
/// start, named as the runner's container is; `None` for any other container.
fn sidecar_message(container: &str, site: &Placement, reason: &str) -> Option<String> {
    let (sidecar, needs) = match container {
        crate::pod::DIND_CONTAINER => ("the Docker daemon sidecar", "a privileged container"),
        crate::pod::BUILDKIT_CONTAINER => (
            "the BuildKit sidecar",
            "unconfined seccomp and AppArmor profiles and user namespaces on the node",
        ),
        _ => return None,
    };
    let on = site_name(site);
    Some(match appinst_start::problem(reason) {
        StartProblem::Image => format!(
            "{sidecar} (container {container}) cannot pull its image on {on} ({reason}): check extra_specs.docker_image, or the site's access to docker.io"
        ),
        _ => format!(
            "{sidecar} (container {container}) does not start on {on} ({reason}): it needs {needs}; check extra_specs.docker_image, or use docker = \"none\" on this site"
        ),
    })
}

/// A create the site's admission refused because the pod asks for privileges its Pod Security
/// level forbids: the CRM saw no pod and ended with the ReplicaSet's message
/// (docs/edge-connect-behaviours.md B30, B31). Names the site, the policy and what runs there:
/// `baseline` admits neither sidecar (dind's privileged container, buildkit's Unconfined
/// profiles) but a pool without Docker; `restricted` admits no runner pod of ours.
fn admission_refused(refused: &Admission, site: &Placement) -> String {
    let (on, policy, detail) = (site_name(site), &refused.policy, &refused.detail);
    let what = match refused.forbids {
        Forbidden::Privileged => "privileged pods",
        Forbidden::Unconfined => "Unconfined seccomp and AppArmor profiles",
        Forbidden::Other => return format!(
            "{on} refused the runner's pod (Pod Security \"{policy}\": {detail}): the site's policy admits no pod of this pool; ask its operator, or list another site"
        ),
    };
    let instead = if policy.starts_with("baseline") {
        "use docker = \"none\" for this site's pools, or another site"
    } else {
        "this policy refuses a runner without Docker too; list another site"
    };
    format!(
        "{on} forbids {what} (Pod Security \"{policy}\": {detail}): neither docker = \"dind\" nor docker = \"buildkit\" can run there; {instead}"
    )
}

/// `organization/name` of a configured site.
pub(super) fn site_name(site: &Placement) -> String {
    match site {
        Placement::Zone(k) | Placement::Cloudlet(k) => format!("{}/{}", k.organization, k.name),
    }
}

/// The name of the runner's AppInst on the site at `index` (0 for the first of the pool's
/// sites, as tried): the App's name, unless an earlier site still holds an AppInst of that name
/// (`name_taken`); then the App's name and `-` and the site's position (`-2` for the second
/// site), the name cut so that the whole stays within [`MAX_NAME_LEN`] and ends without `-`.
/// A valid AppInst name (`[0-9a-zA-Z][-_0-9a-zA-Z .&,!]*`, main `api/edgeproto/objs.go:660-667`,
/// `pkg/util/validate.go:34`) whenever the App's name is one, and the same for the same pool
/// and runner every time (docs/edge-connect-behaviours.md B24).
pub(super) fn app_inst_name(app_name: &str, index: usize, name_taken: bool) -> String {
    if !name_taken {
        return app_name.to_string();
    }
    let suffix = format!("-{}", index + 1);
    let room = MAX_NAME_LEN.saturating_sub(suffix.len());
    let mut base: String = app_name.chars().take(room).collect();
    while base.ends_with('-') {
        base.pop();
    }
    format!("{base}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::naming::is_valid_key_part;

    #[test]
    fn a_second_name_only_when_the_first_is_held_and_always_valid() {
        assert_eq!(
            app_inst_name("garm-ny9heeqyw2rl", 1, false),
            "garm-ny9heeqyw2rl"
        );
        assert_eq!(
            app_inst_name("garm-ny9heeqyw2rl", 1, true),
            "garm-ny9heeqyw2rl-2"
        );
        assert_eq!(
            app_inst_name("garm-ny9heeqyw2rl", 11, true),
            "garm-ny9heeqyw2rl-12"
        );
        let long = "a".repeat(37) + "-bc";
        assert_eq!(long.len(), MAX_NAME_LEN);
        let second = app_inst_name(&long, 1, true);
        assert_eq!(second, "a".repeat(37) + "-2");
        assert!(second.len() <= MAX_NAME_LEN && is_valid_key_part(&second));
        for name in ["garm-x", &long, &"b".repeat(40)] {
            for index in 0..20 {
                let n = app_inst_name(name, index, true);
                assert!(n.len() <= MAX_NAME_LEN && is_valid_key_part(&n), "{n}");
                assert_ne!(n, name);
                assert_eq!(n, app_inst_name(name, index, true));
            }
        }
    }
}
