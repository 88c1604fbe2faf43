//! The GARM protocol end to end: the built binary, run as GARM runs it, against the simulator.

use crate::support::*;
use edge_connect_sim::ApiGeneration;
use serde_json::json;

const V011: (&str, &str) = ("GARM_INTERFACE_VERSION", "v0.1.1");

#[test]
fn github_jit_runner_lifecycle_on_zones_v010() {
    let w = World::new();
    let create = w.create("bootstrap-github-jit.json", "garm-7hq2kx0d3mzt", POOL, &[]);
    assert_eq!(create.code, 0, "{}", create.stderr);
    assert_eq!(
        create.json(),
        json!({"provider_id":"garm-7hq2kx0d3mzt","name":"garm-7hq2kx0d3mzt","os_type":"linux","os_arch":"amd64","status":"running"})
    );
    assert_eq!(create.stderr, "");

    // What exists on Edge Connect: one App and one Ready AppInst in the configured zone.
    assert_eq!(w.app_names(), vec!["garm-7hq2kx0d3mzt"]);
    let inst = &w.sim.app_insts()[0];
    assert_eq!(inst["state"], "Ready");
    assert_eq!(
        inst["zone_key"],
        json!({"organization":"TelekomOP","name":"Munich"})
    );
    let app = w.app("garm-7hq2kx0d3mzt");
    assert_eq!(app["image_path"], "ghcr.io/example-org/garm-runner:2.330.0");
    assert_eq!(app["default_flavor"]["name"], "EU.small");
    let env = &app["env_vars"];
    assert_eq!(env["GARM_CONTROLLER_ID"], CONTROLLER);
    assert_eq!(env["GARM_POOL_ID"], POOL);
    assert_eq!(env["GARM_INSTANCE_NAME"], "garm-7hq2kx0d3mzt");
    assert_eq!(env["FORGE_TYPE"], "github");
    assert_eq!(env["RUNNER_ORG"], "example-org");
    assert_eq!(env["JIT_CONFIG_ENABLED"], "true");
    assert_eq!(
        env["METADATA_URL"],
        "https://garm.example.com/api/v1/metadata"
    );
    assert!(
        env.get("BEARER_TOKEN").is_none(),
        "the token must not be a plain env var"
    );
    let token = app["secret_env_vars"]["BEARER_TOKEN"]
        .as_str()
        .unwrap_or_default();
    assert!(
        token.ends_with("c2lnbmF0dXJlLW5vdC12ZXJpZmllZA"),
        "token delivered as a secret"
    );

    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(list.json(), json!([create.json()]));

    let get = w.garm(
        "GetInstance",
        &[("GARM_INSTANCE_ID", "garm-7hq2kx0d3mzt")],
        None,
    );
    assert_eq!(get.code, 0, "{}", get.stderr);
    assert_eq!(get.json(), create.json());

    let delete = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-7hq2kx0d3mzt")],
        None,
    );
    assert_eq!(
        (delete.code, delete.stdout.as_str()),
        (0, ""),
        "{}",
        delete.stderr
    );
    assert!(w.app_names().is_empty());
    assert!(w.app_inst_names().is_empty());

    let empty = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!((empty.code, empty.stdout.as_str()), (0, "[]"));
    w.assert_no_secrets(&[&create, &list, &get, &delete, &empty]);
}

