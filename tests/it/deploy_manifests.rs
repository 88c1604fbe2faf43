//! The Helm chart's objects hold together, as Helm's own engine renders them for the stock GARM
//! image with the provider copied in (examples/installer.yaml) and for the project's `garm`
//! image (the defaults): each path that GARM's `[[provider]]` block and the provider config name
//! is backed by a volume of the right kind at that path, the init container writes the binary
//! where GARM runs it from, the credentials file's mode passes the provider's own permission
//! check, and the provider accepts the ConfigMap's config. No cluster, no network.
//!
//! The consistency rules live in one function, `problems`, which returns every mismatch; the
//! tests at the bottom break one manifest each and expect its rule to fire, so a rule that can
//! never fail shows up as a failing test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

use base64::Engine;
use garm_provider_edge_connect::config::Config;
use serde::Deserialize;
use serde_yaml_ng::Value;

/// The stock GARM image's entrypoint reads this file (`garm --config /etc/garm/config.toml`).
const GARM_CONFIG_PATH: &str = "/etc/garm/config.toml";
/// The name the provider has in GARM's config and in config/garm-provider.snippet.toml.
const PROVIDER_NAME: &str = "edge_connect";

/// Every YAML document of every file in the directory, by file name.
#[derive(Clone)]
struct Manifests {
    files: BTreeMap<String, Vec<Value>>,
}

impl Manifests {
    /// What `helm install garm CHART -n garm` renders with the least a user sets, `example`
    /// (a file of the chart's examples/, or none for the defaults) and `overlay`, by template.
    fn load_with(example: Option<&str>, overlay: serde_json::Value) -> Manifests {
        let mut values = crate::helm_chart::installable();
        if let Some(example) = example {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("deploy/helm/garm-provider-edge-connect/examples")
                .join(example);
            let text = std::fs::read_to_string(path).unwrap();
            values = crate::helm_chart::merged(&values, &serde_yaml_ng::from_str(&text).unwrap());
        }
        let values = crate::helm_chart::merged(&values, &overlay);
        let answer =
            crate::helm_chart::engine(&[serde_json::json!({"op": "render", "values": values})])
                .remove(0);
        let manifests = answer["manifests"]
            .as_object()
            .unwrap_or_else(|| panic!("the chart does not render: {answer}"));
        let mut files = BTreeMap::new();
        for (name, text) in manifests {
            if name.ends_with("NOTES.txt") {
                continue;
            }
            let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(text.as_str().unwrap())
                .map(|doc| {
                    Value::deserialize(doc).unwrap_or_else(|e| panic!("{name}: not YAML: {e}"))
                })
                .filter(|doc| !doc.is_null())
                .collect();
            files.insert(name.clone(), docs);
        }
        Manifests { files }
    }

    /// The stock GARM image with the provider copied in by the init container.
    fn load() -> Manifests {
        Manifests::load_with(Some("installer.yaml"), serde_json::json!({}))
    }

    fn objects(&self) -> impl Iterator<Item = &Value> {
        self.files.values().flat_map(|docs| docs.iter())
    }

    fn find(&self, kind: &str, name: &str) -> Option<&Value> {
        self.objects().find(|o| {
            str_at(o, &["kind"]) == Some(kind) && str_at(o, &["metadata", "name"]) == Some(name)
        })
    }

    fn find_mut(&mut self, kind: &str, name: &str) -> &mut Value {
        self.files
            .values_mut()
            .flat_map(|docs| docs.iter_mut())
            .find(|o| {
                str_at(o, &["kind"]) == Some(kind) && str_at(o, &["metadata", "name"]) == Some(name)
            })
            .unwrap_or_else(|| panic!("no {kind} {name}"))
    }

    /// The only Deployment: GARM's.
    fn deployment(&self) -> Option<&Value> {
        self.objects()
            .find(|o| str_at(o, &["kind"]) == Some("Deployment"))
    }

