//! Runners that cannot start (docs/edge-connect-behaviours.md B12, B13): the pod status lines
//! of the CRM's wait on Kubernetes and its end in Ready, the failed pull of a docker create,
//! and what the AppInst shows meanwhile.

use std::time::Duration;

use crate::support::*;
use edge_connect_sim::{CloudletSettings, ImageFault, ImageRule, SimConfig};
use serde_json::{json, Value};

const IMAGE: &str = "ghcr.io/actions/actions-runner:2.321.0";

/// The lines before the CRM's pod wait.
const BEFORE_WAIT: [&str; 5] = [
    "Found 1 potential cloudlets for deployment",
    "Found 1 potential clusters for deployment",
    "Chose multi-tenant cluster defaultmt to deploy AppInst",
    "Creating",
    "Creating App Inst",
];

fn failing(fault: ImageFault, max_wait: Duration) -> impl FnOnce(&mut SimConfig) {
    move |c| {
        c.images = vec![ImageRule::new("ghcr.io/actions/*", fault)];
        c.crm_max_wait = max_wait;
    }
}

/// `Status: pod POD: <phase> (0/<total>), container r11: <reason>`.
fn status(phase: &str, total: usize, reason: &str) -> String {
    format!("Status: pod POD: {phase} (0/{total}), container r11: {reason}")
}

/// The whole create stream of an image that never starts: the first status, then one
/// failure and one back-off per kubelet retry within the 15 (scaled) minutes, then Ready.
fn never_starting(phase: &str, failed: &str, backing_off: &str) -> Vec<String> {
    let mut lines: Vec<String> = BEFORE_WAIT.iter().map(|l| l.to_string()).collect();
    lines.push(status("Pending", 1, "ContainerCreating"));
    // Retries at 2, 14, 36, 78, 160, 322 and 624 s of the 900 s wait (back-off 10 s doubling to 300 s).
    for _ in 0..7 {
        lines.push(status(phase, 1, failed));
        lines.push(status(phase, 1, backing_off));
    }
    lines.push("Ready".into());
    lines.push("Created AppInst successfully".into());
    lines
}

async fn create_inst(c: &Client) -> Reply {
    create_app(c, "r1").await;
    c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await
}

#[tokio::test]
async fn an_unpullable_image_waits_out_the_crm_then_is_ready() {
    let sim = sim_with(failing(ImageFault::CannotPull, Duration::from_millis(900)));
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.messages_without_pod_names(),
        never_starting("Pending", "ErrImagePull", "ImagePullBackOff")
    );
    assert!(reply.result().is_none());
    // The real CRM gives up waiting without an error: Ready, no errors, the pod as container.
    let inst = c.show_inst("r1").await.expect("the AppInst stays");
    assert_eq!(inst["state"], "Ready");
    assert!(inst.get("errors").is_none(), "{inst}");
    let pod = inst["runtime_info"]["container_ids"][0].as_str().unwrap();
    assert!(
        reply.messages()[5].contains(&format!("pod {pod}: ")),
        "{pod}"
    );
}

