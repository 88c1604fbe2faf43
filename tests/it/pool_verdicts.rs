//! One verdict on a pool, whichever door asks (issue 44): `check --extra-specs`,
//! `validate-extra-specs --config`, GARM's `ValidatePoolInfo` and CreateInstance judge every
//! pool under every config alike, each refusal naming the key and where its value came from
//! (the pool's `extra_specs` or the config's `edge_connect`), and CreateInstance refuses before
//! any call. The pools are the issue's: settings the runner or Edge Connect would refuse only
//! later (a `,` in a job image, an array where an object belongs, sizes and lists without
//! bound) and settings that only the config makes wrong.

use serde_json::{json, Value};

use crate::support::*;

/// The configs a pool is judged under: the defaults, and the two `[edge_connect]` settings a
/// pool's Docker or environment depends on.
const CONFIGS: [&str; 3] = [
    "",
    "deployment = \"docker\"",
    "env_delivery = \"envvars_yaml\"",
];

const DIND_UNDER_DOCKER: &str = r#"invalid extra_specs: docker: "dind" needs deployment kubernetes, and edge_connect.deployment in the provider config is docker; give the pool "deployment": "kubernetes""#;
const DIND_UNDER_YAML: &str = r#"invalid extra_specs: docker: "dind" needs env_delivery env_vars, and edge_connect.env_delivery in the provider config is envvars_yaml, which would hand the runner's secrets to the sidecar; give the pool "env_delivery": "env_vars""#;

