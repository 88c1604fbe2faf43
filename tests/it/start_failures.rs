//! A runner that cannot start says why at once (issues 21 and 27): the CRM's pod status lines
//! about our pod, as main `pkg/k8smgmt/appinst.go:175, 311-312` words them, end the create as
//! soon as they say it will not start (docs/edge-connect-behaviours.md B22); the create is rolled
//! back and the one stderr line names the image, the site and the reason, and the DeleteInstance
//! GARM runs next ends at once too. A controller that keeps the stream open (as the real one
//! does for up to 15 minutes) is played by a fake server; site refusals and the CRM's waits by
//! the simulator.

use std::time::Duration;

use edge_connect_sim::{Fault, FaultKind, ImageFault, ImageRule, SimConfig};

use crate::hardening_client::{head, one_line, reply, token_reply, Fake, Setup, Step, CTRL, LOGIN};
use crate::support::*;

/// A controller whose CreateAppInst stream sends `lines` and then stays open without a word
/// (the CRM waits for the pod), and which has undone the AppInst once the client left.
fn stuck_with(lines: &[&str]) -> Fake {
    answering(lines, true)
}

/// A controller whose CreateAppInst stream sends `lines`, then stays open when `open` or ends.
fn answering(lines: &[&str], open: bool) -> Fake {
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
            if open {
                steps.push(Step::Sleep(Duration::from_secs(50)));
            }
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
        "Status: pod hardened-runner1-deployment-6d4f9-x7k2p: Pending (0/1), container hardened-runner1: ContainerCreating",
        "Status: pod hardened-runner1-deployment-6d4f9-x7k2p: Pending (0/1), container hardened-runner1: ErrImagePull",
        "Status: pod hardened-runner1-deployment-6d4f9-x7k2p: Pending (0/1), container hardened-runner1: ImagePullBackOff",
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
        "Status: pod hardened-runner1-deployment-6d4f9-x7k2p: Pending (0/1), container hardened-runner1: ErrImagePull",
    ]);
    let setup = Setup::new(&fake.url(), "start_failure_grace_secs = 1");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_starts(
        one_line(&r),
        &format!("image {IMAGE} cannot be pulled on TelekomOP/Munich (ErrImagePull): "),
    );
    assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 1);
}

#[test]
fn a_crashing_runner_fails_fast() {
    for (reason, words) in [
        ("CrashLoopBackOff", "keeps crashing"),
        ("CreateContainerConfigError", "cannot be created"),
    ] {
        let line = format!("Status: pod hardened-runner1-deployment-6d4f9-x7k2p: Running (0/1), container hardened-runner1: {reason}");
        let fake = stuck_with(&[&line]);
        let setup = Setup::new(&fake.url(), "");
        let r = setup.garm("CreateInstance", &[]);
        assert_eq!(r.code, 1, "{}", r.stdout);
        assert_starts(
            one_line(&r),
            &format!("the container of image {IMAGE} {words} on TelekomOP/Munich ({reason}): "),
        );
        assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 1);
    }
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
    let r = w.create_image("garm-us1", IMAGE, Some(zones(&["Munich", "Berlin"])));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let insts = w.sim.app_insts();
    assert_eq!(insts.len(), 1);
    assert_eq!(insts[0]["zone_key"]["name"], "Berlin");

    w.sim
        .inject(Fault::stream_error("CreateAppInst", 3, UNSCHEDULABLE).times(2));
    let r = w.create_image("garm-us2", IMAGE, Some(zones(&["Munich", "Berlin"])));
    assert_eq!(r.code, 1);
    assert_has(one_line(&r), "zone TelekomOP/Munich: the runner cannot be scheduled on TelekomOP/Munich (Unschedulable): ");
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
    assert_starts(
        one_line(&r),
        &format!("image {IMAGE} cannot be pulled on TelekomOP/Munich ("),
    );
    assert!(r.stderr.contains("manifest unknown"), "{}", r.stderr);
    w.assert_nothing_left();
}

/// Our pod, as the CRM names it for the fixture's App `hardened-runner` version `1`.
const POD: &str = "hardened-runner1-deployment-6d4f9-x7k2p";

