//! The protobuf enums of the API, accepted in every input form the MC accepts and printed the
//! way it prints them (their `MarshalJSON`, e.g. main `api/edgeproto/common.pb.go:1108` for
//! TrackedState).

use serde::de::{Deserialize, Deserializer, Error as _};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Declares an enum with its numbers and CamelCase names. `prefix` is the common prefix the
/// MC trims on output (empty when the enum has none).
macro_rules! sim_enum {
    (
        $(#[$meta:meta])*
        $name:ident, go = $go:literal, prefix = $prefix:literal, default = $default:ident,
        { $( $var:ident = $num:literal : $camel:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum $name {
            $(
                #[doc = $camel]
                $var,
            )+
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }

        impl $name {
            const ALL: &'static [($name, i64, &'static str)] = &[$(($name::$var, $num, $camel)),+];

            /// The protobuf number.
            #[allow(dead_code)]
            pub(crate) fn number(self) -> i64 {
                Self::ALL.iter().find(|e| e.0 == self).map(|e| e.1).unwrap_or(0)
            }

            /// The name printed in JSON output (common prefix trimmed).
            pub(crate) fn name(self) -> &'static str {
                let camel = Self::ALL.iter().find(|e| e.0 == self).map(|e| e.2).unwrap_or("");
                trimmed(camel, $prefix)
            }

            /// True for the zero value, which Go's `omitempty` leaves out.
            #[allow(dead_code)]
            pub(crate) fn is_zero(&self) -> bool {
                self.number() == 0
            }

            /// Parses any accepted input form; the error is the MC's unmarshal text.
            pub(crate) fn parse(value: &Value) -> Result<Self, String> {
                parse_enum(value, $go, $prefix, Self::ALL)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(d)?;
                $name::parse(&value).map_err(D::Error::custom)
            }
        }
    };
}

/// A CamelCase name without the enum's common prefix, as the MC prints it (the whole name when
/// there is no prefix or nothing would be left).
fn trimmed<'a>(camel: &'a str, prefix: &str) -> &'a str {
    match camel.strip_prefix(prefix) {
        Some(rest) if !prefix.is_empty() && !rest.is_empty() => rest,
        _ => camel,
    }
}

/// Lower-cased with underscores removed, so `IMAGE_TYPE_DOCKER`, `image_type_docker` and
/// `ImageTypeDocker` compare equal.
fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn parse_enum<T: Copy>(
    value: &Value,
    go_type: &str,
    prefix: &str,
    all: &[(T, i64, &str)],
) -> Result<T, String> {
    let by_number = |n: i64| all.iter().find(|e| e.1 == n).map(|e| e.0);
    let found = match value {
        Value::Number(n) => n.as_i64().and_then(by_number),
        Value::String(s) => {
            let wanted = squash(s);
            let with_prefix = format!("{}{}", squash(prefix), wanted);
            all.iter()
                .find(|e| {
                    let camel = squash(e.2);
                    camel == wanted || camel == with_prefix
                })
                .map(|e| e.0)
                .or_else(|| s.trim().parse::<i64>().ok().and_then(by_number))
        }
        _ => None,
    };
    found.ok_or_else(|| {
        let got = match value {
            Value::String(s) => format!("string {s}"),
            Value::Number(n) => format!("number {n}"),
            Value::Bool(_) => "bool".to_string(),
            Value::Array(_) => "array".to_string(),
            Value::Object(_) => "object".to_string(),
            Value::Null => "null".to_string(),
        };
        let names: Vec<&str> = all.iter().map(|e| trimmed(e.2, prefix)).collect();
        let numbers: Vec<String> = all.iter().map(|e| e.1.to_string()).collect();
        format!(
            "{ENUM_MARK}expected {go_type}, but got {got}|, valid values are one of {}, or {}",
            names.join(", "),
            numbers.join(", ")
        )
    })
}

