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

/// The least a user sets: what the chart has no default for (secrets, the image, the URL).
pub fn installable() -> Value {
    json!({
        "image": {"repository": "registry.example.com/ci/garm-edge-connect"},
        "provider": {"config": {"edge_connect": {"url": "https://hub.example.invalid"}}},
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
        "ingress": {"enabled": true, "host": "garm.example.com", "className": "nginx",
            "annotations": {"a.example/b": "c"},
            "tls": {"enabled": true, "secretName": "tls"}},
        "init": {"enabled": true, "existingSecret": "garm-init", "url": "https://garm.example.com",
            "endpoint": {"description": "Our Forgejo", "baseUrl": "https://forgejo.example.com"}},
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"}],
        "podAnnotations": {"example.com/team": "ci"},
        "networkPolicy": {"enabled": true},
        "siteCache": {"enabled": true, "controllerId": CONTROLLER_ID, "flavor": "EU.medium",
            "registryImage": "registry.example.com/mirror/registry:3.0.0",
            "actionsCacheImage": "data.forgejo.org/forgejo/runner:13.0.0"},
        "credentials": {"siteCacheSecret": "a-long-random-site-cache-secret"},
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
    // Every value of the chart at once, with the provider from GARM's image and credentials in a
    // file; then from the installer, with credentials in the environment.
    let base = everything();
    hostile_values_render_exactly(&base);
    let other = json!({
        "provider": {"delivery": "installer",
            "installer": {"repository": "registry.example.com/ci/garm-provider-edge-connect-installer"}},
        "credentials": {"source": "environment"},
        "provider": {"environmentVariables": ["EDP_EDGE_CONNECT_", "EDP_SITE_CACHE_SECRET"]},
    });
    hostile_values_render_exactly(&merged(&base, &other));
}

/// Each string value of `base` set to hostile strings: refused by the schema or a template, or
/// rendered so that the YAML and the TOML in it hold exactly that value, with the same keys as
/// a plain value.
fn hostile_values_render_exactly(base: &Value) {
    let mut leaves = Vec::new();
    string_leaves(base, String::new(), &mut leaves);
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
        "/credentials/siteCacheSecret",
        "/siteCache/flavor",
        "/siteCache/registryImage",
        "/siteCache/actionsCacheImage",
        "/siteCache/up/schedule",
        "/siteCache/prune/schedule",
    ] {
        assert!(
            carried.contains_key(leaf),
            "{leaf} never carried a hostile value: {carried:?}"
        );
    }
}

// --- Lint, schema, render, the objects and the provider's verdict, for every example ----------------

/// The defaults (with the least a user sets) and each example on top of them, as `-f` gives it.
fn shapes() -> Vec<(String, Value)> {
    let mut out = vec![("default values".to_string(), installable())];
    for (name, values) in examples() {
        out.push((name, merged(&installable(), &values)));
    }
    let installer = merged(&installable(), &examples()["examples/installer.yaml"]);
    out.push((
        "examples/installer.yaml + metrics.enabled".to_string(),
        merged(&installer, &json!({"metrics": {"enabled": true}})),
    ));
    out
}

/// The provider's own loading and validation of a rendered config, offline: validate-extra-specs
/// with --config loads the config whenever the pool names a pull password variable.
fn provider_verdict(config_text: &str, pool: &Value) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("provider.toml");
    std::fs::write(&config_path, config_text).unwrap();
    std::fs::write(dir.path().join("pool.json"), pool.to_string()).unwrap();
    let out = Command::new(crate::support::BIN)
        .arg("--config")
        .arg(&config_path)
        .arg("validate-extra-specs")
        .arg(dir.path().join("pool.json"))
        .env_clear()
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn provider_config(objs: &[Value]) -> String {
    let cm = find(objs, "ConfigMap", Some(PROVIDER_CONFIG_MAP))
        .expect("the provider config's ConfigMap");
    key_text(cm, "edge-connect-provider-config.toml").unwrap()
}

fn pod(objs: &[Value]) -> &Value {
    &find(objs, "Deployment", None).expect("a Deployment")["spec"]["template"]["spec"]
}

fn container<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    pod["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)
}

fn garm_toml(objs: &[Value]) -> Option<toml::Table> {
    let secret = find(objs, "Secret", Some("garm-config"))?;
    Some(toml::from_str(&key_text(secret, "config.toml").unwrap()).unwrap())
}

#[test]
#[ignore = "needs helm-python-sdk and kubernetes-validate (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_chart_lints_and_renders_valid_objects_and_a_config_the_provider_accepts() {
    let shapes = shapes();
    let mut requests = Vec::new();
    for (_, values) in &shapes {
        requests.push(json!({"op": "schema", "values": values}));
        requests.push(json!({"op": "lint", "values": values}));
    }
    let answers = engine(&requests);
    let rendered = render_each(&shapes.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>());
    let mut kube = Vec::new();
    for (i, ((label, values), objs)) in shapes.iter().zip(&rendered).enumerate() {
        assert_eq!(
            answers[2 * i],
            json!({}),
            "{label}: values.schema.json refuses the values"
        );
        // helm lint checks the schema before it removes what a null removes (install removes
        // it first): an example that places by cloudlet with `zone: null` meets the schema's
        // "not both" under lint alone.
        let problems = answers[2 * i + 1]["problems"].to_string();
        let removes_zone = values["provider"]["config"]["edge_connect"]["zone"].is_null()
            && values["provider"]["config"]["edge_connect"]["cloudlet"].is_object();
        assert!(
            problems == "[]"
                || (removes_zone
                    && problems
                        .matches("- at '/provider/config/edge_connect/zone': got object, want null")
                        .count()
                        == 2
                    && !problems.contains("warning")),
            "{label}: helm lint --strict: {problems}"
        );
        let objs = objs
            .as_ref()
            .unwrap_or_else(|e| panic!("{label}: helm template: {e}"));
        assert!(!objs.is_empty(), "{label}: nothing rendered");
        for o in objs.iter().filter(|o| o["kind"] != "ServiceMonitor") {
            // A ServiceMonitor's CRD has no offline schema.
            kube.push((label.clone(), o.clone()));
        }

        let text = provider_config(objs);
        let config: toml::Table =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{label}: not TOML: {e}"));
        assert_eq!(
            config.get("credentials_file").and_then(|v| v.as_str()),
            Some(CREDENTIALS_PATH),
            "{label}: credentials_file is where the credentials Secret is mounted"
        );
        let prefix = config
            .get("image_pull_password_env_prefix")
            .and_then(|v| v.as_str())
            .unwrap_or("EDP_EDGE_CONNECT_REGISTRY_");
        let pool = json!({"image_pull_username": "robot", "image_pull_password_env": format!("{prefix}PASSWORD")});
        provider_verdict(&text, &pool)
            .unwrap_or_else(|e| panic!("{label}: the provider refuses the rendered config: {e}"));

        let pod = pod(objs);
        let credentials = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "credentials");
        assert_eq!(
            credentials.map(|v| &v["secret"]["defaultMode"]),
            Some(&json!(0o400)),
            "{label}: the credentials file is mounted with mode 0400"
        );
        assert!(
            pod["securityContext"].get("fsGroup").is_none(),
            "{label}: no fsGroup (the provider refuses group-readable credentials)"
        );
        assert_eq!(
            pod["automountServiceAccountToken"],
            json!(false),
            "{label}: no API token in GARM's pod"
        );
        let garm = container(pod, "garm").expect("GARM's container");
        let mounts: Vec<&str> = garm["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["mountPath"].as_str())
            .collect();
        assert!(
            mounts.contains(&"/etc/garm") && mounts.contains(&"/etc/garm-creds"),
            "{label}: {mounts:?}"
        );
        assert!(
            garm["livenessProbe"].is_object(),
            "{label}: GARM has a liveness probe"
        );
        let installer = values["provider"]["delivery"] == "installer";
        assert_eq!(
            mounts.contains(&PROVIDER_PATH),
            installer,
            "{label}: the provider is mounted at {PROVIDER_PATH} exactly with delivery installer"
        );
        assert_eq!(
            pod["initContainers"].is_array(),
            installer,
            "{label}: an init container exactly with delivery installer"
        );

        // A Job's pod is no GARM: the Service does not select it.
        let service = find(objs, "Service", Some("garm")).expect("GARM's Service");
        for job in objs.iter().filter(|o| o["kind"] == "Job") {
            let labels = job["spec"]["template"]["metadata"]["labels"]
                .as_object()
                .unwrap();
            let selector = service["spec"]["selector"].as_object().unwrap();
            assert!(
                !selector.iter().all(|(k, v)| labels.get(k) == Some(v)),
                "{label}: the Service selects the Job's pod"
            );
        }

        if let Some(garm_config) = garm_toml(objs) {
            let entry = &garm_config["provider"].as_array().unwrap()[0];
            assert_eq!(entry["provider_type"].as_str(), Some("external"), "{label}");
            let external = entry["external"].as_table().unwrap();
            let wanted = values["provider"]["interfaceVersion"]
                .as_str()
                .unwrap_or("v0.1.0");
            assert_eq!(
                external["provider_executable"].as_str(),
                Some(PROVIDER_PATH),
                "{label}"
            );
            assert_eq!(
                external["config_file"].as_str(),
                Some(PROVIDER_CONFIG_PATH),
                "{label}"
            );
            assert_eq!(
                external["interface_version"].as_str(),
                Some(wanted),
                "{label}"
            );
            let wanted_env: toml::Value =
                serde_json::from_value(values["provider"]["environmentVariables"].clone())
                    .unwrap_or(toml::Value::Array(vec!["EDP_EDGE_CONNECT_".into()]));
            assert_eq!(external["environment_variables"], wanted_env, "{label}");
        }
        check_metrics(label, values, objs);

        // The pod's own ServiceAccount, without a token; the NetworkPolicy, when asked for,
        // selects GARM's pod and admits GARM's port.
        let account = find(objs, "ServiceAccount", None).expect("a ServiceAccount");
        assert_eq!(
            account["automountServiceAccountToken"],
            json!(false),
            "{label}"
        );
        assert_eq!(
            pod["serviceAccountName"], account["metadata"]["name"],
            "{label}"
        );
        let policy = find(objs, "NetworkPolicy", None);
        assert_eq!(
            policy.is_some(),
            values["networkPolicy"]["enabled"] == true,
            "{label}"
        );
        if let Some(policy) = policy {
            let labels = find(objs, "Deployment", None).unwrap()["spec"]["template"]["metadata"]
                ["labels"]
                .clone();
            let selector = policy["spec"]["podSelector"]["matchLabels"]
                .as_object()
                .unwrap();
            assert!(
                selector.iter().all(|(k, v)| labels[k] == *v),
                "{label}: the NetworkPolicy does not select GARM's pod"
            );
            assert_eq!(
                policy["spec"]["ingress"][0]["ports"],
                json!([{"port": "http"}]),
                "{label}"
            );
            assert_eq!(
                policy["spec"]["ingress"][0]["from"], values["networkPolicy"]["from"],
                "{label}"
            );
        }
    }
    let requests: Vec<Value> = kube
        .iter()
        .map(|(_, o)| json!({"op": "kube", "object": o, "version": KUBE_VERSION}))
        .collect();
    for ((label, o), answer) in kube.iter().zip(engine(&requests)) {
        assert_eq!(
            answer,
            json!({}),
            "{label}: {}/{} is not a valid {} (Kubernetes {KUBE_VERSION})",
            o["kind"],
            o["metadata"]["name"],
            o["apiVersion"]
        );
    }
}

