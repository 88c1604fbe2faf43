//! Reading GARM's environment into a typed request, per interface version.

use std::collections::HashMap;

use base64::Engine as _;

use super::error::ProtocolError;

/// The GARM external-provider interface versions this binary speaks.
pub const SUPPORTED_INTERFACE_VERSIONS: [&str; 2] = ["v0.1.0", "v0.1.1"];

/// The GARM variables this provider reads.
const READ_VARIABLES: [&str; 7] = [
    "GARM_COMMAND",
    "GARM_INTERFACE_VERSION",
    "GARM_CONTROLLER_ID",
    "GARM_PROVIDER_CONFIG_FILE",
    "GARM_POOL_ID",
    "GARM_INSTANCE_ID",
    "GARM_POOL_EXTRASPECS",
];

/// `GARM_COMMAND`, each variant named as GARM spells it (its `Debug` form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum GarmCommand {
    /// Create one runner from the bootstrap params on stdin.
    CreateInstance,
    /// Delete one runner by provider id or name.
    DeleteInstance,
    /// Show one runner.
    GetInstance,
    /// Show the runners of one pool.
    ListInstances,
    /// Delete every runner of this controller.
    RemoveAllInstances,
    /// Start a stopped runner.
    StartInstance,
    /// Stop a runner.
    StopInstance,
    /// Print the provider version.
    GetVersion,
    /// v0.1.1: print the interface versions supported.
    GetSupportedInterfaceVersions,
    /// v0.1.1: validate the pool's extra specs.
    ValidatePoolInfo,
    /// v0.1.1: print the JSON schema of the provider config.
    GetConfigJSONSchema,
    /// v0.1.1: print the JSON schema of the pool extra specs.
    GetExtraSpecsJSONSchema,
}

impl GarmCommand {
    /// Every command's name, as GARM spells it (a test keeps it complete).
    pub const NAMES: [&'static str; 12] = [
        "CreateInstance",
        "DeleteInstance",
        "GetInstance",
        "ListInstances",
        "RemoveAllInstances",
        "StartInstance",
        "StopInstance",
        "GetVersion",
        "GetSupportedInterfaceVersions",
        "ValidatePoolInfo",
        "GetConfigJSONSchema",
        "GetExtraSpecsJSONSchema",
    ];

    fn parse(name: &str, version: &str) -> Result<Self, ProtocolError> {
        use serde::de::{value::Error, Deserialize, IntoDeserializer};
        if name.is_empty() {
            return Err(ProtocolError::new("GARM_COMMAND is empty"));
        }
        let cmd = Self::deserialize(IntoDeserializer::<Error>::into_deserializer(name)).map_err(
            |_| {
                ProtocolError::new(format!(
                    "unknown command: GARM_COMMAND={} (GARM's commands: {})",
                    crate::text::echo(name),
                    Self::NAMES.join(", ")
                ))
            },
        )?;
        if version == "v0.1.0" && cmd.is_v011_only() {
            return Err(ProtocolError::new(format!(
                "{name} needs GARM_INTERFACE_VERSION=v0.1.1 (got v0.1.0)"
            )));
        }
        Ok(cmd)
    }

    fn is_v011_only(self) -> bool {
        use GarmCommand::*;
        match self {
            GetSupportedInterfaceVersions
            | ValidatePoolInfo
            | GetConfigJSONSchema
            | GetExtraSpecsJSONSchema => true,
            CreateInstance | DeleteInstance | GetInstance | ListInstances | RemoveAllInstances
            | StartInstance | StopInstance | GetVersion => false,
        }
    }
}

/// Everything GARM told us through the environment, validated for the command at hand.
#[derive(Debug, Clone)]
pub struct GarmEnv {
    /// `GARM_INTERFACE_VERSION`, one of [`SUPPORTED_INTERFACE_VERSIONS`] (v0.1.0 also when
    /// unset or empty; v0.1.1 adds extra specs in the environment and four more commands).
    pub version: &'static str,
    /// The command.
    pub command: GarmCommand,
    /// `GARM_CONTROLLER_ID` (empty only for commands that do not need it).
    pub controller_id: String,
    /// `GARM_PROVIDER_CONFIG_FILE`.
    pub config_file: String,
    /// `GARM_POOL_ID`; `None` when unset or empty (scale sets send it empty).
    pub pool_id: Option<String>,
    /// `GARM_INSTANCE_ID`: a provider id or a GARM instance name.
    pub instance_id: String,
    /// Decoded `GARM_POOL_EXTRASPECS` (v0.1.1); `None` when unset, empty or `null`.
    pub pool_extra_specs: Option<serde_json::Value>,
}

impl GarmEnv {
    /// Reads the GARM variables this provider reads from the process environment. One whose
    /// value is not UTF-8 is refused as such (not reported "not set", which would send the
    /// operator looking in the wrong place).
    pub fn from_process() -> Result<Self, ProtocolError> {
        let mut vars = HashMap::new();
        for k in READ_VARIABLES {
            if let Some(v) = std::env::var_os(k) {
                let v = v
                    .into_string()
                    .map_err(|_| ProtocolError::new(format!("{k} is not valid UTF-8")))?;
                vars.insert(k.to_string(), v);
            }
        }
        Self::from_map(&vars)
    }

