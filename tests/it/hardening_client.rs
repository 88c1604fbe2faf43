//! The provider, run as GARM runs it, against tiny misbehaving servers and proxies on
//! 127.0.0.1 (issue 12 and 13: redirects, drip-feeding, endless bodies, transient and refused
//! logins, unreachable hosts, the proxy environment, URL credentials, the token cache). Every
//! run is bounded by a watchdog; the assertions are on exit codes, one-line messages, what the
//! servers received, and that no secret reached stdout, stderr or the log.

use std::ops::Deref;
use std::time::Duration;

/// The misbehaving servers and proxies (shared with the client's unit tests).
pub(crate) use hostile_server::{head, reply, token_reply, Server as Fake, Step};

use crate::support::{
    self, assert_has, fixture_with, write_mode, Provider, World, CONTROLLER, PASSWORD, POOL, USER,
};

/// What a well-behaved controller with no Apps answers.
fn empty_controller(path: &str) -> Vec<Step> {
    match path {
        "/api/v1/login" => token_reply(),
        p if p.ends_with("/DeleteApp") => reply(
            "400 Bad Request",
            r#"{"message":"App key {\"organization\":\"edp-developer-framework\"} not found"}"#,
        ),
        _ => reply("200 OK", ""),
    }
}

pub(crate) const LOGIN: &str = "/api/v1/login";
pub(crate) const CTRL: &str = "/api/v1/auth/ctrl/";

/// A provider config around `url` whose GARM runs act on the fixture's runner.
pub(crate) struct Setup(Provider);

impl Deref for Setup {
    type Target = Provider;

    fn deref(&self) -> &Provider {
        &self.0
    }
}

impl Setup {
    pub(crate) fn new(url: &str, extra: &str) -> Setup {
        Setup(Provider::at(url, support::Site::Zone, extra))
    }

    /// `command` as GARM runs it for the pool and the instance `hardened-runner` (the
    /// fixture's bootstrap on stdin for a CreateInstance).
    pub(crate) fn garm(&self, command: &str, vars: &[(&str, &str)]) -> support::Run {
        let stdin = (command == "CreateInstance")
            .then(|| fixture_with("bootstrap-github-jit.json", "hardened-runner", POOL));
        let mut all = vec![
            ("GARM_POOL_ID", POOL),
            ("GARM_INSTANCE_ID", "hardened-runner"),
        ];
        all.extend_from_slice(vars);
        self.0.garm(command, &all, stdin.as_deref())
    }
}

pub(crate) fn one_line(r: &support::Run) -> &str {
    let text = r.stderr.trim_end();
    assert!(!text.contains('\n'), "stderr is one line: {:?}", r.stderr);
    text
}

fn redirecting(status: &'static str, to: String) -> impl Fn(&str, usize) -> Vec<Step> {
    move |_, _| {
        vec![
            head(status, &format!("Location: {to}\r\nContent-Length: 2\r\n")),
            Step::Write(b"{}".to_vec()),
        ]
    }
}

