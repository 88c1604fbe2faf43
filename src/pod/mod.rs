//! The runner's pod when a pool asks for Docker or gives its size, the one place of that
//! concern: the pool's `docker` mode, sidecar image and job images, its `resources` and their
//! split between the containers, their checks, the variables they give the runner, and the
//! Kubernetes Deployment the provider writes for it, as one line of JSON. The settings are read
//! as extra specs (`ExtraSpecs::pod` hands them here).
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

use crate::manifest_safety::{self, EnvDelivery};
pub use crate::manifest_safety::{fully_qualified, MAX_IMAGE_LEN};

mod manifest;

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
        let runner = match mode {
            DockerMode::None => total,
            DockerMode::Dind | DockerMode::Buildkit => Share {
                milli_cpu: total.milli_cpu / 2,
                memory: total.memory / 2,
            },
        };
        let sidecar = (mode != DockerMode::None).then_some(Share {
            milli_cpu: total.milli_cpu - runner.milli_cpu,
            memory: total.memory - runner.memory,
        });
        let cpu_short = runner.milli_cpu < RUNNER_MIN.milli_cpu
            || sidecar.is_some_and(|s| s.milli_cpu < SIDECAR_MIN.milli_cpu);
        let memory_short = runner.memory < RUNNER_MIN.memory
            || sidecar.is_some_and(|s| s.memory < SIDECAR_MIN.memory);
        if !cpu_short && !memory_short {
            return Ok((runner, sidecar));
        }
        // Only what does not fit is named, with the least of it each container needs.
        if sidecar.is_none() {
            let below = [
                cpu_short.then(|| {
                    let (cpu, least) = (vcpus(total.milli_cpu), vcpus(RUNNER_MIN.milli_cpu));
                    format!("cpu {cpu} is below the runner's least of {least}")
                }),
                memory_short.then(|| {
                    let (memory, least) = (total.memory, RUNNER_MIN.memory);
                    format!("memory {memory} MB is below the runner's least of {least} MB")
                }),
            ];
            let below: Vec<String> = below.into_iter().flatten().collect();
            return Err(format!("resources: {}", below.join(", and ")));
        }
        let need = Share {
            milli_cpu: 2 * RUNNER_MIN.milli_cpu.max(SIDECAR_MIN.milli_cpu),
            memory: 2 * RUNNER_MIN.memory.max(SIDECAR_MIN.memory),
        };
        let short = |share: Share| {
            let cpu = cpu_short.then(|| format!("cpu {}", vcpus(share.milli_cpu)));
            let memory = memory_short.then(|| format!("memory {} MB", share.memory));
            cpu.into_iter().chain(memory).collect::<Vec<_>>()
        };
        let sidecar = match mode {
            DockerMode::Dind => "the Docker daemon sidecar",
            _ => "the BuildKit sidecar",
        };
        let verb = if cpu_short && memory_short {
            "do"
        } else {
            "does"
        };
        Err(format!(
            "resources: {} {verb} not fit the runner (at least {}) and {} (at least {}), which share the pod half and half: give at least {}",
            short(total).join(" and "),
            short(RUNNER_MIN).join(", "),
            sidecar,
            short(SIDECAR_MIN).join(", "),
            short(need).join(" and "),
        ))
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

/// The name of the Docker daemon's container in the pod.
pub const DIND_CONTAINER: &str = "dind";
/// The daemon's socket, in the emptyDir both containers mount at `/run/dind`.
pub const DIND_DOCKER_HOST: &str = "unix:///run/dind/docker.sock";

/// The pool's Docker mode (docs/runner-contract.md, "Docker in the runner's pod"); absent for
/// a pool without Docker, as on runners made by earlier releases.
pub const ENV_DOCKER: &str = "RUNNER_DOCKER";
// The variables a Docker pod gives the runner besides `RUNNER_DOCKER` (docs/runner-contract.md,
// "Docker in the runner's pod"). `runner_env::RESERVED` holds them from a pool's `env`, all but
// `BUILDKIT_HOST`, as in every release so far: a pool's own value of it is replaced in a
// buildkit pod and kept in the others.
pub const ENV_DOCKER_HOST: &str = "DOCKER_HOST";
pub const ENV_DEFAULT_JOB_IMAGE: &str = "RUNNER_DEFAULT_JOB_IMAGE";
pub const ENV_JOB_IMAGES: &str = "RUNNER_JOB_IMAGES";
const ENV_BUILDKIT_HOST: &str = "BUILDKIT_HOST";

