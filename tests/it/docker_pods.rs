//! Pools with Docker (issue 35): the runner's pod written by the provider as a manifest of its
//! own (docs/architecture.md, "The runner's pod written by the provider"), run as GARM runs
//! the binary against the simulator, which does with the manifest what the controller and the
//! CRM do (docs/edge-connect-behaviours.md B25-B31).

use edge_connect_sim::{CloudletSettings, ImageFault, ImageRule, PodSecurity, SimConfig};
use serde_json::{json, Value};

use crate::support::*;

/// CreateInstance of the Gitea fixture with these extra specs.
fn create_with(w: &World, name: &str, extra_specs: Value) -> Run {
    let mut v: Value =
        serde_json::from_str(&fixture_with("bootstrap-gitea.json", name, GITEA_POOL)).unwrap();
    v["extra_specs"] = extra_specs;
    w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", GITEA_POOL)],
        Some(&v.to_string()),
    )
}

/// The stored App's manifest, read as JSON.
fn manifest(w: &World, name: &str) -> Value {
    let app = w.app(name);
    let text = app["deployment_manifest"].as_str().expect("a manifest");
    assert!(!text.contains('\n'), "one line: {text}");
    serde_json::from_str(text).expect("the manifest is JSON")
}

/// The Gitea fixture's runner environment by name, in the order the provider lists it: the
/// plain variables, then the secret ones, without the proxy settings the daemon keeps.
const BLANKED: [&str; 26] = [
    "CALLBACK_URL",
    "DISABLE_RUNNER_UPDATE",
    "DOCKER_HOST",
    "EDGE_CONNECT_PLACEMENT",
    "FORGE_TYPE",
    "FORGE_URL",
    "GARM_CA_BUNDLE",
    "GARM_CONTROLLER_ID",
    "GARM_INSTANCE_NAME",
    "GARM_POOL_ID",
    "JIT_CONFIG_ENABLED",
    "METADATA_URL",
    "RUNNER_ARCH",
    "RUNNER_DEFAULT_JOB_IMAGE",
    "RUNNER_DOCKER",
    "RUNNER_DOWNLOAD_FILENAME",
    "RUNNER_DOWNLOAD_URL",
    "RUNNER_EPHEMERAL",
    "RUNNER_GROUP",
    "RUNNER_JOB_IMAGES",
    "RUNNER_LABELS",
    "RUNNER_NAME",
    "RUNNER_NO_DEFAULT_LABELS",
    "RUNNER_OS_TYPE",
    "RUNNER_WORKDIR",
    "BEARER_TOKEN",
];

#[test]
fn a_pool_without_docker_leaves_the_pod_to_the_platform() {
    let w = World::new();
    let r = create_with(&w, "garm-none1", json!({}));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let app = w.app("garm-none1");
    assert_eq!(app["deployment_generator"], "kubernetes-basic");
    assert!(app["env_vars"].get("RUNNER_DOCKER").is_none(), "{app}");
    assert!(app["env_vars"].get("DOCKER_HOST").is_none(), "{app}");
}