/// What metrics.enabled adds, and that nothing of it is there without.
fn check_metrics(label: &str, values: &Value, objs: &[Value]) {
    let metrics = &values["metrics"];
    let pod = pod(objs);
    let garm = container(pod, "garm").unwrap();
    let sidecar = container(pod, "provider-metrics");
    let service = find(objs, "Service", Some("garm-provider-metrics"));
    let monitor = find(objs, "ServiceMonitor", None);
    let dashboard = find(objs, "ConfigMap", Some("garm-provider-dashboard"));
    let events_env = garm["env"]
        .as_array()
        .and_then(|env| env.iter().find(|e| e["name"] == EVENTS_ENV));
    if metrics["enabled"] != true {
        assert!(
            sidecar.is_none() && service.is_none() && monitor.is_none() && dashboard.is_none() && events_env.is_none(),
            "{label}: without metrics.enabled no sidecar, events file, Service, ServiceMonitor or dashboard"
        );
        return;
    }
    let sidecar = sidecar.unwrap_or_else(|| panic!("{label}: no sidecar provider-metrics"));
    let events = events_env
        .unwrap_or_else(|| panic!("{label}: GARM's container lacks {EVENTS_ENV}"))["value"]
        .as_str()
        .unwrap();
    let args: Vec<&str> = sidecar["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let arg = |flag: &str| args[args.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(
        sidecar["command"],
        json!([PROVIDER_PATH]),
        "{label}: the sidecar runs the provider's binary"
    );
    assert_eq!(&args[..2], &["metrics", "serve"], "{label}");
    assert_eq!(
        arg("--events"),
        events,
        "{label}: the sidecar reads the events file the provider is told"
    );
    assert_eq!(
        arg("--listen"),
        format!("0.0.0.0:{METRICS_PORT}"),
        "{label}"
    );
    // Each path is on a volume both containers mount at the same place; the snapshot on data.
    for (path, volume) in [(events, "provider-logs"), (arg("--snapshot"), "data")] {
        let at: Vec<&str> = [garm, sidecar]
            .iter()
            .map(|c| {
                let mount = c["volumeMounts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["name"] == volume);
                mount
                    .and_then(|m| m["mountPath"].as_str())
                    .unwrap_or_else(|| panic!("{label}: {volume} is not mounted in {}", c["name"]))
            })
            .collect();
        assert!(
            at[0] == at[1] && path.starts_with(&format!("{}/", at[0])),
            "{label}: {path} is not on the volume {volume} mounted alike in GARM's container and the sidecar: {at:?}"
        );
    }
    // The provider's binary comes from the installer image or GARM's; the sidecar's from the same.
    let source = if values["provider"]["delivery"] == "installer" {
        &pod["initContainers"][0]
    } else {
        garm
    };
    assert!(
        sidecar["image"] == source["image"]
            && sidecar["imagePullPolicy"] == source["imagePullPolicy"],
        "{label}: the sidecar's image is not the one the provider comes from: {} vs {}",
        sidecar["image"],
        source["image"]
    );
    // Ready when /metrics answers on the metrics port.
    let probe = &sidecar["readinessProbe"]["httpGet"];
    let port = sidecar["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == probe["port"]);
    assert!(
        probe["path"] == "/metrics" && port.is_some_and(|p| p["containerPort"] == METRICS_PORT),
        "{label}: the sidecar's readiness probe is not /metrics on {METRICS_PORT}: {probe}"
    );
    let context = &sidecar["securityContext"];
    assert!(
        context["readOnlyRootFilesystem"] == true && context["allowPrivilegeEscalation"] == false && context["capabilities"]["drop"] == json!(["ALL"]),
        "{label}: the sidecar's root filesystem is read-only, without capabilities or privilege escalation"
    );
    let pod_labels = find(objs, "Deployment", None).unwrap()["spec"]["template"]["metadata"]
        ["labels"]
        .as_object()
        .unwrap();
    let service = service.unwrap_or_else(|| panic!("{label}: no Service garm-provider-metrics"));
    let selects = |selector: &Value, labels: &serde_json::Map<String, Value>| {
        selector
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    };
    assert!(
        selects(&service["spec"]["selector"], pod_labels),
        "{label}: the metrics Service selects GARM's pod"
    );
    assert_eq!(
        service["spec"]["ports"][0]["port"],
        json!(METRICS_PORT),
        "{label}"
    );
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"], "metrics",
        "{label}"
    );
    if metrics["serviceMonitor"]["enabled"] != true {
        assert!(
            monitor.is_none(),
            "{label}: no ServiceMonitor unless metrics.serviceMonitor.enabled"
        );
    } else {
        let monitor = monitor.unwrap_or_else(|| panic!("{label}: no ServiceMonitor"));
        let service_labels = service["metadata"]["labels"].as_object().unwrap();
        assert!(
            selects(&monitor["spec"]["selector"]["matchLabels"], service_labels),
            "{label}: the ServiceMonitor selects the metrics Service"
        );
        let endpoint = &monitor["spec"]["endpoints"][0];
        assert!(
            endpoint["port"] == service["spec"]["ports"][0]["name"]
                && endpoint["path"] == "/metrics",
            "{label}: by its port's name"
        );
        let garm_service = find(objs, "Service", Some("garm")).unwrap()["metadata"]["labels"]
            .as_object()
            .unwrap();
        assert!(
            !selects(&monitor["spec"]["selector"]["matchLabels"], garm_service),
            "{label}: the ServiceMonitor selects GARM's own Service too"
        );
    }
    if metrics["dashboard"]["enabled"] != true {
        assert!(
            dashboard.is_none(),
            "{label}: no dashboard ConfigMap unless metrics.dashboard.enabled"
        );
    } else {
        let dashboard = dashboard.unwrap_or_else(|| panic!("{label}: no dashboard ConfigMap"));
        let file =
            std::fs::read_to_string(chart_dir().join("dashboards/edge-connect-provider.json"))
                .unwrap();
        let held: Value = serde_json::from_str(
            dashboard["data"]["edge-connect-provider.json"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            held,
            serde_json::from_str::<Value>(&file).unwrap(),
            "{label}: the ConfigMap holds dashboards/edge-connect-provider.json"
        );
        let wanted = metrics["dashboard"]
            .get("labels")
            .cloned()
            .unwrap_or(json!({"grafana_dashboard": "1"}));
        assert!(
            selects(
                &wanted,
                dashboard["metadata"]["labels"].as_object().unwrap()
            ),
            "{label}: the dashboard carries the sidecar's label {wanted}"
        );
    }
}

#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_values_schema_holds_the_providers_config_schema_and_the_chart_its_version() {
    let out = Command::new(crate::support::BIN)
        .args(["schema", "config"])
        .output()
        .unwrap();
    let mut wanted: Value = serde_json::from_slice(&out.stdout).unwrap();
    let definitions = wanted
        .as_object_mut()
        .unwrap()
        .remove("definitions")
        .unwrap();
    for key in ["$schema", "title"] {
        wanted.as_object_mut().unwrap().remove(key);
    }
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(chart_dir().join("values.schema.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(schema["definitions"], definitions, "values.schema.json's definitions are not the provider's (`garm-provider-edge-connect schema config`)");
    assert_eq!(
        schema["properties"]["provider"]["properties"]["config"], wanted,
        "values.schema.json's provider.config is not `garm-provider-edge-connect schema config`"
    );

    let chart: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("Chart.yaml")).unwrap())
            .unwrap();
    let cargo: toml::Table =
        toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    let version = cargo["package"]["version"].as_str().unwrap();
    assert_eq!(
        chart["appVersion"],
        format!("v{version}"),
        "Chart.yaml's appVersion is the provider's version (the images' tag)"
    );
}

/// Every key of the provider's config appears in the defaults or an example.
#[test]
fn the_defaults_and_examples_set_every_key_of_the_providers_config() {
    let out = Command::new(crate::support::BIN)
        .args(["schema", "config"])
        .output()
        .unwrap();
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    fn keys(node: &Value, prefix: &str, definitions: &Value, out: &mut Vec<String>) {
        for (name, sub) in node["properties"].as_object().into_iter().flatten() {
            out.push(format!("{prefix}{name}"));
            let refs = std::iter::once(sub)
                .chain(sub["anyOf"].as_array().into_iter().flatten())
                .chain(sub["allOf"].as_array().into_iter().flatten());
            for r in refs {
                if let Some(target) = r["$ref"].as_str().and_then(|t| t.rsplit('/').next()) {
                    if definitions[target]["properties"].is_object() {
                        keys(
                            &definitions[target],
                            &format!("{prefix}{name}."),
                            definitions,
                            out,
                        );
                    }
                }
            }
        }
    }
    fn given(node: &Value, prefix: &str, out: &mut Vec<String>) {
        for (k, v) in node.as_object().into_iter().flatten() {
            out.push(format!("{prefix}{k}"));
            given(v, &format!("{prefix}{k}."), out);
        }
    }
    // zone and cloudlet are one type (SiteKey): a key of it is covered by either.
    let site = |k: &String| {
        k.replace("edge_connect.zone.", "edge_connect.SITE.")
            .replace("edge_connect.cloudlet.", "edge_connect.SITE.")
    };
    let mut wanted = Vec::new();
    keys(&schema, "", &schema["definitions"], &mut wanted);
    let defaults: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap())
            .unwrap();
    let mut seen = Vec::new();
    for values in std::iter::once(defaults).chain(examples().into_values()) {
        given(&values["provider"]["config"], "", &mut seen);
    }
    let seen: std::collections::BTreeSet<String> = seen.iter().map(site).collect();
    // credentials_file is the chart's own: it points at the mounted Secret; so is site_cache,
    // written from siteCache (the_site_cache_cronjobs_run_the_provider_as_garms_container_does).
    let missing: Vec<String> = wanted
        .iter()
        .map(site)
        .filter(|k| !seen.contains(k) && k != "credentials_file" && !k.starts_with("site_cache"))
        .collect();
    assert!(
        missing.is_empty(),
        "never set in the defaults or an example: {missing:?}"
    );
}