#[test]
fn a_pod_no_node_takes_is_waited_for_up_to_the_deadline_on_one_site() {
    // Kubernetes keeps an unschedulable pod `Pending` without container statuses; the CRM says
    // so once and waits (docs/edge-connect-behaviours.md B12). A scheduler may still place it.
    let fake = stuck_with(&[&format!("Status: pod {POD}: Pending (0/0), ")]);
    let setup = Setup::new(
        &fake.url(),
        "start_failure_grace_secs = 1\nrequest_timeout_secs = 5\noperation_timeout_secs = 6",
    );
    let started = std::time::Instant::now();
    let r = setup.garm("CreateInstance", &[]);
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_starts(one_line(&r), "no node of TelekomOP/Munich took the runner's pod within edge_connect.operation_timeout_secs=6s (Pending (0/0)): ");
    assert!(took >= Duration::from_secs(6), "{took:?}");
}

#[test]
fn lines_about_another_pod_do_not_end_the_create() {
    let fake = answering(
        &[
            "Status: pod other1-deployment-6d4f9-x7k2p: Running (0/1), container other1: CrashLoopBackOff; pod hardened-runner1-deployment-6d4f9-x7k2p: Pending (0/1), container hardened-runner1: ContainerCreating",
            "Status: pod hardened-runner11-deployment-5c9-p2: Pending (0/0), ",
            "Status: pod hardened-runner1-deployment-6d4f9-x7k2p: Running (1/1), ",
            "Ready",
            "Created AppInst successfully",
        ],
        false,
    );
    let setup = Setup::new(&fake.url(), "start_failure_grace_secs = 1");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 0);
}

#[test]
fn a_container_that_keeps_terminating_fails_after_the_grace() {
    let fake = stuck_with(&[&format!(
        "Status: pod {POD}: Running (0/1), container hardened-runner1: Error"
    )]);
    let setup = Setup::new(&fake.url(), "start_failure_grace_secs = 1");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_starts(
        one_line(&r),
        &format!("the container of image {IMAGE} keeps crashing on TelekomOP/Munich (Error): "),
    );
}

// --- Against the simulator's CRM (images that cannot start, scaled waits) ---

/// The simulator's CRM wait (15 minutes for real), scaled for tests: kubelet's back-off and the
/// CRM's polling shrink with it (`crm_max_wait / 900 s`). The measurement uses a tenth.
const SCALED_WAIT: Duration = Duration::from_secs(10);
const MEASURED_WAIT: Duration = Duration::from_secs(90);

fn crm(sites: &[&str], central: bool) -> SimConfig {
    crm_waiting(sites, central, SCALED_WAIT)
}

const PULL_FAILS: &str = "check the image name and tag, and image_pull_username / image_pull_password_env for a private registry";