    fn deployment_mut(&mut self) -> &mut Value {
        let name = str_at(
            self.deployment().expect("a Deployment"),
            &["metadata", "name"],
        )
        .unwrap()
        .to_string();
        self.find_mut("Deployment", &name)
    }

    /// The text under `key` of a ConfigMap or Secret (`data` base64-decoded for a Secret).
    fn key_text(&self, kind: &str, name: &str, key: &str) -> Option<String> {
        let object = self.find(kind, name)?;
        if let Some(text) = str_at(object, &["stringData", key]) {
            return Some(text.to_string());
        }
        let data = str_at(object, &["data", key])?;
        if kind == "Secret" {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .ok()?;
            String::from_utf8(bytes).ok()
        } else {
            Some(data.to_string())
        }
    }
}

fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(*key))
}

fn at_mut<'a>(value: &'a mut Value, path: &[&str]) -> &'a mut Value {
    path.iter().fold(value, |v, key| {
        v.get_mut(*key)
            .unwrap_or_else(|| panic!("no `{key}` on the way to {path:?}"))
    })
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

fn seq_at<'a>(value: &'a Value, path: &[&str]) -> &'a [Value] {
    at(value, path)
        .and_then(Value::as_sequence)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A container's view of one volume.
#[derive(Debug)]
struct Mount<'a> {
    volume: &'a str,
    mount_path: &'a str,
    sub_path: &'a str,
    read_only: bool,
}

fn mounts(container: &Value) -> Vec<Mount<'_>> {
    seq_at(container, &["volumeMounts"])
        .iter()
        .map(|m| Mount {
            volume: str_at(m, &["name"]).unwrap_or_default(),
            mount_path: str_at(m, &["mountPath"]).unwrap_or_default(),
            sub_path: str_at(m, &["subPath"]).unwrap_or_default(),
            read_only: at(m, &["readOnly"])
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
        .collect()
}

/// Where `path` lands for a container: the mount that covers it (the deepest, as in the kernel)
/// and the path relative to the volume's root.
fn resolve<'a>(mounts: &'a [Mount<'a>], path: &str) -> Option<(&'a Mount<'a>, String)> {
    mounts
        .iter()
        .filter_map(|m| {
            let rest = Path::new(path).strip_prefix(m.mount_path).ok()?;
            let inner = Path::new(m.sub_path).join(rest);
            Some((m, inner.to_string_lossy().trim_end_matches('/').to_string()))
        })
        .max_by_key(|(m, _)| Path::new(m.mount_path).components().count())
}

/// A file a volume shows: which object and key backs it, and the mode it gets.
#[derive(Debug, PartialEq)]
struct Backing {
    kind: &'static str,
    name: String,
    key: String,
    mode: Option<u64>,
}

/// What a ConfigMap, Secret or projected volume shows at `inner` (its path in the volume).
fn backing(volume: &Value, inner: &str) -> Option<Backing> {
    let from_source =
        |source: &Value, kind: &'static str, name_key: &str, default_mode: Option<u64>| {
            let name = str_at(source, &[name_key])?.to_string();
            let items = seq_at(source, &["items"]);
            let mode = at(source, &["defaultMode"])
                .and_then(Value::as_u64)
                .or(default_mode);
            if items.is_empty() {
                return Some(Backing {
                    kind,
                    name,
                    key: inner.to_string(),
                    mode,
                });
            }
            let item = items.iter().find(|i| str_at(i, &["path"]) == Some(inner))?;
            Some(Backing {
                kind,
                name,
                key: str_at(item, &["key"])?.to_string(),
                mode: at(item, &["mode"]).and_then(Value::as_u64).or(mode),
            })
        };
    if let Some(secret) = at(volume, &["secret"]) {
        return from_source(secret, "Secret", "secretName", None);
    }
    if let Some(config_map) = at(volume, &["configMap"]) {
        return from_source(config_map, "ConfigMap", "name", None);
    }
    let projected = at(volume, &["projected"])?;
    let default_mode = at(projected, &["defaultMode"]).and_then(Value::as_u64);
    seq_at(projected, &["sources"]).iter().find_map(|source| {
        if let Some(secret) = at(source, &["secret"]) {
            from_source(secret, "Secret", "name", default_mode)
        } else if let Some(config_map) = at(source, &["configMap"]) {
            from_source(config_map, "ConfigMap", "name", default_mode)
        } else {
            None
        }
    })
}