/// Grafana's import prompt fills __inputs; a dashboard loaded from a ConfigMap gets none, so
/// every ${...} data source must be a variable of the dashboard itself (grafana/grafana#10786).
#[test]
fn the_dashboards_data_source_is_its_own_variable() {
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(chart_dir().join("dashboards/edge-connect-provider.json"))
            .unwrap(),
    )
    .unwrap();
    let variables: Vec<&str> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "datasource")
        .filter_map(|v| v["name"].as_str())
        .collect();
    fn sources(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(uid) = m
                    .get("datasource")
                    .and_then(|d| d.get("uid"))
                    .and_then(Value::as_str)
                {
                    out.push(uid.to_string());
                }
                m.values().for_each(|v| sources(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| sources(v, out)),
            _ => {}
        }
    }
    let mut used = Vec::new();
    sources(&dashboard, &mut used);
    let bad: Vec<&String> = used
        .iter()
        .filter(|u| !variables.contains(&u.trim_start_matches("${").trim_end_matches('}')))
        .collect();
    assert!(
        dashboard.get("__inputs").is_none() && !used.is_empty() && bad.is_empty(),
        "__inputs or unknown data sources: {bad:?}"
    );
}

/// Values that must not install, each refused by the schema or a template with a message that
/// names the value; and what only the provider can refuse, by the provider.
#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_chart_refuses_at_install_what_cannot_work() {
    let base = installable();
    let refused_by_schema: Vec<(&str, Value)> = vec![
        (
            "/provider/config/edge_connect/request_timeout_secs",
            json!({"provider": {"config": {"edge_connect": {"request_timeout_secs": "60s"}}}}),
        ),
        (
            "/provider/config/edge_connect/deployment",
            json!({"provider": {"config": {"edge_connect": {"deployment": "vm"}}}}),
        ),
        (
            "/provider/config/edge_connect/zone",
            json!({"provider": {"config": {"edge_connect": {"zone": {"name": "Munich", "zone": "Munich"}}}}}),
        ),
        (
            "/provider/config/edge_connect/url",
            json!({"provider": {"config": {"edge_connect": {"url": 443}}}}),
        ),
        (
            "/provider/config",
            json!({"provider": {"config": {"log_levle": "info"}}}),
        ),
        (
            "/provider/config/log_level",
            json!({"provider": {"config": {"log_level": "verbose"}}}),
        ),
        (
            "/provider/delivery",
            json!({"provider": {"delivery": "copy"}}),
        ),
        (
            "/provider/interfaceVersion",
            json!({"provider": {"interfaceVersion": "v0.2.0"}}),
        ),
        (
            "/garm/dbPassphrase",
            json!({"garm": {"dbPassphrase": "too-short"}}),
        ),
        ("/init", json!({"init": {"enabled": true}})),
        (
            "/persistence/size",
            json!({"persistence": {"size": "lots"}}),
        ),
        ("/service/port", json!({"service": {"port": 0}})),
        ("/metrics/enabled", json!({"metrics": {"enabled": "yes"}})),
        (
            "/metrics/serviceMonitor/interval",
            json!({"metrics": {"serviceMonitor": {"interval": "often"}}}),
        ),
        (
            "/metrics/dashboard/labels/grafana_dashboard",
            json!({"metrics": {"dashboard": {"labels": {"grafana_dashboard": 1}}}}),
        ),
        // What the provider would refuse: both placements (a cloudlet added beside the default
        // zone), the API path in the url, a password under 8 characters.
        (
            "/provider/config/edge_connect/zone",
            json!({"provider": {"config": {"edge_connect": {"cloudlet": {"organization": "TelekomOP", "name": "Munich"}}}}}),
        ),
        (
            "/provider/config/edge_connect/url",
            json!({"provider": {"config": {"edge_connect": {"url": "https://hub.example.com/api/v1/"}}}}),
        ),
        (
            "/credentials/password",
            json!({"credentials": {"password": "1234567"}}),
        ),
        (
            "/image/repository",
            json!({"image": {"repository": "registry.example.com/ci\ninjected: key"}}),
        ),
        // site-cache prune --idle takes a number with s, m, h or d.
        (
            "/siteCache/prune/idle",
            json!({"siteCache": {"prune": {"idle": "1w"}}}),
        ),
        (
            "/siteCache/prune/idle",
            json!({"siteCache": {"prune": {"idle": "24"}}}),
        ),
        (
            "/siteCache/prune/idle",
            json!({"siteCache": {"prune": {"idle": "24h\n- --all"}}}),
        ),
        (
            "/siteCache/controllerId",
            json!({"siteCache": {"controllerId": "garm"}}),
        ),
        (
            "/siteCache/up/schedule",
            json!({"siteCache": {"up": {"schedule": ""}}}),
        ),
        ("/siteCache", json!({"siteCache": {"enable": true}})),
    ];
    // What no default can be: each secret a user must set, named by the template.
    let unset = |path: &str| -> Value {
        let mut v = base.clone();
        *v.pointer_mut(path).unwrap() = json!("");
        v
    };
    let refused_by_template: Vec<(Value, &str)> = vec![
        (unset("/garm/jwtSecret"), "garm.jwtSecret: set GARM's JWT signing secret"),
        (unset("/garm/dbPassphrase"), "garm.dbPassphrase: set GARM's database passphrase (exactly 32 characters)"),
        (unset("/credentials/username"), "credentials.username: set the Edge Connect username"),
        (unset("/credentials/password"), "credentials.password: set the Edge Connect password"),
        (unset("/image/repository"), "image.repository: set the image GARM runs from"),
        (unset("/provider/config/edge_connect/url"), "provider.config.edge_connect.url: set your Edge Connect's base URL"),
        (merged(&base, &json!({"provider": {"delivery": "installer"}})),
            "provider.installer.repository: set where you pushed the Dockerfile's installer target"),
        (merged(&base, &json!({"ingress": {"enabled": true}})), "ingress.host: set the host name"),
        (merged(&base, &json!({"init": {"enabled": true, "existingSecret": "garm-init"}})),
            "init.endpoint.baseUrl: set the Forgejo's base URL"),
        (merged(&base, &json!({"metrics": {"enabled": true}, "provider": {"environmentVariables": ["EDP_OTHER_"]}})),
            "metrics.enabled: GARM passes EDP_EDGE_CONNECT_METRICS_EVENTS_FILE on to the provider only if provider.environmentVariables holds a prefix of it: keep EDP_EDGE_CONNECT_ in the list"),
        (merged(&base, &json!({"credentials": {"source": "environment"}, "provider": {"environmentVariables": ["EDP_EDGE_CONNECT_USERNAME"]}})),
            "credentials.source environment: GARM passes EDP_EDGE_CONNECT_PASSWORD on to the provider only if"),
        (merged(&base, &json!({"podSecurityContext": {"fsGroup": 1000}})),
            "podSecurityContext.fsGroup makes the mounted credentials file group-readable (mode 0440), which the provider refuses"),
        // The site cache: a service at least, the controller id its CronJobs act for, the
        // actions cache's secret, and GARM passing that secret on.
        (merged(&with_site_cache(&base), &json!({"siteCache": {"registryMirror": false, "actionsCache": false}})),
            "siteCache.enabled: set siteCache.registryMirror or siteCache.actionsCache to true, or siteCache.enabled to false"),
        (merged(&with_site_cache(&base), &json!({"siteCache": {"controllerId": ""}})),
            "siteCache.controllerId: set GARM's controller id"),
        (merged(&with_site_cache(&base), &json!({"credentials": {"siteCacheSecret": ""}})),
            "credentials.siteCacheSecret: set the site cache's actions cache secret"),
        (merged(&with_site_cache(&base), &json!({"credentials": {"source": "environment"}})),
            "siteCache.actionsCache with credentials.source environment: GARM passes EDP_SITE_CACHE_SECRET on to the provider only if provider.environmentVariables holds a prefix of it: add EDP_SITE_CACHE_SECRET to the list"),
    ];
    let mut values: Vec<Value> = refused_by_schema
        .iter()
        .map(|(_, v)| merged(&base, v))
        .collect();
    values.extend(refused_by_template.iter().map(|(v, _)| v.clone()));
    let results = render_each(&values);
    for ((path, v), result) in refused_by_schema.iter().zip(&results) {
        let err = result
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("installed: {v}"));
        assert!(
            err.starts_with("HelmValuesError: ") && err.contains(&format!("'{path}")),
            "{v}: not refused at {path} by the schema: {err}"
        );
    }
    for ((v, message), result) in refused_by_template
        .iter()
        .zip(&results[refused_by_schema.len()..])
    {
        let err = result
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("installed: {v}"));
        assert!(
            err.contains(message),
            "{v}: refused without naming the value ({message}): {err}"
        );
    }
    // [site_cache] comes from siteCache alone, so that the provider's config and the CronJobs
    // agree: the template refuses provider.config.site_cache.
    let err = render(&merged(
        &base,
        &json!({"provider": {"config": {"site_cache": {"registry_mirror": true}}}}),
    ))
    .unwrap_err();
    assert!(
        err.contains("provider.config.site_cache: set siteCache.enabled"),
        "{err}"
    );
    // With only the mirror, the actions cache's secret is not asked for.
    let mirror_only = merged(
        &with_site_cache(&base),
        &json!({"siteCache": {"actionsCache": false}, "credentials": {"siteCacheSecret": ""}}),
    );
    render(&mirror_only).unwrap();
    // What no schema can say, the provider's own validation says: plain http to a remote host.
    let objs = render(&merged(
        &base,
        &json!({"provider": {"config": {"edge_connect": {"url": "http://hub.example.invalid"}}}}),
    ))
    .unwrap();
    let pool = json!({"image_pull_username": "robot", "image_pull_password_env": "EDP_EDGE_CONNECT_REGISTRY_PASSWORD"});
    let err = provider_verdict(&provider_config(&objs), &pool).unwrap_err();
    assert!(err.contains("plain http"), "{err}");
}

