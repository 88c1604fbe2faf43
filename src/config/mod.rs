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
    /// Pools may only name image pull password variables that start with this prefix
    /// (`image_pull_password_env` in extra specs), e.g. `EDP_EDGE_CONNECT_REGISTRY_`. Unset: any
    /// variable except the provider's own credentials (`EDP_EDGE_CONNECT_USERNAME`,
    /// `EDP_EDGE_CONNECT_PASSWORD`, the proxy variables), which are refused in any case.
    #[serde(default)]
    pub image_pull_password_env_prefix: Option<String>,
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
    /// How long a refused connection or an unresolvable host is retried before the command
    /// fails, in seconds: an unreachable URL fails in tens of seconds, not at the deadline.
    #[serde(default = "default_connect_retry")]
    pub connect_retry_secs: u64,
    /// How long CreateInstance waits, after Edge Connect reports a failed image pull
    /// (`ErrImagePull`) or a pod that no node has taken (`Pending (0/0)`), which may clear by
    /// themselves, before it gives up on the runner on that site, in seconds. A repeated pull
    /// failure, or a reason that cannot clear (`ImagePullBackOff`, `CrashLoopBackOff`, ...),
    /// ends the create at once.
    #[serde(default = "default_start_failure_grace")]
    pub start_failure_grace_secs: u64,
    /// Edge Connect calls RemoveAllInstances has in flight at most; 429 / 503 answers lower it
    /// while they last.
    #[serde(default = "default_remove_all_concurrency")]
    pub remove_all_concurrency: usize,
    /// DeleteInstance reads the AppInst before deleting it, so that only the AppInst of our
    /// App is deleted. `false` saves one request on zones, but may then delete an AppInst of
    /// another App that has the runner's name (only while the runner has none of its own).
    #[serde(default = "default_true")]
    pub delete_checks_app_inst: bool,
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SiteKey {
    /// Operator organization, e.g. `TelekomOP`.
    pub organization: String,
    /// Cloudlet or zone name, e.g. `Munich`.
    pub name: String,
    /// A federation partner's cloudlet: the partner's organization, which a Gen2 AppInst key
    /// must repeat (c39 `api/edgeproto/cloudletkey.pb.go:34-38`; else `Specified Cloudlet not
    /// found`). Empty for the operator's own sites.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub federated_organization: String,
}

impl From<&SiteKey> for edge_connect::models::SiteRef {
    fn from(key: &SiteKey) -> Self {
        edge_connect::models::SiteRef {
            organization: key.organization.clone(),
            name: key.name.clone(),
            federated_organization: key.federated_organization.clone(),
        }
    }
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
fn default_remove_all_concurrency() -> usize {
    100
}
fn default_start_failure_grace() -> u64 {
    30
}

fn default_connect_retry() -> u64 {
    edge_connect::DEFAULT_CONNECT_RETRY.as_secs()
}

pub use credentials::{ENV_PASSWORD, ENV_USERNAME};
pub use edge_connect::Credentials;

mod credentials;
mod validate;

impl EdgeConnectConfig {
    /// What the Edge Connect client is built from.
    pub fn client_options(&self) -> edge_connect::ClientOptions {
        edge_connect::ClientOptions {
            url: self.url.clone(),
            region: self.region.clone(),
            request_timeout: std::time::Duration::from_secs(self.request_timeout_secs),
            connect_retry: std::time::Duration::from_secs(self.connect_retry_secs),
            ca_bundle: self.ca_bundle.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
        }
    }
}

/// The longest duration a config may give, in seconds (24 hours). Far beyond any useful
/// deadline, and small enough that deadline arithmetic (`Instant + Duration`, plus the rollback
/// grace) can never overflow.
pub const MAX_DURATION_SECS: u64 = 24 * 60 * 60;

impl Config {
    /// Reads, parses and validates a config file. Only a regular file of at most 1 MiB is read
    /// (a FIFO or `/dev/zero` is refused, not waited on).
    pub fn load(path: &Path) -> Result<Self, Error> {
        let shown = absolute(path);
        let raw =
            crate::text::read_regular_file(path, crate::text::MAX_CONFIG_BYTES).map_err(|e| {
                Error::config(format!("cannot read config file {}: {e}", shown.display()))
            })?;
        let text = String::from_utf8(raw).map_err(|_| {
            Error::config(format!(
                "config {}: not valid UTF-8 (a TOML file is UTF-8 text)",
                shown.display()
            ))
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates config text. `path` names the file in messages, and relative paths
    /// in the config (`credentials_file`, `log_file`, `token_cache_dir`,
    /// `edge_connect.ca_bundle`) are resolved against its directory, so the config means the
    /// same whatever directory GARM starts the provider in.
    pub fn parse(text: &str, path: &Path) -> Result<Self, Error> {
        // Messages name the file by its full path: GARM's working directory is not the
        // operator's.
        let path = absolute(path);
        let mut config: Config = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| {
                Error::config(format!(
                    "config {}: {}",
                    path.display(),
                    toml_error(&e, text, true)
                ))
            })?;
        config
            .validate()
            .map_err(|msg| Error::config(format!("config {}: {msg}", path.display())))?;
        if let Some(dir) = path.parent() {
            config.resolve_relative_paths(dir);
        }
        Ok(config)
    }

    /// Makes every relative path of the config relative to `dir` (the config file's directory).
    fn resolve_relative_paths(&mut self, dir: &Path) {
        for path in [
            &mut self.credentials_file,
            &mut self.log_file,
            &mut self.token_cache_dir,
            &mut self.edge_connect.ca_bundle,
        ]
        .into_iter()
        .flatten()
        {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
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
                ..Default::default()
            }),
        }
    }