#[test]
fn a_dind_pool_stores_exactly_its_pod() {
    let w = World::new();
    let r = create_with(
        &w,
        "garm-dind1",
        json!({"docker": "dind", "job_images": {"ubuntu-latest": "docker.io/library/ubuntu:24.04"}}),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["status"], "running");
    let app = w.app("garm-dind1");
    assert!(
        app["deployment_generator"].is_null() || app["deployment_generator"] == "",
        "{app}"
    );
    let mut blank = vec![json!({"name": "DOCKER_TLS_CERTDIR", "value": ""})];
    blank.extend(BLANKED.iter().map(|n| json!({"name": n, "value": ""})));
    let mounts = json!([
        {"name": "work", "mountPath": "/runner/_work"},
        {"name": "dind-socket", "mountPath": "/run/dind"}
    ]);
    assert_eq!(
        manifest(&w, "garm-dind1"),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "garm-dind11-deployment"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"run": "garm-dind11"}},
                "template": {
                    "metadata": {"labels": {"run": "garm-dind11"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "runner",
                                "image": "registry.example.com/ci/gitea-runner:0.3.0",
                                "imagePullPolicy": "Always",
                                "volumeMounts": mounts
                            },
                            {
                                "name": "dind",
                                "image": "docker.io/library/docker:28.5.2-dind",
                                "args": ["dockerd", "--host=unix:///run/dind/docker.sock", "--group=123"],
                                "env": blank,
                                "securityContext": {"privileged": true},
                                "volumeMounts": [
                                    {"name": "work", "mountPath": "/runner/_work"},
                                    {"name": "dind-socket", "mountPath": "/run/dind"},
                                    {"name": "dind-storage", "mountPath": "/var/lib/docker"}
                                ]
                            }
                        ],
                        "volumes": [
                            {"name": "work", "emptyDir": {}},
                            {"name": "dind-socket", "emptyDir": {}},
                            {"name": "dind-storage", "emptyDir": {}}
                        ]
                    }
                }
            }
        })
    );
    let env = &app["env_vars"];
    assert_eq!(env["RUNNER_DOCKER"], "dind");
    assert_eq!(env["DOCKER_HOST"], "unix:///run/dind/docker.sock");
    assert_eq!(
        env["RUNNER_DEFAULT_JOB_IMAGE"],
        "docker.io/library/node:22-bookworm"
    );
    assert_eq!(
        env["RUNNER_JOB_IMAGES"],
        r#"{"ubuntu-latest":"docker.io/library/ubuntu:24.04"}"#
    );
    assert_eq!(w.app_inst_names(), ["garm-dind1"]);
    // What each container gets: the runner its whole environment, the sidecar only the proxy.
    let rows = w.sim.containers();
    let pod = rows
        .iter()
        .find(|r| r["name"] == "garm-dind1")
        .and_then(|r| r["pod"].as_array())
        .expect("the pod's containers");
    let (runner, dind) = (&pod[0]["env"], &pod[1]["env"]);
    assert_eq!(
        (pod[0]["name"].as_str(), pod[1]["name"].as_str()),
        (Some("runner"), Some("dind"))
    );
    assert!(runner["BEARER_TOKEN"]
        .as_str()
        .is_some_and(|t| t.len() > 20));
    assert_eq!(runner["DOCKER_HOST"], "unix:///run/dind/docker.sock");
    let secrets = app["secret_env_vars"].as_object().expect("secrets").clone();
    for (name, value) in dind.as_object().expect("env") {
        let proxy = name.to_ascii_uppercase().ends_with("_PROXY");
        assert_eq!(value == "", !proxy, "{name}={value}");
    }
    assert_eq!(dind["HTTPS_PROXY"], secrets["HTTPS_PROXY"]);
}

