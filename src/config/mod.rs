//! Provider config (TOML): the type and its schema (here), reading the file (`load`), the value
//! types (`values`), validation (`validate`), credentials (`credentials`).
//!
//! Every setting is read from here under one name; nothing else (pool extra specs, builder
//! setters) carries a second copy.
//!
//! The seed format (`log_file`, `credentials_file`, `[edge_connect]` with `organization`,
//! `region`, `url`, `default_flavor` and `[edge_connect.cloudlet]`) is a contract with existing
//! deployments: every key added since is optional with a safe default.

use std::collections::HashMap;
use std::path::PathBuf;

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
    /// Events file the metrics sidecar reads (`metrics serve`), appended to by every command.
    /// Omitted: no metrics are recorded (unless `EDP_EDGE_CONNECT_METRICS_EVENTS_FILE` names one).
    #[serde(default)]
    pub metrics_events_file: Option<PathBuf>,
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
    /// A cache on every site this controller places runners on (docs/site-cache.md).
    #[serde(default)]
    pub site_cache: SiteCacheConfig,
}

/// `[site_cache]`: what each site's cache runs, one App and AppInst per site and service.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(remote = "Self", default, deny_unknown_fields)]
pub struct SiteCacheConfig {
    /// A pull-through mirror of Docker Hub for the `dind` and `buildkit` sidecars.
    pub registry_mirror: bool,
    /// forgejo-runner's cache server for the `actions/cache` of Forgejo runners on `dind`
    /// pools; its secret is the credentials file's `site_cache_secret` or `EDP_SITE_CACHE_SECRET`.
    pub actions_cache: bool,
    /// The mirror's image (distribution's registry, proxy mode).
    pub registry_image: String,
    /// The cache server's image (forgejo-runner, which has `cache-server`).
    pub actions_cache_image: String,
    /// Flavor of each cache App (default: `edge_connect.default_flavor`).
    pub flavor: Option<String>,
}

crate::object::object_only!(SiteCacheConfig, "a table of site cache settings");

impl Default for SiteCacheConfig {
    fn default() -> Self {
        SiteCacheConfig {
            registry_mirror: false,
            actions_cache: false,
            // Pinned (docs/site-cache.md): distribution's official image, and forgejo-runner's
            // of the release the example runner image carries.
            registry_image: "docker.io/library/registry:3.0.0".into(),
            actions_cache_image: "data.forgejo.org/forgejo/runner:13.1.0".into(),
            flavor: None,
        }
    }
}

impl SiteCacheConfig {
    /// Whether any service runs.
    pub fn enabled(&self) -> bool {
        self.registry_mirror || self.actions_cache
    }
}

// A table, never an array of its values in order (`crate::object`); the doc line below is the
// schema's description, which the Helm chart's values.schema.json repeats word for word.
/// `[edge_connect]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
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
    /// App deployment type: `kubernetes` (default) or `docker`. A pool's
    /// `extra_specs.deployment` overrides it.
    #[serde(default)]
    pub deployment: Deployment,
    /// How the runner's environment reaches the container: `env_vars` (default: plain values in
    /// `env_vars`, secrets in `secret_env_vars`; platforms from 2024-03 on) or `envvars_yaml`
    /// (everything in a `configs` envVarsYaml entry, for older kubernetes platforms; secrets are
    /// then readable by anyone who can show the App). A pool's `extra_specs.env_delivery`
    /// overrides it.
    #[serde(default)]
    pub env_delivery: EnvDelivery,
    /// App version used for every runner App.
    #[serde(default = "default_app_version")]
    pub app_version: String,
    /// Container command; empty runs the image's own entrypoint. A pool's
    /// `extra_specs.command` overrides it.
    #[serde(default)]
    pub command: Option<String>,
    /// Container arguments. A pool's `extra_specs.command_args` overrides them.
    #[serde(default)]
    pub command_args: Vec<String>,
    /// Timeout of one HTTP request, in seconds (streams: between two lines).
    #[serde(default = "secs::<60>")]
    pub request_timeout_secs: u64,
    /// Deadline for one whole provider command, in seconds. Keep it below GARM's
    /// `runner_bootstrap_timeout` (20 minutes by default).
    #[serde(default = "secs::<900>")]
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
    #[serde(default = "secs::<30>")]
    pub start_failure_grace_secs: u64,
    /// PEM file with extra CA certificates to trust for the Edge Connect URL.
    #[serde(default)]
    pub ca_bundle: Option<PathBuf>,
    /// Skip TLS verification (testing only; logged loudly on every call).
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// Allow a plain `http://` URL that is not on loopback.
    #[serde(default)]
    pub allow_http: bool,
    /// Retired `remove_all_concurrency`: read so that an existing config still loads, then
    /// ignored with a warning ([`Config::retired_keys`]).
    #[serde(default, rename = "remove_all_concurrency")]
    #[schemars(skip)]
    retired_remove_all_concurrency: Option<serde::de::IgnoredAny>,
    /// Retired `delete_checks_app_inst`, as above.
    #[serde(default, rename = "delete_checks_app_inst")]
    #[schemars(skip)]
    retired_delete_checks_app_inst: Option<serde::de::IgnoredAny>,
}

