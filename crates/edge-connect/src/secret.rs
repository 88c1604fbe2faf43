//! A wrapper for values that must never reach stdout, stderr or the log.

use std::fmt;

/// A secret string (password, Edge Connect token, GARM instance token, proxy URL with credentials).
///
/// `Debug` and `Display` print `***`, so a secret that slips into a log line or an error message is
/// still not disclosed. The value is only reachable through [`Secret::expose`], which makes every
/// place that hands the secret on visible in review.
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

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
}
