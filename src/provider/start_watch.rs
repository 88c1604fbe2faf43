//! Watching a CreateAppInst stream for a runner that will not start: the CRM reports every
//! change of pod state as a status line, but waits up to 15 minutes and then calls the AppInst
//! Ready whatever its pods do (docs/edge-connect-behaviours.md B12). The watch turns the lines
//! about our pod into a verdict as soon as they say enough, so that the create can end within
//! seconds of the cause instead of at the deadline.
//!
//! The rule (B22): only lines about a pod of our App's Deployment count. A container of it that
//! shows a reason other than kubelet's normal start (`ContainerCreating`, `PodInitializing`)
//! fails the create once it has shown such reasons for the grace, at once when the reason is
//! one that never clears by itself or when a reason it showed before comes back (kubelet tried
//! again and failed the same way). A pod no node has taken is no verdict of its own: a one-site
//! pool waits for it up to the deadline, a pool with more sites moves on after the grace.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use edge_connect::appinst_start::{lasting, pod_of, starting_normally, PodStatus};
use tokio::sync::watch;

/// Why the runner does not start, as the status lines said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StartFailure {
    /// A container of our pod (its name in the pod) and the reason as the platform wrote it.
    Container {
        /// The container's name.
        container: String,
        /// kubelet's reason.
        reason: String,
    },
    /// No node took our pod within the grace (only counted when another site can be tried).
    Unplaced,
    /// No node had taken our pod when the stream ended: at the deadline, or when the CRM
    /// stopped waiting and called the AppInst Ready anyway.
    NeverPlaced {
        /// The CRM ended its wait (else the deadline ended the stream).
        crm_gave_up: bool,
    },
    /// The site sent no line at all within `request_timeout_secs` (only counted when another
    /// site can be tried).
    Silent,
}

fn failure(container: &str, reason: &str) -> StartFailure {
    StartFailure::Container {
        container: container.to_string(),
        reason: reason.to_string(),
    }
}

/// What the status lines said so far.
#[derive(Debug, Clone, Default)]
struct Seen {
    verdict: Option<StartFailure>,
    /// The failure that counts once its time comes, unless a later line clears it.
    pending: Option<(StartFailure, Instant)>,
    /// The last line about our pod said no node has taken it.
    unplaced: bool,
}

/// Reads the progress lines (the writing half; it lives in the stream's progress callback).
pub(super) struct StartWatch {
    seen: watch::Sender<Seen>,
    deployment: String,
    grace: Duration,
    /// Whether a pod no node takes counts after the grace (another site can be tried).
    unplaced_counts: bool,
    /// The containers of our pod that are not starting normally, keyed by pod and container:
    /// since when, and every reason each showed since then, the one in the last line last.
    failing: HashMap<(String, String), (Instant, Vec<String>)>,
    unplaced_since: Option<Instant>,
}

/// Waits for the verdict (the reading half).
pub(super) struct Verdict {
    seen: watch::Receiver<Seen>,
}

/// A watch of the pods of `deployment` and its verdict; `grace` is
/// `edge_connect.start_failure_grace_secs`; `unplaced_counts` makes a pod that no node takes
/// within the grace a failure.
pub(super) fn start_watch(
    deployment: String,
    grace: Duration,
    unplaced_counts: bool,
) -> (StartWatch, Verdict) {
    let (tx, rx) = watch::channel(Seen::default());
    (
        StartWatch {
            seen: tx,
            deployment,
            grace,
            unplaced_counts,
            failing: HashMap::new(),
            unplaced_since: None,
        },
        Verdict { seen: rx },
    )
}