#[test]
fn a_buildkit_pool_stores_exactly_its_pod() {
    let w = World::new();
    let r = create_with(&w, "garm-bk1", json!({"docker": "buildkit"}));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["status"], "running");
    // The runner's environment of a buildkit pool: BUILDKIT_HOST instead of dind's variables.
    let blank: Vec<Value> = std::iter::once("BUILDKIT_HOST")
        .chain(BLANKED.into_iter().filter(|n| {
            ![
                "DOCKER_HOST",
                "RUNNER_DEFAULT_JOB_IMAGE",
                "RUNNER_JOB_IMAGES",
            ]
            .contains(n)
        }))
        .map(|n| json!({"name": n, "value": ""}))
        .collect();
    assert_eq!(
        manifest(&w, "garm-bk1"),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "garm-bk11-deployment"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"run": "garm-bk11"}},
                "template": {
                    "metadata": {"labels": {"run": "garm-bk11"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "runner",
                                "image": "registry.example.com/ci/gitea-runner:0.3.0",
                                "imagePullPolicy": "Always"
                            },
                            {
                                "name": "buildkitd",
                                "image": "docker.io/moby/buildkit:v0.32.2-rootless",
                                "args": ["--oci-worker-no-process-sandbox", "--addr", "tcp://127.0.0.1:1234"],
                                "env": blank,
                                "securityContext": {
                                    "runAsUser": 1000,
                                    "runAsGroup": 1000,
                                    "seccompProfile": {"type": "Unconfined"},
                                    "appArmorProfile": {"type": "Unconfined"}
                                },
                                "volumeMounts": [
                                    {"name": "buildkit-state", "mountPath": "/home/user/.local/share/buildkit"}
                                ]
                            }
                        ],
                        "volumes": [{"name": "buildkit-state", "emptyDir": {}}]
                    }
                }
            }
        })
    );
    let app = w.app("garm-bk1");
    let env = &app["env_vars"];
    assert_eq!(env["RUNNER_DOCKER"], "buildkit");
    assert_eq!(env["BUILDKIT_HOST"], "tcp://127.0.0.1:1234");
    for absent in [
        "DOCKER_HOST",
        "RUNNER_DEFAULT_JOB_IMAGE",
        "RUNNER_JOB_IMAGES",
    ] {
        assert!(env.get(absent).is_none(), "{absent}: {app}");
    }
    // What each container gets: the runner its whole environment, the sidecar only the proxy.
    let rows = w.sim.containers();
    let pod = rows
        .iter()
        .find(|r| r["name"] == "garm-bk1")
        .and_then(|r| r["pod"].as_array())
        .expect("the pod's containers");
    assert_eq!(pod[1]["name"], "buildkitd");
    assert_eq!(pod[0]["env"]["BUILDKIT_HOST"], "tcp://127.0.0.1:1234");
    let secrets = app["secret_env_vars"].as_object().expect("secrets").clone();
    for (name, value) in pod[1]["env"].as_object().expect("env") {
        let proxy = name.to_ascii_uppercase().ends_with("_PROXY");
        assert_eq!(value == "", !proxy, "{name}={value}");
    }
    assert_eq!(pod[1]["env"]["HTTPS_PROXY"], secrets["HTTPS_PROXY"]);

    // With a size, the runner and buildkitd share the pod half and half; the sidecar's image
    // may be another, fully qualified one.
    let r = create_with(
        &w,
        "garm-bk2",
        json!({"docker": "buildkit", "docker_image": "registry.example.com/mirror/buildkit:v0.32.2-rootless", "resources": {"cpu": 2, "memory": 4096}}),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let pod = manifest(&w, "garm-bk2");
    let containers = &pod["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["resources"], quantities("1000m", "2048Mi"));
    assert_eq!(containers[1]["resources"], quantities("1000m", "2048Mi"));
    assert_eq!(
        containers[1]["image"],
        "registry.example.com/mirror/buildkit:v0.32.2-rootless"
    );
    let mut without = containers.clone();
    for c in without.as_array_mut().expect("containers") {
        c.as_object_mut().expect("container").remove("resources");
    }
    let first = manifest(&w, "garm-bk1");
    let mut expected = first["spec"]["template"]["spec"]["containers"].clone();
    expected[1]["image"] = containers[1]["image"].clone();
    assert_eq!(without, expected);
    assert_eq!(w.app_inst_names(), ["garm-bk1", "garm-bk2"]);
    let r = create_with(
        &w,
        "garm-bk3",
        json!({"docker": "buildkit", "resources": {"cpu": 1, "memory": 1000}}),
    );
    assert_eq!(
        (r.code, r.stderr.trim()),
        (1, "invalid extra_specs: resources: memory 1000 MB does not fit the runner (at least memory 256 MB) and the BuildKit sidecar (at least memory 512 MB), which share the pod half and half: give at least memory 1024 MB")
    );
}

#[test]
fn a_site_with_pod_security_refuses_a_buildkit_pool_by_name_and_keeps_nothing() {
    for (level, line) in [
        (
            PodSecurity::Baseline,
            r#"TelekomOP/Munich forbids Unconfined seccomp and AppArmor profiles (Pod Security "baseline:latest": forbidden AppArmor profile (container "buildkitd" must not set AppArmor profile type to "Unconfined"), seccompProfile (container "buildkitd" must not set securityContext.seccompProfile.type to "Unconfined")): neither docker = "dind" nor docker = "buildkit" can run there; use docker = "none" for this site's pools, or another site"#,
        ),
        (
            PodSecurity::Restricted,
            r#"TelekomOP/Munich forbids Unconfined seccomp and AppArmor profiles (Pod Security "restricted:latest": forbidden AppArmor profile (container "buildkitd" must not set AppArmor profile type to "Unconfined"), allowPrivilegeEscalation != false (containers "runner", "buildkitd" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "runner", "buildkitd" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or containers "runner", "buildkitd" must set securityContext.runAsNonRoot=true), seccompProfile (container "buildkitd" must not set securityContext.seccompProfile.type to "Unconfined")): neither docker = "dind" nor docker = "buildkit" can run there; this policy refuses a runner without Docker too; list another site"#,
        ),
    ] {
        let w = munich(vec![], |s| s.pod_security = level);
        let r = create_with(&w, "garm-bk4", json!({"docker": "buildkit"}));
        assert_eq!((r.code, r.stderr.trim()), (1, line));
        w.assert_nothing_left();
    }
}

#[test]
fn garm_hears_whether_a_buildkit_pool_is_valid_before_it_makes_the_pool() {
    let w = World::new();
    let validate = |specs: &str| {
        w.garm(
            "ValidatePoolInfo",
            &[
                ("GARM_INTERFACE_VERSION", "v0.1.1"),
                ("GARM_POOL_EXTRASPECS", &crate::input_bounds::base64(specs)),
            ],
            None,
        )
    };
    let r = validate(r#"{"docker":"buildkit","resources":{"cpu":2,"memory":4096,"disk":20}}"#);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = validate(r#"{"docker":"buildkit","docker_image":"moby/buildkit:rootless"}"#);
    assert_eq!(
        (r.code, r.stderr.trim()),
        (
            1,
            "invalid extra_specs: docker_image: `moby/buildkit:rootless` does not name its registry; Edge Connect needs every image of the pod fully qualified (docker.io/library/...)"
        )
    );
    assert_eq!(w.calls("CreateApp"), 0);
}

/// The Munich site with its CRM central (what it cannot start, the controller undoes: B7) and
/// these settings, on a simulator whose `images` fail as they say.
fn munich(images: Vec<ImageRule>, settings: impl FnOnce(&mut CloudletSettings)) -> World {
    let mut site = CloudletSettings {
        crm_on_edge: false,
        ..CloudletSettings::new("TelekomOP", "Munich")
    };
    settings(&mut site);
    let config = SimConfig {
        images,
        cloudlet_settings: vec![site],
        ..SimConfig::default()
    };
    World::with_sim(config, Site::Zone, "")
}

#[test]
fn a_site_that_forbids_privileged_pods_refuses_a_dind_pool_by_name_and_keeps_nothing() {
    let w = munich(vec![], |s| s.pod_security = PodSecurity::Baseline);
    let r = create_with(&w, "garm-dind2", json!({"docker": "dind"}));
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        r#"TelekomOP/Munich forbids privileged pods (Pod Security "baseline:latest": privileged (container "dind" must not set securityContext.privileged=true)): neither docker = "dind" nor docker = "buildkit" can run there; use docker = "none" for this site's pools, or another site"#
    );
    w.assert_nothing_left();
    // The same site runs a pool without Docker.
    let r = create_with(&w, "garm-none2", json!({}));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_sidecar_that_cannot_start_is_named_and_nothing_is_left() {
    let pull_fails = ImageRule::new(
        "docker.io/library/docker:28.5.2-dind",
        ImageFault::CannotPull,
    );
    let w = munich(vec![pull_fails], |_| {});
    let r = create_with(&w, "garm-dind3", json!({"docker": "dind"}));
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        "the Docker daemon sidecar (container dind) cannot pull its image on TelekomOP/Munich (ImagePullBackOff): check extra_specs.docker_image, or the site's access to docker.io"
    );
    w.assert_nothing_left();
    let r = create_with(
        &w,
        "garm-bk5",
        json!({"docker": "buildkit", "docker_image": "docker.io/library/docker:28.5.2-dind"}),
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        "the BuildKit sidecar (container buildkitd) cannot pull its image on TelekomOP/Munich (ImagePullBackOff): check extra_specs.docker_image, or the site's access to docker.io"
    );
    w.assert_nothing_left();
}

#[test]
fn docker_settings_edge_connect_cannot_carry_are_refused_before_any_call() {
    let w = World::new();
    for (specs, line) in [
        (
            json!({"docker": "dind", "docker_image": "docker:dind"}),
            "invalid extra_specs: docker_image: `docker:dind` does not name its registry; Edge Connect needs every image of the pod fully qualified (docker.io/library/...)",
        ),
        (
            json!({"docker": "dind", "deployment": "docker", "command_args": []}),
            r#"invalid extra_specs: docker: "dind" needs deployment kubernetes, and extra_specs.deployment is docker"#,
        ),
        (
            json!({"docker": "dind", "env_delivery": "envvars_yaml"}),
            r#"invalid extra_specs: docker: "dind" needs env_delivery env_vars, and extra_specs.env_delivery is envvars_yaml, which would hand the runner's secrets to the sidecar"#,
        ),
        (
            json!({"default_job_image": "docker.io/library/ubuntu:24.04"}),
            r#"invalid extra_specs: default_job_image: needs docker = "dind""#,
        ),
        (
            json!({"docker": "bake"}),
            "invalid extra_specs: docker: unknown variant `bake` (allowed here: `none`, `dind`, `buildkit`)",
        ),
        (
            json!({"docker": "buildkit", "job_images": {"x": "docker.io/library/ubuntu:24.04"}}),
            r#"invalid extra_specs: job_images: needs docker = "dind""#,
        ),
        (
            json!({"docker_image": "docker.io/moby/buildkit:v0.32.2-rootless"}),
            r#"invalid extra_specs: docker_image: needs docker = "dind" or "buildkit""#,
        ),
        (
            json!({"docker": "buildkit", "env_delivery": "envvars_yaml"}),
            r#"invalid extra_specs: docker: "buildkit" needs env_delivery env_vars, and extra_specs.env_delivery is envvars_yaml, which would hand the runner's secrets to the sidecar"#,
        ),
    ] {
        let r = create_with(&w, "garm-bad1", specs.clone());
        assert_eq!((r.code, r.stderr.trim()), (1, line), "{specs}");
    }
    assert_eq!(w.calls("CreateApp"), 0);
    assert!(w.app_names().is_empty());
}

#[test]
fn the_example_pool_passes_and_garm_hears_a_bad_one_before_it_makes_a_pool() {
    for example in [
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/extra-specs.dind.example.json"
        ),
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/extra-specs.buildkit.example.json"
        ),
    ] {
        let r = run(command().args(["validate-extra-specs", example]), None);
        assert_eq!(r.code, 0, "{example}: {}", r.stderr);
    }
    let w = World::new();
    let specs = crate::input_bounds::base64(r#"{"docker":"dind","job_images":{"x":"ubuntu"}}"#);
    let r = w.garm(
        "ValidatePoolInfo",
        &[
            ("GARM_INTERFACE_VERSION", "v0.1.1"),
            ("GARM_POOL_EXTRASPECS", &specs),
        ],
        None,
    );
    assert_eq!(
        (r.code, r.stderr.trim()),
        (
            1,
            "invalid extra_specs: job_images.x: `ubuntu` does not name its registry; Edge Connect needs every image of the pod fully qualified (docker.io/library/...)"
        )
    );
}

