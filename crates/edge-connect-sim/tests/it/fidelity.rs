//! Behaviours checked in the EdgeXR source (docs/edge-connect-behaviours.md) that a simulator written beside its
//! client gets wrong unless it is told: old releases dropping App fields, Gen2 cloudlet pools,
//! federated cloudlet keys, undo on disconnect for central-CRM sites, two-factor logins.

use std::time::Duration;

use edge_connect_sim::{
    ApiGeneration, CloudletPool, CloudletSettings, ImageFault, ImageRule, ServerRelease,
};
use serde_json::json;

use crate::support::*;

fn runner_app(name: &str) -> serde_json::Value {
    let mut a = app(ORG, name);
    a["env_vars"] = json!({"GARM_CONTROLLER_ID": "c1"});
    a["secret_env_vars"] = json!({"BEARER_TOKEN": "t0ken"});
    a["username"] = json!("puller");
    a["credentials"] = json!("s3cret");
    a
}

async fn shown_app(c: &Client, name: &str) -> serde_json::Value {
    let reply = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"key": {"name": name}}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.data().into_iter().next().expect("the App is shown")
}

#[tokio::test]
async fn a_release_before_env_vars_drops_them_and_credentials_silently() {
    let sim = sim_with(|c| c.release = ServerRelease::BeforeEnvVars);
    let c = Client::login(&sim.url()).await;
    let reply = c.post("CreateApp", app_req(runner_app("r1"))).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let shown = shown_app(&c, "r1").await;
    for field in ["env_vars", "secret_env_vars", "username", "credentials"] {
        assert!(shown.get(field).is_none(), "{field} dropped: {shown}");
    }
}

#[tokio::test]
async fn a_release_before_registry_credentials_keeps_env_vars_only() {
    let sim = sim_with(|c| c.release = ServerRelease::BeforeRegistryCredentials);
    let c = Client::login(&sim.url()).await;
    let reply = c.post("CreateApp", app_req(runner_app("r1"))).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let shown = shown_app(&c, "r1").await;
    assert_eq!(shown["env_vars"], json!({"GARM_CONTROLLER_ID": "c1"}));
    assert_eq!(shown["secret_env_vars"], json!({"BEARER_TOKEN": "***"}));
    assert!(shown.get("username").is_none(), "{shown}");
    assert!(shown.get("credentials").is_none(), "{shown}");
}

#[tokio::test]
async fn the_current_release_keeps_every_field() {
    let (_sim, c) = started().await;
    c.post("CreateApp", app_req(runner_app("r1"))).await;
    let shown = shown_app(&c, "r1").await;
    assert_eq!(shown["username"], "puller");
    assert_eq!(shown["credentials"], "***");
    assert_eq!(shown["env_vars"]["GARM_CONTROLLER_ID"], "c1");
}

