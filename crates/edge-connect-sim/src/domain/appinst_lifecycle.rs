//! AppInst operations (create, delete) as state machines running in their own task: they
//! move the instance through its states (docs/edge-connect-behaviours.md B17), emit progress
//! lines, and apply injected stream faults. The HTTP stream only observes them, so an
//! operation finishes even when the client goes away.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;

use super::startup::PodWait;
use crate::faults::StreamFault;
use crate::lock;
use crate::model::enums::{HealthCheck, TrackedState};
use crate::model::store::State;
use crate::model::{key_json, AppInstKey};
use crate::protocol::capitalize;
use crate::protocol::stream::StreamEvent;

/// Which operation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// CreateAppInst: CreateRequested → Creating → Ready.
    Create,
    /// DeleteAppInst: DeletePrepare → DeleteRequested → Deleting → gone.
    Delete,
}

/// What a step does to the stored instance.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    /// Nothing (progress text only); the instance must still exist.
    Keep,
    /// Move to a state.
    State(TrackedState),
    /// Fail into an error state with this error.
    Error(TrackedState, String),
    /// Become Ready.
    Ready,
    /// Remove the instance.
    Remove,
}

impl Action {
    /// Steps that complete the operation; a failing or timing-out run stops before them.
    fn completes(&self) -> bool {
        matches!(self, Action::Ready | Action::Remove)
    }
}

#[derive(Clone, Debug)]
struct Step {
    action: Action,
    line: Option<String>,
    /// Time before the step; `None` takes an equal share of `SimConfig::create_delay`.
    wait: Option<Duration>,
}

fn step(action: Action, line: Option<&str>) -> Step {
    Step {
        action,
        line: line.map(str::to_string),
        wait: None,
    }
}

/// The lines before the site's CRM takes over a create; a CRM failure comes after them.
const CREATE_LINES_BEFORE_CRM: usize = 5;

/// A create: placement, the CRM's work, for Kubernetes its wait for the pod, then Ready.
fn create_steps(pod_wait: Option<&PodWait>) -> Vec<Step> {
    let mut steps = vec![
        step(
            Action::Keep,
            Some("Found 1 potential cloudlets for deployment"),
        ),
        step(
            Action::Keep,
            Some("Found 1 potential clusters for deployment"),
        ),
        step(
            Action::Keep,
            Some("Chose multi-tenant cluster defaultmt to deploy AppInst"),
        ),
        step(Action::State(TrackedState::Creating), Some("Creating")),
        step(Action::Keep, Some("Creating App Inst")),
    ];
    let mut ready = step(Action::Ready, Some("Ready"));
    if let Some(wait) = pod_wait {
        // A pod that starts is seen once on its way (timed like the other lines); one that
        // does not is timed by the CRM's wait (`domain::startup`).
        let timed = wait.gives_up_after.is_some();
        for status in &wait.lines {
            let mut s = step(Action::Keep, Some(&status.line));
            s.wait = timed.then_some(status.after);
            steps.push(s);
        }
        ready.wait = wait.gives_up_after;
        if let Some((pause, _)) = &wait.fails_with {
            // Silent: the CRM's last wait before it fails the create (`Op::spawn`).
            let mut s = step(Action::Keep, None);
            s.wait = Some(*pause);
            steps.push(s);
        }
    }
    steps.push(ready);
    steps.push(step(Action::Keep, Some("Created AppInst successfully")));
    steps
}

fn delete_steps() -> Vec<Step> {
    vec![
        step(Action::State(TrackedState::DeleteRequested), None),
        step(Action::State(TrackedState::Deleting), Some("Deleting")),
        step(Action::Remove, Some("Deleted AppInst successfully")),
    ]
}

