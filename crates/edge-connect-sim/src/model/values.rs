//! Parts shared by objects: resources, config files, secret maps, decimal CPU counts and
//! timestamps as sent.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::enums::ENUM_MARK;
use super::{is_zero_i32, is_zero_u64};

/// A timestamp as sent: an RFC3339 string or the legacy `{seconds, nanos}` object.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TimestampIn {
    /// Non-zero seconds (or a non-empty string) were given.
    pub seconds_set: bool,
    /// Non-zero nanoseconds were given.
    pub nanos_set: bool,
}

impl<'de> Deserialize<'de> for TimestampIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(TimestampIn {
                seconds_set: !s.is_empty() && !s.starts_with("0001-01-01T00:00:00"),
                nanos_set: false,
            }),
            Value::Object(map) => {
                let nonzero = |k: &str| {
                    map.iter()
                        .find(|(key, _)| key.eq_ignore_ascii_case(k))
                        .and_then(|(_, v)| v.as_f64())
                        .is_some_and(|n| n != 0.0)
                };
                Ok(TimestampIn {
                    seconds_set: nonzero("seconds"),
                    nanos_set: nonzero("nanos"),
                })
            }
            other => Err(D::Error::custom(format!(
                "{}expected Timestamp, but got {}|",
                ENUM_MARK,
                json_kind(&other)
            ))),
        }
    }
}

/// Go's name for the kind of a JSON value in unmarshal errors.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A decimal CPU count (`Udec64`): printed as an integer when whole, else a decimal string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Udec64 {
    /// Thousandths.
    pub milli: u64,
}

impl Udec64 {
    /// A whole number of units.
    pub(crate) fn whole(n: u64) -> Self {
        Udec64 {
            milli: n.saturating_mul(1000),
        }
    }

    /// True for zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.milli == 0
    }
}

impl fmt::Display for Udec64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let frac = self.milli % 1000;
        if frac == 0 {
            write!(f, "{}", self.milli / 1000)
        } else {
            let digits = format!("{frac:03}");
            write!(f, "{}.{}", self.milli / 1000, digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Udec64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.milli.is_multiple_of(1000) {
            s.serialize_u64(self.milli / 1000)
        } else {
            s.serialize_str(&self.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for Udec64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let parsed = match &value {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match parsed {
            Some(f) if f >= 0.0 && f.is_finite() => Ok(Udec64 {
                milli: (f * 1000.0).round() as u64,
            }),
            _ => Err(D::Error::custom(format!(
                "{}expected Udec64, but got {}|",
                ENUM_MARK,
                json_kind(&value)
            ))),
        }
    }
}

/// `NodePoolTopology`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NodePoolTopology {
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub min_node_vcpus: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub min_node_memory: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub min_node_disk: u64,
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub min_number_of_nodes: i32,
}

/// `NodePoolResources`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NodePoolResources {
    pub total_vcpus: Udec64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub total_memory: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub total_disk: u64,
    pub topology: NodePoolTopology,
}

/// `KubernetesResources` (2024-10+), filled from the flavor for kubernetes Apps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct KubernetesResources {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pool: Option<NodePoolResources>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_pool: Option<NodePoolResources>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_kubernetes_version: String,
}

/// `NodeResources`, filled from the flavor for docker/VM Apps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NodeResources {
    #[serde(skip_serializing_if = "Udec64::is_zero")]
    pub vcpus: Udec64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub ram: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub disk: u64,
}

/// `ConfigFile {kind, config}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ConfigFile {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub config: String,
}

/// A map whose values are printed as `"***"` (secret env vars: main
/// `pkg/controller/app_api.go:699, 767`, `cloudcommon.RedactSecretVars`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SecretMap(pub BTreeMap<String, String>);

impl SecretMap {
    /// True when no secret is set.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for SecretMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.keys().map(|k| (k, REDACTED)))
    }
}

/// What Show prints instead of a secret.
pub(crate) const REDACTED: &str = "***";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udec64_prints_like_go() {
        assert_eq!(
            serde_json::to_string(&Udec64::whole(2)).ok(),
            Some("2".into())
        );
        assert_eq!(
            serde_json::to_string(&Udec64 { milli: 500 }).ok(),
            Some("\"0.5\"".into())
        );
    }
}