/// The most labels `job_images` may map: each becomes part of one environment variable of the
/// runner (`RUNNER_JOB_IMAGES`), which stays below some 20 KB with them.
pub const MAX_JOB_IMAGES: usize = 32;
/// The longest label `job_images` may name, in bytes.
pub const MAX_LABEL_LEN: usize = 64;

/// The dind sidecar's daemon flag for the mirror at `url` (Docker Hub images only: dockerd asks
/// a mirror for no other registry).
pub fn dockerd_flag(url: &str) -> String {
    format!("--registry-mirror={url}")
}

/// `buildkitd.toml` for the mirror at `url`: Docker Hub mirrored by its `host:port`, and that
/// host spoken to in plain HTTP unless the URL is `https` (docs/site-cache.md, "Pointing the
/// daemons at the mirror").
pub fn buildkitd_toml(url: &str) -> String {
    let (host, http) = match url.strip_prefix("http://") {
        Some(host) => (host, true),
        None => (url.strip_prefix("https://").unwrap_or(url), false),
    };
    let mut toml = format!("[registry.\"docker.io\"]\n  mirrors = [\"{host}\"]\n");
    if http {
        toml.push_str(&format!("\n[registry.\"{host}\"]\n  http = true\n"));
    }
    toml
}

/// What a pool's extra specs ask of its pod (`ExtraSpecs::pod`): its Docker settings, and its
/// size as split between the containers when the specs were read (the one split of a command).
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// Which sidecar the pod has, if any.
    pub docker: DockerMode,
    /// The sidecar's image, when the pool names one.
    pub docker_image: Option<&'a String>,
    /// `dind`: label -> job image.
    pub job_images: &'a BTreeMap<String, String>,
    /// `dind`: the job image of the labels `job_images` does not map.
    pub default_job_image: Option<&'a String>,
    /// The runner's and the sidecar's requests and limits, when the pool gives a size.
    pub shares: Option<(Share, Option<Share>)>,
}

