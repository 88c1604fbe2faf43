//! Issue 20 items 6, 7, 9 and 11, each through the built binary as GARM runs it: a pool cannot
//! reach the provider's own credentials, the log file keeps its promise, stdin has the
//! command's deadline, and echoed input is cut at 64 characters.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use crate::support::*;

pub(crate) fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A bootstrap whose extra specs ask for image pull credentials from `var`.
fn pulling_from(var: &str, name: &str) -> String {
    let mut b: serde_json::Value =
        serde_json::from_str(&fixture_with("bootstrap-github-jit.json", name, POOL)).unwrap();
    b["extra_specs"] =
        serde_json::json!({"image_pull_username": "x", "image_pull_password_env": var});
    b.to_string()
}

const OWN_CREDENTIALS: &str = "invalid extra_specs: image_pull_password_env: EDP_EDGE_CONNECT_PASSWORD holds the provider's own credentials, which must not be sent to a registry; name a variable that holds only the registry password\n";

#[test]
fn a_pool_cannot_send_the_providers_password_to_a_registry() {
    let w = World::new();
    // The issue's extra specs, with the password in the environment as GARM passes it.
    let r = w.garm(
        "CreateInstance",
        &[
            ("GARM_POOL_ID", POOL),
            ("EDP_EDGE_CONNECT_USERNAME", USER),
            ("EDP_EDGE_CONNECT_PASSWORD", PASSWORD),
        ],
        Some(&pulling_from("EDP_EDGE_CONNECT_PASSWORD", "garm-pulls-own")),
    );
    assert_eq!((r.code, r.stdout.as_str()), (1, ""));
    assert_eq!(r.stderr, OWN_CREDENTIALS);
    assert!(w.app_names().is_empty(), "{:?}", w.app_names());
    assert_eq!(w.calls("CreateApp"), 0);

    let specs = base64(
        r#"{"image_pull_username":"x","image_pull_password_env":"EDP_EDGE_CONNECT_PASSWORD"}"#,
    );
    let r = w.garm(
        "ValidatePoolInfo",
        &[
            ("GARM_INTERFACE_VERSION", "v0.1.1"),
            ("GARM_POOL_EXTRASPECS", &specs),
        ],
        None,
    );
    assert_eq!((r.code, r.stderr.as_str()), (1, OWN_CREDENTIALS));
    let specs = write_specs(
        &w,
        r#"{"image_pull_username":"x","image_pull_password_env":"https_proxy"}"#,
    );
    let out = run(command().arg("validate-extra-specs").arg(specs), None);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("https_proxy holds the provider's own credentials"),
        "{}",
        out.stderr
    );
}

fn write_specs(w: &World, json: &str) -> std::path::PathBuf {
    let path = w.dir.path().join("specs.json");
    std::fs::write(&path, json).unwrap();
    path
}