impl StartWatch {
    /// Takes the pods of one status line of the stream.
    pub(super) fn observe(&mut self, pods: &[PodStatus<'_>]) {
        let now = Instant::now();
        let mut ours = pods
            .iter()
            .filter(|p| pod_of(p.pod, &self.deployment))
            .peekable();
        if ours.peek().is_none() {
            return;
        }
        let (mut verdict, mut unplaced) = (None, false);
        for pod in ours {
            if pod.unscheduled() {
                unplaced = true;
                continue;
            }
            let failing = |(_, reason): &&(&str, &str)| !starting_normally(reason);
            // A container missing from the line runs; one starting normally is on its way.
            self.failing.retain(|(p, c), _| {
                p != pod.pod || pod.not_running.iter().filter(failing).any(|(n, _)| n == c)
            });
            for &(container, reason) in pod.not_running.iter().filter(failing) {
                let key = (pod.pod.to_string(), container.to_string());
                let (_, shown) = self.failing.entry(key).or_insert((now, Vec::new()));
                let new = shown.last().is_none_or(|last| last != reason);
                // A reason shown before is back: kubelet tried again, failing the same way.
                let again = new && shown.iter().any(|r| r == reason);
                if new {
                    shown.push(reason.to_string());
                }
                if again || lasting(reason) {
                    verdict.get_or_insert_with(|| failure(container, reason));
                }
            }
        }
        self.unplaced_since = unplaced.then(|| self.unplaced_since.unwrap_or(now));
        let unplaced_since = self.unplaced_since.filter(|_| self.unplaced_counts);
        // The earliest failure counts first; a failing container before an unplaced pod.
        let pending = (self.failing.iter())
            .map(|((_, c), (since, shown))| (failure(c, shown.last().map_or("", |r| r)), *since))
            .chain(unplaced_since.map(|since| (StartFailure::Unplaced, since)))
            .min_by_key(|(_, since)| *since)
            .map(|(failure, since)| (failure, since + self.grace));
        self.seen.send_modify(|s| {
            if s.verdict.is_none() {
                s.verdict = verdict;
            }
            s.pending = pending;
            s.unplaced = unplaced;
        });
    }
}

impl Verdict {
    /// The reason the runner will not start, once known: at once for a lasting or repeated
    /// reason, after the grace for one that did not clear. Never resolves while nothing is
    /// wrong.
    pub(super) async fn reason(&mut self) -> StartFailure {
        loop {
            let seen = self.seen.borrow_and_update().clone();
            if let Some(failure) = seen.verdict {
                return failure;
            }
            let pending = (seen.pending).map(|(failure, until)| async move {
                tokio::time::sleep_until(until.into()).await;
                failure
            });
            // Once the stream has ended, its outcome (and `decided`) tells; a pending failure
            // still counts when its time comes.
            tokio::select! {
                Ok(()) = self.seen.changed() => {}
                Some(failure) = futures_util::future::OptionFuture::from(pending) => return failure,
                else => std::future::pending().await,
            }
        }
    }

    /// A verdict reached so far, if any (for a stream that ended at the same moment).
    pub(super) fn decided(&self) -> Option<StartFailure> {
        self.seen.borrow().verdict.clone()
    }

    /// A container of our pod that was not starting normally when the last line came, if any
    /// (for a stream that ended before its grace passed).
    pub(super) fn failing(&self) -> Option<StartFailure> {
        match self.seen.borrow().pending.clone() {
            Some((failure @ StartFailure::Container { .. }, _)) => Some(failure),
            _ => None,
        }
    }