/// Marks an enum error so the JSON decoder can put the field name in the right place
/// (`expected X, but got Y for field "F", valid values ...`).
pub(crate) const ENUM_MARK: &str = "\u{1}enum:";

sim_enum!(
    /// `ImageType` (app.proto).
    ImageType, go = "ImageType", prefix = "ImageType", default = Unknown,
    {
        Unknown = 0: "ImageTypeUnknown",
        Docker = 1: "ImageTypeDocker",
        Qcow = 2: "ImageTypeQcow",
        Helm = 3: "ImageTypeHelm",
        Ovf = 4: "ImageTypeOvf",
        Ova = 5: "ImageTypeOva",
    }
);

impl ImageType {
    /// The protobuf constant name, as Go's `%s` prints it in error messages.
    pub(crate) fn proto_name(self) -> &'static str {
        match self {
            ImageType::Unknown => "IMAGE_TYPE_UNKNOWN",
            ImageType::Docker => "IMAGE_TYPE_DOCKER",
            ImageType::Qcow => "IMAGE_TYPE_QCOW",
            ImageType::Helm => "IMAGE_TYPE_HELM",
            ImageType::Ovf => "IMAGE_TYPE_OVF",
            ImageType::Ova => "IMAGE_TYPE_OVA",
        }
    }
}

sim_enum!(
    /// `AccessType` (app.proto, deprecated; the server always stores `LoadBalancer`).
    AccessType, go = "AccessType", prefix = "AccessType", default = DefaultForDeployment,
    {
        DefaultForDeployment = 0: "AccessTypeDefaultForDeployment",
        Direct = 1: "AccessTypeDirect",
        LoadBalancer = 2: "AccessTypeLoadBalancer",
    }
);

sim_enum!(
    /// `TrackedState` (common.proto); no common prefix, so printed in full.
    TrackedState, go = "TrackedState", prefix = "", default = Unknown,
    {
        Unknown = 0: "TrackedStateUnknown",
        NotPresent = 1: "NotPresent",
        CreateRequested = 2: "CreateRequested",
        Creating = 3: "Creating",
        CreateError = 4: "CreateError",
        Ready = 5: "Ready",
        UpdateRequested = 6: "UpdateRequested",
        Updating = 7: "Updating",
        UpdateError = 8: "UpdateError",
        DeleteRequested = 9: "DeleteRequested",
        Deleting = 10: "Deleting",
        DeleteError = 11: "DeleteError",
        DeletePrepare = 12: "DeletePrepare",
        CrmInitok = 13: "CrmInitok",
        CreatingDependencies = 14: "CreatingDependencies",
        DeleteDone = 15: "DeleteDone",
    }
);

impl TrackedState {
    /// `IsTransientState` of `api/edgeproto/caches.go`.
    pub(crate) fn is_transient(self) -> bool {
        matches!(
            self,
            TrackedState::CreateRequested
                | TrackedState::Creating
                | TrackedState::CreatingDependencies
                | TrackedState::UpdateRequested
                | TrackedState::Updating
                | TrackedState::DeleteRequested
                | TrackedState::Deleting
                | TrackedState::DeletePrepare
        )
    }

    /// `IsDeleteState`: the instance is already on its way out.
    pub(crate) fn is_delete(self) -> bool {
        matches!(
            self,
            TrackedState::DeleteRequested
                | TrackedState::Deleting
                | TrackedState::DeletePrepare
                | TrackedState::DeleteDone
        )
    }
}

sim_enum!(
    /// `Liveness` (appinst.proto).
    Liveness, go = "Liveness", prefix = "Liveness", default = Unknown,
    {
        Unknown = 0: "LivenessUnknown",
        Static = 1: "LivenessStatic",
        Dynamic = 2: "LivenessDynamic",
        Autoprov = 3: "LivenessAutoprov",
    }
);

