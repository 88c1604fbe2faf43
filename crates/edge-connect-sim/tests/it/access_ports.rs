//! Access ports as the controller exposes them: what ShowAppInst reports in `uri`,
//! `static_uri` and `mapped_ports` on each kind of load balancer, and the refusals
//! (docs/edge-connect-behaviours.md B35-B37).

use crate::support::*;
use edge_connect_sim::{CloudletSettings, LoadBalancer, SimHandle};
use serde_json::{json, Value};

/// The default site's shared load balancer name.
const SHARED_URI: &str = "shared.munich-telekomop.eu.app.edge.telekom.com";

fn sim_behind(load_balancer: LoadBalancer) -> SimHandle {
    sim_with(|c| {
        c.cloudlet_settings = vec![CloudletSettings {
            load_balancer,
            ..CloudletSettings::new("TelekomOP", "Munich")
        }]
    })
}

/// Creates App `name` with these access ports, then its AppInst, and returns the create's reply.
async fn create_with_ports(c: &Client, name: &str, ports: &str) -> Reply {
    let mut a = app(ORG, name);
    a["access_ports"] = json!(ports);
    let reply = c.post("CreateApp", app_req(a)).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    c.post("CreateAppInst", inst_req(inst3(ORG, name))).await
}

/// Creates App and AppInst `name` with these ports and returns the AppInst as Show reports it.
async fn exposed(c: &Client, name: &str, ports: &str) -> Value {
    let reply = create_with_ports(c, name, ports).await;
    assert_eq!(
        reply.messages().last().map(String::as_str),
        Some("Created AppInst successfully"),
        "{}",
        reply.body
    );
    c.show_inst(name).await.expect("the AppInst is shown")
}

#[tokio::test]
async fn two_apps_asking_one_port_of_a_shared_load_balancer_get_different_public_ports() {
    let (_sim, c) = started().await;
    let first = exposed(&c, "cache1", "tcp:5000:tls").await;
    let second = exposed(&c, "cache2", "tcp:5000,tcp:5001").await;
    assert_eq!(first["uri"], SHARED_URI);
    assert_eq!(first["static_uri"], SHARED_URI);
    assert_eq!(
        first["mapped_ports"],
        json!([{"proto": "Tcp", "internal_port": 5000, "public_port": 5000, "tls": true}])
    );
    assert_eq!(second["uri"], SHARED_URI);
    assert_eq!(
        second["mapped_ports"],
        json!([
            {"proto": "Tcp", "internal_port": 5000, "public_port": 10000},
            {"proto": "Tcp", "internal_port": 5001, "public_port": 5001}
        ])
    );
    // UDP is a family of its own; the load balancer's own ports are never handed out.
    let udp = exposed(&c, "dns", "udp:5000,tcp:65121").await;
    assert_eq!(
        udp["mapped_ports"],
        json!([
            {"proto": "Udp", "internal_port": 5000, "public_port": 5000},
            {"proto": "Tcp", "internal_port": 65121, "public_port": 10001}
        ])
    );
}

#[tokio::test]
async fn a_deleted_app_inst_gives_its_shared_ports_back() {
    let (_sim, c) = started().await;
    exposed(&c, "cache1", "tcp:5000").await;
    let reply = c.post("DeleteAppInst", inst_key_req("cache1")).await;
    assert_eq!(
        reply.messages().last().map(String::as_str),
        Some("Deleted AppInst successfully"),
        "{}",
        reply.body
    );
    let again = exposed(&c, "cache2", "tcp:5000").await;
    assert_eq!(again["mapped_ports"][0]["public_port"], 5000);
}

#[tokio::test]
async fn a_shared_load_balancer_refuses_a_port_range_after_placement() {
    let (_sim, c) = started().await;
    let reply = create_with_ports(&c, "ranges", "tcp:7000-7002").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.messages(),
        [
            "Found 1 potential cloudlets for deployment",
            "Found 1 potential clusters for deployment",
            "Chose multi-tenant cluster defaultmt to deploy AppInst",
        ]
    );
    assert_eq!(
        reply.result(),
        Some(json!({"message": "Shared IP access with port range not allowed", "code": 400}))
    );
    assert!(c.show_inst("ranges").await.is_none());
}