#[test]
fn gitea_runner_lifecycle_on_cloudlets_v011() {
    let w = World::with(ApiGeneration::Gen2, Site::Cloudlet, "");
    let specs = base64_of(r#"{"flavor":"EU.medium"}"#);
    let create = w.create(
        "bootstrap-gitea.json",
        "garm-g1tea0runner",
        GITEA_POOL,
        &[V011, ("GARM_POOL_EXTRASPECS", &specs)],
    );
    assert_eq!(create.code, 0, "{}", create.stderr);
    assert_eq!(create.json()["status"], "running");

    let inst = &w.sim.app_insts()[0];
    assert_eq!(
        inst["key"]["cloudlet_key"],
        json!({"organization":"TelekomOP","name":"Munich"})
    );
    let app = w.app("garm-g1tea0runner");
    // The stdin extra specs win over the pool's default flavor.
    assert_eq!(app["default_flavor"]["name"], "EU.medium");
    let env = &app["env_vars"];
    assert_eq!(env["FORGE_TYPE"], "gitea");
    assert_eq!(env["FORGE_URL"], "http://gitea.example.com/");
    assert!(
        env.get("RUNNER_ORG").is_none(),
        "Gitea URLs carry no entity"
    );
    assert_eq!(
        env["RUNNER_LABELS"],
        "ubuntu-latest,runner-controller-id=f9286791-1589-4f39-a106-5b68c2a18af4,runner-pool-id=7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
    );
    assert_eq!(env["JIT_CONFIG_ENABLED"], "false");
    assert_eq!(env["RUNNER_TOOL_CACHE"], "/opt/hostedtoolcache");
    assert_eq!(env["NO_PROXY"], "localhost,.example.com");
    assert!(env["GARM_CA_BUNDLE"]
        .as_str()
        .unwrap_or_default()
        .starts_with("-----BEGIN CERTIFICATE-----"));
    assert!(env.get("HTTPS_PROXY").is_none());
    assert_eq!(
        app["secret_env_vars"]["HTTPS_PROXY"],
        "http://proxy-user:proxy-pass@proxy.example.com:3128"
    );

    for id in ["garm-g1tea0runner", "garm-g1tea0runner"] {
        let r = w.garm(
            "GetInstance",
            &[V011, ("GARM_INSTANCE_ID", id), ("GARM_POOL_ID", GITEA_POOL)],
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let list = w.garm(
        "ListInstances",
        &[
            V011,
            ("GARM_POOL_ID", GITEA_POOL),
            ("GARM_POOL_EXTRASPECS", "bnVsbA=="),
        ],
        None,
    );
    assert_eq!(list.json().as_array().map(Vec::len), Some(1));

    // Scale sets send an empty pool id for deletes in v0.1.1.
    let delete = w.garm(
        "DeleteInstance",
        &[
            V011,
            ("GARM_INSTANCE_ID", "garm-g1tea0runner"),
            ("GARM_POOL_ID", ""),
            ("GARM_POOL_EXTRASPECS", "bnVsbA=="),
        ],
        None,
    );
    assert_eq!(delete.code, 0, "{}", delete.stderr);
    w.assert_nothing_left();
    w.assert_no_secrets(&[&create, &list, &delete]);
}

#[test]
fn delete_by_name_and_by_id_twice_and_of_unknown_instances() {
    let w = World::new();
    // A name that needs sanitising: provider_id differs from the GARM name.
    let name = "Team_Runner.7HQ2";
    let create = w.create("bootstrap-github-jit.json", name, POOL, &[]);
    assert_eq!(create.code, 0, "{}", create.stderr);
    let provider_id = create.json()["provider_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_ne!(provider_id, name);
    assert_eq!(create.json()["name"], name);
    assert_eq!(w.app(&provider_id)["env_vars"]["GARM_INSTANCE_NAME"], name);

    let by_name = w.garm("GetInstance", &[("GARM_INSTANCE_ID", name)], None);
    let by_id = w.garm("GetInstance", &[("GARM_INSTANCE_ID", &provider_id)], None);
    assert_eq!(by_name.json(), by_id.json());

    for id in [name, provider_id.as_str(), name, "garm-never-existed"] {
        let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", id)], None);
        assert_eq!(
            (d.code, d.stdout.as_str()),
            (0, ""),
            "delete {id}: {}",
            d.stderr
        );
    }
    assert!(w.app_names().is_empty());

    let w2 = World::new();
    let c = w2.create("bootstrap-github-jit.json", "garm-byid", POOL, &[]);
    assert_eq!(c.code, 0);
    let d = w2.garm("DeleteInstance", &[("GARM_INSTANCE_ID", "garm-byid")], None);
    assert_eq!(d.code, 0);
    assert!(w2.app_names().is_empty());
}

#[test]
fn get_start_stop_of_a_missing_instance_exit_30() {
    let w = World::new();
    for cmd in ["GetInstance", "StartInstance", "StopInstance"] {
        let r = w.garm(cmd, &[("GARM_INSTANCE_ID", "garm-missing")], None);
        assert_eq!(r.code, 30, "{cmd}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{cmd}");
        assert_eq!(r.stderr.trim(), "instance garm-missing not found");
    }
}

#[test]
fn stop_and_start_are_real_and_idempotent() {
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-stopme", POOL, &[])
            .code,
        0
    );
    for _ in 0..2 {
        let stop = w.garm("StopInstance", &[("GARM_INSTANCE_ID", "garm-stopme")], None);
        assert_eq!(stop.code, 0, "{}", stop.stderr);
        assert!(w.app_inst_names().is_empty(), "stop removes the AppInst");
        assert_eq!(w.app_names(), vec!["garm-stopme"], "stop keeps the App");
    }
    let get = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-stopme")], None);
    assert_eq!(get.json()["status"], "stopped");
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.json()[0]["status"], "stopped");
    for _ in 0..2 {
        let start = w.garm(
            "StartInstance",
            &[("GARM_INSTANCE_ID", "garm-stopme")],
            None,
        );
        assert_eq!(start.code, 0, "{}", start.stderr);
        assert_eq!(w.app_inst_names(), vec!["garm-stopme"]);
    }
    assert_eq!(w.sim.app_insts()[0]["zone_key"]["name"], "Munich");
    let get = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-stopme")], None);
    assert_eq!(get.json()["status"], "running");
}

#[test]
fn create_of_an_existing_name_exits_31_and_touches_nothing() {
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-dup", POOL, &[])
            .code,
        0
    );
    let before = w.app("garm-dup");
    let again = w.create("bootstrap-gitea.json", "garm-dup", POOL, &[]);
    assert_eq!(again.code, 31, "{}", again.stderr);
    assert_eq!(again.stdout, "");
    assert_has(&again.stderr, "garm-dup already exists");
    assert_eq!(w.app("garm-dup"), before, "the existing App is untouched");
    assert_eq!(w.app_inst_names(), vec!["garm-dup"]);
    w.assert_no_secrets(&[&again]);
}

#[test]
fn list_returns_exactly_this_controller_and_pool() {
    let w = World::new();
    let scale_set_pool =
        "My Scale Set-6B8E1A2C-0D3F-4E5A-9B7C-1D2E3F4A5B6C-with-a-very-long-suffix";
    for (name, pool) in [
        ("garm-mine1", POOL),
        ("garm-mine2", POOL),
        ("garm-otherpool", GITEA_POOL),
        ("garm-scaleset", scale_set_pool),
    ] {
        let r = w.create("bootstrap-github-jit.json", name, pool, &[]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    }
    // Another controller's runner in the same pool and organization.
    let r = w.garm_as(
        "f00dfeed-0000-4000-8000-000000000000",
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&fixture_with(
            "bootstrap-github-jit.json",
            "garm-theirs",
            POOL,
        )),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);

    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    let listed = list.json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["garm-mine1", "garm-mine2"]);

    let ss = w.garm("ListInstances", &[("GARM_POOL_ID", scale_set_pool)], None);
    assert_eq!(ss.json().as_array().unwrap().len(), 1);
    assert_eq!(ss.json()[0]["name"], "garm-scaleset");

    let none = w.garm("ListInstances", &[("GARM_POOL_ID", "no-such-pool")], None);
    assert_eq!(none.stdout, "[]");

    // RemoveAll removes this controller's runners in every pool and nothing else.
    let rm = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(rm.code, 0, "{}", rm.stderr);
    assert_eq!(w.app_names(), vec!["garm-theirs"]);
    let rm_again = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(rm_again.code, 0);
}

