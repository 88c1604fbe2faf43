//! The runner's pod when a pool asks for Docker or gives its size: the pool's `docker` mode, its
//! `resources` and their split between the containers, and the Kubernetes Deployment the
//! provider writes for it, as typed objects serialised to one line of JSON.
//!
//! Edge Connect keeps a user manifest as sent and its controller and CRM decode JSON as well as
//! YAML (docs/edge-connect-behaviours.md B25, B26), so no YAML is written. The CRM re-encodes
//! the objects with client-go's types (B27): only fields those types know are written here.
//! The contract with the runner image (dind's socket and GID 123, the workspace, buildkitd's
//! loopback address) is in docs/runner-contract.md, "Docker in the runner's pod".

use std::collections::BTreeMap;

use edge_connect::models::vcpus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a pool's runner gets besides its own container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DockerMode {
    /// No Docker: jobs run in the runner container (the platform generates the pod).
    #[default]
    None,
    /// A privileged Docker daemon sidecar: `container:` jobs, services, Docker actions,
    /// `docker build`.
    Dind,
    /// An unprivileged, rootless BuildKit daemon sidecar: image builds only
    /// (docs/runner-contract.md, "Docker in the runner's pod").
    Buildkit,
}

impl DockerMode {
    /// The value of `RUNNER_DOCKER`.
    pub fn as_str(self) -> &'static str {
        match self {
            DockerMode::None => "none",
            DockerMode::Dind => "dind",
            DockerMode::Buildkit => "buildkit",
        }
    }

    /// The sidecar as messages name it.
    pub fn sidecar(self) -> &'static str {
        match self {
            DockerMode::None => "no sidecar",
            DockerMode::Dind => "the Docker daemon sidecar",
            DockerMode::Buildkit => "the BuildKit sidecar",
        }
    }
}

/// A pool's size instead of a flavor (`extra_specs.resources`), sent as the App's
/// `kubernetes_resources` (docs/edge-connect-behaviours.md B32).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Resources {
    /// vCPUs of the whole pod (e.g. 2 or 1.5), at most 1024.
    #[schemars(range(max = 1024))]
    pub cpu: f64,
    /// Memory of the whole pod, in MB (MiB, as Edge Connect counts it), at most 4194304 (4 TiB).
    #[schemars(range(min = 1, max = 4_194_304))]
    pub memory: u64,
    /// Disk of the whole pod, in GB (the site's placement; not a container limit), at most
    /// 65536 (64 TiB).
    #[serde(default)]
    #[schemars(range(max = 65_536))]
    pub disk: u64,
}

crate::object::object_only!(Resources, "an object of cpu, memory and disk");

/// The most vCPUs a pool may give.
const MAX_CPU: f64 = 1024.0;
/// The most memory a pool may give, in MB (4 TiB): beyond any node a runner lands on, and far
/// below what Kubernetes' quantities and the controller's counters hold.
const MAX_MEMORY: u64 = 4 * 1024 * 1024;
/// The most disk a pool may give, in GB (64 TiB).
const MAX_DISK: u64 = 64 * 1024;

/// What one container gets: its requests and limits, equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// Thousandths of a vCPU.
    pub milli_cpu: u64,
    /// MB.
    pub memory: u64,
}

/// The least a runner container and a sidecar's daemon (Docker or BuildKit) get of a pool's size.
const RUNNER_MIN: Share = Share {
    milli_cpu: 250,
    memory: 256,
};
const SIDECAR_MIN: Share = Share {
    milli_cpu: 250,
    memory: 512,
};

impl Resources {
    /// The pool's vCPUs in thousandths.
    pub fn milli_cpu(&self) -> u64 {
        (self.cpu * 1000.0).round() as u64
    }

