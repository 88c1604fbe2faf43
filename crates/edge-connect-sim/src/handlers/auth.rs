//! `POST /api/v1/login`.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use crate::config::SimConfig;
use crate::domain::tokens::TokenAuthority;
use crate::gojson::go_json;
use crate::protocol::decode::{decode, normalize, parse_json};
use crate::protocol::encode::json_response;
use crate::protocol::ApiError;

/// The login body (`ormapi.UserLogin`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoginIn {
    username: String,
    password: String,
    totp: String,
}

/// `POST /api/v1/login`.
pub(crate) async fn login(
    config: &SimConfig,
    tokens: &TokenAuthority,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("Request body can't be empty"));
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !content_type.starts_with("application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type",
        ));
    }
    let input: LoginIn = decode(normalize(parse_json(body)?), "")?;
    if input.username.is_empty() {
        return Err(ApiError::bad_request("Username not specified"));
    }
    if input.password.is_empty() {
        return Err(ApiError::bad_request("Password not specified"));
    }
    let known = config
        .users
        .iter()
        .any(|(user, password)| *user == input.username && *password == input.password);
    if !known {
        // The MC delays every failed login to slow down password guessing.
        tokio::time::sleep(config.bad_auth_delay).await;
        return Err(ApiError::bad_request("Invalid username or password"));
    }
    check_second_factor(config, &input)?;
    let token = tokens.issue(&input.username);
    tokens.count_login();
    Ok(token_response(&token))
}

/// Two-factor users (c39faca8f `pkg/mc/orm/user.go:236-268`): without a `totp` code the MC
/// answers 511 Network Authentication Required (and mails a code); a wrong code is a 400.
fn check_second_factor(config: &SimConfig, input: &LoginIn) -> Result<(), ApiError> {
    let Some((_, code)) = config
        .two_factor_users
        .iter()
        .find(|(user, _)| *user == input.username)
    else {
        return Ok(());
    };
    if input.totp.is_empty() {
        return Err(ApiError::new(
            StatusCode::NETWORK_AUTHENTICATION_REQUIRED,
            "Missing OTP\nPlease use two factor authenticator app on your phone to get OTP. \
             We have also sent OTP to your registered email address",
        ));
    }
    if input.totp != *code {
        return Err(ApiError::bad_request(
            "Invalid or expired OTP. Please login again to receive another OTP",
        ));
    }
    Ok(())
}

fn token_response(token: &str) -> Response {
    let body = go_json(&serde_json::json!({ "token": token }));
    json_response(StatusCode::OK, body)
}