/// GARM's `[[provider]]` entry for this provider, from GARM's config file.
#[derive(Debug, Deserialize)]
struct GarmConfig {
    #[serde(default)]
    provider: Vec<GarmProvider>,
    database: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
struct GarmProvider {
    name: String,
    provider_type: String,
    external: Option<GarmExternal>,
}

#[derive(Debug, Deserialize, PartialEq)]
struct GarmExternal {
    provider_executable: String,
    config_file: String,
    #[serde(default)]
    interface_version: String,
    #[serde(default)]
    environment_variables: Vec<String>,
}

/// Every inconsistency between the manifests, as one sentence each. Empty when they agree.
fn problems(m: &Manifests) -> Vec<String> {
    let mut out = Vec::new();
    macro_rules! fail {
        ($($arg:tt)*) => {{ out.push(format!($($arg)*)); }};
    }

    for object in m.objects() {
        if str_at(object, &["apiVersion"]).is_none()
            || str_at(object, &["kind"]).is_none()
            || str_at(object, &["metadata", "name"]).is_none()
        {
            fail!("an object without apiVersion, kind or metadata.name: {object:?}");
        }
    }

    // --- the pod ---------------------------------------------------------------------------
    let Some(deployment) = m.deployment() else {
        fail!("no Deployment");
        return out;
    };
    let pod = at(deployment, &["spec", "template", "spec"])
        .cloned()
        .unwrap_or_default();
    let volumes: BTreeMap<&str, &Value> = seq_at(&pod, &["volumes"])
        .iter()
        .filter_map(|v| Some((str_at(v, &["name"])?, v)))
        .collect();
    let containers = seq_at(&pod, &["containers"]);
    let Some(garm) = containers
        .iter()
        .find(|c| str_at(c, &["name"]) == Some("garm"))
    else {
        fail!("no container named garm");
        return out;
    };
    // GARM's stock image has no provider: with it, the init container must put one there.
    let stock_image =
        str_at(garm, &["image"]).is_some_and(|i| i.starts_with("ghcr.io/cloudbase/garm"));
    let garm_mounts = mounts(garm);
    for mount in &garm_mounts {
        if !volumes.contains_key(mount.volume) {
            fail!(
                "the GARM container mounts volume {}, which the pod does not have",
                mount.volume
            );
        }
    }
    if at(garm, &["securityContext", "readOnlyRootFilesystem"]).and_then(Value::as_bool)
        != Some(true)
    {
        fail!("the GARM container's root filesystem is not read-only, so a path that is not a volume would go unnoticed");
    }
    let volume_kind = |name: &str| -> &str {
        volumes
            .get(name)
            .and_then(|v| v.as_mapping())
            .and_then(|map| map.keys().filter_map(Value::as_str).find(|k| *k != "name"))
            .unwrap_or("none")
    };
    // A file the GARM container reads from a ConfigMap or Secret: its backing, or a problem.
    let read_file = |out: &mut Vec<String>, what: &str, path: &str| -> Option<Backing> {
        let Some((mount, inner)) = resolve(&garm_mounts, path) else {
            out.push(format!("{what} {path} is on no volume of the GARM container (its root is read-only and the image has no such file)"));
            return None;
        };
        let found = volumes.get(mount.volume).and_then(|v| backing(v, &inner));
        if found.is_none() {
            out.push(format!(
                "{what} {path}: volume {} shows no file {inner}",
                mount.volume
            ));
        }
        found
    };
    // A directory the provider writes to: a writable emptyDir or claim at or above it.
    let writable_dir = |out: &mut Vec<String>, what: &str, dir: &Path| -> Option<String> {
        let dir = dir.to_string_lossy();
        let Some((mount, inner)) = resolve(&garm_mounts, &dir) else {
            out.push(format!("{what} {dir} is on no volume of the GARM container: the read-only root refuses the write"));
            return None;
        };
        let kind = volume_kind(mount.volume);
        if mount.read_only || !matches!(kind, "emptyDir" | "persistentVolumeClaim") {
            out.push(format!(
                "{what} {dir} is on volume {} ({kind}, readOnly {}), which is not writable",
                mount.volume, mount.read_only
            ));
            return None;
        }
        Some(inner)
    };

    // --- GARM's config and its [[provider]] block --------------------------------------------
    let Some(garm_config_file) = read_file(&mut out, "GARM's config", GARM_CONFIG_PATH) else {
        return out;
    };
    let Some(garm_text) = m.key_text(
        garm_config_file.kind,
        &garm_config_file.name,
        &garm_config_file.key,
    ) else {
        fail!(
            "GARM's config: {} {} has no key {}",
            garm_config_file.kind,
            garm_config_file.name,
            garm_config_file.key
        );
        return out;
    };
    let garm_config: GarmConfig = match toml::from_str(&garm_text) {
        Ok(c) => c,
        Err(e) => {
            fail!("GARM's config is not valid TOML: {e}");
            return out;
        }
    };
    let Some(external) = garm_config
        .provider
        .iter()
        .find(|p| p.name == PROVIDER_NAME && p.provider_type == "external")
        .and_then(|p| p.external.as_ref())
    else {
        fail!("GARM's config has no external [[provider]] named {PROVIDER_NAME}");
        return out;
    };
    if external.interface_version != "v0.1.0" {
        fail!(
            "interface_version is `{}`: GARM's v0.1.1 ListInstances always fails, use v0.1.0",
            external.interface_version
        );
    }
    if !external
        .environment_variables
        .iter()
        .any(|v| v == "EDP_EDGE_CONNECT_")
    {
        fail!("environment_variables lacks EDP_EDGE_CONNECT_, so credentials from the environment never reach the provider");
    }
    // The example snippet for other deployments names the same paths, so one set of docs fits both.
    let snippet = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config/garm-provider.snippet.toml"),
    )
    .unwrap();
    match toml::from_str::<GarmConfig>(&snippet) {
        Ok(s) => match s.provider.iter().find(|p| p.name == PROVIDER_NAME).and_then(|p| p.external.as_ref()) {
            Some(snippet_external) if snippet_external == external => {}
            other => fail!("the [[provider]] block differs from config/garm-provider.snippet.toml: {other:?} vs {external:?}"),
        },
        Err(e) => fail!("config/garm-provider.snippet.toml is not valid TOML: {e}"),
    }
    if let Some(db_file) = garm_config
        .database
        .as_ref()
        .and_then(|d| d.get("sqlite3"))
        .and_then(|s| s.get("db_file"))
        .and_then(toml::Value::as_str)
    {
        if let Some((mount, _)) = resolve(&garm_mounts, db_file) {
            if volume_kind(mount.volume) != "persistentVolumeClaim" {
                fail!("GARM's database {db_file} is on volume {} ({}), which does not outlive the pod", mount.volume, volume_kind(mount.volume));
            }
        }
        let parent = Path::new(db_file).parent().unwrap_or(Path::new("/"));
        writable_dir(&mut out, "GARM's database directory", parent);
    }

