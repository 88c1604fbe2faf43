//! The client against tiny misbehaving servers on 127.0.0.1: redirects, endless and
//! newline-free bodies, drip-feeding, silence, transient and refused logins, unreachable hosts.
//! Each test finishes in a few seconds; none asserts on timing, they assert on outcomes (a test
//! that regressed would hang or run out of memory instead of passing).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::{ApiErrorKind, Client, ClientOptions, Credentials, Deadline, Secret};

const PASSWORD: &str = "hostile-test-password";
/// A JWT-shaped token (exp in 2100) that must never be printed either.
const TOKEN: &str = "eyJhbGciOiJIUzUxMiJ9.eyJleHAiOjQxMDI0NDQ4MDB9.c2lnbmF0dXJl";

/// One thing the server does while answering.
#[derive(Clone)]
pub(crate) enum Step {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Wait.
    Sleep(Duration),
    /// Write these bytes again and again until the client hangs up.
    Forever(Vec<u8>),
    /// Write these bytes with a pause between each, until the client hangs up.
    Drip(Vec<u8>, Duration),
}

type Handler = dyn Fn(&str, usize) -> Vec<Step> + Send + Sync;

/// A server on 127.0.0.1 that answers each request as `handler(path, nth request to that path)`
/// says, one request per connection, and records the paths it was asked for.
pub(crate) struct Server {
    pub(crate) url: String,
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(crate) async fn start(
        handler: impl Fn(&str, usize) -> Vec<Step> + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let handler = handler.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let Some((path, _body)) = read_request(&mut socket).await else {
                        return;
                    };
                    let nth = {
                        let mut log = log.lock().unwrap();
                        log.push(path.clone());
                        log.iter().filter(|p| **p == path).count()
                    };
                    for step in handler(&path, nth) {
                        let ok = match step {
                            Step::Write(b) => socket.write_all(&b).await.is_ok(),
                            Step::Sleep(d) => {
                                tokio::time::sleep(d).await;
                                true
                            }
                            Step::Forever(b) => loop {
                                if socket.write_all(&b).await.is_err() {
                                    break false;
                                }
                            },
                            Step::Drip(b, every) => loop {
                                if socket.write_all(&b).await.is_err() {
                                    break false;
                                }
                                tokio::time::sleep(every).await;
                            },
                        };
                        if !ok {
                            return;
                        }
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        Server {
            url: format!("http://127.0.0.1:{port}"),
            port,
            seen,
        }
    }

    /// Paths requested so far.
    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_string();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some((path, buf[head_end..].to_vec()))
}

/// Status line and headers of an answer whose body runs until the connection closes.
pub(crate) fn head(status: &str, extra: &str) -> Step {
    Step::Write(
        format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n{extra}\r\n")
            .into_bytes(),
    )
}

/// A whole JSON answer.
pub(crate) fn reply(status: &str, body: &str) -> Vec<Step> {
    vec![
        Step::Write(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        ),
    ]
}

/// A login that works.
pub(crate) fn token_reply() -> Vec<Step> {
    reply("200 OK", &format!(r#"{{"token":"{TOKEN}"}}"#))
}

fn options(url: &str) -> ClientOptions {
    ClientOptions {
        url: url.to_string(),
        region: "EU".into(),
        request_timeout: Duration::from_secs(1),
        connect_retry: Duration::from_secs(1),
        ca_bundle: None,
        insecure_skip_verify: false,
    }
}

fn client(url: &str) -> Client {
    client_until(url, Deadline::after(Duration::from_secs(20)))
}

fn client_until(url: &str, deadline: Deadline) -> Client {
    Client::new(
        &options(url),
        Credentials {
            username: "u".into(),
            password: Secret::new(PASSWORD),
        },
        deadline,
    )
    .unwrap()
}

fn assert_secret_free(text: &str) {
    assert!(!text.contains(PASSWORD), "password in: {text}");
    assert!(!text.contains("eyJhbGciOi"), "token in: {text}");
}

fn app_key() -> crate::models::AppKey {
    crate::models::AppKey {
        organization: "o".into(),
        name: "n".into(),
        version: "1".into(),
    }
}

fn app() -> crate::models::NewApp {
    crate::models::NewApp {
        key: app_key(),
        image_type: "Docker",
        image_path: "i".into(),
        deployment: "kubernetes",
        default_flavor: crate::models::FlavorKey { name: "f".into() },
        command: None,
        command_args: Vec::new(),
        configs: Vec::new(),
        env_vars: Default::default(),
        secret_env_vars: Default::default(),
        username: None,
        credentials: None,
    }
}

#[tokio::test]
async fn redirects_from_login_are_refused_and_the_target_gets_nothing() {
    for status in ["307 Temporary Redirect", "308 Permanent Redirect"] {
        let elsewhere = Server::start(|_, _| token_reply()).await;
        let target = format!("{}/steal?password=x", elsewhere.url);
        let server = Server::start(move |_, _| {
            let mut r = reply(status, "{}");
            if let Step::Write(b) = &mut r[0] {
                let text = String::from_utf8_lossy(b).replace(
                    "Connection: close\r\n",
                    &format!("Connection: close\r\nLocation: {target}\r\n"),
                );
                *b = text.into_bytes();
            }
            r
        })
        .await;
        let c = client(&server.url);
        let e = c.login().await.unwrap_err();
        assert_eq!(e.kind, ApiErrorKind::Redirect, "{e}");
        let text = e.to_string();
        assert!(text.contains(&status[..3]), "{text}");
        assert!(
            text.contains(&format!("127.0.0.1:{}", elsewhere.port)),
            "{text}"
        );
        assert!(
            !text.contains("steal"),
            "the target's path and query stay out: {text}"
        );
        assert_secret_free(&text);
        assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
        assert_eq!(server.seen().len(), 1, "a redirect is final, not retried");
    }
}

#[tokio::test]
async fn a_redirect_from_create_app_sends_the_app_nowhere() {
    let elsewhere = Server::start(|_, _| reply("200 OK", "{}")).await;
    let location = format!("Location: {}/api/v1/auth/ctrl/CreateApp\r\n", elsewhere.url);
    let server = Server::start(move |path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => {
            let mut steps = vec![head("307 Temporary Redirect", &location)];
            steps.push(Step::Write(b"{}".to_vec()));
            steps
        }
    })
    .await;
    let e = client(&server.url).create_app(&app()).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Redirect, "{e}");
    assert_eq!(e.rpc, "CreateApp");
    assert!(elsewhere.seen().is_empty());
    assert_secret_free(&e.to_string());
}

#[tokio::test]
async fn an_endless_error_body_is_cut_and_the_status_kept() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("400 Bad Request", ""),
            Step::Forever(vec![b'x'; 64 * 1024]),
        ],
    })
    .await;
    let e = client(&server.url)
        .show_apps(&Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Rejected, "{e}");
    assert_eq!(e.status, Some(400));
    assert!(e.message.len() < 200, "{}", e.message);
}