/// The undo after a failure (`Deleting AppInst due to failure`, ...). A failure the site's
/// CRM reports first shows the state it sent, `CreateError`, as a message (main
/// `pkg/crmutil/controller-data.go:488-489`: `SendState(CREATE_ERROR)` adds the state's name to
/// the status messages, which the controller forwards before it returns the error,
/// `api/edgeproto/appinst.pb.go:9704-9716`); the controller then undoes the create
/// (`pkg/controller/appinst_api.go:1336-1338`).
fn failure_steps(kind: OpKind, message: &str, leave_create_error: bool, by_crm: bool) -> Vec<Step> {
    let err = |state| Action::Error(state, message.to_string());
    match kind {
        OpKind::Create if leave_create_error => vec![step(err(TrackedState::CreateError), None)],
        OpKind::Create => {
            let mut steps = if by_crm {
                vec![
                    step(err(TrackedState::CreateError), Some("CreateError")),
                    step(Action::Keep, Some("Deleting AppInst due to failure")),
                ]
            } else {
                vec![step(
                    err(TrackedState::CreateError),
                    Some("Deleting AppInst due to failure"),
                )]
            };
            steps.push(step(
                Action::State(TrackedState::Deleting),
                Some("Deleting"),
            ));
            steps.push(step(Action::Remove, Some("Deleted AppInst successfully")));
            steps
        }
        OpKind::Delete => vec![
            step(
                err(TrackedState::DeleteError),
                Some("Recreating AppInst due to failure"),
            ),
            step(Action::State(TrackedState::Creating), Some("Creating")),
            step(Action::Ready, Some("Ready")),
        ],
    }
}

/// One operation on one instance, ready to run.
pub(crate) struct Op {
    /// The simulator's store.
    pub state: Arc<Mutex<State>>,
    /// Total duration of the untimed steps (`SimConfig::create_delay`).
    pub duration: Duration,
    /// Turns true when the simulator stops.
    pub shutdown: watch::Receiver<bool>,
    /// The instance.
    pub key: AppInstKey,
    /// State epoch when the operation started (a reset stops it).
    pub epoch: u64,
    /// The operation.
    pub kind: OpKind,
    /// An injected stream fault, if any.
    pub fault: Option<StreamFault>,
    /// Why the site's CRM fails the create, if it does (`Create App Inst failed: …`).
    pub crm_error: Option<String>,
    /// The CRM's wait for the pod (Kubernetes creates).
    pub pod_wait: Option<PodWait>,
    /// Container id the instance reports once Ready (creates).
    pub container_id: String,
    /// The site's CRM runs centrally, so the controller works under the request's context: a
    /// create whose client leaves before it completes is undone (main
    /// `pkg/controller/appinst_api.go:1293-1341`: the platform stream is cancelled, the error
    /// leads to "Deleting AppInst due to failure" and the undo delete). With the CRM on the
    /// edge site the controller only waits for it, and the work goes on
    /// (`api/edgeproto/appinst.pb.go:9724-9734`). See docs/edge-connect-behaviours.md B7.
    pub undo_on_disconnect: bool,
}

/// The error a create records when its client left: what Go's cancelled context says (the
/// exact text the CCRM stream returns is not in the public source; the instance is removed
/// by the undo either way).
const CLIENT_LEFT: &str = "context canceled";

/// The error a create on a central-CRM site fails with when the request's deadline passes
/// (Go's `context.DeadlineExceeded`; any prefix added on the way is not in the public source).
const DEADLINE: &str = "context deadline exceeded";

impl Op {
    /// Runs the operation in its own task; the receiver yields what the client should see.
    pub(crate) fn spawn(mut self) -> UnboundedReceiver<StreamEvent> {
        let (tx, rx) = unbounded_channel();
        let shutdown = self.shutdown.clone();
        let steps = match self.kind {
            OpKind::Create => create_steps(self.pod_wait.as_ref()),
            OpKind::Delete => delete_steps(),
        };
        // A pod wait that fails ends after its status lines; any other CRM failure before them.
        let crm_failure = self
            .pod_wait
            .as_ref()
            .and_then(|w| Some((w.lines.len(), w.fails_with.clone()?.1)))
            .or_else(|| self.crm_error.take().map(|m| (0, m)));
        if let Some((lines, message)) = crm_failure {
            self.fault = Some(StreamFault::Error {
                after_lines: CREATE_LINES_BEFORE_CRM + lines,
                message,
                leave_create_error: false,
                by_crm: true,
            });
        }
        let untimed = steps.iter().filter(|s| s.wait.is_none()).count();
        let step_delay = self.duration / untimed.max(1) as u32;
        let runner = Runner {
            op: self,
            tx: Some(tx),
            lines: 0,
            drop_after: None,
            client_left: false,
            undoing: false,
            step_delay,
            shutdown,
        };
        tokio::spawn(runner.run(steps));
        rx
    }
}

