//! The newcomer's path in the README: a simulator writes its own provider config and
//! credentials, and the CLI creates, lists and deletes a runner with them, unedited.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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

/// The `edge-connect-sim` binary, built as `cargo build` builds it: cargo hands a test the path
/// of its own package's binaries only, and `cargo test --test it` builds no other package's.
/// The same profile as this test's provider binary, found by cargo's own report of it.
fn simulator_binary() -> PathBuf {
    let profile = Path::new(crate::support::BIN)
        .parent()
        .and_then(Path::file_name)
        .and_then(|p| p.to_str())
        .map_or("dev", |p| if p == "debug" { "dev" } else { p });
    let out = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--offline", "--profile", profile])
        .args(["-p", "edge-connect-sim", "--bin", "edge-connect-sim"])
        .arg("--message-format=json")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo build of edge-connect-sim failed"
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["target"]["name"] == "edge-connect-sim")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the edge-connect-sim executable")
}

/// The simulator binary running in the background, stopped when dropped.
struct Simulator(Child);

impl Simulator {
    /// Starts it with `args` and waits for its first stdout line, its URL, which it prints
    /// once the files of `--write-provider-config` are written.
    fn start(args: &[&str]) -> Simulator {
        let mut child = Command::new(simulator_binary())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the simulator starts");
        let mut url = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut url)
            .expect("its first line");
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Simulator(child)
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// README, "A pool for container jobs and image builds": a site's Pod Security level is given
/// on the simulator's command line, and a person's deploy test of the `dind` example pool is
/// refused there by name, with nothing left; a pool without Docker still runs there.
#[test]
fn a_pod_security_level_on_the_simulators_command_line_refuses_the_dind_example_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trial = dir.path().join("trial");
    // --crm-max-wait scales the CRM's 10 s wait for the ReplicaSet's pod down to a tenth of it.
    let _sim = Simulator::start(&[
        "--write-provider-config",
        trial.to_str().expect("a UTF-8 path"),
        "--pod-security",
        "TelekomOP/Munich=baseline",
        "--crm-max-wait",
        "90",
    ]);
    let config = trial.join("provider.toml");
    let (code, out, err) = cli(
        &config,
        &[
            "check",
            "--extra-specs",
            "config/extra-specs.dind.example.json",
            "--deploy-test",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(r#"✗ deploy test zone TelekomOP/Munich: TelekomOP/Munich forbids privileged pods (Pod Security "baseline:latest": privileged (container "dind" must not set securityContext.privileged=true)): neither docker = "dind" nor docker = "buildkit" can run there; use docker = "none" for this site's pools, or another site"#),
        "{out}"
    );
    let mut list = command();
    list.arg("--config")
        .arg(&config)
        .args(["--controller-id", "garm-provider-edge-connect-check"])
        .args(["list", "--format", "json"]);
    let left = run(&mut list, None);
    assert_eq!(
        (left.code, left.stdout.trim()),
        (0, "[]"),
        "{}",
        left.stderr
    );
    let (code, out, err) = cli(&config, &["check", "--deploy-test"]);
    assert_eq!(code, 0, "{out}{err}");
}
