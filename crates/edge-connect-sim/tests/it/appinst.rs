//! AppInst create/delete/update/show streams, state transitions, both key generations, zones
//! and capacity, over real HTTP.

use std::time::Duration;

use crate::support::*;
use edge_connect_sim::{ApiGeneration, SimHandle};
use serde_json::{json, Value};

/// A Kubernetes create: placement, the CRM's work, the pod seen once while it starts.
const CREATE_LINES: [&str; 8] = [
    "Found 1 potential cloudlets for deployment",
    "Found 1 potential clusters for deployment",
    "Chose multi-tenant cluster defaultmt to deploy AppInst",
    "Creating",
    "Creating App Inst",
    "Status: pod POD: Pending (0/1), container r11: ContainerCreating",
    "Ready",
    "Created AppInst successfully",
];

async fn setup_gen2() -> (SimHandle, Client) {
    let sim = sim_with(|c| c.api = ApiGeneration::Gen2);
    let c = Client::login(&sim.url()).await;
    (sim, c)
}

#[tokio::test]
async fn create_streams_progress_and_ends_with_success() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, "application/json");
    assert_eq!(reply.messages_without_pod_names(), CREATE_LINES);
    let pod = &sim.app_insts()[0]["runtime_info"]["container_ids"][0];
    assert_eq!(
        reply.messages()[5],
        format!(
            "Status: pod {}: Pending (0/1), container r11: ContainerCreating",
            pod.as_str().unwrap()
        )
    );
    assert!(reply.result().is_none());
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn ready_instance_has_the_gen3_output_shape() {
    let (_sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    let inst = c.show_inst("r1").await.expect("instance");
    assert_eq!(inst["key"], json!({"name": "r1", "organization": ORG}));
    assert_eq!(
        inst["app_key"],
        json!({"organization": ORG, "name": "r1", "version": "1"})
    );
    assert_eq!(
        inst["cloudlet_key"],
        json!({"organization": "TelekomOP", "name": "Munich"})
    );
    assert_eq!(
        inst["zone_key"],
        json!({"organization": "TelekomOP", "name": "Munich"})
    );
    assert_eq!(
        inst["cluster_key"],
        json!({"name": "defaultmt", "organization": "edgecloudorg"})
    );
    assert_eq!(inst["flavor"], json!({"name": "EU.small"}));
    assert_eq!(inst["liveness"], "Static");
    assert_eq!(inst["mapped_ports"], Value::Null);
    assert!(inst.get("uri").is_none());
    assert_eq!(inst["fed_key"], json!({}));
    assert_eq!(inst["updated_at"], "");
    assert!(inst["cloudlet_loc"]["latitude"].as_f64().is_some());
    assert_eq!(
        inst["runtime_info"]["container_ids"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        inst["unique_id"],
        "edp-developer-framework-r1-munich-telekomop"
    );
    assert!(!inst["created_at"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn app_with_ports_gets_uri_and_mapped_ports() {
    let (_sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a["access_ports"] = json!("tcp:8080");
    assert_eq!(c.post("CreateApp", app_req(a)).await.body, "{}");
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        reply.messages().last().unwrap(),
        "Created AppInst successfully"
    );
    let inst = c.show_inst("r1").await.unwrap();
    assert_eq!(
        inst["uri"],
        "shared.munich-telekomop.eu.app.edge.telekom.com"
    );
    assert_eq!(
        inst["mapped_ports"],
        json!([{"proto": "Tcp", "internal_port": 8080, "public_port": 8080}])
    );
}

#[tokio::test]
async fn states_are_visible_while_the_create_stream_runs() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(1400));
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(resp.status(), 200);
    let mut lines = LineReader::new(resp);
    assert_eq!(lines.next_message().await.as_deref(), Some(CREATE_LINES[0]));
    assert_eq!(c.state_of("r1").await.as_deref(), Some("CreateRequested"));
    for expected in &CREATE_LINES[1..4] {
        assert_eq!(lines.next_message().await.as_deref(), Some(*expected));
    }
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Creating"));
    for expected in &CREATE_LINES[4..] {
        let line = lines.next_message().await.map(|m| without_pod_name(&m));
        assert_eq!(line.as_deref(), Some(*expected));
    }
    assert!(lines.next().await.unwrap().is_none());
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn create_keeps_going_when_the_client_disconnects() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(400));
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let mut lines = LineReader::new(resp);
    lines.next_message().await;
    drop(lines);
    let seen = states_until(&c, "r1", Some("Ready")).await;
    assert!(
        seen.iter()
            .all(|s| s == "CreateRequested" || s == "Creating"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn delete_streams_and_removes_the_instance() {
    let (sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    let reply = c.post("DeleteAppInst", inst_key_req("r1")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.messages(),
        ["Deleting", "Deleted AppInst successfully"]
    );
    assert!(reply.result().is_none());
    assert!(c.show_inst("r1").await.is_none());
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn delete_states_are_visible_while_it_runs() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(900));
    let c = Client::login(&sim.url()).await;
    create_app_and_inst(&c, "r1").await;
    let deleting = {
        let c = c.clone();
        tokio::spawn(async move { c.post("DeleteAppInst", inst_key_req("r1")).await })
    };
    // Poll until the instance is gone and keep every distinct state seen on the way.
    let mut seen = states_until(&c, "r1", None).await;
    if seen.first().map(String::as_str) == Some("Ready") {
        seen.remove(0);
    }
    assert_eq!(seen, ["DeletePrepare", "DeleteRequested", "Deleting"]);
    let reply = deleting.await.unwrap();
    assert_eq!(
        reply.messages(),
        ["Deleting", "Deleted AppInst successfully"]
    );
}

#[tokio::test]
async fn delete_of_a_creating_instance_is_busy() {
    let sim = sim_holding_creates();
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(held_app("r1"))).await;
    let _held = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    c.post("DeleteAppInst", inst_key_req("r1"))
        .await
        .assert_error(400, "AppInst busy, cannot be deleted");
}

#[tokio::test]
async fn delete_of_a_deleting_instance_is_already_under_deletion() {
    let sim = sim_with(|c| c.create_delay = Duration::from_millis(600));
    let c = Client::login(&sim.url()).await;
    create_app_and_inst(&c, "r1").await;
    let first = {
        let c = c.clone();
        tokio::spawn(async move { c.post("DeleteAppInst", inst_key_req("r1")).await })
    };
    // Wait until the first delete has started.
    while !c
        .state_of("r1")
        .await
        .unwrap_or_default()
        .starts_with("Delete")
    {
        tokio::task::yield_now().await;
    }
    c.post("DeleteAppInst", inst_key_req("r1"))
        .await
        .assert_error(400, "AppInst busy, already under deletion");
    assert_eq!(
        first.await.unwrap().messages().last().unwrap(),
        "Deleted AppInst successfully"
    );
}

#[tokio::test]
async fn delete_of_a_missing_instance_is_not_found() {
    let (_sim, c) = started().await;
    c.post("DeleteAppInst", inst_key_req("r1"))
        .await
        .assert_error(
            400,
            r#"AppInst key {"name":"r1","organization":"edp-developer-framework"} not found"#,
        );
}

#[tokio::test]
async fn delete_in_a_foreign_org_is_403() {
    let (_sim, c) = started().await;
    c.post(
        "DeleteAppInst",
        inst_req(json!({"key": {"name": "r1", "organization": "x"}})),
    )
    .await
    .assert_error(403, "Forbidden");
}

#[tokio::test]
async fn create_of_an_existing_key_is_already_exists() {
    let (_sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1")))
        .await
        .assert_error(
            400,
            r#"AppInst key {"name":"r1","organization":"edp-developer-framework"} already exists"#,
        );
}

#[tokio::test]
async fn concurrent_second_create_is_already_exists() {
    let sim = sim_holding_creates();
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(held_app("r1"))).await;
    let _first = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1")))
        .await
        .assert_error(
            400,
            r#"AppInst key {"name":"r1","organization":"edp-developer-framework"} already exists"#,
        );
}

#[tokio::test]
async fn delete_app_while_its_instance_is_creating_is_in_use() {
    let sim = sim_holding_creates();
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(held_app("r1"))).await;
    let _first = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    c.post("DeleteApp", app_req(json!({"key": {"organization": ORG, "name": "r1", "version": "1"}})))
        .await
        .assert_error(
            400,
            r#"Application in use by static AppInst {"name":"r1","organization":"edp-developer-framework"}"#,
        );
}

#[tokio::test]
async fn create_for_a_missing_app_is_not_found() {
    let (_sim, c) = started().await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await.assert_error(
        400,
        r#"App key {"organization":"edp-developer-framework","name":"r1","version":"1"} not found"#,
    );
}

#[tokio::test]
async fn create_in_a_foreign_org_is_403() {
    let (_sim, c) = started().await;
    c.post("CreateAppInst", inst_req(inst3("x", "r1")))
        .await
        .assert_error(403, "Forbidden");
}

#[tokio::test]
async fn invalid_instance_name_is_400() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst["key"]["name"] = json!("r1/x");
    c.post("CreateAppInst", inst_req(inst))
        .await
        .assert_error(400, "Invalid app instance name");
}

#[tokio::test]
async fn gen3_create_refuses_cloudlet_key() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst["cloudlet_key"] = json!({"organization": "TelekomOP", "name": "Munich"});
    c.post("CreateAppInst", inst_req(inst)).await.assert_error(
        400,
        "Invalid field specified: CloudletKey.Organization, this field is only for internal use",
    );
}

#[tokio::test]
async fn create_refuses_mapped_ports_even_when_empty() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst["mapped_ports"] = json!([]);
    c.post("CreateAppInst", inst_req(inst)).await.assert_error(
        400,
        "Invalid field specified: MappedPorts, this field is only for internal use",
    );
}

