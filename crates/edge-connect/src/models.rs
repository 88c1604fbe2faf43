//! Edge Connect objects, as sent and as shown.
//!
//! Requests are built from small `Serialize` types that carry only what the MC accepts on create
//! (it rejects output-only fields such as `state` or `mapped_ports`). Responses are read
//! leniently: every field defaults, so both API generations and future additions parse.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `AppKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppKey {
    /// Owning organization.
    #[serde(default)]
    pub organization: String,
    /// App name.
    #[serde(default)]
    pub name: String,
    /// App version.
    #[serde(default)]
    pub version: String,
}

/// `CloudletKey` / `ZoneKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteRef {
    /// Operator organization.
    #[serde(default)]
    pub organization: String,
    /// Cloudlet or zone name.
    #[serde(default)]
    pub name: String,
    /// Set on the cloudlet keys of federated cloudlets; a delete must send it back or the
    /// AppInst is "not found" (c39 `cloudletkey.pb.go:34-38`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub federated_organization: String,
}

impl SiteRef {
    /// True when no part is set (the server emits `{}` for unset keys).
    pub fn is_empty(&self) -> bool {
        self.organization.is_empty() && self.name.is_empty()
    }
}

/// `AppInstKey`: `{name, organization}`, plus `cloudlet_key` in the older (Gen2) shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppInstKey {
    /// AppInst name.
    #[serde(default)]
    pub name: String,
    /// Owning organization.
    #[serde(default)]
    pub organization: String,
    /// Cloudlet, in the older key shape only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloudlet_key: Option<SiteRef>,
}

/// `FlavorKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlavorKey {
    /// Flavor name.
    #[serde(default)]
    pub name: String,
}

/// `ConfigFile` (`{kind, config}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    /// `envVarsYaml`, `helmCustomizationYaml`, ...
    #[serde(default)]
    pub kind: String,
    /// The content.
    #[serde(default)]
    pub config: String,
}

/// The body of a CreateApp request. Its `Debug` names secret variables but never shows their
/// values.
#[derive(Clone, Serialize)]
pub struct NewApp {
    /// Key.
    pub key: AppKey,
    /// Always `Docker` for runner images.
    pub image_type: &'static str,
    /// Container image.
    pub image_path: String,
    /// `kubernetes` or `docker`.
    pub deployment: &'static str,
    /// Flavor.
    pub default_flavor: FlavorKey,
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
}

impl std::fmt::Debug for NewApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewApp")
            .field("key", &self.key)
            .field("image_path", &self.image_path)
            .field("deployment", &self.deployment)
            .field("default_flavor", &self.default_flavor)
            .field("command", &self.command)
            .field("command_args", &self.command_args)
            .field("env_vars", &self.env_vars.keys().collect::<Vec<_>>())
            .field(
                "secret_env_vars",
                &self.secret_env_vars.keys().collect::<Vec<_>>(),
            )
            .field(
                "configs",
                &self.configs.iter().map(|c| &c.kind).collect::<Vec<_>>(),
            )
            .field("username", &self.username)
            .field("credentials", &self.credentials.as_ref().map(|_| "***"))
            .finish()
    }
}

/// An App as ShowApp returns it (only the fields the provider reads).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct App {
    /// Key.
    #[serde(default)]
    pub key: AppKey,
    /// Image.
    #[serde(default)]
    pub image_path: String,
    /// Deployment type.
    #[serde(default)]
    pub deployment: String,
    /// Flavor (may come back `{}` on newer servers).
    #[serde(default)]
    pub default_flavor: FlavorKey,
    /// Plain environment, kept as raw JSON: see [`App::env_var`].
    #[serde(default)]
    pub env_vars: Option<Box<serde_json::value::RawValue>>,
    /// Config files (envVarsYaml fallback).
    #[serde(default)]
    pub configs: Vec<ConfigFile>,
    /// Image pull user (servers from 2025-10-17 on; older ones drop it).
    #[serde(default)]
    pub username: String,
    /// Deletion in progress.
    #[serde(default)]
    pub delete_prepare: bool,
    /// Creation time (RFC 3339 string).
    #[serde(default)]
    pub created_at: String,
}

/// The body of a CreateAppInst request.
#[derive(Debug, Clone, Serialize)]
pub struct NewAppInst {
    /// Key (with `cloudlet_key` inside for the older shape).
    pub key: AppInstKey,
    /// The App to deploy.
    pub app_key: AppKey,
    /// The zone (newer shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_key: Option<SiteRef>,
}

