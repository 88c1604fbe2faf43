//! Logging: the file gets whole lines with command and instance; JSON format for shippers; without
//! a log file GARM mode is silent on success; stdout only ever carries the result.

use crate::support::*;

#[test]
fn text_lines_carry_command_instance_pool_and_controller() {
    let w = World::new();
    let r = w.create("bootstrap-github-jit.json", "garm-logged", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = w.log_text();
    let calls: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("edge connect call"))
        .collect();
    assert!(calls.len() >= 2, "{log}");
    for line in &calls {
        assert!(
            line.contains("command=\"CreateInstance\"") || line.contains("command=CreateInstance"),
            "{line}"
        );
        assert!(line.contains("instance=garm-logged"), "{line}");
        assert!(line.contains(&format!("controller={CONTROLLER}")), "{line}");
        assert!(
            line.contains("rpc=") && line.contains("status=") && line.contains("ms="),
            "{line}"
        );
    }
    w.assert_no_secrets(&[&r]);
}

#[test]
fn json_lines_for_log_shippers() {
    let w = World::new();
    w.edit_config(|t| {
        t.replace(
            "log_level = \"debug\"",
            "log_level = \"trace\"\nlog_format = \"json\"",
        )
    });
    let r = w.create("bootstrap-github-jit.json", "garm-jsonlog", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = w.log_text();
    let mut calls = 0;
    for line in log.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(v["span"]["command"], "CreateInstance", "{line}");
        assert_eq!(v["span"]["instance"], "garm-jsonlog", "{line}");
        if v["fields"]["message"] == "edge connect call" {
            calls += 1;
            assert_eq!(v["fields"]["status"], 200, "{line}");
        }
    }
    assert!(calls >= 2);
    // Trace level logs the most; still no secret.
    w.assert_no_secrets(&[&r]);
}

#[test]
fn without_a_log_file_success_is_silent_and_failure_is_one_line() {
    let w = World::new();
    w.edit_config(|t| {
        t.lines()
            .filter(|l| !l.starts_with("log_file"))
            .collect::<Vec<_>>()
            .join("\n")
    });
    let ok = w.create("bootstrap-github-jit.json", "garm-quiet", POOL, &[]);
    assert_eq!((ok.code, ok.stderr.as_str()), (0, ""));
    assert_eq!(
        ok.json()["name"],
        "garm-quiet",
        "stdout carries only the result"
    );
    let missing = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-nothere")], None);
    assert_eq!(missing.code, 30);
    assert_eq!(missing.stderr, "instance garm-nothere not found\n");
}