#[tokio::test]
async fn a_dedicated_load_balancer_keeps_ports_and_refuses_one_in_use() {
    let sim = sim_behind(LoadBalancer::Dedicated);
    let c = Client::login(&sim.url()).await;
    let first = exposed(&c, "cache1", "tcp:5000").await;
    assert_eq!(
        first["uri"],
        "defaultmt-edgecloudorg.munich-telekomop.eu.app.edge.telekom.com"
    );
    assert_eq!(
        first["mapped_ports"],
        json!([{"proto": "Tcp", "internal_port": 5000, "public_port": 5000}])
    );
    let reply = create_with_ports(&c, "cache2", "tcp:4999-5001").await;
    assert_eq!(
        reply.result(),
        Some(json!({
            "message": "Port range 4999-5001 overlaps with ports in use on the cluster",
            "code": 400
        }))
    );
    let reply = create_with_ports(&c, "cache3", "http:5000").await;
    assert_eq!(
        reply.result(),
        Some(json!({
            "message": "Port 5000 is already in use on the cluster by AppInst cache1",
            "code": 400
        }))
    );
    assert!(c.show_inst("cache3").await.is_none());
}

#[tokio::test]
async fn an_ip_per_service_names_each_port_by_its_service_and_http_goes_through_the_ingress() {
    let sim = sim_behind(LoadBalancer::PerService);
    let c = Client::login(&sim.url()).await;
    let inst = exposed(&c, "cache1", "tcp:5000,udp:6000,http:8080:tls").await;
    // An HTTP port behind the ingress needs host-based routing: the AppInst's own name.
    assert_eq!(
        inst["uri"],
        "cache1-edp-developer-framework.munich-telekomop.eu.app.edge.telekom.com"
    );
    // The generated manifest's Services are `<app><version>-tcp` and `-udp`.
    assert_eq!(
        inst["mapped_ports"],
        json!([
            {"proto": "Tcp", "internal_port": 5000, "public_port": 5000, "fqdn_prefix": "cache11-tcp."},
            {"proto": "Udp", "internal_port": 6000, "public_port": 6000, "fqdn_prefix": "cache11-udp."},
            {"proto": "Http", "internal_port": 8080, "public_port": 443, "tls": true}
        ])
    );
    // Another App on the same port keeps it: each Service has its own address.
    let other = exposed(&c, "cache2", "tcp:5000").await;
    assert_eq!(other["mapped_ports"][0]["public_port"], 5000);
    assert_eq!(
        other["uri"],
        "cache2-edp-developer-framework.munich-telekomop.eu.app.edge.telekom.com"
    );
}

#[tokio::test]
async fn an_app_with_internal_ports_has_no_uri() {
    let (_sim, c) = started().await;
    let mut a = app(ORG, "inside");
    a["access_ports"] = json!("tcp:5000");
    a["internal_ports"] = json!(true);
    assert_eq!(c.post("CreateApp", app_req(a)).await.body, "{}");
    let reply = c
        .post("CreateAppInst", inst_req(inst3(ORG, "inside")))
        .await;
    assert_eq!(
        reply.messages().last().map(String::as_str),
        Some("Created AppInst successfully"),
        "{}",
        reply.body
    );
    let inst = c.show_inst("inside").await.expect("shown");
    assert!(inst.get("uri").is_none(), "{inst}");
    // It holds no port of the shared load balancer: the next App gets 5000 there.
    let next = exposed(&c, "outside", "tcp:5000").await;
    assert_eq!(next["mapped_ports"][0]["public_port"], 5000);
}

#[tokio::test]
async fn the_last_public_mc_has_a_uri_but_no_static_uri() {
    let sim = sim_with(|c| c.api = edge_connect_sim::ApiGeneration::Gen2);
    let c = Client::login(&sim.url()).await;
    let mut a = app(ORG, "cache1");
    a["access_ports"] = json!("tcp:5000");
    assert_eq!(c.post("CreateApp", app_req(a)).await.body, "{}");
    let reply = c
        .post("CreateAppInst", inst_req(inst2(ORG, "cache1")))
        .await;
    assert_eq!(
        reply.messages().last().map(String::as_str),
        Some("Created AppInst successfully"),
        "{}",
        reply.body
    );
    let inst = &sim.app_insts()[0];
    assert_eq!(inst["uri"], SHARED_URI);
    assert!(inst.get("static_uri").is_none(), "{inst}");
}
