//! The container contract, end to end: what an AppInst's App carries for a GitHub JIT and a Gitea
//! bootstrap (read back from the simulator), that every variable is documented in
//! docs/runner-contract.md with the right secrecy, and that each extra-specs override changes the
//! request that reaches Edge Connect.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::*;
use edge_connect_sim::ApiGeneration;
use serde_json::{json, Value};

fn map_of(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn expected(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const COMMON: [(&str, &str); 9] = [
    ("GARM_CONTROLLER_ID", CONTROLLER),
    ("RUNNER_EPHEMERAL", "true"),
    ("RUNNER_NO_DEFAULT_LABELS", "true"),
    ("DISABLE_RUNNER_UPDATE", "true"),
    ("RUNNER_WORKDIR", "/runner/_work"),
    ("METADATA_URL", "https://garm.example.com/api/v1/metadata"),
    ("CALLBACK_URL", "https://garm.example.com/api/v1/callbacks"),
    ("RUNNER_OS_TYPE", "linux"),
    ("RUNNER_ARCH", "amd64"),
];

#[test]
fn github_jit_runner_gets_exactly_the_documented_environment() {
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-7hq2kx0d3mzt", POOL, &[])
            .code,
        0
    );
    let app = w.app("garm-7hq2kx0d3mzt");
    let mut want = expected(&COMMON);
    want.extend(expected(&[
        ("GARM_POOL_ID", POOL),
        ("GARM_INSTANCE_NAME", "garm-7hq2kx0d3mzt"),
        ("EDGE_CONNECT_PLACEMENT", "zone:TelekomOP/Munich"),
        ("RUNNER_NAME", "garm-7hq2kx0d3mzt"),
        ("FORGE_TYPE", "github"),
        ("FORGE_URL", "https://github.com/example-org"),
        ("GITHUB_URL", "https://github.com"),
        ("RUNNER_ORG", "example-org"),
        ("RUNNER_GROUP", ""),
        ("RUNNER_LABELS", ""),
        ("JIT_CONFIG_ENABLED", "true"),
        ("RUNNER_DOWNLOAD_URL", "https://github.com/actions/runner/releases/download/v2.330.0/actions-runner-linux-x64-2.330.0.tar.gz"),
        ("RUNNER_DOWNLOAD_FILENAME", "actions-runner-linux-x64-2.330.0.tar.gz"),
        ("RUNNER_DOWNLOAD_SHA256", "af5c33fa94d3cc33b8dca7b6b4bcb3f6d7b7b2b7e0a5d4b7c9b5f1e2d3c4b5a6"),
    ]));
    assert_eq!(map_of(&app["env_vars"]), want);
    let secrets: Vec<String> = map_of(&app["secret_env_vars"]).into_keys().collect();
    assert_eq!(secrets, vec!["BEARER_TOKEN"]);
}

#[test]
fn gitea_runner_gets_exactly_the_documented_environment() {
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-gitea.json", "garm-g1tea0runner", GITEA_POOL, &[])
            .code,
        0
    );
    let app = w.app("garm-g1tea0runner");
    let mut want = expected(&COMMON);
    want.extend(expected(&[
        ("GARM_POOL_ID", GITEA_POOL),
        ("GARM_INSTANCE_NAME", "garm-g1tea0runner"),
        ("EDGE_CONNECT_PLACEMENT", "zone:TelekomOP/Munich"),
        ("RUNNER_NAME", "garm-g1tea0runner"),
        ("FORGE_TYPE", "gitea"),
        ("FORGE_URL", "http://gitea.example.com/"),
        ("RUNNER_GROUP", ""),
        (
            "RUNNER_LABELS",
            "ubuntu-latest,runner-controller-id=f9286791-1589-4f39-a106-5b68c2a18af4,runner-pool-id=7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f",
        ),
        ("JIT_CONFIG_ENABLED", "false"),
        ("RUNNER_DOWNLOAD_URL", "https://dl.gitea.com/runner/v0.3.0/gitea-runner-0.3.0-linux-amd64"),
        ("RUNNER_DOWNLOAD_FILENAME", "gitea-runner-0.3.0-linux-amd64"),
        ("GARM_CA_BUNDLE", "-----BEGIN CERTIFICATE-----\nMIIBexample\n-----END CERTIFICATE-----\n"),
        ("NO_PROXY", "localhost,.example.com"),
        ("no_proxy", "localhost,.example.com"),
        ("RUNNER_TOOL_CACHE", "/opt/hostedtoolcache"),
    ]));
    assert_eq!(map_of(&app["env_vars"]), want);
    let secrets = map_of(&app["secret_env_vars"]);
    assert_eq!(
        secrets.keys().cloned().collect::<Vec<_>>(),
        vec![
            "BEARER_TOKEN",
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "http_proxy",
            "https_proxy"
        ]
    );
    assert_eq!(
        secrets["HTTP_PROXY"],
        "http://proxy-user:proxy-pass@proxy.example.com:3128"
    );
}