#[tokio::test]
async fn a_stream_line_without_newline_is_a_protocol_error_naming_the_cap() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Write(br#"{"data":{"key":{"name":""#.to_vec()),
            Step::Forever(vec![b'a'; 256 * 1024]),
        ],
    })
    .await;
    let e = client(&server.url)
        .show_apps(&Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Protocol, "{e}");
    let text = e.to_string();
    assert!(text.contains("ShowApp"), "{text}");
    assert!(text.contains("8192 KiB"), "{text}");
}

#[tokio::test]
async fn an_endless_show_answer_is_cut_at_the_object_cap() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Forever(
                "{\"data\":{\"key\":{\"name\":\"r\",\"organization\":\"o\"},\"state\":\"Ready\"}}\n"
                    .repeat(1000)
                    .into_bytes(),
            ),
        ],
    })
    .await;
    let e = client(&server.url)
        .show_app_insts(&Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Protocol, "{e}");
    assert!(e.to_string().contains("ShowAppInst"), "{e}");
    assert!(e.to_string().contains("100000 objects"), "{e}");
}

#[tokio::test]
async fn an_endless_unary_answer_is_a_protocol_error() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![head("200 OK", ""), Step::Forever(vec![b' '; 64 * 1024])],
    })
    .await;
    let e = client(&server.url).create_app(&app()).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Protocol, "{e}");
    assert!(e.to_string().contains("CreateApp"), "{e}");
}

#[tokio::test]
async fn drip_feeding_does_not_outlive_the_deadline() {
    // One byte every 300 ms never trips the 1 s silence bound; only the deadline ends it.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Drip(b" ".to_vec(), Duration::from_millis(300)),
        ],
    })
    .await;
    let c = client(&server.url);
    let e = c
        .until(Deadline::after(Duration::from_secs(2)))
        .show_apps(&Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Transport, "{e}");
    assert!(e.message.contains("deadline"), "{e}");
    // The same under the deadline the client was built with, for a unary call.
    let c = client_until(&server.url, Deadline::after(Duration::from_secs(2)));
    let e = c.create_app(&app()).await.unwrap_err();
    assert!(e.message.contains("deadline"), "{e}");
}

