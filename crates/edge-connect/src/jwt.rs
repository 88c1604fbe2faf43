//! Reading a JWT's claims without verifying it: only the issuer can verify a token, but a
//! client may read what it says (when it expires, which forge it is for) to decide what to do.

use base64::Engine as _;

/// The claims of a JWT (its middle part, base64url JSON), unverified; `None` when the token is
/// not shaped like one.
pub fn unverified_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_middle_part_and_refuses_what_is_no_jwt() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"exp":42}"#);
        let claims = unverified_claims(&format!("h.{payload}.sig")).unwrap();
        assert_eq!(claims["exp"], 42);
        assert!(unverified_claims("not-a-jwt").is_none());
        assert!(unverified_claims("a.!!!.c").is_none());
    }
}
