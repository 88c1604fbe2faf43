//! GARM's environment as one typed [`Request`], per interface version, a create's stdin
//! ([`read_stdin`]), and the one table of what each command needs ([`GarmCommand::facts`]).

use std::io::Read;

use base64::Engine as _;

use super::bootstrap::{BootstrapInstance, MAX_BOOTSTRAP_BYTES};
use super::error::ProtocolError;

/// The GARM external-provider interface versions this binary speaks.
pub const SUPPORTED_INTERFACE_VERSIONS: [&str; 2] = ["v0.1.0", "v0.1.1"];

/// `GARM_COMMAND`, each variant named as GARM spells it (its `Debug` form). strum derives the
/// parse of a name and the list of names from the variants, so neither can miss one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::VariantNames)]
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
    /// Every command's name, as GARM spells it.
    pub const NAMES: &'static [&'static str] = <Self as strum::VariantNames>::VARIANTS;

    /// What the command needs and who follows it up: the one table of GARM's commands.
    pub const fn facts(self) -> Facts {
        use GarmCommand::*;
        use {Answered::*, Needs::*};
        match self {
            CreateInstance => Facts(Stdin, ByEdgeConnect, Some(", DeleteInstance will retry it")),
            DeleteInstance => Facts(InstanceId, ByEdgeConnect, Some(DELETE_FOLLOW_UP)),
            GetInstance | StartInstance | StopInstance => Facts(InstanceId, ByEdgeConnect, None),
            ListInstances => Facts(PoolId, ByEdgeConnect, None),
            RemoveAllInstances => Facts(Nothing, ByEdgeConnect, None),
            GetVersion => Facts(Nothing, Locally, None),
            GetSupportedInterfaceVersions
            | ValidatePoolInfo
            | GetConfigJSONSchema
            | GetExtraSpecsJSONSchema => Facts(Nothing, LocallySinceV011, None),
        }
    }

    fn parse(name: &str, version: &str) -> Result<Self, ProtocolError> {
        if name.is_empty() {
            return Err(ProtocolError::new("GARM_COMMAND is empty"));
        }
        let cmd: Self = name
            .parse()
            .map_err(|_| ProtocolError::UnknownCommand(name.to_string()))?;
        if version == "v0.1.0" && matches!(cmd.facts().1, Answered::LocallySinceV011) {
            return Err(ProtocolError::new(format!(
                "{name} needs GARM_INTERFACE_VERSION=v0.1.1 (got v0.1.0)"
            )));
        }
        Ok(cmd)
    }
}

/// What a command needs from GARM, who answers it, and who removes what a failure of it
/// leaves behind (as the end of its line: GARM runs DeleteInstance right after a failed
/// CreateInstance, and again, every few seconds, after a failed DeleteInstance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts(pub Needs, pub Answered, pub Option<&'static str>);

const DELETE_FOLLOW_UP: &str = "; GARM's next DeleteInstance after that removes it";

/// The one input a command needs beyond the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// The bootstrap params on stdin.
    Stdin,
    /// `GARM_INSTANCE_ID`.
    InstanceId,
    /// `GARM_POOL_ID`.
    PoolId,
    /// Nothing more.
    Nothing,
}

/// Who answers a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    /// The provider through Edge Connect, with its config, for a controller.
    ByEdgeConnect,
    /// The provider alone.
    Locally,
    /// The provider alone, and only in interface v0.1.1.
    LocallySinceV011,
}

/// Everything GARM told us through the environment, validated for the command at hand.
#[derive(Debug)]
pub struct Request {
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

impl Request {
    /// Reads the GARM variables from the process environment. One whose value is not UTF-8 is
    /// refused as such (not reported "not set", which would send the operator looking in the
    /// wrong place).
    pub fn from_process() -> Result<Self, ProtocolError> {
        Self::read(|k| match std::env::var_os(k) {
            None => Ok(None),
            Some(v) => v
                .into_string()
                .map(Some)
                .map_err(|_| ProtocolError::new(format!("{k} is not valid UTF-8"))),
        })
    }

