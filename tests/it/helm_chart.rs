//! The Helm chart (deploy/helm/garm-provider-edge-connect), proven by Helm itself: Helm 4's own
//! engine (through the pass-through shim tests/it/helm_engine.py) lints and renders it as `helm
//! install garm CHART -n garm` would, for the default values and every example; each rendered
//! object is checked against the Kubernetes schema of its kind, this build's provider loads and
//! validates the rendered provider config, and the values schema and the templates refuse what
//! cannot work (docs/packaging.md, "The Helm chart in CI"). deploy_manifests.rs holds the
//! rendered pod's paths, volumes and modes to what GARM and the provider expect.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};

/// The Kubernetes version whose schemas the objects are checked against: the newest that
/// kubernetes-validate ships a schema for, at least this one.
const KUBE_VERSION: &str = "1.33.0";
/// Paths GARM's `[[provider]]` names and the pod mounts (config/garm-provider.snippet.toml).
const PROVIDER_PATH: &str = "/opt/garm/providers.d/garm-provider-edge-connect";
const PROVIDER_CONFIG_PATH: &str = "/etc/garm/edge-connect-provider-config.toml";
const CREDENTIALS_PATH: &str = "/etc/garm-creds/credentials.toml";
const EVENTS_ENV: &str = "EDP_EDGE_CONNECT_METRICS_EVENTS_FILE";
const METRICS_PORT: u64 = 9464;
/// The ConfigMap that holds the provider's config, for a release named garm.
pub const PROVIDER_CONFIG_MAP: &str = "garm-edge-connect-provider-config";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn chart_dir() -> PathBuf {
    root().join("deploy/helm/garm-provider-edge-connect")
}

/// Answers of Helm's engine to `requests`, in order (the ops are in tests/it/helm_engine.py).
pub fn engine(requests: &[Value]) -> Vec<Value> {
    let mut python_path = root().join("target/ci-tools/helm-py").into_os_string();
    if let Some(existing) = std::env::var_os("PYTHONPATH") {
        python_path.push(":");
        python_path.push(existing);
    }
    let mut child = Command::new("python3")
        .arg(root().join("tests/it/helm_engine.py"))
        .env("PYTHONPATH", python_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs tests/it/helm_engine.py");
    let input = serde_json::to_vec(requests).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "Helm's engine failed ({}); install it with: bash .ci/helm-tools.sh\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the engine answers JSON")
}

/// The objects `helm install` makes with `values`, or Helm's refusal (schema or template).
pub fn render_each(values: &[Value]) -> Vec<Result<Vec<Value>, String>> {
    let requests: Vec<Value> = values
        .iter()
        .map(|v| json!({"op": "render", "values": v}))
        .collect();
    engine(&requests)
        .into_iter()
        .map(|answer| match answer.get("manifests") {
            Some(manifests) => Ok(objects(manifests)),
            None => Err(format!(
                "{}: {}",
                answer["type"].as_str().unwrap_or_default(),
                answer["error"].as_str().unwrap_or_default()
            )),
        })
        .collect()
}

pub fn render(values: &Value) -> Result<Vec<Value>, String> {
    render_each(std::slice::from_ref(values)).remove(0)
}

/// Every YAML document of the rendered templates, parsed as Kubernetes will parse them. A text
/// that is not YAML panics: a value broke what it was written into.
fn objects(manifests: &Value) -> Vec<Value> {
    let mut found = Vec::new();
    for (template, text) in manifests.as_object().unwrap() {
        if template.ends_with("NOTES.txt") {
            continue;
        }
        let text = text.as_str().unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(text) {
            let doc = Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{template} is not YAML: {e}\n{text}"));
            if !doc.is_null() {
                found.push(doc);
            }
        }
    }
    found
}

/// `values` with `overlay` merged in, key by key (as Helm merges a second values file).
pub fn merged(values: &Value, overlay: &Value) -> Value {
    match (values, overlay) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = a.clone();
            for (k, v) in b {
                let merged_value = match a.get(k) {
                    Some(old) => merged(old, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged_value);
            }
            Value::Object(out)
        }
        _ => overlay.clone(),
    }
}