struct Runner {
    op: Op,
    tx: Option<UnboundedSender<StreamEvent>>,
    lines: usize,
    drop_after: Option<usize>,
    /// The client closed the stream (not a cut by fault injection).
    client_left: bool,
    /// Running the undo after the client left.
    undoing: bool,
    step_delay: Duration,
    shutdown: watch::Receiver<bool>,
}

impl Runner {
    async fn run(mut self, steps: Vec<Step>) {
        let mut fault = self.op.fault.take();
        if let Some(StreamFault::Timeout { .. }) = fault {
            if self.op.undo_on_disconnect && self.op.kind == OpKind::Create {
                // A central CRM works under the request's deadline: when it passes, the
                // platform call fails and the create is undone; only CRM-on-edge sites end
                // with "Timed out while work still in progress" (main
                // `pkg/controller/appinst_api.go:1293-1341`, `appinst.pb.go:9724-9734`).
                let before_ready = steps
                    .iter()
                    .take_while(|s| !s.action.completes())
                    .filter(|s| s.line.is_some())
                    .count();
                fault = Some(StreamFault::Error {
                    after_lines: before_ready,
                    message: DEADLINE.to_string(),
                    leave_create_error: false,
                    by_crm: false,
                });
            }
        }
        match fault {
            None => {
                self.run_all(&steps).await;
            }
            Some(StreamFault::Drop { after_lines }) => {
                self.drop_after = Some(after_lines);
                if self.run_all(&steps).await && self.drop_after.is_some() {
                    self.send(StreamEvent::Drop);
                }
            }
            Some(StreamFault::Error {
                after_lines,
                message,
                leave_create_error,
                by_crm,
            }) => {
                for s in steps.iter().take_while(|s| !s.action.completes()) {
                    if s.line.is_some() && self.lines >= after_lines {
                        break;
                    }
                    if !self.run_step(s).await {
                        return;
                    }
                }
                let message = capitalize(&message);
                let undo = failure_steps(self.op.kind, &message, leave_create_error, by_crm);
                if self.run_all(&undo).await {
                    self.send(StreamEvent::Fail(message));
                }
            }
            Some(StreamFault::Timeout { ready_after }) => {
                let cut = steps
                    .iter()
                    .position(|s| s.action.completes())
                    .unwrap_or(steps.len());
                if !self.run_all(&steps[..cut]).await {
                    return;
                }
                let state = self
                    .current_state()
                    .map(TrackedState::name)
                    .unwrap_or("Unknown");
                self.send(StreamEvent::Line(format!(
                    "Timed out while work still in progress state {state}. Please use ShowAppInst to check current status"
                )));
                // The stream ends cleanly here; the work goes on without an audience.
                self.tx = None;
                if !self.pause(ready_after).await {
                    return;
                }
                for s in &steps[cut..] {
                    if !self.apply(&s.action) {
                        return;
                    }
                }
            }
        }
    }

    /// Runs steps with their delays; false when the operation had to stop.
    async fn run_all(&mut self, steps: &[Step]) -> bool {
        for s in steps {
            if !self.run_step(s).await {
                return false;
            }
        }
        true
    }

    /// Runs one step, unless the client left a create on a central-CRM site: then the
    /// create is undone instead (and false returned). The client leaving is noticed during
    /// the wait before a step too, as the real CRM notices a cancelled context at its next
    /// poll (main `pkg/k8smgmt/appinst.go:314-317`).
    async fn run_step(&mut self, s: &Step) -> bool {
        if self.must_undo() {
            return self.undo().await;
        }
        if !self.pause(s.wait.unwrap_or(self.step_delay)).await {
            // The server is going away; so does the connection.
            self.send(StreamEvent::Drop);
            return false;
        }
        if self.must_undo() {
            return self.undo().await;
        }
        self.apply_and_send(s)
    }

