//! The site cache (issue 46) as GARM and a person run the binary against the simulator: the
//! first runner of a site starts the caches beside its own create, a later runner is pointed at
//! them by the address the simulator's load balancer gave, no runner command ever sees a cache,
//! and a person's `remove-all` leaves nothing (docs/site-cache.md, "How the provider runs it").

use edge_connect_sim::{CloudletSettings, ImageFault, ImageRule, SimConfig};
use serde_json::{json, Value};

use crate::support::*;

const CACHE_SECRET: &str = "cache-secret-0123456789abcdef";

/// The calls a create may make, in the order the tests count them.
const RPCS: [&str; 5] = [
    "ShowApp",
    "ShowAppInst",
    "CreateApp",
    "CreateAppInst",
    "ShowCloudlet",
];

/// A Gen3 zone world whose config enables both services, the secret in the environment.
fn caching_world(config: SimConfig) -> World {
    let w = World::with_sim(config, Site::Zone, "");
    w.edit_config(|text| {
        format!("{text}\n[site_cache]\nregistry_mirror = true\nactions_cache = true\n")
    });
    w
}

/// CreateInstance of the Gitea fixture `name` with these extra specs, as GARM runs it.
fn create(w: &World, name: &str, extra_specs: Value) -> Run {
    let mut v: Value =
        serde_json::from_str(&fixture_with("bootstrap-gitea.json", name, GITEA_POOL)).unwrap();
    v["extra_specs"] = extra_specs;
    w.garm(
        "CreateInstance",
        &[
            ("GARM_POOL_ID", GITEA_POOL),
            ("EDP_SITE_CACHE_SECRET", CACHE_SECRET),
        ],
        Some(&v.to_string()),
    )
}

fn cache_apps(w: &World) -> Vec<String> {
    w.app_names()
        .into_iter()
        .filter(|n| n.starts_with("sc-"))
        .collect()
}

