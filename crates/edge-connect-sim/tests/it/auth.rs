//! Login, tokens and the MC's 401/404/405 answers, over real HTTP.

use std::time::{Duration, Instant};

use crate::support::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use edge_connect_sim::{Fault, FaultKind};
use reqwest::Method;
use serde_json::{json, Value};

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("three parts");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("JSON")
}

#[tokio::test]
async fn login_returns_an_hs512_jwt_with_exp() {
    let sim = sim();
    let c = Client::anonymous(&sim.url());
    let reply = c
        .raw_json(
            "/api/v1/login",
            &json!({"username": USER, "password": PASSWORD}),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, "application/json");
    let token = reply.json()["token"].as_str().expect("token").to_string();
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(token.split('.').next().expect("header"))
            .expect("base64url"),
    )
    .expect("JSON");
    assert_eq!(header["alg"], "HS512");
    let claims = claims(&token);
    assert_eq!(claims["username"], USER);
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert!((86_400..=86_401).contains(&lifetime), "{lifetime}");
    assert_eq!(sim.logins(), 1);
}

#[tokio::test]
async fn login_wrong_password_is_400() {
    let sim = sim();
    let reply = Client::anonymous(&sim.url())
        .raw_json(
            "/api/v1/login",
            &json!({"username": USER, "password": "nope"}),
        )
        .await;
    reply.assert_error(400, "Invalid username or password");
    assert_eq!(sim.logins(), 0);
}

#[tokio::test]
async fn login_unknown_user_is_400() {
    let sim = sim();
    let reply = Client::anonymous(&sim.url())
        .raw_json(
            "/api/v1/login",
            &json!({"username": "mallory", "password": PASSWORD}),
        )
        .await;
    reply.assert_error(400, "Invalid username or password");
}

#[tokio::test]
async fn login_wrong_password_waits_the_bad_auth_delay() {
    let sim = sim_with(|c| c.bad_auth_delay = Duration::from_millis(300));
    let start = Instant::now();
    let reply = Client::anonymous(&sim.url())
        .raw_json(
            "/api/v1/login",
            &json!({"username": USER, "password": "nope"}),
        )
        .await;
    assert_eq!(reply.status, 400);
    assert!(start.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn login_without_username_is_400() {
    let sim = sim();
    let reply = Client::anonymous(&sim.url())
        .raw_json("/api/v1/login", &json!({"password": PASSWORD}))
        .await;
    reply.assert_error(400, "Username not specified");
}

#[tokio::test]
async fn login_without_password_is_400() {
    let sim = sim();
    let reply = Client::anonymous(&sim.url())
        .raw_json("/api/v1/login", &json!({"username": USER}))
        .await;
    reply.assert_error(400, "Password not specified");
}

#[tokio::test]
async fn login_with_a_non_json_content_type_is_415() {
    let sim = sim();
    let c = Client::anonymous(&sim.url());
    let resp = c
        .http
        .post(format!("{}/api/v1/login", sim.url()))
        .header("Content-Type", "text/plain")
        .body(format!(
            "{{\"username\":\"{USER}\",\"password\":\"{PASSWORD}\"}}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 415);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body, json!({"message": "Unsupported Media Type"}));
}

#[tokio::test]
async fn login_with_an_empty_body_is_400() {
    let sim = sim();
    let c = Client::anonymous(&sim.url());
    let reply = c.send(Method::POST, "/api/v1/login", "").await;
    reply.assert_error(400, "Request body can't be empty");
}

#[tokio::test]
async fn ctrl_without_a_token_is_401() {
    let sim = sim();
    let reply = Client::anonymous(&sim.url())
        .post("ShowApp", json!({"region": "EU"}))
        .await;
    reply.assert_error(401, "No bearer token found");
}

#[tokio::test]
async fn ctrl_with_a_garbage_token_is_401() {
    let sim = sim();
    let mut c = Client::anonymous(&sim.url());
    c.token = Some("not.a.jwt".into());
    let reply = c.post("ShowApp", json!({"region": "EU"})).await;
    reply.assert_error(401, "Invalid or expired jwt");
}

#[tokio::test]
async fn ctrl_with_a_token_of_another_simulator_is_401() {
    let sim = sim();
    let other = crate::support::sim();
    let mut c = Client::login(&other.url()).await;
    c.base = sim.url();
    let reply = c.post("ShowApp", json!({"region": "EU"})).await;
    reply.assert_error(401, "Invalid or expired jwt");
}

#[tokio::test]
async fn an_expired_token_is_401_with_the_jwt_library_text() {
    let sim = sim_with(|c| c.token_ttl = Duration::from_millis(200));
    let c = Client::login(&sim.url()).await;
    let exp = claims(c.token.as_deref().unwrap())["exp"].as_i64().unwrap();
    // Wait until the whole-second expiry has passed.
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        if now >= exp as f64 + 0.05 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reply = c.post("ShowApp", json!({"region": "EU"})).await;
    reply.assert_error(401, "Token is expired by 0s");
}

#[tokio::test]
async fn expire_tokens_fault_invalidates_issued_tokens_only() {
    let sim = sim();
    let c = Client::login(&sim.url()).await;
    sim.inject(Fault::new("*", FaultKind::ExpireTokens));
    let reply = c.post("ShowApp", json!({"region": "EU"})).await;
    reply.assert_error(401, "Token is expired by 0s");
    let fresh = Client::login(&sim.url()).await;
    assert_eq!(
        fresh.post("ShowApp", json!({"region": "EU"})).await.status,
        200
    );
}

#[tokio::test]
async fn unknown_rpc_is_404() {
    let sim = sim();
    let c = Client::login(&sim.url()).await;
    c.post("ShowNothing", json!({"region": "EU"}))
        .await
        .assert_error(404, "Not Found");
}

#[tokio::test]
async fn unknown_path_is_404_even_without_a_token() {
    let sim = sim();
    Client::anonymous(&sim.url())
        .send(Method::POST, "/api/v2/whatever", "{}")
        .await
        .assert_error(404, "Not Found");
}

#[tokio::test]
async fn get_on_an_rpc_is_405() {
    let sim = sim();
    let c = Client::login(&sim.url()).await;
    c.send(Method::GET, "/api/v1/auth/ctrl/ShowApp", "")
        .await
        .assert_error(405, "Method Not Allowed");
}

#[tokio::test]
async fn get_on_login_is_405() {
    let sim = sim();
    Client::anonymous(&sim.url())
        .send(Method::GET, "/api/v1/login", "")
        .await
        .assert_error(405, "Method Not Allowed");
}

#[tokio::test]
async fn login_with_a_wrongly_typed_field_is_invalid_json() {
    let sim = sim();
    let reply = Client::anonymous(&sim.url())
        .raw_json(
            "/api/v1/login",
            &json!({"username": 7, "password": PASSWORD}),
        )
        .await;
    reply.assert_error(
        400,
        r#"Invalid JSON data: Unmarshal error: expected string, but got number for field "username""#,
    );
}
