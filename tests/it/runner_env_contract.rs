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
    let r = create_with_specs(
        &w,
        "garm-specs1",
        json!({"flavor": "EU.large", "env": {"TEAM": "edge"}}),
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let app = w.app("garm-specs1");
    assert_eq!(app["default_flavor"]["name"], "EU.large");
    assert_eq!(app["env_vars"]["TEAM"], "edge");
    assert_eq!(app["deployment"], "kubernetes");

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
    assert!(
        r.stderr.contains("EDP_EDGE_CONNECT_REGISTRY_PASSWORD"),
        "{}",
        r.stderr
    );
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
        ["garm-specs1", "garm-specs4"].map(String::from).into()
    );
}

#[test]
fn command_deployment_and_delivery_come_from_the_config_alone() {
    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "command = \"/entrypoint.sh\"\ncommand_args = [\"--once\"]",
    );
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-cfg1", POOL, &[])
            .code,
        0
    );
    let app = w.app("garm-cfg1");
    assert_eq!(app["command"], "/entrypoint.sh");
    assert_eq!(app["command_args"], json!(["--once"]));

    let w = World::with(ApiGeneration::Gen3, Site::Zone, "deployment = \"docker\"");
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-cfg2", POOL, &[])
            .code,
        0
    );
    assert_eq!(w.app("garm-cfg2")["deployment"], "docker");

    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "env_delivery = \"envvars_yaml\"",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-cfg3", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let app = w.app("garm-cfg3");
    assert!(app
        .get("env_vars")
        .is_none_or(|e| e.as_object().is_none_or(|m| m.is_empty())));
    assert!(app
        .get("secret_env_vars")
        .is_none_or(|e| e.as_object().is_none_or(|m| m.is_empty())));
    let yaml = app["configs"][0]["config"].as_str().unwrap_or_default();
    assert_eq!(app["configs"][0]["kind"], "envVarsYaml");
    assert!(
        yaml.contains(
            "- name: GARM_CONTROLLER_ID\n  value: \"f9286791-1589-4f39-a106-5b68c2a18af4\"\n"
        ),
        "{yaml}"
    );
    assert!(
        yaml.contains("- name: BEARER_TOKEN\n"),
        "secrets go into the YAML in this mode"
    );
    // The instance is still found, listed and deleted through the YAML ownership data.
    assert_eq!(
        w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-cfg3")], None)
            .code,
        0
    );

    // A pool cannot set them: one place each. ValidatePoolInfo names the key.
    let encode = |b: &[u8]| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    for key in ["command", "command_args", "deployment", "env_delivery"] {
        let specs = json!({ key: "x" }).to_string();
        let r = w.garm(
            "ValidatePoolInfo",
            &[
                ("GARM_INTERFACE_VERSION", "v0.1.1"),
                ("GARM_POOL_ID", POOL),
                ("GARM_POOL_EXTRASPECS", &encode(specs.as_bytes())),
            ],
            None,
        );
        assert_eq!(r.code, 1, "{key}");
        assert!(r.stderr.contains(key), "{key}: {}", r.stderr);
    }
}