#[test]
fn on_a_central_crm_an_unpullable_image_leaves_nothing() {
    // Closing the stream makes the controller undo the create (B7); the rollback waits for it.
    let image = "registry.example.com/ci/runner:13";
    let w = World::with_sim(crm(&["Munich"], true), Site::Zone, "");
    let r = w.create_image("garm-pull1", image, None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_eq!(
        one_line(&r),
        format!(
            "image {image} cannot be pulled on TelekomOP/Munich (ImagePullBackOff): {PULL_FAILS}"
        )
    );
    w.assert_nothing_left();
    w.assert_no_secrets(&[&r]);
}

fn delete_instance(w: &World, name: &str) -> Run {
    w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", name)], None)
}

#[test]
fn on_a_crm_on_the_edge_create_and_delete_end_at_once_and_garms_retry_removes_it() {
    // The AppInst stays Creating until the CRM's wait ends (B12, B17): the create says why and
    // that its cleanup is held, the DeleteInstance GARM runs next says at once what holds it
    // without asking for a delete that would be refused, and a retry after the wait removes
    // everything.
    let image = "registry.example.com/ci/runner:13";
    let w = World::with_sim(crm(&["Munich"], false), Site::Zone, "");
    let r = w.create_image("garm-pull1", image, None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let line = one_line(&r);
    assert!(
        line.starts_with(&format!(
            "image {image} cannot be pulled on TelekomOP/Munich (ImagePullBackOff): {PULL_FAILS}; cleanup of garm-pull1 failed too (AppInst garm-pull1 on TelekomOP/Munich is Creating: Edge Connect refuses to delete it while the site's CRM waits for its pod, which ends by "
        )) && line.ends_with(" UTC, 15 minutes after its create), DeleteInstance will retry it"),
        "{line}"
    );
    let deletes = w.calls("DeleteAppInst");
    let d = delete_instance(&w, "garm-pull1");
    assert_eq!(d.code, 1, "{}", d.stdout);
    assert!(
        one_line(&d).starts_with("AppInst garm-pull1 on TelekomOP/Munich is Creating: its create is still running, and Edge Connect deletes it only once that has ended, at the latest by ")
            && one_line(&d).ends_with(" UTC (the site's CRM waits at most 15 minutes for its pod); GARM's next DeleteInstance after that removes it"),
        "{}",
        d.stderr
    );
    assert_eq!(
        w.calls("DeleteAppInst"),
        deletes,
        "its state was known from the read"
    );
    // GARM retries every few seconds; once the CRM lets the AppInst go, the retry removes it.
    w.until_created("garm-pull1");
    let d = delete_instance(&w, "garm-pull1");
    assert_eq!(d.code, 0, "{}", d.stderr);
    w.assert_nothing_left();
}

/// Kubelet's reasons for a container that does not start, other than its back-offs.
const OTHER_REASONS: [&str; 6] = [
    "RunContainerError",
    "ImageInspectError",
    "RegistryUnavailable",
    "PostStartHookError",
    "PreStartHookError",
    "ContainerCannotRun",
];

fn crm_with_waits(central: bool) -> SimConfig {
    let mut config = crm(&["Munich"], central);
    config.images = OTHER_REASONS
        .iter()
        .map(|r| ImageRule::new(format!("*:{r}"), ImageFault::Waits(r)))
        .collect();
    config
}

#[test]
fn every_other_reason_fails_within_the_grace() {
    for central in [true, false] {
        let w = World::with_sim(
            crm_with_waits(central),
            Site::Zone,
            "start_failure_grace_secs = 2",
        );
        for (i, reason) in OTHER_REASONS.iter().enumerate() {
            let image = format!("ghcr.io/example-org/garm-runner:{reason}");
            let r = w.create_image(&format!("garm-why{i}"), &image, None);
            assert_eq!(r.code, 1, "{reason}: {}", r.stdout);
            let line = one_line(&r);
            assert!(
                line.contains(&format!(" {image} "))
                    && line.contains(&format!(" on TelekomOP/Munich ({reason}): ")),
                "{line}"
            );
        }
    }
}

#[test]
fn a_pod_no_node_took_is_no_runner_when_the_crm_stops_waiting() {
    // The CRM calls the AppInst Ready after its wait whatever the pod does (B12).
    let mut config = crm_waiting(&["Munich"], true, Duration::from_secs(3));
    config.images = vec![ImageRule::new("*", ImageFault::Unschedulable)];
    let w = World::with_sim(config, Site::Zone, "start_failure_grace_secs = 1");
    let r = w.create_image("garm-never1", IMAGE, None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_starts(one_line(&r), "no node of TelekomOP/Munich took the runner's pod before the site's CRM stopped waiting for it (Pending (0/0)): ");
    w.assert_nothing_left();

    // A container still failing then, before its grace passed, likewise.
    let mut config = crm_waiting(&["Munich"], true, Duration::from_secs(3));
    config.images = vec![ImageRule::new("*", ImageFault::Waits("RunContainerError"))];
    let w = World::with_sim(config, Site::Zone, "start_failure_grace_secs = 60");
    let r = w.create_image("garm-never2", IMAGE, None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_starts(one_line(&r), &format!("the container of image {IMAGE} keeps crashing on TelekomOP/Munich (RunContainerError): "));
}

#[test]
fn a_pod_scheduled_after_the_grace_runs_on_a_one_site_pool() {
    let mut config = crm(&["Munich"], false);
    config.images = vec![ImageRule::new(
        "*:late",
        ImageFault::ScheduledAfter(Duration::from_secs(8)),
    )];
    let w = World::with_sim(config, Site::Zone, "start_failure_grace_secs = 5");
    let started = std::time::Instant::now();
    let r = w.create_image("garm-late1", "ghcr.io/example-org/garm-runner:late", None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(started.elapsed() >= Duration::from_secs(8));
    assert_eq!(w.app_inst_names(), ["garm-late1"]);
}

fn two_crm_zones(central: bool, munich_schedules: bool) -> SimConfig {
    let mut config = crm(&["Munich", "Berlin"], central);
    config.cloudlet_settings[0].pods_unscheduled = !munich_schedules;
    config
}

#[test]
fn a_site_that_schedules_nothing_costs_the_grace_and_the_next_one_is_tried_in_time() {
    let w = World::with_sim(
        two_crm_zones(true, false),
        Site::Zone,
        "start_failure_grace_secs = 2\noperation_timeout_secs = 60",
    );
    let r = w.create_image("garm-fo1", IMAGE, Some(zones(&["Munich", "Berlin"])));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let insts = w.sim.app_insts();
    assert_eq!(insts.len(), 1);
    assert_eq!(insts[0]["zone_key"]["name"], "Berlin");
}

const MUNICH_HELD: &str = "AppInst garm-fo2 on TelekomOP/Munich is Creating: its create is still running, and Edge Connect deletes it only once that has ended, at the latest by ";

#[test]
fn a_site_whose_crm_holds_the_appinst_costs_the_grace_and_the_next_site_takes_it_under_a_second_name(
) {
    // On a CRM on the edge the first site's AppInst stays until the CRM's wait ends, and a
    // Gen3 AppInst name is unique across zones (B4): the next site gets the App's name and
    // `-2`, and the runner is found by its App (B24).
    let crm_wait = Duration::from_secs(40);
    let w = World::with_sim(
        munich_holds(crm_wait, true),
        Site::Zone,
        "start_failure_grace_secs = 2\noperation_timeout_secs = 60",
    );
    let r = w.create_image("garm-fo2", IMAGE, Some(zones(&["Munich", "Berlin"])));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The grace, the few seconds given to a central CRM's undo (HELD_PATIENCE), the create.
    assert_eq!(w.calls("CreateAppInst"), 2);
    assert_eq!(
        w.calls("DeleteAppInst"),
        0,
        "the held one is not asked about"
    );
    assert_eq!(w.app_names(), ["garm-fo2"]);
    assert_eq!(
        w.app_insts_where(),
        [
            (
                "garm-fo2".to_string(),
                "Munich".to_string(),
                "Creating".to_string()
            ),
            ("garm-fo2-2".into(), "Berlin".into(), "Ready".into())
        ]
    );
    w.assert_no_secrets(&[&r]);

    let get = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-fo2")], None);
    assert_eq!(get.code, 0, "{}", get.stderr);
    assert_eq!(get.json()["status"], "running", "{}", get.stdout);
    assert_eq!(get.json()["provider_id"], "garm-fo2");
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(
        list.statuses(),
        [("garm-fo2".to_string(), "running".to_string())]
    );

    // GARM's DeleteInstance removes the runner that runs and says at once what holds the other.
    let d = delete_instance(&w, "garm-fo2");
    assert_eq!(d.code, 1, "{}", d.stdout);
    let line = one_line(&d);
    assert!(
        line.starts_with(MUNICH_HELD)
            && line.ends_with(" UTC (the site's CRM waits at most 15 minutes for its pod); GARM's next DeleteInstance after that removes it"),
        "{line}"
    );
    assert_eq!(
        w.app_insts_where(),
        [(
            "garm-fo2".to_string(),
            "Munich".to_string(),
            "Creating".to_string()
        )]
    );
    assert_eq!(w.app_names(), ["garm-fo2"]);

    // Once the CRM lets it go (its wait over, the AppInst Ready, B12), GARM's retry removes it.
    w.until_created("garm-fo2");
    let d = delete_instance(&w, "garm-fo2");
    assert_eq!(d.code, 0, "{}", d.stderr);
    w.assert_nothing_left();
}

#[test]
fn a_pool_whose_sites_all_hold_the_appinst_ends_within_the_deadline_and_the_rollback_naming_both() {
    let w = World::with_sim(
        munich_holds(Duration::from_secs(120), false),
        Site::Zone,
        "start_failure_grace_secs = 2\nrequest_timeout_secs = 5\noperation_timeout_secs = 12",
    );
    let started = std::time::Instant::now();
    let r = w.create_image("garm-fo3", IMAGE, Some(zones(&["Munich", "Berlin"])));
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{}", r.stdout);
    // The deadline and at most the rollback's bound of a runner that cannot start (30 s).
    assert!(took >= Duration::from_secs(12), "{took:?}");
    let line = one_line(&r);
    let cause = "no site could take the AppInst (2 tried): zone TelekomOP/Munich: no node of TelekomOP/Munich took the runner's pod within edge_connect.start_failure_grace_secs=2s (Pending (0/0)); zone TelekomOP/Berlin: no node of TelekomOP/Berlin took the runner's pod within edge_connect.operation_timeout_secs=12s (Pending (0/0)): ";
    assert!(line.starts_with(cause), "{line}");
    let munich = line.find(
        "; cleanup of garm-fo3 failed too (AppInst garm-fo3 on TelekomOP/Munich is Creating: ",
    );
    let berlin = line.find("; AppInst garm-fo3-2 on TelekomOP/Berlin is Creating: ");
    assert!(
        munich.is_some() && berlin.is_some() && munich < berlin,
        "{line}"
    );
    assert!(line.ends_with("), DeleteInstance will retry it"), "{line}");
    assert_eq!(
        w.app_insts_where(),
        [
            (
                "garm-fo3".to_string(),
                "Munich".to_string(),
                "Creating".to_string()
            ),
            ("garm-fo3-2".into(), "Berlin".into(), "Creating".into())
        ]
    );
    assert_eq!(w.app_names(), ["garm-fo3"]);
}

#[test]
fn on_the_simulators_crm_a_container_that_keeps_terminating_fails_after_the_grace() {
    // Seen `Error` at every poll, never in its back-off: the CRM says it once (B12, B22).
    for central in [true, false] {
        let mut config = crm(&["Munich"], central);
        config.images = vec![ImageRule::new("*:exits", ImageFault::Terminates)];
        let w = World::with_sim(config, Site::Zone, "start_failure_grace_secs = 2");
        let image = "ghcr.io/example-org/garm-runner:exits";
        let started = std::time::Instant::now();
        let r = w.create_image("garm-exit1", image, None);
        let took = started.elapsed();
        assert_eq!(r.code, 1, "{}", r.stdout);
        let line = one_line(&r);
        assert!(
            line.starts_with(&format!(
                "the container of image {image} keeps crashing on TelekomOP/Munich (Error): check that its entrypoint starts the runner and stays up, and the container's log"
            )),
            "{line}"
        );
        assert!(took >= Duration::from_secs(2), "{took:?}");
        if central {
            w.assert_nothing_left();
        } else {
            assert!(line.contains("; cleanup of garm-exit1 failed too (AppInst garm-exit1 on TelekomOP/Munich is Creating: "), "{line}");
            assert_eq!(w.app_inst_names(), ["garm-exit1"]);
        }
    }
}

#[test]
fn on_the_simulators_crm_a_crashing_image_fails_fast() {
    let w = World::with_sim(crm(&["Munich"], true), Site::Zone, "");
    let r = w.create_image("garm-crash1", "ghcr.io/example-org/garm-runner:crash", None);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_starts(one_line(&r), "the container of image ghcr.io/example-org/garm-runner:crash keeps crashing on TelekomOP/Munich (CrashLoopBackOff): ");
    w.assert_nothing_left();
}

#[test]
fn on_the_simulators_crm_an_unschedulable_pod_tries_each_site_and_names_them() {
    // The first site gets the grace, the last one the rest of the deadline (it might still
    // place the pod), as the only site of a pool does.
    let w = World::with_sim(
        crm(&["Munich", "Berlin"], true),
        Site::Zone,
        "start_failure_grace_secs = 1\nrequest_timeout_secs = 5\noperation_timeout_secs = 6",
    );
    let specs = serde_json::json!({
        "zones": [{"organization": "TelekomOP", "name": "Munich"}, {"organization": "TelekomOP", "name": "Berlin"}]
    });
    let r = w.create_image(
        "garm-big1",
        "ghcr.io/example-org/garm-runner:big",
        Some(specs),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    let line = one_line(&r);
    assert_eq!(
        line,
        "no site could take the AppInst (2 tried): zone TelekomOP/Munich: no node of TelekomOP/Munich took the runner's pod within edge_connect.start_failure_grace_secs=1s (Pending (0/0)); zone TelekomOP/Berlin: no node of TelekomOP/Berlin took the runner's pod within edge_connect.operation_timeout_secs=6s (Pending (0/0)): the site may be short of nodes or of room for the flavor; ask its operator, or list another site in the pool's zones"
    );
    assert_eq!(w.calls("CreateAppInst"), 2);
    w.assert_nothing_left();
}

/// Seconds of the UTC day of a log line's timestamp (`2026-12-01T15:20:01.123456Z …`).
fn log_seconds(line: &str) -> Option<f64> {
    let time = line.get(11..26)?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

fn now_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() % 86_400.0)
}

/// When the first log line containing `cause` (a status line, for a cause that begins with
/// `:`) was written, in seconds of the UTC day.
fn first_line_naming(w: &World, cause: &str) -> f64 {
    let log = w.log_text();
    log.lines()
        .find(|l| l.contains(cause) && (l.contains("Status: pod") || !cause.starts_with(':')))
        .and_then(log_seconds)
        .unwrap_or_else(|| panic!("no log line names {cause:?}:\n{log}"))
}

/// One measured case on one site: CreateInstance, then the DeleteInstance GARM runs right after
/// it; one row of the table.
fn measure_one_site(
    case: &str,
    image: &str,
    central: bool,
    cause: &str,
    fault: Option<ImageFault>,
) {
    let mut config = crm_waiting(&["Munich"], central, MEASURED_WAIT);
    if let Some(fault) = fault {
        config.images = vec![ImageRule::new(image, fault)];
    }
    let w = World::with_sim(config, Site::Zone, "start_failure_grace_secs = 5");
    let r = w.create_image("garm-t", image, None);
    let created = now_seconds();
    let d = delete_instance(&w, "garm-t");
    let deleted = now_seconds();
    let first = first_line_naming(&w, cause);
    let crm = if central { "central" } else { "on the edge" };
    println!(
        "| {case} | {crm} | `{cause}` | {:.1} | {:.1} | {} / {} | {} |",
        created - first,
        deleted - first,
        r.code,
        d.code,
        w.calls("DeleteAppInst")
    );
}

/// One measured create on a two-site pool (Munich first): wall time against the deadline, the
/// site used.
fn measure_two_sites(case: &str, w: &World) {
    let started = std::time::Instant::now();
    let r = w.create_image("garm-t", IMAGE, Some(zones(&["Munich", "Berlin"])));
    let took = started.elapsed().as_secs_f64();
    // The site whose AppInst is Ready, and the AppInst's name when it is not the App's.
    let used = w
        .sim
        .app_insts()
        .iter()
        .filter(|i| i["state"] == "Ready")
        .map(|i| {
            let zone = i["zone_key"]["name"].as_str().unwrap_or_default();
            match i["key"]["name"].as_str().unwrap_or_default() {
                "garm-t" => zone.to_string(),
                name => format!("{zone} (as {name})"),
            }
        })
        .next()
        .unwrap_or_else(|| "none".into());
    println!(
        "| {case} | {took:.1} | 60 | {used} | {} | {} |",
        r.code,
        w.calls("DeleteAppInst")
    );
}

#[test]
#[ignore = "measurement for BENCHMARKS.md: cargo test --test it -- --ignored start_failure_timings --nocapture"]
fn start_failure_timings() {
    println!("| case | CRM | first line naming the cause | s to CreateInstance exit | s to DeleteInstance exit | exits | DeleteAppInst |");
    println!("|---|---|---|---|---|---|---|");
    let cases: [(&str, &str, &str, Option<ImageFault>); 4] = [
        (
            "unpullable image",
            "registry.example.com/ci/runner:13",
            "ErrImagePull",
            None,
        ),
        (
            "crash loop",
            "ghcr.io/example-org/garm-runner:crash",
            ": Error",
            None,
        ),
        (
            "RunContainerError, no back-off after it",
            "ghcr.io/example-org/garm-runner:run",
            ": RunContainerError",
            Some(ImageFault::Waits("RunContainerError")),
        ),
        (
            "PostStartHookError, no back-off after it",
            "ghcr.io/example-org/garm-runner:hook",
            ": PostStartHookError",
            Some(ImageFault::Waits("PostStartHookError")),
        ),
    ];
    for (case, image, cause, fault) in cases {
        for central in [true, false] {
            measure_one_site(case, image, central, cause, fault);
        }
    }
    // A pod a node takes after 8 s, one site, grace 5 s: it runs.
    let mut config = crm_waiting(&["Munich"], false, MEASURED_WAIT);
    config.images = vec![ImageRule::new(
        "*:late",
        ImageFault::ScheduledAfter(Duration::from_secs(8)),
    )];
    let w = World::with_sim(config, Site::Zone, "start_failure_grace_secs = 5");
    let started = std::time::Instant::now();
    let r = w.create_image("garm-t", "ghcr.io/example-org/garm-runner:late", None);
    println!(
        "| pod placed after 8 s, one site | on the edge | `Pending (0/0)` | {:.1} (runs) | - | {} | {} |",
        started.elapsed().as_secs_f64(),
        r.code,
        w.calls("DeleteAppInst")
    );

    println!();
    println!("| two-site pool (Munich first), grace 5 s | wall s | deadline s | site used | exit | DeleteAppInst |");
    println!("|---|---|---|---|---|---|");
    let two = "start_failure_grace_secs = 5\nrequest_timeout_secs = 5\noperation_timeout_secs = 60";
    for central in [true, false] {
        let crm = if central { "central" } else { "on the edge" };
        let w = World::with_sim(two_crm_zones(central, false), Site::Zone, two);
        measure_two_sites(&format!("Munich schedules nothing, CRM {crm}"), &w);
    }
    let mut config = crm_waiting(&["Munich", "Berlin"], false, MEASURED_WAIT);
    config.cloudlet_settings[0].pods_unscheduled = true;
    config.cloudlet_settings[1].pods_unscheduled = true;
    let w = World::with_sim(config, Site::Zone, two);
    measure_two_sites("neither schedules, both CRMs on the edge (both hold)", &w);
    let w = World::with_sim(
        crm_waiting(&["Munich", "Berlin"], true, MEASURED_WAIT),
        Site::Zone,
        two,
    );
    w.sim.inject(Fault::new(
        "CreateAppInst",
        FaultKind::Slow { delay_ms: 120_000 },
    ));
    measure_two_sites("Munich answers nothing to CreateAppInst", &w);
    let w = World::with_sim(
        crm_waiting(&["Munich", "Berlin"], true, MEASURED_WAIT),
        Site::Zone,
        two,
    );
    w.sim.set_capacity("TelekomOP", "Munich", Some(0));
    measure_two_sites(
        "Munich is full (`No resources available for deployment`)",
        &w,
    );
    let mut config = crm_waiting(&["Munich", "Berlin"], true, MEASURED_WAIT);
    config.images = vec![ImageRule::new("*", ImageFault::CannotPull)];
    let w = World::with_sim(config, Site::Zone, two);
    measure_two_sites("the image cannot be pulled anywhere", &w);
}