#[tokio::test]
async fn create_refuses_fields_copied_from_show() {
    let (_sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    let shown = c.show_inst("r1").await.unwrap();
    c.post("DeleteAppInst", inst_req(shown)).await.assert_error(
        400,
        "Invalid field specified: CloudletLoc.Latitude, this field is only for internal use",
    );
}

#[tokio::test]
async fn create_without_zone_is_zone_not_specified() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst.as_object_mut().unwrap().remove("zone_key");
    c.post("CreateAppInst", inst_req(inst))
        .await
        .assert_error(400, "Zone not specified");
}

#[tokio::test]
async fn create_in_an_unknown_zone_is_not_found() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst["zone_key"] = json!({"organization": "TDG", "name": "nowhere"});
    c.post("CreateAppInst", inst_req(inst)).await.assert_error(
        400,
        r#"Zone key {"organization":"TDG","name":"nowhere"} not found"#,
    );
}

#[tokio::test]
async fn a_zone_and_its_cloudlet_agree_whatever_their_names() {
    let sim = sim_with(|c| {
        c.zones = vec![("TelekomOP".into(), "eu-south-1".into())];
        c.cloudlets = vec![("TelekomOP".into(), "Munich".into())];
    });
    let c = Client::login(&sim.url()).await;
    let cloudlets = c.post("ShowCloudlet", json!({"region": "EU"})).await.data();
    assert_eq!(cloudlets.len(), 1);
    assert_eq!(cloudlets[0]["key"]["name"], "Munich");
    assert_eq!(cloudlets[0]["zone"], "eu-south-1");
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst["zone_key"]["name"] = json!("eu-south-1");
    let reply = c.post("CreateAppInst", inst_req(inst)).await;
    assert_eq!(
        reply.messages().last().unwrap(),
        "Created AppInst successfully"
    );
    let shown = c.show_inst("r1").await.unwrap();
    assert_eq!(
        shown["cloudlet_key"],
        json!({"organization": "TelekomOP", "name": "Munich"})
    );
    assert_eq!(
        shown["zone_key"],
        json!({"organization": "TelekomOP", "name": "eu-south-1"})
    );
}

