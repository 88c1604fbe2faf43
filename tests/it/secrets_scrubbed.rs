//! Issue 20 item 5: a server that echoes what it was sent (the Authorization header, the login
//! body, the CreateApp body) in any encoding. The provider runs as GARM runs it, behind a
//! front on 127.0.0.1 that forwards to the simulator and answers one RPC with a 400 quoting
//! the request; no form of any secret may reach stdout, stderr or the log.

use std::io::Write;
use std::net::{TcpListener, TcpStream};

use edge_connect_sim::{self as sim, SimConfig};

use crate::support::{assert_has, assert_starts, fixture_with, run, Run, Site, World, POOL, USER};

/// The Edge Connect password: a quote, a backslash, non-ASCII and Go's escaped characters.
const PASSWORD: &str = "pä\"ss\\wörd&<>-7319xq";
/// The registry password, in the provider's environment.
const REGISTRY_PASSWORD: &str = "rég\"istry\\pw&<>-4471xq";
/// The pool's proxy, with credentials.
const PROXY: &str = "http://squid:proxy-pass-5582@proxy.internal:3128";
/// Pieces that every encoding of a secret keeps (letters, digits, `-`, base64url): none may be
/// seen. Letters with the digits: a log's timestamps hold any four digits (`.607319Z`).
const FRAGMENTS: [&str; 5] = [
    "7319xq",
    "4471xq",
    "proxy-pass",
    // The instance token's signature, and the start of every JWT (the Edge Connect token too).
    "c2lnbmF0dXJl",
    "eyJhbGciOi",
];

/// How the hostile front answers a request it quotes: HTTP status and JSON body.
pub(crate) type Echo = fn(&Request) -> (u16, String);

/// A 400 whose message is `message`, as the Master Controller refuses a request.
pub(crate) fn refusal(message: String) -> (u16, String) {
    (400, serde_json::json!({ "message": message }).to_string())
}

/// One HTTP request as received.
pub(crate) struct Request {
    path: String,
    head: String,
    body: serde_json::Value,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> String {
        self.head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    }

    /// A string field of the CreateApp body.
    fn app(&self, pointer: &str) -> String {
        self.body
            .pointer(&format!("/app{pointer}"))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// Forwards every request to the simulator, except those to `target`, answered as
/// `echo(request)` says.
fn hostile_front(sim_port: u16, target: &'static str, echo: Echo) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let Ok(socket) = socket else { continue };
            std::thread::spawn(move || serve(socket, sim_port, target, echo));
        }
    });
    port
}

