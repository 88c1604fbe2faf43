//! The provider against a simulator that behaves like the real Master Controller where the two
//! used to disagree (docs/edge-connect-behaviours.md): the seed config on both API generations, servers that drop
//! fields, Gen2 failover, duplicate names and values the manifest generators would mangle.
//! Each test fails without the provider's handling of that behaviour.

use std::path::Path;

use edge_connect_sim::{ApiGeneration, CloudletPool, ServerRelease, SimConfig};

use crate::support::*;

/// `config/provider.example.toml` as shipped, with only the paths that must point into the
/// test's directory and the simulator's URL replaced: placement shape, organization, region,
/// flavor and every other key stay as a new user gets them.
fn seed_config_world(api: ApiGeneration) -> World {
    let w = World::with(api, Site::Zone, "");
    let seed = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config/provider.example.toml"),
    )
    .expect("seed config");
    let dir = w.dir.path();
    let mut text = String::new();
    for line in seed.lines() {
        let line = if line.starts_with("log_file = ") {
            format!("log_file = \"{}\"", w.log.display())
        } else if line.starts_with("credentials_file = ") {
            format!(
                "credentials_file = \"{}\"",
                dir.join("credentials.toml").display()
            )
        } else if line.starts_with("# token_cache_dir = ") {
            format!(
                "token_cache_dir = \"{}\"",
                dir.join("token-cache").display()
            )
        } else if line.starts_with("url = ") {
            format!("url = \"{}\"", w.sim.url())
        } else {
            line.to_string()
        };
        text.push_str(&line);
        text.push('\n');
    }
    assert!(
        text.contains("[edge_connect.cloudlet]"),
        "the seed places by cloudlet"
    );
    std::fs::write(&w.config, text).expect("write config");
    w
}

fn lifecycle(w: &World) -> serde_json::Value {
    let r = w.create("bootstrap-github-jit.json", "garm-seed1", POOL, &[]);
    assert_eq!(r.code, 0, "create: {}", r.stderr);
    assert_eq!(r.json()["status"], "running");
    let inst = w
        .sim
        .app_insts()
        .into_iter()
        .find(|i| i["key"]["name"] == "garm-seed1")
        .expect("AppInst exists");
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "list: {}", list.stderr);
    let names: Vec<String> = list
        .json()
        .as_array()
        .expect("array")
        .iter()
        .map(|i| i["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["garm-seed1"]);
    let del = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-seed1")],
        None,
    );
    assert_eq!(del.code, 0, "delete: {}", del.stderr);
    w.assert_nothing_left();
    inst
}

#[test]
fn the_seed_config_runs_a_runner_on_gen3_through_the_cloudlets_zone() {
    let w = seed_config_world(ApiGeneration::Gen3);
    let inst = lifecycle(&w);
    assert_eq!(inst["zone_key"]["name"], "Munich", "{inst}");
    assert_eq!(inst["cloudlet_key"]["name"], "Munich", "{inst}");
    // ShowCloudlet's answer tells how to address the cloudlet: no ShowZone, no read-back.
    assert_eq!(w.calls("ShowZone"), 0);
    assert_eq!(w.calls("ShowCloudlet"), 1);
    assert_eq!(
        w.calls("ShowApp"),
        3,
        "exists check, then list, then delete"
    );
}

#[test]
fn the_seed_config_runs_a_runner_on_gen2_with_the_cloudlet_key() {
    let w = seed_config_world(ApiGeneration::Gen2);
    let inst = lifecycle(&w);
    assert_eq!(inst["key"]["cloudlet_key"]["name"], "Munich", "{inst}");
}

#[test]
fn check_says_how_the_seed_cloudlet_is_addressed_on_gen3() {
    let w = seed_config_world(ApiGeneration::Gen3);
    let r = w.cli(&["check"]);
    let stdout = r.stdout;
    assert_eq!(r.code, 0, "{stdout}");
    assert!(
        stdout.lines().any(|l| l
            == "✓ cloudlet TelekomOP/Munich: exists; addressed as zone_key TelekomOP/Munich (Gen3 places through zones; the controller picks a cloudlet in that zone)"),
        "{stdout}"
    );
}