#[tokio::test]
async fn a_drip_fed_login_ends_by_the_deadline() {
    let server = Server::start(|_, _| {
        vec![
            head("200 OK", ""),
            Step::Drip(b" ".to_vec(), Duration::from_millis(300)),
        ]
    })
    .await;
    let c = client_until(&server.url, Deadline::after(Duration::from_secs(2)));
    let e = c.show_apps(&Default::default()).await.unwrap_err();
    assert!(e.message.contains("deadline"), "{e}");
    // The diagnostic single attempt as well.
    let e = c.login().await.unwrap_err();
    assert!(e.message.contains("deadline"), "{e}");
}

#[tokio::test]
async fn a_quiet_app_inst_stream_is_not_closed_before_the_deadline() {
    // 2.5 s of silence, more than twice the 1 s request timeout: closing now would make the
    // controller undo the create.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            // The controller sends the headers with the first progress line: waiting for them
            // is silence too.
            Step::Sleep(Duration::from_millis(1500)),
            head("200 OK", ""),
            Step::Write(b"{\"data\":{\"message\":\"Creating\"}}\n".to_vec()),
            Step::Sleep(Duration::from_millis(2500)),
            Step::Write(b"{\"data\":{\"message\":\"Created AppInst successfully\"}}\n".to_vec()),
        ],
    })
    .await;
    let c = client(&server.url);
    let inst = crate::models::NewAppInst {
        key: crate::models::AppInstKey {
            name: "n".into(),
            organization: "o".into(),
            ..Default::default()
        },
        app_key: app_key(),
        zone_key: None,
    };
    let mut seen = Vec::new();
    let end = c
        .create_app_inst(&inst, &mut |m: &str| seen.push(m.to_string()))
        .await
        .unwrap();
    assert_eq!(
        end,
        crate::StreamEnd::Completed("Created AppInst successfully".into())
    );
    // A Show answer that goes as quiet is cut by the silence bound.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![head("200 OK", ""), Step::Sleep(Duration::from_secs(5))],
    })
    .await;
    let e = client(&server.url)
        .show_apps(&Default::default())
        .await
        .unwrap_err();
    assert!(e.message.contains("request_timeout_secs"), "{e}");
}

#[tokio::test]
async fn transient_login_failures_are_retried() {
    let server = Server::start(|path, nth| match (path, nth) {
        ("/api/v1/login", 1) => reply(
            "503 Service Unavailable",
            r#"{"message":"Service temporarily unavailable"}"#,
        ),
        ("/api/v1/login", 2) => reply(
            "429 Too Many Requests",
            r#"{"message":"rejected, please retry later"}"#,
        ),
        ("/api/v1/login", _) => token_reply(),
        _ => reply("200 OK", ""),
    })
    .await;
    let reports = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reports.clone();
    let c = client(&server.url).with_retry_report(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_string())
    }));
    let apps = c.show_apps(&Default::default()).await.unwrap();
    assert!(apps.is_empty());
    assert_eq!(c.logins(), 1);
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(reports[0].starts_with("retrying login: "), "{reports:?}");
    assert!(reports[1].ends_with("(attempt 3)"), "{reports:?}");
}

#[tokio::test]
async fn a_slow_login_answer_is_retried() {
    let server = Server::start(|path, nth| match (path, nth) {
        ("/api/v1/login", 1) => vec![Step::Sleep(Duration::from_secs(3))],
        ("/api/v1/login", _) => token_reply(),
        _ => reply("200 OK", ""),
    })
    .await;
    let c = client(&server.url);
    c.show_apps(&Default::default()).await.unwrap();
    assert_eq!(c.logins(), 1);
}

