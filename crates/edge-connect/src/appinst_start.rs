//! What a CreateAppInst stream says about the start of the AppInst: its success line, the
//! CRM's pod status lines, and docker's refusal to run the image. The provider decides what to
//! do with them; this module only reads the controller's words
//! (docs/edge-connect-behaviours.md B12, B13, B22).

/// The last progress line of a CreateAppInst stream that created the AppInst (main
/// `pkg/controller/appinst_api.go:1290, 1297, 1331`). A stream that ends without it (and
/// without an error result, e.g. `Failed to get progress messages. Please use ShowAppInst …`,
/// `api/edgeproto/appinst.pb.go:9692`) did not say whether the AppInst exists.
pub(crate) const CREATED: &str = "Created AppInst successfully";

/// A progress line of an AppInst operation, as the client read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress<'a> {
    /// The line as the controller wrote it.
    pub line: &'a str,
    /// The pods it names when it is a CRM status line ([`pod_statuses`]), else none.
    pub pods: Vec<PodStatus<'a>>,
}

/// What a container reason is about, for the message that names what to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartProblem {
    /// The image cannot be pulled or read.
    Image,
    /// The container cannot be created from its configuration.
    Config,
    /// The container starts and stops again, or cannot be run.
    Crash,
    /// The platform said that no node can take the pod.
    Capacity,
    /// Any other reason kubelet or the runtime gave.
    Other,
}

/// The waiting reasons kubelet gives a container that is starting normally: its image is being
/// pulled or it is being created (`ContainerCreating`), or the pod's init containers have not
/// finished (`PodInitializing`) (kubernetes `pkg/kubelet/kubelet_pods.go:85-89`, the
/// "Container state reason list"). Every other reason is a container that does not start.
pub fn starting_normally(reason: &str) -> bool {
    matches!(reason, "ContainerCreating" | "PodInitializing")
}

/// Every reason the provider words by what it is about (README's table of errors is held to
/// this list by a test), and whether it lasts ([`lasting`]); any other is
/// [`StartProblem::Other`] and does not last. Terminated reasons (the CRM shows them as the reason of
/// a container that is not running) and the runtime's failures to run it are crashes.
pub const KNOWN_REASONS: &[(&str, StartProblem, bool)] = &[
    ("ErrImagePull", StartProblem::Image, false),
    ("ImagePullBackOff", StartProblem::Image, true),
    ("InvalidImageName", StartProblem::Image, true),
    ("ErrImageNeverPull", StartProblem::Image, true),
    ("ImageInspectError", StartProblem::Image, false),
    ("RegistryUnavailable", StartProblem::Image, false),
    ("SignatureValidationFailed", StartProblem::Image, false),
    ("CreateContainerConfigError", StartProblem::Config, true),
    ("CreateContainerError", StartProblem::Config, true),
    ("PreCreateHookError", StartProblem::Config, false),
    ("CrashLoopBackOff", StartProblem::Crash, true),
    ("Error", StartProblem::Crash, false),
    ("OOMKilled", StartProblem::Crash, false),
    ("ContainerCannotRun", StartProblem::Crash, false),
    ("RunContainerError", StartProblem::Crash, false),
    ("PreStartHookError", StartProblem::Crash, false),
    ("PostStartHookError", StartProblem::Crash, false),
    ("Completed", StartProblem::Crash, false),
    ("Unschedulable", StartProblem::Capacity, false),
];

/// What a reason, as kubelet or the runtime spells it, is about ([`KNOWN_REASONS`]).
pub fn problem(reason: &str) -> StartProblem {
    KNOWN_REASONS
        .iter()
        .find(|(known, ..)| *known == reason)
        .map_or(StartProblem::Other, |(_, problem, _)| *problem)
}

/// True for a reason that does not clear without a change of the image, the configuration or
/// the site ([`KNOWN_REASONS`]): kubelet backs off (`ImagePullBackOff`, `CrashLoopBackOff`: it
/// has failed before and will fail the same way), or the image reference or the container's
/// configuration cannot be used as it is (kubernetes `pkg/kubelet/images/types.go` for the image
/// reasons, `pkg/kubelet/container/sync_result.go` for `CrashLoopBackOff`,
/// `pkg/kubelet/kuberuntime/kuberuntime_container.go` for the `CreateContainer…` ones). Any
/// other failing reason may be a moment's trouble (a registry hiccup, a slow runtime) and is
/// given the grace.
pub fn lasting(reason: &str) -> bool {
    KNOWN_REASONS
        .iter()
        .any(|&(known, _, lasts)| lasts && known == reason)
}