impl Asked<'_> {
    /// The pool's Docker settings and size against its resolved container. The runner's pod
    /// is a manifest of the provider's: only deployment kubernetes carries one, and
    /// `envvars_yaml` would put the runner's secrets into the sidecar after the values that
    /// blank them there (docs/edge-connect-behaviours.md B27). Images are fully qualified
    /// (B28). `whence(key)` says where the container's `deployment` or `env_delivery` came
    /// from, and what to give the pool instead when it was the config's.
    pub fn check(
        &self,
        container: &manifest_safety::Container,
        whence: &dyn Fn(&str) -> (String, &'static str),
    ) -> Result<(), String> {
        let mode = self.docker;
        let kubernetes = container.deployment == manifest_safety::Deployment::Kubernetes;
        let docker_deployment = || {
            let (source, advice) = whence("deployment");
            format!("{source} is docker{advice}")
        };
        if self.shares.is_some() && !kubernetes {
            return Err(format!(
                "resources: needs deployment kubernetes, and {}",
                docker_deployment()
            ));
        }
        if mode != DockerMode::Dind {
            // A buildkit pod runs no job containers: its labels stay host labels.
            let (dind, either) = ("docker = \"dind\"", "docker = \"dind\" or \"buildkit\"");
            let image = self.docker_image.is_some() && mode == DockerMode::None;
            for (key, set, needs) in [
                ("docker_image", image, either),
                ("job_images", !self.job_images.is_empty(), dind),
                ("default_job_image", self.default_job_image.is_some(), dind),
            ] {
                if set {
                    return Err(format!("{key}: needs {needs}"));
                }
            }
            if mode == DockerMode::None {
                return Ok(());
            }
        }
        if !kubernetes {
            return Err(format!(
                "docker: \"{}\" needs deployment kubernetes, and {}",
                mode.as_str(),
                docker_deployment()
            ));
        }
        if container.env_delivery != EnvDelivery::EnvVars {
            let (source, advice) = whence("env_delivery");
            return Err(format!(
                "docker: \"{}\" needs env_delivery env_vars, and {source} is envvars_yaml, which would hand the runner's secrets to the sidecar{advice}",
                mode.as_str(),
            ));
        }
        let labelled = self.job_images.iter();
        let images = [
            ("docker_image".to_string(), self.docker_image),
            ("default_job_image".to_string(), self.default_job_image),
        ]
        .into_iter()
        .filter_map(|(key, image)| Some((key, image?)))
        .chain(labelled.map(|(label, i)| (format!("job_images.{}", crate::text::echo(label)), i)));
        for (key, image) in images {
            if image.len() > MAX_IMAGE_LEN {
                return Err(format!(
                    "{key}: {} bytes is longer than any image reference ({MAX_IMAGE_LEN} at most)",
                    image.len()
                ));
            }
            // The runner joins its labels with `,` (NAME:docker://IMAGE,...), and the example
            // entrypoint refuses an image that holds one (docs/runner-contract.md); no image
            // reference holds one either.
            if image.contains(',') {
                return Err(format!(
                    "{key}: `{}` holds a `,`, which no image reference holds and a runner label cannot carry",
                    crate::text::echo(image)
                ));
            }
            if !fully_qualified(image) {
                return Err(format!(
                    "{key}: `{}` does not name its registry; Edge Connect needs every image of the pod fully qualified (docker.io/library/...)",
                    crate::text::echo(image)
                ));
            }
        }
        if self.job_images.len() > MAX_JOB_IMAGES {
            return Err(format!(
                "job_images: {} labels are more than {MAX_JOB_IMAGES}, the most one runner's environment carries",
                self.job_images.len()
            ));
        }
        for label in self.job_images.keys() {
            if label.len() > MAX_LABEL_LEN {
                return Err(format!(
                    "job_images: a label of {} bytes is longer than {MAX_LABEL_LEN}",
                    label.len()
                ));
            }
            if label.is_empty()
                || label.contains([':', ','])
                || label.chars().any(char::is_whitespace)
            {
                return Err(format!(
                    "job_images: `{}` is not a runner label (no `:`, `,` or spaces)",
                    crate::text::echo(label)
                ));
            }
        }
        Ok(())
    }

    /// The runner's image as this pool needs it: a pool whose pod the provider writes (with
    /// `docker` or `resources`) needs it fully qualified, as the CRM reads the registry of every
    /// image of the pod (docs/edge-connect-behaviours.md B28). CreateInstance and `check
    /// --image` ask it.
    pub fn check_runner_image(&self, image: &str) -> Result<(), String> {
        if self.writes_pod() && !fully_qualified(image) {
            return Err(format!(
                "the pool's image `{}` does not name its registry; a pool with docker or resources needs it fully qualified (docker.io/..., ghcr.io/...), as Edge Connect reads the registry of every image of the pod",
                crate::text::echo(image)
            ));
        }
        Ok(())
    }

    /// True when the provider writes the pod: the platform's generator can give it neither a
    /// sidecar nor requests and limits.
    fn writes_pod(&self) -> bool {
        self.docker != DockerMode::None || self.shares.is_some()
    }

    /// What the runner is told of its sidecar (docs/runner-contract.md, "Docker in the runner's
    /// pod"), added to its plain variables `env`.
    pub fn runner_env(&self, env: &mut BTreeMap<String, String>) {
        let mut set = |name: &str, value: &str| env.insert(name.to_string(), value.to_string());
        if self.docker != DockerMode::None {
            set(ENV_DOCKER, self.docker.as_str());
        }
        if self.docker == DockerMode::Buildkit {
            set(ENV_BUILDKIT_HOST, BUILDKIT_HOST);
        }
        if self.docker == DockerMode::Dind {
            set(ENV_DOCKER_HOST, DIND_DOCKER_HOST);
            let default = self.default_job_image.map(String::as_str);
            set(ENV_DEFAULT_JOB_IMAGE, default.unwrap_or(DEFAULT_JOB_IMAGE));
            if !self.job_images.is_empty() {
                set(
                    ENV_JOB_IMAGES,
                    &serde_json::json!(self.job_images).to_string(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_daemon_flag_names_the_scheme_the_port_speaks() {
        assert_eq!(
            dockerd_flag(&crate::site_cache::mirror_url(
                "cache.example.net:10003",
                false
            )),
            "--registry-mirror=http://cache.example.net:10003"
        );
        assert_eq!(
            dockerd_flag(&crate::site_cache::mirror_url(
                "cache.example.net:5000",
                true
            )),
            "--registry-mirror=https://cache.example.net:5000"
        );
    }

    #[test]
    fn buildkit_is_told_plain_http_only_for_a_plain_port() {
        assert_eq!(
            buildkitd_toml("http://c.example.net:10003"),
            "[registry.\"docker.io\"]\n  mirrors = [\"c.example.net:10003\"]\n\n[registry.\"c.example.net:10003\"]\n  http = true\n"
        );
        assert_eq!(
            buildkitd_toml("https://c.example.net:5000"),
            "[registry.\"docker.io\"]\n  mirrors = [\"c.example.net:5000\"]\n"
        );
    }

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