#[test]
fn redirects_from_login_are_refused_and_the_target_gets_nothing() {
    for status in ["307 Temporary Redirect", "308 Permanent Redirect"] {
        let elsewhere = Fake::start(|p, _| empty_controller(p));
        let to = format!("{}/api/v1/login?rd=secret-query", elsewhere.url());
        let server = Fake::start(redirecting(status, to));
        let s = Setup::new(&server.url(), "");
        let r = s.garm("ListInstances", &[]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let line = one_line(&r);
        assert!(line.contains(&format!("HTTP {}", &status[..3])), "{line}");
        assert!(
            line.contains(&format!("127.0.0.1:{}", elsewhere.port)),
            "{line}"
        );
        assert!(!line.contains("secret-query"), "{line}");
        assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
        assert_eq!(server.seen(), [LOGIN], "a redirect is final");
        s.assert_no_secrets(&[&r]);
    }
}

#[test]
fn a_redirect_from_create_app_sends_the_app_nowhere() {
    for status in ["307 Temporary Redirect", "308 Permanent Redirect"] {
        let elsewhere = Fake::start(|p, _| empty_controller(p));
        let to = format!("{}{CTRL}CreateApp", elsewhere.url());
        let redirect = redirecting(status, to);
        let server = Fake::start(move |p, n| match p {
            p if p.ends_with("/CreateApp") => redirect(p, n),
            p => empty_controller(p),
        });
        let s = Setup::new(&server.url(), "");
        let r = s.garm("CreateInstance", &[]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let line = one_line(&r);
        assert!(line.contains("CreateApp"), "{line}");
        assert!(
            line.contains(&format!("127.0.0.1:{}", elsewhere.port)),
            "{line}"
        );
        assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
        assert_eq!(server.count(&format!("{CTRL}CreateApp")), 1);
        s.assert_no_secrets(&[&r]);
    }
}

const SHORT: &str = "request_timeout_secs = 1\noperation_timeout_secs = 3\n";

#[test]
fn a_drip_fed_answer_ends_by_the_command_deadline() {
    // One byte every 300 ms: never silent for the 1 s request timeout.
    let drip = || {
        vec![
            head("200 OK", ""),
            Step::Drip(b" ".to_vec(), Duration::from_millis(300)),
        ]
    };
    let server = Fake::start(move |p, _| match p {
        p if p.ends_with("/ShowApp") => drip(),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), SHORT);
    for command in ["ListInstances", "GetInstance", "DeleteInstance"] {
        let r = s.garm(command, &[]);
        assert_eq!(r.code, 1, "{command}: {}", r.stderr);
        assert!(one_line(&r).contains("deadline"), "{command}: {}", r.stderr);
        s.assert_no_secrets(&[&r]);
    }
    // CreateApp (not retried by the provider) and a drip-fed login end by it as well.
    let server = Fake::start(move |p, _| match p {
        p if p.ends_with("/CreateApp") => drip(),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), SHORT);
    let r = s.garm("CreateInstance", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(one_line(&r).contains("deadline"), "{}", r.stderr);
    let server = Fake::start(move |_, _| drip());
    let s = Setup::new(&server.url(), SHORT);
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(one_line(&r).contains("deadline"), "{}", r.stderr);
    s.assert_no_secrets(&[&r]);
}

#[test]
fn a_controller_that_keeps_streaming_ends_by_the_command_deadline() {
    // Apps arrive as fast as the connection takes them: every read finds a piece waiting, so
    // only a deadline checked before each read can end the command. Another controller's Apps
    // (filtered out, nothing kept) and ours (kept up to the bound) alike.
    let foreign = owned_app_line().replace(CONTROLLER, "another-controller");
    for (what, line) in [("foreign", foreign), ("ours", owned_app_line())] {
        let server = Fake::start(move |p, _| match p {
            "/api/v1/auth/ctrl/ShowApp" => vec![
                head("200 OK", ""),
                Step::Forever(line.repeat(100).into_bytes()),
            ],
            p => empty_controller(p),
        });
        let s = Setup::new(
            &server.url(),
            "request_timeout_secs = 1
operation_timeout_secs = 2
",
        );
        // The watchdog of `garm` (60 s) fails the test if the process outlives it.
        let r = s.garm("ListInstances", &[]);
        assert_eq!(r.code, 1, "{what}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{what}");
        let line = one_line(&r);
        // Ours may instead fill what one command keeps first; either way the command ended.
        let bound = what == "ours" && line.ends_with("not read further");
        assert!(
            bound
                || line.contains(
                    "the command's deadline (edge_connect.operation_timeout_secs) was reached"
                ),
            "{what}: {line}"
        );
    }
}

#[test]
fn endless_bodies_fail_fast_and_hold_nothing() {
    let endless_error = Fake::start(|p, _| match p {
        p if p.starts_with(CTRL) => vec![
            head("400 Bad Request", ""),
            Step::Forever(vec![b'x'; 64 * 1024]),
        ],
        p => empty_controller(p),
    });
    let s = Setup::new(&endless_error.url(), "");
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(one_line(&r).contains("HTTP 400"), "{}", r.stderr);

    let no_newline = Fake::start(|p, _| match p {
        p if p.starts_with(CTRL) => vec![
            head("200 OK", ""),
            Step::Write(br#"{"data":{"key":{"name":""#.to_vec()),
            Step::Forever(vec![b'a'; 256 * 1024]),
        ],
        p => empty_controller(p),
    });
    let s = Setup::new(&no_newline.url(), "");
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let line = one_line(&r);
    assert!(line.contains("8192 KiB"), "{line}");
    assert!(line.contains("ShowApp"), "{line}");
    s.assert_no_secrets(&[&r]);
}

#[test]
fn transient_login_failures_are_retried() {
    let server = Fake::start(|p, n| match (p, n) {
        (LOGIN, 1) => reply(
            "503 Service Unavailable",
            r#"{"message":"Service temporarily unavailable"}"#,
        ),
        (LOGIN, 2) => reply(
            "429 Too Many Requests",
            r#"{"message":"/api/v1/login is rejected, please retry later"}"#,
        ),
        (LOGIN, 3) => vec![Step::Sleep(Duration::from_secs(2))],
        (p, _) => empty_controller(p),
    });
    let s = Setup::new(&server.url(), "request_timeout_secs = 1\n");
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "[]");
    assert_eq!(server.count(LOGIN), 4);
    s.assert_no_secrets(&[&r]);
}

#[test]
fn refused_and_two_factor_logins_are_final() {
    for (status, message, says) in [
        (
            "400 Bad Request",
            "Invalid username or password",
            "check credentials_file",
        ),
        (
            "511 Network Authentication Required",
            "Missing OTP",
            "the Edge Connect user has two-factor authentication; use a user or API key without it",
        ),
    ] {
        // A hostile server that echoes the password back.
        let body = format!(r#"{{"message":"{message} ({PASSWORD})"}}"#);
        let server = Fake::start(move |_, _| reply(status, &body));
        let s = Setup::new(&server.url(), "");
        let r = s.garm("CreateInstance", &[]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(one_line(&r).contains(says), "{}", r.stderr);
        assert_eq!(server.seen(), [LOGIN], "{status}: never retried");
        s.assert_no_secrets(&[&r]);
    }
}

#[test]
fn an_unreachable_url_fails_fast_naming_the_host() {
    let (_reserved, port) = hostile_server::refusing_port();
    let s = Setup::new(
        &format!("http://127.0.0.1:{port}"),
        "request_timeout_secs = 1\noperation_timeout_secs = 4\n",
    );
    for command in ["ListInstances", "CreateInstance"] {
        let r = s.garm(command, &[]);
        assert_eq!(r.code, 1, "{command}: {}", r.stderr);
        let line = one_line(&r);
        assert!(
            line.contains(&format!("cannot connect to 127.0.0.1:{port}")),
            "{command}: {line}"
        );
        assert!(line.contains("the command's deadline"), "{command}: {line}");
        s.assert_no_secrets(&[&r]);
    }
    assert_has(&s.log_text(), "retrying login: cannot connect to");
}

#[test]
fn the_proxy_environment_is_honoured_and_plain_http_through_a_proxy_refused() {
    let proxy = Fake::start(|_, _| reply("502 Bad Gateway", ""));
    let server = Fake::start(|p, _| empty_controller(p));
    let proxy_url = format!("http://proxy-user:proxy-pass@127.0.0.1:{}", proxy.port);
    let s = Setup::new(&server.url(), "");
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        let r = s.garm("ListInstances", &[(var, &proxy_url)]);
        assert_eq!(r.code, 1, "{var}: {}", r.stderr);
        let line = one_line(&r);
        assert!(line.contains(var), "{line}");
        assert!(
            line.contains(&format!("127.0.0.1:{}", proxy.port)),
            "{line}"
        );
        assert!(line.contains("plain http"), "{line}");
        s.assert_no_secrets(&[&r]);
    }
    assert!(proxy.seen().is_empty() && server.seen().is_empty());
    // NO_PROXY exempts the host: a direct connection.
    let r = s.garm(
        "ListInstances",
        &[
            ("HTTP_PROXY", &proxy_url),
            ("no_proxy", "localhost,127.0.0.1"),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(proxy.seen().is_empty());

    // An https URL goes through the proxy (a CONNECT tunnel); this proxy refuses it.
    let s = Setup::new("https://edge-connect.example.invalid", SHORT);
    for var in ["HTTPS_PROXY", "https_proxy"] {
        let r = s.garm("ListInstances", &[(var, &proxy_url)]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        let line = one_line(&r);
        assert!(
            line.contains(&format!("the proxy 127.0.0.1:{}", proxy.port)),
            "{line}"
        );
        s.assert_no_secrets(&[&r]);
    }
    assert!(
        proxy
            .seen()
            .iter()
            .all(|p| p == "edge-connect.example.invalid:443"),
        "{:?}",
        proxy.seen()
    );
    assert!(!proxy.seen().is_empty());
}

#[test]
fn a_url_with_credentials_is_refused_without_echoing_them() {
    let server = Fake::start(|p, _| empty_controller(p));
    let url = format!("http://{USER}:{PASSWORD}@127.0.0.1:{}", server.port);
    let s = Setup::new(&url, "");
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_has(one_line(&r), "must not contain a user name or password");
    assert!(server.seen().is_empty());
    s.assert_no_secrets(&[&r]);
}

#[test]
fn a_numeric_password_is_not_echoed_by_the_parse_error() {
    let server = Fake::start(|p, _| empty_controller(p));
    let s = Setup::new(&server.url(), "");
    let creds = s.config.with_file_name("credentials.toml");
    write_mode(
        &creds,
        &format!("username = \"{USER}\"\npassword = 424242424242\n"),
        0o600,
    );
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(one_line(&r).contains("value not shown"), "{}", r.stderr);
    assert!(!r.stderr.contains("424242") && !s.log_text().contains("424242"));
    assert!(server.seen().is_empty());
}

#[test]
fn a_changed_password_means_a_new_login_not_a_cached_token() {
    let w = World::new();
    let list = |w: &World| w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    let r = list(&w);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.calls("login"), 1);
    assert_eq!(list(&w).code, 0);
    assert_eq!(w.calls("login"), 1, "the cached token is reused");
    w.write_credentials("a-rotated-wrong-password", 0o600);
    let r = list(&w);
    assert_eq!(
        r.code, 1,
        "a wrong password is not hidden by the cache: {}",
        r.stdout
    );
    assert_eq!(w.calls("login"), 2);
    w.assert_no_secrets(&[&r]);
    let cache = std::fs::read_dir(w.dir.path().join("token-cache")).unwrap();
    for entry in cache.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        assert!(!name.contains(PASSWORD) && !name.contains(USER), "{name}");
    }
}

#[test]
fn a_short_lived_token_is_still_reused() {
    let w = World::with_sim(
        edge_connect_sim::SimConfig {
            token_ttl: Duration::from_secs(120),
            ..Default::default()
        },
        support::Site::Zone,
        "",
    );
    for _ in 0..3 {
        let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    assert_eq!(
        w.calls("login"),
        1,
        "a 120 s token is reused, not refused by a 300 s margin"
    );
}

#[cfg(unix)]
#[test]
fn a_planted_link_for_the_cache_is_not_followed() {
    let w = World::new();
    let target = w.dir.path().join("attacker");
    std::fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(&target, w.dir.path().join("token-cache")).unwrap();
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 0, "logs in without the cache: {}", r.stderr);
    assert!(
        std::fs::read_dir(&target).unwrap().next().is_none(),
        "nothing is written where the link points"
    );
    assert!(w.log_text().contains("symbolic link"), "{}", w.log_text());
    w.assert_no_secrets(&[&r]);
}

// Answers that are incomplete, endless or of an older shape (issue 20 items 2, 4 and 8; issue
// 21 item 3): the runner "hardened-runner" of this controller as ShowApp and ShowAppInst show it.

const RUNNER: &str = "hardened-runner";

/// The runner's App as one ShowApp line (with its newline).
fn owned_app_line() -> String {
    format!(
        "{{\"data\":{{\"key\":{{\"organization\":\"edp-developer-framework\",\"name\":\"{RUNNER}\",\"version\":\"1\"}},\"env_vars\":{{\"GARM_CONTROLLER_ID\":\"{CONTROLLER}\",\"GARM_POOL_ID\":\"{POOL}\",\"GARM_INSTANCE_NAME\":\"{RUNNER}\",\"RUNNER_OS_TYPE\":\"linux\",\"RUNNER_ARCH\":\"amd64\"}}}}}}\n"
    )
}

/// An AppInst named like the runner, as one ShowAppInst line; `app_key` is written as given.
fn app_inst_line(app_key: &str, state: &str, errors: &str) -> String {
    format!(
        "{{\"data\":{{\"key\":{{\"name\":\"{RUNNER}\",\"organization\":\"edp-developer-framework\"}},{app_key}\"cloudlet_key\":{{\"organization\":\"TelekomOP\",\"name\":\"Munich\"}},\"state\":\"{state}\",\"errors\":[{errors}],\"created_at\":\"2026-12-01T10:00:00Z\"}}}}\n"
    )
}

const OUR_APP_KEY: &str =
    "\"app_key\":{\"organization\":\"edp-developer-framework\",\"name\":\"hardened-runner\",\"version\":\"1\"},";

/// A Show answer of `body`, ended by closing the connection (a clean end of the body).
fn show_answer(body: String) -> Vec<Step> {
    vec![head("200 OK", ""), Step::Write(body.into_bytes())]
}

/// At most this much memory (heap and other private writable mappings) for the provider under
/// [`garm_within_memory`]: the bound the issue sets for any hostile answer.
const MEMORY_LIMIT: u64 = 64 * 1024 * 1024;

/// Runs the provider as GARM does, with its data memory limited to [`MEMORY_LIMIT`]
/// (`RLIMIT_DATA`): a provider that grows past it cannot allocate and aborts instead of
/// printing its one line. (`wait4`'s peak RSS cannot tell: a child forked from this large test
/// process records the parent's pages as its own peak.)
fn garm_within_memory(s: &Setup, command: &str) -> support::Run {
    let mut cmd = support::provider_command(&support::garm_env(
        command,
        &s.config,
        &[("GARM_POOL_ID", POOL)],
    ));
    within_memory(&mut cmd, None)
}

/// Runs `cmd` (the provider as GARM or a person starts it) to its end with `stdin`, its data
/// memory limited to [`MEMORY_LIMIT`] as [`garm_within_memory`] says.
fn within_memory(cmd: &mut std::process::Command, stdin: Option<&[u8]>) -> support::Run {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY_LIMIT as libc::rlim_t,
                rlim_max: MEMORY_LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    support::run(cmd, stdin)
}

#[test]
fn a_show_app_answer_repeating_our_app_without_end_ends_at_the_bound() {
    let endless = Fake::start(|p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => vec![
            head("200 OK", ""),
            Step::Forever(owned_app_line().repeat(100).into_bytes()),
        ],
        p => empty_controller(p),
    });
    let s = Setup::new(&endless.url(), "operation_timeout_secs = 600\n");
    let r = garm_within_memory(&s, "ListInstances");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    // The bound counts what holding each App costs; the line says how many were read by then.
    let line = one_line(&r);
    let read = line
        .strip_prefix("Edge Connect ShowApp: the answer holds more of this controller's runners than one command keeps (its bound of 32 MiB reached with ")
        .and_then(|rest| rest.strip_suffix(" runners); not read further"))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(read.parse::<usize>().is_ok_and(|n| n > 10_000), "{line}");
    // Not retried: the same answer would end the same way.
    assert_eq!(endless.count("/api/v1/auth/ctrl/ShowApp"), 1);
}

/// One answer line may hold millions of empty list items: `"",` or `{},` take 3 bytes to
/// send and 24 to 48 each to hold. The client keeps the first few items of an AppInst's
/// `errors` and `mapped_ports` and of an App's `configs` and reads past the rest, so a line of
/// them just under a line's 8 MiB stays within the memory limit.
#[test]
fn a_line_of_millions_of_empty_list_items_costs_only_its_first_items() {
    let many = |item: &str| vec![item; 2_600_000].join(",");
    let inst = || app_inst_line(OUR_APP_KEY, "Ready", "");
    let cases = [
        (
            "errors",
            owned_app_line(),
            app_inst_line(OUR_APP_KEY, "Ready", &many("\"\"")),
        ),
        (
            "mapped_ports",
            owned_app_line(),
            inst().replace(
                "\"state\"",
                &format!("\"mapped_ports\":[{}],\"state\"", many("{}")),
            ),
        ),
        (
            "configs",
            owned_app_line().replace(
                "\"env_vars\"",
                &format!("\"configs\":[{}],\"env_vars\"", many("{}")),
            ),
            inst(),
        ),
    ];
    for (list, app, inst) in cases {
        let server = Fake::start(move |p, _| match p {
            "/api/v1/auth/ctrl/ShowApp" => show_answer(app.clone()),
            "/api/v1/auth/ctrl/ShowAppInst" => show_answer(inst.clone()),
            p => empty_controller(p),
        });
        let s = Setup::new(&server.url(), "");
        let mut cmd = support::provider_command(&support::garm_env(
            "GetInstance",
            &s.config,
            &[("GARM_POOL_ID", POOL), ("GARM_INSTANCE_ID", RUNNER)],
        ));
        let r = within_memory(&mut cmd, None);
        assert_eq!(r.code, 0, "{list}: {}", r.stderr);
        assert_eq!(r.json()["status"], "running", "{list}: {}", r.stdout);
    }
}

/// A server that places the password in what it answers about a runner (the AppInst's `uri`,
/// its site's name, the App's `RUNNER_OS_TYPE`): GARM's JSON, the CLI's table and its JSON show
/// `***` there, like every other writer.
#[test]
fn a_password_the_server_places_in_a_runners_fields_is_masked_on_stdout() {
    let server = Fake::start(|p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => {
            show_answer(owned_app_line().replace("\"linux\"", &format!("\"{PASSWORD}\"")))
        }
        "/api/v1/auth/ctrl/ShowAppInst" => show_answer(
            app_inst_line(OUR_APP_KEY, "Ready", "")
                .replace("\"Munich\"", &format!("\"Munich-{PASSWORD}\""))
                .replace(
                    "\"state\"",
                    &format!("\"uri\":\"{PASSWORD}.edge.example\",\"state\""),
                ),
        ),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), "");
    let person =
        |args: &[&str]| -> support::Run { support::run(s.person(CONTROLLER).args(args), None) };
    let runs = [
        s.garm("GetInstance", &[]),
        s.garm("ListInstances", &[]),
        person(&["list"]),
        person(&["get", RUNNER, "--format", "json"]),
        person(&["list", "--format", "json"]),
    ];
    for r in &runs {
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("***"), "{}", r.stdout);
        assert!(!r.stdout.contains(PASSWORD), "{}", r.stdout);
    }
    s.assert_no_secrets(&runs.iter().collect::<Vec<_>>());
}

#[test]
fn a_show_answer_cut_inside_its_last_line_is_never_a_short_list() {
    // First answer: our App, then the first 60 bytes of the next line and a clean end of the
    // body. The second answer is whole.
    let cut = Fake::start(|p, n| match (p, n) {
        ("/api/v1/auth/ctrl/ShowApp", 1) => {
            let mut body = owned_app_line();
            body.push_str(&owned_app_line()[..60]);
            show_answer(body)
        }
        ("/api/v1/auth/ctrl/ShowApp", _) => show_answer(owned_app_line()),
        (p, _) => empty_controller(p),
    });
    let s = Setup::new(&cut.url(), "");
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(list[0]["name"], RUNNER, "{}", r.stdout);
    assert_eq!(list[0]["status"], "stopped");
    assert_eq!(cut.count("/api/v1/auth/ctrl/ShowApp"), 2, "retried");

    // Cut every time: an error naming the cut, never `[]`.
    let always_cut = Fake::start(|p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => {
            let mut body = owned_app_line();
            body.push_str(&owned_app_line()[..60]);
            show_answer(body)
        }
        p => empty_controller(p),
    });
    let s = Setup::new(
        &always_cut.url(),
        "operation_timeout_secs = 3\nrequest_timeout_secs = 2\n",
    );
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(
        one_line(&r),
        "Edge Connect ShowApp: the answer ended inside a line (60 bytes after the last newline): it was cut short"
    );
}

#[test]
fn an_app_inst_that_names_no_app_is_never_deleted() {
    // The runner is stopped (its App has no AppInst); another App's AppInst has its name, and
    // the answers lack `app_key` (an older shape): nothing confirms that AppInst is ours.
    let server = Fake::start(|p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => show_answer(owned_app_line()),
        "/api/v1/auth/ctrl/ShowAppInst" => show_answer(app_inst_line("", "Ready", "")),
        "/api/v1/auth/ctrl/DeleteApp" => reply("200 OK", "{}"),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), "");
    let get = s.garm("GetInstance", &[]);
    assert_eq!(get.code, 0, "{}", get.stderr);
    let get: serde_json::Value = serde_json::from_str(&get.stdout).expect("JSON");
    assert_eq!(
        get["status"], "stopped",
        "the foreign AppInst is not the runner's"
    );
    let r = s.garm("DeleteInstance", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(server.count("/api/v1/auth/ctrl/DeleteAppInst"), 0);
    assert_eq!(server.count("/api/v1/auth/ctrl/DeleteApp"), 1);
}

#[test]
fn app_inst_errors_are_the_runners_fault() {
    use base64::Engine;
    let server = Fake::start(|p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => show_answer(owned_app_line()),
        "/api/v1/auth/ctrl/ShowAppInst" => show_answer(app_inst_line(
            OUR_APP_KEY,
            "CreateError",
            "\"pod r-0: Pending (0/1), container r: ImagePullBackOff\"",
        )),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), "");
    let want = "CreateError: pod r-0: Pending (0/1), container r: ImagePullBackOff";
    for command in ["GetInstance", "ListInstances"] {
        let r = s.garm(command, &[]);
        assert_eq!(r.code, 0, "{command}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
        let instance = if v.is_array() { &v[0] } else { &v };
        assert_eq!(instance["status"], "error", "{command}: {}", r.stdout);
        let fault = base64::engine::general_purpose::STANDARD
            .decode(instance["provider_fault"].as_str().expect("a fault"))
            .expect("base64");
        assert_eq!(String::from_utf8(fault).unwrap(), want, "{command}");
    }
}

/// An App of another pool of this controller, as one ShowApp line.
fn other_pool_app_line(n: usize) -> String {
    owned_app_line()
        .replace(RUNNER, &format!("other-runner-{n}"))
        .replace(POOL, "0bd4ec1e-0000-4000-8000-0000000000aa")
}

#[test]
fn an_error_trailer_after_lines_that_are_not_ours_is_still_an_error() {
    // Lines that name none of our runners are not parsed (only read); a `result` trailer among
    // them must still end the command, in either answer, never as a short list.
    let trailer = "{\"result\":{\"message\":\"Internal error reading apps\",\"code\":500}}\n";
    let other_apps = (0..50).map(other_pool_app_line).collect::<String>();
    let other_insts = (0..50)
        .map(|n| app_inst_line("", "Ready", "").replace(RUNNER, &format!("other-runner-{n}")))
        .collect::<String>();
    let in_show_app = Fake::start(move |p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => show_answer(format!("{other_apps}{trailer}")),
        p => empty_controller(p),
    });
    let in_show_app_inst = Fake::start(move |p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => show_answer(owned_app_line()),
        "/api/v1/auth/ctrl/ShowAppInst" => show_answer(format!("{other_insts}{trailer}")),
        p => empty_controller(p),
    });
    for (server, answer) in [(in_show_app, "ShowApp"), (in_show_app_inst, "ShowAppInst")] {
        let s = Setup::new(
            &server.url(),
            "operation_timeout_secs = 3\nrequest_timeout_secs = 2\n",
        );
        let r = s.garm("ListInstances", &[]);
        assert_eq!(r.code, 1, "{answer}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{answer}");
        assert_eq!(
            one_line(&r),
            format!("Edge Connect {answer}: Internal error reading apps")
        );
    }
}

