//! The Helm chart (deploy/helm/garm-provider-edge-connect), proven by Helm itself:
//! deploy/helm/check_chart.py lints and renders it with Helm 4's own engine for the default
//! values and every example, checks each rendered object against the Kubernetes schema of its
//! kind, has this build's provider load and validate the rendered provider config, checks that
//! the values schema refuses bad values, and compares the objects with deploy/kubernetes/ (the
//! kustomize kit) where the two overlap (docs/packaging.md, "The Helm chart").

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "needs helm-python-sdk, kubernetes-validate (bash .ci/helm-tools.sh), python3 >= 3.11 and kubectl; .ci/run installs them"]
fn helm_chart_lints_renders_valid_objects_and_a_config_the_provider_accepts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tools = root.join("target/ci-tools/helm-py");
    let mut python_path = tools.into_os_string();
    if let Some(existing) = std::env::var_os("PYTHONPATH") {
        python_path.push(":");
        python_path.push(existing);
    }
    let out = Command::new("python3")
        .arg(root.join("deploy/helm/check_chart.py"))
        .arg(crate::support::BIN)
        .env("PYTHONPATH", python_path)
        .output()
        .expect("python3 is needed to run deploy/helm/check_chart.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        out.status.success() && summary.ends_with(" passed, 0 failed"),
        "deploy/helm/check_chart.py failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Lint, schema and render for the defaults and each example, and every object of each.
    let passes = stdout.lines().filter(|l| l.starts_with("PASS ")).count();
    assert!(passes >= 60, "only {passes} checks ran:\n{stdout}");
}
