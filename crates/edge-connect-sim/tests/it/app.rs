//! App create/update/delete/show, request decoding, regions and RBAC, over real HTTP.

use crate::support::*;
use edge_connect_sim::Seed;
use serde_json::{json, Value};

fn with(mut app: Value, field: &str, value: Value) -> Value {
    app[field] = value;
    app
}

#[tokio::test]
async fn create_app_replies_exactly_empty_object() {
    let (_sim, c) = started().await;
    let reply = c.post("CreateApp", app_req(app(ORG, "r1"))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, "{}");
    assert_eq!(reply.content_type, "application/json");
}

#[tokio::test]
async fn create_app_twice_is_already_exists() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    c.post("CreateApp", app_req(app(ORG, "r1"))).await.assert_error(
        400,
        r#"App key {"organization":"edp-developer-framework","name":"r1","version":"1"} already exists"#,
    );
}

#[tokio::test]
async fn create_app_in_a_foreign_org_is_403() {
    let (sim, c) = started().await;
    c.post("CreateApp", app_req(app("someone-else", "r1")))
        .await
        .assert_error(403, "Forbidden");
    assert!(sim.apps().is_empty());
}

#[tokio::test]
async fn create_app_without_region_is_400() {
    let (_sim, c) = started().await;
    c.post("CreateApp", json!({"app": app(ORG, "r1")}))
        .await
        .assert_error(400, "No region specified");
}