#[test]
#[ignore = "measurement for BENCHMARKS.md: cargo test --test it -- --ignored docker_pod_timings --nocapture"]
fn docker_pod_timings() {
    use std::time::Instant;
    println!("| case | CRM | s to CreateInstance exit | exit | requests | left on Edge Connect |");
    println!("|---|---|---|---|---|---|");
    for (level, name) in [
        (PodSecurity::Baseline, "baseline"),
        (PodSecurity::Restricted, "restricted"),
    ] {
        for central in [true, false] {
            let w = munich(vec![], |s| {
                s.pod_security = level;
                s.crm_on_edge = !central;
            });
            let before = w.sim.request_log().len();
            let started = Instant::now();
            let r = create_with(&w, "garm-t1", json!({"docker": "dind"}));
            let secs = started.elapsed().as_secs_f64();
            let requests = w.sim.request_log().len() - before;
            let left = w.app_names().len() + w.app_inst_names().len();
            println!(
                "| dind pool on a `{name}` site | {} | {secs:.1} | {} | {requests} | {left} |",
                if central { "central" } else { "on the edge" },
                r.code
            );
        }
    }
    println!();
    println!("| pool | runs | median s to CreateInstance exit | requests per CreateInstance |");
    println!("|---|---|---|---|");
    for (pool, specs) in [("none", json!({})), ("dind", json!({"docker": "dind"}))] {
        let w = World::new();
        let mut secs = Vec::new();
        let mut requests = Vec::new();
        for i in 0..15 {
            let before = w.sim.request_log().len();
            let started = Instant::now();
            let r = create_with(&w, &format!("garm-{pool}-{i}"), specs.clone());
            secs.push(started.elapsed().as_secs_f64());
            requests.push(w.sim.request_log().len() - before);
            assert_eq!(r.code, 0, "{}", r.stderr);
        }
        secs.sort_by(|a, b| a.total_cmp(b));
        requests.dedup();
        println!(
            "| `{pool}` | 15 | {:.3} | {requests:?} |",
            secs[secs.len() / 2]
        );
    }
}