    /// Parses and validates the variables `var` gives by name.
    fn read(
        var: impl Fn(&str) -> Result<Option<String>, ProtocolError>,
    ) -> Result<Self, ProtocolError> {
        let raw = |k: &str| var(k).map(Option::unwrap_or_default);
        let get = |k: &str| raw(k).map(|v| v.trim().to_string());
        let version = match get("GARM_INTERFACE_VERSION")?.as_str() {
            "" | "v0.1.0" => "v0.1.0",
            "v0.1.1" => "v0.1.1",
            other => return Err(ProtocolError::UnsupportedVersion(other.to_string())),
        };
        let Some(command) = var("GARM_COMMAND")? else {
            return Err(ProtocolError::new("GARM_COMMAND is not set"));
        };
        let command = GarmCommand::parse(command.trim(), version)?;
        // Pool ids are opaque (scale sets use "<name>-<uuid>" with spaces and capitals): kept
        // byte for byte, no trimming.
        let pool_id = var("GARM_POOL_ID")?.filter(|p| !p.is_empty());
        let request = Request {
            version,
            command,
            controller_id: get("GARM_CONTROLLER_ID")?,
            config_file: raw("GARM_PROVIDER_CONFIG_FILE")?,
            pool_id,
            instance_id: raw("GARM_INSTANCE_ID")?,
            pool_extra_specs: decode_extra_specs(var("GARM_POOL_EXTRASPECS")?.as_ref())?,
        };
        request.validate()?;
        Ok(request)
    }

