//! An App that brings its own Kubernetes manifest (docs/edge-connect-behaviours.md B25-B31):
//! what the controller checks at CreateApp, what the CRM does with it at CreateAppInst, and
//! what a site's Pod Security admission makes of the pod.

use serde_json::Value;

use super::ports::PortSpec;
use crate::config::PodSecurity;

/// The kinds client-go's scheme knows that a manifest plausibly holds, by `apiVersion`.
/// Anything else fails the universal deserializer (main `pkg/cloudcommon/kubemf.go:33-52`).
const BUILT_IN: &[(&str, &[&str])] = &[
    (
        "v1",
        &[
            "ConfigMap",
            "Secret",
            "Service",
            "Pod",
            "Namespace",
            "ServiceAccount",
            "PersistentVolumeClaim",
        ],
    ),
    (
        "apps/v1",
        &["Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"],
    ),
    ("batch/v1", &["Job", "CronJob"]),
    ("networking.k8s.io/v1", &["Ingress", "NetworkPolicy"]),
];

/// The manifest's documents, each decoded as the controller and the CRM decode them: split at
/// `\n---`, trimmed, empty parts skipped (main `pkg/cloudcommon/kubemf.go:31-52`). JSON is YAML
/// (B26). The decoder's own words are in their shape, not verbatim.
pub(crate) fn decode(manifest: &str) -> Result<Vec<Value>, String> {
    let mut objects = Vec::new();
    for part in manifest.split("\n---") {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(part) {
            Ok(v) => v,
            Err(_) => serde_yaml_ng::from_str(part)
                .map_err(|e| format!("error converting YAML to JSON: yaml: {e}"))?,
        };
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
        let (version, kind) = (text("apiVersion"), text("kind"));
        if kind.is_empty() {
            return Err(format!("Object 'Kind' is missing in '{part}'"));
        }
        let known = BUILT_IN
            .iter()
            .any(|(v, kinds)| *v == version && kinds.contains(&kind));
        if !known {
            return Err(format!(
                "no kind \"{kind}\" is registered for version \"{version}\" in scheme \"pkg/runtime/scheme.go:100\""
            ));
        }
        objects.push(value);
    }
    Ok(objects)
}

/// CreateApp's check of a user manifest (main `pkg/controller/app_api.go:662-666`,
/// `pkg/cloudcommon/deployment.go:172-286`): every document decodes, and every access port is
/// a port of a LoadBalancer Service (or, for HTTP, a ClusterIP one).
pub(crate) fn check_create_app(manifest: &str, ports: &[PortSpec]) -> Result<(), String> {
    let invalid = |e: String| format!("Invalid deployment manifest, {manifest}, {e}");
    let objects = decode(manifest)
        .map_err(|e| invalid(format!("parse kubernetes deployment yaml failed, {e}")))?;
    let service_ports = |kind: &str| -> Vec<(String, i64)> {
        objects
            .iter()
            .filter(|o| o["kind"] == "Service")
            .filter(|o| o["spec"]["type"].as_str().unwrap_or("ClusterIP") == kind)
            .flat_map(|o| o["spec"]["ports"].as_array().cloned().unwrap_or_default())
            .map(|p| {
                (
                    p["protocol"].as_str().unwrap_or("TCP").to_ascii_lowercase(),
                    p["port"].as_i64().unwrap_or_default(),
                )
            })
            .collect()
    };
    let (lb, cluster) = (service_ports("LoadBalancer"), service_ports("ClusterIP"));
    let missing: Vec<String> = ports
        .iter()
        .filter(|p| {
            let proto = if p.proto == "http" {
                "tcp"
            } else {
                p.proto.as_str()
            };
            let key = (proto.to_string(), i64::from(p.port));
            let served = lb.contains(&key) || (p.proto == "http" && cluster.contains(&key));
            !served
        })
        .map(|p| format!("{}:{}", p.proto, p.port))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "port {} defined in AccessPorts but missing from kubernetes manifest in a LoadBalancer service (TCP/UDP/HTTP) or ClusterIP service (HTTP only)",
            missing.join(",")
        )));
    }
    Ok(())
}

/// A container of the pod, as far as the site's checks read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodContainer {
    pub name: String,
    pub image: String,
    pub privileged: bool,
    pub no_privilege_escalation: bool,
    pub drops_all: bool,
    pub run_as_non_root: bool,
    /// `securityContext.seccompProfile.type` of the container, and of the pod.
    pub seccomp: Option<String>,
    pub pod_seccomp: Option<String>,
    /// `securityContext.appArmorProfile.type` of the container, and of the pod.
    pub app_armor: Option<String>,
    pub pod_app_armor: Option<String>,
}