#[test]
fn a_server_that_drops_env_vars_leaves_nothing_and_each_create_finds_out_anew() {
    // Only a Gen2 controller can predate env_vars (they came in 2024-03, zones in 2024-09).
    let w = World::with_sim(
        SimConfig {
            api: ApiGeneration::Gen2,
            release: ServerRelease::BeforeEnvVars,
            ..SimConfig::default()
        },
        Site::Cloudlet,
        "",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-old1", POOL, &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("drops App env_vars")
            && r.stderr
                .contains("edge_connect.env_delivery = \"envvars_yaml\""),
        "{}",
        r.stderr
    );
    w.assert_nothing_left();
    // Nothing is remembered: the next create reads its own App back and comes to the same
    // conclusion from its own answer.
    let again = w.create("bootstrap-github-jit.json", "garm-old2", POOL, &[]);
    assert_eq!(again.code, 1);
    assert_has(&again.stderr, "drops App env_vars");
    assert_eq!(w.calls("CreateApp"), 2);
    assert_eq!(
        w.calls("CreateAppInst"),
        0,
        "no runner without its environment"
    );
    assert!(w.app_names().is_empty());
    // The fix the message names works on that server.
    let text = std::fs::read_to_string(&w.config).expect("config");
    std::fs::write(
        &w.config,
        text.replace(
            "[edge_connect]\n",
            "[edge_connect]\nenv_delivery = \"envvars_yaml\"\n",
        ),
    )
    .expect("config");
    let fixed = w.create("bootstrap-github-jit.json", "garm-old3", POOL, &[]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    let get = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-old3")], None);
    assert_eq!(get.code, 0, "the runner can be found again: {}", get.stderr);
}

#[test]
fn a_server_that_drops_pull_credentials_leaves_nothing() {
    let w = World::with_sim(
        SimConfig {
            release: ServerRelease::BeforeRegistryCredentials,
            ..SimConfig::default()
        },
        Site::Zone,
        "",
    );
    let bootstrap = fixture_with("bootstrap-github-jit.json", "garm-pull1", POOL);
    let mut v: serde_json::Value = serde_json::from_str(&bootstrap).expect("fixture");
    v["extra_specs"] = serde_json::json!({
        "image_pull_username": "robot",
        "image_pull_password_env": "EDP_EDGE_CONNECT_PULL"
    });
    let r = w.garm(
        "CreateInstance",
        &[
            ("GARM_POOL_ID", POOL),
            ("EDP_EDGE_CONNECT_PULL", "pull-secret"),
        ],
        Some(&v.to_string()),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_has(&r.stderr, "drops App image pull credentials");
    assert!(!r.stderr.contains("pull-secret"));
    w.assert_nothing_left();
}

#[test]
fn gen2_fails_over_from_an_unknown_cloudlet_and_a_foreign_pool() {
    let w = World::with_sim(
        SimConfig {
            api: ApiGeneration::Gen2,
            cloudlets: vec![
                ("TelekomOP".into(), "Private".into()),
                ("TelekomOP".into(), "Munich".into()),
            ],
            cloudlet_pools: vec![CloudletPool {
                organization: "TelekomOP".into(),
                name: "partners".into(),
                cloudlets: vec!["Private".into()],
                members: vec!["someone-else".into()],
            }],
            ..SimConfig::default()
        },
        Site::Cloudlet,
        "",
    );
    let bootstrap = fixture_with("bootstrap-github-jit.json", "garm-fo1", POOL);
    let mut v: serde_json::Value = serde_json::from_str(&bootstrap).expect("fixture");
    v["extra_specs"] = serde_json::json!({
        "cloudlets": [
            {"organization": "TelekomOP", "name": "Atlantis"},
            {"organization": "TelekomOP", "name": "Private"},
            {"organization": "TelekomOP", "name": "Munich"}
        ]
    });
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let insts = w.sim.app_insts();
    assert_eq!(insts.len(), 1, "only the last site holds an AppInst");
    assert_eq!(insts[0]["key"]["cloudlet_key"]["name"], "Munich");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn a_cloudlet_outside_the_pools_is_not_called_an_organization_problem() {
    let w = World::with_sim(
        SimConfig {
            api: ApiGeneration::Gen2,
            cloudlet_pools: vec![CloudletPool {
                organization: "TelekomOP".into(),
                name: "partners".into(),
                cloudlets: vec!["Munich".into()],
                members: vec!["someone-else".into()],
            }],
            ..SimConfig::default()
        },
        Site::Cloudlet,
        "",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-pool1", POOL, &[]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "cloudlet TelekomOP/Munich is not in a cloudlet pool of organization edp-developer-framework (HTTP 403)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr
            .contains("not permitted in edge_connect.organization"),
        "{}",
        r.stderr
    );
    w.assert_nothing_left();
}

#[test]
fn a_name_that_exists_is_reported_without_a_create_app_that_would_wipe_its_secrets() {
    let w = World::new();
    let r = w.create("bootstrap-github-jit.json", "garm-dup1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = w.app("garm-dup1");
    let again = w.create("bootstrap-github-jit.json", "garm-dup1", POOL, &[]);
    assert_eq!(again.code, 31, "{}", again.stderr);
    assert_eq!(w.calls("CreateApp"), 1, "no second CreateApp was sent");
    assert_eq!(w.app("garm-dup1"), before, "the live App is untouched");
    // It still starts: its secrets are intact.
    let stop = w.garm("StopInstance", &[("GARM_INSTANCE_ID", "garm-dup1")], None);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    let start = w.garm("StartInstance", &[("GARM_INSTANCE_ID", "garm-dup1")], None);
    assert_eq!(start.code, 0, "{}", start.stderr);
}

#[test]
fn a_pool_env_value_docker_would_change_is_refused_before_any_call() {
    // The deployment is the config's; the pool's values are checked against it at create.
    let w = World::with(ApiGeneration::Gen3, Site::Zone, "deployment = \"docker\"");
    let mut bootstrap: serde_json::Value = serde_json::from_str(&crate::support::fixture_with(
        "bootstrap-github-jit.json",
        "garm-motd1",
        POOL,
    ))
    .expect("fixture");
    bootstrap["extra_specs"] = serde_json::json!({"env": {"MOTD": "one\ntwo"}});
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&bootstrap.to_string()),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr
            .contains("env MOTD: a line break cannot be stored in a docker env file"),
        "{}",
        r.stderr
    );
    assert_eq!(w.calls("CreateApp"), 0);
}

#[test]
fn a_config_command_the_generator_would_mangle_is_refused_at_load() {
    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "command = \"/entrypoint.sh\"\ncommand_args = [\"--labels\", \"~\"]",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-cmd1", POOL, &[]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("edge_connect.command_args: \"~\" would not reach the container as written: YAML reads it as null"),
        "{}",
        r.stderr
    );
    assert_eq!(w.calls("CreateApp"), 0);
    for (config, needle) in [
        (
            "command = \"/run key: value\"",
            "edge_connect.command: the word \"key:\" would not reach the container as written",
        ),
        (
            "deployment = \"docker\"\ncommand = \"/bin/sh -c run\"",
            "docker deployments pass the command as one word",
        ),
    ] {
        let w = World::with(ApiGeneration::Gen3, Site::Zone, config);
        let r = w.create("bootstrap-github-jit.json", "garm-cmd2", POOL, &[]);
        assert_eq!(r.code, 1, "{config}");
        assert!(r.stderr.contains(needle), "{config}: {}", r.stderr);
        assert_eq!(w.calls("CreateApp"), 0);
    }
}