#[tokio::test]
async fn a_crashing_container_loops_until_the_wait_ends() {
    let sim = sim_with(failing(ImageFault::Crashes, Duration::from_millis(900)));
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    assert_eq!(
        reply.messages_without_pod_names(),
        never_starting("Running", "Error", "CrashLoopBackOff")
    );
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn a_container_seen_terminated_at_every_poll_shows_error_once_until_the_wait_ends() {
    // The kubelet keeps a terminated container's `Error` until a sync records a start failure;
    // the CRM sends a line only when the summary changes (docs/edge-connect-behaviours.md B12).
    let sim = sim_with(failing(ImageFault::Terminates, Duration::from_millis(600)));
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    let mut expected: Vec<String> = BEFORE_WAIT.iter().map(|l| l.to_string()).collect();
    expected.extend([
        status("Pending", 1, "ContainerCreating"),
        status("Running", 1, "Error"),
        "Ready".into(),
        "Created AppInst successfully".into(),
    ]);
    assert_eq!(reply.messages_without_pod_names(), expected);
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn an_unschedulable_pod_shows_no_containers_and_does_not_fail() {
    // Kubernetes records `Unschedulable` in the pod's condition, not in a container status,
    // so the CRM's check for that container reason never fires.
    let sim = sim_with(failing(
        ImageFault::Unschedulable,
        Duration::from_millis(300),
    ));
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    let mut expected: Vec<String> = BEFORE_WAIT.iter().map(|l| l.to_string()).collect();
    expected.extend([
        "Status: pod POD: Pending (0/0), ".to_string(),
        "Ready".into(),
        "Created AppInst successfully".into(),
    ]);
    assert_eq!(reply.messages_without_pod_names(), expected);
    assert!(reply.result().is_none());
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn during_the_wait_the_app_inst_is_creating_and_cannot_be_deleted() {
    let sim = sim_with(failing(ImageFault::CannotPull, Duration::from_secs(90)));
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let mut lines = LineReader::new(resp);
    let back_off = status("Pending", 1, "ImagePullBackOff");
    while let Some(line) = lines.next_message().await {
        if without_pod_name(&line) == back_off {
            break;
        }
    }
    let inst = c.show_inst("r1").await.expect("shown while it waits");
    assert_eq!(inst["state"], "Creating");
    assert!(inst.get("errors").is_none(), "{inst}");
    c.post("DeleteAppInst", inst_key_req("r1"))
        .await
        .assert_error(400, "AppInst busy, cannot be deleted");
}

#[tokio::test]
async fn a_client_leaving_the_wait_on_a_central_crm_site_undoes_the_create() {
    let sim = sim_with(|c| {
        failing(ImageFault::CannotPull, Duration::from_secs(90))(c);
        c.cloudlet_settings = vec![CloudletSettings {
            crm_on_edge: false,
            ..CloudletSettings::new("TelekomOP", "Munich")
        }];
    });
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let mut lines = LineReader::new(resp);
    let back_off = status("Pending", 1, "ImagePullBackOff");
    while let Some(line) = lines.next_message().await {
        if without_pod_name(&line) == back_off {
            break;
        }
    }
    drop(lines);
    // Undone at once, not after the 90 s the CRM would otherwise wait.
    while c.show_inst("r1").await.is_some() {
        tokio::task::yield_now().await;
    }
    assert!(sim.app_insts().is_empty());
}

fn docker_app(image: &str) -> Value {
    let mut a = app(ORG, "r1");
    a["deployment"] = json!("docker");
    a["image_path"] = json!(image);
    a
}

#[tokio::test]
async fn a_docker_image_that_cannot_be_pulled_fails_the_create() {
    let sim = sim_with(|c| {
        c.images = vec![ImageRule::new(
            "registry.example.com/*",
            ImageFault::CannotPull,
        )];
    });
    let c = Client::login(&sim.url()).await;
    let image = "registry.example.com/ci/runner:13";
    c.post("CreateApp", app_req(docker_app(image))).await;
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert_eq!(reply.status, 200);
    let mut expected: Vec<&str> = BEFORE_WAIT.to_vec();
    expected.extend([
        "CreateError",
        "Deleting AppInst due to failure",
        "Deleting",
        "Deleted AppInst successfully",
    ]);
    assert_eq!(reply.messages(), expected);
    assert_eq!(
        reply.result(),
        Some(json!({
            "message": "Create App Inst failed: error pulling docker image: registry.example.com/ci/runner:13, Error response from daemon: manifest for registry.example.com/ci/runner:13 not found: manifest unknown: manifest unknown, Process exited with status 1",
            "code": 400
        }))
    );
    // The controller undid the create: nothing is left.
    assert!(c.show_inst("r1").await.is_none());
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn a_failed_docker_create_shows_create_error_with_its_error_until_undone() {
    // The untimed steps take 400 ms each; CreateError lasts two of them.
    let sim = sim_with(|c| {
        c.images = vec![ImageRule::new(IMAGE, ImageFault::CannotPull)];
        c.create_delay = Duration::from_secs(4);
    });
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(docker_app(IMAGE))).await;
    let resp = c.open("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let mut lines = LineReader::new(resp);
    while let Some(line) = lines.next_message().await {
        if line == "CreateError" {
            break;
        }
    }
    let inst = c.show_inst("r1").await.expect("shown until undone");
    assert_eq!(inst["state"], "CreateError");
    assert_eq!(
        inst["errors"],
        json!([format!("Create App Inst failed: error pulling docker image: {IMAGE}, Error response from daemon: manifest for {IMAGE} not found: manifest unknown: manifest unknown, Process exited with status 1")])
    );
    while lines.next().await.expect("stream readable").is_some() {}
    assert!(c.show_inst("r1").await.is_none());
}

#[tokio::test]
async fn docker_restarts_a_crashing_container_unseen() {
    // `docker run -d --restart=unless-stopped` succeeds whatever the container does later.
    let sim = sim_with(|c| {
        c.images = vec![ImageRule::new(IMAGE, ImageFault::Crashes)];
    });
    let c = Client::login(&sim.url()).await;
    c.post("CreateApp", app_req(docker_app(IMAGE))).await;
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    let mut expected: Vec<&str> = BEFORE_WAIT.to_vec();
    expected.extend(["Ready", "Created AppInst successfully"]);
    assert_eq!(reply.messages(), expected);
    assert_eq!(c.state_of("r1").await.as_deref(), Some("Ready"));
}

#[tokio::test]
async fn images_not_matching_a_rule_start() {
    let sim = sim_with(|c| {
        c.images = vec![ImageRule::new(
            "ghcr.io/actions/actions-runner:2.320.0",
            ImageFault::CannotPull,
        )];
    });
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    let messages = reply.messages_without_pod_names();
    assert_eq!(
        messages[5..],
        [
            status("Pending", 1, "ContainerCreating"),
            "Ready".into(),
            "Created AppInst successfully".into()
        ]
    );
}

#[tokio::test]
async fn a_full_gen2_site_is_not_enough_resources() {
    let sim = sim_with(|c| c.api = edge_connect_sim::ApiGeneration::Gen2);
    let c = Client::login(&sim.url()).await;
    create_app(&c, "r1").await;
    sim.set_capacity("TelekomOP", "Munich", Some(0));
    c.post("CreateAppInst", inst_req(inst2(ORG, "r1")))
        .await
        .assert_error(
        400,
        "Not enough resources available: required Instances is 1 but only 0 out of 0 is available",
    );
    assert!(sim.app_insts().is_empty());
}

#[tokio::test]
async fn a_waiting_reason_stays_a_late_pod_runs_and_a_site_without_room_places_none() {
    let creating = status("Pending", 1, "ContainerCreating");
    let ending = ["Ready".to_string(), "Created AppInst successfully".into()];
    let stream = |pod_lines: &[String]| {
        let mut lines: Vec<String> = BEFORE_WAIT.iter().map(|l| l.to_string()).collect();
        lines.extend(pod_lines.iter().cloned());
        lines.extend(ending.iter().cloned());
        lines
    };
    let sim = sim_with(failing(
        ImageFault::Waits("RunContainerError"),
        Duration::from_millis(300),
    ));
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    let waiting = status("Pending", 1, "RunContainerError");
    assert_eq!(
        reply.messages_without_pod_names(),
        stream(&[creating.clone(), waiting])
    );
    // The pod is named as Kubernetes names a Deployment's pods (docs/edge-connect-behaviours.md
    // B22): `<app><version>-deployment-<hash>-<suffix>`.
    let pod = reply.messages()[5].clone();
    let name = pod["Status: pod ".len()..]
        .split(':')
        .next()
        .unwrap_or_default();
    let parts: Vec<&str> = name.split('-').collect();
    assert_eq!(parts[..2], ["r11", "deployment"], "{name}");
    assert!(
        parts.len() == 4
            && parts[2..]
                .iter()
                .all(|p| p.chars().all(|c| c.is_ascii_alphanumeric()))
    );

    let late = Duration::from_millis(400);
    let sim = sim_with(failing(
        ImageFault::ScheduledAfter(late),
        Duration::from_secs(90),
    ));
    let c = Client::login(&sim.url()).await;
    let started = std::time::Instant::now();
    let reply = create_inst(&c).await;
    assert!(started.elapsed() >= late);
    let unplaced = "Status: pod POD: Pending (0/0), ".to_string();
    assert_eq!(
        reply.messages_without_pod_names(),
        stream(&[unplaced.clone(), creating])
    );

    let sim = sim_with(|c| {
        c.cloudlet_settings = c
            .cloudlets
            .iter()
            .map(|(org, name)| CloudletSettings {
                pods_unscheduled: true,
                ..CloudletSettings::new(org, name)
            })
            .collect();
        c.crm_max_wait = Duration::from_millis(300);
    });
    let c = Client::login(&sim.url()).await;
    let reply = create_inst(&c).await;
    assert_eq!(reply.messages_without_pod_names(), stream(&[unplaced]));
}