#[test]
fn our_runner_among_other_pools_is_found_and_theirs_are_not_listed() {
    let mut apps = (0..20).map(other_pool_app_line).collect::<String>();
    apps.push_str(&owned_app_line());
    let server = Fake::start(move |p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => show_answer(apps.clone()),
        "/api/v1/auth/ctrl/ShowAppInst" => show_answer(app_inst_line(OUR_APP_KEY, "Ready", "")),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), "");
    let r = s.garm("ListInstances", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let list: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(list.as_array().map(Vec::len), Some(1), "{}", r.stdout);
    assert_eq!(list[0]["name"], RUNNER);
    assert_eq!(list[0]["status"], "running");
}

/// `text` with every character written as a JSON `\uXXXX` escape.
fn all_escaped(text: &str) -> String {
    text.chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect()
}

#[test]
fn lines_escaped_in_any_way_are_read_as_the_values_they_hold() {
    // Go's encoder writes these words as they are (docs/edge-connect-behaviours.md B2), but
    // anything between us and the controller may encode a line otherwise: the values count,
    // never the bytes. Every line that arrives is parsed.
    let escaped = |line: String| {
        [RUNNER, CONTROLLER, POOL]
            .into_iter()
            .fold(line, |line, word| line.replace(word, &all_escaped(word)))
    };
    let app = escaped(owned_app_line());
    let inst = escaped(app_inst_line(OUR_APP_KEY, "Ready", ""));
    assert!(
        !app.contains(RUNNER) && !inst.contains(RUNNER),
        "{app}{inst}"
    );
    let server = Fake::start(move |p, _| match p {
        "/api/v1/auth/ctrl/ShowApp" => show_answer(app.clone()),
        "/api/v1/auth/ctrl/ShowAppInst" => show_answer(inst.clone()),
        p => empty_controller(p),
    });
    let s = Setup::new(&server.url(), "");
    let get = s.garm("GetInstance", &[]);
    assert_eq!(get.code, 0, "{}", get.stderr);
    let get = get.json();
    assert_eq!(
        (&get["name"], &get["status"]),
        (&RUNNER.into(), &"running".into())
    );
    let list = s.garm("ListInstances", &[]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(
        list.statuses(),
        [(RUNNER.to_string(), "running".to_string())]
    );
}

// The site cache's lookups against answers without end (issue 46; docs/site-cache.md, "How the
// provider runs it"): one ShowAppInst finds every cache AppInst of this controller, one ShowApp
// every cache App. Past their bounds both are refused, never cut short: a cache left out would
// look absent and be started again.

const SHOW_APP: &str = "/api/v1/auth/ctrl/ShowApp";
const SHOW_APP_INST: &str = "/api/v1/auth/ctrl/ShowAppInst";
/// A cache App version (`t<slot>-<nonce>`, docs/site-cache.md "The App version is the attempt").
const CACHE_VERSION: &str = "t2950000-0000abcd";

/// The name of this controller's mirror App on the site every [`Setup`] config names (the
/// default simulator's first zone), as the provider makes it.
fn mirror_app_name() -> String {
    let (organization, name) = edge_connect_sim::SimConfig::default().zones[0].clone();
    let site = garm_provider_edge_connect::config::Placement::Zone(
        garm_provider_edge_connect::config::SiteKey {
            organization,
            name,
            ..Default::default()
        },
    );
    let service = garm_provider_edge_connect::site_cache::Service::Registry;
    garm_provider_edge_connect::site_cache::app_name(CONTROLLER, &site, service)
}

/// `s`'s config with the registry mirror enabled.
fn caching(s: Setup) -> Setup {
    s.edit_config(|text| format!("{text}\n[site_cache]\nregistry_mirror = true\n"));
    s
}

/// A Ready AppInst of the cache App `app`, as one ShowAppInst line; `texts` is written as given
/// between its state and the end of its object (`,"uri":…`).
fn cache_app_inst_line(app: &str, texts: &str) -> String {
    format!(
        "{{\"data\":{{\"key\":{{\"name\":\"{app}-2950000\",\"organization\":\"edp-developer-framework\"}},\"app_key\":{{\"organization\":\"edp-developer-framework\",\"name\":\"{app}\",\"version\":\"{CACHE_VERSION}\"}},\"zone_key\":{{\"organization\":\"TelekomOP\",\"name\":\"Munich\"}},\"state\":\"Ready\"{texts}}}}}\n"
    )
}

/// A cache App of this controller, as one ShowApp line.
fn cache_app_line(app: &str) -> String {
    format!(
        "{{\"data\":{{\"key\":{{\"organization\":\"edp-developer-framework\",\"name\":\"{app}\",\"version\":\"{CACHE_VERSION}\"}},\"env_vars\":{{\"GPEC_SITE_CACHE_CONTROLLER\":\"{CONTROLLER}\"}}}}}}\n"
    )
}

/// Texts of a cache AppInst that no bound of one text alone keeps small, ~100 KiB of what is
/// kept for each left out: a `uri` no DNS name is as long as, four long errors and many short
/// ones, four ports with a long `fqdn_prefix` and many with a short one; and many empty errors
/// and ports, which cost little to send and much to hold (a list's room, not its texts).
fn oversized_texts() -> String {
    let long = "x".repeat(25 * 1024);
    let short = "y".repeat(1000);
    let empty = String::new();
    let errors: Vec<&str> = [&long; 4]
        .into_iter()
        .chain([&short; 100])
        .chain(std::iter::repeat_n(&empty, 5000))
        .map(String::as_str)
        .collect();
    let port = |prefix: &str| {
        format!("{{\"proto\":\"LProtoTcp\",\"internal_port\":5000,\"public_port\":5000,\"fqdn_prefix\":\"{prefix}.\"}}")
    };
    let ports: Vec<String> = [&long; 4]
        .into_iter()
        .chain([&short; 100])
        .map(|p| port(p))
        .chain(std::iter::repeat_n("{}".to_string(), 5000))
        .collect();
    format!(
        ",\"uri\":\"{}.example\",\"errors\":{},\"mapped_ports\":[{}]",
        "u".repeat(100 * 1024),
        serde_json::to_string(&errors).expect("JSON"),
        ports.join(",")
    )
}

/// `site-cache list` run under the memory limit against a server that answers `path` with
/// `line` without end (everything else as an empty controller): the server and the run.
fn site_cache_list_against(path: &'static str, line: String) -> (Fake, Setup, support::Run) {
    let server = Fake::start(move |p, _| match p {
        p if p == path => forever(&line),
        p => empty_controller(p),
    });
    let s = caching(Setup::new(&server.url(), "operation_timeout_secs = 600\n"));
    let r = within_memory(s.person(CONTROLLER).args(["site-cache", "list"]), None);
    (server, s, r)
}

/// An answer of 200 and `line` again and again until the client hangs up.
fn forever(line: &str) -> Vec<Step> {
    vec![
        head("200 OK", ""),
        Step::Forever(line.repeat(10).into_bytes()),
    ]
}

#[test]
fn site_cache_list_refuses_a_show_app_inst_of_endless_cache_app_insts_at_its_bound() {
    // Each AppInst as long as the texts a hostile server may send: the bounds of each kept
    // AppInst's texts keep 1000 of them within the memory limit.
    let line = cache_app_inst_line(&mirror_app_name(), &oversized_texts());
    let (server, s, r) = site_cache_list_against(SHOW_APP_INST, line);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(
        one_line(&r),
        "error: Edge Connect ShowAppInst: more than 1000 site cache AppInsts of this controller"
    );
    // Not retried (the same answer would end the same way), and nothing asked after it.
    assert_eq!(server.count(SHOW_APP_INST), 1);
    assert_eq!(server.count(SHOW_APP), 0);
    s.assert_no_secrets(&[&r]);
}

#[test]
fn site_cache_list_refuses_a_cache_app_inst_whose_names_are_no_names() {
    // Its key, site, state and creation time are kept whole: 1000 of them, each as long as a
    // hostile server makes them, would outgrow the memory limit before the bound is reached.
    let app = mirror_app_name();
    let long = "n".repeat(100 * 1024);
    let line = cache_app_inst_line(&app, "");
    for (what, line) in [
        ("its name", line.replace("-2950000", &long)),
        (
            "its zone",
            line.replace("\"Munich\"", &format!("\"{long}\"")),
        ),
        (
            "its state",
            line.replace("\"Ready\"", &format!("\"{long}\"")),
        ),
        (
            "its creation time",
            cache_app_inst_line(&app, &format!(",\"created_at\":\"{long}\"")),
        ),
    ] {
        let (server, s, r) = site_cache_list_against(SHOW_APP_INST, line);
        assert_eq!(r.code, 1, "{what}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{what}");
        assert_eq!(
            one_line(&r),
            "error: Edge Connect ShowAppInst: a site cache AppInst of this controller names itself, its App, its site, its state or its creation time with more than 1024 bytes",
            "{what}"
        );
        assert_eq!(server.count(SHOW_APP_INST), 1, "{what}: not retried");
        s.assert_no_secrets(&[&r]);
    }
}

#[test]
fn site_cache_list_refuses_a_show_app_of_endless_cache_apps_at_its_bound() {
    let (server, s, r) = site_cache_list_against(SHOW_APP, cache_app_line(&mirror_app_name()));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(
        one_line(&r),
        "error: Edge Connect ShowApp: more than 10000 site cache Apps of this controller"
    );
    assert_eq!(server.count(SHOW_APP_INST), 1);
    assert_eq!(server.count(SHOW_APP), 1, "not retried");
    s.assert_no_secrets(&[&r]);
}

#[test]
fn a_dind_runner_is_created_without_its_site_cache_when_the_cache_lookup_has_no_end() {
    let line = cache_app_inst_line(&mirror_app_name(), "");
    // The first ShowAppInst is the lookup; the runner's create reads its own AppInst after.
    let server = Fake::start(move |p, n| match (p, n) {
        (SHOW_APP_INST, 1) => forever(&line),
        (SHOW_APP_INST, _) => show_answer(app_inst_line(OUR_APP_KEY, "Ready", "")),
        (p, _) => empty_controller(p),
    });
    let s = caching(Setup::new(&server.url(), "operation_timeout_secs = 60\n"));
    let mut bootstrap: serde_json::Value = serde_json::from_str(&support::fixture_with(
        "bootstrap-github-jit.json",
        RUNNER,
        POOL,
    ))
    .expect("JSON");
    bootstrap["extra_specs"]["docker"] = "dind".into();
    let mut cmd = support::provider_command(&support::garm_env(
        "CreateInstance",
        &s.config,
        &[("GARM_POOL_ID", POOL), ("GARM_INSTANCE_ID", RUNNER)],
    ));
    let r = within_memory(&mut cmd, Some(bootstrap.to_string().as_bytes()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["name"], RUNNER, "{}", r.stdout);
    // The lookup was not retried: one ShowAppInst before the runner's AppInst was asked for.
    let seen = server.seen();
    let before = seen.iter().take_while(|p| !p.ends_with("/CreateAppInst"));
    assert_eq!(
        before.filter(|p| *p == SHOW_APP_INST).count(),
        1,
        "{seen:?}"
    );
    // The runner's App and AppInst only: no cache is started on a lookup that failed.
    assert_eq!(server.count(&format!("{CTRL}CreateApp")), 1);
    assert_eq!(server.count(&format!("{CTRL}CreateAppInst")), 1);
    let log = s.log_text();
    assert_has(
        &log,
        "the site cache could not be read; the runner runs without it error=Edge Connect ShowAppInst: more than 1000 site cache AppInsts of this controller",
    );
    assert!(!log.contains("the runner uses its site's cache"), "{log}");
    s.assert_no_secrets(&[&r]);
}