#[tokio::test]
async fn a_zone_without_a_cloudlet_has_no_edge_sites() {
    let sim = sim_with(|c| {
        c.zones.push(("TelekomOP".into(), "eu-south-1".into()));
    });
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let mut inst = inst3(ORG, "r1");
    inst["zone_key"]["name"] = json!("eu-south-1");
    c.post("CreateAppInst", inst_req(inst))
        .await
        .assert_error(400, "No available edge sites in zone eu-south-1");
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn zero_capacity_is_no_resources() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.set_capacity("TelekomOP", "Munich", Some(0));
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1")))
        .await
        .assert_site_full();
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn capacity_counts_instances_per_site() {
    let sim = sim_with(|c| {
        c.cloudlets.push(("TelekomOP".into(), "Berlin".into()));
        c.zones.push(("TelekomOP".into(), "Berlin".into()));
    });
    let c = Client::login(&sim.url()).await;
    sim.set_capacity("TelekomOP", "Munich", Some(1));
    create_app_and_inst(&c, "r1").await;
    create_app(&c, "r2").await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r2")))
        .await
        .assert_site_full();
    let mut berlin = inst3(ORG, "r2");
    berlin["zone_key"]["name"] = json!("Berlin");
    let reply = c.post("CreateAppInst", inst_req(berlin)).await;
    assert_eq!(
        reply.messages().last().unwrap(),
        "Created AppInst successfully"
    );
    assert_eq!(
        c.show_inst("r2").await.unwrap()["cloudlet_key"],
        json!({"organization": "TelekomOP", "name": "Berlin"})
    );
    sim.set_capacity("TelekomOP", "Munich", None);
    create_app(&c, "r3").await;
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r3"))).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn show_filters_instances() {
    let sim = sim_holding_creates();
    let c = Client::login(&sim.url()).await;
    create_app_and_inst(&c, "r1").await;
    c.post("CreateApp", app_req(held_app("r2"))).await;
    let _pending = c.open("CreateAppInst", inst_req(inst3(ORG, "r2"))).await;
    states_until(&c, "r2", Some("Creating")).await;
    let ready = c
        .post("ShowAppInst", inst_req(json!({"state": "Ready"})))
        .await
        .data();
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0]["key"]["name"], "r1");
    let by_app = c
        .post("ShowAppInst", inst_req(json!({"app_key": {"name": "r2"}})))
        .await
        .data();
    assert_eq!(by_app.len(), 1);
    assert_eq!(by_app[0]["state"], "Creating");
    let none = c
        .post(
            "ShowAppInst",
            inst_req(json!({"key": {"organization": "x"}})),
        )
        .await;
    assert_eq!((none.status, none.body.as_str()), (200, ""));
}