/// The least a user sets: the secrets the chart has no default for.
pub fn installable() -> Value {
    json!({
        "garm": {
            "jwtSecret": "a-long-random-jwt-signing-secret-0123456789",
            "dbPassphrase": "0123456789abcdef0123456789abcdef",
        },
        "credentials": {"username": "ci-bot@example.com", "password": "a-strong-password"},
    })
}

/// The chart's examples, by file name, as `-f` reads them.
fn examples() -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(chart_dir().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let values: Value = serde_yaml_ng::from_str(&text).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        out.insert(format!("examples/{name}"), values);
    }
    out
}

pub fn find<'a>(objs: &'a [Value], kind: &str, name: Option<&str>) -> Option<&'a Value> {
    objs.iter().find(|o| {
        o["kind"] == kind && name.is_none_or(|n| o["metadata"]["name"].as_str() == Some(n))
    })
}

/// The text under `key` of a ConfigMap or Secret (`data` base64-decoded for a Secret).
pub fn key_text(object: &Value, key: &str) -> Option<String> {
    if let Some(text) = object["stringData"][key].as_str() {
        return Some(text.to_string());
    }
    let data = object["data"][key].as_str()?;
    if object["kind"] == "Secret" {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?;
        String::from_utf8(bytes).ok()
    } else {
        Some(data.to_string())
    }
}

// --- No value of any character breaks or extends what it is written into -------------------------

/// Every C0 control, DEL, every C1 control (NEL, U+0085, among them), the Unicode line and
/// paragraph separators, the byte order mark, and what YAML, TOML and shells give a meaning:
/// quotes, backslashes, comment and flow characters, a new line that starts a key.
fn hostile() -> String {
    let mut s: String = (0u32..0x20)
        .chain(0x7f..0xa0)
        .filter_map(char::from_u32)
        .collect();
    s.push_str(
        "\u{2028}\u{2029}\u{feff}\"'\\\\\" #{{}}[]&*!|>%@`,?\n injected: key\r\n\u{85}nel: key",
    );
    s
}

/// Where `value` holds string leaves: JSON pointers to each.
fn string_leaves(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::String(_) => out.push(at),
        Value::Object(map) => {
            for (k, v) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                string_leaves(v, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                string_leaves(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Every string the rendered objects hold: YAML scalars, and inside each ConfigMap or Secret
/// file the strings of its TOML (a file that is not TOML panics).
fn strings_of(objs: &[Value]) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Object(m) => m.values().for_each(|v| walk(v, out)),
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for o in objs {
        walk(o, &mut out);
        for file in files(o) {
            if let Some(toml) = toml_file(o, &file) {
                walk(&toml, &mut out);
            }
        }
    }
    out
}

/// The file names of a ConfigMap's or Secret's data and stringData.
fn files(o: &Value) -> Vec<String> {
    ["data", "stringData"]
        .iter()
        .filter_map(|k| o[*k].as_object())
        .flat_map(|m| m.keys().cloned())
        .collect()
}

/// A `.toml` file of a ConfigMap or Secret, parsed; it panics when the file is not TOML.
fn toml_file(o: &Value, file: &str) -> Option<Value> {
    if !file.ends_with(".toml") {
        return None;
    }
    let text = key_text(o, file)?;
    let table: toml::Table = toml::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{} {}: {file} is not TOML: {e}\n{text:?}",
            o["kind"], o["metadata"]["name"]
        )
    });
    Some(serde_json::to_value(table).unwrap())
}

/// The objects with every string emptied and every TOML file parsed: what a value may change.
fn shape(objs: &[Value]) -> Value {
    fn blank(v: &Value) -> Value {
        match v {
            Value::String(_) => Value::String(String::new()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), blank(v))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(blank).collect()),
            other => other.clone(),
        }
    }
    Value::Array(
        objs.iter()
            .map(|o| {
                let tomls: serde_json::Map<String, Value> = files(o)
                    .into_iter()
                    .filter_map(|f| Some((f.clone(), blank(&toml_file(o, &f)?))))
                    .collect();
                json!([blank(o), tomls])
            })
            .collect(),
    )
}