#[tokio::test]
async fn create_app_in_an_unknown_region_is_400() {
    let (_sim, c) = started().await;
    c.post("CreateApp", json!({"region": "US", "app": app(ORG, "r1")}))
        .await
        .assert_error(400, r#"Region "US" not found"#);
}

#[tokio::test]
async fn empty_body_is_invalid_json() {
    let (_sim, c) = started().await;
    c.post_raw("CreateApp", "").await.assert_error(
        400,
        "Invalid JSON data: Syntax error at offset 0, unexpected end of JSON input",
    );
}

#[tokio::test]
async fn malformed_body_is_invalid_json() {
    let (_sim, c) = started().await;
    let reply = c
        .post_raw("CreateApp", r#"{"region": "EU", "app": }"#)
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.message(),
        "Invalid JSON data: Syntax error at offset 25, invalid character '}' looking for beginning of value"
    );
}

#[tokio::test]
async fn wrong_field_type_is_invalid_json_naming_the_field() {
    let (_sim, c) = started().await;
    let body = app_req(with(app(ORG, "r1"), "image_path", json!(5)));
    c.post("CreateApp", body).await.assert_error(
        400,
        r#"Invalid JSON data: Unmarshal error: expected string, but got number for field "App.image_path""#,
    );
}

#[tokio::test]
async fn wrapper_and_field_names_are_case_insensitive_and_unknown_fields_ignored() {
    let (sim, c) = started().await;
    let body = json!({
        "Region": "EU",
        "App": {
            "Key": {"Organization": ORG, "NAME": "r1", "version": "1"},
            "Image_Type": "Docker",
            "IMAGE_PATH": "nginx:1.27",
            "Default_Flavor": {"Name": "EU.small"},
            "Env_Vars": {"MixedCase": "kept"},
            "no_such_field": {"whatever": [1, 2]}
        },
        "extra": true
    });
    let reply = c.post("CreateApp", body).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let apps = sim.apps();
    assert_eq!(apps[0]["image_path"], "docker.io/nginx:1.27");
    assert_eq!(apps[0]["env_vars"], json!({"MixedCase": "kept"}));
}

#[tokio::test]
async fn enum_inputs_are_accepted_in_every_form_and_printed_trimmed() {
    let (sim, c) = started().await;
    for (i, form) in [
        json!("ImageTypeDocker"),
        json!("docker"),
        json!("IMAGE_TYPE_DOCKER"),
        json!(1),
        json!("1"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = app_req(with(app(ORG, &format!("r{i}")), "image_type", form.clone()));
        let reply = c.post("CreateApp", body).await;
        assert_eq!(reply.status, 200, "{form}: {}", reply.body);
    }
    assert!(sim.apps().iter().all(|a| a["image_type"] == "Docker"));
}

#[tokio::test]
async fn unknown_enum_value_is_invalid_json() {
    let (_sim, c) = started().await;
    let reply = c
        .post(
            "CreateApp",
            app_req(with(app(ORG, "r1"), "image_type", json!("Dockr"))),
        )
        .await;
    reply.assert_error(
        400,
        r#"Invalid JSON data: Unmarshal error: expected ImageType, but got string Dockr for field "App.image_type", valid values are one of Unknown, Docker, Qcow, Helm, Ovf, Ova, or 0, 1, 2, 3, 4, 5"#,
    );
}

#[tokio::test]
async fn invalid_app_name_is_400() {
    let (_sim, c) = started().await;
    c.post("CreateApp", app_req(app(ORG, "-r1")))
        .await
        .assert_error(400, "Invalid app name");
}

#[tokio::test]
async fn invalid_app_version_is_400() {
    let (_sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a["key"]["version"] = json!("1/2");
    c.post("CreateApp", app_req(a))
        .await
        .assert_error(400, "Invalid app version");
}

#[tokio::test]
async fn invalid_app_organization_is_400() {
    // RBAC comes first, so only an organization the user belongs to can reach the name check.
    let sim = sim_with(|c| c.orgs.push("bad/org".into()));
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(app("bad/org", "r1")))
        .await
        .assert_error(400, "Invalid app organization");
}

#[tokio::test]
async fn empty_organization_is_403() {
    let (_sim, c) = started().await;
    c.post("CreateApp", app_req(app("", "r1")))
        .await
        .assert_error(403, "Forbidden");
}

#[tokio::test]
async fn internal_fields_are_refused_on_create() {
    let (_sim, c) = started().await;
    let body = app_req(with(
        app(ORG, "r1"),
        "created_at",
        json!("2025-01-01T00:00:00Z"),
    ));
    c.post("CreateApp", body).await.assert_error(
        400,
        "Invalid field specified: CreatedAt.Seconds, this field is only for internal use",
    );
}

#[tokio::test]
async fn access_type_direct_is_refused() {
    let (_sim, c) = started().await;
    c.post(
        "CreateApp",
        app_req(with(app(ORG, "r1"), "access_type", json!("Direct"))),
    )
    .await
    .assert_error(400, "Access Type Direct no longer supported");
}

#[tokio::test]
async fn unknown_deployment_is_refused() {
    let (_sim, c) = started().await;
    c.post(
        "CreateApp",
        app_req(with(app(ORG, "r1"), "deployment", json!("swarm"))),
    )
    .await
    .assert_error(
        400,
        "Invalid deployment, must be one of [kubernetes vm helm docker]",
    );
}

#[tokio::test]
async fn deployment_must_suit_the_image_type() {
    let (_sim, c) = started().await;
    c.post(
        "CreateApp",
        app_req(with(app(ORG, "r1"), "image_type", json!("Helm"))),
    )
    .await
    .assert_error(400, "Deployment is not valid for image type");
}

#[tokio::test]
async fn no_image_type_and_no_deployment_is_refused() {
    let (_sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a.as_object_mut().unwrap().remove("image_type");
    a.as_object_mut().unwrap().remove("deployment");
    c.post("CreateApp", app_req(a))
        .await
        .assert_error(400, "Unknown image type IMAGE_TYPE_UNKNOWN");
}

#[tokio::test]
async fn env_vars_yaml_is_for_kubernetes_only() {
    let (_sim, c) = started().await;
    let mut a = with(app(ORG, "r1"), "deployment", json!("docker"));
    a["configs"] = json!([{"kind": "envVarsYaml", "config": "- name: A\n  value: b\n"}]);
    c.post("CreateApp", app_req(a)).await.assert_error(
        400,
        "Invalid Config Kind(envVarsYaml) for deployment type(docker)",
    );
}

#[tokio::test]
async fn unknown_config_kind_is_refused() {
    let (_sim, c) = started().await;
    let a = with(
        app(ORG, "r1"),
        "configs",
        json!([{"kind": "dotenv", "config": "A=b"}]),
    );
    c.post("CreateApp", app_req(a))
        .await
        .assert_error(400, "Invalid Config Kind - dotenv");
}

#[tokio::test]
async fn empty_config_is_refused() {
    let (_sim, c) = started().await;
    let a = with(app(ORG, "r1"), "configs", json!([{"kind": "envVarsYaml"}]));
    c.post("CreateApp", app_req(a))
        .await
        .assert_error(400, "Empty config for config kind envVarsYaml");
}

#[tokio::test]
async fn unknown_flavor_is_refused() {
    let (_sim, c) = started().await;
    let a = with(app(ORG, "r1"), "default_flavor", json!({"name": "m9.huge"}));
    c.post("CreateApp", app_req(a))
        .await
        .assert_error(400, r#"Flavor key {"name":"m9.huge"} not found"#);
}

#[tokio::test]
async fn kubernetes_app_needs_flavor_or_resources() {
    let (_sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a.as_object_mut().unwrap().remove("default_flavor");
    c.post("CreateApp", app_req(a))
        .await
        .assert_error(400, "Missing flavor or Kubernetes resources");
}

#[tokio::test]
async fn malformed_access_ports_are_refused() {
    let (_sim, c) = started().await;
    c.post(
        "CreateApp",
        app_req(with(app(ORG, "r1"), "access_ports", json!("8080"))),
    )
    .await
    .assert_error(400, "Invalid AccessPorts format '8080'");
}

#[tokio::test]
async fn reserved_ports_are_refused() {
    let (_sim, c) = started().await;
    c.post(
        "CreateApp",
        app_req(with(app(ORG, "r1"), "access_ports", json!("tcp:22"))),
    )
    .await
    .assert_error(
        400,
        "App cannot use port tcp:22 - reserved for Platform inter-node SSH",
    );
}

#[tokio::test]
async fn stored_app_is_normalised() {
    let (sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a["image_path"] = json!("https://nginx:latest");
    a.as_object_mut().unwrap().remove("deployment");
    create_app_from(&c, a).await;
    let shown = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"key": {"name": "r1"}}}),
        )
        .await;
    let app = &shown.data()[0];
    assert_eq!(app["image_path"], "docker.io/nginx:latest");
    assert_eq!(app["deployment"], "kubernetes");
    assert_eq!(app["deployment_generator"], "kubernetes-basic");
    assert!(app["deployment_manifest"]
        .as_str()
        .unwrap()
        .contains("name: r11-deployment"));
    assert_eq!(app["access_type"], "LoadBalancer");
    assert_eq!(app["updated_at"], "");
    assert!(!app["created_at"].as_str().unwrap().is_empty());
    assert_eq!(app["required_outbound_connections"], Value::Null);
    assert_eq!(
        app["kubernetes_resources"]["cpu_pool"],
        json!({"total_vcpus": 1, "total_memory": 2048, "total_disk": 10,
               "topology": {"min_node_vcpus": 1, "min_node_memory": 2048, "min_node_disk": 10}})
    );
    assert_eq!(sim.apps().len(), 1);
}

async fn create_app_from(c: &Client, a: Value) {
    let reply = c.post("CreateApp", app_req(a)).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
}

#[tokio::test]
async fn secret_env_vars_are_redacted_in_show_but_delivered() {
    let (sim, c) = started().await;
    let mut a = app(ORG, "r1");
    a["env_vars"] = json!({"RUNNER_NAME": "r1"});
    a["secret_env_vars"] = json!({"JIT_CONFIG": "c2VjcmV0"});
    create_app_from(&c, a).await;
    let shown = c
        .post("ShowApp", json!({"region": "EU", "app": {}}))
        .await
        .data();
    assert_eq!(shown[0]["env_vars"], json!({"RUNNER_NAME": "r1"}));
    assert_eq!(shown[0]["secret_env_vars"], json!({"JIT_CONFIG": "***"}));
    assert_eq!(
        sim.apps()[0]["secret_env_vars"],
        json!({"JIT_CONFIG": "c2VjcmV0"})
    );
}

#[tokio::test]
async fn show_streams_one_line_per_app() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    create_app(&c, "r2").await;
    let reply = c.post("ShowApp", json!({"region": "EU"})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, "application/json");
    let names: Vec<Value> = reply
        .data()
        .iter()
        .map(|a| a["key"]["name"].clone())
        .collect();
    assert_eq!(names, [json!("r1"), json!("r2")]);
}

#[tokio::test]
async fn show_filters_on_non_zero_fields() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let mut docker = with(app(ORG, "r2"), "deployment", json!("docker"));
    docker["env_vars"] = json!({"GARM_POOL_ID": "p1"});
    create_app_from(&c, docker).await;
    let by_name = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"key": {"organization": ORG, "name": "r1"}}}),
        )
        .await
        .data();
    assert_eq!(by_name.len(), 1);
    let by_deployment = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"deployment": "docker", "key": {"name": ""}}}),
        )
        .await
        .data();
    assert_eq!(by_deployment.len(), 1);
    assert_eq!(by_deployment[0]["key"]["name"], "r2");
    let by_env = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"env_vars": {"GARM_POOL_ID": "p1"}}}),
        )
        .await
        .data();
    assert_eq!(by_env.len(), 1);
    let by_type = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"image_type": "IMAGE_TYPE_DOCKER"}}),
        )
        .await
        .data();
    assert_eq!(by_type.len(), 2);
}

