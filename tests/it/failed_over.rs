//! A runner that failed over past a site whose CRM holds its first AppInst (issue 27's second
//! AppInst name, `<name>-<k>`; docs/architecture.md, "Failover"): every command meets the
//! runner's AppInsts in one order, the one that runs first, so the running AppInst is stopped
//! or removed at once, and a held one is named with the time its CRM lets it go (issue 34). An
//! AppInst still being created is named by what is known of it: its state and the latest time.

use std::time::Duration;

use crate::support::*;

/// Munich's CRM runs on the edge and places no pod: it holds each AppInst `Creating` far
/// beyond any command here; Berlin runs the runner.
fn world() -> World {
    World::with_sim(
        munich_holds(Duration::from_secs(3600), true),
        Site::Zone,
        "start_failure_grace_secs = 1\nrequest_timeout_secs = 10\noperation_timeout_secs = 40",
    )
}

fn held(name: &str) -> (String, String, String) {
    (name.into(), "Munich".into(), "Creating".into())
}

fn held_line(name: &str) -> String {
    format!("AppInst {name} on TelekomOP/Munich is Creating: its create is still running, and Edge Connect deletes it only once that has ended, at the latest by ")
}

/// Three runners that failed over from Munich to Berlin (`-2`) and one on Berlin alone.
fn failed_over_runners(w: &World) {
    std::thread::scope(|s| {
        let runs: Vec<_> = [
            ("garm-fa", true),
            ("garm-fb", true),
            ("garm-fc", true),
            ("garm-fd", false),
        ]
        .into_iter()
        .map(|(name, both)| {
            let sites: &[&str] = if both {
                &["Munich", "Berlin"]
            } else {
                &["Berlin"]
            };
            s.spawn(move || (name, w.create_image(name, IMAGE, Some(zones(sites)))))
        })
        .collect();
        for run in runs {
            let (name, r) = run.join().unwrap();
            assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        }
    });
    let mut expected = Vec::new();
    for n in ["garm-fa", "garm-fb", "garm-fc"] {
        expected.push(held(n));
        expected.push((format!("{n}-2"), "Berlin".into(), "Ready".into()));
    }
    expected.push(("garm-fd".into(), "Berlin".into(), "Ready".into()));
    expected.sort();
    assert_eq!(w.app_insts_where(), expected);
}

#[test]
fn stop_delete_and_remove_all_act_on_the_running_appinst_at_once_and_name_the_held_one() {
    let w = world();
    failed_over_runners(&w);

    // GARM's StopInstance: the runner on Berlin stopped at once, the held one named.
    let stop = w.garm("StopInstance", &[("GARM_INSTANCE_ID", "garm-fa")], None);
    assert_eq!(stop.code, 1, "{}", stop.stdout);
    let line = stop.stderr.trim_end();
    assert!(
        line.starts_with(&held_line("garm-fa"))
            && line.ends_with(
                " UTC (the site's CRM waits at most 15 minutes for its pod); stopping garm-fa again after that stops it"
            ),
        "{line}"
    );
    assert!(
        !w.app_insts_where().iter().any(|i| i.0 == "garm-fa-2"),
        "{:?}",
        w.app_insts_where()
    );
    assert!(w.app_insts_where().contains(&held("garm-fa")));

    // A person's delete removes the running AppInst first, then waits for the held one.
    let mut delete = start(w.person(CONTROLLER).args(["delete", "garm-fb"]), None);
    let needle = "… AppInst garm-fb on TelekomOP/Munich is Creating: its create is still running";
    let seen = signal_at_line(&mut delete, needle, libc::SIGKILL);
    delete.wait().ok();
    let seen = seen.join().expect("stderr lines");
    // The line is written once the running AppInst's delete has returned, before the wait.
    let now = w.app_insts_where();
    assert!(
        seen.iter().any(|l| l.contains(" UTC (the site's CRM waits at most 15 minutes for its pod); waiting, at most edge_connect.operation_timeout_secs=40s")),
        "{seen:?}"
    );
    assert!(!now.iter().any(|i| i.0 == "garm-fb-2"), "{now:?} {seen:?}");
    assert!(now.contains(&held("garm-fb")), "{now:?}");

    // RemoveAll: everything that can go goes at once; each held AppInst keeps its App.
    let all = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(all.code, 1, "{}", all.stdout);
    let line = all.stderr.trim_end();
    assert!(
        line.starts_with("3 of 4 instances could not be removed; first: garm-f")
            && line.contains(" UTC (the site's CRM waits at most 15 minutes for its pod)")
            && line
                .ends_with("; everything else was removed, and RemoveAll after that removes them"),
        "{line}"
    );
    assert_eq!(
        w.app_insts_where(),
        [held("garm-fa"), held("garm-fb"), held("garm-fc")]
    );
    assert_eq!(w.app_names(), ["garm-fa", "garm-fb", "garm-fc"]);
    w.assert_no_secrets(&[&stop, &all]);
}

#[test]
fn a_delete_instance_of_an_appinst_still_being_created_says_only_what_is_known() {
    // A central CRM whose create takes a few seconds: no pod wait holds it, the create does.
    let w = World::with_sim(
        edge_connect_sim::SimConfig {
            create_delay: Duration::from_secs(5),
            ..edge_connect_sim::SimConfig::default()
        },
        Site::Zone,
        "",
    );
    let bootstrap = fixture_with("bootstrap-github-jit.json", "garm-slow", POOL);
    let create = w.spawn_garm("CreateInstance", &[("GARM_POOL_ID", POOL)], &bootstrap);
    w.until_an_app_inst();
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", "garm-slow")], None);
    assert_eq!(d.code, 1, "{}", d.stdout);
    let line = d.stderr.trim_end();
    assert!(
        line.starts_with("AppInst garm-slow on TelekomOP/Munich is Create")
            && line.contains(": its create is still running, and Edge Connect deletes it only once that has ended, at the latest by ")
            && line.ends_with(" UTC (the site's CRM waits at most 15 minutes for its pod); GARM's next DeleteInstance after that removes it"),
        "{line}"
    );
    let created = Run::from(create.wait_with_output().unwrap());
    assert_eq!(created.code, 0, "{}", created.stderr);
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", "garm-slow")], None);
    assert_eq!(d.code, 0, "{}", d.stderr);
    w.assert_nothing_left();
}

#[test]
fn a_failed_create_whose_cleanup_is_refused_asks_once_and_says_the_refusal_once() {
    // The site fails the AppInst and keeps it in CreateError (B13); the controller refuses
    // every delete of it: the create's one cleanup asks once, and the line names it once.
    let w = World::new();
    w.sim.inject(edge_connect_sim::Fault::create_error_left(
        1,
        "no room left",
    ));
    let refused = edge_connect_sim::FaultKind::HttpStatus {
        status: 400,
        message: Some("delete refused by policy".to_string()),
    };
    w.sim
        .inject(edge_connect_sim::Fault::new("DeleteAppInst", refused).times(100));
    let r = w.create("bootstrap-github-jit.json", "garm-refused", POOL, &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let line = r.stderr.trim_end();
    assert_eq!(w.calls("DeleteAppInst"), 1, "{line}");
    assert_eq!(
        line.matches("delete refused by policy").count(),
        1,
        "{line}"
    );
    assert_eq!(w.app_inst_names(), ["garm-refused"]);
}