/// Variable names in the first column of the contract's tables, with their "Secret" column.
fn documented() -> BTreeMap<String, bool> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/runner-contract.md"
    ))
    .unwrap();
    let mut vars = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let secret = cells.iter().rev().nth(1).is_some_and(|c| c.contains("yes"));
        for name in cells[1].split(',').map(|n| n.trim().trim_matches('`')) {
            vars.insert(name.to_string(), secret);
        }
    }
    vars
}

#[test]
fn every_variable_is_documented_with_its_secrecy() {
    let docs = documented();
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-docs1", POOL, &[])
            .code,
        0
    );
    assert_eq!(
        w.create("bootstrap-gitea.json", "garm-docs2", GITEA_POOL, &[])
            .code,
        0
    );
    let bookkeeping = ["EDGE_CONNECT_PLACEMENT", "RUNNER_OS_TYPE", "RUNNER_ARCH"];
    let contract_text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/runner-contract.md"
    ))
    .unwrap();
    for name in ["garm-docs1", "garm-docs2"] {
        let app = w.app(name);
        for var in map_of(&app["env_vars"]).keys() {
            if var == "RUNNER_TOOL_CACHE" {
                continue; // set by the Gitea fixture's extra specs, not by the provider
            }
            if bookkeeping.contains(&var.as_str()) {
                assert!(
                    contract_text.contains(&format!("`{var}`")),
                    "{var} is mentioned in the contract"
                );
                continue;
            }
            assert_eq!(
                docs.get(var),
                Some(&false),
                "{var}: documented as a plain variable"
            );
        }
        for var in map_of(&app["secret_env_vars"]).keys() {
            assert_eq!(docs.get(var), Some(&true), "{var}: documented as a secret");
        }
    }
}

fn create_with_specs(w: &World, name: &str, specs: Value, vars: &[(&str, &str)]) -> Run {
    let mut v: Value =
        serde_json::from_str(&fixture_with("bootstrap-github-jit.json", name, POOL)).unwrap();
    v["extra_specs"] = specs;
    let mut all = vec![("GARM_POOL_ID", POOL)];
    all.extend_from_slice(vars);
    w.garm("CreateInstance", &all, Some(&v.to_string()))
}

#[test]
fn each_extra_spec_changes_the_request() {
    let w = World::new();
    let app = created(
        &w,
        "garm-specs1",
        json!({"flavor": "EU.large", "command": "/entrypoint.sh", "command_args": ["--once"], "env": {"TEAM": "edge"}}),
    );
    assert_eq!(app["default_flavor"]["name"], "EU.large");
    assert_eq!(app["command"], "/entrypoint.sh");
    assert_eq!(app["command_args"], json!(["--once"]));
    assert_eq!(app["env_vars"]["TEAM"], "edge");
    assert_eq!(app["deployment"], "kubernetes");

    let app = created(
        &w,
        "garm-specs2",
        json!({"deployment": "docker", "command": "/home/runner/run.sh"}),
    );
    assert_eq!(app["deployment"], "docker");
    assert_eq!(app["command"], "/home/runner/run.sh");
    assert!(app
        .get("command_args")
        .is_none_or(|a| a.as_array().is_none_or(|a| a.is_empty())));
    assert_eq!(app["env_vars"]["GARM_CONTROLLER_ID"], CONTROLLER_ID);

    let app = created(&w, "garm-specs3", json!({"env_delivery": "envvars_yaml"}));
    assert_envvars_yaml(&app);
    assert_eq!(app["deployment"], "kubernetes");
    // The instance is still found, listed and deleted through the YAML ownership data.
    assert_eq!(
        w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-specs3")], None)
            .code,
        0
    );

    let specs = json!({"image_pull_username": "robot$ci", "image_pull_password_env": "EDP_EDGE_CONNECT_REGISTRY_PASSWORD"});
    let r = create_with_specs(
        &w,
        "garm-specs4",
        specs.clone(),
        &[("EDP_EDGE_CONNECT_REGISTRY_PASSWORD", "registry-secret-1")],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let app = w.app("garm-specs4");
    assert_eq!(app["username"], "robot$ci");
    assert_eq!(app["credentials"], "registry-secret-1");
    assert!(!w.log_text().contains("registry-secret-1"));

    // The password variable missing: refused before any call, naming the variable.
    let before = w.sim.request_log().len();
    let r = create_with_specs(&w, "garm-specs5", specs, &[]);
    assert_eq!(r.code, 1);
    assert_has(&r.stderr, "EDP_EDGE_CONNECT_REGISTRY_PASSWORD");
    assert_eq!(w.sim.request_log().len(), before);

    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    let names: BTreeSet<String> = list
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        ["garm-specs1", "garm-specs2", "garm-specs3", "garm-specs4"]
            .map(String::from)
            .into()
    );
}

