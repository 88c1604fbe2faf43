//! Every bad-input path of the GARM protocol: exit code, one stderr line, nothing made.

use crate::support::*;
use serde_json::json;

const V011: (&str, &str) = ("GARM_INTERFACE_VERSION", "v0.1.1");

fn assert_one_line_failure(r: &Run, code: i32, needle: &str) {
    assert_eq!(r.code, code, "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "", "nothing on stdout on failure");
    assert_eq!(
        r.stderr.trim_end().lines().count(),
        1,
        "one line: {:?}",
        r.stderr
    );
    assert!(
        r.stderr.contains(needle),
        "{needle:?} not in {:?}",
        r.stderr
    );
}

fn no_create_calls(w: &World) {
    let creates: Vec<_> = w
        .sim
        .request_log()
        .into_iter()
        .filter(|e| e.rpc.starts_with("Create"))
        .collect();
    assert!(creates.is_empty(), "no create call expected: {creates:?}");
    assert!(w.app_names().is_empty());
}

#[test]
fn empty_stdin_creates_nothing() {
    let w = World::new();
    let r = w.garm("CreateInstance", &[("GARM_POOL_ID", POOL)], Some(""));
    assert_one_line_failure(&r, 1, "no bootstrap params on stdin");
    no_create_calls(&w);
}

#[test]
fn invalid_json_creates_nothing() {
    let w = World::new();
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some("{\"name\": "),
    );
    assert_one_line_failure(&r, 1, "invalid bootstrap params");
    no_create_calls(&w);
}

#[test]
fn missing_extra_specs_key_means_empty_specs() {
    let w = World::new();
    let r = w.create_edited("garm-nospecs", |v| {
        v.as_object_mut().unwrap().remove("extra_specs");
    });
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn invalid_provider_extra_specs_fail_before_any_api_call() {
    let w = World::new();
    let mut v: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-badspecs",
        POOL,
    ))
    .unwrap();
    v["extra_specs"] = json!({"runner_install_template": "IyE=", "flavor": 42});
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_one_line_failure(&r, 1, "invalid extra_specs");
    v["extra_specs"] = json!({"flavour": "EU.small"});
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_one_line_failure(&r, 1, "flavour");
    no_create_calls(&w);
    assert!(w.sim.request_log().is_empty(), "not even a login");
}

#[test]
fn unknown_command_and_unsupported_version() {
    let w = World::new();
    assert_one_line_failure(&w.garm("Frobnicate", &[], None), 1, "unknown command");
    assert_one_line_failure(
        &w.garm("GetVersion", &[("GARM_INTERFACE_VERSION", "v9.9.9")], None),
        1,
        "unsupported GARM_INTERFACE_VERSION=v9.9.9",
    );
}

#[test]
fn missing_controller_id_or_config_file() {
    let w = World::new();
    let r = run_binary(
        &[
            ("GARM_COMMAND".into(), "ListInstances".into()),
            ("GARM_POOL_ID".into(), POOL.into()),
            (
                "GARM_PROVIDER_CONFIG_FILE".into(),
                w.config.display().to_string(),
            ),
        ],
        None,
    );
    assert_one_line_failure(&r, 1, "GARM_CONTROLLER_ID is not set");
    let r = w.garm(
        "ListInstances",
        &[
            ("GARM_POOL_ID", POOL),
            ("GARM_PROVIDER_CONFIG_FILE", "/nonexistent/provider.toml"),
        ],
        None,
    );
    assert_one_line_failure(&r, 1, "cannot read config file /nonexistent/provider.toml");
}

#[test]
fn a_bad_config_names_the_key() {
    let w = World::new();
    let text = std::fs::read_to_string(&w.config).unwrap() + "\nsurprise = true\n";
    std::fs::write(&w.config, text).unwrap();
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_one_line_failure(&r, 1, "unknown field `surprise`");
    assert!(r.stderr.contains(&w.config.display().to_string()));
}

#[test]
fn wrong_password_is_an_auth_error_without_the_password() {
    let w = World::new();
    w.write_credentials("wrong-password-123", 0o600);
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_one_line_failure(&r, 1, "check credentials_file or EDP_EDGE_CONNECT_USERNAME");
    assert!(!r.stderr.contains("wrong-password-123"));
    assert!(!w.log_text().contains("wrong-password-123"));
    assert_eq!(
        w.calls("login"),
        1,
        "a refused login is not repeated by concurrent calls"
    );
}

#[test]
fn environment_overrides_the_credentials_file() {
    let w = World::new();
    w.write_credentials("stale", 0o600);
    let r = w.garm(
        "ListInstances",
        &[
            ("GARM_POOL_ID", POOL),
            ("EDP_EDGE_CONNECT_USERNAME", USER),
            ("EDP_EDGE_CONNECT_PASSWORD", PASSWORD),
        ],
        None,
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "[]"), "{}", r.stderr);
}

#[test]
fn world_readable_credentials_are_refused_with_the_fix() {
    let w = World::new();
    let creds = w.write_credentials(PASSWORD, 0o644);
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_one_line_failure(&r, 1, &format!("chmod 600 {}", creds.display()));
}