fn base64_of(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn list_ignores_look_alikes_and_other_organizations() {
    use edge_connect_sim::Seed;
    use std::collections::BTreeMap;
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-real1", POOL, &[])
            .code,
        0
    );
    let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    // Another controller's runners in our pool.
    w.sim.seed(Seed {
        count: 40,
        app_insts: true,
        name_prefix: "garm-other-".into(),
        env_vars: env(&[("GARM_CONTROLLER_ID", "0000-other"), ("GARM_POOL_ID", POOL)]),
        ..Default::default()
    });
    // Look-alikes: our controller and pool, but their recorded GARM name is not their App's name.
    w.sim.seed(Seed {
        count: 10,
        app_insts: true,
        name_prefix: "garm-lookalike-".into(),
        env_vars: env(&[
            ("GARM_CONTROLLER_ID", CONTROLLER),
            ("GARM_POOL_ID", POOL),
            ("GARM_INSTANCE_NAME", "garm-real1"),
        ]),
        ..Default::default()
    });
    // Apps with no ownership data at all, and another organization's copies of ours.
    w.sim.seed(Seed {
        count: 10,
        app_insts: true,
        name_prefix: "plain-app-".into(),
        ..Default::default()
    });
    w.sim.seed(Seed {
        org: "someone-else".into(),
        count: 10,
        app_insts: true,
        name_prefix: "garm-foreign-".into(),
        env_vars: env(&[("GARM_CONTROLLER_ID", CONTROLLER), ("GARM_POOL_ID", POOL)]),
        ..Default::default()
    });
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(
        list.json(),
        json!([{"provider_id":"garm-real1","name":"garm-real1","os_type":"linux","os_arch":"amd64","status":"running"}])
    );
    // Neither Get nor Delete touches a look-alike.
    let get = w.garm(
        "GetInstance",
        &[("GARM_INSTANCE_ID", "garm-lookalike-1")],
        None,
    );
    assert_eq!(get.code, 30);
    // Another controller's App of the asked name: not found, not touched, and the log says why.
    let logged_before = w.log_text().len();
    let delete = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-other-1")],
        None,
    );
    assert_eq!(delete.code, 0, "{}", delete.stderr);
    assert!(w.app_names().contains(&"garm-other-1".to_string()));
    let logged = w.log_text()[logged_before..].to_string();
    assert!(
        logged.contains("an App with this name exists but belongs to another controller"),
        "{logged}"
    );
    let before = w.app_names().len();
    let rm = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(rm.code, 0, "{}", rm.stderr);
    assert_eq!(
        w.app_names().len(),
        before - 1,
        "only garm-real1 was removed"
    );
    assert_eq!(w.calls("DeleteApp"), 1);
}