#[test]
fn a_bad_app_version_is_refused_at_load() {
    let w = World::with(ApiGeneration::Gen3, Site::Zone, "app_version = \"-1\"");
    let r = w.create("bootstrap-github-jit.json", "garm-ver1", POOL, &[]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("edge_connect.app_version: \"-1\" does not match Edge Connect's key rule"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_federated_gen2_cloudlet_is_created_on_and_deleted_with_its_federation() {
    use edge_connect_sim::CloudletSettings;
    let w = World::with_sim(
        SimConfig {
            api: ApiGeneration::Gen2,
            cloudlet_settings: vec![CloudletSettings {
                federated_organization: "PartnerOP".into(),
                ..CloudletSettings::new("TelekomOP", "Munich")
            }],
            ..SimConfig::default()
        },
        Site::Cloudlet,
        "",
    );
    // Without the federation the controller does not know the cloudlet; nothing is left.
    let r = w.create("bootstrap-github-jit.json", "garm-fed0", POOL, &[]);
    assert_eq!(r.code, 1);
    assert_has(&r.stderr, "Specified Cloudlet not found");
    w.assert_nothing_left();

    let text = std::fs::read_to_string(&w.config).expect("config");
    std::fs::write(
        &w.config,
        text.replace(
            "name = \"Munich\"\n",
            "name = \"Munich\"\nfederated_organization = \"PartnerOP\"\n",
        ),
    )
    .expect("config");
    let r = w.create("bootstrap-github-jit.json", "garm-fed1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let inst = &w.sim.app_insts()[0];
    assert_eq!(
        inst["key"]["cloudlet_key"]["federated_organization"],
        "PartnerOP"
    );
    // Stop and start go back to the recorded (federated) site; delete sends the key back whole.
    for command in ["StopInstance", "StartInstance", "DeleteInstance"] {
        let r = w.garm(command, &[("GARM_INSTANCE_ID", "garm-fed1")], None);
        assert_eq!(r.code, 0, "{command}: {}", r.stderr);
    }
    w.assert_nothing_left();
}

#[test]
fn a_pools_list_among_two_thousand_foreign_apps_is_exact_on_every_release() {
    use edge_connect_sim::Seed;
    // The current release filters on the server (docs/edge-connect-behaviours.md B23); one
    // before env_vars and annotations drops both filters and answers with everything, so the
    // provider's own ownership check is what keeps the list exact there.
    for (api, release, site, extra) in [
        (ApiGeneration::Gen3, ServerRelease::Current, Site::Zone, ""),
        (
            ApiGeneration::Gen2,
            ServerRelease::BeforeEnvVars,
            Site::Cloudlet,
            "env_delivery = \"envvars_yaml\"\n",
        ),
    ] {
        let w = World::with_sim(
            SimConfig {
                api,
                release,
                ..SimConfig::default()
            },
            site,
            extra,
        );
        for name in ["garm-ours1", "garm-ours2"] {
            let r = w.create("bootstrap-github-jit.json", name, POOL, &[]);
            assert_eq!(r.code, 0, "{release:?}: {}", r.stderr);
        }
        let r = w.create(
            "bootstrap-github-jit.json",
            "garm-otherpool1",
            "another-pool",
            &[],
        );
        assert_eq!(r.code, 0, "{release:?}: {}", r.stderr);
        w.sim.seed(Seed {
            count: 2_000,
            app_insts: true,
            name_prefix: "team-app-".into(),
            env_vars: [
                ("GARM_CONTROLLER_ID", "someone-else"),
                ("GARM_POOL_ID", POOL),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into(),
            ..Default::default()
        });
        let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
        assert_eq!(list.code, 0, "{release:?}: {}", list.stderr);
        let listed = list.json();
        let names: Vec<&str> = listed
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|i| i["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["garm-ours1", "garm-ours2"],
            "{release:?}: {}",
            list.stdout
        );
        assert_eq!(w.calls("ShowAppInst"), 1, "{release:?}: no unmarked read");
    }
}