crate::object::object_only!(EdgeConnectConfig, "a table of Edge Connect settings");

pub use crate::manifest_safety::{Deployment, EnvDelivery};
pub use credentials::{ENV_PASSWORD, ENV_SITE_CACHE_SECRET, ENV_USERNAME};
pub use edge_connect::Credentials;
pub use values::{LogFormat, LogLevel, Placement, SiteKey};

mod credentials;
mod load;
mod validate;
mod values;

use load::toml_error;

fn default_true() -> bool {
    true
}
fn default_app_version() -> String {
    "1".to_string()
}
/// A default number of seconds.
fn secs<const N: u64>() -> u64 {
    N
}
fn default_connect_retry() -> u64 {
    edge_connect::DEFAULT_CONNECT_RETRY.as_secs()
}

/// Keys a config may still hold from older releases, with why they no longer do anything. They
/// are accepted (an existing deployment's config keeps loading) and each is named in one
/// warning (see docs/operations.md).
pub const RETIRED_KEYS: [(&str, &str); 2] = [
    (
        "edge_connect.remove_all_concurrency",
        "RemoveAllInstances keeps a fixed number of calls in flight and backs off on 429 / 503",
    ),
    (
        "edge_connect.delete_checks_app_inst",
        "DeleteInstance always reads the AppInst first, so that only the runner's own AppInst is deleted",
    ),
];

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

    /// The runner container this config gives a pool that sets none of its own
    /// (`ExtraSpecs::container` lays a pool's values over it).
    pub fn container(&self) -> crate::manifest_safety::Container {
        crate::manifest_safety::Container {
            deployment: self.deployment,
            env_delivery: self.env_delivery,
            command: self.command.clone(),
            command_args: self.command_args.clone(),
        }
    }
}

/// The longest duration a config may give, in seconds (24 hours). Far beyond any useful
/// deadline, and small enough that deadline arithmetic (`Instant + Duration`, plus the rollback
/// grace) can never overflow.
pub const MAX_DURATION_SECS: u64 = 24 * 60 * 60;

impl Config {
    /// The configured placement.
    pub fn placement(&self) -> Placement {
        match (&self.edge_connect.zone, &self.edge_connect.cloudlet) {
            (Some(z), _) => Placement::Zone(z.clone()),
            (None, Some(c)) => Placement::Cloudlet(c.clone()),
            // validate() guarantees one of them; a zone is the newer default shape.
            (None, None) => Placement::Zone(SiteKey::default()),
        }
    }

    /// The retired keys this config holds, each with why it is ignored ([`RETIRED_KEYS`]).
    pub fn retired_keys(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        let ec = &self.edge_connect;
        let present = [
            ec.retired_remove_all_concurrency.is_some(),
            ec.retired_delete_checks_app_inst.is_some(),
        ];
        RETIRED_KEYS
            .into_iter()
            .zip(present)
            .filter_map(|(key, present)| present.then_some(key))
    }

    /// JSON Schema of this config, generated from the types above.
    pub fn json_schema() -> Result<serde_json::Value, Error> {
        serde_json::to_value(schemars::schema_for!(Config))
            .map_err(|e| Error::caused_by(format!("cannot generate the config schema: {e}"), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
            (ENV_PASSWORD.to_string(), "p-from-the-env".to_string()),
        ]
        .into();
        // The file does not exist, but complete env credentials make it unnecessary.
        let creds = c.credentials(&env).unwrap();
        assert_eq!(creds.username, "u");
        assert_eq!(creds.password.expose(), "p-from-the-env");
    }

    #[test]
    fn schema_lists_seed_keys() {
        let schema = Config::json_schema().unwrap().to_string();
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
        let schema = Config::json_schema().unwrap();
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