/// One pod of a CRM pod status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodStatus<'a> {
    /// The pod's name.
    pub pod: &'a str,
    /// The pod's phase (`Pending`, `Running`, …).
    pub phase: &'a str,
    /// Containers with a status, and how many of them run: `(0/0)` is a pod no node has taken.
    pub running: u32,
    /// Containers with a status.
    pub total: u32,
    /// The containers that do not run, each with the reason the platform wrote.
    pub not_running: Vec<(&'a str, &'a str)>,
}

impl PodStatus<'_> {
    /// True for a pod without any container status yet (`Pending (0/0)`): no node has taken
    /// it. Kubernetes reports a pod no node can take only in the pod's `PodScheduled`
    /// condition, never as a container reason, so the CRM's own check for `Unschedulable`
    /// (main `pkg/k8smgmt/appinst.go:169-171`) does not fire on it; while the scheduler works it
    /// is the same line, for a moment.
    pub fn unscheduled(&self) -> bool {
        self.total == 0
    }
}

/// The pods a CRM status line names, in order.
///
/// The CRM words each change of pod state as `Status: pod <pod>: <phase> (<running>/<total>),
/// container <name>: <reason>[, container <name>: <reason>]`, pods joined by `; `
/// (main `pkg/k8smgmt/appinst.go:148-180, 311-312`), sent as a task of the AppInst's status,
/// which the controller forwards as one stream message (`api/edgeproto/appinst.pb.go:9705-9706`;
/// `api/edgeproto/status_info.go:23-37` may append `(n of m)`). A pod whose container reports
/// `Unschedulable` is not sent as a status but ends the create with `invalid pod state,
/// <statuses>` (`pkg/k8smgmt/appinst.go:220-221`; the MC capitalises the first letter). Other
/// lines name no pod.
pub fn pod_statuses(message: &str) -> Vec<PodStatus<'_>> {
    const FAILED: &str = "invalid pod state, ";
    let status = match message.strip_prefix("Status: ") {
        Some(status) => status,
        None if message
            .get(..FAILED.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(FAILED)) =>
        {
            &message[FAILED.len()..]
        }
        None => return Vec::new(),
    };
    status.split("; ").filter_map(pod_status).collect()
}

/// `pod <name>: <phase> (<running>/<total>), <reasons>`.
fn pod_status(text: &str) -> Option<PodStatus<'_>> {
    let rest = text.strip_prefix("pod ")?;
    let (pod, rest) = rest.split_once(": ")?;
    let (phase, rest) = rest.split_once(" (")?;
    let (counts, rest) = rest.split_once("),")?;
    let (running, total) = counts.split_once('/')?;
    let not_running = rest
        .split(", ")
        .filter_map(|part| {
            let (name, reason) = part
                .trim_start()
                .strip_prefix("container ")?
                .split_once(": ")?;
            // The reason is one word; the `(n of m)` suffix of the last task may follow it.
            let end = reason
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(reason.len());
            Some((name, &reason[..end]))
        })
        .collect();
    Some(PodStatus {
        pod,
        phase,
        running: running.parse().ok()?,
        total: total.parse().ok()?,
        not_running,
    })
}

/// The name of the Deployment the controller makes for an App of this name and version
/// (Kubernetes deployments without a manifest of their own): `<name><version>-deployment`,
/// reduced to a DNS label as main `pkg/util/validate.go:106-128` (`DNSSanitize`) does — lower
/// case, `_` to `-`, other characters dropped, no `-` or `_` first or last
/// (main `pkg/deploygen/kube.go:69-71, 230`).
pub fn deployment_name(app_name: &str, version: &str) -> String {
    let name = format!("{app_name}{version}-deployment");
    let last = name.chars().count().saturating_sub(1);
    name.chars()
        .enumerate()
        .filter_map(|(i, c)| match c {
            'a'..='z' | '0'..='9' => Some(c),
            'A'..='Z' => Some(c.to_ascii_lowercase()),
            '-' | '_' if i != 0 && i != last => Some('-'),
            _ => None,
        })
        .collect()
}

/// True when `pod` is a pod of the Deployment `deployment`: Kubernetes names a Deployment's
/// pods `<deployment>-<pod template hash>-<random suffix>` (its ReplicaSet is
/// `<deployment>-<hash>`, the pod a generated name after that), the hash and the suffix each
/// letters and digits only (kubernetes `pkg/controller/deployment/sync.go`,
/// `staging/src/k8s.io/apiserver/pkg/storage/names/generate.go`). The CRM selects the pods it
/// reports by the Deployment's label (main `pkg/k8smgmt/appinst.go:302`); the name tells our
/// pod from another one in the line.
pub fn pod_of(pod: &str, deployment: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric());
    pod.strip_prefix(deployment)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.split_once('-'))
        .is_some_and(|(hash, suffix)| word(hash) && word(suffix))
}