    // --- provider_executable: written by the init container, read by GARM -------------------
    let executable = &external.provider_executable;
    match resolve(&garm_mounts, executable) {
        None if stock_image => fail!(
            "provider_executable {executable} is on no volume: the stock image does not contain it"
        ),
        // The project's garm image holds it at that path.
        None => {}
        Some((garm_mount, inner)) => {
            if volume_kind(garm_mount.volume) != "emptyDir" {
                fail!("provider_executable {executable} is on volume {}, not on the emptyDir the init container fills", garm_mount.volume);
            }
            let writers: Vec<&Value> = seq_at(&pod, &["initContainers"])
                .iter()
                .filter(|init| mounts(init).iter().any(|mt| mt.volume == garm_mount.volume))
                .collect();
            if writers.is_empty() {
                fail!(
                    "no init container mounts volume {}, so nothing puts the provider there",
                    garm_mount.volume
                );
            }
            for init in writers {
                let name = str_at(init, &["name"]).unwrap_or("?");
                let init_mounts = mounts(init);
                let destination = seq_at(init, &["args"])
                    .last()
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match resolve(&init_mounts, destination) {
                    Some((mt, written)) if mt.volume == garm_mount.volume && written == inner && !mt.read_only => {}
                    other => fail!("init container {name} copies to `{destination}` ({other:?}), but GARM runs {executable} = {} in volume {}", inner, garm_mount.volume),
                }
                let image = str_at(init, &["image"]).unwrap_or("");
                if image
                    .rsplit_once(':')
                    .is_none_or(|(_, tag)| tag.is_empty() || tag.contains('/'))
                {
                    fail!("init container {name}'s image {image} has no tag");
                }
            }
        }
    }

