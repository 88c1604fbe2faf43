//! The Deployment of a pod the provider writes (`Asked::manifest`), from typed objects with the
//! field names of the Kubernetes API.

use std::collections::BTreeMap;

use edge_connect::proxy::{HTTPS_PROXY, HTTP_PROXY, NO_PROXY};
use serde::Serialize;

use super::{
    Asked, DockerMode, Share, BUILDKIT_CONTAINER, BUILDKIT_HOST, DEFAULT_BUILDKIT_IMAGE,
    DEFAULT_DIND_IMAGE, DIND_CONTAINER, DIND_DOCKER_HOST,
};
use crate::manifest_safety;

/// The rootless image's user and group (moby/buildkit `Dockerfile`, stage `rootless`).
const BUILDKIT_UID: u32 = 1000;
/// buildkitd's state: an emptyDir, as the image's VOLUME is not honoured by Kubernetes.
const BUILDKIT_STATE_DIR: &str = "/home/user/.local/share/buildkit";

/// Where both containers of a dind pod mount the daemon's socket.
const DIND_SOCKET_DIR: &str = "/run/dind";
/// The group that owns the daemon's socket: the `docker` group of the runner images.
const DOCKER_GID: u32 = 123;
/// The runner's work directory (`RUNNER_WORKDIR`), mounted at the same path in the daemon so
/// that the bind mounts a job asks for resolve there.
const WORKDIR: &str = "/runner/_work";

/// Variables a sidecar keeps from the runner's environment: the proxy its daemon pulls
/// through, as the runner is given it (`runner_env`). Every other variable of the runner is
/// overridden with an empty value in the sidecar (docs/edge-connect-behaviours.md B27).
const SIDECAR_KEEPS: [[&str; 2]; 3] = [HTTP_PROXY, HTTPS_PROXY, NO_PROXY];

impl Asked<'_> {
    /// The App's `deployment_manifest`: `None` when the platform's generator writes the pod;
    /// otherwise the Deployment as one line of JSON (no `\n---`, no `[[`: B25, B29), named
    /// `deployment` (the name the generator would give the App,
    /// `appinst_start::deployment_name`: the start watch reads the same pod either way), its
    /// runner container `image` running the pool's `container`, its sidecar given each name of
    /// `runner_env` (the runner's environment) empty. `Err` names what would not survive the
    /// platform.
    pub fn manifest<'e>(
        &self,
        deployment: String,
        image: &str,
        container: &manifest_safety::Container,
        runner_env: impl Iterator<Item = &'e String>,
    ) -> Result<Option<String>, String> {
        if !self.writes_pod() {
            return Ok(None);
        }
        self.check_runner_image(image)?;
        let blank = runner_env
            .filter(|n| !SIDECAR_KEEPS.iter().flatten().any(|keep| keep == n))
            .map(|n| EnvVar {
                name: n.clone(),
                value: String::new(),
            });
        let sidecar_image = match (self.docker_image, self.docker) {
            (Some(image), _) => image.clone(),
            (None, DockerMode::Buildkit) => DEFAULT_BUILDKIT_IMAGE.into(),
            (None, _) => DEFAULT_DIND_IMAGE.into(),
        };
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
            image: image.to_string(),
            image_pull_policy: Some("Always"),
            command: container
                .command
                .as_deref()
                .map(split_command)
                .unwrap_or_default(),
            args: container
                .command_args
                .iter()
                .map(|a| a.trim().to_string())
                .collect(),
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
            image: sidecar_image.clone(),
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
            image: sidecar_image.clone(),
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
        // As the generator's `run` label (`K8SSanitize` of name and version) would read for our
        // names: the Deployment's name without `-deployment`.
        let run = deployment
            .strip_suffix("-deployment")
            .unwrap_or(&deployment);
        let labels = BTreeMap::from([("run".to_string(), run.to_string())]);
        let deployment = Deployment {
            api_version: "apps/v1",
            kind: "Deployment",
            metadata: Metadata {
                name: deployment.clone(),
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
        Ok(Some(json))
    }
}

/// `command` in words as the platform's generator splits it (on spaces outside double quotes,
/// each word trimmed; main `pkg/deploygen/kube.go:203-215`), so that a pool's runner runs the
/// same command whoever writes its pod.
fn split_command(command: &str) -> Vec<String> {
    let mut quoted = false;
    command
        .split(|c: char| {
            if c == '"' {
                quoted = !quoted;
            }
            !quoted && c == ' '
        })
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
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
    fn commands_split_as_the_generator_splits_them() {
        assert_eq!(
            split_command(" /entrypoint.sh  \"--once now\" x"),
            ["/entrypoint.sh", "\"--once now\"", "x"]
        );
    }
}