/// Everything the chart can render at once: each optional object, every key of the provider's
/// config, the environment, annotations and labels a user adds.
fn everything() -> Value {
    let every_key = &examples()["examples/cloudlet-every-key.yaml"];
    let overlay = json!({
        "metrics": {"enabled": true,
            "serviceMonitor": {"enabled": true, "labels": {"release": "prom"}, "interval": "60s"},
            "dashboard": {"enabled": true, "annotations": {"grafana_folder": "GARM"}}},
        "ingress": {"enabled": true, "className": "nginx", "annotations": {"a.example/b": "c"},
            "tls": {"enabled": true, "secretName": "tls"}},
        "init": {"enabled": true, "existingSecret": "garm-init", "url": "https://garm.example.com",
            "endpoint": {"description": "Our Forgejo"}},
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"}],
        "podAnnotations": {"example.com/team": "ci"},
        "networkPolicy": {"enabled": true},
    });
    let defaults: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap())
            .unwrap();
    merged(
        &merged(&merged(&defaults, &installable()), every_key),
        &overlay,
    )
}

#[test]
#[ignore = "needs helm-python-sdk and kubernetes-validate (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn no_value_of_any_character_breaks_or_extends_what_the_chart_renders() {
    let base = everything();
    let mut leaves = Vec::new();
    string_leaves(&base, String::new(), &mut leaves);
    let hostile = hostile();
    // For each string value: a benign edit, then hostile ones (the value with every character
    // appended, and alone; GARM's passphrase is exactly 32 characters, so 32 at a time).
    let mut cases = Vec::new();
    for leaf in &leaves {
        let old = base.pointer(leaf).unwrap().as_str().unwrap().to_string();
        let mut variants = vec![
            format!("{old}x"),
            format!("{old}{hostile}"),
            hostile.clone(),
        ];
        if leaf == "/garm/dbPassphrase" {
            let chars: Vec<char> = hostile.chars().collect();
            variants = vec!["x".repeat(32)];
            variants.extend(
                chars
                    .chunks(32)
                    .filter(|c| c.len() == 32)
                    .map(String::from_iter),
            );
        }
        for (i, v) in variants.into_iter().enumerate() {
            let mut values = base.clone();
            *values.pointer_mut(leaf).unwrap() = Value::String(v.clone());
            cases.push((leaf.clone(), v, i == 0, values));
        }
    }
    let values: Vec<Value> = cases.iter().map(|(_, _, _, v)| v.clone()).collect();
    let rendered = render_each(&values);
    let mut carried = BTreeMap::<&str, usize>::new();
    let mut benign_shape = None;
    let mut benign_used = false;
    for ((leaf, value, benign, _), result) in cases.iter().zip(&rendered) {
        let objs = match result {
            Ok(objs) => objs,
            Err(err) => {
                // A refusal is fine when it is the schema's or a template's own (`fail`, `required`).
                assert!(
                    err.starts_with("HelmValuesError: ") || err.contains("execution error at"),
                    "{leaf} = {value:?}: the chart broke instead of refusing: {err}"
                );
                if *benign {
                    benign_shape = None;
                }
                continue;
            }
        };
        let found = strings_of(objs).iter().any(|s| s.contains(value.as_str()));
        let this_shape = shape(objs);
        if *benign {
            // A value these values do not use (installerResources with delivery image) is
            // not looked for.
            benign_used = found;
            benign_shape = Some(this_shape);
        } else {
            assert!(
                found || !benign_used,
                "{leaf} = {value:?} rendered, but no rendered string holds that value (it was changed or split)"
            );
            assert_eq!(
                Some(&this_shape),
                benign_shape.as_ref(),
                "{leaf} = {value:?} changed the rendered objects' keys"
            );
            *carried.entry(leaf.as_str()).or_default() += 1;
        }
    }
    // What reaches TOML, YAML and Secrets must carry any character, not be refused.
    for leaf in [
        "/credentials/username",
        "/credentials/password",
        "/garm/jwtSecret",
        "/garm/dbPassphrase",
        "/provider/description",
        "/provider/config/edge_connect/organization",
        "/provider/config/edge_connect/command",
        "/provider/config/edge_connect/command_args/0",
        "/provider/config/edge_connect/cloudlet/name",
        "/extraEnv/0/value",
        "/podAnnotations/example.com~1team",
        "/ingress/annotations/a.example~1b",
        "/metrics/dashboard/annotations/grafana_folder",
        "/init/endpoint/description",
    ] {
        assert!(
            carried.contains_key(leaf),
            "{leaf} never carried a hostile value: {carried:?}"
        );
    }
}