sim_enum!(
    /// `PowerState` (common.proto); no common prefix.
    PowerState, go = "PowerState", prefix = "", default = Unknown,
    {
        Unknown = 0: "PowerStateUnknown",
        PowerOnRequested = 1: "PowerOnRequested",
        PoweringOn = 2: "PoweringOn",
        PowerOn = 3: "PowerOn",
        PowerOffRequested = 4: "PowerOffRequested",
        PoweringOff = 5: "PoweringOff",
        PowerOff = 6: "PowerOff",
        RebootRequested = 7: "RebootRequested",
        Rebooting = 8: "Rebooting",
        Reboot = 9: "Reboot",
        Error = 10: "PowerStateError",
    }
);

sim_enum!(
    /// `HealthCheck` (loc.proto).
    HealthCheck, go = "HealthCheck", prefix = "HealthCheck", default = Unknown,
    {
        Unknown = 0: "HealthCheckUnknown",
        RootlbOffline = 1: "HealthCheckRootlbOffline",
        ServerFail = 2: "HealthCheckServerFail",
        Ok = 3: "HealthCheckOk",
        CloudletOffline = 4: "HealthCheckCloudletOffline",
    }
);

sim_enum!(
    /// `CRMOverride` (common.proto); no common prefix.
    CrmOverride, go = "CRMOverride", prefix = "", default = NoOverride,
    {
        NoOverride = 0: "NoOverride",
        IgnoreCrmErrors = 1: "IgnoreCrmErrors",
        IgnoreCrm = 2: "IgnoreCrm",
        IgnoreTransientState = 3: "IgnoreTransientState",
        IgnoreCrmAndTransientState = 4: "IgnoreCrmAndTransientState",
        IgnoreCrmTimeoutError = 5: "IgnoreCrmTimeoutError",
    }
);

sim_enum!(
    /// `IpAccess` (cluster access type; deprecated on AppInst).
    IpAccess, go = "IpAccess", prefix = "IpAccess", default = Unknown,
    {
        Unknown = 0: "IpAccessUnknown",
        Dedicated = 1: "IpAccessDedicated",
        Shared = 3: "IpAccessShared",
    }
);

sim_enum!(
    /// `LProto` (port protocol of mapped ports).
    LProto, go = "LProto", prefix = "LProto", default = Unknown,
    {
        Unknown = 0: "LProtoUnknown",
        Tcp = 1: "LProtoTcp",
        Udp = 2: "LProtoUdp",
        Http = 3: "LProtoHttp",
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_every_input_form() {
        for v in [
            json!("ImageTypeDocker"),
            json!("Docker"),
            json!("docker"),
            json!("IMAGE_TYPE_DOCKER"),
            json!("image_type_docker"),
            json!("1"),
            json!(1),
        ] {
            assert_eq!(ImageType::parse(&v), Ok(ImageType::Docker), "{v}");
        }
        assert_eq!(
            TrackedState::parse(&json!("READY")),
            Ok(TrackedState::Ready)
        );
        assert_eq!(
            TrackedState::parse(&json!("TRACKED_STATE_UNKNOWN")),
            Ok(TrackedState::Unknown)
        );
    }

    #[test]
    fn prints_trimmed_names() {
        assert_eq!(ImageType::Docker.name(), "Docker");
        assert_eq!(AccessType::LoadBalancer.name(), "LoadBalancer");
        assert_eq!(Liveness::Static.name(), "Static");
        assert_eq!(TrackedState::Ready.name(), "Ready");
        assert_eq!(PowerState::PowerOn.name(), "PowerOn");
        assert_eq!(CrmOverride::NoOverride.name(), "NoOverride");
    }

    #[test]
    fn rejects_unknown_names_with_the_go_text() {
        let err = ImageType::parse(&json!("Dockr")).err().unwrap_or_default();
        assert!(
            err.contains("expected ImageType, but got string Dockr"),
            "{err}"
        );
        assert!(
            err.contains("valid values are one of Unknown, Docker"),
            "{err}"
        );
    }
}
