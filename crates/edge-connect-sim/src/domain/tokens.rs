//! Login tokens (docs/edge-connect-behaviours.md B10): real HS512 JWTs with
//! `exp`/`iat`/`username`, expiry, revocation for fault injection, and the MC's 401 texts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use axum::http::{header, HeaderMap, StatusCode};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha512;

use crate::clock::{go_duration_secs, unix_now_f64, Rng};
use crate::lock;
use crate::protocol::ApiError;

type HmacSha512 = Hmac<Sha512>;

/// The claims the MC puts into its tokens (c39 `pkg/mc/ormutil/auth.go:37`, `UserClaims`), plus
/// `jti` for revocation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Claims {
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issue time.
    pub iat: i64,
    /// Logged-in user.
    pub username: String,
    /// The user's e-mail (synthetic here).
    pub email: String,
    /// Signing key id.
    pub kid: u32,
    /// Issue time of the first token of a refresh chain (the simulator has no refresh).
    pub firstiat: i64,
    /// `passwordauth`.
    pub authtype: String,
    /// Serial number of the token, so all tokens issued before a point can be revoked.
    pub jti: String,
}

/// Why a token was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TokenError {
    /// Not a token we signed.
    Invalid,
    /// Expired this many whole seconds ago.
    Expired(u64),
}

#[derive(Debug)]
struct Policy {
    revoked_below: u64,
    revoked_at: f64,
}

/// Issues and checks tokens with a per-process random HMAC key.
pub(crate) struct TokenAuthority {
    mac: HmacSha512,
    ttl: Duration,
    policy: Mutex<Policy>,
    serial: AtomicU64,
    logins: AtomicUsize,
}

impl TokenAuthority {
    /// An authority issuing tokens that live `ttl`, signing with a fresh random key.
    pub(crate) fn new(ttl: Duration, rng: &Rng) -> anyhow::Result<Self> {
        let mut key = [0u8; 64];
        for chunk in key.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        let mac = HmacSha512::new_from_slice(&key)
            .map_err(|e| anyhow::anyhow!("cannot create the token signing key: {e}"))?;
        Ok(TokenAuthority {
            mac,
            ttl,
            policy: Mutex::new(Policy {
                revoked_below: 0,
                revoked_at: 0.0,
            }),
            serial: AtomicU64::new(0),
            logins: AtomicUsize::new(0),
        })
    }

    /// Lifetime of new tokens.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Makes every token issued so far expired as of now.
    pub(crate) fn revoke_all(&self) {
        let mut policy = lock(&self.policy);
        policy.revoked_below = self.serial.load(Ordering::SeqCst) + 1;
        policy.revoked_at = unix_now_f64();
    }

    /// Successful logins so far.
    pub(crate) fn logins(&self) -> usize {
        self.logins.load(Ordering::SeqCst)
    }

    /// Counts one successful login.
    pub(crate) fn count_login(&self) {
        self.logins.fetch_add(1, Ordering::SeqCst);
    }

    /// Resets the login counter (simulator reset).
    pub(crate) fn reset_logins(&self) {
        self.logins.store(0, Ordering::SeqCst);
    }

    /// A signed token for `username`.
    pub(crate) fn issue(&self, username: &str) -> String {
        let ttl = self.ttl();
        let now = unix_now_f64();
        let iat = now.floor() as i64;
        // Rounded up so a token is never valid for less than the configured lifetime.
        let exp = (now + ttl.as_secs_f64()).ceil() as i64;
        let serial = self.serial.fetch_add(1, Ordering::SeqCst) + 1;
        let claims = Claims {
            exp,
            iat,
            username: username.to_string(),
            email: format!("{username}@edge-connect-sim.invalid"),
            kid: 1,
            firstiat: iat,
            authtype: "passwordauth".into(),
            jti: serial.to_string(),
        };
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS512","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
        let signing_input = format!("{header}.{payload}");
        let mut mac = self.mac.clone();
        mac.update(signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{signing_input}.{signature}")
    }

    /// Checks signature, expiry and revocation.
    pub(crate) fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Invalid);
        };
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| TokenError::Invalid)?;
        let mut mac = self.mac.clone();
        mac.update(header.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac.verify_slice(&signature)
            .map_err(|_| TokenError::Invalid)?;
        let claims: Claims = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(TokenError::Invalid)?;
        let now = unix_now_f64();
        if now >= claims.exp as f64 {
            return Err(TokenError::Expired(
                (now.floor() as i64 - claims.exp).max(0) as u64,
            ));
        }
        let policy = lock(&self.policy);
        let serial: u64 = claims.jti.parse().map_err(|_| TokenError::Invalid)?;
        if serial < policy.revoked_below {
            return Err(TokenError::Expired(
                (now - policy.revoked_at).max(0.0) as u64
            ));
        }
        Ok(claims)
    }

    /// The caller's claims from `Authorization: Bearer`, or the MC's 401.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Result<Claims, ApiError> {
        let token = bearer_token(headers)
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "No bearer token found"))?;
        self.verify(&token).map_err(|e| match e {
            TokenError::Invalid => {
                ApiError::new(StatusCode::UNAUTHORIZED, "Invalid or expired jwt")
            }
            TokenError::Expired(secs) => ApiError::new(
                StatusCode::UNAUTHORIZED,
                format!("Token is expired by {}", go_duration_secs(secs)),
            ),
        })
    }
}

fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?;
    (!token.is_empty()).then(|| token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(ttl: Duration) -> TokenAuthority {
        TokenAuthority::new(ttl, &Rng::new()).unwrap()
    }

    #[test]
    fn tokens_are_hs512_jwts_with_exp() {
        let auth = authority(Duration::from_secs(3600));
        let token = auth.issue("garm");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "HS512");
        let claims = auth.verify(&token).unwrap();
        assert_eq!(claims.username, "garm");
        assert!(claims.exp - claims.iat >= 3600);
    }

    #[test]
    fn tampered_tokens_are_invalid() {
        let auth = authority(Duration::from_secs(3600));
        let token = auth.issue("garm");
        let other = authority(Duration::from_secs(3600)).issue("garm");
        assert_eq!(auth.verify(&other).unwrap_err(), TokenError::Invalid);
        assert_eq!(auth.verify("garbage").unwrap_err(), TokenError::Invalid);
        assert_eq!(
            auth.verify(&format!("{token}x")).unwrap_err(),
            TokenError::Invalid
        );
    }

    #[test]
    fn revoked_tokens_are_expired() {
        let auth = authority(Duration::from_secs(3600));
        let token = auth.issue("garm");
        auth.revoke_all();
        assert!(matches!(auth.verify(&token), Err(TokenError::Expired(_))));
        let fresh = auth.issue("garm");
        assert!(auth.verify(&fresh).is_ok());
    }
}