/// The pod of a manifest's first Deployment: its name (the CRM watches the pods labelled
/// with it, main `pkg/k8smgmt/appinst.go:270-303`) and containers, or why the CRM fails the
/// create: an undecodable manifest, a Deployment without `spec.replicas` (dereferenced,
/// `pkg/k8smgmt/manifest.go:379`; the CRM's goroutine dies on the nil pointer, the words here
/// are Go's runtime error), an image whose registry host does not parse (B28:
/// `pkg/cloudcommon/registry.go:171-188`, Go's `url.Parse` message).
pub(crate) fn pod_of(manifest: &str) -> Result<(String, Vec<PodContainer>), String> {
    let objects =
        decode(manifest).map_err(|e| format!("invalid kubernetes deployment yaml, {e}"))?;
    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .ok_or_else(|| "no pods found".to_string())?;
    if deployment["spec"]["replicas"].is_null() {
        return Err("runtime error: invalid memory address or nil pointer dereference".into());
    }
    let name = deployment["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let pod_security = &deployment["spec"]["template"]["spec"]["securityContext"];
    let containers: Vec<PodContainer> = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let sc = &c["securityContext"];
            let either = |key: &str| {
                if sc[key].is_null() {
                    &pod_security[key]
                } else {
                    &sc[key]
                }
            };
            PodContainer {
                name: c["name"].as_str().unwrap_or_default().to_string(),
                image: c["image"].as_str().unwrap_or_default().to_string(),
                privileged: sc["privileged"] == true,
                no_privilege_escalation: sc["allowPrivilegeEscalation"] == false,
                drops_all: sc["capabilities"]["drop"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|x| x == "ALL")),
                run_as_non_root: either("runAsNonRoot") == true,
                seccomp: profile(&sc["seccompProfile"]),
                pod_seccomp: profile(&pod_security["seccompProfile"]),
                app_armor: profile(&sc["appArmorProfile"]),
                pod_app_armor: profile(&pod_security["appArmorProfile"]),
            }
        })
        .collect();
    for c in &containers {
        if let Some(err) = registry_host_error(&c.image) {
            return Err(err);
        }
    }
    Ok((name, containers))
}

fn profile(v: &Value) -> Option<String> {
    v["type"].as_str().map(str::to_string)
}

/// The profile types Pod Security admits where a seccomp or AppArmor profile is set
/// (kubernetes `staging/src/k8s.io/pod-security-admission/policy/check_seccompProfile_baseline.go`
/// `validSeccomp`, `check_appArmorProfile.go` `allowedProfileType`).
fn admitted_profile(t: &str) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

/// The environment each container of an App's own manifest gets (docs/edge-connect-behaviours.md
/// B27): the App's `env_vars` and `secret_env_vars` through `envFrom` on every container
/// (main `pkg/k8smgmt/manifest.go:56-67`), under the container's own `env` entries, which
/// Kubernetes lets win, and the envVarsYaml variables the CRM appends to each `env` after them
/// (last wins). `None` for a manifest the CRM could not decode.
pub(crate) fn container_envs(app: &crate::model::App) -> Option<Vec<Value>> {
    let objects = decode(&app.deployment_manifest).ok()?;
    let deployment = objects.iter().find(|o| o["kind"] == "Deployment")?;
    let mut from = app.env_vars.clone();
    if !app.secrets_wiped {
        from.extend(app.secret_env_vars.0.clone());
    }
    let appended = super::container::env_vars_yaml(app).ok()?;
    let containers = deployment["spec"]["template"]["spec"]["containers"].as_array()?;
    Some(
        containers
            .iter()
            .map(|c| {
                let mut env = from.clone();
                for e in c["env"].as_array().into_iter().flatten() {
                    if let Some(name) = e["name"].as_str() {
                        let value = e["value"].as_str().unwrap_or_default();
                        env.insert(name.to_string(), value.to_string());
                    }
                }
                env.extend(appended.iter().cloned());
                serde_json::json!({"name": c["name"], "image": c["image"], "env": env})
            })
            .collect(),
    )
}

/// Go's `url.Parse("https://" + image)` fails on a host whose port is not a number, which is
/// what a short name with a tag looks like (`docker:dind` → host `docker`, port `dind`).
fn registry_host_error(image: &str) -> Option<String> {
    let host = image.split('/').next().unwrap_or_default();
    let (_, port) = host.split_once(':')?;
    (!port.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("parse \"https://{image}\": invalid port \":{port}\" after host"))
}