#[tokio::test]
async fn show_without_match_is_200_with_an_empty_body() {
    let (_sim, c) = started().await;
    create_app(&c, "r1").await;
    let reply = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"key": {"name": "nope"}}}),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, "");
}

#[tokio::test]
async fn show_silently_omits_other_orgs() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.seed(Seed {
        org: "foreign-org".into(),
        count: 3,
        ..Seed::default()
    });
    assert_eq!(sim.apps().len(), 4);
    assert_eq!(
        c.post("ShowApp", json!({"region": "EU"}))
            .await
            .data()
            .len(),
        1
    );
    let foreign = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"key": {"organization": "foreign-org"}}}),
        )
        .await;
    assert_eq!((foreign.status, foreign.body.as_str()), (200, ""));
}

#[tokio::test]
async fn show_checks_the_region() {
    let (_sim, c) = started().await;
    c.post("ShowApp", json!({"app": {}}))
        .await
        .assert_error(400, "No region specified");
}

#[tokio::test]
async fn delete_app_replies_empty_object() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    let reply = c
        .post(
            "DeleteApp",
            app_req(json!({"key": {"organization": ORG, "name": "r1", "version": "1"}})),
        )
        .await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    assert!(sim.apps().is_empty());
}

#[tokio::test]
async fn delete_missing_app_is_not_found() {
    let (_sim, c) = started().await;
    c.post(
        "DeleteApp",
        app_req(json!({"key": {"organization": ORG, "name": "r1", "version": "1"}})),
    )
    .await
    .assert_error(
        400,
        r#"App key {"organization":"edp-developer-framework","name":"r1","version":"1"} not found"#,
    );
}

