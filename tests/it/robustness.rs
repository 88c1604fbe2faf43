//! Hostile files, inputs and streams, and the operator's view of each failure: the built binary
//! run as GARM (bare environment, stdin, exit codes) or as a person would, against the
//! simulator on 127.0.0.1. Each test asserts the exact outcome: exit code, the exact stderr
//! line, files on disk and what is left on the simulator.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use edge_connect_sim::{Fault, FaultKind, SimConfig};
use serde_json::json;

use crate::support::*;

/// The CLI against a world's config, as a person runs it.
fn cli(w: &World, args: &[&str]) -> Run {
    let mut cmd = w.person(CONTROLLER);
    run(cmd.args(args), None)
}

/// The config without its `log_file` line: warnings have nowhere to go but stderr.
fn without_log_file(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("log_file"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn mkfifo(path: &Path, mode: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

// 12.2 ------------------------------------------------------------------------------------------

#[test]
fn a_secret_of_the_wrong_type_is_named_never_echoed() {
    let w = World::new();
    let creds = w.dir.path().join("credentials.toml");
    write_mode(
        &creds,
        "username = \"garm\"\npassword = 424242424242\n",
        0o600,
    );
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "credentials_file {}: line 2: password: expected a string for a secret, got an integer (value not shown)\n",
            creds.display()
        )
    );
    assert!(!w.log_text().contains("424242424242"));
    w.write_credentials(PASSWORD, 0o600);

    // proxy_config as a string in the bootstrap (GARM's stdin) and inside its extra specs.
    let proxy = "http://proxy-user:proxy-pass@proxy.example:3128";
    let mut v: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-proxy",
        POOL,
    ))
    .unwrap();
    v["proxy_config"] = proxy.into();
    let first = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    let r = &first;
    assert_eq!(r.code, 1);
    let line = r.stderr.trim_end();
    assert!(
        line.starts_with(
            "invalid bootstrap params: `proxy_config`: expected a table / object, got a string at line 1 column "
        ),
        "{line}"
    );
    assert_eq!(r.stderr.lines().count(), 1);

    v.as_object_mut().unwrap().remove("proxy_config");
    v["extra_specs"] = json!({"zones": proxy});
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "invalid extra_specs: zones: expected a list, got a string\n"
    );
    w.assert_no_secrets(&[&first, &r]);
    assert!(w.app_names().is_empty());
}

// 12.3 ------------------------------------------------------------------------------------------

#[test]
fn the_log_file_is_private_never_followed_and_only_a_regular_file() {
    let w = World::new();
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "[]", "")
    );
    assert_eq!(mode_of(&w.log), 0o600, "a new log file is created 0600");

    // A planted symlink is not followed: the target stays untouched, the command still runs,
    // and a failure's one stderr line says why there is no log.
    std::fs::remove_file(&w.log).unwrap();
    let target = w.dir.path().join("elsewhere.txt");
    std::fs::write(&target, "").unwrap();
    std::os::unix::fs::symlink(&target, &w.log).unwrap();
    w.assert_log_refused("it is a symbolic link, which is not followed (give the real path)");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");

    // A FIFO would block the open forever: refused at once.
    std::fs::remove_file(&w.log).unwrap();
    mkfifo(&w.log, 0o600);
    let r = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-nope")], None);
    assert_eq!(r.code, 30);
    assert_eq!(
        r.stderr,
        format!(
            "instance garm-nope not found (also: cannot open log_file {}: not a regular file (a FIFO))\n",
            w.log.display()
        )
    );
}

// 12.8 ------------------------------------------------------------------------------------------

#[test]
fn create_against_an_unreachable_edge_connect_fails_fast_and_rolls_nothing_back() {
    let w = World::new();
    let (_reserved, closed) = hostile_server::refusing_port();
    w.edit_config(|t| {
        in_edge_connect(
            &t.replace(&w.sim.url(), &format!("http://127.0.0.1:{closed}")),
            "operation_timeout_secs = 20\nrequest_timeout_secs = 5\nconnect_retry_secs = 1",
        )
    });
    let started = Instant::now();
    let r = w.create("bootstrap-github-jit.json", "garm-unreachable", POOL, &[]);
    let took = started.elapsed();
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert_starts(&r.stderr, "Edge Connect login: cannot connect");
    assert!(!r.stderr.contains("cleanup"), "{}", r.stderr);
    assert!(!w.log_text().contains("rolled back"), "{}", w.log_text());
    // It ended at the connect bound, not at the deadline plus the rollback grace (the old
    // behaviour): the line says which bound ended it.
    assert!(
        r.stderr.contains("edge_connect.connect_retry_secs"),
        "took {took:?}: {}",
        r.stderr
    );
}

