//! A wrapper for values that must never reach stdout, stderr or the log, the one secret type of
//! the workspace: the provider's GARM protocol (a leaf that uses nothing of the client) reads
//! GARM's tokens into it, and the Edge Connect client its password and session token, so the
//! one scrubber (the client's `Scrubber`) masks them all without copying one type into another.
//! Making one does nothing else: the command gives it to its scrubber explicitly.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;

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

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Read as any value (with `deserialize_string`, serde_json reports a wrong type itself,
        // value included); an error names the type only.
        let what = match Value::deserialize(deserializer)? {
            Value::String(s) => return Ok(Secret::new(s)),
            Value::Bool(_) => "a boolean",
            Value::Number(n) if n.is_f64() => "a number",
            Value::Number(_) => "an integer",
            Value::Null => "nothing",
            Value::Array(_) => "a list",
            Value::Object(_) => "a table",
        };
        Err(serde::de::Error::custom(format!(
            "expected a string for a secret, got {what} (value not shown)"
        )))
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
