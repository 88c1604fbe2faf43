//! An App: as CreateApp takes it, as ShowApp shows it, and its environment read back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::env::Env;
use super::{AppKey, FlavorKey};

/// `ConfigFile` (`{kind, config}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigFile {
    /// `envVarsYaml`, `helmCustomizationYaml`, ...
    pub kind: String,
    /// The content.
    pub config: String,
}

/// The body of a CreateApp request. No `Debug`: it carries secret variables and the registry
/// password, and nothing prints it.
#[derive(Clone, Default, Serialize)]
pub struct NewApp {
    pub key: AppKey,
    /// Always `Docker` for runner images.
    pub image_type: &'static str,
    /// Container image.
    pub image_path: String,
    /// `kubernetes` or `docker`.
    pub deployment: &'static str,
    /// Flavor; left out when the App is sized by `kubernetes_resources` instead, as the
    /// controller takes one or the other (docs/edge-connect-behaviours.md B32).
    #[serde(skip_serializing_if = "flavor_unset")]
    pub default_flavor: FlavorKey,
    /// The App's size without a flavor (deployment kubernetes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_resources: Option<KubernetesResources>,
    /// Container command (empty: the image's entrypoint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Container args.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command_args: Vec<String>,
    /// envVarsYaml configs (fallback delivery).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ConfigFile>,
    /// Plain environment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env_vars: BTreeMap<String, String>,
    /// Secret environment (values exposed only here, on the way to the server).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub secret_env_vars: BTreeMap<String, String>,
    /// Private registry user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Private registry password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// The App's own Kubernetes manifest (kept as sent; without it the platform generates one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_manifest: Option<String>,
    /// Ports other Apps reach it on, `tcp:5000` (docs/edge-connect-behaviours.md B35).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub access_ports: String,
}

fn flavor_unset(flavor: &FlavorKey) -> bool {
    flavor.name.is_empty()
}

/// `KubernetesResources`: what the App's pods need of a site, here one pool of CPU nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KubernetesResources {
    /// The CPU node pool.
    pub cpu_pool: NodePoolResources,
}

/// `NodePoolResources` (main `api/edgeproto/resources.proto:86-100`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodePoolResources {
    /// vCPUs in thousandths, sent as the controller's `Udec64`: a whole number as an integer,
    /// else a decimal string (main `api/edgeproto/decimal.go:287-293`).
    #[serde(serialize_with = "udec64")]
    pub total_vcpus: u64,
    /// Memory in MB.
    pub total_memory: u64,
    /// Disk in GB.
    #[serde(skip_serializing_if = "is_zero")]
    pub total_disk: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn udec64<S: serde::Serializer>(milli: &u64, s: S) -> Result<S::Ok, S::Error> {
    if milli.is_multiple_of(1000) {
        s.serialize_u64(milli / 1000)
    } else {
        s.serialize_str(&vcpus(*milli))
    }
}

/// Thousandths of a vCPU as the controller's decimal string and a person write them (`1.5`).
pub fn vcpus(milli: u64) -> String {
    let fraction = format!("{:03}", milli % 1000);
    match fraction.trim_end_matches('0') {
        "" => (milli / 1000).to_string(),
        fraction => format!("{}.{fraction}", milli / 1000),
    }
}

/// An App as ShowApp returns it, reduced to what is read back: its key, its environment (see
/// [`App::env`]) and its image pull user. Everything else of the line is skipped, not copied.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct App {
    pub key: AppKey,
    /// Plain environment (its string entries; `None` when the server shows no `env_vars`).
    env_vars: Option<Env>,
    /// Config files (where the environment is when it is delivered as envVarsYaml).
    #[serde(deserialize_with = "super::first_items")]
    configs: Vec<ConfigFile>,
    /// Image pull user (servers from 2025-10-17 on; older ones drop it).
    pub username: String,
}

impl App {
    /// The values of `names` in the App's environment, in the order asked: from its `env_vars`,
    /// then from its envVarsYaml configs for names not found there. The one way to read an App's
    /// environment.
    pub fn env<const N: usize>(&self, names: [&str; N]) -> [Option<String>; N] {
        let mut found: [Option<String>; N] = names.map(|name| self.plain_env_var(name));
        if found.iter().any(Option::is_none) {
            for config in self.configs.iter().filter(|c| c.kind == "envVarsYaml") {
                let mut vars = parse_env_vars_yaml(&config.config);
                for (slot, name) in found.iter_mut().zip(names) {
                    if slot.is_none() {
                        *slot = vars.remove(name);
                    }
                }
            }
        }
        found
    }

    /// True when the App is shown with any `env_vars` at all: a server that drops the field
    /// (docs/edge-connect-behaviours.md B1) shows none.
    pub fn shows_env_vars(&self) -> bool {
        self.env_vars.is_some()
    }