#[tokio::test]
async fn refused_and_two_factor_logins_are_final() {
    for (status, message, kind_text) in [
        (
            "400 Bad Request",
            "Invalid username or password",
            "check credentials_file",
        ),
        (
            "401 Unauthorized",
            "Invalid username or password",
            "check credentials_file",
        ),
        (
            "511 Network Authentication Required",
            "Missing OTP",
            "the Edge Connect user has two-factor authentication; use a user or API key without it",
        ),
    ] {
        // A hostile server echoes the password: it must still not reach the message.
        let body = format!(r#"{{"message":"{message} for {PASSWORD}"}}"#);
        let server = Server::start(move |_, _| reply(status, &body)).await;
        let c = client(&server.url);
        let e = c.show_apps(&Default::default()).await.unwrap_err();
        assert_eq!(e.kind, ApiErrorKind::Auth, "{e}");
        let text = e.to_string();
        assert!(text.contains(kind_text), "{text}");
        assert_secret_free(&text);
        // A second call of the same command does not try again either.
        assert!(c.show_apps(&Default::default()).await.is_err());
        assert_eq!(server.seen().len(), 1, "{status}: {:?}", server.seen());
    }
}

#[tokio::test]
async fn an_unreachable_host_fails_after_the_connect_bound_naming_it() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let reports = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reports.clone();
    // A long deadline: the 1 s connect bound, not the deadline, ends it.
    let c =
        client(&format!("http://127.0.0.1:{port}")).with_retry_report(Arc::new(move |l: &str| {
            sink.lock().unwrap().push(l.to_string())
        }));
    let e = c.show_apps(&Default::default()).await.unwrap_err();
    assert!(e.unreachable, "{e}");
    assert!(!e.is_transient());
    let text = e.to_string();
    assert!(
        text.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{text}"
    );
    assert!(!text.contains('\n'));
    let first = reports.lock().unwrap().first().cloned().unwrap_or_default();
    assert_eq!(
        first,
        format!("retrying login: cannot connect to 127.0.0.1:{port} (attempt 2)")
    );
    // A login that failed for good is not tried again by the next call of the command.
    let before = c.requests();
    assert!(c.show_apps(&Default::default()).await.is_err());
    assert_eq!(c.requests(), before);

    // With a token in hand: the call itself is retried for the bound, then the next call fails
    // at its first refused connection (a rollback does not wait the bound out again).
    let c = client(&format!("http://127.0.0.1:{port}")).with_token_store(Box::new(FixedToken));
    let e = c.show_apps(&Default::default()).await.unwrap_err();
    assert!(e.unreachable && e.rpc == "ShowApp", "{e}");
    assert!(c.requests() > 1);
    let before = c.requests();
    assert!(c.delete_app(&app_key()).await.unwrap_err().unreachable);
    assert_eq!(c.requests(), before + 1);
}

/// A store that always has a token.
struct FixedToken;

impl crate::TokenStore for FixedToken {
    fn load(&self) -> Option<Secret> {
        Some(Secret::new(TOKEN))
    }
    fn save(&self, _: &Secret) {}
    fn discard(&self, _: &Secret) {}
    fn try_login_lock(&self) -> crate::LoginLock {
        crate::LoginLock::Unavailable
    }
}

#[tokio::test]
async fn a_name_that_does_not_resolve_fails_after_the_connect_bound() {
    let c = client("https://edge-connect.does-not-exist.invalid");
    let e = c.show_apps(&Default::default()).await.unwrap_err();
    assert!(e.unreachable, "{e}");
    assert!(e.to_string().contains("tried for 1 s"), "{e}");
    assert!(
        e.to_string()
            .contains("cannot connect to edge-connect.does-not-exist.invalid:443"),
        "{e}"
    );
}

#[tokio::test]
async fn the_diagnostic_login_is_one_attempt() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = client(&format!("http://127.0.0.1:{port}"));
    let e = c.login().await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Transport);
    assert!(
        e.message
            .starts_with(&format!("cannot connect to 127.0.0.1:{port}: ")),
        "{e}"
    );
    assert_eq!(c.requests(), 1);
}

#[test]
fn a_url_with_credentials_is_refused_without_echoing_them() {
    let e = Client::new(
        &options(&format!("https://user:{PASSWORD}@ec.example")),
        Credentials {
            username: "u".into(),
            password: Secret::new("p"),
        },
        Deadline::after(Duration::from_secs(20)),
    )
    .err()
    .unwrap();
    assert!(
        e.0.contains("must not contain a user name or password"),
        "{e}"
    );
    assert_secret_free(&e.0);
}

#[test]
fn debug_output_of_credentials_and_client_parts_hides_secrets() {
    let creds = Credentials {
        username: "u".into(),
        password: Secret::new(PASSWORD),
    };
    assert_secret_free(&format!("{creds:?}"));
    let options = options(&format!("https://u:{PASSWORD}@ec.example"));
    let text = format!("{options:?}");
    assert_secret_free(&text);
    assert!(text.contains("ec.example"), "{text}");
}