    /// The runner's share and the sidecar's (`None` without one), or why the pool's size does
    /// not hold them, naming the numbers. A pod with a sidecar splits the size half and half:
    /// the runner runs the jobs' host steps, the daemon their containers or builds.
    pub fn split(&self, mode: DockerMode) -> Result<(Share, Option<Share>), String> {
        if !self.cpu.is_finite() || self.cpu <= 0.0 || self.cpu > MAX_CPU {
            return Err(format!(
                "resources.cpu: {} is not a number of vCPUs above 0 and at most {MAX_CPU}",
                self.cpu
            ));
        }
        if self.memory == 0 || self.memory > MAX_MEMORY {
            return Err(format!(
                "resources.memory: {} is not the pod's memory in MB above 0 and at most {MAX_MEMORY} (4 TiB)",
                self.memory
            ));
        }
        if self.disk > MAX_DISK {
            return Err(format!(
                "resources.disk: {} is more than {MAX_DISK} GB (64 TiB)",
                self.disk
            ));
        }
        let total = Share {
            milli_cpu: self.milli_cpu(),
            memory: self.memory,
        };
        match mode {
            DockerMode::None => {
                // Only what is below its least is named.
                let below: Vec<String> = [
                    (total.milli_cpu < RUNNER_MIN.milli_cpu).then(|| {
                        format!(
                            "cpu {} is below the runner's least of {}",
                            vcpus(total.milli_cpu),
                            vcpus(RUNNER_MIN.milli_cpu)
                        )
                    }),
                    (total.memory < RUNNER_MIN.memory).then(|| {
                        format!(
                            "memory {} MB is below the runner's least of {} MB",
                            total.memory, RUNNER_MIN.memory
                        )
                    }),
                ]
                .into_iter()
                .flatten()
                .collect();
                if !below.is_empty() {
                    return Err(format!("resources: {}", below.join(", and ")));
                }
                Ok((total, None))
            }
            DockerMode::Dind | DockerMode::Buildkit => {
                let runner = Share {
                    milli_cpu: total.milli_cpu / 2,
                    memory: total.memory / 2,
                };
                let sidecar = Share {
                    milli_cpu: total.milli_cpu - runner.milli_cpu,
                    memory: total.memory - runner.memory,
                };
                let need_cpu = 2 * RUNNER_MIN.milli_cpu.max(SIDECAR_MIN.milli_cpu);
                let need_memory = 2 * RUNNER_MIN.memory.max(SIDECAR_MIN.memory);
                let cpu_short = runner.milli_cpu < RUNNER_MIN.milli_cpu
                    || sidecar.milli_cpu < SIDECAR_MIN.milli_cpu;
                let memory_short =
                    runner.memory < RUNNER_MIN.memory || sidecar.memory < SIDECAR_MIN.memory;
                // Only what does not fit is named, with the least of it each container needs.
                let (what, runner_least, sidecar_least, give) = match (cpu_short, memory_short) {
                    (false, false) => return Ok((runner, Some(sidecar))),
                    (true, false) => (
                        format!("cpu {} does", vcpus(total.milli_cpu)),
                        format!("cpu {}", vcpus(RUNNER_MIN.milli_cpu)),
                        format!("cpu {}", vcpus(SIDECAR_MIN.milli_cpu)),
                        format!("cpu {}", vcpus(need_cpu)),
                    ),
                    (false, true) => (
                        format!("memory {} MB does", total.memory),
                        format!("memory {} MB", RUNNER_MIN.memory),
                        format!("memory {} MB", SIDECAR_MIN.memory),
                        format!("memory {need_memory} MB"),
                    ),
                    (true, true) => (
                        format!(
                            "cpu {} and memory {} MB do",
                            vcpus(total.milli_cpu),
                            total.memory
                        ),
                        format!(
                            "cpu {}, memory {} MB",
                            vcpus(RUNNER_MIN.milli_cpu),
                            RUNNER_MIN.memory
                        ),
                        format!(
                            "cpu {}, memory {} MB",
                            vcpus(SIDECAR_MIN.milli_cpu),
                            SIDECAR_MIN.memory
                        ),
                        format!("cpu {} and memory {need_memory} MB", vcpus(need_cpu)),
                    ),
                };
                Err(format!(
                    "resources: {what} not fit the runner (at least {runner_least}) and {} (at least {sidecar_least}), which share the pod half and half: give at least {give}",
                    mode.sidecar()
                ))
            }
        }
    }
}

/// The Docker daemon image a dind pool runs unless it names another: pinned, fully qualified
/// (docs/edge-connect-behaviours.md B28).
pub const DEFAULT_DIND_IMAGE: &str = "docker.io/library/docker:28.5.2-dind";
/// The job image of a dind pool's labels that `job_images` does not map: forgejo-runner's own
/// default for a label without a scheme.
pub const DEFAULT_JOB_IMAGE: &str = "docker.io/library/node:22-bookworm";

