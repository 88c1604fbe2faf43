//! Nothing left behind by a person's commands (issue 26): `check --deploy-test` stopped by
//! SIGINT, SIGTERM or SIGKILL, or failing each way, leaves nothing on Edge Connect once it has
//! ended, or at the latest once the next `check --deploy-test` with the same config has ended;
//! the commands it advises are run here, in the situation that prints them. Each case prints
//! its wall times (`--nocapture`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use edge_connect_sim::{Fault, SimConfig};

use crate::support::*;

/// The deploy test's controller id, as docs/operations.md documents it.
const CHECK_CONTROLLER: &str = "garm-provider-edge-connect-check";

fn start_check(w: &World, args: &[&str]) -> Child {
    start(
        w.cli_command().args(["check", "--deploy-test"]).args(args),
        None,
    )
}

/// Runs `check --deploy-test ARGS` to its end: the run and its wall time.
fn check(w: &World, args: &[&str]) -> (Run, Duration) {
    let started = Instant::now();
    let run = Run::from(start_check(w, args).wait_with_output().expect("check ends"));
    (run, started.elapsed())
}

/// What is on the simulator: App names and AppInst names.
fn on_edge_connect(w: &World) -> (Vec<String>, Vec<String>) {
    (w.app_names(), w.app_inst_names())
}

fn nothing() -> (Vec<String>, Vec<String>) {
    (Vec::new(), Vec::new())
}

/// The line of `out` that starts with `prefix`.
fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{out}"))
}

/// The command a line advises after "or now: ".
fn advised(line: &str) -> &str {
    line.split_once("or now: ")
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no advice in {line:?}"))
}

/// Runs an advised command line as a person would paste it into a shell.
fn run_in_shell(command: &str) -> Run {
    Run::from(
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .env_clear()
            .current_dir("/")
            .output()
            .expect("sh runs"),
    )
}

/// A simulator whose creates take 3 s, with its one site's CRM central or on the edge.
fn slow_creates(central: bool) -> SimConfig {
    SimConfig {
        create_delay: Duration::from_secs(3),
        ..crm_waiting(&["Munich"], central, Duration::from_secs(10))
    }
}

#[test]
fn a_check_stopped_by_each_signal_leaves_nothing_once_the_next_check_has_ended() {
    for central in [true, false] {
        for (sig, name) in [
            (libc::SIGINT, "SIGINT"),
            (libc::SIGTERM, "SIGTERM"),
            (libc::SIGKILL, "SIGKILL"),
        ] {
            let case = format!("{name}, central CRM {central}");
            let w = World::with_sim(slow_creates(central), Site::Zone, "");
            let started = Instant::now();
            let child = start_check(&w, &[]);
            let runner = format!("garm-check-{}-0", child.id());
            w.until_an_app_inst();
            signal(&child, sig);
            let r = Run::from(child.wait_with_output().unwrap());
            let wall = started.elapsed();
            let after = on_edge_connect(&w);
            if sig == libc::SIGKILL {
                assert_eq!(r.code, -1, "{case}");
                // Found again: under the deploy test's documented identity.
                let list = Run::from(w.person(CHECK_CONTROLLER).arg("list").output().unwrap());
                assert_eq!(list.code, 0, "{case}: {}", list.stderr);
                assert!(list.stdout.contains(&runner), "{case}: {}", list.stdout);
            } else {
                assert_eq!(r.code, 130, "{case}: {}\n{}", r.stdout, r.stderr);
                assert_eq!(
                    r.stdout.lines().last(),
                    Some(
                        format!(
                            "✗ deploy test: interrupted by {name}; nothing of it was left on Edge Connect"
                        )
                        .as_str()
                    ),
                    "{case}: {}",
                    r.stderr
                );
                assert_eq!(
                    r.stderr.lines().last(),
                    Some(format!("error: interrupted by {name}").as_str()),
                    "{case}"
                );
                assert_eq!(after, nothing(), "{case}");
            }
            let (next, next_wall) = check(&w, &[]);
            assert_eq!(next.code, 0, "{case}: {}\n{}", next.stdout, next.stderr);
            if after != nothing() {
                assert_eq!(
                    line(&next.stdout, "✓ earlier deploy tests: "),
                    format!("✓ earlier deploy tests: removed what they left: {runner}"),
                    "{case}"
                );
            }
            assert_eq!(on_edge_connect(&w), nothing(), "{case}");
            println!(
                "| {case} | {:.1} s | left after it: {after:?} | next check {:.1} s, left after it: none |",
                wall.as_secs_f64(),
                next_wall.as_secs_f64()
            );
        }
    }
}

