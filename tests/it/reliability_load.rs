//! Load: many provider processes at once, as GARM runs them, sharing one token cache and one log.

use crate::support::*;

#[test]
fn fifty_concurrent_creates_then_fifty_concurrent_deletes() {
    let w = World::new();
    let names: Vec<String> = (0..50).map(|i| format!("garm-load{i:03}")).collect();
    let creates: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| s.spawn(|| w.create("bootstrap-github-jit.json", n, POOL, &[])))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    for (name, r) in names.iter().zip(&creates) {
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert_eq!(r.json()["name"], name.as_str());
    }
    assert_eq!(w.app_names(), names);
    assert_eq!(w.app_inst_names(), names);
    let list = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(list.json().as_array().map(Vec::len), Some(50));

    let deletes: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| s.spawn(|| w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", n)], None)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    for (name, r) in names.iter().zip(&deletes) {
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    }
    assert!(w.app_names().is_empty(), "simulator ends empty");
    assert!(w.app_inst_names().is_empty());

    // Whole lines only: every line of the shared log starts with a timestamp and ends cleanly.
    let log = w.log_text();
    assert!(log.lines().count() > 200, "the log holds the runs");
    for line in log.lines() {
        assert!(
            line.starts_with("20") && line.contains(" garm{"),
            "torn or foreign line: {line:?}"
        );
    }
    // The token cache turns 101 processes into very few logins (a handful may race the first one).
    assert!(
        w.sim.logins() <= 10,
        "{} logins for 101 processes",
        w.sim.logins()
    );
    let all: Vec<&Run> = creates.iter().chain(&deletes).collect();
    w.assert_no_secrets(&all);
}

#[test]
fn the_token_cache_saves_logins_and_is_private() {
    let w = World::new();
    for _ in 0..3 {
        let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    assert_eq!(w.sim.logins(), 1);
    let dir = w.dir.path().join("token-cache");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files[0].starts_with("token-") && files[0].ends_with(".json"),
        "{files:?}"
    );
    assert!(
        files[1].starts_with("token-") && files[1].ends_with(".lock"),
        "{files:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in &files {
            let mode = std::fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
        let dir_mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
    }
}
