//! Fault injection, seeding, state dump, reset, capacity and the request log, over real HTTP.

use std::time::{Duration, Instant};

use crate::support::*;
use edge_connect_sim::{Fault, FaultKind, Seed};
use serde_json::{json, Value};

#[tokio::test]
async fn http_status_503_fails_the_next_call_only() {
    let (sim, c) = started().await;
    sim.inject(Fault::http_status("CreateApp", 503));
    c.post("CreateApp", app_req(app(ORG, "r1")))
        .await
        .assert_error(503, "Service temporarily unavailable");
    assert!(sim.apps().is_empty());
    create_app(&c, "r1").await;
}

#[tokio::test]
async fn http_status_429_names_the_path() {
    let (sim, c) = started().await;
    sim.inject(Fault::http_status("ShowApp", 429));
    c.post("ShowApp", json!({"region": "EU"}))
        .await
        .assert_error(
        429,
        "/api/v1/auth/ctrl/ShowApp is rejected, please retry later. Error is: rate limit exceeded",
    );
}

#[tokio::test]
async fn http_status_with_message_and_count() {
    let (sim, c) = started().await;
    sim.inject(
        Fault::new(
            "ShowAppInst",
            FaultKind::HttpStatus {
                status: 500,
                message: Some("controller exploded".into()),
            },
        )
        .times(2),
    );
    for _ in 0..2 {
        c.post("ShowAppInst", json!({"region": "EU"}))
            .await
            .assert_error(500, "controller exploded");
    }
    assert_eq!(
        c.post("ShowAppInst", json!({"region": "EU"})).await.status,
        200
    );
}

#[tokio::test]
async fn wildcard_fault_hits_any_rpc_including_login() {
    let (sim, c) = started().await;
    sim.inject(Fault::http_status("*", 503).times(2));
    c.post("ShowFlavor", json!({"region": "EU"}))
        .await
        .assert_error(503, "Service temporarily unavailable");
    Client::anonymous(&sim.url())
        .raw_json(
            "/api/v1/login",
            &json!({"username": USER, "password": PASSWORD}),
        )
        .await
        .assert_error(503, "Service temporarily unavailable");
    assert_eq!(
        c.post("ShowFlavor", json!({"region": "EU"})).await.status,
        200
    );
}

#[tokio::test]
async fn faults_can_be_posted_as_json() {
    let (_sim, c) = started().await;
    let posted = c
        .control(
            "faults",
            json!([{"rpc": "DeleteApp", "kind": "http_status", "status": 500},
                   {"rpc": "login", "count": 3, "kind": "slow", "delay_ms": 10}]),
        )
        .await;
    assert_eq!((posted.status, posted.body.as_str()), (200, "{}"));
    let pending = c.control_get("faults").await.json();
    assert_eq!(pending.as_array().map(Vec::len), Some(2));
    assert_eq!(pending[1]["count"], 3);
    c.post(
        "DeleteApp",
        app_req(json!({"key": {"organization": ORG, "name": "x", "version": "1"}})),
    )
    .await
    .assert_error(500, "Internal Server Error");
}

#[tokio::test]
async fn slow_fault_delays_the_reply() {
    let (sim, c) = started().await;
    sim.inject(Fault::new("ShowApp", FaultKind::Slow { delay_ms: 300 }));
    let start = Instant::now();
    assert_eq!(c.post("ShowApp", json!({"region": "EU"})).await.status, 200);
    assert!(start.elapsed() >= Duration::from_millis(300));
    // Used up by that one call, so the next is not slowed.
    assert_eq!(c.control_get("faults").await.body, "[]");
}

#[tokio::test]
async fn latency_is_added_to_every_call() {
    let sim = sim_with(|c| c.latency = Duration::from_millis(150));
    let c = Client::login(&sim.url()).await;
    let start = Instant::now();
    c.post("ShowApp", json!({"region": "EU"})).await;
    assert!(start.elapsed() >= Duration::from_millis(150));
}

