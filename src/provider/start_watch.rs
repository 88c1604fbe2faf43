//! Watching a CreateAppInst stream for a runner that will not start: the CRM reports every
//! change of pod state as a status line, but waits up to 15 minutes and then calls the AppInst
//! Ready whatever its pods do (docs/edge-connect-behaviours.md B12). The watch turns the lines
//! that name such a reason into a verdict as soon as they come, so that the create can end
//! within seconds of the cause instead of at the deadline.

use std::time::{Duration, Instant};

use edge_connect::appinst_start::{pod_reasons, pod_unscheduled, StartReason};
use tokio::sync::watch;

/// What the status lines said so far.
#[derive(Debug, Clone, Default)]
struct Seen {
    /// A reason that will not clear without a change.
    verdict: Option<StartReason>,
    /// A reason that may clear by itself, and until when it may.
    pending: Option<(StartReason, Instant)>,
}

/// Reads the progress lines (the writing half; it lives in the stream's progress callback).
pub(super) struct StartWatch {
    seen: watch::Sender<Seen>,
    /// A failed pull was seen since the pods last moved on.
    failed_pull: bool,
    grace: Duration,
}

/// Waits for the verdict (the reading half).
pub(super) struct Verdict {
    seen: watch::Receiver<Seen>,
}

/// A watch and its verdict; `grace` is how long a reason that may clear by itself
/// (`edge_connect.start_failure_grace_secs`) is given before it counts.
pub(super) fn start_watch(grace: Duration) -> (StartWatch, Verdict) {
    let (tx, rx) = watch::channel(Seen::default());
    (
        StartWatch {
            seen: tx,
            failed_pull: false,
            grace,
        },
        Verdict { seen: rx },
    )
}

impl StartWatch {
    /// Takes one progress line of the stream.
    pub(super) fn observe(&mut self, message: &str) {
        let reasons = pod_reasons(message);
        if pod_unscheduled(message) {
            // No node has taken the pod yet: normal for a moment, a full site if it lasts.
            self.wait_for(StartReason::Unschedulable);
        } else if reasons.is_empty() {
            if message.starts_with("Status: ") {
                // The pods moved on to a state that names no failure: what was waited on
                // cleared.
                self.failed_pull = false;
                self.seen.send_modify(|s| s.pending = None);
            }
            return;
        }
        for reason in reasons {
            // Kubelet retries a failed pull; a second failure is no hiccup.
            if reason.transient() && !self.failed_pull {
                self.failed_pull = true;
                self.wait_for(reason);
            } else {
                self.decide(reason);
            }
        }
    }

    /// Gives a reason that may clear by itself the grace, from its first sighting.
    fn wait_for(&self, reason: StartReason) {
        let until = Instant::now() + self.grace;
        self.seen.send_modify(|s| {
            s.pending.get_or_insert((reason, until));
        });
    }

    fn decide(&self, reason: StartReason) {
        self.seen.send_modify(|s| {
            s.verdict.get_or_insert(reason);
        });
    }
}

impl Verdict {
    /// The reason the runner will not start, once known: at once for a lasting reason, after
    /// the grace for one that did not clear. Never resolves while nothing is wrong.
    pub(super) async fn reason(&mut self) -> StartReason {
        loop {
            let seen = self.seen.borrow_and_update().clone();
            if let Some(reason) = seen.verdict {
                return reason;
            }
            match seen.pending {
                Some((reason, until)) => {
                    tokio::select! {
                        changed = self.seen.changed() => {
                            if changed.is_err() {
                                // The stream ended; its outcome (and `decided`) will tell.
                                std::future::pending::<()>().await;
                            }
                        }
                        _ = tokio::time::sleep_until(until.into()) => return reason,
                    }
                }
                None => {
                    if self.seen.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// A lasting reason seen so far, if any (for a stream that ended at the same moment).
    pub(super) fn decided(&self) -> Option<StartReason> {
        self.seen.borrow().verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PULL: &str = "Status: pod r-1: Pending (0/1), container r: ErrImagePull";
    const BACKOFF: &str = "Status: pod r-1: Pending (0/1), container r: ImagePullBackOff";
    const CREATING: &str = "Status: pod r-1: Pending (0/1), container r: ContainerCreating";

    fn pending(verdict: &Verdict) -> Option<StartReason> {
        verdict.seen.borrow().pending.map(|(r, _)| r)
    }

    #[tokio::test]
    async fn a_back_off_is_a_verdict_at_once() {
        let (mut watch, mut verdict) = start_watch(Duration::from_secs(3600));
        watch.observe(CREATING);
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        watch.observe(BACKOFF);
        assert_eq!(verdict.reason().await, StartReason::ImagePullBackOff);
        assert_eq!(verdict.decided(), Some(StartReason::ImagePullBackOff));
    }

    #[tokio::test]
    async fn a_failed_pull_counts_when_it_repeats_or_outlasts_the_grace() {
        let grace = Duration::from_millis(50);
        let (mut watch, mut verdict) = start_watch(grace);
        let started = Instant::now();
        watch.observe(PULL);
        assert_eq!(verdict.decided(), None);
        assert_eq!(pending(&verdict), Some(StartReason::ErrImagePull));
        assert_eq!(verdict.reason().await, StartReason::ErrImagePull);
        assert!(started.elapsed() >= grace);

        let (mut watch, mut verdict) = start_watch(Duration::from_secs(3600));
        watch.observe(PULL);
        watch.observe(PULL);
        assert_eq!(verdict.decided(), Some(StartReason::ErrImagePull));
        assert_eq!(verdict.reason().await, StartReason::ErrImagePull);
    }

    #[test]
    fn a_pod_that_stays_unscheduled_counts_after_the_grace_unless_it_is_placed() {
        let (mut watch, verdict) = start_watch(Duration::from_secs(30));
        watch.observe("Status: pod r-1: Pending (0/0), ");
        assert_eq!(pending(&verdict), Some(StartReason::Unschedulable));
        watch.observe(CREATING);
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
    }

    #[test]
    fn a_pull_that_clears_is_forgiven() {
        let (mut watch, verdict) = start_watch(Duration::from_secs(30));
        watch.observe(PULL);
        watch.observe("Status: pod r-1: Running (1/1), ");
        assert_eq!((verdict.decided(), pending(&verdict)), (None, None));
        // Progress lines that are not pod statuses change nothing.
        watch.observe(PULL);
        watch.observe("Creating App Inst");
        assert_eq!(pending(&verdict), Some(StartReason::ErrImagePull));
    }
}