/// Creates, per `(name, controller)`, an App marked with the controller in its env_vars and an
/// AppInst marked with it in its annotations, each beside a key of someone else's.
async fn marked(c: &Client, names: &[(&str, &str)]) {
    for (name, controller) in names {
        let mut a = app(ORG, name);
        a["env_vars"] = json!({"GARM_CONTROLLER_ID": controller, "OTHER": "x"});
        let reply = c.post("CreateApp", app_req(a)).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let mut inst = inst3(ORG, name);
        inst["annotations"] = json!({"garm-controller-id": controller, "more": "y"});
        let reply = c.post("CreateAppInst", inst_req(inst)).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
}

async fn shown_names(
    c: &Client,
    rpc: &str,
    wrapper: &str,
    filter: serde_json::Value,
) -> Vec<String> {
    let reply = c.post(rpc, json!({"region": "EU", wrapper: filter})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mut names: Vec<String> = reply
        .data()
        .iter()
        .map(|o| o["key"]["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn show_filters_on_env_vars_and_annotations_as_subsets_where_the_release_knows_them() {
    // main `api/edgeproto/app.pb.go:2765-2781` (env_vars) and `appinst.pb.go:3870-3885`
    // (annotations): every key of the filter on the object with an equal value, others allowed.
    let (_sim, c) = started().await;
    marked(&c, &[("r1", "c1"), ("r2", "c2")]).await;
    let by_env = json!({"key": {"organization": ORG}, "env_vars": {"GARM_CONTROLLER_ID": "c1"}});
    assert_eq!(shown_names(&c, "ShowApp", "app", by_env).await, ["r1"]);
    let by_mark =
        json!({"key": {"organization": ORG}, "annotations": {"garm-controller-id": "c2"}});
    assert_eq!(
        shown_names(&c, "ShowAppInst", "appinst", by_mark).await,
        ["r2"]
    );
    let none = json!({"key": {"organization": ORG}, "annotations": {"garm-controller-id": "c3"}});
    assert!(shown_names(&c, "ShowAppInst", "appinst", none)
        .await
        .is_empty());
    let shown = c.show_inst("r1").await.expect("r1 is shown");
    assert_eq!(
        shown["annotations"],
        json!({"garm-controller-id": "c1", "more": "y"})
    );

    // A release before both fields drops them from the create and from the filter alike:
    // every object of the organization comes back, unmarked.
    let old = sim_with(|c| c.release = ServerRelease::BeforeEnvVars);
    let c = Client::login(&old.url()).await;
    marked(&c, &[("r1", "c1"), ("r2", "c2")]).await;
    let by_env = json!({"key": {"organization": ORG}, "env_vars": {"GARM_CONTROLLER_ID": "c1"}});
    assert_eq!(
        shown_names(&c, "ShowApp", "app", by_env).await,
        ["r1", "r2"]
    );
    let by_mark =
        json!({"key": {"organization": ORG}, "annotations": {"garm-controller-id": "c2"}});
    assert_eq!(
        shown_names(&c, "ShowAppInst", "appinst", by_mark).await,
        ["r1", "r2"]
    );
    let shown = c.show_inst("r1").await.expect("r1 is shown");
    assert!(shown.get("annotations").is_none(), "{shown}");
}

#[tokio::test]
async fn show_app_inst_filters_on_the_app_part_by_part() {
    // docs/edge-connect-behaviours.md B24: the AppInst's `app_key` is compared part by part,
    // each only when the filter's is not empty (main `api/edgeproto/appinst.pb.go:3830`,
    // `app.pb.go:2368-2392`), whatever the AppInst's name.
    let sim = sim_with(|c| {
        c.zones = vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ];
        c.cloudlets = c.zones.clone();
    });
    let c = Client::login(&sim.url()).await;
    create_app_and_inst(&c, "r1").await;
    create_app_and_inst(&c, "r2").await;
    let mut second = inst3(ORG, "r1-2");
    second["app_key"]["name"] = "r1".into();
    second["zone_key"]["name"] = "Berlin".into();
    let reply = c.post("CreateAppInst", inst_req(second)).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let by_app =
        |app_key: serde_json::Value| json!({"key": {"organization": ORG}, "app_key": app_key});
    assert_eq!(
        shown_names(
            &c,
            "ShowAppInst",
            "appinst",
            by_app(json!({"organization": ORG, "name": "r1"}))
        )
        .await,
        ["r1", "r1-2"]
    );
    assert_eq!(
        shown_names(
            &c,
            "ShowAppInst",
            "appinst",
            by_app(json!({"name": "r1", "version": "1"}))
        )
        .await,
        ["r1", "r1-2"]
    );
    assert!(shown_names(
        &c,
        "ShowAppInst",
        "appinst",
        by_app(json!({"name": "r1", "version": "2"}))
    )
    .await
    .is_empty());
    assert!(
        shown_names(
            &c,
            "ShowAppInst",
            "appinst",
            by_app(json!({"name": "r1-2"}))
        )
        .await
        .is_empty(),
        "the AppInst's own name is not the App's"
    );
    assert_eq!(
        shown_names(
            &c,
            "ShowAppInst",
            "appinst",
            by_app(json!({"organization": ORG}))
        )
        .await,
        ["r1", "r1-2", "r2"]
    );
}

fn gen2_with_pool() -> edge_connect_sim::SimHandle {
    sim_with(|c| {
        c.api = ApiGeneration::Gen2;
        c.cloudlets = vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Private".into()),
            ("TelekomOP".into(), "Ours".into()),
        ];
        c.cloudlet_pools = vec![
            CloudletPool {
                organization: "TelekomOP".into(),
                name: "other-customer".into(),
                cloudlets: vec!["Private".into()],
                members: vec!["someone-else".into()],
            },
            CloudletPool {
                organization: "TelekomOP".into(),
                name: "ours".into(),
                cloudlets: vec!["Ours".into()],
                members: vec![ORG.into()],
            },
        ];
    })
}

fn inst2_on(name: &str, cloudlet: &str) -> serde_json::Value {
    let mut inst = inst2(ORG, name);
    inst["key"]["cloudlet_key"]["name"] = json!(cloudlet);
    inst_req(inst)
}

#[tokio::test]
async fn gen2_unknown_cloudlet_is_not_found_and_a_foreign_pool_is_forbidden() {
    let sim = gen2_with_pool();
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    c.post("CreateAppInst", inst2_on("r1", "Nowhere"))
        .await
        .assert_error(400, "Specified Cloudlet not found");
    c.post("CreateAppInst", inst2_on("r1", "Private"))
        .await
        .assert_error(403, "Forbidden");
    let ours = c.post("CreateAppInst", inst2_on("r1", "Ours")).await;
    assert_eq!(ours.status, 200, "{}", ours.body);
    assert_eq!(
        ours.messages().last().map(String::as_str),
        Some("Created AppInst successfully")
    );
    // The public cloudlet works too, and ShowCloudlet hides the foreign pool's cloudlet.
    let public = c.post("CreateAppInst", inst2_on("r1", "Munich")).await;
    assert_eq!(public.status, 200, "{}", public.body);
    let names: Vec<String> = c
        .post("ShowCloudlet", json!({"region": "EU"}))
        .await
        .data()
        .iter()
        .map(|d| d["key"]["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["Munich", "Ours"]);
}

#[tokio::test]
async fn gen2_federated_cloudlet_keys_must_carry_the_federated_organization() {
    let sim = sim_with(|c| {
        c.api = ApiGeneration::Gen2;
        c.cloudlet_settings = vec![CloudletSettings {
            federated_organization: "PartnerOP".into(),
            ..CloudletSettings::new("TelekomOP", "Munich")
        }];
    });
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    // Without it the key names no cloudlet.
    c.post("CreateAppInst", inst_req(inst2(ORG, "r1")))
        .await
        .assert_error(400, "Specified Cloudlet not found");
    let mut inst = inst2(ORG, "r1");
    inst["key"]["cloudlet_key"]["federated_organization"] = json!("PartnerOP");
    let created = c.post("CreateAppInst", inst_req(inst.clone())).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let shown = c
        .post("ShowAppInst", json!({"region": "EU", "appinst": {}}))
        .await
        .data();
    assert_eq!(
        shown[0]["key"]["cloudlet_key"],
        json!({"organization": "TelekomOP", "name": "Munich", "federated_organization": "PartnerOP"})
    );
    // A delete that drops it is not found; sent back whole, it deletes.
    c.post(
        "DeleteAppInst",
        inst_req(json!({"key": inst2(ORG, "r1")["key"]})),
    )
    .await
    .assert_error(
        400,
        &format!(
            r#"AppInst key {{"name":"r1","organization":"{ORG}","cloudlet_key":{{"organization":"TelekomOP","name":"Munich"}}}} not found"#
        ),
    );
    let deleted = c
        .post("DeleteAppInst", inst_req(json!({"key": inst["key"]})))
        .await;
    assert_eq!(
        deleted.messages().last().map(String::as_str),
        Some("Deleted AppInst successfully"),
        "{}",
        deleted.body
    );
}

#[tokio::test]
async fn a_client_leaving_a_create_on_a_central_crm_site_makes_the_controller_undo_it() {
    // The held image keeps the create from finishing before the client leaves.
    let sim = sim_with(|c| {
        c.images = vec![ImageRule::new(HELD_IMAGE, ImageFault::CannotPull)];
        c.crm_max_wait = Duration::from_secs(3600);
        c.cloudlet_settings = vec![CloudletSettings {
            crm_on_edge: false,
            ..CloudletSettings::new("TelekomOP", "Munich")
        }];
    });
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(held_app("r1"))).await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let mut lines = LineReader::new(resp);
    assert_eq!(
        lines.next_message().await.as_deref(),
        Some("Found 1 potential cloudlets for deployment")
    );
    drop(lines);
    // The undo goes through CreateError and Deleting, then the instance is gone.
    let seen = states_until(&c, "r1", None).await;
    assert!(!seen.iter().any(|s| s == "Ready"), "never Ready: {seen:?}");
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn a_two_factor_user_without_a_code_gets_511() {
    let sim = sim_with(|c| c.two_factor_users = vec![(USER.into(), "123456".into())]);
    let c = Client::anonymous(&sim.url());
    c.raw_json(
        "/api/v1/login",
        &json!({"username": USER, "password": PASSWORD}),
    )
    .await
    .assert_error(
        511,
        "Missing OTP\nPlease use two factor authenticator app on your phone to get OTP. We have also sent OTP to your registered email address",
    );
    c.raw_json(
        "/api/v1/login",
        &json!({"username": USER, "password": PASSWORD, "totp": "000000"}),
    )
    .await
    .assert_error(
        400,
        "Invalid or expired OTP. Please login again to receive another OTP",
    );
    let ok = c
        .raw_json(
            "/api/v1/login",
            &json!({"username": USER, "password": PASSWORD, "totp": "123456"}),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.json()["token"].is_string());
}

#[tokio::test]
async fn a_duplicate_create_app_with_secrets_wipes_the_existing_apps_secrets() {
    let (sim, c) = started().await;
    let mut original = app(ORG, "r1");
    original["secret_env_vars"] = json!({"BEARER_TOKEN": "live-runner"});
    let reply = c.post("CreateApp", app_req(original.clone())).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let mut second = original.clone();
    second["secret_env_vars"] = json!({"BEARER_TOKEN": "intruder"});
    c.post("CreateApp", app_req(second)).await.assert_error(
        400,
        &format!(r#"App key {{"organization":"{ORG}","name":"r1","version":"1"}} already exists"#),
    );
    // The App still lists its secret, but the value is gone from the encrypted store.
    let shown = shown_app(&c, "r1").await;
    assert_eq!(shown["secret_env_vars"], json!({"BEARER_TOKEN": "***"}));
    assert_eq!(sim.apps()[0]["secret_env_vars"]["BEARER_TOKEN"], "***");
    // So deploying it fails on the site, and the controller undoes the instance.
    let create = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(create.status, 200, "{}", create.body);
    assert_eq!(
        create.messages(),
        [
            "Found 1 potential cloudlets for deployment",
            "Found 1 potential clusters for deployment",
            "Chose multi-tenant cluster defaultmt to deploy AppInst",
            "Creating",
            "Creating App Inst",
            "CreateError",
            "Deleting AppInst due to failure",
            "Deleting",
            "Deleted AppInst successfully",
        ]
    );
    assert_eq!(
        create.result(),
        Some(json!({
            "message": "Create App Inst failed: failed to get the correct number of App secret vars from encrypted storage, expected 1 but only got 0",
            "code": 400
        }))
    );
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn a_duplicate_create_app_without_secrets_leaves_them_alone() {
    let (sim, c) = started().await;
    let mut original = app(ORG, "r1");
    original["secret_env_vars"] = json!({"BEARER_TOKEN": "live-runner"});
    c.post("CreateApp", app_req(original)).await;
    c.post("CreateApp", app_req(app(ORG, "r1"))).await;
    assert_eq!(
        sim.apps()[0]["secret_env_vars"]["BEARER_TOKEN"],
        "live-runner"
    );
}

#[tokio::test]
async fn app_versions_follow_the_key_name_rule() {
    // main `api/edgeproto/objs.go:259-270`: version is checked after name, before organization.
    let (_sim, c) = started().await;
    for version in ["", "-1", "1/2", "v1:latest"] {
        let mut a = app(ORG, "r1");
        a["key"]["version"] = json!(version);
        c.post("CreateApp", app_req(a))
            .await
            .assert_error(400, "Invalid app version");
    }
    let mut a = app(ORG, "r1");
    a["key"]["version"] = json!("1.0 beta,&!_-");
    let ok = c.post("CreateApp", app_req(a)).await;
    assert_eq!((ok.status, ok.body.as_str()), (200, "{}"));
}

#[tokio::test]
async fn gen3_drops_the_keys_cloudlet_and_asks_for_a_zone() {
    // main `api/edgeproto/appinst.pb.go:258-263`: AppInstKey is {name, organization}, so a
    // Gen2-style key.cloudlet_key is an unknown field, dropped; without zone_key or
    // cluster_key the controller answers `zone not specified`
    // (`pkg/controller/appinst_zone.go:75-77`), capitalised by the MC.
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    c.post("CreateAppInst", inst_req(inst2(ORG, "r1")))
        .await
        .assert_error(400, "Zone not specified");
}

#[tokio::test]
async fn gen3_reaches_a_given_cloudlet_through_its_zone_only() {
    // The MC refuses a top-level cloudlet_key (noconfig `CloudletKey`, main
    // `api/edgeproto/appinst.proto:252`, `appinst.pb.go:11363-11371`); the controller honours
    // one only for internal callers (`appinst_zone.go:69-72`). A client targets a cloudlet by
    // the zone ShowCloudlet names for it (`objs.go:1431-1440`).
    let sim = sim_with(|c| {
        c.cloudlets = vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ];
        c.zones = vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ];
    });
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let cloudlets = c.post("ShowCloudlet", json!({"region": "EU"})).await.data();
    let berlin = cloudlets
        .iter()
        .find(|d| d["key"]["name"] == "Berlin")
        .expect("Berlin is shown");
    assert_eq!(berlin["zone"], "Berlin");
    let mut inst = inst3(ORG, "r1");
    inst["cloudlet_key"] = berlin["key"].clone();
    c.post("CreateAppInst", inst_req(inst.clone()))
        .await
        .assert_error(
        400,
        "Invalid field specified: CloudletKey.Organization, this field is only for internal use",
    );
    inst.as_object_mut().unwrap().remove("cloudlet_key");
    inst["zone_key"] =
        json!({"organization": berlin["key"]["organization"], "name": berlin["zone"]});
    let created = c.post("CreateAppInst", inst_req(inst)).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let shown = c.show_inst("r1").await.unwrap();
    assert_eq!(
        shown["cloudlet_key"],
        json!({"organization": "TelekomOP", "name": "Berlin"})
    );
    assert_eq!(
        shown["zone_key"],
        json!({"organization": "TelekomOP", "name": "Berlin"})
    );
}

fn app_with(name: &str, command: &str, args: &[&str]) -> serde_json::Value {
    let mut a = app(ORG, name);
    if !command.is_empty() {
        a["command"] = json!(command);
    }
    a["command_args"] = json!(args);
    a
}

#[tokio::test]
async fn words_yaml_does_not_read_as_strings_fail_create_app() {
    // main `pkg/deploygen/kube.go:299-309` pastes `- {{.}}`; CreateApp parses the manifest
    // (`app_api.go:662-666`).
    let (_sim, c) = started().await;
    let cases: [(&str, &[&str]); 9] = [
        ("/run.sh yes", &[]),
        ("/run.sh", &["on"]),
        ("/run.sh", &["5"]),
        ("/run.sh", &["key: value"]),
        ("/run.sh", &["[[ .Deployment.ClusterIp ]]"]),
        ("/run.sh", &["{a}"]),
        ("/run.sh", &["@x"]),
        ("/run.sh", &["*ref"]),
        ("/run.sh", &["'unterminated"]),
    ];
    for (n, (command, args)) in cases.iter().enumerate() {
        let reply = c
            .post(
                "CreateApp",
                app_req(app_with(&format!("r{n}"), command, args)),
            )
            .await;
        assert_eq!(reply.status, 400, "{command} {args:?}: {}", reply.body);
        let message = reply.message();
        assert!(
            message
                .starts_with("Invalid deployment manifest, apiVersion: apps/v1\nkind: Deployment")
                && message.contains(", parse kubernetes deployment yaml failed, "),
            "{message}"
        );
    }
}

#[tokio::test]
async fn words_yaml_reinterprets_reach_the_container_changed() {
    let (sim, c) = started().await;
    let a = app_with(
        "r1",
        "/run.sh \"--name x\"",
        &["~", "#note", "keep #cut", "null", "plain"],
    );
    let reply = c.post("CreateApp", app_req(a)).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let manifest = shown_app(&c, "r1").await["deployment_manifest"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        manifest.contains("        command:\n        - /run.sh\n        - \"--name x\"\n        args:\n        - ~\n        - #note\n"),
        "{manifest}"
    );
    let created = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        created.messages().last().map(String::as_str),
        Some("Created AppInst successfully")
    );
    let containers = sim.containers();
    assert_eq!(
        containers[0]["container"]["command"],
        json!(["/run.sh", "--name x"])
    );
    assert_eq!(
        containers[0]["container"]["args"],
        json!(["", "", "keep", "", "plain"])
    );
}

#[tokio::test]
async fn a_template_action_inside_a_word_fails_the_deployment() {
    // Plain YAML at CreateApp, but `[[ ]]` templating of the manifest at deploy time
    // (main `pkg/k8smgmt/manifest.go:289-301`, `pkg/deployvars/deployment-vars.go:52-72`).
    let (sim, c) = started().await;
    let reply = c
        .post(
            "CreateApp",
            app_req(app_with("r1", "/run.sh", &["--x=[[x]]"])),
        )
        .await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let created = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        created.result(),
        Some(json!({
            "message": "Create App Inst failed: Error with parsing template: varsReplaceTemplate: function \"x\" not defined, try changing templatedelimiter in app definition",
            "code": 400
        }))
    );
    assert!(created
        .messages()
        .contains(&"Deleting AppInst due to failure".to_string()));
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn env_vars_yaml_is_templated_and_parsed_at_create_app() {
    let (sim, c) = started().await;
    let mut bad = app(ORG, "r1");
    bad["configs"] = json!([{"kind": "envVarsYaml", "config": "RUNNER: x\n"}]);
    let reply = c.post("CreateApp", app_req(bad)).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply
            .message()
            .starts_with("Cannot unmarshal env vars: RUNNER: x\n - yaml: unmarshal errors:"),
        "{}",
        reply.message()
    );
    let mut templated = app(ORG, "r2");
    templated["configs"] =
        json!([{"kind": "envVarsYaml", "config": "- name: A\n  value: \"[[ nope ]]\"\n"}]);
    let reply = c.post("CreateApp", app_req(templated)).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.message().contains("function \"nope\" not defined"),
        "{}",
        reply.body
    );
    let mut good = app(ORG, "r3");
    good["configs"] = json!([{"kind": "envVarsYaml", "config": "- name: A\n  value: yes\n- name: B\n  value: ~\n"}]);
    let reply = c.post("CreateApp", app_req(good)).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    c.post("CreateAppInst", inst_req(inst3(ORG, "r3"))).await;
    let env = &sim.containers()[0]["container"]["env"];
    assert_eq!(env, &json!({"A": "yes", "B": ""}));
}

fn docker_app(name: &str) -> serde_json::Value {
    let mut a = app(ORG, name);
    a["deployment"] = json!("docker");
    a
}

#[tokio::test]
async fn docker_gets_the_command_as_one_argument_and_an_env_file() {
    // main `pkg/dockermgmt/dockerapp.go:414-444`.
    let (sim, c) = started().await;
    let mut a = docker_app("r1");
    a["command"] = json!("/home/runner/run.sh --once");
    a["command_args"] = json!(["--labels", "x,y"]);
    a["env_vars"] = json!({"A": "1\nINJECTED=2", "B": "plain"});
    let reply = c.post("CreateApp", app_req(a)).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let created = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        created.messages().last().map(String::as_str),
        Some("Created AppInst successfully"),
        "{}",
        created.body
    );
    let container = &sim.containers()[0]["container"];
    assert_eq!(container["deployment"], "docker");
    assert_eq!(container["command"], json!([]));
    assert_eq!(
        container["args"],
        json!(["/home/runner/run.sh --once", "--labels", "x,y"])
    );
    // The newline ended A's value and smuggled in another variable.
    assert_eq!(
        container["env"],
        json!({"A": "1", "B": "plain", "INJECTED": "2"})
    );
}

