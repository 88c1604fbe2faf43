//! Answers that never end, never break a line, end inside one, drip or go silent.

use std::time::Duration;

use hostile_server::{head, token_reply, Server, Step};

use super::*;
use crate::{ApiErrorKind, Deadline};

#[tokio::test]
async fn an_endless_error_body_is_cut_and_the_status_kept() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("400 Bad Request", ""),
            Step::Forever(vec![b'x'; 64 * 1024]),
        ],
    });
    let e = apps(&client(&server.url())).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Rejected, "{e}");
    assert_eq!(e.answer, crate::Answer::Status(400));
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
    });
    let e = apps(&client(&server.url())).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Protocol, "{e}");
    let text = e.to_string();
    assert!(text.contains("ShowApp"), "{text}");
    assert!(text.contains("8192 KiB"), "{text}");
}

#[tokio::test]
async fn an_endless_show_answer_collected_whole_ends_at_the_bound() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Forever(
                "{\"data\":{\"key\":{\"organization\":\"o\",\"name\":\"z\"}}}\n"
                    .repeat(1000)
                    .into_bytes(),
            ),
        ],
    });
    let e = client(&server.url()).show_zones().await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "Edge Connect ShowZone: answered more than 10000 objects; not read further"
    );
    // A stream the caller filters holds nothing itself: it reads on until the caller stops.
    let mut endless = client(&server.url())
        .show_app_insts(&Default::default(), &[])
        .await
        .unwrap();
    for _ in 0..12_000 {
        let inst = futures_util::TryStreamExt::try_next(&mut endless)
            .await
            .unwrap();
        assert!(inst.is_some_and(|i| i.key.name == "z"));
    }
}

#[tokio::test]
async fn an_endless_unary_answer_is_a_protocol_error() {
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![head("200 OK", ""), Step::Forever(vec![b' '; 64 * 1024])],
    });
    let e = client(&server.url()).create_app(&app()).await.unwrap_err();
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
    });
    let c = client(&server.url());
    let e = apps(&c.until(Deadline::after(Duration::from_secs(2))))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Transport, "{e}");
    assert!(e.message.contains("deadline"), "{e}");
    // The same under the deadline the client was built with, for a unary call.
    let c = client_until(&server.url(), Deadline::after(Duration::from_secs(2)));
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
    });
    let c = client_until(&server.url(), Deadline::after(Duration::from_secs(2)));
    let e = apps(&c).await.unwrap_err();
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
    });
    let c = client(&server.url());
    let inst = crate::models::NewAppInst {
        key: crate::models::AppInstKey {
            name: "n".into(),
            organization: "o".into(),
            ..Default::default()
        },
        app_key: app_key(),
        zone_key: None,
        annotations: Default::default(),
    };
    let mut seen = Vec::new();
    let end = c
        .create_app_inst(&inst, &mut |p| seen.push(p.line.to_string()))
        .await
        .unwrap();
    assert_eq!(end, crate::StreamEnd::Created);
    // A Show answer that goes as quiet is cut by the silence bound.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![head("200 OK", ""), Step::Sleep(Duration::from_secs(5))],
    });
    let e = apps(&client(&server.url())).await.unwrap_err();
    assert!(e.message.contains("request_timeout_secs"), "{e}");
}

#[tokio::test]
async fn a_show_answer_cut_inside_its_last_line_is_an_error_not_a_short_list() {
    // One whole App, then the first bytes of the next and a clean end of the body: Go's encoder
    // ends every object with a newline, so the answer was cut short.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Write(
                b"{\"data\":{\"key\":{\"name\":\"a\"}}}\n{\"data\":{\"key\":{\"na".to_vec(),
            ),
        ],
    });
    let e = apps(&client(&server.url())).await.unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Transport, "{e}");
    assert!(e.is_transient(), "retried by the caller: {e}");
    assert_eq!(
        e.to_string(),
        "Edge Connect ShowApp: the answer ended inside a line (19 bytes after the last newline): it was cut short"
    );
    // The same for an AppInst operation: never a completed create.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Write(b"{\"data\":{\"message\":\"Creating\"}}\n{\"data\":{\"mess".to_vec()),
        ],
    });
    let e = client(&server.url())
        .delete_app_inst(&Default::default(), &mut |_: &str| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind, ApiErrorKind::Transport, "{e}");
    assert!(e.message.contains("ended inside a line"), "{e}");
    // A last line that ends with its newline is a complete answer.
    let server = Server::start(|path, _| match path {
        "/api/v1/login" => token_reply(),
        _ => vec![
            head("200 OK", ""),
            Step::Write(b"{\"data\":{\"key\":{\"name\":\"a\"}}}\n".to_vec()),
        ],
    });
    let all = apps(&client(&server.url())).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].key.name, "a");
}