// 12.11 -----------------------------------------------------------------------------------------

#[test]
fn durations_are_bounded_and_an_unwritable_stderr_keeps_the_exit_code() {
    let w = World::new();
    w.edit_config(|t| in_edge_connect(t, "operation_timeout_secs = 9223372036854775807"));
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "config {}: edge_connect.operation_timeout_secs: 9223372036854775807 is more than the maximum of 86400 (24 hours)\n",
            w.config.display()
        )
    );

    let w = World::new();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    let garm = |command: &str, extra: &[(&str, &str)]| {
        provider_command(&garm_env(command, &w.config, extra))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(full())
            .status()
            .expect("runs")
            .code()
    };
    assert_eq!(
        garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-nope")]),
        Some(30)
    );
    assert_eq!(garm("Frobnicate", &[]), Some(1));
    // stdout that cannot be written is a failure (exit 1), not a panic.
    let status = command()
        .env("GARM_COMMAND", "GetVersion")
        .stdout(full())
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    let status = w
        .person(CONTROLLER)
        .args(["get", "garm-nope"])
        .stderr(full())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(30));
}

// 12.12 -----------------------------------------------------------------------------------------

#[test]
fn config_credentials_and_bootstrap_must_be_regular_files_of_bounded_size() {
    let w = World::new();
    let fifo = w.dir.path().join("fifo.toml");
    mkfifo(&fifo, 0o600);
    let fifo_s = fifo.display().to_string();
    let list = |config: &str| {
        let vars = garm_env(
            "ListInstances",
            Path::new(config),
            &[("GARM_POOL_ID", POOL)],
        );
        run_binary(&vars, None)
    };
    let r = list(&fifo_s);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("cannot read config file {fifo_s}: not a regular file (a FIFO)\n")
    );
    let r = list("/dev/zero");
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "cannot read config file /dev/zero: not a regular file (a character device)\n"
    );
    let big = w.dir.path().join("big.toml");
    std::fs::write(&big, "#".repeat(2 * 1024 * 1024)).unwrap();
    let r = list(&big.display().to_string());
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "cannot read config file {}: larger than 1048576 bytes; not a file this provider reads\n",
            big.display()
        )
    );

    let creds = w.dir.path().join("credentials.toml");
    std::fs::remove_file(&creds).unwrap();
    mkfifo(&creds, 0o600);
    let r = list(&w.config.display().to_string());
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "cannot read credentials_file {}: not a regular file (a FIFO)\n",
            creds.display()
        )
    );

    let r = cli(&w, &["create", "--bootstrap", &fifo_s]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("error: cannot read bootstrap file {fifo_s}: not a regular file (a FIFO)\n")
    );
    assert!(w.sim.request_log().is_empty(), "nothing was sent");
}

// 12.13 -----------------------------------------------------------------------------------------

#[test]
fn what_is_echoed_is_escaped_and_cut_and_stderr_stays_one_line() {
    let w = World::new();
    let long = format!("Frob\n\x1b[31m{}", "x".repeat(100_000));
    let r = w.garm(&long, &[], None);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "unknown command: GARM_COMMAND=Frob\\n\\u{{1b}}[31m{}… (100010 bytes in all) (GARM's commands: CreateInstance, DeleteInstance, GetInstance, ListInstances, RemoveAllInstances, StartInstance, StopInstance, GetVersion, GetSupportedInterfaceVersions, ValidatePoolInfo, GetConfigJSONSchema, GetExtraSpecsJSONSchema)\n",
            "x".repeat(54)
        )
    );

    // Not UTF-8 is said as such, not "not set".
    use std::os::unix::ffi::OsStringExt;
    let status = provider_command(&garm_env("GetInstance", &w.config, &[]))
        .env(
            "GARM_INSTANCE_ID",
            std::ffi::OsString::from_vec(vec![b'g', 0xff, 0xfe]),
        )
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&status.stderr),
        "GARM_INSTANCE_ID is not valid UTF-8\n"
    );

    // An instance id with a newline and a forged log line: one stderr line, bounded, and the
    // log holds no line the id made up.
    let forged = format!(
        "garm-x\n2026-01-01T00:00:00Z ERROR forged{}",
        "y".repeat(10_000)
    );
    let r = w.garm("GetInstance", &[("GARM_INSTANCE_ID", &forged)], None);
    assert_eq!(r.code, 30);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("instance garm-x\\n2026-01-01T00:00:00Z ERROR forgedyyy"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.chars().count() < 2100, "{}", r.stderr.len());
    let log = w.log_text();
    assert!(log.contains("garm-x\\n2026-01-01T00:00:00Z ERROR forged"));
    assert!(
        !log.lines().any(|l| l.starts_with("2026-01-01T00:00:00Z")),
        "a forged line: {log}"
    );
}