fn serve(mut client: TcpStream, sim_port: u16, target: &str, echo: Echo) {
    let Some((head, raw_body)) = hostile_server::read_request(&mut client) else {
        return;
    };
    let path = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    if path.ends_with(&format!("/{target}")) {
        let request = Request {
            path,
            head: head.clone(),
            body: serde_json::from_slice(&raw_body).unwrap_or_default(),
        };
        let (status, body) = echo(&request);
        let _ = write!(
            client,
            "HTTP/1.1 {status} Echo\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    // One request per connection: ask the simulator to close after its answer, and copy it
    // back until then (streams included).
    let Ok(mut upstream) = TcpStream::connect(("127.0.0.1", sim_port)) else {
        return;
    };
    let mut forwarded: String = head
        .lines()
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:") && !l.is_empty())
        .map(|l| format!("{l}\r\n"))
        .collect();
    forwarded.push_str("Connection: close\r\n\r\n");
    if upstream.write_all(forwarded.as_bytes()).is_err() || upstream.write_all(&raw_body).is_err() {
        return;
    }
    let _ = std::io::copy(&mut upstream, &mut client);
}

/// A value as Go's encoder writes it, ASCII only (`&` as `\u0026`, `é` as `\u00e9`).
fn go_ascii(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap();
    let mut out = String::new();
    for c in json.trim_matches('"').chars() {
        match c {
            '&' | '<' | '>' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if !c.is_ascii() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encoding of every byte but the unreserved ones.
fn url_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// A simulator that knows [`PASSWORD`], the hostile front before it, and a config pointing
/// at the front (`log_format` as given).
pub(crate) fn world(target: &'static str, echo: Echo, log_format: &str) -> World {
    world_with(PASSWORD, target, echo, log_format)
}

/// [`world`] for another password.
fn world_with(password: &str, target: &'static str, echo: Echo, log_format: &str) -> World {
    let sim = sim::spawn(SimConfig {
        users: vec![(USER.to_string(), password.to_string())],
        ..SimConfig::default()
    })
    .expect("simulator starts");
    let sim_port = sim.url().rsplit(':').next().unwrap().parse().unwrap();
    let front = hostile_front(sim_port, target, echo);
    let w = World::around(sim, Site::Zone, "");
    let text = std::fs::read_to_string(&w.config).unwrap();
    let text = text
        .replace(&w.sim.url(), &format!("http://127.0.0.1:{front}"))
        .replace(
            "log_level = \"debug\"",
            &format!("log_level = \"trace\"\nlog_format = \"{log_format}\""),
        );
    std::fs::write(&w.config, text).unwrap();
    // A JSON string's escapes are a TOML basic string's.
    let toml_escaped = serde_json::to_string(password).unwrap();
    w.write_credentials(&toml_escaped[1..toml_escaped.len() - 1], 0o600);
    w
}

/// CreateInstance of a pool with a private image and a proxy with credentials.
fn create(w: &World) -> Run {
    let mut bootstrap: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-echoed",
        POOL,
    ))
    .unwrap();
    bootstrap["proxy_config"] = serde_json::json!({"https_proxy": PROXY, "http_proxy": PROXY});
    bootstrap["extra_specs"] = serde_json::json!({
        "image_pull_username": "puller",
        "image_pull_password_env": "REGISTRY_PASSWORD",
    });
    w.garm(
        "CreateInstance",
        &[
            ("GARM_POOL_ID", POOL),
            ("REGISTRY_PASSWORD", REGISTRY_PASSWORD),
        ],
        Some(&bootstrap.to_string()),
    )
}

/// The run failed with the server's (masked) words on its one stderr line, and no piece of a
/// secret is anywhere.
fn assert_scrubbed(w: &World, r: &Run, starts: &str) {
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.starts_with(starts), "{}", r.stderr);
    assert!(
        r.stderr.contains("***"),
        "the echo was masked: {}",
        r.stderr
    );
    let log = w.log_text();
    assert!(log.contains("***"), "the log has the masked echo: {log}");
    for (what, text) in [("stderr", &r.stderr), ("log", &log)] {
        for fragment in FRAGMENTS {
            assert!(!text.contains(fragment), "{what} holds {fragment}: {text}");
        }
    }
}

#[test]
fn an_echoed_authorization_header_is_masked() {
    fn echo(r: &Request) -> (u16, String) {
        refusal(format!(
            "invalid request: header Authorization: {} (path {})",
            r.header("authorization"),
            r.path
        ))
    }
    let w = world("CreateApp", echo, "text");
    let r = create(&w);
    assert_scrubbed(
        &w,
        &r,
        "Edge Connect CreateApp (HTTP 400): invalid request: header Authorization: Bearer *** (path /api/v1/auth/ctrl/CreateApp)",
    );
}

#[test]
fn an_echoed_create_app_body_is_masked_in_every_encoding() {
    // What the body carried, quoted as serde_json and Go (ASCII only) write it and URL-encoded.
    fn echo(r: &Request) -> (u16, String) {
        let fields = [
            r.app("/credentials"),
            r.app("/secret_env_vars/HTTPS_PROXY"),
            r.app("/secret_env_vars/BEARER_TOKEN"),
        ];
        let mut message = String::from("cannot decode app:");
        for field in &fields {
            message.push_str(&format!(
                " json={} go={} url={}",
                serde_json::to_string(field).unwrap(),
                go_ascii(field),
                url_encoded(field)
            ));
        }
        refusal(message)
    }
    for format in ["text", "json"] {
        let w = world("CreateApp", echo, format);
        let r = create(&w);
        assert_scrubbed(
            &w,
            &r,
            "Edge Connect CreateApp (HTTP 400): cannot decode app: json=\"***\" go=*** url=*** json=\"***\" go=*** url=***",
        );
        assert!(w.app_names().is_empty(), "{:?}", w.app_names());
    }
}

#[test]
fn an_echoed_login_body_with_quote_backslash_and_umlaut_is_masked() {
    fn echo(r: &Request) -> (u16, String) {
        let password = r.body["password"].as_str().unwrap_or_default().to_string();
        refusal(format!(
            "bad login {} go={} url={}",
            r.body,
            go_ascii(&password),
            url_encoded(&password)
        ))
    }
    let w = world("login", echo, "json");
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_scrubbed(
        &w,
        &r,
        "Edge Connect login (HTTP 400): bad login {\"password\":\"***\",\"username\":\"garm\"} go=*** url=***",
    );
}

/// The front itself forwards faithfully: without an echo the create succeeds through it.
#[test]
fn the_hostile_front_forwards_everything_else() {
    fn echo(_: &Request) -> (u16, String) {
        refusal(String::new())
    }
    let w = world("NoSuchRpc", echo, "text");
    let r = create(&w);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(w.app_names(), vec!["garm-echoed".to_string()]);
}

/// `check` quotes the server's answers in its report on stdout: scrubbed like the rest.
#[test]
fn checks_report_of_an_echoed_login_is_masked() {
    fn echo(r: &Request) -> (u16, String) {
        let password = r.body["password"].as_str().unwrap_or_default().to_string();
        refusal(format!(
            "bad login {} url={}",
            r.body,
            url_encoded(&password)
        ))
    }
    let w = world("login", echo, "text");
    let Run {
        code,
        stdout,
        stderr,
    } = w.cli(&["check"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("bad login {\"password\":\"***\",\"username\":\"garm\"} url=***"),
        "{stdout}"
    );
    for text in [&stdout, &stderr] {
        for fragment in FRAGMENTS {
            assert!(!text.contains(fragment), "holds {fragment}: {text}");
        }
    }
}

/// Progress lines of the CreateAppInst stream are the server's words too; they reach the log
/// (GARM mode) and stderr (the CLI's progress) without being an error message.
#[test]
fn an_echo_in_the_create_streams_progress_is_masked() {
    fn echo(r: &Request) -> (u16, String) {
        let progress = serde_json::json!({"data": {"message": format!(
            "Creating with {} and the token {}",
            r.header("authorization"),
            r.header("authorization").trim_start_matches("Bearer ")
        )}});
        let result =
            serde_json::json!({"result": {"message": "Create App Inst failed: no", "code": 400}});
        (200, format!("{progress}\n{result}\n"))
    }
    let w = world("CreateAppInst", echo, "text");
    let r = create(&w);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let log = w.log_text();
    assert!(
        log.contains("Creating with Bearer *** and the token ***"),
        "{log}"
    );
    for fragment in FRAGMENTS {
        assert!(!log.contains(fragment), "log holds {fragment}: {log}");
        assert!(
            !r.stderr.contains(fragment),
            "stderr holds {fragment}: {}",
            r.stderr
        );
    }

    // The CLI shows the same progress on stderr.
    let bootstrap = w.dir.path().join("bootstrap.json");
    std::fs::write(
        &bootstrap,
        fixture_with("bootstrap-github-jit.json", "garm-cli-echo", POOL),
    )
    .unwrap();
    let out = run(
        w.person(crate::support::CONTROLLER)
            .args(["create", "--bootstrap"])
            .arg(&bootstrap),
        None,
    );
    let stderr = out.stderr;
    assert_eq!(out.code, 1, "{stderr}");
    assert!(
        stderr.contains("Creating with Bearer *** and the token ***"),
        "{stderr}"
    );
    for fragment in FRAGMENTS {
        assert!(
            !stderr.contains(fragment),
            "CLI stderr holds {fragment}: {stderr}"
        );
    }
}

/// Issue 25: distinct download tokens in one bootstrap, far past any small bound of the scrubber.
const TOOLS: usize = 1000;
/// The tool whose token is 64 KiB long.
const LONG_TOKEN_TOOL: usize = 500;

/// The download token of tool `i`: a quote, a backslash, a space, non-ASCII and Go's escaped
/// characters, and its number; one of them 64 KiB long.
fn download_token(i: usize) -> String {
    let token = format!("ghs_dl{i:04} \"q\\ü&<>-tok");
    match i {
        LONG_TOKEN_TOOL => {
            let mut long = token;
            while long.len() < 64 * 1024 {
                long.push_str(&format!("-{:05}", long.len()));
            }
            long
        }
        _ => token,
    }
}

/// `s` JSON-escaped with every character as `\uXXXX`.
fn all_unicode_escapes(s: &str) -> String {
    s.encode_utf16().map(|u| format!("\\u{u:04x}")).collect()
}

/// Every encoding issue 25 lists, each a word of its own: raw; JSON-escaped as serde_json
/// writes it, as Go writes it (ASCII only), with every character as `\uXXXX`; URL-encoded
/// (`%20` and `+` for a space) raw and of each JSON-escaped form.
fn encodings(s: &str) -> Vec<String> {
    let serde = serde_json::to_string(s).unwrap();
    let serde = serde.trim_matches('"').to_string();
    let escaped = [serde, go_ascii(s), all_unicode_escapes(s)];
    let mut all = vec![
        s.to_string(),
        url_encoded(s),
        url_encoded(s).replace("%20", "+"),
    ];
    for e in escaped {
        all.push(url_encoded(&e));
        all.push(e);
    }
    all
}

/// A CreateInstance bootstrap with [`TOOLS`] tools, each with its own download token, besides
/// what [`create`] sends (a private image, a proxy with credentials).
fn create_with_tools(w: &World, env: &[(&str, &str)]) -> Run {
    let mut bootstrap: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-thousand",
        POOL,
    ))
    .unwrap();
    let template = bootstrap["tools"][0].clone();
    bootstrap["tools"] = (0..TOOLS)
        .map(|i| {
            let mut tool = template.clone();
            // The first is the one the runner downloads; the others are of other platforms.
            if i > 0 {
                tool["architecture"] = serde_json::json!(format!("arch{i}"));
            }
            tool["temp_download_token"] = serde_json::json!(download_token(i));
            tool
        })
        .collect();
    bootstrap["proxy_config"] = serde_json::json!({"https_proxy": PROXY, "http_proxy": PROXY});
    bootstrap["extra_specs"] = serde_json::json!({
        "image_pull_username": "puller",
        "image_pull_password_env": "REGISTRY_PASSWORD",
    });
    let mut vars = vec![
        ("GARM_POOL_ID", POOL),
        ("REGISTRY_PASSWORD", REGISTRY_PASSWORD),
    ];
    vars.extend_from_slice(env);
    w.garm("CreateInstance", &vars, Some(&bootstrap.to_string()))
}

/// The scenario issue 25 measured: 62 tools or more and a login answer that echoes its body put
/// the Edge Connect password on stderr. With a thousand, nothing of it is seen.
#[test]
fn a_thousand_download_tokens_leave_the_echoed_password_masked() {
    fn echo(r: &Request) -> (u16, String) {
        let password = r.body["password"].as_str().unwrap_or_default().to_string();
        refusal(format!(
            "bad login {} as {}",
            r.body,
            encodings(&password).join(" ")
        ))
    }
    for format in ["text", "json"] {
        let w = world("login", echo, format);
        let r = create_with_tools(&w, &[]);
        let masks = vec!["***"; encodings(PASSWORD).len()].join(" ");
        assert_scrubbed(
            &w,
            &r,
            &format!(
                "Edge Connect login (HTTP 400): bad login {{\"password\":\"***\",\"username\":\"garm\"}} as {masks}"
            ),
        );
    }
}

/// A controller that repeats, in its CreateAppInst progress, every secret of the command in
/// every encoding: the password, the registry password, the proxy URL and each of the thousand
/// download tokens (one 64 KiB long). Every one of those lines reaches the log as masks only.
#[test]
fn a_thousand_secrets_echoed_in_every_encoding_are_all_masked() {
    fn echo(r: &Request) -> (u16, String) {
        let line = |message: String| serde_json::json!({"data": {"message": message}}).to_string();
        let token = r.header("authorization");
        let mut lines = vec![line(format!(
            "own {} {}",
            encodings(PASSWORD).join(" "),
            encodings(REGISTRY_PASSWORD).join(" ")
        ))];
        lines.push(line(format!(
            "proxy {} session {}",
            encodings(PROXY).join(" "),
            encodings(token.trim_start_matches("Bearer ")).join(" ")
        )));
        for i in 0..TOOLS {
            lines.push(line(format!(
                "tool {i}: {}",
                encodings(&download_token(i)).join(" ")
            )));
        }
        lines.push(
            serde_json::json!({"result": {"message": "Create App Inst failed: no", "code": 400}})
                .to_string(),
        );
        (200, lines.join("\n") + "\n")
    }
    let masks = |n: usize| vec!["***"; n].join(" ");
    let per_secret = encodings(PASSWORD).len();
    for format in ["text", "json"] {
        let w = world("CreateAppInst", echo, format);
        let started = std::time::Instant::now();
        let r = create_with_tools(&w, &[]);
        let took = started.elapsed();
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert_eq!(r.stdout, "");
        let log = w.log_text();
        let own = format!("own {} {}", masks(per_secret), masks(per_secret));
        assert!(log.contains(&own), "{own} not in the log");
        let proxy = format!("proxy {} session {}", masks(per_secret), masks(per_secret));
        assert!(log.contains(&proxy), "{proxy} not in the log");
        for i in 0..TOOLS {
            let line = format!("tool {i}: {}", masks(per_secret));
            assert!(log.contains(&line), "{line} not in the log ({format})");
        }
        for (what, text) in [("stderr", &r.stderr), ("log", &log)] {
            for fragment in [
                "7319xq",
                "4471xq",
                "proxy-pass",
                "c2lnbmF0dXJl",
                "eyJhbGciOi",
                "ghs_dl",
                "-tok",
            ] {
                let at = text
                    .find(fragment)
                    .map(|at| &text[at.saturating_sub(300)..(at + 100).min(text.len())]);
                assert!(at.is_none(), "{what} holds {fragment}: {at:?}");
            }
        }
        eprintln!("{format}: create with {TOOLS} echoed secrets took {took:?}");
        assert!(w.app_names().is_empty(), "rolled back: {:?}", w.app_names());
    }
}

/// Past the scrubber's bound (1 MiB of secrets) the command is refused with one line before any
/// request: it never goes on with secrets it could not mask.
#[test]
fn more_secrets_than_can_be_masked_refuse_the_command_before_any_request() {
    let w = World::new();
    let mut bootstrap: serde_json::Value = serde_json::from_str(&fixture_with(
        "bootstrap-github-jit.json",
        "garm-too-many",
        POOL,
    ))
    .unwrap();
    let template = bootstrap["tools"][0].clone();
    bootstrap["tools"] = (0..300)
        .map(|i| {
            let mut tool = template.clone();
            tool["temp_download_token"] = serde_json::json!(format!("{i:04}{}", "t".repeat(4096)));
            tool
        })
        .collect();
    let r = w.garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&bootstrap.to_string()),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    // 300 tokens of 4,100 bytes, the password and the instance token.
    assert_starts(&r.stderr, "the command holds 12304");
    assert!(
        r.stderr.ends_with(" bytes of secrets, more than the 1048576 bytes whose masking in output can be guaranteed; nothing was sent (fewer or shorter tokens in the bootstrap, or a shorter proxy URL)\n"),
        "{}",
        r.stderr
    );
    assert!(w.sim.request_log().is_empty(), "{:?}", w.sim.request_log());
}