    /// Parses and validates from a name → value map (what tests use).
    pub fn from_map(vars: &HashMap<String, String>) -> Result<Self, ProtocolError> {
        let raw = |k: &str| vars.get(k).cloned().unwrap_or_default();
        let get = |k: &str| raw(k).trim().to_string();
        let version = match get("GARM_INTERFACE_VERSION").as_str() {
            "" | "v0.1.0" => "v0.1.0",
            "v0.1.1" => "v0.1.1",
            other => {
                return Err(ProtocolError::new(format!(
                    "unsupported GARM_INTERFACE_VERSION={} (supported: {})",
                    crate::text::echo(other),
                    SUPPORTED_INTERFACE_VERSIONS.join(", ")
                )))
            }
        };
        if !vars.contains_key("GARM_COMMAND") {
            return Err(ProtocolError::new("GARM_COMMAND is not set"));
        }
        let command = GarmCommand::parse(&get("GARM_COMMAND"), version)?;
        let pool_id = vars
            .get("GARM_POOL_ID")
            .filter(|p| !p.is_empty())
            // Pool ids are opaque (scale sets use "<name>-<uuid>" with spaces and capitals):
            // keep them byte for byte, no trimming.
            .cloned();
        let env = GarmEnv {
            version,
            command,
            controller_id: get("GARM_CONTROLLER_ID"),
            config_file: raw("GARM_PROVIDER_CONFIG_FILE"),
            pool_id,
            instance_id: raw("GARM_INSTANCE_ID"),
            pool_extra_specs: decode_extra_specs(vars.get("GARM_POOL_EXTRASPECS"))?,
        };
        env.validate()?;
        Ok(env)
    }

    fn validate(&self) -> Result<(), ProtocolError> {
        use GarmCommand::*;
        // Every command but the version and v0.1.1's additions talks to Edge Connect.
        if self.command != GetVersion && !self.command.is_v011_only() {
            if self.config_file.is_empty() {
                return Err(ProtocolError::new("GARM_PROVIDER_CONFIG_FILE is not set"));
            }
            if self.controller_id.is_empty() {
                return Err(ProtocolError::new("GARM_CONTROLLER_ID is not set"));
            }
        }
        let no_instance = self.instance_id.trim().is_empty();
        let missing = match self.command {
            DeleteInstance | GetInstance | StartInstance | StopInstance => {
                no_instance.then_some("GARM_INSTANCE_ID")
            }
            ListInstances => self.pool_id.is_none().then_some("GARM_POOL_ID"),
            CreateInstance
            | RemoveAllInstances
            | GetVersion
            | GetSupportedInterfaceVersions
            | ValidatePoolInfo
            | GetConfigJSONSchema
            | GetExtraSpecsJSONSchema => None,
        };
        missing.map_or(Ok(()), |variable| {
            let command = self.command;
            Err(ProtocolError::new(format!(
                "{variable} is not set ({command:?} needs it)"
            )))
        })
    }
}

