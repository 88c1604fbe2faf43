//! The Deployment of a pod the provider writes (`Asked::manifest`), as JSON with the field
//! names of the Kubernetes API (apps/v1 Deployment, core/v1 pod).

use edge_connect::proxy::{HTTPS_PROXY, HTTP_PROXY, NO_PROXY};
use serde_json::{json, Value};

use super::{
    Asked, DockerMode, Share, BUILDKIT_CONTAINER, BUILDKIT_HOST, DEFAULT_BUILDKIT_IMAGE,
    DEFAULT_DIND_IMAGE, DIND_CONTAINER, DIND_DOCKER_HOST,
};
use crate::manifest_safety;

/// The rootless image's user and group (moby/buildkit `Dockerfile`, stage `rootless`).
const BUILDKIT_UID: u32 = 1000;
/// buildkitd's state: an emptyDir, as the image's VOLUME is not honoured by Kubernetes.
const BUILDKIT_STATE_DIR: &str = "/home/user/.local/share/buildkit";
/// buildkitd's config with a mirror, written at start into its state directory (writable).
const BUILDKITD_TOML: &str = "/home/user/.local/share/buildkit/buildkitd.toml";

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
    /// platform. `mirror`: the URL of the site's Ready registry mirror, which the sidecar's
    /// daemon pulls Docker Hub's images through (docs/site-cache.md, "How the site cache is
    /// configured").
    pub fn manifest<'e>(
        &self,
        deployment: String,
        image: &str,
        container: &manifest_safety::Container,
        runner_env: impl Iterator<Item = &'e String>,
        mirror: Option<&str>,
    ) -> Result<Option<String>, String> {
        if !self.writes_pod() {
            return Ok(None);
        }
        self.check_runner_image(image)?;
        let blank = runner_env
            .filter(|n| !SIDECAR_KEEPS.iter().flatten().any(|keep| keep == n))
            .map(|n| json!({"name": n, "value": ""}));
        let sidecar_image = match (self.docker_image, self.docker) {
            (Some(image), _) => image.clone(),
            (None, DockerMode::Buildkit) => DEFAULT_BUILDKIT_IMAGE.into(),
            (None, _) => DEFAULT_DIND_IMAGE.into(),
        };
        let mut sidecar_env: Vec<Value> = blank.collect();
        let work = json!({"name": "work", "mountPath": WORKDIR});
        let socket = json!({"name": "dind-socket", "mountPath": DIND_SOCKET_DIR});
        let dind_pod = self.docker == DockerMode::Dind;
        let runner = json!({
            "name": "runner",
            "image": image,
            "imagePullPolicy": "Always",
            "command": container.command.as_deref().map(split_command),
            "args": container.command_args.iter().map(|a| a.trim()).collect::<Vec<_>>(),
            "resources": self.shares.map(|(runner, _)| resources(runner)),
            "volumeMounts": if dind_pod { vec![&work, &socket] } else { Vec::new() },
        });
        let sidecar_resources = self.shares.and_then(|(_, s)| s).map(resources);
        let (sidecar, volumes) = match self.docker {
            DockerMode::None => (None, Vec::new()),
            DockerMode::Buildkit => {
                let mut args = vec!["--oci-worker-no-process-sandbox", "--addr", BUILDKIT_HOST];
                // With a mirror, buildkitd reads it from a config file the shell writes first
                // from a variable (an App carries no files); `rootlesskit buildkitd` is the
                // image's own entrypoint, which the command then runs.
                let command = mirror.map(|url| {
                    args.extend(["--config", BUILDKITD_TOML]);
                    sidecar_env.push(json!({"name": "BUILDKITD_TOML", "value": super::buildkitd_toml(url)}));
                    json!(["sh", "-c", format!("printf '%s' \"$BUILDKITD_TOML\" > {BUILDKITD_TOML} && exec rootlesskit buildkitd \"$@\""), "buildkitd"])
                });
                let buildkitd = json!({
                    "name": BUILDKIT_CONTAINER,
                    "image": sidecar_image,
                    // The image's entrypoint is `rootlesskit buildkitd`; these go to buildkitd.
                    // No process sandbox: Kubernetes cannot unmask /proc for a pid namespace of
                    // its own.
                    "command": command,
                    "args": args,
                    "env": sidecar_env,
                    "resources": sidecar_resources,
                    "securityContext": {
                        // rootlesskit's unshare and the snapshotters' mount need both.
                        "seccompProfile": {"type": "Unconfined"},
                        "appArmorProfile": {"type": "Unconfined"},
                        "runAsUser": BUILDKIT_UID,
                        "runAsGroup": BUILDKIT_UID,
                    },
                    "volumeMounts": [{"name": "buildkit-state", "mountPath": BUILDKIT_STATE_DIR}],
                });
                (Some(buildkitd), vec!["buildkit-state"])
            }
            DockerMode::Dind => {
                // The image's entrypoint makes TLS certificates for a TCP listener when this is
                // set; the daemon listens on the socket only.
                sidecar_env.insert(0, json!({"name": "DOCKER_TLS_CERTDIR", "value": ""}));
                let args: Vec<String> = [
                    "dockerd".to_string(),
                    format!("--host={DIND_DOCKER_HOST}"),
                    format!("--group={DOCKER_GID}"),
                ]
                .into_iter()
                .chain(mirror.map(super::dockerd_flag))
                .collect();
                let dind = json!({
                    "name": DIND_CONTAINER,
                    "image": sidecar_image,
                    // The image's entrypoint sets up cgroups (its `dind` script) and runs these.
                    "args": args,
                    "env": sidecar_env,
                    "resources": sidecar_resources,
                    "securityContext": {"privileged": true},
                    "volumeMounts": [
                        work,
                        socket,
                        // The image's VOLUME is not honoured by Kubernetes; the daemon's overlay
                        // storage cannot live on the container's own overlay.
                        {"name": "dind-storage", "mountPath": "/var/lib/docker"},
                    ],
                });
                (Some(dind), vec!["work", "dind-socket", "dind-storage"])
            }
        };
        let containers: Vec<Value> = std::iter::once(runner).chain(sidecar).collect();
        // As the generator's `run` label (`K8SSanitize` of name and version) would read for our
        // names: the Deployment's name without `-deployment`.
        let run = deployment
            .strip_suffix("-deployment")
            .unwrap_or(&deployment);
        let mut deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": deployment},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"run": run}},
                "template": {
                    "metadata": {"labels": {"run": run}},
                    "spec": {
                        "containers": containers,
                        "volumes": volumes
                            .into_iter()
                            .map(|name| json!({"name": name, "emptyDir": {}}))
                            .collect::<Vec<_>>(),
                    },
                },
            },
        });
        leave_out_unset(&mut deployment);
        let json = deployment.to_string();
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

/// Requests equal to limits: the container is given what it may use, and the pod's sum stays
/// within the pool's size.
fn resources(share: Share) -> Value {
    let quantities = json!({
        "cpu": format!("{}m", share.milli_cpu),
        "memory": format!("{}Mi", share.memory),
    });
    json!({"requests": quantities, "limits": quantities})
}

/// Drops every field that is null or an empty list, as the Kubernetes API's own JSON omits an
/// unset field (`omitempty`): a container without a command, variables or mounts.
fn leave_out_unset(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.retain(|_, v| !(v.is_null() || v.as_array().is_some_and(Vec::is_empty)));
            fields.values_mut().for_each(leave_out_unset);
        }
        Value::Array(items) => items.iter_mut().for_each(leave_out_unset),
        _ => {}
    }
}

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
