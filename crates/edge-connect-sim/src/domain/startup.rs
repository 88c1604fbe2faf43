//! How an edge site starts the container of a new AppInst, as far as the client can see it:
//! the status lines the CRM sends while it waits for a Kubernetes pod (docs/edge-connect-behaviours.md
//! B12), and the error of a docker image that cannot be pulled (B13).
//!
//! Kubernetes (main `pkg/k8smgmt/appinst.go`): after `kubectl apply` the CRM polls the pods
//! every 2 s (`:325`) and, whenever their summary changed, sends `Status: ` and the pods'
//! summaries joined by `; ` (`:310-313`), each `pod <name>: <phase> (<running>/<containers>),
//! <container reasons>` with the reasons `container <name>: <reason>` of the containers not
//! running (`:148-180`). It stops waiting when every container runs, fails only for a container
//! reason `Unschedulable` (`:169-171, 221-223`), and after `maxWait` (15 min, `:42`) gives up
//! waiting *without an error* (`:319-323`): the AppInst becomes Ready although its pod never
//! ran. Each line reaches the CreateAppInst stream unchanged: `SendStatus` → `SetTask` appends
//! it to `AppInstInfo.Status.Msgs` (`api/edgeproto/appinst.pb.go:9527-9541`,
//! `status_info.go:53-69`), and the controller sends every new message as a `Result`
//! (`appinst.pb.go:9704-9708` for CRMs on the edge, `pkg/cloudcommon/grpc.go:176-194` for the
//! central one), which the MC writes as `{"data":{"message":…}}` (c39 `pkg/mc/orm/appinst.mc2.go:66-70`,
//! `server.go:1444-1466`).
//!
//! What the pods report follows the kubelet: an image pull is retried after a back-off of
//! 10 s that doubles up to 300 s (kubernetes `pkg/kubelet/kubelet.go`: `backOffPeriod`,
//! `MaxContainerBackOff`), showing `ErrImagePull` after each failed attempt and
//! `ImagePullBackOff` while it waits; a crashing container shows `Error` (its terminated
//! reason) and then `CrashLoopBackOff` on the same back-off, in pod phase `Running`. An
//! unschedulable pod gets no container statuses at all: the scheduler writes `Unschedulable`
//! into the pod's `PodScheduled` condition, not into a container (kubernetes
//! `staging/src/k8s.io/api/core/v1/types.go`, `PodReasonUnschedulable`), so the CRM's check for
//! that container reason never fires and it reports `pod <name>: Pending (0/0), ` until
//! `maxWait`. Which of these states a 2 s poll sees first is a matter of timing (a pod may be
//! seen before its containers, `(0/0)`, or not at all, `no pods found`); the simulator sends
//! the usual sequence. A crashing container that a poll catches running ends the real wait
//! early with Ready; the simulator's crashes are never caught running. A container that waits
//! with another reason ([`ImageFault::Waits`]) shows it once and keeps it, as does one seen
//! terminated at every poll ([`ImageFault::Terminates`], `Error`); a pod scheduled late
//! ([`ImageFault::ScheduledAfter`]) shows `(0/0)` until a node takes it.

use std::time::Duration;

use crate::config::{ImageFault, CRM_MAX_WAIT};

/// One status line the CRM sends, `after` the previous one (or the start of the wait).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodStatus {
    /// Time since the previous line.
    pub after: Duration,
    /// The message, as the stream carries it.
    pub line: String,
}

/// The CRM's wait for the pod of a new Kubernetes AppInst.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodWait {
    /// Status lines in order.
    pub lines: Vec<PodStatus>,
    /// The time from the last line until the AppInst becomes Ready: for a pod that never
    /// runs, until the CRM stops waiting; for one scheduled late, until its next poll. `None`
    /// for a pod that starts at once (its line is timed like every other progress line).
    pub gives_up_after: Option<Duration>,
    /// A wait that ends in an error: after the lines and this pause, the CRM fails the create
    /// with the message.
    pub fails_with: Option<(Duration, String)>,
}