#[tokio::test]
async fn delete_app_in_a_foreign_org_is_403() {
    let (_sim, c) = started().await;
    c.post(
        "DeleteApp",
        app_req(json!({"key": {"organization": "x", "name": "r1", "version": "1"}})),
    )
    .await
    .assert_error(403, "Forbidden");
}

#[tokio::test]
async fn delete_app_with_an_instance_is_in_use() {
    let (sim, c) = started().await;
    create_app_and_inst(&c, "r1").await;
    c.post("DeleteApp", app_req(json!({"key": {"organization": ORG, "name": "r1", "version": "1"}})))
        .await
        .assert_error(
            400,
            r#"Application in use by static AppInst {"name":"r1","organization":"edp-developer-framework"}"#,
        );
    assert_eq!(sim.apps().len(), 1);
}

#[tokio::test]
async fn update_rpcs_are_not_served() {
    // Nothing in the provider or its client updates an App or AppInst, so the simulator
    // leaves these RPCs out: they answer as any route the MC does not have.
    let (_sim, c) = started().await;
    for rpc in ["UpdateApp", "UpdateAppInst"] {
        c.post(rpc, app_req(app(ORG, "r1")))
            .await
            .assert_error(404, "Not Found");
    }
}

#[tokio::test]
async fn show_flavor_lists_sizes() {
    let (_sim, c) = started().await;
    let flavors = c
        .post("ShowFlavor", json!({"region": "EU", "flavor": {}}))
        .await
        .data();
    assert_eq!(flavors.len(), 3);
    assert_eq!(
        flavors[0],
        json!({"key": {"name": "EU.small"}, "ram": 2048, "vcpus": 1, "disk": 10})
    );
    let medium = c
        .post(
            "ShowFlavor",
            json!({"region": "EU", "flavor": {"key": {"name": "EU.medium"}}}),
        )
        .await
        .data();
    assert_eq!(medium.len(), 1);
}

#[tokio::test]
async fn show_cloudlet_lists_sites() {
    let (_sim, c) = started().await;
    let cloudlets = c.post("ShowCloudlet", json!({"region": "EU"})).await.data();
    assert_eq!(cloudlets.len(), 1);
    assert_eq!(
        cloudlets[0]["key"],
        json!({"organization": "TelekomOP", "name": "Munich"})
    );
    assert_eq!(cloudlets[0]["state"], "Ready");
}
