//! What a person meets first (issue 34): each message names what to change, and nothing a
//! person reads depends on where they looked first.

use hostile_server::{token_reply, Server as Fake, Step};

use crate::support::{assert_has, assert_starts, in_edge_connect, Run, World, CONTROLLER, POOL};

/// The CLI with `args`, the world's config and controller, a bare environment.
fn person(w: &World, args: &[&str]) -> Run {
    w.person(CONTROLLER)
        .args(args)
        .output()
        .expect("the CLI runs")
        .into()
}

#[test]
fn retired_keys_are_warned_about_on_stderr_too() {
    let w = World::new();
    w.edit_config(|t| in_edge_connect(t, "remove_all_concurrency = 8"));
    let warning = "edge_connect.remove_all_concurrency is retired and ignored (";
    let r = person(&w, &["list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_starts(&r.stderr, &format!("warning: {warning}"));
    // `check` says it on its config line.
    let c = person(&w, &["check"]);
    assert!(
        c.stdout
            .lines()
            .any(|l| l.starts_with("✓ config: ") && l.contains(warning)),
        "{}",
        c.stdout
    );
    // GARM shows stderr for a failure only, as one line: the warning joins it.
    let r = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-none")], None);
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains(warning), "{}", r.stderr);
}

#[test]
fn a_server_that_never_answers_is_named_with_the_seconds_waited() {
    let silent = Fake::start(|p, _| match p {
        "/api/v1/login" => token_reply(),
        _ => vec![Step::Sleep(std::time::Duration::from_secs(60))],
    });
    let w = World::new();
    w.edit_config(|t| {
        in_edge_connect(
            &t.replace(&w.sim.url(), &silent.url()),
            "request_timeout_secs = 2\noperation_timeout_secs = 900",
        )
    });
    let c = person(&w, &["check"]);
    assert!(
        c.stdout.contains(
            "nothing came within 2 s (edge_connect.request_timeout_secs) while waiting for the answer"
        ),
        "{}",
        c.stdout
    );
}

#[test]
fn https_to_a_plain_http_port_is_explained_in_words() {
    let w = World::new();
    let plain = w.sim.url();
    let port = plain.rsplit(':').next().unwrap().to_string();
    w.edit_config(|t| t.replace(&plain, &plain.replace("http://", "https://")));
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let line = r.stderr.trim_end();
    assert!(
        line.contains(&format!("127.0.0.1:{port} answered in plain HTTP, not TLS")),
        "{line}"
    );
    assert!(!line.contains("InvalidContentType"), "{line}");
    assert!(!line.contains("ca_bundle"), "{line}");
    let c = person(&w, &["check"]);
    assert_has(&c.stdout, "answered in plain HTTP, not TLS");
    assert!(!c.stdout.contains("ca_bundle"), "{}", c.stdout);
}

#[test]
fn a_typo_in_a_config_key_says_which_key_was_meant_and_lists_them_all() {
    let w = World::new();
    w.edit_config(|t| in_edge_connect(t, "request_timout_secs = 5"));
    let r = person(&w, &["list"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let line = r.stderr.trim_end();
    assert!(
        line.contains("edge_connect: unknown field `request_timout_secs`; did you mean `request_timeout_secs`? (allowed here: `"),
        "{line}"
    );
    // Every key of the table, the last one too: nothing is cut away.
    for key in [
        "organization",
        "url",
        "operation_timeout_secs",
        "start_failure_grace_secs",
    ] {
        assert!(line.contains(&format!("`{key}`")), "{key}: {line}");
    }
    // Retired keys still load (with a warning) but are no longer allowed to be written: never
    // listed, never the key meant.
    for (key, _) in garm_provider_edge_connect::config::RETIRED_KEYS {
        let name = key.rsplit('.').next().unwrap_or(key);
        assert!(!line.contains(name), "{name}: {line}");
    }
    w.edit_config(|t| t.replace("request_timout_secs = 5", "remove_all_concurency = 5"));
    let r = person(&w, &["list"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(!r.stderr.contains("remove_all_concurrency"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("edge_connect: unknown field `remove_all_concurency` (allowed here: `"),
        "{}",
        r.stderr
    );
}

#[test]
fn an_unknown_garm_command_lists_the_commands() {
    let w = World::new();
    let r = w.garm("ListInstance", &[], None);
    assert_eq!(r.code, 1);
    assert_starts(&r.stderr, "unknown command: GARM_COMMAND=ListInstance (GARM's commands: CreateInstance, DeleteInstance, GetInstance, ListInstances,");
}

/// docs/operations.md shows GARM mode as `env -i` commands: run as written (the config, the
/// binary and the password put in), they create, list and delete a runner.
#[test]
fn garm_mode_as_the_docs_show_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/operations.md")).expect("operations.md");
    let section = docs
        .split("\n## ")
        .find(|s| s.starts_with("GARM mode"))
        .expect("the GARM mode section");
    let mut commands = Vec::new();
    for block in section.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap_or_default();
        let joined = block.replace("\\\n", " ");
        commands.extend(
            joined
                .lines()
                .filter(|l| l.trim_start().starts_with("env -i"))
                .map(String::from),
        );
    }
    assert_eq!(commands.len(), 3, "{commands:?}");
    let w = World::new();
    let run = |command: &str| -> Run {
        let command = command
            .replace(
                "/etc/garm/edge-connect-provider-config.toml",
                &w.config.display().to_string(),
            )
            .replace(
                "/opt/garm/providers.d/garm-provider-edge-connect",
                crate::support::BIN,
            )
            .replace("'…'", crate::support::PASSWORD);
        std::process::Command::new("sh")
            .args(["-c", &command])
            .current_dir(root)
            .output()
            .expect("sh runs")
            .into()
    };
    let created = run(&commands[0]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let instance = created.json();
    assert_eq!(instance["name"], "garm-7hq2kx0d3mzt", "{}", created.stdout);
    assert_eq!(instance["status"], "running");
    let listed = run(&commands[1]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        listed.json()[0]["name"],
        "garm-7hq2kx0d3mzt",
        "{}",
        listed.stdout
    );
    let deleted = run(&commands[2]);
    assert_eq!(
        (deleted.code, deleted.stdout.as_str()),
        (0, ""),
        "{}",
        deleted.stderr
    );
    assert!(w.app_names().is_empty(), "{:?}", w.app_names());
}