/// A password with a tab, two spaces in a row, a no-break space and a final newline, quoted as
/// it is by the server in a login refusal: masked as it came in GARM's fault line, the log, the
/// CLI's error line and `check`'s report, before anything made the text one line.
#[test]
fn a_password_with_odd_whitespace_quoted_at_login_is_masked_everywhere() {
    const ODD: &str = "Tq4\tXz  Rv8\u{a0}Lm5-Wk5537\n";
    fn echo(r: &Request) -> (u16, String) {
        let password = r.body["password"].as_str().unwrap_or_default();
        refusal(format!("bad login for {password} from garm"))
    }
    let visible = |text: &str| {
        ["Wk5537", "Rv8", "Tq4"]
            .into_iter()
            .find(|piece| text.contains(piece))
    };
    for format in ["text", "json"] {
        let w = world_with(ODD, "login", echo, format);
        let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert_eq!(
            r.stderr,
            "Edge Connect login (HTTP 400): bad login for *** from garm (check credentials_file or EDP_EDGE_CONNECT_USERNAME/EDP_EDGE_CONNECT_PASSWORD)\n"
        );
        let log = w.log_text();
        assert!(log.contains("***"), "{log}");
        assert_eq!(visible(&log), None, "{log}");
        let cli = w
            .person(crate::support::CONTROLLER)
            .arg("list")
            .output()
            .unwrap();
        let cli_err = String::from_utf8_lossy(&cli.stderr);
        assert_eq!(cli.status.code(), Some(1), "{cli_err}");
        assert!(cli_err.contains("bad login for *** from garm"), "{cli_err}");
        assert_eq!(visible(&cli_err), None, "{cli_err}");
        let check = w
            .person(crate::support::CONTROLLER)
            .arg("check")
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&check.stdout);
        assert_eq!(check.status.code(), Some(1), "{report}");
        assert!(report.contains("bad login for *** from garm"), "{report}");
        assert_eq!(visible(&report), None, "{report}");
    }
}

/// A password too short to be masked without blanking ordinary words is refused before any
/// request, naming where it came from and the minimum.
#[test]
fn a_password_shorter_than_eight_characters_is_refused_naming_the_minimum() {
    let w = World::new();
    let r = w.garm(
        "ListInstances",
        &[
            ("GARM_POOL_ID", POOL),
            ("EDP_EDGE_CONNECT_PASSWORD", "garm"),
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(
            "the Edge Connect password in EDP_EDGE_CONNECT_PASSWORD has 4 characters; at least 8 are needed"
        ),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert_eq!(w.calls("login"), 0);
    // From the credentials file, the file is named.
    w.write_credentials("abc", 0o600);
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("credentials_file "), "{}", r.stderr);
    assert_has(&r.stderr, "has 3 characters; at least 8");
}
