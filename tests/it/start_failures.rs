//! A runner that cannot start says why at once (issue 21 items 1 and 2): the CRM's pod status
//! lines, as main `pkg/k8smgmt/appinst.go:175, 311-312` words them, end the create as soon as
//! one names a reason that will not clear; the create is rolled back and the one stderr line
//! names the image, the site and the reason. A controller that keeps the stream open (as the
//! real one does for up to 15 minutes) is played by a fake server; site refusals by the
//! simulator.

use std::time::Duration;

use edge_connect_sim::{Fault, SimConfig};

use crate::hardening_client::{head, one_line, reply, token_reply, Fake, Setup, Step, CTRL, LOGIN};
use crate::support::*;

/// The image of the GitHub fixture.
const IMAGE: &str = "ghcr.io/example-org/garm-runner:2.330.0";

/// A controller whose CreateAppInst stream sends `lines` and then stays open without a word
/// (the CRM waits for the pod), and which has undone the AppInst once the client left.
fn stuck_with(lines: &[&str]) -> Fake {
    let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    Fake::start(move |path, _| match path {
        LOGIN => token_reply(),
        p if p == format!("{CTRL}CreateAppInst") => {
            let mut steps = vec![head("200 OK", "")];
            for line in &lines {
                steps.push(Step::Write(
                    format!("{{\"data\":{{\"message\":\"{line}\"}}}}\n").into_bytes(),
                ));
            }
            steps.push(Step::Sleep(Duration::from_secs(50)));
            steps
        }
        p if p == format!("{CTRL}CreateApp") || p == format!("{CTRL}DeleteApp") => {
            reply("200 OK", "{}")
        }
        _ => reply("200 OK", ""),
    })
}

fn fixture_image() -> String {
    let v: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "hardened-runner",
        POOL,
    ))
    .unwrap();
    v["image"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_unpullable_image_fails_fast_naming_image_site_and_reason() {
    assert_eq!(fixture_image(), IMAGE);
    let fake = stuck_with(&[
        "Creating",
        "Status: pod hardened-runner-6d4f9-x7k2p: Pending (0/1), container hardened-runner: ContainerCreating",
        "Status: pod hardened-runner-6d4f9-x7k2p: Pending (0/1), container hardened-runner: ErrImagePull",
        "Status: pod hardened-runner-6d4f9-x7k2p: Pending (0/1), container hardened-runner: ImagePullBackOff",
    ]);
    let setup = Setup::new(&fake.url(), "");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(r.stdout, "");
    assert_eq!(
        one_line(&r),
        format!("image {IMAGE} cannot be pulled on TelekomOP/Munich (ImagePullBackOff): check the image name and tag, and image_pull_username / image_pull_password_env for a private registry")
    );
    // Rolled back: the AppInst looked for (the controller undid it), the App deleted.
    assert_eq!(fake.count(&format!("{CTRL}CreateAppInst")), 1);
    assert!(fake.count(&format!("{CTRL}ShowAppInst")) >= 1);
    assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 1);
    setup.assert_no_secrets(&[&r]);
}

#[test]
fn a_failed_pull_that_does_not_clear_counts_after_the_grace() {
    let fake = stuck_with(&[
        "Status: pod hardened-runner-6d4f9-x7k2p: Pending (0/1), container hardened-runner: ErrImagePull",
    ]);
    let setup = Setup::new(&fake.url(), "start_failure_grace_secs = 1");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        one_line(&r).starts_with(&format!(
            "image {IMAGE} cannot be pulled on TelekomOP/Munich (ErrImagePull): "
        )),
        "{}",
        r.stderr
    );
    assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 1);
}

