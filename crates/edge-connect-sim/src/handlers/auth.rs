//! `POST /api/v1/login` and `POST /api/v1/auth/refresh`.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use crate::clock::unix_now_f64;
use crate::config::SimConfig;
use crate::domain::tokens::TokenAuthority;
use crate::gojson::go_json;
use crate::protocol::decode::{decode, normalize, parse_json};
use crate::protocol::encode::json_response;
use crate::protocol::ApiError;

/// The login body (`ormapi.UserLogin`); `apikeyid`/`apikey` are the deprecated aliases.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct LoginIn {
    username: String,
    password: String,
    totp: String,
    apikeyid: String,
    apikey: String,
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
    let mut input: LoginIn = if content_type.starts_with("application/json") {
        decode(normalize(parse_json(body)?), "")?
    } else if content_type.starts_with("application/x-www-form-urlencoded") {
        parse_form(body)
    } else {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type",
        ));
    };
    if input.username.is_empty() {
        input.username = std::mem::take(&mut input.apikeyid);
    }
    if input.password.is_empty() {
        input.password = std::mem::take(&mut input.apikey);
    }
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
    let token = tokens.issue(&input.username, None);
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

/// `POST /api/v1/auth/refresh`: a new token if the chain started less than 30 days ago.
pub(crate) fn refresh(tokens: &TokenAuthority, headers: &HeaderMap) -> Result<Response, ApiError> {
    let claims = tokens.authenticate(headers)?;
    if (unix_now_f64() as i64) - claims.firstiat > crate::domain::tokens::REFRESH_CHAIN_LIMIT_SECS {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "Expired jwt"));
    }
    let token = tokens.issue(&claims.username, Some(claims.firstiat));
    Ok(token_response(&token))
}

fn token_response(token: &str) -> Response {
    let body = go_json(&serde_json::json!({ "token": token }));
    let mut response = json_response(StatusCode::OK, body);
    let cookie = format!("token={token}; Path=/; HttpOnly; Secure; SameSite=Strict");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `application/x-www-form-urlencoded` login fields.
fn parse_form(body: &[u8]) -> LoginIn {
    let mut input = LoginIn::default();
    for pair in body.split(|b| *b == b'&') {
        let mut kv = pair.splitn(2, |b| *b == b'=');
        let key = percent_decode(kv.next().unwrap_or_default()).to_ascii_lowercase();
        let value = percent_decode(kv.next().unwrap_or_default());
        match key.as_str() {
            "username" => input.username = value,
            "password" => input.password = value,
            "totp" => input.totp = value,
            "apikeyid" => input.apikeyid = value,
            "apikey" => input.apikey = value,
            _ => {}
        }
    }
    input
}

fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = raw
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_bodies_decode() {
        let input = parse_form(b"username=a%40b.c&password=p+w%21");
        assert_eq!(input.username, "a@b.c");
        assert_eq!(input.password, "p w!");
    }
}