    // --- config_file: the ConfigMap, accepted by the provider -----------------------------------
    let Some(config_backing) = read_file(&mut out, "config_file", &external.config_file) else {
        return out;
    };
    let Some(config_text) = m.key_text(
        config_backing.kind,
        &config_backing.name,
        &config_backing.key,
    ) else {
        fail!(
            "config_file: {} {} has no key {}",
            config_backing.kind,
            config_backing.name,
            config_backing.key
        );
        return out;
    };
    let scratch = tempfile::tempdir().unwrap();
    let config_path = scratch.path().join("edge-connect-provider-config.toml");
    std::fs::write(&config_path, &config_text).unwrap();
    let config = match Config::load(&config_path) {
        Ok(c) => c,
        Err(e) => {
            fail!("the provider refuses the ConfigMap's config: {e}");
            return out;
        }
    };

    // --- credentials_file: a Secret the provider's permission check accepts ---------------------
    // The rule is src/config.rs's: no bit for group or others, unless
    // allow_insecure_credentials_file. fsGroup adds group read to every Secret file (the kubelet
    // ORs 0440 into read-only volumes), so with fsGroup only the allow flag passes.
    match &config.credentials_file {
        None => {
            if !containers
                .iter()
                .any(|c| !seq_at(c, &["envFrom"]).is_empty() || !seq_at(c, &["env"]).is_empty())
            {
                fail!("no credentials_file and no environment for the credentials");
            }
        }
        Some(path) => {
            if let Some(creds) = read_file(&mut out, "credentials_file", &path.to_string_lossy()) {
                if creds.kind != "Secret" {
                    fail!(
                        "credentials_file comes from a {} ({}), not a Secret",
                        creds.kind,
                        creds.name
                    );
                }
                let mode = creds.mode.unwrap_or(0o644);
                let fs_group = at(&pod, &["securityContext", "fsGroup"]).is_some();
                let effective = if fs_group { mode | 0o440 } else { mode };
                if effective & 0o077 != 0 && !config.allow_insecure_credentials_file {
                    fail!(
                        "credentials_file {} gets mode {effective:o} (defaultMode {mode:o}{}); the provider refuses a file group or others can read",
                        path.display(),
                        if fs_group { ", plus group read from fsGroup" } else { "" }
                    );
                }
                match m.key_text(creds.kind, &creds.name, &creds.key).map(|t| toml::from_str::<toml::Table>(&t)) {
                    Some(Ok(table)) if table.get("username").and_then(toml::Value::as_str).is_some()
                        && table.get("password").and_then(toml::Value::as_str).is_some() => {}
                    other => fail!("credentials_file: {} {} key {} is not TOML with username and password ({other:?})", creds.kind, creds.name, creds.key),
                }
            }
        }
    }