/// README's private-registry pool and operations.md's proxy setup, from
/// examples/registry-and-proxy.yaml: the variables are in GARM's environment, GARM passes each on
/// to the provider, and the provider accepts the README's pool under the rendered config.
#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_chart_gives_garm_the_registry_and_proxy_environment() {
    let values = merged(
        &installable(),
        &examples()["examples/registry-and-proxy.yaml"],
    );
    let objs = render(&values).unwrap();
    let garm = container(pod(&objs), "garm").unwrap().clone();
    let env = garm["env"].as_array().unwrap();
    let passed =
        garm_toml(&objs).unwrap()["provider"][0]["external"]["environment_variables"].clone();
    let passed: Vec<&str> = passed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for name in [
        "EDP_EDGE_CONNECT_REGISTRY_PASSWORD",
        "HTTPS_PROXY",
        "NO_PROXY",
    ] {
        assert!(
            env.iter().any(|e| e["name"] == name),
            "{name} is not in GARM's environment: {env:?}"
        );
        assert!(
            passed.iter().any(|p| name.starts_with(p)),
            "GARM does not pass {name} on: {passed:?}"
        );
    }
    assert_eq!(
        env.iter()
            .find(|e| e["name"] == "EDP_EDGE_CONNECT_REGISTRY_PASSWORD")
            .unwrap()["valueFrom"]["secretKeyRef"],
        json!({"name": "registry-example-com", "key": "password"})
    );
    // The README's pool, as written there.
    let pool = json!({"image_pull_username": "robot$ci", "image_pull_password_env": "EDP_EDGE_CONNECT_REGISTRY_PASSWORD"});
    provider_verdict(&provider_config(&objs), &pool).unwrap();
    let extra = render(&merged(
        &installable(),
        &json!({"extraEnvFrom": [{"secretRef": {"name": "proxies"}}]}),
    ))
    .unwrap();
    assert_eq!(
        container(pod(&extra), "garm").unwrap()["envFrom"],
        json!([{"secretRef": {"name": "proxies"}}])
    );
}

