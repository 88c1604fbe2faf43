//! Logging in and reaching the server: redirects, transient, slow and refused logins,
//! unreachable hosts, secrets in URLs and in debug output.

use std::sync::{Arc, Mutex};

use hostile_server::{head, refusing_port, reply, token_reply, Server, Step, TOKEN};

use super::*;
use crate::{ApiErrorKind, Client, Credentials, Deadline, Secret};

#[tokio::test]
async fn redirects_from_login_are_refused_and_the_target_gets_nothing() {
    for status in ["307 Temporary Redirect", "308 Permanent Redirect"] {
        let elsewhere = Server::start(|_, _| token_reply());
        let target = format!("{}/steal?password=x", elsewhere.url());
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
        });
        let c = client(&server.url());
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
    let elsewhere = Server::start(|_, _| reply("200 OK", "{}"));
    let location = format!(
        "Location: {}/api/v1/auth/ctrl/CreateApp\r\n",
        elsewhere.url()
    );
    let server = Server::start(move |path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => {
            let mut steps = vec![head("307 Temporary Redirect", &location)];
            steps.push(Step::Write(b"{}".to_vec()));
            steps
        }
    });
    let e = client(&server.url()).create_app(&app()).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Redirect, "{e}");
    assert_eq!(e.rpc, crate::Rpc::CreateApp);
    assert!(elsewhere.seen().is_empty());
    assert_secret_free(&e.to_string());
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
    });
    let reports = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reports.clone();
    let c = client(&server.url()).with_retry_report(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_string())
    }));
    assert!(apps(&c).await.unwrap().is_empty());
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
    });
    let c = client(&server.url());
    apps(&c).await.unwrap();
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
        // A hostile server echoes the password: the message keeps it whole (not cut), so that
        // the writer's scrubber, which knows the password, masks all of it.
        let body = format!(r#"{{"message":"{message} for {PASSWORD}"}}"#);
        let server = Server::start(move |_, _| reply(status, &body));
        let scrubber = crate::Scrubber::new();
        scrubber.protect([&Secret::new(PASSWORD)]).unwrap();
        let c = client(&server.url()).with_scrubber(scrubber);
        let e = apps(&c).await.unwrap_err();
        assert_eq!(e.kind, ApiErrorKind::Auth, "{e}");
        let text = c.scrubber().scrub(&e.to_string()).into_owned();
        assert!(text.contains(kind_text), "{text}");
        assert!(text.contains(" for ***"), "{text}");
        assert_secret_free(&text);
        // A second call of the same command does not try again either.
        assert!(apps(&c).await.is_err());
        assert_eq!(server.seen().len(), 1, "{status}: {:?}", server.seen());
    }
}

#[tokio::test]
async fn an_unreachable_host_fails_after_the_connect_bound_naming_it() {
    let (_reserved, port) = refusing_port();
    let reports = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = reports.clone();
    // A long deadline: the 1 s connect bound, not the deadline, ends it.
    let c =
        client(&format!("http://127.0.0.1:{port}")).with_retry_report(Arc::new(move |l: &str| {
            sink.lock().unwrap().push(l.to_string())
        }));
    let e = apps(&c).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Unreachable, "{e}");
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
    assert!(apps(&c).await.is_err());
    assert_eq!(c.requests(), before);

    // With a token in hand: the call itself is retried for the bound, then the next call fails
    // at its first refused connection (a rollback does not wait the bound out again).
    let dir = tempfile::tempdir().unwrap();
    let creds = Credentials {
        username: "u".into(),
        password: Secret::new(PASSWORD),
    };
    let cache = crate::token_cache::TokenCache::in_dir(&dir.path().join("c"), "u", &creds).unwrap();
    cache.save(&Secret::new(TOKEN));
    let c = client(&format!("http://127.0.0.1:{port}")).with_token_cache(Some(cache));
    let e = apps(&c).await.unwrap_err();
    assert_eq!(
        (e.kind, e.rpc),
        (ApiErrorKind::Unreachable, crate::Rpc::ShowApp),
        "{e}"
    );
    assert!(c.requests() > 1);
    let before = c.requests();
    assert_eq!(
        c.delete_app(&app_key()).await.unwrap_err().kind,
        ApiErrorKind::Unreachable
    );
    assert_eq!(c.requests(), before + 1);
}