/// The rootless BuildKit image a buildkit pool runs unless it names another: pinned, fully
/// qualified (moby/buildkit v0.32.2, the newest release tag; its `rootless` stage runs
/// `rootlesskit buildkitd` as uid/gid 1000: docs/runner-contract.md).
pub const DEFAULT_BUILDKIT_IMAGE: &str = "docker.io/moby/buildkit:v0.32.2-rootless";
/// The name of the BuildKit daemon's container in the pod.
pub const BUILDKIT_CONTAINER: &str = "buildkitd";
/// Where buildkitd listens: TCP on the pod's loopback, which only the pod's own containers
/// reach. Not a unix socket: inside rootlesskit's user namespace no group of the runner user
/// can be given the socket (docs/runner-contract.md, "Docker in the runner's pod").
pub const BUILDKIT_HOST: &str = "tcp://127.0.0.1:1234";
/// The rootless image's user and group (moby/buildkit `Dockerfile`, stage `rootless`).
const BUILDKIT_UID: u32 = 1000;
/// buildkitd's state: an emptyDir, as the image's VOLUME is not honoured by Kubernetes.
const BUILDKIT_STATE_DIR: &str = "/home/user/.local/share/buildkit";

/// The name of the Docker daemon's container in the pod.
pub const DIND_CONTAINER: &str = "dind";
/// The daemon's socket, in the emptyDir both containers mount at `/run/dind`.
pub const DIND_DOCKER_HOST: &str = "unix:///run/dind/docker.sock";
const DIND_SOCKET_DIR: &str = "/run/dind";
/// The group that owns the daemon's socket: the `docker` group of the runner images.
const DOCKER_GID: u32 = 123;
/// The runner's work directory (`RUNNER_WORKDIR`), mounted at the same path in the daemon so
/// that the bind mounts a job asks for resolve there.
const WORKDIR: &str = "/runner/_work";

/// Variables a sidecar keeps from the runner's environment: the proxy its daemon pulls
/// through. Every other variable of the runner is overridden with an empty value in the
/// sidecar (docs/edge-connect-behaviours.md B27).
const SIDECAR_KEEPS: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// True for an image reference that names its registry (`docker.io/library/docker:…`,
/// `registry.example.com:5000/x`, `localhost/x`): the CRM reads the registry host from the
/// image as written and fails on a short name (docs/edge-connect-behaviours.md B28).
pub fn fully_qualified(image: &str) -> bool {
    match image.split_once('/') {
        Some((host, rest)) => {
            !rest.is_empty()
                && (host.contains('.') || host.contains(':') || host == "localhost")
                && !image.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        None => false,
    }
}

/// The pod the provider writes for a pool with a sidecar or a size of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// The Deployment's name, the one the platform's generator would give the App
    /// (`appinst_start::deployment_name`): the start watch reads the same pod either way.
    pub deployment: String,
    /// The `run` label that selects the pod.
    pub run: String,
    /// The runner's image.
    pub runner_image: String,
    /// The runner container's command words (the generator's split of `command`).
    pub command: Vec<String>,
    /// The runner container's arguments.
    pub args: Vec<String>,
    /// The sidecar's image (dind's Docker daemon or the rootless BuildKit daemon).
    pub sidecar_image: String,
    /// Names of the runner's environment, overridden with empty values in the sidecar.
    pub runner_env_names: Vec<String>,
    /// Which sidecar the pod has, if any.
    pub docker: DockerMode,
    /// The runner's and the sidecar's requests and limits, when the pool gives a size.
    pub shares: Option<(Share, Option<Share>)>,
}