    /// True when `name` is in the App's `env_vars` itself (not in an envVarsYaml config): the
    /// server kept that field (docs/edge-connect-behaviours.md B1).
    pub fn has_plain_env_var(&self, name: &str) -> bool {
        self.plain_env_var(name).is_some()
    }

    fn plain_env_var(&self, name: &str) -> Option<String> {
        self.env_vars.as_ref()?.get(name).map(str::to_string)
    }
}

/// Renders environment variables as an envVarsYaml config (a YAML list of Kubernetes `EnvVar`).
///
/// Values are written as JSON strings, which are valid YAML double-quoted scalars, so no value can
/// break out of its field.
pub fn env_vars_yaml(vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (name, value) in vars {
        let quoted = Value::String(value.clone()).to_string();
        out.push_str(&format!("- name: {name}\n  value: {quoted}\n"));
    }
    out
}

/// Reads back an envVarsYaml config written by [`env_vars_yaml`]. Entries in any other layout
/// are skipped: they were not written by this provider.
pub fn parse_env_vars_yaml(yaml: &str) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    let mut lines = yaml.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("- name: ") else {
            continue;
        };
        let Some(value) = lines.next().and_then(|l| l.strip_prefix("  value: ")) else {
            continue;
        };
        if let Ok(Value::String(v)) = serde_json::from_str(value) {
            vars.insert(name.trim().to_string(), v);
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_yaml_round_trips_awkward_values() {
        let vars: BTreeMap<String, String> = [
            ("A".to_string(), "plain".to_string()),
            (
                "B".to_string(),
                "quote \" colon: newline\n#hash".to_string(),
            ),
        ]
        .into();
        let yaml = env_vars_yaml(&vars);
        assert_eq!(parse_env_vars_yaml(&yaml), vars);
    }

    #[test]
    fn string_entries_decoded_first_wins_others_skipped() {
        let env: Env = serde_json::from_str(
            r#"{"N":3,"A\u0026\"B\"":"x \u0026 \"y\" \u003c","N":"later","L":[1,{"a":"b"}],"M":{"A":"no"},"A":"1","E":"","A":"2","Z":null}"#,
        )
        .unwrap();
        let app = App {
            env_vars: Some(env),
            ..App::default()
        };
        let get = |name: &str| app.plain_env_var(name);
        assert_eq!(get("A&\"B\"").as_deref(), Some("x & \"y\" <"));
        assert_eq!(get("N").as_deref(), Some("later"), "a number is no entry");
        assert_eq!(get("A").as_deref(), Some("1"));
        assert_eq!(get("E").as_deref(), Some(""));
        assert_eq!((get("L"), get("M"), get("Z")), (None, None, None));
        assert_eq!(get("missing"), None);
        assert!(serde_json::from_str::<Env>(r#""not an object""#).is_err());
        assert!(serde_json::from_str::<Env>(r#"{"A":"1","B":"#).is_err());
    }

    /// An App as a Show line holds it.
    fn app(env: &str, configs: &[ConfigFile]) -> App {
        let line = format!(
            r#"{{"key":{{"name":"a"}},"env_vars":{env},"configs":{},"image_path":"i"}}"#,
            serde_json::to_string(configs).unwrap()
        );
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn several_variables_in_one_pass_then_from_env_vars_yaml() {
        let yaml = ConfigFile {
            kind: "envVarsYaml".into(),
            config: env_vars_yaml(&[("C".to_string(), "yaml".to_string())].into()),
        };
        let app = app(
            r#"{"A":"1","N":3,"X":{"deep":["B"]},"B":"two \"q\" \u0026 \u003c","A":"later","L":[1]}"#,
            &[yaml],
        );
        assert_eq!(
            app.env(["B", "A", "C", "N", "missing", "L", "A"]),
            [
                Some("two \"q\" & <".to_string()),
                Some("1".to_string()),
                Some("yaml".to_string()),
                None,
                None,
                None,
                Some("1".to_string()),
            ]
        );
        assert!(app.has_plain_env_var("A"));
        assert!(!app.has_plain_env_var("C"), "C is only in the yaml config");
        assert_eq!(App::default().env(["A"]), [None]);
    }

    #[test]
    fn shows_env_vars_only_when_the_server_shows_them() {
        assert!(!App::default().shows_env_vars());
        assert!(!app("null", &[]).shows_env_vars());
        assert!(app("{}", &[]).shows_env_vars());
    }

    proptest::proptest! {
        #[test]
        fn env_agrees_with_a_full_parse(
            map in proptest::collection::btree_map("[A-Z_]{1,6}", ".*", 0..8),
            a in "[A-Z_]{1,6}",
            b in "[A-Z_]{1,6}",
        ) {
            let app = app(&serde_json::to_string(&map).unwrap(), &[]);
            proptest::prop_assert_eq!(app.env([a.as_str(), b.as_str()]), [map.get(&a).cloned(), map.get(&b).cloned()]);
        }
    }
}