/// The kubelet's first back-off and its limit (kubernetes `pkg/kubelet/kubelet.go`).
const BACK_OFF: u64 = 10;
const MAX_BACK_OFF: u64 = 300;
/// The CRM's poll interval (main `pkg/k8smgmt/appinst.go:325`).
const POLL: u64 = 2;

fn status(
    pod: &str,
    phase: &str,
    running: usize,
    total: usize,
    reason: Option<(&str, &str)>,
) -> String {
    let reasons = reason
        .map(|(container, why)| format!("container {container}: {why}"))
        .unwrap_or_default();
    format!("Status: pod {pod}: {phase} ({running}/{total}), {reasons}")
}

/// The line of a pod whose containers are all being created: every container is listed, as
/// none runs yet (main `pkg/k8smgmt/appinst.go:158-175`).
fn creating(pod: &str, containers: &[&str]) -> String {
    let reasons: Vec<String> = containers
        .iter()
        .map(|c| format!("container {c}: ContainerCreating"))
        .collect();
    format!(
        "Status: pod {pod}: Pending (0/{}), {}",
        containers.len(),
        reasons.join(", ")
    )
}

/// The wait for a pod named `pod` with `containers`: `fault` `None` for images that start
/// (the pod is seen creating once, then runs), or how the container `containers[failing]`
/// fails while the others run. Real seconds are scaled by `max_wait / CRM_MAX_WAIT`.
pub(crate) fn pod_wait(
    fault: Option<ImageFault>,
    pod: &str,
    containers: &[&str],
    failing: usize,
    max_wait: Duration,
) -> PodWait {
    let total = containers.len();
    let container = containers.get(failing).copied().unwrap_or_default();
    let others = total.saturating_sub(1);
    let creating = creating(pod, containers);
    // (seconds since the start of the wait, line) in real time.
    let mut timeline: Vec<(u64, String)> = vec![(0, creating)];
    let retrying = match fault {
        None => {
            return PodWait {
                lines: vec![PodStatus {
                    after: Duration::ZERO,
                    line: timeline.remove(0).1,
                }],
                gives_up_after: None,
                fails_with: None,
            }
        }
        Some(ImageFault::Unschedulable) => {
            timeline = vec![(0, status(pod, "Pending", 0, 0, None))];
            None
        }
        Some(ImageFault::Waits(reason)) => {
            timeline.push((
                POLL,
                status(pod, "Pending", others, total, Some((container, reason))),
            ));
            None
        }
        // Seen terminated at every poll: the summary never changes again, and the CRM sends a
        // line only when it does (main `pkg/k8smgmt/appinst.go:163-167, 191`).
        Some(ImageFault::Terminates) => {
            timeline.push((
                POLL,
                status(pod, "Running", others, total, Some((container, "Error"))),
            ));
            None
        }
        Some(ImageFault::ScheduledAfter(delay)) => {
            // Seen unplaced at the first poll, created once a node took it, running at the
            // poll after (the CRM then stops waiting).
            let creating = timeline.remove(0).1;
            return PodWait {
                lines: vec![
                    PodStatus {
                        after: Duration::ZERO,
                        line: status(pod, "Pending", 0, 0, None),
                    },
                    PodStatus {
                        after: delay,
                        line: creating,
                    },
                ],
                gives_up_after: Some(Duration::from_secs(POLL)),
                fails_with: None,
            };
        }
        Some(ImageFault::CannotPull) => Some(("Pending", "ErrImagePull", "ImagePullBackOff")),
        Some(ImageFault::Crashes) => Some(("Running", "Error", "CrashLoopBackOff")),
    };
    let limit = CRM_MAX_WAIT.as_secs();
    if let Some((phase, failed, backing_off)) = retrying {
        let mut at = POLL;
        let mut back_off = BACK_OFF;
        while at < limit {
            timeline.push((
                at,
                status(pod, phase, others, total, Some((container, failed))),
            ));
            if at + POLL < limit {
                timeline.push((
                    at + POLL,
                    status(pod, phase, others, total, Some((container, backing_off))),
                ));
            }
            at += POLL + back_off;
            back_off = (back_off * 2).min(MAX_BACK_OFF);
        }
    }
    let scale = |secs: u64| max_wait.mul_f64(secs as f64 / limit as f64);
    let mut previous = 0;
    let lines = timeline
        .into_iter()
        .map(|(at, line)| {
            let after = scale(at - previous);
            previous = at;
            PodStatus { after, line }
        })
        .collect();
    PodWait {
        lines,
        gives_up_after: Some(scale(limit - previous)),
        fails_with: None,
    }
}