/// credentials.source environment: no credentials file, the two variables from the Secret in
/// GARM's environment (passed on by EDP_EDGE_CONNECT_), so an fsGroup is fine.
#[test]
#[ignore = "needs helm-python-sdk (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_chart_gives_the_credentials_by_environment_without_a_file() {
    let values = merged(
        &installable(),
        &json!({"credentials": {"source": "environment"}, "podSecurityContext": {"fsGroup": 1000}}),
    );
    let objs = render(&values).unwrap();
    let config: toml::Table = toml::from_str(&provider_config(&objs)).unwrap();
    assert!(config.get("credentials_file").is_none(), "{config:?}");
    let pod = pod(&objs);
    assert!(pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|v| v["name"] != "credentials"));
    let garm = container(pod, "garm").unwrap();
    for name in ["EDP_EDGE_CONNECT_USERNAME", "EDP_EDGE_CONNECT_PASSWORD"] {
        let var = garm["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(
            var["valueFrom"]["secretKeyRef"],
            json!({"name": "garm-edge-connect-credentials", "key": name})
        );
    }
    let secret = find(&objs, "Secret", Some("garm-edge-connect-credentials")).unwrap();
    assert_eq!(
        key_text(secret, "EDP_EDGE_CONNECT_PASSWORD").as_deref(),
        Some("a-strong-password")
    );
    // The provider takes its credentials from the two variables with that config (no file):
    // `check` says so before it finds nothing listening on the loopback port.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("provider.toml");
    let text = provider_config(&objs).replace("https://hub.example.invalid", "http://127.0.0.1:1");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(crate::support::BIN)
        .arg("--config")
        .arg(&path)
        .arg("check")
        .env_clear()
        .env("EDP_EDGE_CONNECT_USERNAME", "ci-bot@example.com")
        .env("EDP_EDGE_CONNECT_PASSWORD", "a-strong-password")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l == "✓ credentials: user ci-bot@example.com from EDP_EDGE_CONNECT_USERNAME, password from EDP_EDGE_CONNECT_PASSWORD"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// --- The site cache: [site_cache] and the CronJobs that run `site-cache up` and `prune` ----------