#[test]
fn a_check_whose_runner_cannot_start_waits_for_its_cleanup_and_leaves_nothing() {
    // The CRM's wait (15 minutes for real) outlasts the create's own 30 s rollback on the edge.
    let wait = Duration::from_secs(40);
    for (image, central) in [
        ("ghcr.io/example-org/garm-runner:crash", true),
        ("ghcr.io/example-org/garm-runner:crash", false),
        ("registry.example.com/ci/runner:13", true),
        ("registry.example.com/ci/runner:13", false),
    ] {
        let case = format!("{image}, central CRM {central}");
        let w = World::with_sim(crm_waiting(&["Munich"], central, wait), Site::Zone, "");
        let (r, wall) = check(&w, &["--image", image]);
        assert_eq!(r.code, 1, "{case}: {}", r.stdout);
        let failed = line(&r.stdout, "✗ deploy test zone TelekomOP/Munich: ");
        assert!(
            failed.contains(" on TelekomOP/Munich ("),
            "{case}: {failed}"
        );
        if !central {
            // The rollback gave up on the busy AppInst; the check is the DeleteInstance that
            // removes it, and says it waits.
            assert!(
                line(&r.stdout, "✓ cleanup garm-check-")
                    .contains(": removed by the check's DeleteInstance after "),
                "{case}: {}",
                r.stdout
            );
            assert!(
                r.stderr.contains(
                    "with its AppInst on TelekomOP/Munich is Creating: Edge Connect deletes it only once that ends"
                ) && r
                    .stderr
                    .contains("waiting, at most edge_connect.operation_timeout_secs=900s"),
                "{case}: {}",
                r.stderr
            );
        }
        assert!(!r.stdout.contains("✗ cleanup"), "{case}: {}", r.stdout);
        assert_eq!(on_edge_connect(&w), nothing(), "{case}");
        println!(
            "| {case} | {:.1} s | left after it: none |",
            wall.as_secs_f64()
        );
    }
}

