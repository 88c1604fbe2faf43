//! A wrapper for values that must never reach stdout, stderr or the log.

use std::fmt;

/// A secret string (password, Edge Connect token, GARM instance token, proxy URL with credentials).
///
/// `Debug` and `Display` print `***`, so a secret that slips into a log line or an error message is
/// still not disclosed. The value is only reachable through [`Secret::expose`], which makes every
/// place that hands the secret on visible in review.
///
/// Deserializing one accepts only a string, and an error never repeats the value (serde's own
/// "invalid type: integer `424242`" would put a numeric password into the message).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `deserialize_any`: with `deserialize_string`, serde_json reports a wrong type itself,
        // value included, without asking the visitor.
        deserializer.deserialize_any(SecretVisitor)
    }
}

struct SecretVisitor;

/// The error for any non-string value: names the type only.
fn not_a_string<E: serde::de::Error>(what: &str) -> E {
    E::custom(format!(
        "expected a string for a secret, got {what} (value not shown)"
    ))
}

impl<'de> serde::de::Visitor<'de> for SecretVisitor {
    type Value = Secret;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Secret, E> {
        Ok(Secret(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Secret, E> {
        Ok(Secret(v))
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Secret, E> {
        Err(not_a_string("a boolean"))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Secret, E> {
        Err(not_a_string("an integer"))
    }
    fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<Secret, E> {
        Err(not_a_string("an integer"))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Secret, E> {
        Err(not_a_string("an integer"))
    }
    fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<Secret, E> {
        Err(not_a_string("an integer"))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Secret, E> {
        Err(not_a_string("a number"))
    }
    fn visit_char<E: serde::de::Error>(self, v: char) -> Result<Secret, E> {
        Ok(Secret(v.to_string()))
    }
    fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<Secret, E> {
        Err(not_a_string("bytes"))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Secret, E> {
        Err(not_a_string("nothing"))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _: A) -> Result<Secret, A::Error> {
        Err(not_a_string("a list"))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<Secret, A::Error> {
        Err(not_a_string("a table"))
    }
}

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret value, for the one place that must send it somewhere.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when no value was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(s.expose(), "hunter2");
    }

    #[test]
    fn a_secret_of_the_wrong_type_is_not_echoed() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct F {
            password: Secret,
        }
        for text in [
            r#"{"password": 424242424242}"#,
            r#"{"password": 4242.4242}"#,
            r#"{"password": [424242]}"#,
            r#"{"password": {"v": "hunter2"}}"#,
        ] {
            let e = serde_json::from_str::<F>(text).unwrap_err().to_string();
            assert!(e.contains("value not shown"), "{e}");
            assert!(!e.contains("4242") && !e.contains("hunter2"), "{e}");
        }
        let f: F = serde_json::from_str(r#"{"password": "hunter2"}"#).unwrap();
        assert_eq!(f.password.expose(), "hunter2");
    }
}