    /// JSON Schema of this config, generated from the types above.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Config)).unwrap_or_default()
    }
}

/// The absolute form of `path` for messages (the path as given when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// One line: "line N: key: what was wrong", never the source excerpt that toml's own Display
/// prints over several lines. With `show_value` false (the credentials file) no value from the
/// file is repeated, whatever its type; the config file holds no secret, so a short excerpt of a
/// wrong value is shown there to make the fix obvious.
fn toml_error(
    e: &serde_path_to_error::Error<toml::de::Error>,
    text: &str,
    show_value: bool,
) -> String {
    let inner = e.inner();
    let message = inner.message().replace('\n', " ");
    let message = message.trim();
    let key = e.path().to_string();
    let is_secs = key.ends_with("_secs");
    // A syntax error (no key, not one of serde's forms) is toml's own description of the
    // text, which holds no value except in the credentials file.
    let described = crate::text::describe_serde(message, show_value);
    let described = if described == "a value of the wrong form" && show_value {
        crate::text::echo_max(message, 300)
    } else if is_secs {
        described.replace("a whole number (0 or more)", "whole seconds")
    } else {
        described
    };
    let mut out = String::new();
    if let Some(span) = inner.span() {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        out.push_str(&format!("line {line}: "));
    }
    out.push_str(&crate::text::keyed(&key, &described));
    out
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
                name: "Munich".into(),
                ..Default::default()
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
    fn relative_paths_follow_the_config_file() {
        let c = Config::parse(
            &SEED
                .replace("/garm/provider.log", "logs/provider.log")
                .replace("/etc/garm-creds/credentials.toml", "credentials.toml"),
            Path::new("/etc/garm/p.toml"),
        )
        .unwrap();
        assert_eq!(
            c.credentials_file.as_deref(),
            Some(Path::new("/etc/garm/credentials.toml"))
        );
        assert_eq!(
            c.log_file.as_deref(),
            Some(Path::new("/etc/garm/logs/provider.log"))
        );
    }

    #[test]
    fn durations_are_bounded_and_the_api_path_is_not_part_of_the_url() {
        let err = parse(&SEED.replace(
            "default_flavor = \"EU.small\"",
            "default_flavor = \"EU.small\"\nrequest_timeout_secs = 86401\noperation_timeout_secs = 86401",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.ends_with("edge_connect.request_timeout_secs: 86401 is more than the maximum of 86400 (24 hours)"),
            "{err}"
        );
        let err = parse(&SEED.replace(
            "https://hub.example.invalid",
            "https://hub.example.invalid/api/v1/",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.ends_with("(edge_connect.url = \"https://hub.example.invalid\")"),
            "{err}"
        );
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
        let text = include_str!("../../config/provider.example.toml");
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