#[test]
fn the_operator_restricts_pull_passwords_to_a_prefix() {
    let w = World::new();
    w.edit_config(|t| {
        t.replacen(
            "[edge_connect]",
            "image_pull_password_env_prefix = \"GARM_REGISTRY_\"\n\n[edge_connect]",
            1,
        )
    });
    let outside = "invalid extra_specs: image_pull_password_env: OTHER_SECRET does not start with GARM_REGISTRY_ (image_pull_password_env_prefix in the provider config)\n";
    let specs = base64(r#"{"image_pull_username":"x","image_pull_password_env":"OTHER_SECRET"}"#);
    let r = w.garm(
        "ValidatePoolInfo",
        &[
            ("GARM_INTERFACE_VERSION", "v0.1.1"),
            ("GARM_POOL_EXTRASPECS", &specs),
        ],
        None,
    );
    assert_eq!((r.code, r.stderr.as_str()), (1, outside));
    let specs = write_specs(
        &w,
        r#"{"image_pull_username":"x","image_pull_password_env":"OTHER_SECRET"}"#,
    );
    let specs = specs.display().to_string();
    let out = w.cli(&["validate-extra-specs", &specs]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, format!("error: {outside}"));
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL), ("OTHER_SECRET", "registry-pw-1")],
        Some(&pulling_from("OTHER_SECRET", "garm-pulls-other")),
    );
    assert_eq!((r.code, r.stderr.as_str()), (1, outside));
    assert!(w.app_names().is_empty(), "{:?}", w.app_names());

    // Inside the prefix: accepted, and the App carries the pull credentials.
    let specs =
        base64(r#"{"image_pull_username":"x","image_pull_password_env":"GARM_REGISTRY_PW"}"#);
    let r = w.garm(
        "ValidatePoolInfo",
        &[
            ("GARM_INTERFACE_VERSION", "v0.1.1"),
            ("GARM_POOL_EXTRASPECS", &specs),
        ],
        None,
    );
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    let r = w.garm(
        "CreateInstance",
        &[
            ("GARM_POOL_ID", POOL),
            ("GARM_REGISTRY_PW", "registry-pw-2"),
        ],
        Some(&pulling_from("GARM_REGISTRY_PW", "garm-pulls-ok")),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.app("garm-pulls-ok")["credentials"], "registry-pw-2");

    // A prefix that cannot start a variable name is refused when the config is read.
    w.edit_config(|t| t.replace("\"GARM_REGISTRY_\"", "\"GARM-REG\""));
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        format!(
            "config {}: image_pull_password_env_prefix: must start an environment variable name (letters, digits, _), e.g. GARM_REGISTRY_\n",
            w.config.display()
        )
    );
}

/// Another user: tests run as root here, so the file is handed to a uid that is not ours.
const OTHER_UID: u32 = 4242;

#[test]
fn another_users_log_file_is_refused_and_our_own_is_made_private() {
    let w = World::new();
    std::fs::write(&w.log, "").unwrap();
    std::fs::set_permissions(&w.log, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::chown(&w.log, Some(OTHER_UID), Some(OTHER_UID))
        .expect("chown to another uid (the test runs as root)");
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };

    w.assert_log_refused(&format!(
        "it belongs to another user (uid {OTHER_UID}, this provider runs as uid {me}); remove it, or give log_file a path of this user's"
    ));
    assert_eq!(
        std::fs::read_to_string(&w.log).unwrap(),
        "",
        "nothing written"
    );
    assert_eq!(mode_of(&w.log), 0o666, "another user's file is not touched");

    // Our own file with a mode others can read: made 0600, then written.
    std::fs::remove_file(&w.log).unwrap();
    std::fs::write(&w.log, "").unwrap();
    std::fs::set_permissions(&w.log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert_eq!(mode_of(&w.log), 0o600);
    assert!(w.log_text().contains("ListInstances"), "{}", w.log_text());
}

/// CreateInstance whose stdin stays open (fed by `feed` until the provider exits), with a
/// 3 s command deadline; killed if it outlives a generous bound, which fails the test.
fn create_with_open_stdin(feed: impl FnOnce(std::process::ChildStdin) + Send + 'static) -> Run {
    let w = World::new();
    w.edit_config(|t| {
        t.replacen(
            "[edge_connect]\n",
            "[edge_connect]\noperation_timeout_secs = 3\nrequest_timeout_secs = 3\n",
            1,
        )
    });
    let vars = garm_env("CreateInstance", &w.config, &[("GARM_POOL_ID", POOL)]);
    let mut child = provider_command(&vars)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("provider starts");
    let stdin = child.stdin.take().expect("stdin");
    // The feeder owns stdin: it stays open as long as the feeder wants.
    std::thread::spawn(move || feed(stdin));
    let r = finish(child);
    assert!(w.app_names().is_empty(), "{:?}", w.app_names());
    r
}

const STDIN_DEADLINE: &str = "the bootstrap params on stdin were not complete by the command's deadline (edge_connect.operation_timeout_secs); GARM writes them and closes stdin, and so must a caller\n";

#[test]
fn stdin_held_open_ends_at_the_command_deadline() {
    let r = create_with_open_stdin(|mut stdin| {
        let _ = stdin.write_all(b"{\"name\":");
        // Never closed: held until the test process ends.
        loop {
            std::thread::sleep(Duration::from_secs(60));
            let _ = &stdin;
        }
    });
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (1, "", STDIN_DEADLINE)
    );
}