#[test]
fn a_refused_delete_app_is_named_with_a_command_that_removes_it_and_the_next_check_removes_it_too()
{
    for remover in ["the advised command", "the next check"] {
        let w = World::new();
        // The membership probe's DeleteApp, the deploy test's and the check's second try.
        w.sim.inject(Fault::http_status("DeleteApp", 400).times(3));
        let child = start_check(&w, &[]);
        let runner = format!("garm-check-{}-0", child.id());
        let started = Instant::now();
        let r = Run::from(child.wait_with_output().unwrap());
        let wall = started.elapsed();
        assert_eq!(r.code, 1, "{}", r.stdout);
        let refusal = "Edge Connect DeleteApp (HTTP 400): Bad Request";
        assert_eq!(
            line(&r.stdout, "✗ deploy test "),
            format!("✗ deploy test zone TelekomOP/Munich: docker.io/library/nginx:1.27-alpine runs there, but DeleteInstance {runner} failed: {refusal}")
        );
        let left = line(&r.stdout, "✗ cleanup ");
        let command = format!(
            "{BIN} --config {} --controller-id {CHECK_CONTROLLER} remove-all --yes",
            w.config.display()
        );
        assert_eq!(
            left,
            format!("✗ cleanup {runner}: left on Edge Connect: App {runner} (not deleted: {refusal}); the next `check --deploy-test` with this config removes it, or now: {command}")
        );
        assert_eq!(on_edge_connect(&w), (vec![runner.clone()], Vec::new()));
        let started = Instant::now();
        match remover {
            "the advised command" => {
                let removed = run_in_shell(advised(left));
                assert_eq!(removed.code, 0, "{}", removed.stderr);
                assert!(
                    removed
                        .stderr
                        .starts_with("✓ removed all runners of this controller ("),
                    "{}",
                    removed.stderr
                );
            }
            _ => {
                let (next, _) = check(&w, &[]);
                assert_eq!(next.code, 0, "{}", next.stdout);
                assert_eq!(
                    line(&next.stdout, "✓ earlier deploy tests: "),
                    format!("✓ earlier deploy tests: removed what they left: {runner}")
                );
            }
        }
        assert_eq!(on_edge_connect(&w), nothing(), "{remover}");
        println!(
            "| refused DeleteApp, removed by {remover} | {:.1} s | left after it: App {runner} | {:.1} s, left after it: none |",
            wall.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
}

/// Another GARM controller of the same organization.
const OTHER: &str = "0b8f7e6d-5c4b-4a39-8271-605f4e3d2c1b";

/// The GitHub fixture named `name`, with `image`.
fn bootstrap(name: &str, image: &str) -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(&fixture_with("bootstrap-github-jit.json", name, POOL)).unwrap();
    v["image"] = image.into();
    v.to_string()
}

#[test]
fn a_runner_left_busy_by_a_failed_create_is_removed_by_delete_instance_remove_all_or_the_cli_create(
) {
    // On the edge the CRM holds the AppInst of a runner that cannot start for its whole wait,
    // longer than the create's own rollback waits for it.
    let w = World::with_sim(
        crm_waiting(&["Munich"], false, Duration::from_secs(40)),
        Site::Zone,
        "",
    );
    let image = "ghcr.io/example-org/garm-runner:crash";
    let pool = [("GARM_POOL_ID", POOL)];
    let a = w.spawn_garm("CreateInstance", &pool, &bootstrap("garm-left-a", image));
    let b = w.spawn_garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL), ("GARM_CONTROLLER_ID", OTHER)],
        &bootstrap("garm-left-b", image),
    );
    let file = w.dir.path().join("bootstrap.json");
    std::fs::write(&file, bootstrap("garm-left-c", image)).unwrap();
    let c = w
        .person(CONTROLLER)
        .args(["create", "--bootstrap"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A fourth, stopped by Ctrl-C while it waits for its busy AppInst.
    let file_d = w.dir.path().join("bootstrap-d.json");
    std::fs::write(&file_d, bootstrap("garm-left-d", image)).unwrap();
    let mut d = w
        .person(CONTROLLER)
        .args(["create", "--bootstrap"])
        .arg(&file_d)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let d_lines = signal_at_line(
        &mut d,
        "waiting, at most edge_connect.operation_timeout_secs=",
        libc::SIGINT,
    );
    for child in [a, b] {
        let r = Run::from(child.wait_with_output().unwrap());
        assert_eq!(r.code, 1, "{}", r.stderr);
    }
    // What GARM's DeleteInstance and RemoveAllInstances are there for.
    let left = w.app_names();
    assert!(
        left.contains(&"garm-left-a".to_string()) && left.contains(&"garm-left-b".to_string()),
        "{left:?}"
    );
    // GARM retries them every few seconds: the retry after the CRM lets the AppInsts go.
    w.until_created("garm-left-a");
    let r = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-left-a")],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    w.until_created("garm-left-b");
    let r = w.garm_as(OTHER, "RemoveAllInstances", &[], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // No GARM follows a person's create: it is its own DeleteInstance, and waits for it.
    let c = Run::from(c.wait_with_output().unwrap());
    assert_eq!(c.code, 1, "{}", c.stderr);
    let last = c.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: the container of image ghcr.io/example-org/garm-runner:crash keeps crashing on TelekomOP/Munich (")
            && last.ends_with("; removed since by this command's DeleteInstance")
            // What GARM would do is not promised where no GARM follows.
            && !last.contains("DeleteInstance will retry it"),
        "{}",
        c.stderr
    );
    let status = d.wait().unwrap();
    let d_lines = d_lines.join().unwrap();
    assert_eq!(status.code(), Some(130), "{d_lines:?}");
    let last = d_lines.last().map(String::as_str).unwrap_or_default();
    assert!(
        last.ends_with("; interrupted by SIGINT while removing what is left of garm-left-d; remove it with: delete garm-left-d"),
        "{last}"
    );
    // The advice, with the create's config and controller: it waits for the platform too.
    let delete = Run::from(
        w.person(CONTROLLER)
            .args(["delete", "garm-left-d"])
            .output()
            .unwrap(),
    );
    assert_eq!(delete.code, 0, "{}", delete.stderr);
    assert_eq!(on_edge_connect(&w), nothing());
}

#[test]
fn a_check_whose_wait_ends_first_names_what_is_left_and_a_command_that_removes_it() {
    // The check's own timeout ends before the CRM's wait (60 s) does.
    let w = World::with_sim(
        crm_waiting(&["Munich"], false, Duration::from_secs(60)),
        Site::Zone,
        "request_timeout_secs = 5\noperation_timeout_secs = 8",
    );
    let (r, wall) = check(&w, &["--image", "ghcr.io/example-org/garm-runner:crash"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let left = line(&r.stdout, "✗ cleanup garm-check-");
    let runner = left
        .strip_prefix("✗ cleanup ")
        .and_then(|l| l.split_once(':'))
        .map(|(n, _)| n)
        .unwrap_or_default();
    let command = format!(
        "{BIN} --config {} --controller-id {CHECK_CONTROLLER} remove-all --yes",
        w.config.display()
    );
    assert_eq!(
        left,
        format!("✗ cleanup {runner}: left on Edge Connect: App {runner} with its AppInst on TelekomOP/Munich (still Creating when the wait of edge_connect.operation_timeout_secs=8s ended); the next `check --deploy-test` with this config removes it, or now: {command}")
    );
    let after = on_edge_connect(&w);
    assert_eq!(after, (vec![runner.to_string()], vec![runner.to_string()]));
    let started = Instant::now();
    // Run once the platform lets go, as a person would.
    w.until_created(runner);
    let removed = run_in_shell(advised(left));
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(on_edge_connect(&w), nothing());
    println!(
        "| crashing image, CRM on the edge, wait ended first | {:.1} s | left after it: {after:?} | advised command {:.1} s, left after it: none |",
        wall.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn what_a_refused_cleanup_leaves_is_removed_by_delete_instance_or_remove_all() {
    // An App alone (its DeleteApp refused), and an App with its AppInst in CreateError (its
    // DeleteAppInst refused, asked once: the rollback does not ask again what the deploy's
    // cleanup was refused).
    /// The Apps and AppInsts a kind of fault leaves.
    type Left = (Vec<String>, Vec<String>);
    fn app_alone(w: &World) -> Left {
        w.sim
            .inject(Fault::stream_error("CreateAppInst", 2, "boom").times(2));
        w.sim.inject(Fault::http_status("DeleteApp", 400).times(2));
        (names(), Vec::new())
    }
    fn create_error(w: &World) -> Left {
        w.sim
            .inject(Fault::create_error_left(2, "Failed to pull image: 401 Unauthorized").times(2));
        w.sim
            .inject(Fault::http_status("DeleteAppInst", 400).times(2));
        (names(), names())
    }
    fn names() -> Vec<String> {
        vec!["garm-left-a".to_string(), "garm-left-b".to_string()]
    }
    type Kind = (&'static str, fn(&World) -> Left);
    let kinds: [Kind; 2] = [
        ("App alone", app_alone),
        ("App and AppInst in CreateError", create_error),
    ];
    for (kind, faults) in kinds {
        let w = World::new();
        let (apps, insts) = faults(&w);
        let image = "ghcr.io/example-org/garm-runner:2.330.0";
        let a = w.garm(
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            Some(&bootstrap("garm-left-a", image)),
        );
        let b = w.garm_as(
            OTHER,
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            Some(&bootstrap("garm-left-b", image)),
        );
        for r in [&a, &b] {
            assert_eq!(r.code, 1, "{kind}: {}", r.stderr);
            assert!(
                r.stderr.contains("; cleanup of garm-left-"),
                "{kind}: {}",
                r.stderr
            );
        }
        assert_eq!(on_edge_connect(&w), (apps, insts), "{kind}");
        let r = w.garm(
            "DeleteInstance",
            &[("GARM_INSTANCE_ID", "garm-left-a")],
            None,
        );
        assert_eq!(r.code, 0, "{kind}: {}", r.stderr);
        let r = w.garm_as(OTHER, "RemoveAllInstances", &[], None);
        assert_eq!(r.code, 0, "{kind}: {}", r.stderr);
        assert_eq!(on_edge_connect(&w), nothing(), "{kind}");
    }
}

#[test]
fn a_check_stopped_twice_names_a_command_that_removes_what_it_made() {
    // On the edge the AppInst goes on creating after the check let go of its stream, so the
    // cleanup waits for it; the second signal ends that wait.
    let w = World::with_sim(slow_creates(false), Site::Zone, "");
    let mut child = start_check(&w, &[]);
    // The second signal once the cleanup waits for the AppInst.
    let stderr = signal_at_line(&mut child, "waiting, at most", libc::SIGTERM);
    w.until_an_app_inst();
    signal(&child, libc::SIGTERM);
    let r = Run::from(child.wait_with_output().unwrap());
    let stderr = stderr.join().unwrap();
    assert_eq!(r.code, 130, "{}\n{stderr:?}", r.stdout);
    let last = r.stdout.lines().last().unwrap_or_default();
    let command = format!(
        "{BIN} --config {} --controller-id {CHECK_CONTROLLER} remove-all --yes",
        w.config.display()
    );
    assert_eq!(
        last,
        format!("✗ deploy test: interrupted by SIGTERM, then stopped at once: what it made may be left; the next `check --deploy-test` with this config removes it, or now: {command}")
    );
    assert_ne!(on_edge_connect(&w), nothing());
    let removed = run_in_shell(advised(last));
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(on_edge_connect(&w), nothing());
}

#[test]
fn every_app_inst_of_a_runners_app_on_any_site_goes_with_delete_instance_or_remove_all() {
    // On the older API an AppInst's key names its cloudlet, so one name can stand on two sites:
    // each runner gets a second AppInst of its App on Berlin, as a leftover there would be.
    let sim = SimConfig {
        api: edge_connect_sim::ApiGeneration::Gen2,
        ..two_zones()
    };
    let w = World::with_sim(sim, Site::Cloudlet, "");
    let image = "ghcr.io/example-org/garm-runner:2.330.0";
    for (controller, name) in [(CONTROLLER, "garm-two-a"), (OTHER, "garm-two-b")] {
        let r = w.garm_as(
            controller,
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            Some(&bootstrap(name, image)),
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let version = w.app(name)["key"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        crate::scale::another_app_inst(&w, name, &version, name, "Berlin");
    }
    let both = |n: &str| vec![n.to_string(), n.to_string()];
    assert_eq!(
        w.app_inst_names(),
        [both("garm-two-a"), both("garm-two-b")].concat()
    );
    let r = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-two-a")],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        on_edge_connect(&w),
        (vec!["garm-two-b".to_string()], both("garm-two-b"))
    );
    let r = w.garm_as(OTHER, "RemoveAllInstances", &[], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(on_edge_connect(&w), nothing());
}

#[test]
fn a_cli_create_whose_cleanup_is_refused_names_a_delete_that_removes_what_is_left() {
    let w = World::new();
    w.sim
        .inject(Fault::stream_error("CreateAppInst", 2, "boom"));
    // The rollback's DeleteApp and the command's own DeleteInstance after it.
    w.sim.inject(Fault::http_status("DeleteApp", 400).times(2));
    let file = w.dir.path().join("bootstrap.json");
    std::fs::write(
        &file,
        bootstrap("garm-left-e", "ghcr.io/example-org/garm-runner:2.330.0"),
    )
    .unwrap();
    let person = |args: &[&str]| Run::from(w.person(CONTROLLER).args(args).output().unwrap());
    let r = person(&["create", "--bootstrap", &file.display().to_string()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let last = r.stderr.lines().last().unwrap_or_default();
    assert!(
        last.ends_with("; left on Edge Connect: App garm-left-e (not deleted: Edge Connect DeleteApp (HTTP 400): Bad Request); remove it with: delete garm-left-e"),
        "{last}"
    );
    assert_eq!(
        on_edge_connect(&w),
        (vec!["garm-left-e".to_string()], Vec::new())
    );
    let r = person(&["delete", "garm-left-e"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(on_edge_connect(&w), nothing());
}