/// The dind sidecar's arguments in the stored App's manifest.
fn dockerd_args(w: &World, name: &str) -> Vec<String> {
    let app = w.app(name);
    let manifest: Value =
        serde_json::from_str(app["deployment_manifest"].as_str().expect("a manifest")).unwrap();
    let containers = manifest["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .clone();
    let dind = containers.iter().find(|c| c["name"] == "dind").unwrap();
    serde_json::from_value(dind["args"].clone()).unwrap()
}

/// The cache AppInst of `service` as the simulator holds it, once Ready.
fn ready_cache(w: &World, service: &str) -> Value {
    let mut found = None;
    wait_until(&format!("the {service} cache is Ready"), || {
        found = w.sim.app_insts().into_iter().find(|i| {
            i["app_key"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("sc-") && n.ends_with(service))
                && i["state"] == "Ready"
        });
        found.is_some()
    });
    found.unwrap()
}

/// `http://<fqdn_prefix><uri>:<public_port>` of the cache AppInst's one port.
fn address(inst: &Value) -> String {
    let port = &inst["mapped_ports"][0];
    format!(
        "http://{}{}:{}",
        port["fqdn_prefix"].as_str().unwrap_or_default(),
        inst["uri"].as_str().unwrap(),
        port["public_port"]
    )
}

#[test]
fn the_first_runner_starts_the_cache_and_the_next_one_uses_it() {
    let w = caching_world(SimConfig::default());
    let first = create(&w, "garm-first1", json!({"docker": "dind"}));
    assert_eq!(first.code, 0, "{}", first.stderr);
    // As fast as today: the first runner's pod knows no mirror, and it did not wait for one.
    assert!(
        !dockerd_args(&w, "garm-first1")
            .iter()
            .any(|a| a.starts_with("--registry-mirror")),
        "{:?}",
        dockerd_args(&w, "garm-first1")
    );
    assert!(w.app("garm-first1")["env_vars"]
        .get("RUNNER_CACHE_SERVER")
        .is_none());
    assert_eq!(cache_apps(&w).len(), 2, "{:?}", w.app_names());

    let registry = ready_cache(&w, "registry");
    let actions = ready_cache(&w, "actions");
    let before: Vec<usize> = RPCS.iter().map(|rpc| w.calls(rpc)).collect();
    let second = create(&w, "garm-second1", json!({"docker": "dind"}));
    assert_eq!(second.code, 0, "{}", second.stderr);
    // Today's create (ShowApp, CreateApp, CreateAppInst) and one ShowAppInst of the caches:
    // nothing started again.
    let made: Vec<usize> = RPCS
        .iter()
        .zip(&before)
        .map(|(rpc, n)| w.calls(rpc) - n)
        .collect();
    assert_eq!(made, [1, 1, 1, 1, 0], "{RPCS:?}");
    let mirror = format!("--registry-mirror={}", address(&registry));
    assert!(
        dockerd_args(&w, "garm-second1").contains(&mirror),
        "{mirror} in {:?}",
        dockerd_args(&w, "garm-second1")
    );
    let app = w.app("garm-second1");
    assert_eq!(app["env_vars"]["RUNNER_CACHE_SERVER"], address(&actions));
    // The secret only in secret_env_vars, of the runner and of the cache server.
    assert!(app["env_vars"].get("RUNNER_CACHE_SECRET").is_none());
    assert!(app["secret_env_vars"].get("RUNNER_CACHE_SECRET").is_some());
    let cache_app = w.app(actions["app_key"]["name"].as_str().unwrap());
    assert!(
        !cache_app.to_string().contains(CACHE_SECRET) || {
            let plain = format!("{}{}", cache_app["env_vars"], cache_app["command_args"]);
            !plain.contains(CACHE_SECRET)
        }
    );
    w.assert_no_secrets(&[&first, &second]);
    assert!(!w.log_text().contains(CACHE_SECRET));

    // No runner command sees a cache.
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", GITEA_POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let mut names: Vec<String> = list.statuses().into_iter().map(|(n, _)| n).collect();
    names.sort();
    assert_eq!(names, ["garm-first1", "garm-second1"]);
    for name in ["garm-first1", "garm-second1"] {
        let r = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", name)], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let r = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        cache_apps(&w).len(),
        2,
        "the caches stay: {:?}",
        w.app_names()
    );

    // A person's remove-all leaves nothing of this controller.
    let r = run(w.person(CONTROLLER).args(["remove-all", "--yes"]), None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    w.assert_nothing_left();
}

#[test]
fn a_pool_that_opts_out_neither_starts_nor_uses_the_cache() {
    let w = caching_world(SimConfig::default());
    let r = create(
        &w,
        "garm-out1",
        json!({"docker": "dind", "site_cache": false}),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(cache_apps(&w).is_empty(), "{:?}", w.app_names());
    // Nor does a pool without a daemon.
    let r = create(&w, "garm-plain1", json!({}));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(cache_apps(&w).is_empty(), "{:?}", w.app_names());
}

#[test]
fn site_cache_up_list_and_remove_as_a_person_runs_them() {
    let w = caching_world(SimConfig::default());
    let up = run(
        w.person(CONTROLLER)
            .env("EDP_SITE_CACHE_SECRET", CACHE_SECRET)
            .args(["site-cache", "up"]),
        None,
    );
    assert_eq!(up.code, 0, "{}", up.stderr);
    assert_has(
        &up.stdout,
        "✓ registry on zone TelekomOP/Munich: Ready at http://",
    );
    assert_has(&up.stdout, "Ready at http://");
    let list = run(w.person(CONTROLLER).args(["site-cache", "list"]), None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(list.stdout.lines().count(), 2, "{}", list.stdout);
    // `check` reports each service's cache of this controller on the configured site.
    let check = run(
        w.person(CONTROLLER)
            .env("EDP_SITE_CACHE_SECRET", CACHE_SECRET)
            .arg("check"),
        None,
    );
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    for service in ["registry", "actions"] {
        assert_has(
            &check.stdout,
            &format!("site cache {service} on zone TelekomOP/Munich"),
        );
    }
    assert_has(&check.stdout, "Ready at http://shared.");
    assert_has(&check.stdout, "site cache secret");
    // Another controller's remove touches nothing of this one's.
    let other = run(
        w.person("another-controller")
            .args(["site-cache", "remove"]),
        None,
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    assert_eq!(cache_apps(&w).len(), 2);
    let remove = run(w.person(CONTROLLER).args(["site-cache", "remove"]), None);
    assert_eq!(remove.code, 0, "{}", remove.stderr);
    w.assert_nothing_left();
}

#[test]
fn a_cache_that_was_undone_is_not_tried_again_within_ten_minutes() {
    // A central CRM undoes a create whose requester left (B38); the mirror's image cannot be
    // pulled, so the first runner's create ends before the cache's does.
    let site = CloudletSettings {
        crm_on_edge: false,
        ..CloudletSettings::new("TelekomOP", "Munich")
    };
    let config = SimConfig {
        images: vec![ImageRule::new(
            "docker.io/library/registry:3.0.0",
            ImageFault::CannotPull,
        )],
        cloudlet_settings: vec![site],
        ..SimConfig::default()
    };
    let w = World::with_sim(config, Site::Zone, "");
    w.edit_config(|text| format!("{text}\n[site_cache]\nregistry_mirror = true\n"));
    let first = create(&w, "garm-undone1", json!({"docker": "dind"}));
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(cache_apps(&w).len(), 1, "{:?}", w.app_names());
    wait_until("the cache's create is undone", || {
        !w.app_inst_names().iter().any(|n| n.starts_with("sc-"))
    });
    let (apps, insts) = (w.calls("CreateApp"), w.calls("CreateAppInst"));
    assert_eq!((apps, insts), (2, 2), "the runner's and the cache's");
    let second = create(&w, "garm-undone2", json!({"docker": "dind"}));
    assert_eq!(second.code, 0, "{}", second.stderr);
    // The runner's App and AppInst only: Edge Connect's record says the cache was tried in
    // this 10-minute slot.
    assert_eq!(
        (w.calls("CreateApp"), w.calls("CreateAppInst")),
        (apps + 1, insts + 1)
    );
    assert!(!dockerd_args(&w, "garm-undone2")
        .iter()
        .any(|a| a.starts_with("--registry-mirror")));
}

#[test]
fn prune_keeps_the_cache_of_a_site_with_runners_and_of_a_young_cache() {
    let w = caching_world(SimConfig::default());
    let r = create(&w, "garm-prune1", json!({"docker": "dind"}));
    assert_eq!(r.code, 0, "{}", r.stderr);
    ready_cache(&w, "registry");
    ready_cache(&w, "actions");
    let prune = |idle: &str| {
        let r = run(
            w.person(CONTROLLER)
                .args(["site-cache", "prune", "--idle", idle]),
            None,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        r.stdout
    };
    // A runner runs on the site: its caches stay, however old.
    assert_has(&prune("0s"), "pruned 0 site cache App(s)");
    let r = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-prune1")],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // No runner, but the caches are younger than a day.
    assert_has(&prune("1d"), "pruned 0 site cache App(s)");
    assert_eq!(cache_apps(&w).len(), 2);
    // No runner and older than the idle time: removed.
    assert_has(&prune("0s"), "pruned 2 site cache App(s)");
    w.assert_nothing_left();
    // A duration that is not one is refused before anything is asked.
    let r = run(
        w.person(CONTROLLER)
            .args(["site-cache", "prune", "--idle", "soon"]),
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_has(&r.stderr, "a duration is a number and s, m, h or d");
}

#[test]
fn concurrent_first_runners_make_one_cache_and_buildkit_reads_it_from_its_config() {
    let w = caching_world(SimConfig::default());
    // Two first runners at once: each makes an App version of its own, and the earliest of
    // them goes ahead (docs/site-cache.md, "The App version is the attempt").
    let world = &w;
    let runs: Vec<Run> = std::thread::scope(|s| {
        let spawned: Vec<_> = ["garm-both1", "garm-both2"]
            .map(|name| s.spawn(move || create(world, name, json!({"docker": "buildkit"}))))
            .into_iter()
            .collect();
        spawned.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &runs {
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    // A buildkit pool uses the mirror only: one cache App, one AppInst.
    assert_eq!(cache_apps(&w).len(), 1, "{:?}", w.app_names());
    let registry = ready_cache(&w, "registry");
    let caches = w
        .app_inst_names()
        .into_iter()
        .filter(|n| n.starts_with("sc-"))
        .count();
    assert_eq!(caches, 1, "{:?}", w.app_inst_names());
    let r = create(&w, "garm-both3", json!({"docker": "buildkit"}));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let app = w.app("garm-both3");
    let manifest: Value =
        serde_json::from_str(app["deployment_manifest"].as_str().unwrap()).unwrap();
    let containers = manifest["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    let buildkitd = containers
        .iter()
        .find(|c| c["name"] == "buildkitd")
        .unwrap();
    let host = address(&registry).trim_start_matches("http://").to_string();
    let toml = buildkitd["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "BUILDKITD_TOML")
        .expect("the mirror's config")["value"]
        .clone();
    assert_eq!(
        toml,
        format!("[registry.\"docker.io\"]\n  mirrors = [\"{host}\"]\n\n[registry.\"{host}\"]\n  http = true\n")
    );
    assert_eq!(buildkitd["command"][0], "sh");
    let args: Vec<String> = serde_json::from_value(buildkitd["args"].clone()).unwrap();
    assert!(
        args.ends_with(&[
            "--config".into(),
            "/home/user/.local/share/buildkit/buildkitd.toml".into()
        ]),
        "{args:?}"
    );
    // No actions cache for a runner without dind.
    assert!(app["env_vars"].get("RUNNER_CACHE_SERVER").is_none());
}