/// Decodes `GARM_POOL_EXTRASPECS`: base64 (standard, padded) of JSON; `null` means none.
pub fn decode_extra_specs(
    raw: Option<&String>,
) -> Result<Option<serde_json::Value>, ProtocolError> {
    let Some(raw) = raw.map(|r| r.trim()).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|_| ProtocolError::new("GARM_POOL_EXTRASPECS is not valid base64"))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| ProtocolError::new(format!("GARM_POOL_EXTRASPECS is not valid JSON: {e}")))?;
    Ok((!value.is_null()).then_some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const BASE: [(&str, &str); 2] = [
        ("GARM_CONTROLLER_ID", "c"),
        ("GARM_PROVIDER_CONFIG_FILE", "/etc/p.toml"),
    ];

    fn with(extra: &[(&str, &str)]) -> HashMap<String, String> {
        let mut m = env(&BASE);
        m.extend(env(extra));
        m
    }

    #[test]
    fn version_defaults_to_v010_and_rejects_unknown() {
        let e = GarmEnv::from_map(&with(&[("GARM_COMMAND", "GetVersion")])).unwrap();
        assert_eq!(e.version, "v0.1.0");
        let err = GarmEnv::from_map(&with(&[
            ("GARM_COMMAND", "GetVersion"),
            ("GARM_INTERFACE_VERSION", "v9.9.9"),
        ]))
        .unwrap_err();
        assert!(err
            .to_string()
            .contains("unsupported GARM_INTERFACE_VERSION=v9.9.9"));
    }

    #[test]
    fn unknown_command_is_named() {
        let err = GarmEnv::from_map(&with(&[("GARM_COMMAND", "Frobnicate")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unknown command: GARM_COMMAND=Frobnicate (GARM's commands: {})",
                GarmCommand::NAMES.join(", ")
            )
        );
        for name in GarmCommand::NAMES {
            assert!(GarmCommand::parse(name, "v0.1.1").is_ok(), "{name}");
        }
    }

    #[test]
    fn v011_commands_need_v011() {
        assert!(GarmEnv::from_map(&with(&[("GARM_COMMAND", "GetConfigJSONSchema")])).is_err());
        assert!(GarmEnv::from_map(&with(&[
            ("GARM_COMMAND", "GetConfigJSONSchema"),
            ("GARM_INTERFACE_VERSION", "v0.1.1")
        ]))
        .is_ok());
    }

    #[test]
    fn delete_does_not_need_a_pool_id_in_v011() {
        let e = GarmEnv::from_map(&with(&[
            ("GARM_COMMAND", "DeleteInstance"),
            ("GARM_INTERFACE_VERSION", "v0.1.1"),
            ("GARM_INSTANCE_ID", "garm-x"),
            ("GARM_POOL_ID", ""),
            ("GARM_POOL_EXTRASPECS", "bnVsbA=="),
        ]))
        .unwrap();
        assert_eq!(e.pool_id, None);
        assert_eq!(e.pool_extra_specs, None);
    }

    #[test]
    fn instance_commands_need_an_instance_id() {
        let err = GarmEnv::from_map(&with(&[("GARM_COMMAND", "GetInstance")])).unwrap_err();
        assert!(err.to_string().contains("GARM_INSTANCE_ID"));
    }

    #[test]
    fn missing_controller_id_is_an_error() {
        let mut m = with(&[("GARM_COMMAND", "ListInstances"), ("GARM_POOL_ID", "p")]);
        m.remove("GARM_CONTROLLER_ID");
        assert!(GarmEnv::from_map(&m)
            .unwrap_err()
            .to_string()
            .contains("GARM_CONTROLLER_ID"));
    }

    #[test]
    fn pool_ids_are_kept_verbatim() {
        let e = GarmEnv::from_map(&with(&[
            ("GARM_COMMAND", "ListInstances"),
            ("GARM_POOL_ID", "My Scale Set-6B8E "),
        ]))
        .unwrap();
        assert_eq!(e.pool_id.as_deref(), Some("My Scale Set-6B8E "));
    }

    #[test]
    fn extra_specs_are_decoded() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(r#"{"flavor":"EU.large"}"#);
        let v = decode_extra_specs(Some(&b64)).unwrap().unwrap();
        assert_eq!(v["flavor"], "EU.large");
        assert!(decode_extra_specs(Some(&"!!".to_string())).is_err());
    }

    proptest::proptest! {
        /// Any environment gives either a request holding exactly what was sent, or one line
        /// that names the GARM variable at fault and echoes at most 64 characters of it.
        #[test]
        fn any_environment_is_a_faithful_request_or_a_named_refusal(
            command in "(CreateInstance|DeleteInstance|GetInstance|ListInstances|RemoveAllInstances|StartInstance|StopInstance|GetVersion|ValidatePoolInfo|.*)",
            version in "(v0.1.0|v0.1.1|.*)",
            pool in ".*",
            instance in ".*",
            specs in "(|bnVsbA==|eyJmbGF2b3IiOiJ4In0=|.*)",
        ) {
            let result = GarmEnv::from_map(&with(&[
                ("GARM_COMMAND", &command),
                ("GARM_INTERFACE_VERSION", &version),
                ("GARM_POOL_ID", &pool),
                ("GARM_INSTANCE_ID", &instance),
                ("GARM_POOL_EXTRASPECS", &specs),
            ]));
            match result {
                Ok(env) => {
                    proptest::prop_assert_eq!(format!("{:?}", env.command), command.trim());
                    let want_version = if version.trim().is_empty() { "v0.1.0" } else { version.trim() };
                    proptest::prop_assert_eq!(env.version, want_version);
                    proptest::prop_assert_eq!(env.pool_id, (!pool.is_empty()).then(|| pool.clone()));
                    proptest::prop_assert_eq!(env.instance_id, instance.clone());
                    proptest::prop_assert_eq!(env.controller_id, "c");
                    let flavor = env.pool_extra_specs.as_ref().map(|v| v["flavor"].clone());
                    if specs.trim() == "eyJmbGF2b3IiOiJ4In0=" {
                        proptest::prop_assert_eq!(flavor, Some(serde_json::json!("x")));
                    }
                }
                Err(e) => {
                    proptest::prop_assert!(e.0.contains("GARM_"), "{}", e.0);
                    proptest::prop_assert!(!e.0.contains('\n'), "{}", e.0);
                    // The variable's echo is at most 64 characters of it, each escaped to at
                    // most 10 (`\u{10ffff}`); an unknown command adds the list of GARM's commands.
                    let without_list = e.0.split(" (GARM's commands: ").next().unwrap_or_default();
                    proptest::prop_assert!(without_list.chars().count() <= 100 + 64 * 10, "{}", e.0);
                }
            }
        }
    }
}