/// What the site's Pod Security admission says to the ReplicaSet's pod, as the ReplicaSet's
/// `ReplicaFailure` condition carries it (kubernetes `pkg/controller/replicaset/replica_set.go`,
/// the pod's `generateName` in the message). The checks, their order and their words, in
/// kubernetes `staging/src/k8s.io/pod-security-admission/policy/`: `registry.go` (`EvaluatePod`:
/// the baseline checks, then at `baseline` the overlapping ones such as
/// `seccompProfile_baseline`, at `restricted` the restricted ones instead, each group in the
/// order of its files); `check_appArmorProfile.go` (`allowedProfileType` l. 73-81,
/// `appArmorProfile_1_0` l. 83-141: a pod or container setting a type other than
/// RuntimeDefault or Localhost), `check_privileged.go`, `check_seccompProfile_baseline.go`
/// (`validSeccomp` l. 76-79, `seccompProfileBaseline_1_19` l. 122-170: the same rule for
/// seccomp), `check_allowPrivilegeEscalation.go`, `check_capabilities_restricted.go`,
/// `check_runAsNonRoot.go`, `check_seccompProfile_restricted.go` (`seccompProfileRestricted_1_19`:
/// an explicit bad type is named alone; otherwise every container without a profile of its own
/// under a pod without one). `None` when it admits the pod.
pub(crate) fn admission(
    level: PodSecurity,
    replicaset: &str,
    containers: &[PodContainer],
) -> Option<String> {
    let level_name = match level {
        PodSecurity::Privileged => return None,
        PodSecurity::Baseline => "baseline",
        PodSecurity::Restricted => "restricted",
    };
    let quoted = |which: &[&str]| -> String {
        which
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let named = |which: Vec<&str>| -> String {
        let noun = if which.len() == 1 {
            "container"
        } else {
            "containers"
        };
        format!("{noun} {}", quoted(&which))
    };
    let those = |test: &dyn Fn(&PodContainer) -> bool| -> Vec<&str> {
        containers
            .iter()
            .filter(|c| test(c))
            .map(|c| c.name.as_str())
            .collect()
    };
    // The pod and the containers that set a profile type Pod Security does not admit, and the
    // types they set.
    let bad_profiles = |own: &dyn Fn(&PodContainer) -> &Option<String>,
                        pod: &dyn Fn(&PodContainer) -> &Option<String>|
     -> Option<(String, Vec<String>)> {
        let mut setters = Vec::new();
        let mut values = std::collections::BTreeSet::new();
        if let Some(t) = containers.first().and_then(|c| pod(c).as_deref()) {
            if !admitted_profile(t) {
                setters.push("pod".to_string());
                values.insert(t.to_string());
            }
        }
        let which = those(&|c| own(c).as_deref().is_some_and(|t| !admitted_profile(t)));
        values.extend(
            containers
                .iter()
                .filter_map(|c| own(c).clone())
                .filter(|t| !admitted_profile(t)),
        );
        if !which.is_empty() {
            setters.push(named(which));
        }
        (!setters.is_empty()).then(|| (setters.join(" and "), values.into_iter().collect()))
    };
    let mut violations = Vec::new();
    if let Some((setters, values)) = bad_profiles(&|c| &c.app_armor, &|c| &c.pod_app_armor) {
        let reason = if values.len() == 1 {
            "forbidden AppArmor profile"
        } else {
            "forbidden AppArmor profiles"
        };
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        violations.push(format!(
            "{reason} ({setters} must not set AppArmor profile type to {})",
            quoted(&values)
        ));
    }
    let privileged = those(&|c| c.privileged);
    if !privileged.is_empty() {
        violations.push(format!(
            "privileged ({} must not set securityContext.privileged=true)",
            named(privileged)
        ));
    }
    let bad_seccomp =
        bad_profiles(&|c| &c.seccomp, &|c| &c.pod_seccomp).map(|(setters, values)| {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            format!(
                "seccompProfile ({setters} must not set securityContext.seccompProfile.type to {})",
                quoted(&values)
            )
        });
    if level == PodSecurity::Baseline {
        violations.extend(bad_seccomp);
    } else {
        // (what, which containers fail it, what they must set, whether the pod may set it).
        type Rule<'a> = (&'a str, &'a dyn Fn(&PodContainer) -> bool, &'a str, bool);
        let rules: [Rule; 3] = [
            (
                "allowPrivilegeEscalation != false",
                &|c| !c.no_privilege_escalation,
                "securityContext.allowPrivilegeEscalation=false",
                false,
            ),
            (
                "unrestricted capabilities",
                &|c| !c.drops_all,
                "securityContext.capabilities.drop=[\"ALL\"]",
                false,
            ),
            (
                "runAsNonRoot != true",
                &|c| !c.run_as_non_root,
                "securityContext.runAsNonRoot=true",
                true,
            ),
        ];
        for (what, fails, must, pod_level) in rules {
            let which = those(fails);
            if !which.is_empty() {
                let subject = named(which);
                let subject = if pod_level {
                    format!("pod or {subject}")
                } else {
                    subject
                };
                violations.push(format!("{what} ({subject} must set {must})"));
            }
        }
        let pod_profile = containers
            .first()
            .and_then(|c| c.pod_seccomp.as_deref())
            .is_some_and(admitted_profile);
        let without = those(&|c| c.seccomp.is_none() && !pod_profile);
        if bad_seccomp.is_some() {
            violations.extend(bad_seccomp);
        } else if !without.is_empty() {
            violations.push(format!(
                "seccompProfile (pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")",
                named(without)
            ));
        }
    }
    if violations.is_empty() {
        return None;
    }
    Some(format!(
        "pods \"{replicaset}-\" is forbidden: violates PodSecurity \"{level_name}:latest\": {}",
        violations.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml_decode_and_unknown_kinds_do_not() {
        assert_eq!(
            decode(r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            decode("apiVersion: v1\nkind: Service\n---\napiVersion: apps/v1\nkind: Deployment\n")
                .unwrap()
                .len(),
            2
        );
        assert!(decode(r#"{"apiVersion":"apps/v1","kind":"Deploy"}"#)
            .unwrap_err()
            .starts_with("no kind \"Deploy\" is registered"));
    }

    #[test]
    fn short_images_fail_and_replicas_are_required() {
        let mf = |replicas: &str, image: &str| {
            format!(
                r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"d"}},"spec":{{{replicas}"template":{{"spec":{{"containers":[{{"name":"c","image":"{image}"}}]}}}}}}}}"#
            )
        };
        assert_eq!(
            pod_of(&mf("\"replicas\":1,", "docker:dind")).unwrap_err(),
            "parse \"https://docker:dind\": invalid port \":dind\" after host"
        );
        assert!(pod_of(&mf("", "docker.io/library/docker:dind")).is_err());
        let (name, containers) = pod_of(&mf("\"replicas\":1,", "localhost:5000/x")).unwrap();
        assert_eq!((name.as_str(), containers.len()), ("d", 1));
    }

    #[test]
    fn baseline_refuses_privileged_containers_only() {
        let dind = PodContainer {
            name: "dind".into(),
            privileged: true,
            ..Default::default()
        };
        let runner = PodContainer {
            name: "runner".into(),
            ..Default::default()
        };
        assert_eq!(
            admission(PodSecurity::Baseline, "rs", std::slice::from_ref(&runner)),
            None
        );
        assert_eq!(
            admission(PodSecurity::Baseline, "rs", &[runner.clone(), dind.clone()]).unwrap(),
            "pods \"rs-\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"dind\" must not set securityContext.privileged=true)"
        );
        let restricted = admission(PodSecurity::Restricted, "rs", &[runner, dind]).unwrap();
        assert!(
            restricted.contains("runAsNonRoot != true (pod or containers \"runner\", \"dind\" must set securityContext.runAsNonRoot=true)"),
            "{restricted}"
        );
    }

    #[test]
    fn unconfined_profiles_are_refused_from_baseline_on_and_named_alone_in_restricted() {
        let runner = PodContainer {
            name: "runner".into(),
            ..Default::default()
        };
        let buildkitd = PodContainer {
            name: "buildkitd".into(),
            seccomp: Some("Unconfined".into()),
            app_armor: Some("Unconfined".into()),
            ..Default::default()
        };
        let pod = [runner.clone(), buildkitd];
        assert_eq!(
            admission(PodSecurity::Baseline, "rs", &pod).unwrap(),
            "pods \"rs-\" is forbidden: violates PodSecurity \"baseline:latest\": forbidden AppArmor profile (container \"buildkitd\" must not set AppArmor profile type to \"Unconfined\"), seccompProfile (container \"buildkitd\" must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
        assert_eq!(
            admission(PodSecurity::Restricted, "rs", &pod).unwrap(),
            "pods \"rs-\" is forbidden: violates PodSecurity \"restricted:latest\": forbidden AppArmor profile (container \"buildkitd\" must not set AppArmor profile type to \"Unconfined\"), allowPrivilegeEscalation != false (containers \"runner\", \"buildkitd\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers \"runner\", \"buildkitd\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or containers \"runner\", \"buildkitd\" must set securityContext.runAsNonRoot=true), seccompProfile (container \"buildkitd\" must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
        // A pod-level profile is named as the pod's; RuntimeDefault passes.
        let pod_level = PodContainer {
            pod_seccomp: Some("Unconfined".into()),
            ..runner.clone()
        };
        assert_eq!(
            admission(PodSecurity::Baseline, "rs", &[pod_level]).unwrap(),
            "pods \"rs-\" is forbidden: violates PodSecurity \"baseline:latest\": seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")"
        );
        let confined = PodContainer {
            seccomp: Some("RuntimeDefault".into()),
            app_armor: Some("Localhost".into()),
            ..runner
        };
        assert_eq!(admission(PodSecurity::Baseline, "rs", &[confined]), None);
    }
}