/// An AppInst as ShowAppInst returns it (either shape).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AppInst {
    /// Key.
    #[serde(default)]
    pub key: AppInstKey,
    /// Deployed App (absent in the oldest shape).
    #[serde(default)]
    pub app_key: Option<AppKey>,
    /// Zone (newer shape).
    #[serde(default)]
    pub zone_key: Option<SiteRef>,
    /// Chosen cloudlet (newer shape: output only).
    #[serde(default)]
    pub cloudlet_key: Option<SiteRef>,
    /// Tracked state.
    #[serde(default)]
    pub state: crate::AppInstState,
    /// Errors recorded with an `*Error` state.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Base FQDN, when the App has ports.
    #[serde(default)]
    pub uri: String,
    /// Creation time.
    #[serde(default)]
    pub created_at: String,
}

impl AppInst {
    /// The cloudlet the instance runs on, whichever shape the server used.
    pub fn cloudlet(&self) -> Option<&SiteRef> {
        self.cloudlet_key.as_ref().filter(|c| !c.is_empty()).or(self
            .key
            .cloudlet_key
            .as_ref()
            .filter(|c| !c.is_empty()))
    }
}

/// A flavor as ShowFlavor / ShowFlavorsForZone return it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Flavor {
    /// `ShowFlavor` shape.
    #[serde(default)]
    pub key: Option<FlavorKey>,
    /// `ShowFlavorsForZone` shape.
    #[serde(default)]
    pub name: Option<String>,
}

impl Flavor {
    /// The flavor's name in either shape.
    pub fn flavor_name(&self) -> &str {
        self.name
            .as_deref()
            .or(self.key.as_ref().map(|k| k.name.as_str()))
            .unwrap_or_default()
    }
}

/// A zone or cloudlet as ShowZone / ShowCloudlet return it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Site {
    /// Key.
    #[serde(default)]
    pub key: SiteRef,
    /// The zone a Gen3 cloudlet belongs to (empty for zones and on Gen2).
    #[serde(default)]
    pub zone: String,
}

/// Renders environment variables as an envVarsYaml config (a YAML list of Kubernetes `EnvVar`).
///
/// Values are written as JSON strings, which are valid YAML double-quoted scalars, so no value can
/// break out of its field.
pub fn env_vars_yaml(vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (name, value) in vars {
        let quoted = serde_json::Value::String(value.clone()).to_string();
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
        if let Ok(serde_json::Value::String(v)) = serde_json::from_str(value) {
            vars.insert(name.trim().to_string(), v);
        }
    }
    vars
}

impl App {
    /// True when the App's `env_vars` (not an envVarsYaml config) holds `name`: the server kept
    /// the field (spec §13 row 1).
    pub fn has_plain_env_var(&self, name: &str) -> bool {
        let mut found = [None];
        if let Some(raw) = &self.env_vars {
            env_scan::string_fields(raw.get(), &[name], &mut found);
        }
        found[0].is_some()
    }

    /// One variable of the App's environment, without copying the whole map. To read several,
    /// use [`App::env_vars_named`]: each call here scans the whole environment again.
    pub fn env_var(&self, name: &str) -> Option<String> {
        let [value] = self.env_vars_named([name]);
        value
    }

    /// Several variables of the App's environment in one pass over its `env_vars` JSON (then
    /// over its envVarsYaml configs, for names not found there), in the order asked. List reads
    /// the ownership variables of every candidate App: one scan instead of one per variable.
    pub fn env_vars_named<const N: usize>(&self, names: [&str; N]) -> [Option<String>; N] {
        let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
        if let Some(raw) = &self.env_vars {
            env_scan::string_fields(raw.get(), &names, &mut found);
        }
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
}

/// A fixed set of environment variable names, for [`NamedEnv`] and [`AppEnv`].
pub trait EnvNames {
    /// The names, in the order their values are kept.
    const NAMES: &'static [&'static str];
}

/// The values of [`EnvNames::NAMES`] in an App's `env_vars`, picked out while the Show line is
/// parsed: one pass, and nothing else of the object is copied or kept.
pub struct NamedEnv<N: EnvNames> {
    values: Vec<Option<String>>,
    names: std::marker::PhantomData<N>,
}

impl<N: EnvNames> Default for NamedEnv<N> {
    fn default() -> Self {
        NamedEnv {
            values: vec![None; N::NAMES.len()],
            names: std::marker::PhantomData,
        }
    }
}

