//! The newcomer's path in the README: a simulator writes its own provider config and
//! credentials, and the CLI creates, lists and deletes a runner with them, unedited.

use std::path::Path;

use edge_connect_sim::{ApiGeneration, SimConfig};

use crate::support::{command, run, CONTROLLER};

fn cli(config: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = command();
    cmd.arg("--config")
        .arg(config)
        .args(["--controller-id", CONTROLLER])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    let r = run(cmd.args(args), None);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn the_files_the_simulator_writes_work_unedited_on_both_generations() {
    for api in [ApiGeneration::Gen3, ApiGeneration::Gen2] {
        let config = SimConfig {
            api,
            ..SimConfig::default()
        };
        let sim = edge_connect_sim::spawn(config.clone()).expect("simulator starts");
        let dir = tempfile::tempdir().expect("tempdir");
        let files =
            edge_connect_sim::write_trial_files(&dir.path().join("trial"), &sim.url(), &config)
                .expect("trial files");
        let (code, out, err) = cli(&files.config, &["check"]);
        assert_eq!(code, 0, "{api:?} check: {out}{err}");
        let (code, _, err) = cli(
            &files.config,
            &[
                "create",
                "--bootstrap",
                "examples/bootstrap-github-jit.json",
            ],
        );
        assert_eq!(code, 0, "{api:?} create: {err}");
        assert_eq!(sim.app_insts().len(), 1);
        let (code, out, err) = cli(&files.config, &["list", "--format", "json"]);
        assert_eq!(code, 0, "{api:?} list: {err}");
        let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let name = listed[0]["name"].as_str().expect("one runner").to_string();
        let (code, _, err) = cli(&files.config, &["delete", &name]);
        assert_eq!(code, 0, "{api:?} delete: {err}");
        assert!(sim.apps().is_empty() && sim.app_insts().is_empty());
    }
}