const CONTROLLER_ID: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";

/// The App carries the whole runner environment, secrets included, in one envVarsYaml config,
/// no `secret_env_vars`, and in `env_vars` only a copy of the ownership markers (ShowApp's
/// filter, docs/edge-connect-behaviours.md B23).
fn assert_envvars_yaml(app: &Value) {
    let env_vars = app["env_vars"].as_object().cloned().unwrap_or_default();
    let names: Vec<&str> = env_vars.keys().map(String::as_str).collect();
    assert_eq!(names, ["GARM_CONTROLLER_ID", "GARM_POOL_ID"], "{app}");
    assert_eq!(env_vars["GARM_CONTROLLER_ID"], CONTROLLER_ID);
    assert!(app
        .get("secret_env_vars")
        .is_none_or(|e| e.as_object().is_none_or(|m| m.is_empty())));
    let yaml = app["configs"][0]["config"].as_str().unwrap_or_default();
    assert_eq!(app["configs"][0]["kind"], "envVarsYaml");
    assert!(
        yaml.contains(&format!(
            "- name: GARM_CONTROLLER_ID\n  value: \"{CONTROLLER_ID}\"\n"
        )),
        "{yaml}"
    );
    assert!(
        yaml.contains("- name: BEARER_TOKEN\n"),
        "secrets go into the YAML in this mode"
    );
}

/// Creates `name` with the pool's `specs`; the App as the simulator holds it.
fn created(w: &World, name: &str, specs: Value) -> Value {
    let r = create_with_specs(w, name, specs, &[]);
    assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    w.app(name)
}

/// Creates `name` with the pool's `specs`; the App's (deployment, command, command_args).
fn container_of(w: &World, name: &str, specs: Value) -> (String, Value, Value) {
    let app = created(w, name, specs);
    let args = match &app["command_args"] {
        Value::Null => json!([]),
        a => a.clone(),
    };
    (
        app["deployment"].as_str().unwrap_or_default().to_string(),
        app["command"].clone(),
        args,
    )
}

#[test]
fn pool_container_settings_override_the_configs_and_the_configs_apply_otherwise() {
    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "command = \"/entrypoint.sh\"\ncommand_args = [\"--once\"]",
    );
    let k8s = || "kubernetes".to_string();
    assert_eq!(
        container_of(&w, "garm-cfg1", Value::Null),
        (k8s(), json!("/entrypoint.sh"), json!(["--once"]))
    );
    // Each key on its own: the pool's value, the config's for the others.
    assert_eq!(
        container_of(&w, "garm-cfg2", json!({"command": "/run.sh"})),
        (k8s(), json!("/run.sh"), json!(["--once"]))
    );
    assert_eq!(
        container_of(&w, "garm-cfg3", json!({"command_args": []})),
        (k8s(), json!("/entrypoint.sh"), json!([]))
    );
    // An empty command runs the image's entrypoint.
    assert_eq!(
        container_of(&w, "garm-cfg4", json!({"command": "", "command_args": []})),
        (k8s(), Value::Null, json!([]))
    );
    assert_eq!(
        container_of(
            &w,
            "garm-cfg5",
            json!({"deployment": "docker", "command_args": []})
        ),
        ("docker".to_string(), json!("/entrypoint.sh"), json!([]))
    );
    // The config's arguments with the pool's docker: refused naming both keys, before any call.
    let r = create_with_specs(&w, "garm-cfg6", json!({"deployment": "docker"}), &[]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim_end(),
        "edge_connect.command_args: docker deployments do not pass arguments to the container; leave it empty and bake them into the image's CMD"
    );
    assert!(!w.app_names().contains(&"garm-cfg6".to_string()));

    let w = World::with(ApiGeneration::Gen3, Site::Zone, "deployment = \"docker\"");
    assert_eq!(
        container_of(&w, "garm-cfg8", Value::Null),
        ("docker".to_string(), Value::Null, json!([]))
    );
    let app = created(
        &w,
        "garm-cfg9",
        json!({"deployment": "kubernetes", "env_delivery": "envvars_yaml"}),
    );
    assert_eq!(app["deployment"], "kubernetes");
    assert_envvars_yaml(&app);
    // The pool's delivery with the config's docker: refused, naming where each came from.
    let before = w.calls("CreateApp");
    let r = create_with_specs(
        &w,
        "garm-cfg10",
        json!({"env_delivery": "envvars_yaml"}),
        &[],
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim_end(),
        "extra_specs.env_delivery: envvars_yaml needs deployment kubernetes (edge_connect.deployment is docker)"
    );
    assert_eq!(w.calls("CreateApp"), before);

    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "env_delivery = \"envvars_yaml\"",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-cfg11", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_envvars_yaml(&w.app("garm-cfg11"));
    let app = created(
        &w,
        "garm-cfg12",
        json!({"deployment": "docker", "env_delivery": "env_vars"}),
    );
    assert_eq!(app["deployment"], "docker");
    assert_eq!(app["env_vars"]["GARM_CONTROLLER_ID"], CONTROLLER_ID);
    assert!(app
        .get("configs")
        .is_none_or(|c| c.as_array().is_none_or(|c| c.is_empty())));
}

