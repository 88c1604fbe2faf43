//! Issue 25 item 4: a terminal shows text, never commands. The controller's words (progress
//! lines, refusals, an AppInst's errors) hold OSC, CSI, CR, C1 and bidirectional controls; every
//! command a person runs shows them as escaped text, on stdout and stderr.

use edge_connect_sim::{Fault, FaultKind};

use crate::cli_table::cli;
use crate::secrets_scrubbed::{refusal, world, Request};
use crate::support::{assert_has, fixture_with, Run, World, POOL};

/// A window title (OSC 0), a hyperlink (OSC 8), clear screen and cursor home (CSI), a carriage
/// return drawing a fake success line, C1 CSI and OSC, a right-to-left override and isolate,
/// DEL and backspace.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7} \u{1b}]8;;http://evil\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{1b}[2J\u{1b}[H \r✓ fake done \u{9b}31m \u{9d}0;t\u{9c} \u{202e}exe.txt\u{202c} \u{2067}x\u{2069} \u{7f}\u{8} end";

/// No character a terminal acts on is left raw in what the run printed (newlines end lines).
fn assert_text_only(what: &str, r: &Run) {
    for (stream, text) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        let raw: Vec<char> = text
            .chars()
            .filter(|&c| {
                c != '\n'
                    && (c.is_control()
                        || ('\u{202a}'..='\u{202e}').contains(&c)
                        || ('\u{2066}'..='\u{2069}').contains(&c))
            })
            .collect();
        assert!(raw.is_empty(), "{what}: {stream} holds {raw:?}: {text:?}");
    }
}

/// The controller's text, escaped: what a person sees instead of its effect.
const SHOWN: &str = "\\u{1b}]0;pwned\\u{7}";

#[test]
fn progress_and_refusals_of_create_and_check_are_shown_as_text() {
    fn progress(_: &Request) -> (u16, String) {
        let line = serde_json::json!({"data": {"message": HOSTILE}});
        let result = serde_json::json!({"result": {"message": HOSTILE, "code": 400}});
        (200, format!("{line}\n{result}\n"))
    }
    let w = world("CreateAppInst", progress, "text");
    let bootstrap = w.dir.path().join("bootstrap.json");
    let text = fixture_with("bootstrap-github-jit.json", "garm-terminal", POOL);
    std::fs::write(&bootstrap, text).unwrap();
    let path = bootstrap.to_str().unwrap();
    let r = cli(&w, &["create", "--bootstrap", path]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_text_only("create", &r);
    // The progress line and the error line as they came, escaped.
    let shown = format!("  … {SHOWN}");
    assert!(
        r.stderr.lines().any(|l| l.starts_with(&shown)),
        "{}",
        r.stderr
    );
    let error = r.stderr.lines().last().unwrap_or_default();
    assert!(
        error.starts_with("error: ") && error.contains("✓ fake done"),
        "{}",
        r.stderr
    );

    fn login(_: &Request) -> (u16, String) {
        refusal(HOSTILE.to_string())
    }
    let w = world("login", login, "text");
    let r = cli(&w, &["check"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_text_only("check", &r);
    // The server's text as it came, escaped like the progress line (it is masked first).
    assert!(
        r.stdout
            .contains(&format!("✗ login: Edge Connect login (HTTP 400): {SHOWN}")),
        "{}",
        r.stdout
    );
}

#[test]
fn tables_json_and_errors_of_get_list_and_delete_are_shown_as_text() {
    let w = World::new();
    // The AppInst stays in CreateError with the text as its error: its removal is refused.
    w.sim.inject(Fault::create_error_left(1, HOSTILE));
    let refused = FaultKind::HttpStatus {
        status: 400,
        message: Some(HOSTILE.to_string()),
    };
    w.sim
        .inject(Fault::new("DeleteAppInst", refused).times(1000));
    let failed = w.create("bootstrap-github-jit.json", "garm-hostile", POOL, &[]);
    assert_eq!(failed.code, 1, "{}", failed.stdout);
    assert_text_only("GARM CreateInstance", &failed);
    for args in [
        &["get", "garm-hostile"][..],
        &["get", "garm-hostile", "--format", "json"],
        &["list"],
        &["list", "--format", "json"],
        &["list", "--pool-id", POOL],
    ] {
        let r = cli(&w, args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert_text_only(&format!("{args:?}"), &r);
    }
    let table = cli(&w, &["list"]).stdout;
    assert!(table.contains(SHOWN), "{table}");

    w.sim
        .inject(Fault::stream_error("DeleteAppInst", 1, HOSTILE).times(100));
    let r = cli(&w, &["delete", "garm-hostile"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_text_only("delete", &r);
    assert!(r.stderr.contains("✓ fake done"), "{}", r.stderr);
}

#[test]
fn a_zone_name_from_the_extra_specs_file_is_shown_as_text() {
    // The step's name is the site as the file spells it (issue 34): escaped like its detail.
    let w = World::new();
    let specs = w.dir.path().join("specs.json");
    let zone = serde_json::json!({"zones": [{"organization": "TelekomOP", "name": HOSTILE}]});
    std::fs::write(&specs, zone.to_string()).unwrap();
    let r = cli(&w, &["check", "--extra-specs", specs.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_text_only("check --extra-specs", &r);
    assert_has(&r.stdout, &format!("✗ zone TelekomOP/{SHOWN}"));
}
