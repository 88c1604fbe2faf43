//! Faults: what the provider does when Edge Connect fails, streams break, tokens expire, sites are
//! full or the provider itself is killed. Every case ends with the simulator's exact state and no
//! secret in any output.

use std::time::Duration;

use crate::support::*;
use edge_connect_sim::{ApiGeneration, Fault, FaultKind, SimConfig};

const NAME: &str = "garm-fault0001";

fn create(w: &World) -> Run {
    w.create("bootstrap-github-jit.json", NAME, POOL, &[])
}

#[test]
fn a_create_that_fails_after_the_app_was_made_leaves_nothing() {
    let w = World::new();
    w.sim.inject(Fault::stream_error(
        "CreateAppInst",
        2,
        "image pull back-off for ghcr.io/example-org/garm-runner",
    ));
    let r = create(&w);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(r.stderr.contains("Image pull back-off"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1);
    w.assert_nothing_left();
    assert_eq!(
        w.calls("DeleteApp"),
        1,
        "the App made before the failure was removed"
    );
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.stdout, "[]");
    w.assert_no_secrets(&[&r]);
}

#[test]
fn a_create_left_in_create_error_is_cleaned_up() {
    let w = World::new();
    w.sim
        .inject(Fault::create_error_left(1, "no nodes with enough memory"));
    let r = create(&w);
    assert_eq!(r.code, 1, "{}", r.stderr);
    w.assert_nothing_left();
    // GARM retries the same name after a failure: it must work.
    let again = create(&w);
    assert_eq!(again.code, 0, "{}", again.stderr);
}

#[test]
fn a_broken_stream_is_followed_by_polling_never_a_second_create() {
    let w = World::new();
    w.sim.inject(Fault::new(
        "CreateAppInst",
        FaultKind::DropConnection { after_lines: 2 },
    ));
    let r = create(&w);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["status"], "running");
    assert_eq!(w.calls("CreateAppInst"), 1);
    assert!(w.calls("ShowAppInst") >= 1);
    assert_eq!(w.sim.app_insts()[0]["state"], "Ready");
}

#[test]
fn a_timed_out_stream_is_followed_by_polling() {
    let w = World::new();
    w.sim.inject(Fault::new(
        "CreateAppInst",
        FaultKind::Timeout {
            ready_after_ms: 300,
        },
    ));
    let r = create(&w);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.calls("CreateAppInst"), 1);
    assert_eq!(w.sim.app_insts()[0]["state"], "Ready");
}

#[test]
fn early_503_and_429_are_retried() {
    let w = World::new();
    w.sim
        .inject(Fault::http_status("CreateAppInst", 503).times(2));
    let r = create(&w);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.calls("CreateAppInst"), 3);

    w.sim.inject(Fault::http_status("ShowApp", 429).times(3));
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(list.json().as_array().map(Vec::len), Some(1));
}

#[test]
fn delete_during_an_outage_fails_and_leaves_the_instance_listed() {
    let w = World::with(
        ApiGeneration::Gen3,
        Site::Zone,
        "operation_timeout_secs = 6\nrequest_timeout_secs = 2\n",
    );
    let c = create(&w);
    assert_eq!(c.code, 0, "{}", c.stderr);
    w.sim.inject(Fault::http_status("*", 503).times(1000));
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", NAME)], None);
    assert_eq!(d.code, 1, "neither success nor not-found: {}", d.stderr);
    assert!(d.stderr.contains("HTTP 503"), "{}", d.stderr);
    assert_eq!(w.app_names(), vec![NAME], "still there");
    assert_eq!(w.app_inst_names(), vec![NAME]);
}

#[test]
fn an_expired_token_means_one_new_login() {
    let w = World::new();
    assert_eq!(create(&w).code, 0);
    assert_eq!(w.sim.logins(), 1);
    w.sim.inject(Fault::new("*", FaultKind::ExpireTokens));
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(w.sim.logins(), 2);
}

