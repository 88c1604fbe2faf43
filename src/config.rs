//! Provider config (TOML), credentials, environment overrides, validation and JSON schema.
//!
//! The seed format (`log_file`, `credentials_file`, `[edge_connect]` with `organization`,
//! `region`, `url`, `default_flavor` and `[edge_connect.cloudlet]`) is a contract with existing
//! deployments: every key added since is optional with a safe default.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Error;
use edge_connect::Secret;

/// Environment variable that overrides the credentials file's `username`.
pub const ENV_USERNAME: &str = "EDP_EDGE_CONNECT_USERNAME";
/// Environment variable that overrides the credentials file's `password`.
pub const ENV_PASSWORD: &str = "EDP_EDGE_CONNECT_PASSWORD";

/// The provider config file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Log file (appended to). Omitted: warnings and errors go to stderr only.
    #[serde(default)]
    pub log_file: Option<PathBuf>,
    /// Log level: `error`, `warn`, `info`, `debug` or `trace`.
    #[serde(default)]
    pub log_level: LogLevel,
    /// Log line format: `text` or `json` (for log shippers).
    #[serde(default)]
    pub log_format: LogFormat,
    /// TOML file with `username` and `password` for Edge Connect. May be omitted when
    /// `EDP_EDGE_CONNECT_USERNAME` and `EDP_EDGE_CONNECT_PASSWORD` are set.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    /// Accept a credentials file that other users can read (not recommended).
    #[serde(default)]
    pub allow_insecure_credentials_file: bool,
    /// Reuse Edge Connect tokens across provider processes (one login per token lifetime).
    #[serde(default = "default_true")]
    pub token_cache: bool,
    /// Directory for the token cache (mode 0700). Default: `$XDG_RUNTIME_DIR` or the system temp
    /// directory, in a per-user subdirectory.
    #[serde(default)]
    pub token_cache_dir: Option<PathBuf>,
    /// Edge Connect settings.
    pub edge_connect: EdgeConnectConfig,
}

/// `[edge_connect]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EdgeConnectConfig {
    /// Base URL of the Edge Connect console / Master Controller, e.g. `https://hub.example.com`.
    pub url: String,
    /// Organization that owns the runners' Apps and AppInsts.
    pub organization: String,
    /// Region, e.g. `EU`.
    pub region: String,
    /// Flavor used when the pool's flavor is empty or `default`.
    #[serde(default)]
    pub default_flavor: Option<String>,
    /// Place AppInsts on this cloudlet (older API shape: `cloudlet_key` in the AppInst key).
    #[serde(default)]
    pub cloudlet: Option<SiteKey>,
    /// Place AppInsts in this zone (newer API shape: `zone_key`). Use instead of `cloudlet`.
    #[serde(default)]
    pub zone: Option<SiteKey>,
    /// App deployment type: `kubernetes` (default) or `docker`.
    #[serde(default)]
    pub deployment: Deployment,
    /// How the runner's environment reaches the container: `env_vars` (default: plain values in
    /// `env_vars`, secrets in `secret_env_vars`; platforms from 2024-03 on) or `envvars_yaml`
    /// (everything in a `configs` envVarsYaml entry, for older kubernetes platforms; secrets are
    /// then readable by anyone who can show the App).
    #[serde(default)]
    pub env_delivery: EnvDelivery,
    /// App version used for every runner App.
    #[serde(default = "default_app_version")]
    pub app_version: String,
    /// Container command; empty runs the image's own entrypoint.
    #[serde(default)]
    pub command: Option<String>,
    /// Container arguments.
    #[serde(default)]
    pub command_args: Vec<String>,
    /// Timeout of one HTTP request, in seconds (streams: between two lines).
    #[serde(default = "default_request_timeout")]
    pub request_timeout_secs: u64,
    /// Deadline for one whole provider command, in seconds. Keep it below GARM's
    /// `runner_bootstrap_timeout` (20 minutes by default).
    #[serde(default = "default_operation_timeout")]
    pub operation_timeout_secs: u64,
    /// PEM file with extra CA certificates to trust for the Edge Connect URL.
    #[serde(default)]
    pub ca_bundle: Option<PathBuf>,
    /// Skip TLS verification (testing only; logged loudly on every call).
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// Allow a plain `http://` URL that is not on loopback.
    #[serde(default)]
    pub allow_http: bool,
}