#[test]
fn version_and_v011_local_commands() {
    let w = World::new();
    let v = w.garm("GetVersion", &[], None);
    assert_eq!(
        (v.code, v.stdout.as_str()),
        (0, garm_provider_edge_connect::VERSION)
    );
    let s = w.garm("GetSupportedInterfaceVersions", &[V011], None);
    assert_eq!((s.code, s.stdout.as_str()), (0, r#"["v0.1.0","v0.1.1"]"#));
    for cmd in ["GetConfigJSONSchema", "GetExtraSpecsJSONSchema"] {
        let r = w.garm(cmd, &[V011], None);
        assert_eq!(r.code, 0, "{cmd}: {}", r.stderr);
        let schema = r.json();
        assert_eq!(
            schema["$schema"], "http://json-schema.org/draft-07/schema#",
            "{cmd}"
        );
        assert_eq!(schema["type"], "object", "{cmd}");
    }
    let extra = w.garm("GetExtraSpecsJSONSchema", &[V011], None).json();
    for garm_key in [
        "runner_install_template",
        "pre_install_scripts",
        "extra_context",
    ] {
        assert!(
            extra["properties"].get(garm_key).is_some(),
            "{garm_key} allowed"
        );
    }
    // v0.1.1-only commands are refused under v0.1.0.
    assert_one_line_failure(
        &w.garm("GetConfigJSONSchema", &[], None),
        1,
        "needs GARM_INTERFACE_VERSION=v0.1.1",
    );
}

#[test]
fn validate_pool_info() {
    use base64::Engine as _;
    let w = World::new();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let cases = [
        (
            b64(r#"{"flavor":"EU.large","runner_install_template":"IyE="}"#),
            0,
        ),
        (b64(r#"{"flavor":""}"#), 1),
        (b64(r#"{"no_such_key":1}"#), 1),
        ("bnVsbA==".to_string(), 0),
        (String::new(), 0),
    ];
    for (specs, want) in cases {
        let r = w.garm(
            "ValidatePoolInfo",
            &[
                V011,
                ("GARM_POOL_ID", POOL),
                ("GARM_POOL_EXTRASPECS", &specs),
            ],
            None,
        );
        assert_eq!(r.code, want, "{specs}: {}", r.stderr);
        assert_eq!(r.stdout, "");
    }
}

#[test]
fn cli_and_garm_mode_share_exit_codes() {
    let w = World::new();
    let out = run(w.person(CONTROLLER).args(["get", "garm-nope"]), None);
    assert_eq!(out.code, 30);
    assert_eq!(out.stderr.trim(), "error: instance garm-nope not found");
}

#[test]
fn huge_or_binary_stdin_is_refused_without_a_panic() {
    let w = World::new();
    let huge = format!(
        "{{\"name\":\"garm-x\",\"image\":\"{}\"}}",
        "a".repeat(5 * 1024 * 1024)
    );
    let r = w.garm("CreateInstance", &[("GARM_POOL_ID", POOL)], Some(&huge));
    assert_one_line_failure(&r, 1, "bootstrap params exceed");
    let vars = garm_env("CreateInstance", &w.config, &[("GARM_POOL_ID", POOL)]);
    let r = run(
        &mut provider_command(&vars),
        Some(&[0xff, 0xfe, 0x00, 0x7b, 0x80]),
    );
    assert_eq!(r.code, 1);
    assert_starts(&r.stderr, "invalid bootstrap params");
    no_create_calls(&w);
}

#[test]
fn names_of_any_shape_are_sanitised_and_found_again() {
    let w = World::new();
    for name in [
        "CI Runner #1 (ÄÖÜ)",
        "x",
        "-leading-dash",
        &"long-name-".repeat(12),
    ] {
        let r = w.create("bootstrap-github-jit.json", name, POOL, &[]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert_eq!(r.json()["name"], name);
        let get = w.garm("GetInstance", &[("GARM_INSTANCE_ID", name)], None);
        assert_eq!(get.json()["name"], name, "found by GARM name");
        let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", name)], None);
        assert_eq!(d.code, 0, "{}", d.stderr);
    }
    assert!(w.app_names().is_empty());
}

#[test]
fn an_unknown_flavor_or_zone_lists_what_exists_and_leaves_nothing() {
    let w = World::new();
    let mut v: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-flavorless",
        POOL,
    ))
    .unwrap();
    v["flavor"] = "EU.gigantic".into();
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_one_line_failure(
        &r,
        1,
        r#"Flavor key {"name":"EU.gigantic"} not found; flavors in region EU: EU.small, EU.medium, EU.large"#,
    );
    assert!(w.app_names().is_empty());

    v["flavor"] = "EU.small".into();
    v["extra_specs"] = json!({"zones": [{"organization": "TelekomOP", "name": "Atlantis"}]});
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&v.to_string()),
    );
    assert_one_line_failure(&r, 1, "zones: TelekomOP/Munich");
    assert!(r.stderr.contains("Atlantis"), "{}", r.stderr);
    assert!(
        w.app_names().is_empty(),
        "the App made before the refusal is gone"
    );
}
