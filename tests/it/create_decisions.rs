//! CreateInstance decides from the answers in hand (issue 20 items 1, 3, 10; issue 21 item 2):
//! nothing learnt about a server outlives the process, an answer that contradicts the first
//! decision is re-decided once, a stream that ends without its result is settled by
//! ShowAppInst, and a site that fails the AppInst (CreateError, capacity) hands over to the
//! next one. Each test runs the binary as GARM does and looks at what exists afterwards.

use edge_connect_sim::{ApiGeneration, Fault, SimConfig};
use sha2::{Digest, Sha256};

use crate::hardening_client::{one_line, reply, token_reply, Fake, Setup, CTRL, LOGIN};
use crate::support::*;

/// CreateInstance with the pool's sites in `extra_specs`.
fn create_on(w: &World, name: &str, extra_specs: serde_json::Value) -> Run {
    w.create_edited(name, |v| v["extra_specs"] = extra_specs)
}

fn munich_then_berlin() -> serde_json::Value {
    serde_json::json!({
        "zones": [{"organization": "TelekomOP", "name": "Munich"}, {"organization": "TelekomOP", "name": "Berlin"}],
        "placement_strategy": "failover"
    })
}

fn check(w: &World) -> (i32, String) {
    let r = w.cli(&["check"]);
    (r.code, r.stdout)
}

#[test]
fn facts_files_of_an_older_release_change_nothing() {
    // What an older release wrote beside the token after one glitch: "Gen2, drops env_vars".
    let w = World::with(ApiGeneration::Gen3, Site::Cloudlet, "");
    let cache = w.dir.path().join("token-cache");
    std::fs::create_dir(&cache).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let url = w.sim.url();
    let digest = Sha256::digest(url.trim_end_matches('/').as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    let facts = cache.join(format!("facts-{hex}.json"));
    let stale = format!(
        r#"{{"generation":"gen2","keeps_env_vars":false,"learnt_at":{}}}"#,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    );
    write_mode(&facts, &stale, 0o600);

    let r = w.create("bootstrap-github-jit.json", "garm-facts1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let inst = &w.sim.app_insts()[0];
    assert_eq!(inst["zone_key"]["name"], "Munich", "{inst}");
    // The old file is neither read nor rewritten; the cache holds tokens only.
    assert_eq!(std::fs::read_to_string(&facts).unwrap(), stale);
    let written: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != &format!("facts-{hex}.json"))
        .collect();
    assert!(
        written.iter().all(|n| n.starts_with("token-")),
        "{written:?}"
    );
}

#[test]
fn a_gen3_cloudlet_without_a_zone_is_re_decided_once_and_check_says_the_same() {
    // Zones exist, but the configured cloudlet belongs to none: ShowCloudlet shows no zone, so
    // the cloudlet key is tried, the controller answers `Zone not specified`, the cloudlet is
    // read again, and the site is refused with what the server says now.
    let w = World::with_sim(
        SimConfig {
            zones: vec![("TelekomOP".into(), "Berlin".into())],
            cloudlets: vec![
                ("TelekomOP".into(), "Munich".into()),
                ("TelekomOP".into(), "Berlin".into()),
            ],
            ..SimConfig::default()
        },
        Site::Cloudlet,
        "",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-nozone1", POOL, &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let expected = "cloudlet TelekomOP/Munich belongs to no zone, and this Edge Connect places AppInsts only through zones: ask its operator to assign the cloudlet to a zone, or configure [edge_connect.zone]";
    assert!(r.stderr.contains(expected), "{}", r.stderr);
    assert_eq!(w.calls("CreateAppInst"), 1);
    assert_eq!(
        w.calls("ShowCloudlet"),
        2,
        "read again after the contradiction"
    );
    w.assert_nothing_left();
    // `check` comes to the same conclusion with the same words: never green while creates fail.
    let (code, out) = check(&w);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l == format!("✗ cloudlet TelekomOP/Munich: {expected}")),
        "{out}"
    );
}

/// A controller whose CreateAppInst answers `create_app_inst` and whose ShowAppInst answers
/// `show(n)` for the n-th call.
fn controller(
    create_app_inst: &'static str,
    show: fn(usize) -> &'static str,
) -> impl Fn(&str, usize) -> Vec<crate::hardening_client::Step> {
    move |path, nth| match path {
        LOGIN => token_reply(),
        p if p == format!("{CTRL}CreateAppInst") => reply("200 OK", create_app_inst),
        p if p == format!("{CTRL}ShowAppInst") => reply("200 OK", show(nth)),
        p if p == format!("{CTRL}CreateApp") || p == format!("{CTRL}DeleteApp") => {
            reply("200 OK", "{}")
        }
        _ => reply("200 OK", ""),
    }
}

const APPINST: &str = r#"{"key":{"name":"hardened-runner","organization":"edp-developer-framework"},"app_key":{"organization":"edp-developer-framework","name":"hardened-runner","version":"1"},"zone_key":{"organization":"TelekomOP","name":"Munich"}"#;

#[test]
fn a_create_stream_that_ends_without_its_result_is_decided_by_show_app_inst() {
    // Nothing exists: not running, but a failure that leaves nothing behind.
    for body in ["{\"data\":{\"message\":\"Creating\"}}\n", ""] {
        let fake = Fake::start(controller(body, |_| ""));
        let setup = Setup::new(&fake.url(), "");
        let r = setup.garm("CreateInstance", &[]);
        assert_eq!(r.code, 1, "{body:?}: {}", r.stdout);
        assert_eq!(r.stdout, "");
        assert!(
            one_line(&r).contains("AppInst hardened-runner was not created"),
            "{body:?}: {}",
            r.stderr
        );
        assert_eq!(
            fake.count(&format!("{CTRL}CreateAppInst")),
            1,
            "never twice"
        );
        assert_eq!(
            fake.count(&format!("{CTRL}DeleteApp")),
            1,
            "the App is removed"
        );
        setup.assert_no_secrets(&[&r]);
    }
    // Still creating, then Ready: running, after waiting within the deadline.
    let fake = Fake::start(controller("", |nth| {
        if nth == 1 {
            Box::leak(format!("{{\"data\":{APPINST},\"state\":\"Creating\"}}}}\n").into_boxed_str())
        } else {
            Box::leak(format!("{{\"data\":{APPINST},\"state\":\"Ready\"}}}}\n").into_boxed_str())
        }
    }));
    let setup = Setup::new(&fake.url(), "");
    let r = setup.garm("CreateInstance", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["status"], "running");
    assert_eq!(fake.count(&format!("{CTRL}ShowAppInst")), 2);
    assert_eq!(fake.count(&format!("{CTRL}DeleteApp")), 0);
}

#[test]
fn a_create_error_on_one_site_moves_to_the_next() {
    let w = World::with_sim(two_zones(), Site::Zone, "");
    w.sim.inject(Fault::stream_error(
        "CreateAppInst",
        2,
        "Create App Inst failed: no space left on device",
    ));
    let r = create_on(&w, "garm-ce1", munich_then_berlin());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.calls("CreateAppInst"), 2);
    let insts = w.sim.app_insts();
    assert_eq!(insts.len(), 1, "nothing left on Munich");
    assert_eq!(insts[0]["zone_key"]["name"], "Berlin");

    // Every site fails: one line naming each site and why; nothing left.
    w.sim.inject(
        Fault::stream_error(
            "CreateAppInst",
            2,
            "Create App Inst failed: no space left on device",
        )
        .times(2),
    );
    let r = create_on(&w, "garm-ce2", munich_then_berlin());
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_has(one_line(&r), "no site could take the AppInst (2 tried): zone TelekomOP/Munich: Create App Inst failed: no space left on device; zone TelekomOP/Berlin: Create App Inst failed: no space left on device");
    assert!(!w.app_names().contains(&"garm-ce2".to_string()));
    assert_eq!(w.app_inst_names(), vec!["garm-ce1"]);
}