impl<N: EnvNames> std::fmt::Debug for NamedEnv<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Only the names: a value may be anything a pool put into the environment.
        let set: Vec<&str> = N::NAMES
            .iter()
            .zip(&self.values)
            .filter(|(_, v)| v.is_some())
            .map(|(n, _)| *n)
            .collect();
        f.debug_struct("NamedEnv").field("set", &set).finish()
    }
}

impl<'de, N: EnvNames> Deserialize<'de> for NamedEnv<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut env = NamedEnv::<N>::default();
        d.deserialize_any(env_scan::Fields {
            names: N::NAMES,
            found: &mut env.values,
        })?;
        Ok(env)
    }
}

/// An App as ShowApp returns it, reduced to its key, the environment variables `N` names and its
/// envVarsYaml configs (where the environment is when it is delivered that way). Reading Apps
/// as this instead of [`App`] parses each line once: no raw `env_vars` copy to scan again.
#[derive(Debug, Deserialize)]
#[serde(bound = "")]
pub struct AppEnv<N: EnvNames> {
    /// Key.
    #[serde(default)]
    pub key: AppKey,
    /// The named variables of `env_vars`.
    #[serde(default)]
    pub env_vars: NamedEnv<N>,
    /// Config files (envVarsYaml delivery).
    #[serde(default)]
    pub configs: Vec<ConfigFile>,
}

impl<N: EnvNames> AppEnv<N> {
    /// The values of `N::NAMES`, in that order: from `env_vars`, else from an envVarsYaml config.
    pub fn vars(&self) -> Vec<Option<String>> {
        let mut values = self.env_vars.values.clone();
        if values.iter().any(Option::is_none) {
            for config in self.configs.iter().filter(|c| c.kind == "envVarsYaml") {
                let mut vars = parse_env_vars_yaml(&config.config);
                for (slot, name) in values.iter_mut().zip(N::NAMES) {
                    if slot.is_none() {
                        *slot = vars.remove(*name);
                    }
                }
            }
        }
        values
    }
}

/// The values of several keys of a JSON object of strings, in one pass and without building the
/// map (an App's `env_vars` holds dozens of entries; only a few are wanted).
mod env_scan {
    use std::fmt;

    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use serde::Deserializer;

    /// Fills `found[i]` with the string value of `names[i]`. A value that is not a string leaves
    /// its slot empty; unreadable JSON ends the scan, keeping what was found before it.
    pub(super) fn string_fields(raw: &str, names: &[&str], found: &mut [Option<String>]) {
        let mut de = serde_json::Deserializer::from_str(raw);
        // An error only means "nothing more to find": the slots filled so far stay.
        let _ = de.deserialize_map(Fields { names, found });
    }

