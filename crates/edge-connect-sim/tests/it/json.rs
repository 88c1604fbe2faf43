//! Replies are written as Go's `encoding/json` writes them (docs/edge-connect-behaviours.md B2): `&`, `<`, `>`
//! and U+2028/U+2029 inside strings are escaped in data lines, error messages and stream
//! results alike.

use serde_json::json;

use crate::support::*;

const TRICKY: &str = "a&b<c>d\u{2028}e\u{2029}f";

#[tokio::test]
async fn show_lines_escape_html_characters() {
    let (_sim, c) = started().await;
    let mut app = app(ORG, "r1");
    app["env_vars"] = json!({"POOL_ID": TRICKY});
    let reply = c.post("CreateApp", app_req(app)).await;
    assert_eq!((reply.status, reply.body.as_str()), (200, "{}"));
    let shown = c
        .post(
            "ShowApp",
            json!({"region": "EU", "app": {"key": {"name": "r1"}}}),
        )
        .await;
    assert!(
        shown
            .body
            .contains(r#""POOL_ID":"a\u0026b\u003cc\u003ed\u2028e\u2029f""#),
        "{}",
        shown.body
    );
    assert!(!shown.body.contains('&') && !shown.body.contains('<'));
    // Decoded, the value is what was sent.
    assert_eq!(shown.data()[0]["env_vars"]["POOL_ID"], TRICKY);
}

#[tokio::test]
async fn error_messages_escape_html_characters_twice_for_keys() {
    let (_sim, c) = started().await;
    // The key is written into the message with json.Marshal (escaped once), and the message
    // into the body with the encoder (the backslash escaped again).
    let reply = c
        .post(
            "DeleteApp",
            app_req(json!({"key": {"organization": ORG, "name": "a&b", "version": "1"}})),
        )
        .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body,
        format!(
            r#"{{"message":"App key {{\"organization\":\"{ORG}\",\"name\":\"a\\u0026b\",\"version\":\"1\"}} not found"}}"#
        )
    );
    assert_eq!(
        reply.message(),
        format!(r#"App key {{"organization":"{ORG}","name":"a\u0026b","version":"1"}} not found"#)
    );
}

#[tokio::test]
async fn stream_results_escape_html_characters() {
    let (sim, c) = started().await;
    create_app(&c, "r1").await;
    sim.inject(edge_connect_sim::Fault::stream_error(
        "CreateAppInst",
        1,
        "image <x> & y failed",
    ));
    let reply = c.post("CreateAppInst", inst_req(inst3(ORG, "r1"))).await;
    assert!(
        reply.body.ends_with(
            "{\"result\":{\"message\":\"Image \\u003cx\\u003e \\u0026 y failed\",\"code\":400}}\n"
        ),
        "{}",
        reply.body
    );
}