    /// True (once) when the client has left a create that the site undoes then.
    fn must_undo(&mut self) -> bool {
        if self.tx.as_ref().is_some_and(|tx| tx.is_closed()) {
            self.client_left = true;
            self.tx = None;
        }
        self.client_left
            && self.op.undo_on_disconnect
            && self.op.kind == OpKind::Create
            && !self.undoing
    }

    /// Undoes the create after the client left; always false (the operation stops).
    async fn undo(&mut self) -> bool {
        self.undoing = true;
        for undo in failure_steps(OpKind::Create, CLIENT_LEFT, false, false) {
            if !self.pause(self.step_delay).await || !self.apply_and_send(&undo) {
                break;
            }
        }
        false
    }

    /// Applies a step and sends its line; false when the instance vanished.
    fn apply_and_send(&mut self, s: &Step) -> bool {
        if !self.apply(&s.action) {
            // Reset (or otherwise removed) under our feet: a clean end would read as success.
            let message = format!("AppInst key {} not found", key_json(&self.op.key));
            self.send(StreamEvent::Fail(message));
            return false;
        }
        if let Some(line) = &s.line {
            self.line(line.clone());
        }
        true
    }

    fn line(&mut self, text: String) {
        if self.drop_after == Some(self.lines) {
            self.drop_after = None;
            self.send(StreamEvent::Drop);
            self.tx = None;
        }
        self.send(StreamEvent::Line(text));
        self.lines += 1;
    }

    fn send(&mut self, event: StreamEvent) {
        if let Some(tx) = &self.tx {
            // A closed channel means the client left; the operation carries on regardless.
            if tx.send(event).is_err() {
                self.tx = None;
                self.client_left = true;
            }
        }
    }

    /// Sleeps, unless the simulator shuts down first (then false). A client leaving a create
    /// that is undone then ends the sleep early (true).
    async fn pause(&mut self, delay: Duration) -> bool {
        if *self.shutdown.borrow() {
            return false;
        }
        if delay.is_zero() {
            return true;
        }
        let watched = self
            .tx
            .clone()
            .filter(|_| self.op.undo_on_disconnect && self.op.kind == OpKind::Create);
        let client_left = async move {
            match watched {
                Some(tx) => tx.closed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => true,
            _ = self.shutdown.wait_for(|stop| *stop) => false,
            _ = client_left => true,
        }
    }

    fn current_state(&self) -> Option<TrackedState> {
        let st = lock(&self.op.state);
        (st.epoch == self.op.epoch)
            .then(|| st.inst(&self.op.key).map(|i| i.state))
            .flatten()
    }

    /// Applies a step to the stored instance; false when it vanished or the state was reset.
    fn apply(&self, action: &Action) -> bool {
        let mut st = lock(&self.op.state);
        if st.epoch != self.op.epoch {
            return false;
        }
        if *action == Action::Remove {
            return st.remove_inst(&self.op.key).is_some();
        }
        let Some(inst) = st.inst_mut(&self.op.key) else {
            return false;
        };
        match action {
            Action::Keep | Action::Remove => {}
            Action::State(state) => inst.state = *state,
            Action::Error(state, message) => {
                inst.state = *state;
                inst.errors = vec![message.clone()];
            }
            Action::Ready => {
                inst.state = TrackedState::Ready;
                inst.errors.clear();
                if inst.runtime_info.container_ids.is_empty() && !self.op.container_id.is_empty() {
                    inst.runtime_info.container_ids = vec![self.op.container_id.clone()];
                }
                if inst.mapped_ports.as_ref().is_some_and(|p| !p.is_empty()) {
                    inst.health_check = HealthCheck::Ok;
                }
            }
        }
        true
    }
}