#[tokio::test]
async fn show_zone_lists_zones() {
    let (_sim, c) = started().await;
    let zones = c.post("ShowZone", json!({"region": "EU"})).await.data();
    assert_eq!(zones.len(), 1);
    assert_eq!(
        zones[0]["key"],
        json!({"organization": "TelekomOP", "name": "Munich"})
    );
}

#[tokio::test]
async fn show_flavors_for_zone_lists_names() {
    let (_sim, c) = started().await;
    let reply = c
        .post(
            "ShowFlavorsForZone",
            json!({"region": "EU", "zonekey": {"organization": "TelekomOP", "name": "Munich"}}),
        )
        .await;
    assert_eq!(
        reply.body,
        "{\"data\":{\"name\":\"EU.small\"}}\n{\"data\":{\"name\":\"EU.medium\"}}\n{\"data\":{\"name\":\"EU.large\"}}\n"
    );
}

#[tokio::test]
async fn gen2_create_uses_the_cloudlet_in_the_key() {
    let (_sim, c) = setup_gen2().await;
    create_app(&c, "r1").await;
    let reply = c.post("CreateAppInst", inst_req(inst2(ORG, "r1"))).await;
    assert_eq!(reply.messages_without_pod_names(), CREATE_LINES);
    let inst = c.show_inst("r1").await.unwrap();
    assert_eq!(
        inst["key"],
        json!({"name": "r1", "organization": ORG,
               "cloudlet_key": {"organization": "TelekomOP", "name": "Munich"}})
    );
    assert!(inst.get("zone_key").is_none());
    assert!(inst.get("cloudlet_key").is_none());
    assert_eq!(inst["state"], "Ready");
}