impl Pod {
    /// The Deployment as one line of JSON (no `\n---`, no `[[`: B25, B29). `Err` names what
    /// would not survive the platform.
    pub fn manifest(&self) -> Result<String, String> {
        let blank = self
            .runner_env_names
            .iter()
            .filter(|n| !SIDECAR_KEEPS.contains(&n.as_str()))
            .map(|n| EnvVar {
                name: n.clone(),
                value: String::new(),
            });
        let dind_pod = self.docker == DockerMode::Dind;
        let mut sidecar_env: Vec<EnvVar> = std::iter::once(EnvVar {
            // The image's entrypoint makes TLS certificates for a TCP listener when this is
            // set; the daemon listens on the socket only.
            name: "DOCKER_TLS_CERTDIR".into(),
            value: String::new(),
        })
        .filter(|_| dind_pod)
        .chain(blank)
        .collect();
        let work = || VolumeMount::new("work", WORKDIR);
        let socket = || VolumeMount::new("dind-socket", DIND_SOCKET_DIR);
        let runner = Container {
            name: "runner".into(),
            image: self.runner_image.clone(),
            image_pull_policy: Some("Always"),
            command: self.command.clone(),
            args: self.args.clone(),
            resources: self.shares.map(|(runner, _)| runner.into()),
            volume_mounts: if dind_pod {
                vec![work(), socket()]
            } else {
                Vec::new()
            },
            ..Container::default()
        };
        let mut sidecar_resources: Option<ResourceRequirements> =
            self.shares.and_then(|(_, s)| s).map(Into::into);
        let buildkitd = Container {
            name: BUILDKIT_CONTAINER.into(),
            image: self.sidecar_image.clone(),
            // The image's entrypoint is `rootlesskit buildkitd`; these go to buildkitd. No
            // process sandbox: Kubernetes cannot unmask /proc for a pid namespace of its own.
            args: vec![
                "--oci-worker-no-process-sandbox".into(),
                "--addr".into(),
                BUILDKIT_HOST.into(),
            ],
            security_context: Some(SecurityContext {
                // rootlesskit's unshare and the snapshotters' mount need both.
                seccomp_profile: Some(Profile::UNCONFINED),
                app_armor_profile: Some(Profile::UNCONFINED),
                run_as_user: Some(BUILDKIT_UID),
                run_as_group: Some(BUILDKIT_UID),
                ..SecurityContext::default()
            }),
            volume_mounts: vec![VolumeMount::new("buildkit-state", BUILDKIT_STATE_DIR)],
            ..Container::default()
        };
        let dind = Container {
            name: DIND_CONTAINER.into(),
            image: self.sidecar_image.clone(),
            // The image's entrypoint sets up cgroups (its `dind` script) and runs these.
            args: vec![
                "dockerd".into(),
                format!("--host={DIND_DOCKER_HOST}"),
                format!("--group={DOCKER_GID}"),
            ],
            security_context: Some(SecurityContext {
                privileged: Some(true),
                ..SecurityContext::default()
            }),
            volume_mounts: vec![
                work(),
                socket(),
                // The image's VOLUME is not honoured by Kubernetes; the daemon's overlay
                // storage cannot live on the container's own overlay.
                VolumeMount::new("dind-storage", "/var/lib/docker"),
            ],
            ..Container::default()
        };
        let (containers, volumes) = match self.docker {
            DockerMode::None => (vec![runner], Vec::new()),
            DockerMode::Dind => (
                vec![runner, dind],
                vec!["work", "dind-socket", "dind-storage"],
            ),
            DockerMode::Buildkit => (vec![runner, buildkitd], vec!["buildkit-state"]),
        };
        let containers = containers
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                if i > 0 {
                    c.env = std::mem::take(&mut sidecar_env);
                    c.resources = sidecar_resources.take();
                }
                c
            })
            .collect();
        let labels = BTreeMap::from([("run".to_string(), self.run.clone())]);
        let deployment = Deployment {
            api_version: "apps/v1",
            kind: "Deployment",
            metadata: Metadata {
                name: self.deployment.clone(),
                labels: None,
            },
            spec: DeploymentSpec {
                replicas: 1,
                selector: Selector {
                    match_labels: labels.clone(),
                },
                template: PodTemplate {
                    metadata: Metadata {
                        name: String::new(),
                        labels: Some(labels),
                    },
                    spec: PodSpec {
                        containers,
                        volumes: volumes
                            .into_iter()
                            .map(|name| Volume {
                                name: name.into(),
                                empty_dir: EmptyDir {},
                            })
                            .collect(),
                    },
                },
            },
        };
        let json = serde_json::to_string(&deployment)
            .map_err(|e| format!("cannot write the pod's manifest: {e}"))?;
        if json.contains("[[") || json.contains("]]") {
            return Err(
                "the pod's manifest would hold `[[` or `]]`, which Edge Connect takes as a template (docs/edge-connect-behaviours.md B29)".into(),
            );
        }
        Ok(json)
    }
}

// The objects, with the field names of the Kubernetes API (apps/v1 Deployment, core/v1 pod).

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Deployment {
    api_version: &'static str,
    kind: &'static str,
    metadata: Metadata,
    spec: DeploymentSpec,
}