#[tokio::test]
async fn docker_refuses_an_env_file_line_with_whitespace_in_its_name() {
    let (sim, c) = started().await;
    let mut a = docker_app("r1");
    a["env_vars"] = json!({"MOTD": "hello\nsecond line"});
    c.post("CreateApp", app_req(a)).await;
    let created = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        created.result(),
        Some(json!({
            "message": "Create App Inst failed: poorly formatted environment: variable 'second line' contains whitespaces",
            "code": 400
        }))
    );
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn only_crm_on_edge_sites_time_out_with_work_in_progress() {
    let central = sim_with(|c| {
        c.cloudlet_settings = vec![CloudletSettings {
            crm_on_edge: false,
            ..CloudletSettings::new("TelekomOP", "Munich")
        }];
    });
    let c = Client::login(&central.url()).await;
    create_app(&c, "r1").await;
    central.inject(edge_connect_sim::Fault::timeout("CreateAppInst"));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert!(
        reply
            .messages()
            .contains(&"Deleting AppInst due to failure".to_string()),
        "{}",
        reply.body
    );
    assert!(!reply
        .body
        .contains("Timed out while work still in progress"));
    assert_eq!(
        reply.result(),
        Some(json!({"message": "Context deadline exceeded", "code": 400}))
    );
    assert!(central.app_insts().is_empty());

    let (edge, c) = started().await;
    create_app(&c, "r1").await;
    edge.inject(edge_connect_sim::Fault::timeout("CreateAppInst"));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(
        reply.messages().last().map(String::as_str),
        Some("Timed out while work still in progress state Creating. Please use ShowAppInst to check current status")
    );
}

#[tokio::test]
async fn containers_are_also_served_under_sim() {
    let (_sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    let reply = c.control_get("containers").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let rows = reply.json();
    assert_eq!(rows[0]["name"], "r1");
    assert_eq!(rows[0]["container"]["deployment"], "kubernetes");
}