#[tokio::test]
async fn stream_error_on_create_undoes_and_ends_with_a_result() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.inject(Fault::stream_error(
        "CreateAppInst",
        3,
        "image pull back-off",
    ));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.messages(),
        [
            "Found 1 potential cloudlets for deployment",
            "Found 1 potential clusters for deployment",
            "Chose multi-tenant cluster defaultmt to deploy AppInst",
            "Deleting AppInst due to failure",
            "Deleting",
            "Deleted AppInst successfully",
        ]
    );
    assert!(reply
        .body
        .ends_with("{\"result\":{\"message\":\"Image pull back-off\",\"code\":400}}\n"));
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn stream_error_never_lets_the_create_succeed() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.inject(Fault::stream_error("CreateAppInst", 99, "boom"));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let messages = reply.messages();
    assert!(!messages
        .iter()
        .any(|m| m == "Ready" || m == "Created AppInst successfully"));
    assert_eq!(messages[4], "Creating App Inst");
    assert_eq!(
        reply.result(),
        Some(json!({"message": "Boom", "code": 400}))
    );
}

#[tokio::test]
async fn stream_error_can_leave_the_instance_in_create_error() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.inject(Fault::create_error_left(4, "quota exceeded"));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(reply.messages().len(), 4);
    assert_eq!(
        reply.result(),
        Some(json!({"message": "Quota exceeded", "code": 400}))
    );
    let inst = c.show_inst("r1").await.unwrap();
    assert_eq!(inst["state"], "CreateError");
    assert_eq!(inst["errors"], json!(["Quota exceeded"]));

    let again = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again.messages(),
        [
            "Previous create failed, [Quota exceeded]",
            "Use DeleteAppInst to remove and try again"
        ]
    );
    assert_eq!(
        again.result(),
        Some(
            json!({"message": "AppInst key {\"name\":\"r1\",\"organization\":\"edp-developer-framework\"} already exists", "code": 400})
        )
    );
    let deleted = c.post("DeleteAppInst", inst_key_req("r1")).await;
    assert_eq!(
        deleted.messages().last().unwrap(),
        "Deleted AppInst successfully"
    );
}

#[tokio::test]
async fn stream_error_on_delete_recreates_and_returns_to_ready() {
    let (sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    sim.inject(Fault::stream_error(
        "DeleteAppInst",
        1,
        "volume detach failed",
    ));
    let reply = c.post("DeleteAppInst", inst_key_req("r1")).await;
    assert_eq!(
        reply.messages(),
        [
            "Deleting",
            "Recreating AppInst due to failure",
            "Creating",
            "Ready"
        ]
    );
    assert_eq!(
        reply.result(),
        Some(json!({"message": "Volume detach failed", "code": 400}))
    );
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn drop_connection_cuts_the_stream_but_the_create_completes() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(300));
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    sim.inject(Fault::new(
        "CreateAppInst",
        FaultKind::DropConnection { after_lines: 2 },
    ));
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(resp.status(), 200);
    let mut lines = LineReader::new(resp);
    assert!(lines.next().await.unwrap().is_some());
    assert!(lines.next().await.unwrap().is_some());
    assert!(
        lines.next().await.is_err(),
        "the connection is cut without a proper end"
    );
    states_until(&c, "r1", Some("Ready")).await;
}

#[tokio::test]
async fn drop_connection_on_delete_still_deletes() {
    let (sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    sim.inject(Fault::new(
        "DeleteAppInst",
        FaultKind::DropConnection { after_lines: 0 },
    ));
    // Cut before the first line: not even the response header arrives.
    let sent = c
        .http
        .post(format!("{}/api/v1/auth/ctrl/DeleteAppInst", sim.url()))
        .bearer_auth(c.token.as_deref().unwrap())
        .body(inst_key_req("r1").to_string())
        .send()
        .await;
    assert!(sent.is_err(), "{sent:?}");
    let seen = states_until(&c, "r1", None).await;
    assert!(!seen.iter().any(|s| s == "Ready"), "{seen:?}");
}

#[tokio::test]
async fn timeout_ends_cleanly_and_the_instance_becomes_ready_later() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.inject(Fault::new(
        "CreateAppInst",
        FaultKind::Timeout {
            ready_after_ms: 300,
        },
    ));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.messages().last().unwrap(),
        "Timed out while work still in progress state Creating. Please use ShowAppInst to check current status"
    );
    assert!(!reply
        .messages()
        .iter()
        .any(|m| m == "Created AppInst successfully"));
    assert!(reply.result().is_none());
    // Creating until the fault completes it, 300 ms after the stream ended.
    let seen = states_until(&c, "r1", Some("Ready")).await;
    assert!(seen.iter().all(|s| s == "Creating"), "{seen:?}");
}