/// An organization + name pair naming a cloudlet or a zone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SiteKey {
    /// Operator organization, e.g. `TelekomOP`.
    pub organization: String,
    /// Cloudlet or zone name, e.g. `Munich`.
    pub name: String,
}

/// Where an AppInst goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Placement {
    /// A cloudlet (older API shape).
    Cloudlet(SiteKey),
    /// A zone (newer API shape).
    Zone(SiteKey),
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placement::Cloudlet(k) => write!(f, "cloudlet {}/{}", k.organization, k.name),
            Placement::Zone(k) => write!(f, "zone {}/{}", k.organization, k.name),
        }
    }
}

/// Log level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// One line per Edge Connect call and per outcome.
    #[default]
    Info,
    /// More detail.
    Debug,
    /// Everything.
    Trace,
}

/// Log format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// App deployment type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Deployment {
    /// A Kubernetes Deployment generated by the platform.
    #[default]
    Kubernetes,
    /// A Docker container.
    Docker,
}

impl Deployment {
    /// The name Edge Connect uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Deployment::Kubernetes => "kubernetes",
            Deployment::Docker => "docker",
        }
    }
}

/// How environment variables reach the runner container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvDelivery {
    /// `env_vars` + `secret_env_vars`.
    #[default]
    EnvVars,
    /// A `configs` entry of kind `envVarsYaml` (kubernetes only).
    EnvvarsYaml,
}

fn default_true() -> bool {
    true
}
fn default_app_version() -> String {
    "1".to_string()
}
fn default_request_timeout() -> u64 {
    60
}
fn default_operation_timeout() -> u64 {
    900
}

pub use edge_connect::Credentials;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<Secret>,
}

impl EdgeConnectConfig {
    /// What the Edge Connect client is built from.
    pub fn client_options(&self) -> edge_connect::ClientOptions {
        edge_connect::ClientOptions {
            url: self.url.clone(),
            region: self.region.clone(),
            request_timeout: std::time::Duration::from_secs(self.request_timeout_secs),
            // Every call ends by the command's deadline; a create's rollback gets its extra time
            // from the provider's `within_deadline` scope (src/provider/wait.rs).
            command_timeout: Some(std::time::Duration::from_secs(self.operation_timeout_secs)),
            // Proposed key: edge_connect.connect_retry_secs (not in the config file yet).
            connect_retry: edge_connect::DEFAULT_CONNECT_RETRY,
            ca_bundle: self.ca_bundle.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
        }
    }
}

impl Config {
    /// Reads, parses and validates a config file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::config(format!("cannot read config file {}: {e}", path.display()))
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates config text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, Error> {
        let config: Config = toml::from_str(text).map_err(|e| {
            Error::config(format!(
                "config {}: {}",
                path.display(),
                toml_error(&e, text)
            ))
        })?;
        config
            .validate()
            .map_err(|msg| Error::config(format!("config {}: {msg}", path.display())))?;
        Ok(config)
    }