#[test]
fn a_crashing_runner_fails_fast() {
    for (reason, words) in [
        ("CrashLoopBackOff", "keeps crashing"),
        ("CreateContainerConfigError", "cannot be created"),
    ] {
        let line = format!("Status: pod hardened-runner-6d4f9-x7k2p: Running (0/1), container hardened-runner: {reason}");
        let fake = stuck_with(&[&line]);
        let setup = Setup::new(&fake.url(), "");
        let r = setup.garm("CreateInstance", &[]);
        assert_eq!(r.code, 1, "{}", r.stdout);
        assert!(
            one_line(&r).starts_with(&format!(
                "the container of image {IMAGE} {words} on TelekomOP/Munich ({reason}): "
            )),
            "{}",
            r.stderr
        );
        assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 1);
    }
}

fn two_zones() -> SimConfig {
    SimConfig {
        zones: vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ],
        cloudlets: vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ],
        ..SimConfig::default()
    }
}

fn create_on_two_zones(w: &World, name: &str) -> Run {
    let mut v: serde_json::Value =
        serde_json::from_str(&fixture_with("bootstrap-github-jit.json", name, POOL)).unwrap();
    v["extra_specs"] = serde_json::json!({
        "zones": [{"organization": "TelekomOP", "name": "Munich"}, {"organization": "TelekomOP", "name": "Berlin"}]
    });
    w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    )
}

/// The CRM's error for a pod whose container reports `Unschedulable`
/// (`pkg/k8smgmt/appinst.go:169-171, 220-221`).
const UNSCHEDULABLE: &str =
    "invalid pod state, pod garm-us1-5c9-p2: Pending (0/1), container garm-us1: Unschedulable";

#[test]
fn an_unschedulable_runner_moves_to_the_next_site() {
    let w = World::with_sim(two_zones(), Site::Zone, "");
    w.sim
        .inject(Fault::stream_error("CreateAppInst", 3, UNSCHEDULABLE));
    let r = create_on_two_zones(&w, "garm-us1");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let insts = w.sim.app_insts();
    assert_eq!(insts.len(), 1);
    assert_eq!(insts[0]["zone_key"]["name"], "Berlin");

    w.sim
        .inject(Fault::stream_error("CreateAppInst", 3, UNSCHEDULABLE).times(2));
    let r = create_on_two_zones(&w, "garm-us2");
    assert_eq!(r.code, 1);
    assert!(
        one_line(&r).contains("zone TelekomOP/Munich: the runner cannot be scheduled on TelekomOP/Munich (Unschedulable): "),
        "{}",
        r.stderr
    );
    assert_eq!(w.app_names(), vec!["garm-us1"]);
}

#[test]
fn a_docker_pull_failure_names_the_image() {
    let w = World::with(
        edge_connect_sim::ApiGeneration::Gen3,
        Site::Zone,
        "deployment = \"docker\"",
    );
    // `docker run`'s failure as the CRM reports it (`pkg/dockermgmt/dockerapp.go:454`).
    w.sim.inject(Fault::stream_error(
        "CreateAppInst",
        3,
        "error running docker run, Unable to find image 'ghcr.io/example-org/garm-runner:2.330.0' locally docker: Error response from daemon: manifest unknown, exit status 125",
    ));
    let r = w.create("bootstrap-github-jit.json", "garm-dk1", POOL, &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        one_line(&r).starts_with(&format!(
            "image {IMAGE} cannot be pulled on TelekomOP/Munich ("
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("manifest unknown"), "{}", r.stderr);
    assert!(w.app_names().is_empty() && w.app_inst_names().is_empty());
}

#[test]
fn a_pod_no_node_takes_is_a_refusal_of_the_site_after_the_grace() {
    // Kubernetes keeps an unschedulable pod `Pending` without container statuses; the CRM says
    // so once and waits (docs/edge-connect-behaviours.md B12).
    let fake = stuck_with(&["Status: pod hardened-runner-6d4f9-x7k2p: Pending (0/0), "]);
    let setup = Setup::new(&fake.url(), "start_failure_grace_secs = 1");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        one_line(&r)
            .starts_with("the runner cannot be scheduled on TelekomOP/Munich (Unschedulable): "),
        "{}",
        r.stderr
    );
    assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 1);
}