#[test]
fn pool_ids_that_json_escapes_are_listed_too() {
    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "env_delivery = \"envvars_yaml\"\n",
    );
    let odd_pool = "Scale \"Set\" \\ with\ttab-6b8e";
    let r = w.create("bootstrap-github-jit.json", "garm-oddpool", odd_pool, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-plainpool", POOL, &[])
            .code,
        0
    );
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", odd_pool)], None);
    assert_eq!(
        list.json().as_array().map(Vec::len),
        Some(1),
        "{}",
        list.stdout
    );
    assert_eq!(list.json()[0]["name"], "garm-oddpool");
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.json()[0]["name"], "garm-plainpool");
}

#[test]
fn runners_made_before_the_appinst_marks_are_still_listed_and_removed() {
    use edge_connect_sim::Seed;
    let w = World::new();
    assert_eq!(
        w.create("bootstrap-github-jit.json", "garm-marked1", POOL, &[])
            .code,
        0
    );
    let marked = w.sim.app_insts();
    assert_eq!(
        marked[0]["annotations"],
        json!({"garm-controller-id": CONTROLLER, "garm-pool-id": POOL}),
        "CreateInstance marks its AppInst"
    );
    // A runner of an earlier release: its App has the markers, its AppInst no annotations.
    let env = [
        ("GARM_CONTROLLER_ID", CONTROLLER),
        ("GARM_POOL_ID", POOL),
        ("GARM_INSTANCE_NAME", "garm-old-1"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    w.sim.seed(Seed {
        count: 1,
        app_insts: true,
        name_prefix: "garm-old-".into(),
        env_vars: env,
        ..Default::default()
    });
    let stop = w.garm(
        "StopInstance",
        &[("GARM_INSTANCE_ID", "garm-marked1")],
        None,
    );
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    let calls = w.sim.request_log().len();
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let statuses = list.statuses();
    assert_eq!(
        statuses,
        [
            ("garm-marked1".into(), "stopped".into()),
            ("garm-old-1".into(), "running".into())
        ]
    );
    // ShowApp and ShowAppInst at once, then the unmarked ShowAppInst for the Apps without a
    // marked AppInst: the stopped one and the old one.
    let rpcs: Vec<String> = w.sim.request_log()[calls..]
        .iter()
        .map(|e| e.rpc.clone())
        .collect();
    assert_eq!(
        rpcs.iter().filter(|r| *r == "ShowAppInst").count(),
        2,
        "{rpcs:?}"
    );
    let rm = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(rm.code, 0, "{}", rm.stderr);
    assert!(w.sim.apps().is_empty() && w.sim.app_insts().is_empty());
}