// 13.6 ------------------------------------------------------------------------------------------

#[test]
fn garm_mode_stderr_is_one_line_even_without_a_log_file() {
    let w = World::new();
    w.edit_config(without_log_file);
    let r = w.create_edited("garm-atlantis", |v| {
        v["extra_specs"] = json!({"zones": [{"organization": "TelekomOP", "name": "Atlantis"}]});
    });
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(!r.stderr.contains("WARN"), "{}", r.stderr);
    assert!(!r.stderr.contains("next"), "{}", r.stderr);
    assert!(r.stderr.contains("zones: TelekomOP/Munich"), "{}", r.stderr);
    assert!(w.app_names().is_empty());
}

// 13.7 ------------------------------------------------------------------------------------------

#[test]
fn cli_delete_says_when_there_was_nothing_to_delete() {
    let w = World::new();
    let r = cli(&w, &["delete", "garm-nope"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert_eq!(
        r.stderr,
        "nothing to delete: garm-nope (no runner of this controller has that name)\n"
    );

    // Another controller's runner is not ours to delete, and not reported deleted.
    let other = "00000000-0000-4000-8000-000000000000";
    let bootstrap = fixture_with("bootstrap-github-jit.json", "garm-theirs", POOL);
    let made = w.garm_as(
        other,
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&bootstrap),
    );
    assert_eq!(made.code, 0, "{}", made.stderr);
    let r = cli(&w, &["delete", "garm-theirs"]);
    assert_eq!(r.code, 0);
    assert_eq!(
        r.stderr,
        "nothing to delete: garm-theirs (no runner of this controller has that name)\n"
    );
    assert_eq!(w.app_names(), vec!["garm-theirs".to_string()]);

    let made = w.create("bootstrap-github-jit.json", "garm-ours", POOL, &[]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    let r = cli(&w, &["delete", "garm-ours"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let last = r.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("✓ deleted garm-ours (")
            && last.ends_with(" Edge Connect requests, 0 login(s))"),
        "{}",
        r.stderr
    );
    assert_eq!(w.app_names(), vec!["garm-theirs".to_string()]);
}

// 13.8 ------------------------------------------------------------------------------------------

#[test]
fn relative_paths_in_the_config_are_relative_to_its_directory() {
    let w = World::new();
    let dir = w.dir.path().display().to_string();
    w.edit_config(|t| t.replace(&format!("{dir}/"), ""));
    let text = std::fs::read_to_string(&w.config).unwrap();
    assert!(
        text.contains("credentials_file = \"credentials.toml\""),
        "{text}"
    );
    std::fs::remove_file(&w.log).ok();
    // GARM starts the provider in its own working directory (here `/`).
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "[]", "")
    );
    assert!(w.log.exists(), "the log is next to the config");
    assert!(w.dir.path().join("token-cache").is_dir());

    w.edit_config(|t| t.replace("\"credentials.toml\"", "\"missing.toml\""));
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "cannot read credentials_file {}: No such file or directory (os error 2)\n",
            w.dir.path().join("missing.toml").display()
        )
    );
}

// 13.9 ------------------------------------------------------------------------------------------