    /// True when the last line about our pod said that no node has taken it.
    pub(super) fn unplaced(&self) -> bool {
        self.seen.borrow().unplaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use edge_connect::appinst_start::pod_statuses;

    impl StartWatch {
        /// Takes a line as the client reads it.
        fn see(&mut self, line: &str) {
            self.observe(&pod_statuses(line));
        }
    }

    const DEPLOYMENT: &str = "r1-deployment";
    const PULL: &str =
        "Status: pod r1-deployment-6d4f9-x7k2p: Pending (0/1), container r1: ErrImagePull";
    const BACKOFF: &str =
        "Status: pod r1-deployment-6d4f9-x7k2p: Pending (0/1), container r1: ImagePullBackOff";
    const CREATING: &str =
        "Status: pod r1-deployment-6d4f9-x7k2p: Pending (0/1), container r1: ContainerCreating";
    const UNPLACED: &str = "Status: pod r1-deployment-6d4f9-x7k2p: Pending (0/0), ";

    fn new_watch(grace_ms: u64, unplaced_counts: bool) -> (StartWatch, Verdict) {
        start_watch(
            DEPLOYMENT.to_string(),
            Duration::from_millis(grace_ms),
            unplaced_counts,
        )
    }

    fn pending(verdict: &Verdict) -> Option<StartFailure> {
        verdict.seen.borrow().pending.clone().map(|(r, _)| r)
    }

    fn container(reason: &str) -> StartFailure {
        failure("r1", reason)
    }

    #[tokio::test]
    async fn a_back_off_is_a_verdict_at_once() {
        let (mut watch, mut verdict) = new_watch(3_600_000, false);
        watch.see(CREATING);
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        watch.see(BACKOFF);
        assert_eq!(verdict.reason().await, container("ImagePullBackOff"));
    }

    #[tokio::test]
    async fn any_other_reason_counts_after_the_grace_or_when_it_comes_back() {
        for reason in [
            "ErrImagePull",
            "RunContainerError",
            "RegistryUnavailable",
            "Error",
        ] {
            let line = PULL.replace("ErrImagePull", reason);
            let (mut watch, mut verdict) = new_watch(50, false);
            let started = Instant::now();
            watch.see(&line);
            assert_eq!(verdict.decided(), None, "{reason}");
            assert_eq!(verdict.reason().await, container(reason));
            assert!(started.elapsed() >= Duration::from_millis(50));
        }
        // Error, then something else, then Error again: it keeps terminating.
        let (mut watch, verdict) = new_watch(3_600_000, false);
        let error = PULL.replace("ErrImagePull", "Error");
        watch.see(&error);
        watch.see(&PULL.replace("ErrImagePull", "Completed"));
        assert_eq!(verdict.decided(), None);
        watch.see(&error);
        assert_eq!(verdict.decided(), Some(container("Error")));
    }

    #[test]
    fn lines_about_another_pod_do_not_count() {
        let (mut watch, verdict) = new_watch(3_600_000, true);
        for other in [
            "r11-deployment-6d4f9-x7k2p",
            "x-6d4f9-x7k2p",
            "r1-deployment-6d4f9",
        ] {
            watch.see(&BACKOFF.replace("r1-deployment-6d4f9-x7k2p", other));
            watch.see(&UNPLACED.replace("r1-deployment-6d4f9-x7k2p", other));
        }
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        let both = format!(
            "{}; {}",
            BACKOFF.replace("r1-deployment-6d4f9-x7k2p", "other-1-2"),
            &CREATING["Status: ".len()..]
        );
        watch.see(&both);
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
    }

    #[test]
    fn an_unplaced_pod_counts_only_where_another_site_can_be_tried() {
        let (mut watch, verdict) = new_watch(30_000, false);
        watch.see(UNPLACED);
        assert_eq!(pending(&verdict), None);
        assert!(verdict.unplaced());
        let (mut watch, verdict) = new_watch(30_000, true);
        watch.see(UNPLACED);
        assert_eq!(pending(&verdict), Some(StartFailure::Unplaced));
        watch.see(CREATING);
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        assert!(!verdict.unplaced());
    }

    #[test]
    fn a_container_that_starts_normally_again_is_forgiven() {
        let (mut watch, verdict) = new_watch(30_000, false);
        watch.see(PULL);
        assert_eq!(pending(&verdict), Some(container("ErrImagePull")));
        watch.see(CREATING);
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        watch.see(PULL);
        watch.see("Status: pod r1-deployment-6d4f9-x7k2p: Running (1/1), ");
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        // Progress lines that are not pod statuses change nothing.
        watch.see(PULL);
        watch.see("Creating App Inst");
        assert_eq!(pending(&verdict), Some(container("ErrImagePull")));
    }
}