fn validate_pool(w: &World, specs: &Value) -> Run {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(specs.to_string());
    w.garm(
        "ValidatePoolInfo",
        &[
            ("GARM_INTERFACE_VERSION", "v0.1.1"),
            ("GARM_POOL_ID", POOL),
            ("GARM_POOL_EXTRASPECS", &encoded),
        ],
        None,
    )
}

#[test]
fn validate_pool_info_checks_the_pools_container_without_the_config() {
    let w = World::new();
    for specs in [
        json!({"command": "/entrypoint.sh", "command_args": ["--once"]}),
        json!({"deployment": "docker", "command": "/home/runner/run.sh"}),
        json!({"env_delivery": "envvars_yaml"}),
        json!({"deployment": "kubernetes", "env_delivery": "env_vars"}),
    ] {
        let r = validate_pool(&w, &specs);
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, ""),
            "{specs}: {}",
            r.stderr
        );
    }
    for (specs, message) in [
        (
            json!({"command_args": ["--once", "yes"]}),
            "invalid extra_specs: extra_specs.command_args: \"yes\" would not reach the container as written: YAML reads it as a boolean",
        ),
        (
            json!({"command": "/run key: value"}),
            "invalid extra_specs: extra_specs.command: the word \"key:\" would not reach the container as written: `: ` makes YAML read a mapping",
        ),
        (
            json!({"deployment": "docker", "command": "/bin/sh -c run"}),
            "invalid extra_specs: extra_specs.command: \"/bin/sh -c run\" is not a single executable path; docker deployments pass the command as one word (letters, digits and _ . / = : , + @ % - only)",
        ),
        (
            json!({"deployment": "docker", "command_args": ["--once"]}),
            "invalid extra_specs: extra_specs.command_args: docker deployments do not pass arguments to the container; leave it empty and bake them into the image's CMD",
        ),
        (
            json!({"deployment": "docker", "env_delivery": "envvars_yaml"}),
            "invalid extra_specs: extra_specs.env_delivery: envvars_yaml needs deployment kubernetes (extra_specs.deployment is docker)",
        ),
        (
            json!({"deployment": "docker", "env": {"MOTD": "one\ntwo"}}),
            "invalid extra_specs: env MOTD: a line break cannot be stored in a docker env file (one k=v line per variable)",
        ),
        (
            json!({"env_delivery": "envvars_yaml", "env": {"T": "[[ .x ]]"}}),
            "invalid extra_specs: env T: `[[` or `]]` would be taken as a template by Edge Connect's envVarsYaml processing",
        ),
    ] {
        let r = validate_pool(&w, &specs);
        assert_eq!(r.code, 1, "{specs}");
        assert_eq!(r.stderr.trim_end(), message, "{specs}");
    }
    let r = validate_pool(&w, &json!({"deployment": "swarm"}));
    assert_eq!(r.code, 1);
    assert_starts(&r.stderr, "invalid extra_specs: deployment: ");
}

#[test]
fn check_extra_specs_resolves_the_pools_container_over_the_config() {
    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "env_delivery = \"envvars_yaml\"",
    );
    let check = |specs: Value| {
        let file = w.dir.path().join("specs.json");
        std::fs::write(&file, specs.to_string()).unwrap();
        let r = w.cli(&["check", "--extra-specs", &file.display().to_string()]);
        let line = r
            .stdout
            .lines()
            .find(|l| l.contains(" extra specs: "))
            .unwrap_or_default()
            .to_string();
        (r.code, line)
    };
    assert_eq!(
        check(json!({"deployment": "docker"})),
        (
            1,
            "✗ extra specs: edge_connect.env_delivery: envvars_yaml needs deployment kubernetes (extra_specs.deployment is docker)".to_string()
        )
    );
    assert_eq!(
        check(json!({"deployment": "docker", "env_delivery": "env_vars"})),
        (0, "✓ extra specs: valid".to_string())
    );
}