/// Each pool and its verdict under each of [`CONFIGS`]: `None` valid, else the one line.
fn pools() -> Vec<(Value, [Option<String>; 3])> {
    let all = |line: &str| [Some(line.to_string()), Some(line.into()), Some(line.into())];
    // What is wrong with the pool alone is said first, under any config.
    let dind = [
        None,
        Some(DIND_UNDER_DOCKER.into()),
        Some(DIND_UNDER_YAML.into()),
    ];
    let labels: serde_json::Map<String, Value> = (0..33)
        .map(|i| (format!("l{i}"), json!("docker.io/library/node:22")))
        .collect();
    vec![
        (json!({}), [None, None, None]),
        (json!({"docker": "dind"}), dind),
        (
            json!({"docker": "dind", "deployment": "kubernetes", "env_delivery": "env_vars"}),
            [None, None, None],
        ),
        (
            json!({"resources": {"cpu": 2, "memory": 4096, "disk": 20}}),
            [
                None,
                Some(r#"invalid extra_specs: resources: needs deployment kubernetes, and edge_connect.deployment in the provider config is docker; give the pool "deployment": "kubernetes""#.into()),
                None,
            ],
        ),
        (
            json!({"env": {"NOTE": "one\ntwo"}}),
            [
                None,
                Some("invalid extra_specs: env NOTE: a line break cannot be stored in a docker env file (one k=v line per variable); edge_connect.deployment in the provider config is docker".into()),
                None,
            ],
        ),
        (
            json!({"env": {"NOTE": "[[ .Secret ]]"}}),
            [
                None,
                None,
                Some("invalid extra_specs: env NOTE: `[[` or `]]` would be taken as a template by Edge Connect's envVarsYaml processing; edge_connect.env_delivery in the provider config is envvars_yaml".into()),
            ],
        ),
        // The runner joins its labels with `,`; its entrypoint refuses such an image.
        (
            json!({"docker": "dind", "job_images": {"ubuntu": "docker.io/library/ubuntu:24.04,evil:host"}}),
            all("invalid extra_specs: job_images.ubuntu: `docker.io/library/ubuntu:24.04,evil:host` holds a `,`, which no image reference holds and a runner label cannot carry"),
        ),
        (
            json!({"docker": "dind", "default_job_image": "docker.io/library/node:22,x"}),
            all("invalid extra_specs: default_job_image: `docker.io/library/node:22,x` holds a `,`, which no image reference holds and a runner label cannot carry"),
        ),
        // serde's sequence form of a struct, which the schema does not describe.
        (
            json!({"resources": [2, 4096, 20]}),
            all("invalid extra_specs: resources: expected an object of cpu, memory and disk, got a list"),
        ),
        (
            json!({"zones": [["TelekomOP", "Munich"]]}),
            all("invalid extra_specs: zones[0]: expected an object of organization and name, got a list"),
        ),
        // Only what is below the least is named.
        (
            json!({"resources": {"cpu": 2, "memory": 4}}),
            all("invalid extra_specs: resources: memory 4 MB is below the runner's least of 256 MB"),
        ),
        (
            json!({"docker": "dind", "resources": {"cpu": 4, "memory": 600}}),
            all("invalid extra_specs: resources: memory 600 MB does not fit the runner (at least memory 256 MB) and the Docker daemon sidecar (at least memory 512 MB), which share the pod half and half: give at least memory 1024 MB"),
        ),
        (
            json!({"resources": {"cpu": 2, "memory": u64::MAX}}),
            all("invalid extra_specs: resources.memory: 18446744073709551615 is not the pod's memory in MB above 0 and at most 4194304 (4 TiB)"),
        ),
        (
            json!({"resources": {"cpu": 2, "memory": 4096, "disk": u64::MAX}}),
            all("invalid extra_specs: resources.disk: 18446744073709551615 is more than 65536 GB (64 TiB)"),
        ),
        (
            json!({"docker": "dind", "docker_image": format!("docker.io/library/{}", "d".repeat(600))}),
            all("invalid extra_specs: docker_image: 618 bytes is longer than any image reference (512 at most)"),
        ),
        (
            json!({"docker": "dind", "job_images": labels}),
            all("invalid extra_specs: job_images: 33 labels are more than 32, the most one runner's environment carries"),
        ),
    ]
}

/// What one door said: `None` for valid, else its one line of refusal.
type Verdict = Option<String>;

fn garm_verdict(r: &Run) -> Verdict {
    (r.code != 0).then(|| r.stderr.trim().to_string())
}

#[test]
fn check_validate_extra_specs_validate_pool_info_and_create_give_one_verdict() {
    let pools = pools();
    // Every door on every pool under every config is asked; what differs is listed at the end.
    let mut wrong = Vec::new();
    for (c, extra_config) in CONFIGS.iter().enumerate() {
        let w = World::with(
            edge_connect_sim::ApiGeneration::Gen3,
            Site::Zone,
            extra_config,
        );
        for (p, (pool, verdicts)) in pools.iter().enumerate() {
            let expected = &verdicts[c];
            let file = w.dir.path().join("specs.json");
            std::fs::write(&file, pool.to_string()).unwrap();
            let file = file.display().to_string();

            let r = w.cli(&["check", "--extra-specs", &file]);
            let line = r
                .stdout
                .lines()
                .find(|l| l.contains(" extra specs: "))
                .unwrap_or_else(|| panic!("no extra specs line in:\n{}", r.stdout));
            let check = match line.strip_prefix("✗ extra specs: ") {
                Some(refusal) => Some(refusal.to_string()),
                None => {
                    assert_eq!(line, "✓ extra specs: valid");
                    None
                }
            };

            let r = w.cli(&["validate-extra-specs", &file]);
            let validate = (r.code != 0).then(|| {
                let line = r.stderr.trim();
                line.strip_prefix("error: ").unwrap_or(line).to_string()
            });
            let under = format!("is valid under {}", w.config.display());
            if r.code == 0 && !r.stderr.contains(&under) {
                wrong.push(format!("validate-extra-specs does not say {under:?}"));
            }

            let encoded = crate::input_bounds::base64(&pool.to_string());
            let info = garm_verdict(&w.garm(
                "ValidatePoolInfo",
                &[
                    ("GARM_INTERFACE_VERSION", "v0.1.1"),
                    ("GARM_POOL_EXTRASPECS", &encoded),
                ],
                None,
            ));

            let calls_before = w.sim.request_log().len();
            let name = format!("garm-verdict-{c}-{p}");
            let r = w.create_edited(&name, |v| v["extra_specs"] = pool.clone());
            let create = garm_verdict(&r);
            match &create {
                None => {
                    if !w.app_names().contains(&name) {
                        wrong.push(format!("{name}: no App: {}", r.stderr));
                    }
                }
                Some(_) => {
                    if w.sim.request_log().len() != calls_before {
                        wrong.push(format!("{name}: refused after an Edge Connect call"));
                    }
                }
            }

            let doors = [
                ("check --extra-specs", &check),
                ("validate-extra-specs --config", &validate),
                ("ValidatePoolInfo", &info),
                ("CreateInstance", &create),
            ];
            for (door, verdict) in doors {
                if verdict != expected {
                    wrong.push(format!(
                        "{door} on {pool} under [edge_connect] {extra_config:?}: {verdict:?}, not {expected:?}"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn validate_extra_specs_without_a_config_judges_the_pool_alone_and_says_so() {
    let w = World::new();
    let file = w.dir.path().join("specs.json");
    std::fs::write(&file, r#"{"docker":"dind"}"#).unwrap();
    let r = run(command().arg("validate-extra-specs").arg(&file), None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stderr.trim(),
        format!(
            "✓ {} is valid (alone: give --config to judge it over a provider config)",
            file.display()
        )
    );
    // The extra specs themselves are an object too (a bootstrap with a list is refused by
    // GARM's own document's shape before the pool is read).
    std::fs::write(&file, r#"["EU.small"]"#).unwrap();
    let r = run(command().arg("validate-extra-specs").arg(&file), None);
    assert_eq!(
        (r.code, r.stderr.trim()),
        (
            1,
            "error: invalid extra_specs: expected an object of extra specs, got a list"
        )
    );
}

#[test]
fn the_schema_bounds_what_the_provider_bounds() {
    let schema = garm_provider_edge_connect::extra_specs::ExtraSpecs::json_schema().unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (pool, valid) in [
        (json!({"resources": {"cpu": 2, "memory": 4096}}), true),
        (json!({"resources": {"cpu": 2, "memory": u64::MAX}}), false),
        (
            json!({"resources": {"cpu": 2, "memory": 4096, "disk": 65537}}),
            false,
        ),
        (json!({"resources": {"cpu": 1025, "memory": 4096}}), false),
        (json!({"resources": [2, 4096, 20]}), false),
        (json!({"zones": [["TelekomOP", "Munich"]]}), false),
        (json!({"docker_image": "d".repeat(513)}), false),
        (json!({"default_job_image": "d".repeat(513)}), false),
        (json!({"job_images": {"x": "d".repeat(513)}}), false),
        (
            json!({"job_images": {"l".repeat(65): "docker.io/library/node:22"}}),
            false,
        ),
        (
            json!({"job_images": (0..33).map(|i| (format!("l{i}"), json!("docker.io/x/y"))).collect::<serde_json::Map<_, _>>()}),
            false,
        ),
        (
            json!({"job_images": (0..32).map(|i| (format!("l{i}"), json!("docker.io/x/y"))).collect::<serde_json::Map<_, _>>()}),
            true,
        ),
    ] {
        assert_eq!(validator.is_valid(&pool), valid, "{pool}");
    }
}

/// The provider config's tables are tables: TOML's arrays are read as serde's sequence form of
/// a struct too (`zone = ["TelekomOP", "Munich"]`), which the config's schema does not describe.
#[test]
fn the_configs_tables_are_not_read_from_arrays() {
    let w = World::new();
    let text = std::fs::read_to_string(&w.config).unwrap();
    let table = "[edge_connect.zone]\norganization = \"TelekomOP\"\nname = \"Munich\"\n";
    assert!(
        text.contains(table),
        "the test config places by zone:\n{text}"
    );
    let (before, _) = text.split_once("[edge_connect]").unwrap();
    let cases = [
        (
            text.replace(table, "").replace(
                "[edge_connect]\n",
                "[edge_connect]\nzone = [\"TelekomOP\", \"Munich\"]\n",
            ),
            "edge_connect.zone: expected an object of organization and name, got a list",
        ),
        (
            format!("{before}edge_connect = [\"http://127.0.0.1:1\", \"edp-developer-framework\", \"EU\"]\n"),
            "edge_connect: expected a table of Edge Connect settings, got a list",
        ),
    ];
    for (config, refusal) in cases {
        std::fs::write(&w.config, &config).unwrap();
        let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
        assert_eq!(r.code, 1, "{config}\n{}", r.stderr);
        assert_has(&r.stderr, refusal);
    }
    assert!(w.sim.request_log().is_empty());
}