#[tokio::test]
async fn stream_faults_are_not_consumed_by_failed_validation() {
    let (sim, c) = started().await;
    sim.inject(Fault::stream_error("CreateAppInst", 0, "boom"));
    let early = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(early.status, 400);
    create_app(&c, "r1").await;
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        reply.result(),
        Some(json!({"message": "Boom", "code": 400}))
    );
}

#[tokio::test]
async fn control_endpoints_do_not_exist_without_faults_enabled() {
    let sim = sim_with(|c| c.faults_enabled = false);
    let c = Client::anonymous(&sim.url());
    c.control("reset", json!({}))
        .await
        .assert_error(404, "Not Found");
    c.control_get("state").await.assert_error(404, "Not Found");
}

#[tokio::test]
async fn unknown_control_endpoint_is_404_and_wrong_method_405() {
    let (_sim, c) = started().await;
    c.control("nope", json!({}))
        .await
        .assert_error(404, "Not Found");
    c.control_get("reset")
        .await
        .assert_error(405, "Method Not Allowed");
}

#[tokio::test]
async fn seed_creates_ten_thousand_apps_and_instances_in_one_call() {
    let (sim, c) = started().await;
    let reply = c
        .control(
            "seed",
            json!({"org": ORG, "count": 10000, "app_insts": true, "name_prefix": "bulk-"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json(), json!({"apps": 10000, "app_insts": 10000}));
    assert_eq!(sim.app_insts().len(), 10000);
    let shown = c
        .post(
            "ShowAppInst",
            inst_req(json!({"key": {"organization": ORG}})),
        )
        .await
        .data();
    assert_eq!(shown.len(), 10000);
    assert!(shown.iter().all(|i| i["state"] == "Ready"));
}

#[tokio::test]
async fn seeded_foreign_objects_carry_env_vars_and_stay_hidden() {
    let (sim, c) = started().await;
    sim.seed(Seed {
        org: "other-team".into(),
        count: 2,
        app_insts: true,
        env_vars: [("GARM_CONTROLLER_ID".to_string(), "ctrl-b".to_string())].into(),
        ..Seed::default()
    });
    sim.seed(Seed {
        count: 1,
        env_vars: [("GARM_POOL_ID".to_string(), "pool-x".to_string())].into(),
        ..Seed::default()
    });
    let apps = sim.apps();
    assert_eq!(apps.len(), 3);
    let foreign: Vec<&Value> = apps
        .iter()
        .filter(|a| a["key"]["organization"] == "other-team")
        .collect();
    assert_eq!(foreign.len(), 2);
    assert_eq!(foreign[0]["env_vars"]["GARM_CONTROLLER_ID"], "ctrl-b");
    assert_eq!(foreign[0]["key"]["name"], "seed-1");
    let visible = c.post("ShowApp", json!({"region": "EU"})).await.data();
    assert_eq!(visible.len(), 1);
    assert_eq!(visible[0]["env_vars"]["GARM_POOL_ID"], "pool-x");
    assert_eq!(
        c.post("ShowAppInst", json!({"region": "EU"})).await.body,
        ""
    );
    assert_eq!(sim.app_insts().len(), 2);
}

#[tokio::test]
async fn seeding_twice_continues_the_numbering() {
    let (sim, _c) = started().await;
    sim.seed(Seed {
        count: 2,
        ..Seed::default()
    });
    sim.seed(Seed {
        count: 2,
        ..Seed::default()
    });
    let names: Vec<String> = sim
        .apps()
        .iter()
        .map(|a| a["key"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["seed-1", "seed-2", "seed-3", "seed-4"]);
}

#[tokio::test]
async fn state_dump_shows_everything() {
    let (sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a["secret_env_vars"] = json!({"TOKEN": "t0ps3cret"});
    c.post("CreateApp", app_req(a)).await;
    sim.set_capacity("TelekomOP", "Munich", Some(3));
    sim.inject(Fault::timeout("CreateAppInst"));
    let state = c.control_get("state").await.json();
    assert_eq!(state["api"], "gen3");
    assert_eq!(state["apps"][0]["secret_env_vars"]["TOKEN"], "t0ps3cret");
    assert_eq!(state["app_insts"], json!([]));
    assert_eq!(
        state["capacity"],
        json!([{"organization": "TelekomOP", "name": "Munich", "max_app_insts": 3}])
    );
    assert_eq!(state["faults"][0]["kind"], "timeout");
    assert_eq!(state["logins"], 1);
    assert_eq!(state["token_ttl_secs"], 86400.0);
}

#[tokio::test]
async fn capacity_endpoint_sets_and_clears_limits() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let body = json!({"organization": "TelekomOP", "name": "Munich", "max_app_insts": 0});
    assert_eq!(c.control("capacity", body).await.body, "{}");
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1")))
        .await
        .assert_site_full();
    c.control(
        "capacity",
        json!({"organization": "TelekomOP", "name": "Munich"}),
    )
    .await;
    assert_eq!(
        c.post("CreateAppInst", inst_req(inst3(ORG, "r1")))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn reset_forgets_objects_faults_and_log() {
    let (sim, c) = started().await;
    create_app_and_inst(&c, "r2").await;
    sim.inject(Fault::http_status("ShowApp", 500));
    assert_eq!(c.control("reset", json!({})).await.body, "{}");
    assert!(sim.apps().is_empty());
    assert!(sim.app_insts().is_empty());
    assert!(sim.request_log().is_empty());
    assert_eq!(sim.logins(), 0);
    assert_eq!(c.post("ShowApp", json!({"region": "EU"})).await.status, 200);
}

#[tokio::test]
async fn reset_stops_operations_in_flight() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(400));
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    sim.reset();
    let body = resp.text().await.unwrap();
    let last: Value = serde_json::from_str(body.lines().last().unwrap()).unwrap();
    assert_eq!(
        last,
        json!({"result": {"message": r#"AppInst key {"name":"r1","organization":"edp-developer-framework"} not found"#, "code": 400}})
    );
    // The operation sent that result because the reset removed its instance, and stopped.
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn request_log_records_each_call() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    c.post("CreateApp", app_req(app(ORG, "r1"))).await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    c.control_get("state").await;
    assert_eq!(
        log_rows(&sim),
        [
            ("POST".to_string(), "login".to_string(), 200),
            ("POST".to_string(), "CreateApp".to_string(), 200),
            ("POST".to_string(), "CreateApp".to_string(), 400),
            ("POST".to_string(), "CreateAppInst".to_string(), 200),
        ]
    );
    let log = sim.request_log();
    assert_eq!(log[3].path, "/api/v1/auth/ctrl/CreateAppInst");
}

#[tokio::test]
async fn request_log_duration_covers_the_whole_stream() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(300));
    let c = Client::login(&sim.url()).await;
    create_app_and_inst(&c, "r1").await;
    let entry = sim.request_log().pop().unwrap();
    assert_eq!(entry.rpc, "CreateAppInst");
    assert!(
        entry.duration >= Duration::from_millis(300),
        "{:?}",
        entry.duration
    );
}

#[tokio::test]
async fn request_log_file_has_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(|c| c.state_dir = Some(dir.path().to_path_buf()));
    let c = Client::login(&sim.url()).await;
    let mut a = app(ORG, "r1");
    a["secret_env_vars"] = json!({"TOKEN": "t0ps3cret"});
    c.post("CreateApp", app_req(a)).await;
    Client::anonymous(&sim.url())
        .raw_json(
            "/api/v1/login",
            &json!({"username": USER, "password": "wrong-pw"}),
        )
        .await;
    let text = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["rpc"], "CreateApp");
    assert_eq!(lines[2]["status"], 400);
    let token = c.token.as_deref().unwrap();
    let dump = format!("{text}{:?}", sim.request_log());
    for secret in [PASSWORD, "wrong-pw", token, "t0ps3cret"] {
        assert!(!dump.contains(secret), "request log leaks {secret}");
    }
    let requests = c.control_get("requests").await.json();
    assert_eq!(requests.as_array().map(Vec::len), Some(3));
    assert!(!requests.to_string().contains(PASSWORD));
}

#[tokio::test]
async fn address_file_is_written_to_the_state_dir() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(|c| c.state_dir = Some(dir.path().join("nested")));
    let text = std::fs::read_to_string(dir.path().join("nested/address")).unwrap();
    assert_eq!(text, format!("{}\n", sim.url()));
}

#[tokio::test]
async fn seed_count_is_capped() {
    let (sim, c) = started().await;
    c.control("seed", json!({"count": 100_001}))
        .await
        .assert_error(400, "count must be at most 100000");
    assert!(sim.apps().is_empty());
}