    /// Checks values that TOML types cannot express. Returns a message naming the key.
    pub fn validate(&self) -> Result<(), String> {
        let ec = &self.edge_connect;
        let url = reqwest::Url::parse(&ec.url)
            .map_err(|e| format!("edge_connect.url: not a URL ({e})"))?;
        match url.scheme() {
            "https" => {}
            "http" if ec.allow_http || is_loopback(&url) => {}
            "http" => {
                return Err(
                    "edge_connect.url: plain http is only allowed for loopback addresses (set edge_connect.allow_http = true to override)"
                        .to_string(),
                )
            }
            other => return Err(format!("edge_connect.url: unsupported scheme `{other}`")),
        }
        for (key, value) in [
            ("edge_connect.organization", &ec.organization),
            ("edge_connect.region", &ec.region),
            ("edge_connect.app_version", &ec.app_version),
        ] {
            if value.trim().is_empty() {
                return Err(format!("{key}: must not be empty"));
            }
        }
        if !crate::naming::is_valid_key_part(&ec.organization) {
            return Err(
                "edge_connect.organization: not a valid Edge Connect organization name".into(),
            );
        }
        if !ec
            .region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err("edge_connect.region: must match ^\\w+$ (e.g. EU)".into());
        }
        if let Some(f) = &ec.default_flavor {
            if f.trim().is_empty() {
                return Err("edge_connect.default_flavor: must not be empty when given".into());
            }
        }
        match (&ec.cloudlet, &ec.zone) {
            (Some(_), Some(_)) => {
                return Err("edge_connect: give either [edge_connect.cloudlet] or [edge_connect.zone], not both".into())
            }
            (None, None) => {
                return Err("edge_connect: a placement is required: [edge_connect.zone] (newer API) or [edge_connect.cloudlet]".into())
            }
            _ => {}
        }
        for (key, site) in [
            ("edge_connect.cloudlet", &ec.cloudlet),
            ("edge_connect.zone", &ec.zone),
        ] {
            if let Some(site) = site {
                if site.name.trim().is_empty() || site.organization.trim().is_empty() {
                    return Err(format!("{key}: name and organization must not be empty"));
                }
            }
        }
        if ec.env_delivery == EnvDelivery::EnvvarsYaml && ec.deployment != Deployment::Kubernetes {
            return Err(
                "edge_connect.env_delivery: envvars_yaml needs deployment = \"kubernetes\"".into(),
            );
        }
        if ec.request_timeout_secs == 0 {
            return Err("edge_connect.request_timeout_secs: must be at least 1".into());
        }
        if ec.operation_timeout_secs < ec.request_timeout_secs {
            return Err("edge_connect.operation_timeout_secs: must not be smaller than request_timeout_secs".into());
        }
        Ok(())
    }

    /// The configured placement.
    pub fn placement(&self) -> Placement {
        match (&self.edge_connect.zone, &self.edge_connect.cloudlet) {
            (Some(z), _) => Placement::Zone(z.clone()),
            (None, Some(c)) => Placement::Cloudlet(c.clone()),
            // validate() guarantees one of them; a zone is the newer default shape.
            (None, None) => Placement::Zone(SiteKey {
                organization: String::new(),
                name: String::new(),
            }),
        }
    }

    /// Resolves credentials: the file first, then `EDP_EDGE_CONNECT_USERNAME` /
    /// `EDP_EDGE_CONNECT_PASSWORD` from `env` override it.
    pub fn credentials(&self, env: &HashMap<String, String>) -> Result<Credentials, Error> {
        let mut username = None;
        let mut password = None;
        if let Some(path) = &self.credentials_file {
            let from_env_complete = env.get(ENV_USERNAME).is_some_and(|v| !v.is_empty())
                && env.get(ENV_PASSWORD).is_some_and(|v| !v.is_empty());
            if !from_env_complete {
                check_credentials_permissions(path, self.allow_insecure_credentials_file)?;
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::config(format!(
                        "cannot read credentials_file {}: {e}",
                        path.display()
                    ))
                })?;
                let file: CredentialsFile = toml::from_str(&text).map_err(|e| {
                    Error::config(format!(
                        "credentials_file {}: {}",
                        path.display(),
                        toml_error_message_only(&e)
                    ))
                })?;
                username = file.username;
                password = file.password;
            }
        }
        if let Some(u) = env.get(ENV_USERNAME).filter(|v| !v.is_empty()) {
            username = Some(u.clone());
        }
        if let Some(p) = env.get(ENV_PASSWORD).filter(|v| !v.is_empty()) {
            password = Some(Secret::new(p.clone()));
        }
        match (username, password) {
            (Some(u), Some(p)) if !u.is_empty() && !p.is_empty() => Ok(Credentials {
                username: u,
                password: p,
            }),
            _ => Err(Error::config(format!(
                "no Edge Connect credentials: set username and password in credentials_file, or {ENV_USERNAME} and {ENV_PASSWORD}"
            ))),
        }
    }

    /// JSON Schema of this config, generated from the types above.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Config)).unwrap_or_default()
    }
}

