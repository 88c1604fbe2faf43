//! The `kubernetes-basic` manifest the controller generates for kubernetes Apps without one
//! (docs/edge-connect-behaviours.md B5), and the DNS sanitising used for derived names.

use super::ports::PortSpec;
use super::yaml_word::{self, YamlWord};
use crate::model::App;

pub(crate) use super::names::dns_sanitize;

/// Name of the generator recorded in `deployment_generator`.
pub(crate) const KUBERNETES_BASIC: &str = "kubernetes-basic";

/// Words of `command` as the generator splits them: on spaces outside double quotes, the
/// quotes kept in the word, each word trimmed (main `pkg/deploygen/kube.go:204-215`).
pub(crate) fn split_command(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in command.chars() {
        if c == '"' {
            quoted = !quoted;
        }
        if c == ' ' && !quoted {
            if !current.trim().is_empty() {
                words.push(current.trim().to_string());
            }
            current.clear();
        } else {
            current.push(c);
        }
    }
    if !current.trim().is_empty() {
        words.push(current.trim().to_string());
    }
    words
}

/// `command_args` as the generator pastes them: trimmed (`kube.go:216-220`).
pub(crate) fn trimmed_args(args: &[String]) -> Vec<String> {
    args.iter().map(|a| a.trim().to_string()).collect()
}

/// How a pasted word reads back, for the checks of [`check_words`].
fn describe(word: &YamlWord) -> Option<String> {
    match word {
        YamlWord::NotAString(kind) => Some(format!(
            "cannot unmarshal {} into Go struct field of type string",
            match *kind {
                "a boolean" => "bool",
                "a number" => "number",
                "a sequence" => "array",
                _ => "object",
            }
        )),
        YamlWord::Invalid(msg) => Some(format!("yaml: {msg}")),
        YamlWord::Same | YamlWord::Changed(_) => None,
    }
}

/// CreateApp's parse of the generated manifest (main `pkg/controller/app_api.go:662-666`,
/// `pkg/cloudcommon/deployment.go:180-183`): a command word or argument that YAML does not
/// read as a string makes the manifest invalid. The outer text is the controller's; the
/// decoder's own detail (after `failed, `) is in its shape, not verbatim.
pub(crate) fn check_words(app: &App, manifest: &str) -> Result<(), String> {
    let words = split_command(&app.command)
        .into_iter()
        .map(|w| ("command", w))
        .chain(
            trimmed_args(&app.command_args)
                .into_iter()
                .map(|a| ("args", a)),
        );
    for (field, word) in words {
        if let Some(detail) = describe(&yaml_word::read(&word)) {
            return Err(format!(
                "Invalid deployment manifest, {manifest}, parse kubernetes deployment yaml failed, {detail} (containers.{field}: {word})"
            ));
        }
    }
    Ok(())
}

/// The generated manifest: a Service per protocol family with ports, then the Deployment.
pub(crate) fn generate(app: &App, ports: &[PortSpec]) -> String {
    let name = dns_sanitize(&format!("{}{}", app.key.name, app.key.version));
    let mut out = String::new();
    for (family, protos) in [("tcp", &["tcp", "http"][..]), ("udp", &["udp"][..])] {
        let family_ports: Vec<&PortSpec> = ports
            .iter()
            .filter(|p| protos.contains(&p.proto.as_str()))
            .collect();
        if family_ports.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}-{family}\n  labels:\n    run: {name}\nspec:\n  type: LoadBalancer\n  ports:\n"
        ));
        for p in family_ports {
            out.push_str(&format!(
                "  - name: {family}{port}\n    protocol: {proto}\n    port: {port}\n    targetPort: {port}\n",
                port = p.port,
                proto = family.to_ascii_uppercase()
            ));
        }
        out.push_str(&format!("  selector:\n    run: {name}\n---\n"));
    }
    let pull_secret = app.image_path.split('/').next().unwrap_or_default();
    out.push_str(&format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}-deployment\nspec:\n  selector:\n    matchLabels:\n      run: {name}\n  replicas: 1\n  template:\n    metadata:\n      labels:\n        run: {name}\n        mexDeployGen: {KUBERNETES_BASIC}\n    spec:\n      volumes:\n      imagePullSecrets:\n      - name: {pull_secret}\n      containers:\n      - name: {name}\n        image: {image}\n        imagePullPolicy: Always\n        ports:\n",
        image = app.image_path
    ));
    for p in ports {
        let proto = if p.proto == "udp" { "UDP" } else { "TCP" };
        out.push_str(&format!(
            "        - containerPort: {}\n          protocol: {proto}\n",
            p.port
        ));
    }
    // Pasted unquoted, as the real template does (`kube.go:299-309`).
    let command = split_command(&app.command);
    if !command.is_empty() {
        out.push_str("        command:\n");
        for word in &command {
            out.push_str(&format!("        - {word}\n"));
        }
    }
    if !app.command_args.is_empty() {
        out.push_str("        args:\n");
        for arg in trimmed_args(&app.command_args) {
            out.push_str(&format!("        - {arg}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AppKey;

    #[test]
    fn generates_a_deployment() {
        let app = App {
            key: AppKey {
                organization: "acme".into(),
                name: "r1".into(),
                version: "1".into(),
            },
            image_path: "ghcr.io/actions/actions-runner:2.321.0".into(),
            command: "/home/runner/run.sh \"--once now\"".into(),
            ..App::default()
        };
        let ports = crate::domain::ports::parse("tcp:8080").unwrap();
        let m = generate(&app, &ports);
        assert!(m.contains("name: r11-deployment"), "{m}");
        assert!(m.contains("kind: Service"), "{m}");
        assert!(m.contains("- \"--once now\""), "{m}");
        assert!(m.contains("imagePullPolicy: Always"), "{m}");
    }
}