#[tokio::test]
async fn gen2_refuses_a_gen3_shaped_request() {
    let (sim, c) = setup_gen2().await;
    create_app(&c, "r1").await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1")))
        .await
        .assert_error(400, "Invalid cloudlet organization name ");
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn gen2_unknown_cloudlet_is_refused() {
    let (_sim, c) = setup_gen2().await;
    create_app(&c, "r1").await;
    let mut inst = inst2(ORG, "r1");
    inst["key"]["cloudlet_key"]["name"] = json!("Atlantis");
    c.post("CreateAppInst", inst_req(inst))
        .await
        .assert_error(400, "Specified Cloudlet not found");
}

#[tokio::test]
async fn gen2_messages_carry_the_cloudlet_key() {
    let (_sim, c) = setup_gen2().await;
    c.post("DeleteAppInst", inst_req(inst2(ORG, "r1"))).await.assert_error(
        400,
        r#"AppInst key {"name":"r1","organization":"edp-developer-framework","cloudlet_key":{"organization":"TelekomOP","name":"Munich"}} not found"#,
    );
}

#[tokio::test]
async fn gen2_delete_removes_the_instance() {
    let (sim, c) = setup_gen2().await;
    create_app(&c, "r1").await;
    c.post("CreateAppInst", inst_req(inst2(ORG, "r1"))).await;
    let reply = c.post("DeleteAppInst", inst_req(inst2(ORG, "r1"))).await;
    assert_eq!(
        reply.messages(),
        ["Deleting", "Deleted AppInst successfully"]
    );
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn gen2_has_no_zones() {
    let (_sim, c) = setup_gen2().await;
    c.post("ShowZone", json!({"region": "EU"}))
        .await
        .assert_error(404, "Not Found");
    c.post("ShowFlavorsForZone", json!({"region": "EU"}))
        .await
        .assert_error(404, "Not Found");
}

/// The issue's acceptance path, with request bodies shaped as the provider sends them.
async fn provider_walkthrough(api: ApiGeneration) {
    let sim = sim_with(|c| c.api = api);
    let c = Client::login(&sim.url()).await;
    let app_key = json!({"organization": ORG, "name": "garm-r-7f3a9c", "version": "1"});
    let create_app = c
        .post(
            "CreateApp",
            json!({"region": "EU", "app": {
                "key": app_key,
                "image_type": "Docker",
                "image_path": "ghcr.io/actions/actions-runner:2.321.0",
                "deployment": "kubernetes",
                "default_flavor": {"name": "EU.medium"},
                "command": "/home/runner/run.sh",
                "configs": [{"kind": "envVarsYaml", "config": "- name: RUNNER_NAME\n  value: garm-r-7f3a9c\n"}],
                "secret_env_vars": {"ACTIONS_RUNNER_INPUT_JITCONFIG": "ZXlKaGJHY2lPaUp..."}
            }}),
        )
        .await;
    assert_eq!((create_app.status, create_app.body.as_str()), (200, "{}"));
    let key = match api {
        ApiGeneration::Gen3 => json!({"name": "garm-r-7f3a9c", "organization": ORG}),
        ApiGeneration::Gen2 => json!({"name": "garm-r-7f3a9c", "organization": ORG,
                                      "cloudlet_key": {"organization": "TelekomOP", "name": "Munich"}}),
    };
    let mut inst = json!({"key": key, "app_key": app_key});
    if api == ApiGeneration::Gen3 {
        inst["zone_key"] = json!({"organization": "TelekomOP", "name": "Munich"});
    }
    let created = c.post("CreateAppInst", inst_req(inst)).await;
    assert_eq!(created.status, 200);
    assert!(created.result().is_none());
    assert_eq!(
        created.messages().last().unwrap(),
        "Created AppInst successfully"
    );
    let shown = c
        .post("ShowAppInst", inst_req(json!({"key": key})))
        .await
        .data();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["state"], "Ready");
    assert_eq!(shown[0]["flavor"], json!({"name": "EU.medium"}));
    let deleted = c.post("DeleteAppInst", inst_req(json!({"key": key}))).await;
    assert_eq!(
        deleted.messages().last().unwrap(),
        "Deleted AppInst successfully"
    );
    let deleted_app = c.post("DeleteApp", app_req(json!({"key": app_key}))).await;
    assert_eq!((deleted_app.status, deleted_app.body.as_str()), (200, "{}"));
    assert_eq!(c.post("ShowApp", json!({"region": "EU"})).await.body, "");
    assert_eq!(
        c.post("ShowAppInst", json!({"region": "EU"})).await.body,
        ""
    );
}

#[tokio::test]
async fn provider_walkthrough_gen3() {
    provider_walkthrough(ApiGeneration::Gen3).await;
}

#[tokio::test]
async fn provider_walkthrough_gen2() {
    provider_walkthrough(ApiGeneration::Gen2).await;
}