#[test]
fn parse_errors_say_the_key_and_the_expected_form_in_words() {
    let w = World::new();
    let original = std::fs::read_to_string(&w.config).unwrap();
    let list = || w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    let config = w.config.display().to_string();

    w.edit_config(|t| in_edge_connect(t, "request_timeout_secs = \"60s\""));
    let line = std::fs::read_to_string(&w.config)
        .unwrap()
        .lines()
        .position(|l| l.starts_with("request_timeout_secs"))
        .unwrap()
        + 1;
    let r = list();
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("config {config}: line {line}: edge_connect.request_timeout_secs: expected whole seconds, got the string \"60s\"\n")
    );

    std::fs::write(&w.config, &original).unwrap();
    let url = w.sim.url();
    w.edit_config(|t| t.replace(&url, &format!("{url}/api/v1")));
    let r = list();
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("config {config}: edge_connect.url: give the base URL without /api/v1, the provider adds it (edge_connect.url = \"{url}\")\n")
    );

    std::fs::write(&w.config, &original).unwrap();
    let creds = w.dir.path().join("credentials.toml");
    write_mode(&creds, "username = \"garm\"\n", 0o600);
    let r = list();
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("no Edge Connect password: credentials_file {} has no `password` and EDP_EDGE_CONNECT_PASSWORD is not set\n", creds.display())
    );

    let bootstrap = w.dir.path().join("bootstrap.yaml");
    std::fs::write(&bootstrap, "name: garm-yaml\n").unwrap();
    let r = cli(
        &w,
        &["create", "--bootstrap", &bootstrap.display().to_string()],
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!("error: bootstrap file {} is not JSON (line 1 column 2); it must be GARM's bootstrap JSON, see examples/\n", bootstrap.display())
    );
    assert!(w.sim.request_log().is_empty());
}

// 13.10 -----------------------------------------------------------------------------------------