#[test]
fn check_deploy_test_proves_a_docker_pools_pod_on_each_site() {
    for (docker, refusal) in [
        (
            "dind",
            r#"TelekomOP/Munich forbids privileged pods (Pod Security "baseline:latest": privileged (container "dind" must not set securityContext.privileged=true))"#,
        ),
        (
            "buildkit",
            r#"TelekomOP/Munich forbids Unconfined seccomp and AppArmor profiles (Pod Security "baseline:latest": forbidden AppArmor profile (container "buildkitd" must not set AppArmor profile type to "Unconfined"), seccompProfile (container "buildkitd" must not set securityContext.seccompProfile.type to "Unconfined"))"#,
        ),
    ] {
        let mut config = two_zones();
        config.cloudlet_settings = vec![CloudletSettings {
            pod_security: PodSecurity::Baseline,
            crm_on_edge: false,
            ..CloudletSettings::new("TelekomOP", "Munich")
        }];
        let w = World::with_sim(config, Site::Zone, "");
        let specs = w.dir.path().join("specs.json");
        std::fs::write(
            &specs,
            json!({"docker": docker, "zones": [{"organization": "TelekomOP", "name": "Munich"}, {"organization": "TelekomOP", "name": "Berlin"}]}).to_string(),
        )
        .unwrap();
        let specs = specs.display().to_string();
        let image = "registry.example.com/ci/runner:13";
        let r = w.cli(&[
            "check",
            "--extra-specs",
            &specs,
            "--image",
            image,
            "--deploy-test",
        ]);
        assert_eq!(r.code, 1, "{}", r.stdout);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert!(
            lines.contains(&format!(r#"✗ deploy test zone TelekomOP/Munich: {refusal}: neither docker = "dind" nor docker = "buildkit" can run there; use docker = "none" for this site's pools, or another site"#).as_str()),
            "{}",
            r.stdout
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&format!(
                "✓ deploy test zone TelekomOP/Berlin: {image} runs there (CreateInstance "
            ))),
            "{}",
            r.stdout
        );
        w.assert_nothing_left();
    }
}