    // --- the provider's own files: log and token cache -----------------------------------------
    match &config.log_file {
        None => fail!("no log_file: warnings would reach only GARM's error messages"),
        Some(log_file) => {
            let parent = log_file.parent().unwrap_or(Path::new("/"));
            writable_dir(&mut out, "log_file's directory", parent);
        }
    }
    if config.token_cache {
        match &config.token_cache_dir {
            None => fail!("token_cache_dir is not set: the default lies in /tmp, whose volume is shared with GARM's own files"),
            Some(dir) => {
                if let Some(inner) = writable_dir(&mut out, "token_cache_dir", dir) {
                    // The provider insists on a 0700 directory of its own; a volume's root is not one.
                    let below_root = Path::new(&inner)
                        .components()
                        .any(|c| matches!(c, Component::Normal(_)));
                    if !below_root {
                        fail!("token_cache_dir {} is a volume's root (mode 0777 for an emptyDir), which the provider refuses: use a subdirectory", dir.display());
                    }
                }
            }
        }
    }
    out
}

#[test]
#[ignore = "needs helm-python-sdk and kubernetes-validate (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_charts_deployment_is_consistent() {
    for (label, m) in [
        ("examples/installer.yaml", Manifests::load()),
        (
            "the default values",
            Manifests::load_with(None, serde_json::json!({})),
        ),
        (
            "credentials from the environment and an fsGroup",
            Manifests::load_with(
                None,
                serde_json::json!({"credentials": {"source": "environment"}, "podSecurityContext": {"fsGroup": 1000}}),
            ),
        ),
    ] {
        let found = problems(&m);
        assert!(
            found.is_empty(),
            "the chart with {label} disagrees with itself:\n- {}",
            found.join("\n- ")
        );
        let kinds: BTreeSet<&str> = m.objects().filter_map(|o| str_at(o, &["kind"])).collect();
        for kind in [
            "Deployment",
            "ConfigMap",
            "Secret",
            "PersistentVolumeClaim",
            "Service",
        ] {
            assert!(kinds.contains(kind), "{label}: no {kind} among {kinds:?}");
        }
    }
}

// Each test below breaks the manifests in one way and expects `problems` to say so.

fn problems_after(change: impl FnOnce(&mut Manifests)) -> String {
    let mut m = Manifests::load();
    change(&mut m);
    problems(&m).join("\n")
}

fn garm_container(m: &mut Manifests) -> &mut Value {
    let containers = at_mut(
        m.deployment_mut(),
        &["spec", "template", "spec", "containers"],
    );
    containers
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .find(|c| str_at(c, &["name"]) == Some("garm"))
        .expect("a container named garm")
}

fn set_mount_path(m: &mut Manifests, volume: &str, path: &str) {
    let mounts = at_mut(garm_container(m), &["volumeMounts"]);
    let mount = mounts
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .find(|v| str_at(v, &["name"]) == Some(volume))
        .unwrap_or_else(|| panic!("no mount of {volume}"));
    mount["mountPath"] = Value::from(path);
}