#[test]
fn a_revoked_account_is_one_clear_auth_error_not_a_loop() {
    let w = World::new();
    assert_eq!(create(&w).code, 0);
    w.sim.inject(Fault::new("*", FaultKind::ExpireTokens));
    w.sim.inject(
        Fault::new(
            "login",
            FaultKind::HttpStatus {
                status: 400,
                message: Some("Invalid username or password".into()),
            },
        )
        .times(100),
    );
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("check credentials_file"), "{}", r.stderr);
    assert_eq!(w.calls("login"), 2, "the first login and one re-login");
    w.assert_no_secrets(&[&r]);
}

#[test]
fn a_delete_of_an_instance_still_creating_says_so_at_once_and_a_retry_removes_it() {
    let config = SimConfig {
        create_delay: Duration::from_millis(2500),
        ..SimConfig::default()
    };
    let w = World::with_sim(config, Site::Zone, "");
    let creating = w.spawn_garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        &fixture_with("bootstrap-github-jit.json", NAME, POOL),
    );
    wait_until("one AppInst", || w.app_inst_names().len() == 1);
    // GARM's DeleteInstance is not the place to wait (GARM retries it every few seconds):
    // it says at once what holds the AppInst, without a DeleteAppInst that would be refused.
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", NAME)], None);
    assert_eq!(d.code, 1, "{}", d.stdout);
    assert!(
        d.stderr
            .contains(&format!("AppInst {NAME} on TelekomOP/Munich is Creat")),
        "{}",
        d.stderr
    );
    assert_eq!(w.calls("DeleteAppInst"), 0);
    let out = creating.wait_with_output().expect("create finishes");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", NAME)], None);
    assert_eq!(d.code, 0, "{}", d.stderr);
    w.assert_nothing_left();
}

/// DeleteInstance as GARM runs it: again every second while it fails (GARM: every few
/// seconds), at most `tries` times; the last run.
fn delete_until_done(w: &World, tries: usize) -> Run {
    let mut d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", NAME)], None);
    for _ in 1..tries {
        if d.code == 0 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
        d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", NAME)], None);
    }
    d
}

#[test]
fn killed_mid_create_then_delete_cleans_up_and_create_works_again() {
    for kill_after_ms in [150u64, 600, 1500] {
        let config = SimConfig {
            create_delay: Duration::from_millis(1500),
            ..SimConfig::default()
        };
        let w = World::with_sim(config, Site::Zone, "");
        // Slow CreateApp so the first kill lands before or while the App is being made.
        w.sim
            .inject(Fault::new("CreateApp", FaultKind::Slow { delay_ms: 300 }));
        let mut child = w.spawn_garm(
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            &fixture_with("bootstrap-github-jit.json", NAME, POOL),
        );
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        // An AppInst still creating is reported at once; GARM's retries remove it once Ready.
        let d = delete_until_done(&w, 10);
        assert_eq!(d.code, 0, "kill after {kill_after_ms} ms: {}", d.stderr);
        // A creation that was still on its way to the server may land after the delete looked;
        // let it settle, delete again as GARM's retry would, then the state must be clean.
        std::thread::sleep(Duration::from_millis(400));
        let d = delete_until_done(&w, 10);
        assert_eq!(d.code, 0, "{}", d.stderr);
        w.assert_nothing_left();
        let again = create(&w);
        assert_eq!(
            again.code, 0,
            "kill after {kill_after_ms} ms: {}",
            again.stderr
        );
        assert_eq!(w.app_inst_names(), vec![NAME]);
    }
}