#[test]
fn full_sites_are_named_each_with_its_refusal() {
    let w = World::with_sim(two_zones(), Site::Zone, "");
    w.sim.set_capacity("TelekomOP", "Munich", Some(0));
    w.sim.set_capacity("TelekomOP", "Berlin", Some(0));
    let r = create_on(&w, "garm-full1", munich_then_berlin());
    assert_eq!(r.code, 1, "{}", r.stdout);
    let line = one_line(&r);
    assert!(
        line.contains("no site could take the AppInst (2 tried): zone TelekomOP/Munich: ")
            && line.contains("; zone TelekomOP/Berlin: "),
        "{line}"
    );
    w.assert_nothing_left();
}

#[test]
fn requests_per_create_with_a_cached_token() {
    for (api, site, expected) in [
        (ApiGeneration::Gen3, Site::Zone, 3),
        (ApiGeneration::Gen3, Site::Cloudlet, 4),
        (ApiGeneration::Gen2, Site::Cloudlet, 5),
    ] {
        let w = World::with(api, site, "");
        let first = w.create("bootstrap-github-jit.json", "garm-count1", POOL, &[]);
        assert_eq!(first.code, 0, "{}", first.stderr);
        let before = w.sim.request_log().len();
        let r = w.create("bootstrap-github-jit.json", "garm-count2", POOL, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let rpcs: Vec<String> = w.sim.request_log()[before..]
            .iter()
            .map(|e| e.rpc.clone())
            .collect();
        assert_eq!(rpcs.len(), expected, "{api:?} {site:?}: {rpcs:?}");
    }
}

#[test]
fn the_seed_cloudlet_reaches_a_zone_of_another_name_on_gen3() {
    // Real zones need not share their cloudlet's name: ShowCloudlet names the zone.
    let w = World::with_sim(
        SimConfig {
            zones: vec![("TelekomOP".into(), "eu-south-1".into())],
            cloudlets: vec![("TelekomOP".into(), "Munich".into())],
            ..SimConfig::default()
        },
        Site::Cloudlet,
        "",
    );
    let r = w.create("bootstrap-github-jit.json", "garm-zone1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let inst = &w.sim.app_insts()[0];
    assert_eq!(inst["zone_key"]["name"], "eu-south-1", "{inst}");
    assert_eq!(inst["cloudlet_key"]["name"], "Munich", "{inst}");
    assert_eq!(w.calls("CreateAppInst"), 1);
    let (code, out) = check(&w);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines().any(|l| l.starts_with(
            "✓ cloudlet TelekomOP/Munich: exists; addressed as zone_key TelekomOP/eu-south-1"
        )),
        "{out}"
    );
}