/// Why a site did not start the AppInst it took, as the create's error said it (the controller
/// accepted the create and the site failed to make it, B13, B22, B30). A site without room says
/// it as the container reason `Unschedulable` ([`StartProblem::Capacity`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotStarted {
    /// Docker could not get the image: docker's words.
    PullFailed(String),
    /// A container of the pod that does not start: its name in the pod, and the reason kubelet
    /// or the runtime wrote.
    Container(String, String),
    /// The site's admission refused the pod (B30, B31).
    Admission(Admission),
}

/// A Pod Security refusal of the pod: its `policy` (`baseline:latest`), what it `forbids`, and
/// its own words (`detail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    /// The level and version, as quoted.
    pub policy: String,
    /// What of the pod the policy refuses.
    pub forbids: Forbidden,
    /// The policy's words after the quote.
    pub detail: String,
}

/// What a Pod Security policy refused of a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    /// A privileged container (dind's).
    Privileged,
    /// Unconfined seccomp or AppArmor profiles (buildkit's).
    Unconfined,
    /// Anything else, which a pool without Docker asks for as well.
    Other,
}

/// What a failed create's message says about the start, if anything: docker's pull failure
/// first, then the first container of a pod line that does not start normally, then a Pod
/// Security refusal, which the CRM ends with the ReplicaSet's message when it saw no pod
/// (`violates PodSecurity "<policy>": <detail>`, docs/edge-connect-behaviours.md B30, B31).
pub fn not_started(message: &str) -> Option<NotStarted> {
    if docker_pull_failed(message) {
        return Some(NotStarted::PullFailed(message.to_string()));
    }
    let pods = pod_statuses(message);
    let mut not_running = pods.iter().flat_map(|p| &p.not_running);
    if let Some((container, reason)) = not_running.find(|(_, r)| !starting_normally(r)) {
        return Some(NotStarted::Container(
            container.to_string(),
            reason.to_string(),
        ));
    }
    let (_, rest) = message.split_once("violates PodSecurity \"")?;
    let policy = rest.split('"').next().unwrap_or_default().to_string();
    let detail = rest.split_once("\": ").map_or("", |(_, d)| d).to_string();
    let forbids = if detail.contains("privileged (") {
        Forbidden::Privileged
    } else if detail.contains("\"Unconfined\"") {
        Forbidden::Unconfined
    } else {
        Forbidden::Other
    };
    Some(NotStarted::Admission(Admission {
        policy,
        forbids,
        detail,
    }))
}