#[test]
fn failover_moves_on_from_a_full_site_and_spread_is_stable() {
    let config = two_zones();
    let w = World::with_sim(config, Site::Zone, "");
    w.sim.set_capacity("TelekomOP", "Munich", Some(0));
    let specs = serde_json::json!({
        "zones": [{"organization": "TelekomOP", "name": "Munich"}, {"organization": "TelekomOP", "name": "Berlin"}],
        "placement_strategy": "failover"
    });
    let mut v: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-failover",
        POOL,
    ))
    .unwrap();
    v["extra_specs"] = specs.clone();
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let inst = w
        .sim
        .app_insts()
        .into_iter()
        .find(|i| i["key"]["name"] == "garm-failover")
        .unwrap();
    assert_eq!(inst["zone_key"]["name"], "Berlin");
    assert_eq!(
        w.calls("CreateAppInst"),
        2,
        "Munich refused, Berlin took it"
    );

    // Stop + Start goes through the same sites (Munich is still full).
    assert_eq!(
        w.garm(
            "StopInstance",
            &[("GARM_INSTANCE_ID", "garm-failover")],
            None
        )
        .code,
        0
    );
    assert_eq!(
        w.garm(
            "StartInstance",
            &[("GARM_INSTANCE_ID", "garm-failover")],
            None
        )
        .code,
        0
    );

    // Spread: with capacity everywhere, names land on both sites, and each name deterministically.
    w.sim.set_capacity("TelekomOP", "Munich", None);
    let mut sites = std::collections::BTreeSet::new();
    for i in 0..8 {
        let name = format!("garm-spread{i}");
        let mut v: serde_json::Value =
            serde_json::from_str(&fixture_with("bootstrap-github-jit.json", &name, POOL)).unwrap();
        v["extra_specs"] =
            serde_json::json!({"zones": specs["zones"], "placement_strategy": "spread"});
        assert_eq!(
            w.garm(
                "CreateInstance",
                &[("GARM_POOL_ID", POOL)],
                Some(&v.to_string())
            )
            .code,
            0
        );
        let zone = w
            .sim
            .app_insts()
            .into_iter()
            .find(|i| i["key"]["name"] == name.as_str())
            .unwrap()["zone_key"]["name"]
            .clone();
        sites.insert(zone.as_str().unwrap_or_default().to_string());
    }
    assert_eq!(sites.len(), 2, "spread uses both sites: {sites:?}");

    // Every site full: a clear error and nothing left behind.
    w.sim.set_capacity("TelekomOP", "Munich", Some(0));
    w.sim.set_capacity("TelekomOP", "Berlin", Some(0));
    let r = w.create_edited("garm-nowhere", |v| {
        v["extra_specs"] = specs;
    });
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("no site could take the AppInst (2 tried)"),
        "{}",
        r.stderr
    );
    assert!(!w.app_names().contains(&"garm-nowhere".to_string()));
}

/// The first site of two sends nothing at all for `request_timeout_secs` after CreateAppInst:
/// the stream is closed, what it may have made removed, and the next site takes the runner.
#[test]
fn a_site_that_answers_nothing_costs_request_timeout_and_the_next_one_is_tried() {
    let w = World::with_sim(
        two_zones(),
        Site::Zone,
        "request_timeout_secs = 2\noperation_timeout_secs = 300",
    );
    w.sim.inject(Fault::new(
        "CreateAppInst",
        FaultKind::Slow { delay_ms: 30_000 },
    ));
    let r = w.create_edited("garm-silent", |v| {
        v["extra_specs"] = serde_json::json!({
            "zones": [{"organization": "TelekomOP", "name": "Munich"}, {"organization": "TelekomOP", "name": "Berlin"}],
            "placement_strategy": "failover"
        });
    });
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["status"], "running");
    let log = w.log_text();
    assert!(
        log.contains(
            "answered nothing to CreateAppInst within edge_connect.request_timeout_secs=2s"
        ),
        "{log}"
    );
    let on_berlin = w
        .sim
        .app_insts()
        .into_iter()
        .any(|i| i["key"]["name"] == "garm-silent" && i["zone_key"]["name"] == "Berlin");
    assert!(on_berlin, "{:?}", w.sim.app_insts());
}
