//! What a CreateAppInst stream says about the start of the AppInst: its success line, the
//! CRM's pod status lines, and docker's refusal to run the image. The provider decides what to
//! do with them; this module only reads the controller's words
//! (docs/edge-connect-behaviours.md B12, B13).

use serde::de::value::StrDeserializer;
use serde::Deserialize;

/// True when a stream's last progress line is the one of a CreateAppInst stream that created
/// the AppInst (main `pkg/controller/appinst_api.go:1290, 1297, 1331`). A stream that ends
/// without it (and without an error result, e.g. `Failed to get progress messages. Please use
/// ShowAppInst …`, `api/edgeproto/appinst.pb.go:9692`) did not say whether the AppInst exists.
pub fn created(last: &str) -> bool {
    last == "Created AppInst successfully"
}

/// A container or pod reason the CRM reports that means "will not start without a change"
/// (Kubernetes' waiting reasons, as kubelet names them; the CRM copies them into its status
/// line, main `pkg/k8smgmt/appinst.go:160-176`; docs/edge-connect-behaviours.md B12). Each
/// variant is named as Kubernetes spells the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum StartReason {
    /// The image pull failed (may clear by itself: a registry hiccup).
    ErrImagePull,
    /// Kubelet backs off after failed pulls.
    ImagePullBackOff,
    /// The image reference cannot be parsed.
    InvalidImageName,
    /// The pull policy forbids pulling an image that is not on the node.
    ErrImageNeverPull,
    /// The container's configuration refers to something missing (a secret, a config map).
    CreateContainerConfigError,
    /// The container runtime could not create the container.
    CreateContainerError,
    /// The container starts and exits again and again.
    CrashLoopBackOff,
    /// No node can take the pod (the only reason the CRM itself fails on,
    /// `pkg/k8smgmt/appinst.go:169-171, 220-221`; in practice Kubernetes never reports it as a
    /// container reason, see [`pod_unscheduled`]).
    Unschedulable,
}

/// What a [`StartReason`] is about, for the message that names what to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartProblem {
    /// The image cannot be pulled.
    Image,
    /// The container cannot be created from its configuration.
    Config,
    /// The container crashes.
    Crash,
    /// The site has no room for the pod.
    Capacity,
}

impl StartReason {
    /// True for a reason that may clear without a change (a first failed pull); the others
    /// stay until someone changes the image, the configuration or the site.
    pub fn transient(self) -> bool {
        self == StartReason::ErrImagePull
    }

    /// What the reason is about.
    pub fn problem(self) -> StartProblem {
        match self {
            StartReason::ErrImagePull
            | StartReason::ImagePullBackOff
            | StartReason::InvalidImageName
            | StartReason::ErrImageNeverPull => StartProblem::Image,
            StartReason::CreateContainerConfigError | StartReason::CreateContainerError => {
                StartProblem::Config
            }
            StartReason::CrashLoopBackOff => StartProblem::Crash,
            StartReason::Unschedulable => StartProblem::Capacity,
        }
    }
}

/// The reason as Kubernetes spells it.
impl std::fmt::Display for StartReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// The known reasons a CRM pod status line names, in order.
///
/// The CRM words each change of pod state as `Status: pod <pod>: <phase> (<running>/<total>),
/// container <name>: <reason>[, container <name>: <reason>]`, pods joined by `; `
/// (main `pkg/k8smgmt/appinst.go:175, 311-312`), sent as a task of the AppInst's status, which
/// the controller forwards as one stream message (`api/edgeproto/appinst.pb.go:9705-9706`;
/// `api/edgeproto/status_info.go:23-37` may append `(n of m)`). A pod that cannot be
/// scheduled is not sent as a status but ends the create with `invalid pod state, <statuses>`
/// (`pkg/k8smgmt/appinst.go:220-221`; the MC capitalises the first letter). Other lines name
/// nothing.
pub fn pod_reasons(message: &str) -> Vec<StartReason> {
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
    let mut found = Vec::new();
    for part in status.split("container ").skip(1) {
        // `<name>: <reason>`: a container name has neither spaces nor colons.
        let Some((name, rest)) = part.split_once(": ") else {
            continue;
        };
        if name.is_empty() || name.contains(char::is_whitespace) {
            continue;
        }
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        let word = StrDeserializer::<serde::de::value::Error>::new(&word);
        if let Ok(reason) = StartReason::deserialize(word) {
            found.push(reason);
        }
    }
    found
}