/// Credentials files must not be readable by group or others: GARM's host is shared.
#[cfg(unix)]
fn check_credentials_permissions(path: &Path, allow_insecure: bool) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::config(format!(
            "cannot read credentials_file {}: {e}",
            path.display()
        ))
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 && !allow_insecure {
        return Err(Error::config(format!(
            "credentials_file {} is readable by others (mode {mode:o}); run: chmod 600 {}",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_credentials_permissions(_path: &Path, _allow_insecure: bool) -> Result<(), Error> {
    Ok(())
}

fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// One line: "line N: message" (toml's own Display spans several lines with a source excerpt).
fn toml_error(e: &toml::de::Error, text: &str) -> String {
    let msg = toml_error_message_only(e);
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {msg}")
        }
        None => msg,
    }
}

fn toml_error_message_only(e: &toml::de::Error) -> String {
    e.message().replace('\n', " ").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = r#"
log_file = "/garm/provider.log"
credentials_file = "/etc/garm-creds/credentials.toml"

[edge_connect]
organization = "edp-developer-framework"
region = "EU"
url = "https://hub.example.invalid"
default_flavor = "EU.small"

[edge_connect.cloudlet]
name = "Munich"
organization = "TelekomOP"
"#;

    fn parse(text: &str) -> Result<Config, Error> {
        Config::parse(text, Path::new("/etc/p.toml"))
    }

    #[test]
    fn the_seed_config_parses_unchanged() {
        let c = parse(SEED).unwrap();
        assert_eq!(c.edge_connect.organization, "edp-developer-framework");
        assert_eq!(
            c.placement(),
            Placement::Cloudlet(SiteKey {
                organization: "TelekomOP".into(),
                name: "Munich".into()
            })
        );
        assert_eq!(c.edge_connect.deployment, Deployment::Kubernetes);
        assert_eq!(c.edge_connect.app_version, "1");
    }

    #[test]
    fn unknown_keys_are_named_with_file_and_line() {
        let err = parse(&format!("{SEED}\nfrobnicate = 1\n"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("config /etc/p.toml: line "), "{err}");
        assert!(err.contains("frobnicate"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = parse(&SEED.replace("https://hub.example.invalid", "http://hub.example.invalid"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("edge_connect.url"), "{err}");
        let err = parse(&SEED.replace("region = \"EU\"", "region = \"E U\""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("edge_connect.region"), "{err}");
        let both = format!("{SEED}\n[edge_connect.zone]\nname = \"a\"\norganization = \"b\"\n");
        assert!(parse(&both).unwrap_err().to_string().contains("not both"));
    }

    #[test]
    fn loopback_http_is_allowed() {
        assert!(
            parse(&SEED.replace("https://hub.example.invalid", "http://127.0.0.1:8080")).is_ok()
        );
    }

    #[test]
    fn env_overrides_credentials() {
        let c = parse(SEED).unwrap();
        let env: HashMap<String, String> = [
            (ENV_USERNAME.to_string(), "u".to_string()),
            (ENV_PASSWORD.to_string(), "p".to_string()),
        ]
        .into();
        // The file does not exist, but complete env credentials make it unnecessary.
        let creds = c.credentials(&env).unwrap();
        assert_eq!(creds.username, "u");
        assert_eq!(creds.password.expose(), "p");
    }

    #[test]
    fn schema_lists_seed_keys() {
        let schema = Config::json_schema().to_string();
        for key in [
            "log_file",
            "credentials_file",
            "default_flavor",
            "cloudlet",
            "zone",
        ] {
            assert!(schema.contains(key), "{key}");
        }
    }

    #[test]
    fn the_example_config_parses_and_names_every_key() {
        let text = include_str!("../config/provider.example.toml");
        let config = parse(text).unwrap();
        assert_eq!(config.edge_connect.region, "EU");
        // Every property of every object in the schema appears in the example (as a key or as a
        // commented-out key), so the reference cannot silently fall behind the type.
        let schema = Config::json_schema();
        let mut keys = Vec::new();
        collect_properties(&schema, &mut keys);
        for key in keys {
            let as_key = format!("{key} =");
            let as_table = format!("{key}]");
            assert!(
                text.contains(&as_key) || text.contains(&as_table),
                "config/provider.example.toml lacks `{key}`"
            );
        }
    }

    fn collect_properties(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Object(props)) = map.get("properties") {
                    out.extend(props.keys().cloned());
                }
                map.values()
                    .for_each(|child| collect_properties(child, out));
            }
            serde_json::Value::Array(items) => items
                .iter()
                .for_each(|child| collect_properties(child, out)),
            _ => {}
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_an_error_or_a_config_never_a_panic(text in ".{0,400}") {
            let _ = parse(&text);
        }

        #[test]
        fn any_value_in_the_seed_is_handled(url in ".*", org in ".*", region in ".*", flavor in ".*") {
            let text = SEED
                .replace("https://hub.example.invalid", &url.replace(['"', '\\', '\n'], ""))
                .replace("edp-developer-framework", &org.replace(['"', '\\', '\n'], ""))
                .replace("\"EU\"", &format!("{:?}", region))
                .replace("EU.small", &flavor.replace(['"', '\\', '\n'], ""));
            let _ = parse(&text);
        }
    }
}