const CONTROLLER_ID: &str = "00000000-0000-4000-8000-000000000001";
const SITE_CACHE_SECRET_ENV: &str = "EDP_SITE_CACHE_SECRET";

/// The site cache on, with what it needs: the controller id and the actions cache's secret.
fn with_site_cache(values: &Value) -> Value {
    merged(
        values,
        &json!({
            "siteCache": {"enabled": true, "controllerId": CONTROLLER_ID},
            "credentials": {"siteCacheSecret": "a-long-random-site-cache-secret"},
        }),
    )
}

/// Where a container finds `path`: the volume of the deepest mount that covers it, and the
/// object, key and mode behind the file (a Secret's, a ConfigMap's, or one source of a
/// projected volume), as one value to compare.
fn file_source(pod: &Value, container: &Value, path: &str) -> Option<Value> {
    let mount = container["volumeMounts"]
        .as_array()?
        .iter()
        .filter(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|at| Path::new(path).starts_with(at))
        })
        .max_by_key(|m| {
            Path::new(m["mountPath"].as_str().unwrap())
                .components()
                .count()
        })?;
    let inner = Path::new(path)
        .strip_prefix(mount["mountPath"].as_str()?)
        .ok()?
        .to_string_lossy()
        .into_owned();
    let volume = pod["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == mount["name"])?;
    let pick = |source: &Value, kind: &str, name_key: &str, mode: &Value| -> Option<Value> {
        let key = match source["items"].as_array() {
            Some(items) => items.iter().find(|i| i["path"] == inner.as_str())?["key"].clone(),
            None => json!(inner),
        };
        Some(
            json!({"kind": kind, "name": source[name_key], "key": key, "mode": mode,
            "readOnly": mount["readOnly"]}),
        )
    };
    if volume["secret"].is_object() {
        return pick(
            &volume["secret"],
            "Secret",
            "secretName",
            &volume["secret"]["defaultMode"],
        );
    }
    volume["projected"]["sources"]
        .as_array()?
        .iter()
        .find_map(|s| {
            let mode = &volume["projected"]["defaultMode"];
            if s["secret"].is_object() {
                pick(&s["secret"], "Secret", "name", mode)
            } else {
                pick(&s["configMap"], "ConfigMap", "name", mode)
            }
        })
}

/// The volume kind (emptyDir, secret, ...) under `dir` in a container, if it is writable there.
fn writable_volume(pod: &Value, container: &Value, dir: &str) -> Option<String> {
    let mount = container["volumeMounts"]
        .as_array()?
        .iter()
        .filter(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|at| Path::new(dir).starts_with(at))
        })
        .max_by_key(|m| {
            Path::new(m["mountPath"].as_str().unwrap())
                .components()
                .count()
        })?;
    if mount["readOnly"] == true {
        return None;
    }
    let volume = pod["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == mount["name"])?;
    volume.as_object()?.keys().find(|k| *k != "name").cloned()
}