/// True for a CRM pod status line with a pod that has no container status yet (`Pending
/// (0/0)`): the pod is not on a node. Kubernetes reports a pod no node can take only in the
/// pod's `PodScheduled` condition (reason `Unschedulable`), never as a container reason, so the
/// CRM's own check for it (`pkg/k8smgmt/appinst.go:169-176`) does not fire and the line stays
/// like this until the CRM's wait ends; while a pod is being scheduled it is the same line, for
/// a moment.
pub fn pod_unscheduled(message: &str) -> bool {
    message.starts_with("Status: ")
        && message
            .split("; ")
            .any(|pod| pod.contains(": Pending (0/0)"))
}

/// True when a failed create's error says docker could not get the image: `docker run` (or the
/// forced `docker image pull`) failed with a pull error (main `pkg/dockermgmt/dockerapp.go:433,
/// 454`; `CreateAppInstLocal`, `:342`, words it `error running app`). Docker's own words for a
/// missing image, a refused pull or an unknown registry follow the prefix.
pub fn docker_pull_failed(message: &str) -> bool {
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
    fn the_crm_status_line_names_its_reasons() {
        let line = "Status: pod garm-a-7d9c-x2v: Pending (0/1), container garm-a: ImagePullBackOff";
        assert_eq!(pod_reasons(line), [StartReason::ImagePullBackOff]);
        let two = "Status: pod p1: Running (1/2), container c1: CrashLoopBackOff, container c2: ErrImagePull; pod p2: Pending (0/1), container c: ContainerCreating(1 of 3)";
        assert_eq!(
            pod_reasons(two),
            [StartReason::CrashLoopBackOff, StartReason::ErrImagePull]
        );
        assert!(
            pod_reasons("Status: pod p: Pending (0/1), container c: ContainerCreating").is_empty()
        );
        assert!(pod_reasons("Creating App Inst").is_empty());
        // A prefix of a known reason is not that reason.
        assert!(pod_reasons("Status: pod p: Pending (0/1), container c: ErrImagePullX").is_empty());
        assert!(pod_reasons("Status: no pods found").is_empty());
        assert_eq!(
            pod_reasons("Invalid pod state, pod p: Pending (0/1), container c: Unschedulable"),
            [StartReason::Unschedulable]
        );
    }

    #[test]
    fn a_pod_without_container_statuses_is_unscheduled() {
        assert!(pod_unscheduled("Status: pod p-1: Pending (0/0), "));
        assert!(pod_unscheduled(
            "Status: pod a: Running (1/1), ; pod b: Pending (0/0), "
        ));
        assert!(!pod_unscheduled(
            "Status: pod p-1: Pending (0/1), container c: ContainerCreating"
        ));
        assert!(!pod_unscheduled("Pending (0/0)"));
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
    fn every_reason_is_read_by_its_name_and_only_a_first_failed_pull_may_clear() {
        use StartReason::*;
        for (name, reason) in [
            ("ErrImagePull", ErrImagePull),
            ("ImagePullBackOff", ImagePullBackOff),
            ("InvalidImageName", InvalidImageName),
            ("ErrImageNeverPull", ErrImageNeverPull),
            ("CreateContainerConfigError", CreateContainerConfigError),
            ("CreateContainerError", CreateContainerError),
            ("CrashLoopBackOff", CrashLoopBackOff),
            ("Unschedulable", Unschedulable),
        ] {
            assert_eq!(reason.to_string(), name);
            let line = format!("Status: pod p: Pending (0/1), container c: {name}");
            assert_eq!(pod_reasons(&line), [reason]);
            assert_eq!(reason.transient(), name == "ErrImagePull");
        }
    }
}