fn quantities(cpu: &str, memory: &str) -> Value {
    json!({"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}})
}

#[test]
fn a_sized_pool_sends_its_size_instead_of_a_flavor_and_splits_it_between_the_containers() {
    let w = World::new();
    let r = create_with(
        &w,
        "garm-size1",
        json!({"resources": {"cpu": 1.5, "memory": 2048, "disk": 10}}),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let app = w.app("garm-size1");
    assert!(
        app["default_flavor"]["name"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{app}"
    );
    assert_eq!(
        app["kubernetes_resources"]["cpu_pool"]["total_vcpus"],
        "1.5"
    );
    assert_eq!(
        app["kubernetes_resources"]["cpu_pool"]["total_memory"],
        2048
    );
    assert_eq!(app["kubernetes_resources"]["cpu_pool"]["total_disk"], 10);
    assert_eq!(
        manifest(&w, "garm-size1"),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "garm-size11-deployment"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"run": "garm-size11"}},
                "template": {
                    "metadata": {"labels": {"run": "garm-size11"}},
                    "spec": {"containers": [{
                        "name": "runner",
                        "image": "registry.example.com/ci/gitea-runner:0.3.0",
                        "imagePullPolicy": "Always",
                        "resources": quantities("1500m", "2048Mi")
                    }]}
                }
            }
        })
    );
    assert!(app["env_vars"].get("RUNNER_DOCKER").is_none(), "{app}");

    let r = create_with(
        &w,
        "garm-size2",
        json!({"docker": "dind", "resources": {"cpu": 2, "memory": 4096}}),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let pod = manifest(&w, "garm-size2");
    let containers = &pod["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["resources"], quantities("1000m", "2048Mi"));
    assert_eq!(containers[1]["resources"], quantities("1000m", "2048Mi"));
    assert_eq!(w.app_inst_names(), ["garm-size1", "garm-size2"]);
}

/// GARM's pool flavor does not size a pool that gives `resources`: the create uses the size
/// and says in the log that the flavor is not used (issue 44; README, "A runner's size").
#[test]
fn a_sized_pool_says_that_garms_pool_flavor_is_not_used() {
    let w = World::new();
    let specs = json!({"resources": {"cpu": 1, "memory": 1024}});
    let r = w.create_image("garm-size3", IMAGE, Some(specs));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        w.app("garm-size3")["kubernetes_resources"]["cpu_pool"]["total_memory"],
        1024
    );
    assert_has(&w.log_text(), "WARN garm{command=CreateInstance");
    assert_has(
        &w.log_text(),
        "the pool's flavor EU.small is not used: extra_specs.resources gives the runner's size",
    );
}