#[test]
fn stdin_fed_a_byte_a_second_ends_at_the_command_deadline() {
    let bootstrap = fixture_with("bootstrap-github-jit.json", "garm-drip", POOL);
    let r = create_with_open_stdin(move |mut stdin| {
        for b in bootstrap.bytes() {
            if stdin.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (1, "", STDIN_DEADLINE)
    );
}

#[test]
fn echoed_input_is_cut_at_64_characters() {
    let w = World::new();
    let long = "x".repeat(100_000);
    let cut = format!("{}… (100000 bytes in all)", "x".repeat(64));
    for command in ["GetInstance", "StartInstance", "StopInstance"] {
        let r = w.garm(command, &[("GARM_INSTANCE_ID", &long)], None);
        assert_eq!(
            (r.code, r.stderr.clone()),
            (30, format!("instance {cut} not found\n")),
            "{command}"
        );
    }
    // A name GARM sends on stdin, repeated in the refusal of a second create.
    let bootstrap = fixture_with("bootstrap-github-jit.json", &long, POOL);
    let first = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&bootstrap),
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    let app = first.json()["provider_id"].as_str().unwrap().to_string();
    let again = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&bootstrap),
    );
    assert_eq!(
        (again.code, again.stderr),
        (
            31,
            format!("instance {cut} already exists on Edge Connect (App {app})\n")
        )
    );
    let r = w.garm("GetInstance", &[("GARM_COMMAND", &long)], None);
    assert_eq!(
        (r.code, r.stderr),
        (1, format!("unknown command: GARM_COMMAND={cut} (GARM's commands: CreateInstance, DeleteInstance, GetInstance, ListInstances, RemoveAllInstances, StartInstance, StopInstance, GetVersion, GetSupportedInterfaceVersions, ValidatePoolInfo, GetConfigJSONSchema, GetExtraSpecsJSONSchema)\n"))
    );
    // Pool settings echo the refused name or word, cut the same way (60,000 characters: one
    // environment string holds at most 128 KiB, and GARM sends extra specs base64-encoded).
    let long = "x".repeat(60_000);
    let cut = format!("{}… (60000 bytes in all)", "x".repeat(64));
    for (specs, want) in [
        (
            format!(r#"{{"{long}":1}}"#),
            format!("invalid extra_specs: unknown field `{cut}` (allowed here: `"),
        ),
        (
            format!(r#"{{"env":{{"{long}-":"v"}}}}"#),
            format!(
                "invalid extra_specs: env: `{}… (60001 bytes in all)` is not a valid environment variable name\n",
                "x".repeat(64)
            ),
        ),
    ] {
        let r = w.garm(
            "ValidatePoolInfo",
            &[("GARM_INTERFACE_VERSION", "v0.1.1"), ("GARM_POOL_EXTRASPECS", &base64(&specs))],
            None,
        );
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.starts_with(&want), "{}", r.stderr);
        assert!(r.stderr.len() < 600, "{} bytes: {}", r.stderr.len(), r.stderr);
    }
    // The container command is the config's: a refused word is cut the same way.
    let w = World::with(
        edge_connect_sim::ApiGeneration::Gen3,
        Site::Zone,
        &format!("command = \"/run {}:\"", "y".repeat(100)),
    );
    let r = w.create("bootstrap-github-jit.json", "garm-cut1", POOL, &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let want = format!(
        "edge_connect.command: the word \"{}\"… (101 bytes in all) would not reach the container as written",
        "y".repeat(64)
    );
    assert!(r.stderr.contains(&want), "{}", r.stderr);
    assert!(
        r.stderr.len() < 600,
        "{} bytes: {}",
        r.stderr.len(),
        r.stderr
    );
}