/// A container's env without the named variables.
fn env_without(container: &Value, names: &[&str]) -> Vec<Value> {
    container["env"]
        .as_array()
        .map(|env| {
            env.iter()
                .filter(|e| !names.iter().any(|n| e["name"] == *n))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// What siteCache.enabled adds for `values`, held to GARM's own container: the provider config's
/// [site_cache], the actions cache's secret where the credentials are, and two CronJobs that run
/// exactly `site-cache up` and `site-cache prune --idle` with GARM's provider config,
/// credentials, environment, image, user and pod settings.
fn check_site_cache(label: &str, values: &Value, objs: &[Value]) {
    let sc = &values["siteCache"];
    let config: toml::Table = toml::from_str(&provider_config(objs)).unwrap();
    let deployment = find(objs, "Deployment", None).unwrap();
    let pod = pod(objs);
    let garm = container(pod, "garm").unwrap();
    let from_file = values["credentials"]["source"] != "environment";
    // The Secret the chart makes, unless credentials.existingSecret.
    let secret = find(objs, "Secret", Some("garm-edge-connect-credentials"));
    let cronjobs: Vec<&Value> = objs.iter().filter(|o| o["kind"] == "CronJob").collect();
    if sc["enabled"] != true {
        assert!(
            cronjobs.is_empty(),
            "{label}: CronJobs without siteCache.enabled"
        );
        assert!(config.get("site_cache").is_none(), "{label}: {config:?}");
        assert!(
            secret.is_none_or(|secret| key_text(secret, SITE_CACHE_SECRET_ENV).is_none()
                && !key_text(secret, "credentials.toml")
                    .unwrap_or_default()
                    .contains("site_cache_secret")),
            "{label}: a site cache secret without the site cache"
        );
        return;
    }

    // The provider config says what siteCache says; an empty flavor or image is left out.
    let mut wanted = toml::Table::new();
    wanted.insert(
        "registry_mirror".into(),
        sc["registryMirror"].as_bool().unwrap().into(),
    );
    wanted.insert(
        "actions_cache".into(),
        sc["actionsCache"].as_bool().unwrap().into(),
    );
    for (key, value) in [
        ("flavor", "flavor"),
        ("registry_image", "registryImage"),
        ("actions_cache_image", "actionsCacheImage"),
    ] {
        if let Some(v) = sc[value].as_str().filter(|v| !v.is_empty()) {
            wanted.insert(key.into(), v.into());
        }
    }
    assert_eq!(
        config.get("site_cache"),
        Some(&toml::Value::Table(wanted)),
        "{label}: [site_cache]"
    );

    // The actions cache's secret: in the credentials file, or a variable of GARM's container
    // (passed on to the provider) from the Secret's key of that name.
    let cache_secret = values["credentials"]["siteCacheSecret"].as_str().unwrap();
    let actions = sc["actionsCache"] == true;
    if from_file {
        if let Some(secret) = secret {
            let creds: toml::Table =
                toml::from_str(&key_text(secret, "credentials.toml").unwrap()).unwrap();
            assert_eq!(
                creds.get("site_cache_secret").and_then(|v| v.as_str()),
                actions.then_some(cache_secret),
                "{label}: site_cache_secret in the credentials file"
            );
        }
    } else {
        if let Some(secret) = secret {
            assert_eq!(
                key_text(secret, SITE_CACHE_SECRET_ENV).as_deref(),
                actions.then_some(cache_secret),
                "{label}"
            );
        }
        let credentials_secret = values["credentials"]["existingSecret"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or("garm-edge-connect-credentials");
        let var = garm["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == SITE_CACHE_SECRET_ENV);
        assert_eq!(
            var.map(|v| &v["valueFrom"]["secretKeyRef"]),
            actions
                .then(|| json!({"name": credentials_secret, "key": SITE_CACHE_SECRET_ENV}))
                .as_ref(),
            "{label}: {SITE_CACHE_SECRET_ENV} in GARM's container"
        );
        let passed = garm_toml(objs).unwrap()["provider"][0]["external"]["environment_variables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| SITE_CACHE_SECRET_ENV.starts_with(p.as_str().unwrap()));
        assert!(
            passed || !actions,
            "{label}: GARM does not pass {SITE_CACHE_SECRET_ENV} on"
        );
    }

    let idle = sc["prune"]["idle"].as_str().unwrap();
    let wanted_jobs = [
        (
            "garm-site-cache-up",
            &sc["up"]["schedule"],
            vec!["site-cache", "up", "--config", PROVIDER_CONFIG_PATH],
        ),
        (
            "garm-site-cache-prune",
            &sc["prune"]["schedule"],
            vec![
                "site-cache",
                "prune",
                "--idle",
                idle,
                "--config",
                PROVIDER_CONFIG_PATH,
            ],
        ),
    ];
    assert_eq!(cronjobs.len(), 2, "{label}: {cronjobs:?}");
    let source = if values["provider"]["delivery"] == "installer" {
        &pod["initContainers"][0]
    } else {
        garm
    };
    let operation_timeout = values["provider"]["config"]["edge_connect"]["operation_timeout_secs"]
        .as_u64()
        .unwrap_or(900);
    let service_selector = find(objs, "Service", Some("garm")).unwrap()["spec"]["selector"]
        .as_object()
        .unwrap()
        .clone();
    for (name, schedule, args) in wanted_jobs {
        let cron = find(objs, "CronJob", Some(name))
            .unwrap_or_else(|| panic!("{label}: no CronJob {name}"));
        let label = format!("{label}: {name}");
        let spec = &cron["spec"];
        assert_eq!(&spec["schedule"], schedule, "{label}");
        assert_eq!(spec["concurrencyPolicy"], "Forbid", "{label}");
        assert!(
            spec["startingDeadlineSeconds"].as_u64().is_some(),
            "{label}"
        );
        assert!(
            spec["successfulJobsHistoryLimit"]
                .as_u64()
                .is_some_and(|n| n <= 3),
            "{label}"
        );
        let job = &spec["jobTemplate"]["spec"];
        assert_eq!(
            job["backoffLimit"], 0,
            "{label}: the next schedule is the retry"
        );
        // Past the provider's own bound on a command (its deadline plus the cleanup grace), so
        // Kubernetes never kills a create mid-way, and bounded.
        let deadline = job["activeDeadlineSeconds"].as_u64().unwrap();
        assert!(
            deadline > operation_timeout + 120 && deadline <= operation_timeout + 120 + 600,
            "{label}: activeDeadlineSeconds {deadline} against operation_timeout_secs {operation_timeout}"
        );
        let job_pod = &job["template"]["spec"];
        assert_eq!(job_pod["restartPolicy"], "Never", "{label}");
        let containers = job_pod["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 1, "{label}");
        let c = &containers[0];

        // Exactly the command line.
        let mut line = vec![c["command"][0].clone()];
        line.extend(c["args"].as_array().unwrap().iter().cloned());
        assert_eq!(c["command"].as_array().unwrap().len(), 1, "{label}");
        let mut wanted_line = vec![json!(PROVIDER_PATH)];
        wanted_line.extend(args.iter().map(|a| json!(a)));
        assert_eq!(line, wanted_line, "{label}: the command line");

        // The binary GARM runs, from the image it comes from.
        assert!(
            c["image"] == source["image"] && c["imagePullPolicy"] == source["imagePullPolicy"],
            "{label}: image {} is not the provider's {}",
            c["image"],
            source["image"]
        );

        // The same config and credentials file, from the same object and key with the same mode.
        let mut files = vec![PROVIDER_CONFIG_PATH];
        if from_file {
            files.push(CREDENTIALS_PATH);
        } else {
            assert!(
                config.get("credentials_file").is_none()
                    && file_source(job_pod, c, CREDENTIALS_PATH).is_none(),
                "{label}: a credentials file with credentials.source environment"
            );
        }
        for path in files {
            let theirs = file_source(pod, garm, path);
            assert!(theirs.is_some(), "{label}: GARM's container has no {path}");
            assert_eq!(file_source(job_pod, c, path), theirs, "{label}: {path}");
        }
        // GARM's config (its JWT secret, its database passphrase) is not this pod's.
        assert!(
            file_source(job_pod, c, "/etc/garm/config.toml").is_none(),
            "{label}: GARM's config.toml is mounted"
        );
        // Where the provider writes: its log and token cache on this pod's emptyDirs.
        let log_dir = Path::new(config["log_file"].as_str().unwrap())
            .parent()
            .unwrap();
        for dir in [
            log_dir.to_str().unwrap(),
            config["token_cache_dir"].as_str().unwrap(),
            "/tmp",
        ] {
            assert_eq!(
                writable_volume(job_pod, c, dir).as_deref(),
                Some("emptyDir"),
                "{label}: {dir} is not on a writable emptyDir"
            );
        }

        // GARM's environment (credentials, extraEnv, extraEnvFrom) without the metrics events
        // file, which only GARM's pod's sidecar reads; and the controller id, which GARM gives
        // its own commands.
        assert_eq!(
            env_without(c, &["GARM_CONTROLLER_ID"]),
            env_without(garm, &[EVENTS_ENV]),
            "{label}: env"
        );
        let controller = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "GARM_CONTROLLER_ID");
        assert_eq!(
            controller.map(|e| &e["value"]),
            Some(&sc["controllerId"]),
            "{label}: GARM_CONTROLLER_ID"
        );
        assert_eq!(c["envFrom"], garm["envFrom"], "{label}: envFrom");
        // extraVolumes and extraVolumeMounts (a CA bundle for ca_bundle) as GARM has them.
        for mount in values["extraVolumeMounts"].as_array().into_iter().flatten() {
            assert!(
                c["volumeMounts"].as_array().unwrap().contains(mount),
                "{label}: {mount}"
            );
        }
        for volume in values["extraVolumes"].as_array().into_iter().flatten() {
            assert!(
                job_pod["volumes"].as_array().unwrap().contains(volume),
                "{label}: {volume}"
            );
        }

        // GARM's pod settings; GARM's user (root in GARM's image, the pod's runAsUser if it
        // sets one), every capability dropped, a read-only root.
        for key in [
            "securityContext",
            "imagePullSecrets",
            "nodeSelector",
            "tolerations",
            "affinity",
            "serviceAccountName",
            "automountServiceAccountToken",
        ] {
            assert_eq!(job_pod[key], pod[key], "{label}: the pod's {key}");
        }
        let context = &c["securityContext"];
        assert!(
            context["readOnlyRootFilesystem"] == true
                && context["allowPrivilegeEscalation"] == false
                && context["capabilities"]["drop"] == json!(["ALL"]),
            "{label}: {context}"
        );
        let user = context
            .get("runAsUser")
            .or(pod["securityContext"].get("runAsUser"));
        assert_eq!(
            user,
            Some(pod["securityContext"].get("runAsUser").unwrap_or(&json!(0))),
            "{label}: not GARM's user"
        );
        assert!(
            garm["securityContext"].get("runAsUser").is_none(),
            "{label}: GARM's user is the image's or the pod's"
        );

        // Its pod is no GARM: neither the Service nor the Deployment selects it.
        let labels = job["template"]["metadata"]["labels"].as_object().unwrap();
        let deployment_selector = deployment["spec"]["selector"]["matchLabels"]
            .as_object()
            .unwrap();
        for selector in [&service_selector, deployment_selector] {
            assert!(
                !selector.iter().all(|(k, v)| labels.get(k) == Some(v)),
                "{label}: its pod is selected as GARM's"
            );
        }
    }
}

#[test]
#[ignore = "needs helm-python-sdk and kubernetes-validate (bash .ci/helm-tools.sh) and python3 >= 3.11; .ci/run installs them"]
fn the_site_cache_cronjobs_run_the_provider_as_garms_container_does() {
    let every_key = merged(
        &installable(),
        &examples()["examples/cloudlet-every-key.yaml"],
    );
    let cases: Vec<(&str, Value)> = vec![
        ("default values", installable()),
        ("examples/cloudlet-every-key.yaml", every_key.clone()),
        ("site cache, defaults", with_site_cache(&installable())),
        (
            "site cache, mirror only, every provider key, GARM's pod settings",
            merged(
                &with_site_cache(&every_key),
                &json!({
                    "siteCache": {"actionsCache": false, "flavor": "EU.medium",
                        "registryImage": "registry.example.com/mirror/registry:3.0.0",
                        "up": {"schedule": "*/5 * * * *"},
                        "prune": {"schedule": "3 4 * * *", "idle": "2d"}},
                    "imagePullSecrets": [{"name": "registry-example-com"}],
                    "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.example.com:3128"}],
                    "extraEnvFrom": [{"secretRef": {"name": "proxies"}}],
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [{"key": "ci", "operator": "Exists", "effect": "NoSchedule"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}},
                    "credentials": {"existingSecret": "edge-connect", "existingSecretKey": "creds.toml"},
                }),
            ),
        ),
        (
            "site cache, installer, credentials from the environment, a non-root pod",
            merged(
                &with_site_cache(&merged(
                    &installable(),
                    &examples()["examples/installer.yaml"],
                )),
                &json!({
                    "siteCache": {"actionsCacheImage": "data.forgejo.org/forgejo/runner:13.0.0"},
                    "credentials": {"source": "environment"},
                    "provider": {"environmentVariables": ["EDP_EDGE_CONNECT_", SITE_CACHE_SECRET_ENV],
                        "config": {"edge_connect": {"operation_timeout_secs": 1800}}},
                    "podSecurityContext": {"runAsUser": 1000, "fsGroup": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "metrics": {"enabled": true},
                }),
            ),
        ),
    ];
    let defaults: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap())
            .unwrap();
    let rendered = render_each(&cases.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>());
    let mut kube = Vec::new();
    for ((label, values), objs) in cases.iter().zip(&rendered) {
        let objs = objs
            .as_ref()
            .unwrap_or_else(|e| panic!("{label}: helm template: {e}"));
        // The checks read each value as Helm does: the chart's defaults under the case's.
        let values = merged(&defaults, values);
        check_site_cache(label, &values, objs);
        for o in objs.iter().filter(|o| o["kind"] == "CronJob") {
            kube.push((label, o.clone()));
        }
        // The provider accepts each rendered config.
        provider_verdict(&provider_config(objs), &json!({}))
            .unwrap_or_else(|e| panic!("{label}: the provider refuses the rendered config: {e}"));
    }
    assert_eq!(
        kube.len(),
        6,
        "two CronJobs for each of the three cases with the site cache"
    );
    let requests: Vec<Value> = kube
        .iter()
        .map(|(_, o)| json!({"op": "kube", "object": o, "version": KUBE_VERSION}))
        .collect();
    for ((label, o), answer) in kube.iter().zip(engine(&requests)) {
        assert_eq!(
            answer,
            json!({}),
            "{label}: {} is not a valid CronJob (Kubernetes {KUBE_VERSION})",
            o["metadata"]["name"]
        );
    }
}