    /// Fills `found[i]` with the value of `names[i]` from the object it visits (`null`: none).
    pub(super) struct Fields<'a, 'k> {
        pub(super) names: &'a [&'k str],
        pub(super) found: &'a mut [Option<String>],
    }

    impl<'de> Visitor<'de> for Fields<'_, '_> {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object of strings")
        }

        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }

        fn visit_none<E>(self) -> Result<(), E> {
            Ok(())
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(index) = map.next_key_seed(KeyIndex { names: self.names })? {
                match index {
                    // The first occurrence wins, as in a map built from the object.
                    Some(i) if self.found[i].is_none() => {
                        self.found[i] = map.next_value_seed(StringOrNothing)?;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            // A name asked for twice gets its value in every slot, not only the first.
            for i in 0..self.names.len() {
                if self.found[i].is_none() {
                    if let Some(j) = self.names[..i].iter().position(|n| *n == self.names[i]) {
                        self.found[i] = self.found[j].clone();
                    }
                }
            }
            Ok(())
        }
    }

    /// The position of a map key among the wanted names, compared without allocating.
    struct KeyIndex<'a, 'k> {
        names: &'a [&'k str],
    }

    impl<'de> DeserializeSeed<'de> for KeyIndex<'_, '_> {
        type Value = Option<usize>;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
            d.deserialize_str(self)
        }
    }

    impl<'de> Visitor<'de> for KeyIndex<'_, '_> {
        type Value = Option<usize>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string key")
        }

        fn visit_str<E>(self, v: &str) -> Result<Option<usize>, E> {
            Ok(self.names.iter().position(|n| *n == v))
        }
    }

    /// A string value, or `None` for any other JSON value (which is skipped).
    struct StringOrNothing;

    impl<'de> DeserializeSeed<'de> for StringOrNothing {
        type Value = Option<String>;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for StringOrNothing {
        type Value = Option<String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_str<E>(self, v: &str) -> Result<Option<String>, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_string<E>(self, v: String) -> Result<Option<String>, E> {
            Ok(Some(v))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Option<String>, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Option<String>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_app_debug_hides_secret_values() {
        let app = NewApp {
            key: AppKey::default(),
            image_type: "Docker",
            image_path: "img".into(),
            deployment: "kubernetes",
            default_flavor: FlavorKey::default(),
            command: None,
            command_args: vec![],
            configs: vec![ConfigFile {
                kind: "envVarsYaml".into(),
                config: "- name: BEARER_TOKEN\n  value: \"tok-123\"\n".into(),
            }],
            env_vars: BTreeMap::new(),
            secret_env_vars: [("BEARER_TOKEN".to_string(), "tok-123".to_string())].into(),
            username: Some("u".into()),
            credentials: Some("pw-456".into()),
        };
        let debug = format!("{app:?}");
        assert!(debug.contains("BEARER_TOKEN"), "{debug}");
        assert!(
            !debug.contains("tok-123") && !debug.contains("pw-456"),
            "{debug}"
        );
    }

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

    fn app_with_env(env: &str, configs: Vec<ConfigFile>) -> App {
        App {
            env_vars: Some(serde_json::value::RawValue::from_string(env.to_string()).unwrap()),
            configs,
            ..Default::default()
        }
    }

    #[test]
    fn several_env_vars_in_one_pass() {
        let app = app_with_env(
            r#"{"A":"1","N":3,"X":{"deep":["B"]},"B":"two \"q\" \u0026 \u003c","A":"later","L":[1]}"#,
            vec![ConfigFile {
                kind: "envVarsYaml".into(),
                config: env_vars_yaml(&[("C".to_string(), "yaml".to_string())].into()),
            }],
        );
        assert_eq!(
            app.env_vars_named(["B", "A", "C", "N", "missing", "L"]),
            [
                Some("two \"q\" & <".to_string()),
                Some("1".to_string()),
                Some("yaml".to_string()),
                None,
                None,
                None
            ]
        );
        assert_eq!(app.env_var("A").as_deref(), Some("1"));
        // Unreadable JSON keeps what came before the fault.
        let broken = App {
            env_vars: None,
            ..Default::default()
        };
        assert_eq!(broken.env_vars_named(["A"]), [None]);
        let mut found = [None, None];
        env_scan::string_fields(r#"{"A":"1","B":"#, &["A", "B"], &mut found);
        assert_eq!(found, [Some("1".to_string()), None]);
    }

    proptest::proptest! {
        #[test]
        fn env_vars_named_agrees_with_a_full_parse(
            map in proptest::collection::btree_map("[A-Z_]{1,6}", ".*", 0..8),
            a in "[A-Z_]{1,6}",
            b in "[A-Z_]{1,6}",
        ) {
            let raw = serde_json::to_string(&map).unwrap();
            let app = app_with_env(&raw, vec![]);
            let got = app.env_vars_named([a.as_str(), b.as_str()]);
            proptest::prop_assert_eq!(got, [map.get(&a).cloned(), map.get(&b).cloned()]);
        }
    }

    #[test]
    fn reads_both_appinst_shapes() {
        let gen2: AppInst = serde_json::from_str(
            r#"{"key":{"name":"r","organization":"o","cloudlet_key":{"organization":"TDG","name":"c"}},"state":"Ready"}"#,
        )
        .unwrap();
        assert_eq!(gen2.cloudlet().map(|c| c.name.as_str()), Some("c"));
        let gen3: AppInst = serde_json::from_str(
            r#"{"key":{"name":"r","organization":"o"},"zone_key":{"organization":"TDG","name":"z"},"cloudlet_key":{"organization":"TDG","name":"c3"},"mapped_ports":null,"state":"Creating"}"#,
        )
        .unwrap();
        assert_eq!(gen3.cloudlet().map(|c| c.name.as_str()), Some("c3"));
        assert_eq!(gen3.state, crate::AppInstState::Creating);
    }

    proptest::proptest! {
        #[test]
        fn the_env_scan_agrees_with_a_full_parse(
            map in proptest::collection::btree_map("[A-Z_]{1,8}", ".*", 0..8),
            key in "[A-Z_]{1,8}",
        ) {
            let raw = serde_json::to_string(&map).unwrap();
            let mut found = [None];
            env_scan::string_fields(&raw, &[key.as_str()], &mut found);
            proptest::prop_assert_eq!(found[0].clone(), map.get(&key).cloned());
        }
    }
}