    fn validate(&self) -> Result<(), ProtocolError> {
        let Facts(needs, answered, _) = self.command.facts();
        if answered == Answered::ByEdgeConnect {
            if self.config_file.is_empty() {
                return Err(ProtocolError::new("GARM_PROVIDER_CONFIG_FILE is not set"));
            }
            if self.controller_id.is_empty() {
                return Err(ProtocolError::new("GARM_CONTROLLER_ID is not set"));
            }
        }
        let missing = match needs {
            Needs::InstanceId if self.instance_id.trim().is_empty() => "GARM_INSTANCE_ID",
            Needs::PoolId if self.pool_id.is_none() => "GARM_POOL_ID",
            _ => return Ok(()),
        };
        let command = self.command;
        Err(ProtocolError::new(format!(
            "{missing} is not set ({command:?} needs it)"
        )))
    }
}

/// Reads (at most [`MAX_BOOTSTRAP_BYTES`]) and parses the bootstrap params of a create from
/// `reader` (stdin), giving up after `within` (what is left of the command's deadline): GARM
/// writes the document and closes stdin, but a wrapper that keeps it open, or feeds it a byte
/// at a time, must not hold the command past its deadline. The reading thread is left blocked
/// in `read`; the process ends with the error.
pub fn read_stdin(
    reader: impl Read + Send + 'static,
    within: std::time::Duration,
) -> Result<BootstrapInstance, ProtocolError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut raw = Vec::new();
        let read = reader.take(MAX_BOOTSTRAP_BYTES + 1).read_to_end(&mut raw);
        let _ = sender.send(match read {
            Err(e) => Err(ProtocolError::new(format!(
                "cannot read bootstrap params: {e}"
            ))),
            Ok(_) if raw.len() as u64 > MAX_BOOTSTRAP_BYTES => Err(ProtocolError::new(format!(
                "bootstrap params exceed {MAX_BOOTSTRAP_BYTES} bytes"
            ))),
            Ok(_) => BootstrapInstance::from_slice(&raw),
        });
    });
    receiver.recv_timeout(within).unwrap_or_else(|_| {
        Err(ProtocolError::new(
            "the bootstrap params on stdin were not complete by the command's deadline (edge_connect.operation_timeout_secs); GARM writes them and closes stdin, and so must a caller",
        ))
    })
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
    use std::collections::HashMap;

    /// The line the front door makes of a refusal.
    fn said(e: ProtocolError) -> String {
        crate::error::Error::from(e).to_string()
    }

    /// A request read from a name → value map.
    fn from_map(vars: &HashMap<String, String>) -> Result<Request, ProtocolError> {
        Request::read(|k| Ok(vars.get(k).cloned()))
    }

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
        let e = from_map(&with(&[("GARM_COMMAND", "GetVersion")])).unwrap();
        assert_eq!(e.version, "v0.1.0");
        let err = from_map(&with(&[
            ("GARM_COMMAND", "GetVersion"),
            ("GARM_INTERFACE_VERSION", "v9.9.9"),
        ]))
        .unwrap_err();
        assert!(said(err).contains("unsupported GARM_INTERFACE_VERSION=v9.9.9"));
    }

    #[test]
    fn unknown_command_is_named() {
        let err = from_map(&with(&[("GARM_COMMAND", "Frobnicate")])).unwrap_err();
        assert_eq!(
            said(err),
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
        assert!(from_map(&with(&[("GARM_COMMAND", "GetConfigJSONSchema")])).is_err());
        assert!(from_map(&with(&[
            ("GARM_COMMAND", "GetConfigJSONSchema"),
            ("GARM_INTERFACE_VERSION", "v0.1.1")
        ]))
        .is_ok());
    }

    #[test]
    fn delete_does_not_need_a_pool_id_in_v011() {
        let e = from_map(&with(&[
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
        let err = from_map(&with(&[("GARM_COMMAND", "GetInstance")])).unwrap_err();
        assert!(said(err).contains("GARM_INSTANCE_ID"));
    }

    #[test]
    fn missing_controller_id_is_an_error() {
        let mut m = with(&[("GARM_COMMAND", "ListInstances"), ("GARM_POOL_ID", "p")]);
        m.remove("GARM_CONTROLLER_ID");
        assert!(said(from_map(&m).unwrap_err()).contains("GARM_CONTROLLER_ID"));
    }

    #[test]
    fn pool_ids_are_kept_verbatim() {
        let e = from_map(&with(&[
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

    /// A reader that never answers (stdin held open by a caller that writes nothing).
    struct Silent(std::sync::mpsc::Receiver<()>);

    impl Read for Silent {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(0)
        }
    }

    #[test]
    fn a_reader_that_never_ends_is_refused_at_the_deadline() {
        let (_held, never) = std::sync::mpsc::channel();
        let err = read_stdin(Silent(never), std::time::Duration::from_millis(50)).unwrap_err();
        assert_eq!(
            said(err),
            "the bootstrap params on stdin were not complete by the command's deadline (edge_connect.operation_timeout_secs); GARM writes them and closes stdin, and so must a caller"
        );
        let bootstrap = br#"{"name":"garm-abc","image":"runner:1"}"#;
        let reader = std::io::Cursor::new(bootstrap.to_vec());
        let done = read_stdin(reader, std::time::Duration::from_secs(60)).unwrap();
        assert_eq!(done.name, "garm-abc");
    }

    #[test]
    fn oversized_input_is_refused() {
        let big = vec![b' '; (MAX_BOOTSTRAP_BYTES + 10) as usize];
        let err = read_stdin(
            std::io::Cursor::new(big),
            std::time::Duration::from_secs(60),
        )
        .unwrap_err();
        assert!(said(err).contains("exceed"));
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
            let result = from_map(&with(&[
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
                    let line = said(e);
                    proptest::prop_assert!(line.contains("GARM_"), "{}", line);
                    proptest::prop_assert!(!line.contains('\n'), "{}", line);
                    // The variable's echo is at most 64 characters of it, each escaped to at
                    // most 10 (`\u{10ffff}`); an unknown command adds the list of GARM's commands.
                    let without_list = line.split(" (GARM's commands: ").next().unwrap_or_default();
                    proptest::prop_assert!(without_list.chars().count() <= 100 + 64 * 10, "{}", line);
                }
            }
        }
    }
}