#[tokio::test]
async fn a_name_that_does_not_resolve_fails_after_the_connect_bound() {
    let c = client("https://edge-connect.does-not-exist.invalid");
    let e = apps(&c).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Unreachable, "{e}");
    assert!(e.to_string().contains("tried for 1 s"), "{e}");
    assert!(
        e.to_string()
            .contains("cannot connect to edge-connect.does-not-exist.invalid:443"),
        "{e}"
    );
}

#[tokio::test]
async fn the_diagnostic_login_is_one_attempt() {
    let (_reserved, port) = refusing_port();
    let c = client(&format!("http://127.0.0.1:{port}"));
    let e = c.login().await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Unreachable);
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

/// The client's options, its proxy choice and a NewApp have no `Debug` at all (each may hold a
/// password), so only the credentials can be printed.
#[test]
fn debug_output_of_credentials_hides_the_password() {
    let creds = Credentials {
        username: "u".into(),
        password: Secret::new(PASSWORD),
    };
    assert_secret_free(&format!("{creds:?}"));
}

/// A session token that is not JWT-shaped has no shape to be masked by: the client gives it to
/// the command's scrubber when it learns it, so a server repeating it is masked all the same.
#[tokio::test]
async fn a_session_token_that_is_no_jwt_is_masked_once_learnt() {
    const OPAQUE: &str = "opaque-session-7731";
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => reply("200 OK", &format!(r#"{{"token":"{OPAQUE}"}}"#)),
        _ => reply(
            "400 Bad Request",
            &format!(r#"{{"message":"token {OPAQUE} is not valid here"}}"#),
        ),
    });
    let c = client(&server.url()).with_scrubber(crate::Scrubber::new());
    let e = apps(&c).await.unwrap_err();
    assert_eq!(
        c.scrubber().scrub(&e.to_string()),
        "Edge Connect ShowApp (HTTP 400): token *** is not valid here"
    );
}

#[tokio::test]
async fn an_attempt_the_deadline_cuts_off_after_a_refused_connection_names_the_refusal() {
    // The first attempt is refused by a socket bound and not yet listening; before the next one
    // the same socket starts listening and never accepts, so the deadline, not the connect bound
    // or the silence bound, ends that attempt. The port is held throughout: no other test's
    // server can take it.
    let (socket, port) = refusing_port();
    let socket = Arc::new(Mutex::new(Some(socket)));
    let listener = Arc::new(Mutex::new(None::<tokio::net::TcpListener>));
    let slot = listener.clone();
    let options = crate::ClientOptions {
        request_timeout: std::time::Duration::from_secs(30),
        connect_retry: std::time::Duration::from_secs(60),
        ..options(&format!("http://127.0.0.1:{port}"))
    };
    let credentials = Credentials {
        username: "u".into(),
        password: Secret::new(PASSWORD),
    };
    let deadline = Deadline::after(std::time::Duration::from_secs(2));
    let c = Client::new(&options, credentials, deadline)
        .unwrap()
        .with_retry_report(Arc::new(move |_: &str| {
            if let Some(socket) = socket.lock().unwrap().take() {
                *slot.lock().unwrap() = socket.listen(1).ok();
            }
        }));
    let e = apps(&c).await.unwrap_err();
    assert!(listener.lock().unwrap().is_some(), "the socket listens");
    assert_eq!(e.kind, ApiErrorKind::Unreachable, "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{text}"
    );
    assert!(
        text.contains("edge_connect.operation_timeout_secs"),
        "{text}"
    );
}
