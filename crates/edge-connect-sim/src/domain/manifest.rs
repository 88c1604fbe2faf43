//! The `kubernetes-basic` manifest the controller generates for kubernetes Apps without one
//! (spec §7), and the DNS sanitising used for derived names.

use super::ports::PortSpec;
use crate::model::App;

pub(crate) use super::names::dns_sanitize;

/// Name of the generator recorded in `deployment_generator`.
pub(crate) const KUBERNETES_BASIC: &str = "kubernetes-basic";

/// Words of `command`, split on spaces with double quotes grouping words.
fn split_command(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in command.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
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
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}-deployment\nspec:\n  selector:\n    matchLabels:\n      run: {name}\n  replicas: 1\n  template:\n    metadata:\n      labels:\n        run: {name}\n        mexDeployGen: {KUBERNETES_BASIC}\n    spec:\n      volumes:\n      imagePullSecrets:\n      - name: {pull_secret}\n      containers:\n      - name: {name}\n        image: {image}\n        imagePullPolicy: Always\n",
        image = quote(&app.image_path)
    ));
    let command = split_command(&app.command);
    if !command.is_empty() {
        out.push_str("        command:\n");
        for word in &command {
            out.push_str(&format!("        - {}\n", quote(word)));
        }
    }
    if !app.command_args.is_empty() {
        out.push_str("        args:\n");
        for arg in &app.command_args {
            out.push_str(&format!("        - {}\n", quote(arg)));
        }
    }
    if !ports.is_empty() {
        out.push_str("        ports:\n");
        for p in ports {
            let proto = if p.proto == "udp" { "UDP" } else { "TCP" };
            out.push_str(&format!(
                "        - containerPort: {}\n          protocol: {proto}\n",
                p.port
            ));
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