#[test]
fn a_size_that_does_not_hold_the_pod_is_refused_before_any_call_with_its_numbers() {
    let w = World::new();
    for (specs, line) in [
        (
            json!({"docker": "dind", "resources": {"cpu": 1.5, "memory": 600}}),
            "invalid extra_specs: resources: memory 600 MB does not fit the runner (at least memory 256 MB) and the Docker daemon sidecar (at least memory 512 MB), which share the pod half and half: give at least memory 1024 MB",
        ),
        (
            json!({"flavor": "EU.small", "resources": {"cpu": 1, "memory": 1024}}),
            "invalid extra_specs: give flavor or resources, not both: Edge Connect takes one or the other",
        ),
    ] {
        let r = create_with(&w, "garm-bad2", specs.clone());
        assert_eq!((r.code, r.stderr.trim()), (1, line), "{specs}");
    }
    assert_eq!(w.calls("CreateApp"), 0);
}

#[test]
fn a_runner_killed_for_memory_names_its_memory_and_the_setting() {
    let oom = ImageRule::new(
        "registry.example.com/ci/gitea-runner:0.3.0",
        ImageFault::Waits("OOMKilled"),
    );
    let w = munich(vec![oom], |_| {});
    w.edit_config(|t| in_edge_connect(t, "start_failure_grace_secs = 1"));
    let r = create_with(
        &w,
        "garm-oom1",
        json!({"resources": {"cpu": 1, "memory": 1024}}),
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        "the runner's container ran out of its memory of 1024 MB on TelekomOP/Munich (OOMKilled): raise extra_specs.resources.memory"
    );
    w.assert_nothing_left();
}