fn edit_provider_config(m: &mut Manifests, from: &str, to: &str) {
    let config_map = m.find_mut("ConfigMap", "garm-edge-connect-provider-config");
    let data = at_mut(config_map, &["data"]).as_mapping_mut().unwrap();
    let (_, text) = data.iter_mut().next().unwrap();
    let edited = text.as_str().unwrap().replace(from, to);
    assert_ne!(
        text.as_str(),
        Some(edited.as_str()),
        "`{from}` is not in the provider config"
    );
    *text = Value::from(edited);
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn a_moved_credentials_mount_is_found() {
    let found = problems_after(|m| set_mount_path(m, "credentials", "/etc/creds"));
    assert!(
        found.contains("credentials_file /etc/garm-creds/credentials.toml is on no volume"),
        "{found}"
    );
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn fs_group_makes_the_credentials_file_unacceptable() {
    let found = problems_after(|m| {
        let pod = at_mut(
            m.deployment_mut(),
            &["spec", "template", "spec", "securityContext"],
        );
        pod["fsGroup"] = Value::from(65532);
    });
    assert!(found.contains("gets mode 440"), "{found}");
    assert!(found.contains("plus group read from fsGroup"), "{found}");
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn fs_group_is_accepted_with_allow_insecure_credentials_file() {
    let found = problems_after(|m| {
        let pod = at_mut(
            m.deployment_mut(),
            &["spec", "template", "spec", "securityContext"],
        );
        pod["fsGroup"] = Value::from(65532);
        edit_provider_config(
            m,
            "credentials_file = ",
            "allow_insecure_credentials_file = true\ncredentials_file = ",
        );
    });
    assert!(found.is_empty(), "{found}");
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn a_readable_default_mode_is_found() {
    let found = problems_after(|m| {
        let volumes = at_mut(m.deployment_mut(), &["spec", "template", "spec", "volumes"]);
        let credentials = volumes
            .as_sequence_mut()
            .unwrap()
            .iter_mut()
            .find(|v| str_at(v, &["name"]) == Some("credentials"))
            .unwrap();
        credentials["secret"]["defaultMode"] = Value::from(0o644);
    });
    assert!(found.contains("gets mode 644"), "{found}");
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn an_init_container_writing_elsewhere_is_found() {
    let found = problems_after(|m| {
        let inits = at_mut(
            m.deployment_mut(),
            &["spec", "template", "spec", "initContainers"],
        );
        inits[0]["args"] = Value::from(vec!["/providers/other-name"]);
    });
    assert!(
        found.contains("copies to `/providers/other-name`"),
        "{found}"
    );
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn a_token_cache_at_a_volume_root_is_found() {
    let found = problems_after(|m| {
        edit_provider_config(m, "/run/garm-edge-connect/tokens", "/run/garm-edge-connect")
    });
    assert!(found.contains("is a volume's root"), "{found}");
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn a_log_file_on_the_read_only_root_is_found() {
    let found = problems_after(|m| {
        edit_provider_config(
            m,
            "/var/log/garm-edge-connect/provider.log",
            "/var/log/provider.log",
        )
    });
    assert!(
        found.contains("log_file's directory /var/log is on no volume"),
        "{found}"
    );
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn a_config_the_provider_refuses_is_found() {
    let found = problems_after(|m| {
        edit_provider_config(
            m,
            "[edge_connect.zone]",
            "[edge_connect.cloudlet]\nname = \"x\"\norganization = \"y\"\n[edge_connect.zone]",
        )
    });
    assert!(
        found.contains("the provider refuses the ConfigMap's config"),
        "{found}"
    );
    assert!(found.contains("not both"), "{found}");
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn a_provider_block_that_differs_from_the_snippet_is_found() {
    let found = problems_after(|m| {
        let secret = m.find_mut("Secret", "garm-config");
        let text = at_mut(secret, &["data", "config.toml"]);
        let b64 = base64::engine::general_purpose::STANDARD;
        let toml = String::from_utf8(b64.decode(text.as_str().unwrap()).unwrap()).unwrap();
        let edited = toml.replace(
            "interface_version = \"v0.1.0\"",
            "interface_version = \"v0.1.1\"",
        );
        *text = Value::from(b64.encode(edited));
    });
    assert!(found.contains("use v0.1.0"), "{found}");
    assert!(
        found.contains("differs from config/garm-provider.snippet.toml"),
        "{found}"
    );
}