/// The CRM's wait for a pod the site's admission refuses: no pod is ever seen, and after
/// `createWaitNoResources` (10 s, main `pkg/k8smgmt/appinst.go:48, 203-216`, scaled like the
/// other times of the wait) the create fails with the ReplicaSet's last condition
/// (`:231-256`), which the CRM prefixes as every failure of the create
/// (`pkg/crmutil/controller-data.go:488`).
pub(crate) fn refused_pod(replicaset: &str, admission: &str, max_wait: Duration) -> PodWait {
    let scale = max_wait.mul_f64(10.0 / CRM_MAX_WAIT.as_secs() as f64);
    PodWait {
        lines: vec![PodStatus {
            after: Duration::ZERO,
            line: "Status: no pods found".into(),
        }],
        gives_up_after: Some(Duration::ZERO),
        fails_with: Some((
            scale,
            format!(
                "Create App Inst failed: no pods found, replicaset statuses: {replicaset}: {admission}"
            ),
        )),
    }
}

/// Why a docker AppInst's create fails for an image that cannot be pulled. Docker AppInsts
/// run on VM-based sites, whose CRM pulls the image before `docker run`
/// (main `pkg/platform/common/vmlayer/appinst.go:584`, `WithForceImagePull(true)`), and fails
/// with `error pulling docker image: <image>, <output>, <error>`
/// (`pkg/dockermgmt/dockerapp.go:427-434`); the output is trimmed and the error is the SSH
/// exit status (edgexr/golang-ssh `client.go:56-69, 543-544`). The daemon's words depend on
/// why the pull failed; here they are those for a tag the registry does not have. The CRM
/// adds `Create App Inst failed: ` (main `pkg/crmutil/controller-data.go:488`).
pub(crate) fn docker_pull_error(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    let (shown, note) = if last.contains(':') || last.contains('@') {
        (image.to_string(), "")
    } else {
        (format!("{image}:latest"), "Using default tag: latest\n")
    };
    format!(
        "error pulling docker image: {image}, {note}Error response from daemon: manifest for {shown} not found: manifest unknown: manifest unknown, Process exited with status 1"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpullable_image_alternates_until_the_wait_ends() {
        let wait = pod_wait(Some(ImageFault::CannotPull), "p", &["c"], 0, CRM_MAX_WAIT);
        let lines: Vec<&str> = wait.lines.iter().map(|l| l.line.as_str()).collect();
        assert_eq!(
            lines[0],
            "Status: pod p: Pending (0/1), container c: ContainerCreating"
        );
        assert_eq!(
            lines[1],
            "Status: pod p: Pending (0/1), container c: ErrImagePull"
        );
        assert_eq!(
            lines[2],
            "Status: pod p: Pending (0/1), container c: ImagePullBackOff"
        );
        assert_eq!(lines[3], lines[1]);
        let afters: Vec<u64> = wait.lines.iter().map(|l| l.after.as_secs()).collect();
        assert_eq!(&afters[..7], [0, 2, 2, 10, 2, 20, 2]);
        let total: Duration =
            wait.lines.iter().map(|l| l.after).sum::<Duration>() + wait.gives_up_after.unwrap();
        assert_eq!(total, CRM_MAX_WAIT);
    }

    #[test]
    fn times_scale_with_the_wait() {
        let wait = pod_wait(
            Some(ImageFault::Crashes),
            "p",
            &["c"],
            0,
            Duration::from_secs(9),
        );
        assert_eq!(wait.lines[1].after, Duration::from_millis(20));
        assert_eq!(
            wait.lines[1].line,
            "Status: pod p: Running (0/1), container c: Error"
        );
        let total: Duration =
            wait.lines.iter().map(|l| l.after).sum::<Duration>() + wait.gives_up_after.unwrap();
        assert!(total.abs_diff(Duration::from_secs(9)) < Duration::from_millis(1));
    }

    #[test]
    fn a_container_seen_terminated_at_every_poll_is_reported_once() {
        let wait = pod_wait(Some(ImageFault::Terminates), "p", &["c"], 0, CRM_MAX_WAIT);
        let lines: Vec<&str> = wait.lines.iter().map(|l| l.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "Status: pod p: Pending (0/1), container c: ContainerCreating",
                "Status: pod p: Running (0/1), container c: Error"
            ]
        );
        assert_eq!(
            wait.gives_up_after,
            Some(CRM_MAX_WAIT - Duration::from_secs(POLL))
        );
    }

    #[test]
    fn an_unschedulable_pod_has_no_containers() {
        let wait = pod_wait(
            Some(ImageFault::Unschedulable),
            "p",
            &["c"],
            0,
            CRM_MAX_WAIT,
        );
        assert_eq!(wait.lines.len(), 1);
        assert_eq!(wait.lines[0].line, "Status: pod p: Pending (0/0), ");
        assert_eq!(wait.gives_up_after, Some(CRM_MAX_WAIT));
        let runs = pod_wait(None, "p", &["c"], 0, CRM_MAX_WAIT);
        assert_eq!(runs.lines.len(), 1);
        assert_eq!(runs.gives_up_after, None);
    }

    #[test]
    fn a_waiting_reason_stays_and_a_late_pod_starts() {
        let wait = pod_wait(
            Some(ImageFault::Waits("RunContainerError")),
            "p",
            &["c"],
            0,
            CRM_MAX_WAIT,
        );
        let lines: Vec<&str> = wait.lines.iter().map(|l| l.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "Status: pod p: Pending (0/1), container c: ContainerCreating",
                "Status: pod p: Pending (0/1), container c: RunContainerError"
            ]
        );
        assert_eq!(
            wait.gives_up_after,
            Some(CRM_MAX_WAIT - Duration::from_secs(POLL))
        );
        let late = Duration::from_secs(8);
        let wait = pod_wait(
            Some(ImageFault::ScheduledAfter(late)),
            "p",
            &["c"],
            0,
            CRM_MAX_WAIT,
        );
        assert_eq!(wait.lines[0].line, "Status: pod p: Pending (0/0), ");
        assert_eq!(wait.lines[1].after, late);
        assert_eq!(wait.gives_up_after, Some(Duration::from_secs(2)));
    }

    #[test]
    fn a_line_lists_every_container_that_does_not_run() {
        let wait = pod_wait(
            Some(ImageFault::Crashes),
            "p",
            &["runner", "dind"],
            1,
            CRM_MAX_WAIT,
        );
        let lines: Vec<&str> = wait.lines.iter().take(3).map(|l| l.line.as_str()).collect();
        assert_eq!(
            lines,
            [
                "Status: pod p: Pending (0/2), container runner: ContainerCreating, container dind: ContainerCreating",
                "Status: pod p: Running (1/2), container dind: Error",
                "Status: pod p: Running (1/2), container dind: CrashLoopBackOff",
            ]
        );
    }

    #[test]
    fn docker_pull_errors_name_the_image() {
        assert_eq!(
            docker_pull_error("reg.example.com:5000/ci/r"),
            "error pulling docker image: reg.example.com:5000/ci/r, Using default tag: latest\nError response from daemon: manifest for reg.example.com:5000/ci/r:latest not found: manifest unknown: manifest unknown, Process exited with status 1"
        );
        assert!(docker_pull_error("ci/r:13").contains("manifest for ci/r:13 not found"));
    }
}