/// True when a failed create's error says docker could not get the image: `docker run` (or the
/// forced `docker image pull`) failed with a pull error (main `pkg/dockermgmt/dockerapp.go:433,
/// 454`; `CreateAppInstLocal`, `:342`, words it `error running app`). Docker's own words for a
/// missing image, a refused pull or an unknown registry follow the prefix.
fn docker_pull_failed(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let docker = m.contains("error running docker run")
        || m.contains("error running app")
        || m.contains("error pulling docker image");
    docker
        && [
            "pull access denied",
            "manifest unknown",
            "unable to find image",
            "repository does not exist",
            "invalid reference format",
            "no such host",
            "unauthorized",
            "not found",
        ]
        .iter()
        .any(|w| m.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crm_status_line_names_its_pods_and_their_reasons() {
        let line = "Status: pod garm-a1-deployment-7d9c-x2v: Pending (0/1), container garm-a1: ImagePullBackOff";
        let pods = pod_statuses(line);
        assert_eq!(
            pods,
            [PodStatus {
                pod: "garm-a1-deployment-7d9c-x2v",
                phase: "Pending",
                running: 0,
                total: 1,
                not_running: vec![("garm-a1", "ImagePullBackOff")],
            }]
        );
        let two = "Status: pod p1: Running (1/2), container c1: CrashLoopBackOff, container c2: ErrImagePull; pod p2: Pending (0/0), (1 of 3)";
        let pods = pod_statuses(two);
        assert_eq!(pods.len(), 2);
        assert_eq!(
            pods[0].not_running,
            [("c1", "CrashLoopBackOff"), ("c2", "ErrImagePull")]
        );
        assert!(!pods[0].unscheduled() && pods[1].unscheduled());
        let suffixed =
            pod_statuses("Status: pod p: Pending (0/1), container c: ContainerCreating(1 of 3)");
        assert_eq!(suffixed[0].not_running, [("c", "ContainerCreating")]);
        assert!(pod_statuses("Creating App Inst").is_empty());
        assert!(pod_statuses("Status: no pods found").is_empty());
        let failed =
            pod_statuses("Invalid pod state, pod p: Pending (0/1), container c: Unschedulable");
        assert_eq!(failed[0].not_running, [("c", "Unschedulable")]);
    }

    #[test]
    fn pods_are_told_apart_by_their_deployment() {
        assert_eq!(deployment_name("garm-a", "1"), "garm-a1-deployment");
        assert_eq!(deployment_name("Garm_B", "1.0"), "garm-b10-deployment");
        assert_eq!(deployment_name("-x", "v_"), "xv--deployment");
        let ours = "garm-a1-deployment";
        assert!(pod_of("garm-a1-deployment-6d4f9bc7d8-x7k2p", ours));
        assert!(!pod_of("garm-a1-deployment-6d4f9bc7d8", ours));
        assert!(!pod_of("garm-a11-deployment-6d4f9bc7d8-x7k2p", ours));
        assert!(!pod_of("garm-a1-deployment-6d4-f9-x7k2p", ours));
        assert!(!pod_of("other-6d4f9bc7d8-x7k2p", ours));
    }

    #[test]
    fn only_kubelets_starting_reasons_are_normal_and_only_back_offs_and_bad_specs_last() {
        for normal in ["ContainerCreating", "PodInitializing"] {
            assert!(starting_normally(normal) && !lasting(normal));
        }
        for failing in ["ErrImagePull", "RunContainerError", "Error", "SomethingNew"] {
            assert!(
                !starting_normally(failing) && !lasting(failing),
                "{failing}"
            );
        }
        for at_once in ["ImagePullBackOff", "CrashLoopBackOff", "InvalidImageName"] {
            assert!(lasting(at_once), "{at_once}");
        }
        assert_eq!(problem("RegistryUnavailable"), StartProblem::Image);
        assert_eq!(problem("ContainerCannotRun"), StartProblem::Crash);
        assert_eq!(problem("Unschedulable"), StartProblem::Capacity);
        assert_eq!(problem("SomethingNew"), StartProblem::Other);
    }

    #[test]
    fn docker_pull_failures_are_told_from_other_failures() {
        assert!(docker_pull_failed("Error running docker run, Unable to find image 'r.example/x:1' locally docker: Error response from daemon: manifest for r.example/x:1 not found: manifest unknown, exit status 125"));
        assert!(docker_pull_failed(
            "error pulling docker image: r/x:1, pull access denied for r/x, exit status 1"
        ));
        assert!(!docker_pull_failed(
            "Error running docker run, docker: Error response from daemon: Conflict. The container name is already in use, exit status 125"
        ));
        assert!(!docker_pull_failed(
            "Create App Inst failed: no space left on device"
        ));
    }

    #[test]
    fn a_failed_creates_message_is_read_as_what_did_not_start() {
        let pull = "error pulling docker image: r/x:1, pull access denied for r/x, exit status 1";
        assert_eq!(not_started(pull), Some(NotStarted::PullFailed(pull.into())));
        let pod = "Invalid pod state, pod p: Pending (0/1), container c: Unschedulable";
        let (container, reason) = ("c".to_string(), "Unschedulable".to_string());
        assert_eq!(
            not_started(pod),
            Some(NotStarted::Container(container, reason))
        );
        let creating = "Invalid pod state, pod p: Pending (0/1), container c: ContainerCreating";
        assert_eq!(not_started(creating), None);
        let refused = |policy: &str, detail: &str, forbids| {
            let message =
                format!("pods \"r-1\" is forbidden: violates PodSecurity \"{policy}\": {detail}");
            let (policy, detail) = (policy.to_string(), detail.to_string());
            let admission = NotStarted::Admission(Admission {
                policy,
                forbids,
                detail,
            });
            assert_eq!(not_started(&message), Some(admission));
        };
        refused(
            "baseline:latest",
            "privileged (container \"dind\" must not set securityContext.privileged=true)",
            Forbidden::Privileged,
        );
        refused(
            "baseline:latest",
            "seccompProfile (pod must not set type to \"Unconfined\")",
            Forbidden::Unconfined,
        );
        refused(
            "restricted:latest",
            "runAsNonRoot != true",
            Forbidden::Other,
        );
        assert_eq!(
            not_started("Create App Inst failed: no space left on device"),
            None
        );
    }
}