#[test]
fn a_closed_stdout_ends_the_cli_quietly() {
    for args in [&["schema", "config"][..], &["version"][..]] {
        let mut child = command()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -0`: the reader is gone before the first byte.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

/// A CLI `create` of `garm-interrupted` on a simulator whose creates take 3 s, started.
fn start_cli_create(w: &World) -> std::process::Child {
    let bootstrap = w.dir.path().join("bootstrap.json");
    std::fs::write(
        &bootstrap,
        fixture_with("bootstrap-github-jit.json", "garm-interrupted", POOL),
    )
    .unwrap();
    spawn_cli(
        w,
        &["create", "--bootstrap", &bootstrap.display().to_string()],
    )
}

fn slow_creates() -> World {
    let sim = SimConfig {
        create_delay: Duration::from_secs(3),
        ..SimConfig::default()
    };
    World::with_sim(sim, Site::Zone, "")
}

#[test]
fn ctrl_c_during_a_cli_create_removes_what_was_made() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let w = slow_creates();
        let mut child = start_cli_create(&w);
        w.until_an_app_inst();
        signal(&child, sig);
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{stderr}");
        assert_eq!(
            stderr.lines().last(),
            Some("error: interrupted; nothing of garm-interrupted was left behind"),
            "{stderr}"
        );
        w.assert_nothing_left();
    }
}

#[test]
fn a_signal_while_create_app_is_in_flight_removes_the_app_the_controller_makes_after_it() {
    // The controller finishes a CreateApp whose client has gone (issue 34): the cleanup looks
    // again until the answer would have come, and removes the App that appeared.
    let w = World::with_sim(SimConfig::default(), Site::Zone, "request_timeout_secs = 6");
    w.sim
        .inject(Fault::new("CreateApp", FaultKind::Slow { delay_ms: 2000 }));
    let child = start_cli_create(&w);
    // The fault is taken when the CreateApp reaches the controller.
    wait_until("a CreateApp", || w.sim.pending_faults().is_empty());
    signal(&child, libc::SIGTERM);
    let r = Run::from(child.wait_with_output().unwrap());
    assert_eq!(r.code, 130, "{}", r.stderr);
    assert_eq!(
        r.stderr.lines().last(),
        Some("error: interrupted; nothing of garm-interrupted was left behind"),
        "{}",
        r.stderr
    );
    // The controller logs a call once it has answered it.
    wait_until("the CreateApp's end", || w.calls("CreateApp") > 0);
    w.assert_nothing_left();
}

#[test]
fn a_create_interrupted_twice_names_a_delete_that_removes_what_it_left() {
    let w = slow_creates();
    let mut child = start_cli_create(&w);
    // The cleanup waits for the AppInst the site still creates; the second signal ends it.
    let stderr = signal_at_line(&mut child, "waiting, at most", libc::SIGINT);
    w.until_an_app_inst();
    signal(&child, libc::SIGINT);
    let r = Run::from(child.wait_with_output().unwrap());
    let stderr = stderr.join().unwrap();
    assert_eq!(r.code, 130, "{stderr:?}");
    assert_eq!(
        stderr.last().map(String::as_str),
        Some("error: interrupted; garm-interrupted may be left behind (interrupted again); remove it with: delete garm-interrupted"),
        "{stderr:?}"
    );
    assert_eq!(w.app_names(), vec!["garm-interrupted"]);
    // The advice, with the config and controller the create was given.
    let delete = cli(&w, &["delete", "garm-interrupted"]);
    assert_eq!(delete.code, 0, "{}", delete.stderr);
    assert!(
        delete
            .stderr
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("✓ deleted garm-interrupted (")),
        "{}",
        delete.stderr
    );
    w.assert_nothing_left();
}

/// [`cli`], started and not waited for (to signal it).
fn spawn_cli(w: &World, args: &[&str]) -> std::process::Child {
    start(w.person(CONTROLLER).args(args), None)
}

#[test]
fn a_start_stopped_by_a_signal_stops_the_runner_again_or_names_the_stop_that_does() {
    for twice in [false, true] {
        let w = slow_creates();
        let r = w.create("bootstrap-github-jit.json", "garm-restarted", POOL, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let r = cli(&w, &["stop", "garm-restarted"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(w.app_inst_names().is_empty());
        let mut child = spawn_cli(&w, &["start", "garm-restarted"]);
        // Twice: the second signal once the stop waits for the AppInst the site still creates.
        let needle = if twice {
            "waiting, at most"
        } else {
            "never printed"
        };
        let stderr = signal_at_line(&mut child, needle, libc::SIGTERM);
        w.until_an_app_inst();
        signal(&child, libc::SIGTERM);
        let r = Run::from(child.wait_with_output().unwrap());
        let stderr = stderr.join().unwrap();
        assert_eq!(r.code, 130, "{stderr:?}");
        let last = stderr.last().map(String::as_str).unwrap_or_default();
        if twice {
            assert_eq!(last, "error: interrupted; garm-restarted may be left starting (interrupted again); stop it with: stop garm-restarted");
            let r = cli(&w, &["stop", "garm-restarted"]);
            assert_eq!(r.code, 0, "{}", r.stderr);
        } else {
            assert_eq!(last, "error: interrupted; garm-restarted is stopped");
        }
        // Stopped as before the start: the App kept, no AppInst.
        assert_eq!(w.app_names(), vec!["garm-restarted"], "twice {twice}");
        assert!(w.app_inst_names().is_empty(), "twice {twice}");
    }
}

// 13.11 -----------------------------------------------------------------------------------------

#[test]
fn version_and_get_version_identify_the_build() {
    let version = env!("CARGO_PKG_VERSION");
    let commit = Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let out = run(command().arg("version"), None);
    let get = run_binary(&[("GARM_COMMAND".into(), "GetVersion".into())], None);
    let (cli_line, garm) = match &commit {
        Some(c) => (
            format!("garm-provider-edge-connect v{version} ({c})\n"),
            format!("v{version}+{c}"),
        ),
        None => (
            format!("garm-provider-edge-connect v{version}\n"),
            format!("v{version}"),
        ),
    };
    assert_eq!(out.stdout, cli_line);
    assert_eq!(get.stdout, garm);
    assert_eq!(garm, garm_provider_edge_connect::VERSION);
}

// 13.12 -----------------------------------------------------------------------------------------

#[test]
fn the_demo_names_the_instance_and_no_path_it_removes() {
    let r = run(
        command().env("TMPDIR", std::env::temp_dir()).arg("demo"),
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains("garm-edge-connect-demo-"),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout
            .contains(&std::env::temp_dir().display().to_string()),
        "{}",
        r.stdout
    );
    assert_has(&r.stdout, "\n▶ CreateInstance garm-7hq2kx0d3mzt\n");
    let progress: Vec<&str> = r.stdout.lines().filter(|l| l.contains(" … ")).collect();
    assert!(!progress.is_empty(), "{}", r.stdout);
    for l in progress {
        assert!(l.starts_with("    … [garm-7hq2kx0d3mzt] "), "{l}");
    }
}