#[derive(Serialize)]
struct Metadata {
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Serialize)]
struct DeploymentSpec {
    replicas: u32,
    selector: Selector,
    template: PodTemplate,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Selector {
    match_labels: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct PodTemplate {
    metadata: Metadata,
    spec: PodSpec,
}

#[derive(Serialize)]
struct PodSpec {
    containers: Vec<Container>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    volumes: Vec<Volume>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Container {
    name: String,
    image: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_pull_policy: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    command: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<ResourceRequirements>,
    #[serde(skip_serializing_if = "Option::is_none")]
    security_context: Option<SecurityContext>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    volume_mounts: Vec<VolumeMount>,
}

/// Requests equal to limits: the container is given what it may use, and the pod's sum stays
/// within the pool's size.
#[derive(Serialize)]
struct ResourceRequirements {
    requests: BTreeMap<&'static str, String>,
    limits: BTreeMap<&'static str, String>,
}

impl From<Share> for ResourceRequirements {
    fn from(share: Share) -> Self {
        let quantities = BTreeMap::from([
            ("cpu", format!("{}m", share.milli_cpu)),
            ("memory", format!("{}Mi", share.memory)),
        ]);
        ResourceRequirements {
            requests: quantities.clone(),
            limits: quantities,
        }
    }
}

#[derive(Serialize)]
struct EnvVar {
    name: String,
    value: String,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct SecurityContext {
    #[serde(skip_serializing_if = "Option::is_none")]
    privileged: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_as_user: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_as_group: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seccomp_profile: Option<Profile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    app_armor_profile: Option<Profile>,
}

/// A seccomp or AppArmor profile (`SeccompProfile`, `AppArmorProfile`: the same shape).
#[derive(Serialize)]
struct Profile {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Profile {
    const UNCONFINED: Profile = Profile { kind: "Unconfined" };
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VolumeMount {
    name: &'static str,
    mount_path: &'static str,
}

impl VolumeMount {
    fn new(name: &'static str, mount_path: &'static str) -> Self {
        VolumeMount { name, mount_path }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Volume {
    name: String,
    empty_dir: EmptyDir,
}

#[derive(Serialize)]
struct EmptyDir {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_is_split_or_refused_with_its_numbers() {
        let size = |cpu: f64, memory: u64| Resources {
            cpu,
            memory,
            disk: 0,
        };
        let (runner, dind) = size(2.0, 4096).split(DockerMode::Dind).unwrap();
        assert_eq!(
            (runner, dind),
            (
                Share {
                    milli_cpu: 1000,
                    memory: 2048
                },
                Some(Share {
                    milli_cpu: 1000,
                    memory: 2048
                })
            )
        );
        assert_eq!(
            size(1.5, 600).split(DockerMode::Dind).unwrap_err(),
            "resources: memory 600 MB does not fit the runner (at least memory 256 MB) and the Docker daemon sidecar (at least memory 512 MB), which share the pod half and half: give at least memory 1024 MB"
        );
        assert_eq!(
            size(0.25, 600).split(DockerMode::Buildkit).unwrap_err(),
            "resources: cpu 0.25 and memory 600 MB do not fit the runner (at least cpu 0.25, memory 256 MB) and the BuildKit sidecar (at least cpu 0.25, memory 512 MB), which share the pod half and half: give at least cpu 0.5 and memory 1024 MB"
        );
        assert_eq!(
            size(0.25, 4096).split(DockerMode::Dind).unwrap_err(),
            "resources: cpu 0.25 does not fit the runner (at least cpu 0.25) and the Docker daemon sidecar (at least cpu 0.25), which share the pod half and half: give at least cpu 0.5"
        );
        assert_eq!(
            size(0.1, 4096).split(DockerMode::None).unwrap_err(),
            "resources: cpu 0.1 is below the runner's least of 0.25"
        );
        assert_eq!(
            size(0.1, 100).split(DockerMode::None).unwrap_err(),
            "resources: cpu 0.1 is below the runner's least of 0.25, and memory 100 MB is below the runner's least of 256 MB"
        );
        assert!(size(0.5, 600).split(DockerMode::None).is_ok());
        assert!(size(0.0, 600).split(DockerMode::None).is_err());
    }

    #[test]
    fn only_images_that_name_their_registry_are_fully_qualified() {
        for ok in [
            "docker.io/library/docker:28.5.2-dind",
            "registry.example.com:5000/ci/runner:1",
            "localhost/runner",
        ] {
            assert!(fully_qualified(ok), "{ok}");
        }
        for short in [
            "docker:dind",
            "docker",
            "library/docker:dind",
            "ghcr.io/",
            "",
        ] {
            assert!(!fully_qualified(short), "{short}");
        }
    }
}
