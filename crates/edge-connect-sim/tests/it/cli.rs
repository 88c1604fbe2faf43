//! The `edge-connect-sim` binary: first stdout line, address file, flags, signals, usage errors.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::support::Client;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_edge-connect-sim");

/// A running simulator process, killed when dropped.
struct Running {
    child: Child,
    url: String,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("binary starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("first line");
        Running {
            child,
            url: first.trim_end().to_string(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn prints_the_address_first_and_serves_the_configured_world() {
    let dir = tempfile::tempdir().unwrap();
    let state_dir = dir.path().to_str().unwrap();
    let sim = Running::start(&[
        "--listen",
        "127.0.0.1:0",
        "--state-dir",
        state_dir,
        "--api",
        "gen2",
        "--user",
        "ci:s3cret,other:pw",
        "--org",
        "acme,beta",
        "--region",
        "EU,US",
        "--flavor",
        "m4.small,m4.medium",
        "--cloudlet",
        "TDG/dusseldorf-main",
        "--zone",
        "TDG/dusseldorf-main",
        "--token-ttl",
        "60",
        "--create-delay",
        "0.05",
        "--latency-ms",
        "1",
        "--bad-auth-delay-ms",
        "1",
        "--faults",
    ]);
    assert!(sim.url.starts_with("http://127.0.0.1:"), "{}", sim.url);
    let address = std::fs::read_to_string(dir.path().join("address")).unwrap();
    assert_eq!(address.trim_end(), sim.url);

    let mut c = Client::anonymous(&sim.url);
    let login = c
        .raw_json(
            "/api/v1/login",
            &json!({"username": "ci", "password": "s3cret"}),
        )
        .await;
    assert_eq!(login.status, 200, "{}", login.body);
    c.token = Some(login.json()["token"].as_str().unwrap().to_string());
    let cloudlets = c.post("ShowCloudlet", json!({"region": "US"})).await.data();
    assert_eq!(
        cloudlets[0]["key"],
        json!({"organization": "TDG", "name": "dusseldorf-main"})
    );
    let flavors = c.post("ShowFlavor", json!({"region": "EU"})).await.data();
    assert_eq!(flavors.len(), 2);
    c.post("ShowZone", json!({"region": "EU"}))
        .await
        .assert_error(404, "Not Found");
    let state = c.control_get("state").await.json();
    assert_eq!(state["api"], "gen2");
    assert_eq!(state["token_ttl_secs"], 60.0);
    assert!(dir.path().join("requests.log").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn exits_cleanly_on_sigterm() {
    let mut sim = Running::start(&["--listen", "127.0.0.1:0"]);
    let c = Client::login(&sim.url).await;
    assert_eq!(c.post("ShowApp", json!({"region": "EU"})).await.status, 200);
    let pid = sim.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let exit = sim.child.wait().unwrap();
    assert_eq!(exit.code(), Some(0));
}

#[tokio::test]
async fn control_endpoints_need_the_faults_flag() {
    let sim = Running::start(&["--listen", "127.0.0.1:0"]);
    Client::anonymous(&sim.url)
        .control_get("state")
        .await
        .assert_error(404, "Not Found");
}

#[test]
fn help_documents_every_flag() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--listen",
        "--state-dir",
        "--api",
        "--user",
        "--org",
        "--region",
        "--flavor",
        "--cloudlet",
        "--zone",
        "--token-ttl",
        "--create-delay",
        "--latency-ms",
        "--bad-auth-delay-ms",
        "--unpullable-image",
        "--crashing-image",
        "--unschedulable-image",
        "--crm-max-wait",
        "--pod-security",
        "--faults",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn bad_flags_give_one_line_and_exit_2() {
    for args in [
        &["--bogus"][..],
        &["--api", "gen9"][..],
        &["--user", "nopassword"][..],
        &["--cloudlet", "noslash"][..],
        &["--create-delay", "soon"][..],
        &["--crm-max-wait", "-1"][..],
        &["--pod-security", "TelekomOP/Munich"][..],
        &["--pod-security", "TelekomOP/Munich=Baseline"][..],
        // A level for a site the simulator does not have would be silently without effect.
        &["--pod-security", "TelekomOP/Berlin=baseline"][..],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("edge-connect-sim: "), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}

#[tokio::test]
async fn image_flags_and_a_zone_named_unlike_its_cloudlet_work_from_the_command_line() {
    let sim = Running::start(&[
        "--zone",
        "TelekomOP/eu-south-1",
        "--cloudlet",
        "TelekomOP/Munich",
        "--unpullable-image",
        "ghcr.io/*",
        "--crm-max-wait",
        "0.3",
    ]);
    let c = Client::login(&sim.url).await;
    let cloudlets = c.post("ShowCloudlet", json!({"region": "EU"})).await.data();
    assert_eq!(cloudlets[0]["zone"], "eu-south-1");
    let app = crate::support::app(crate::support::ORG, "r1");
    c.post("CreateApp", crate::support::app_req(app)).await;
    let mut inst = crate::support::inst3(crate::support::ORG, "r1");
    inst["zone_key"]["name"] = json!("eu-south-1");
    let reply = c
        .post("CreateAppInst", crate::support::inst_req(inst))
        .await;
    let messages = reply.messages_without_pod_names();
    assert!(
        messages.contains(
            &"Status: pod POD: Pending (0/1), container r11: ImagePullBackOff".to_string()
        ),
        "{messages:?}"
    );
    assert_eq!(messages.last().unwrap(), "Created AppInst successfully");
    let shown = c.show_inst("r1").await.unwrap();
    assert_eq!(shown["cloudlet_key"]["name"], "Munich");
    assert_eq!(shown["state"], "Ready");
}

#[tokio::test]
async fn writes_a_ready_provider_config_for_itself() {
    let dir = tempfile::tempdir().unwrap();
    let trial = dir.path().join("trial");
    let sim = Running::start(&[
        "--api",
        "gen2",
        "--user",
        "ci:s3cret",
        "--write-provider-config",
        trial.to_str().unwrap(),
    ]);
    let config = std::fs::read_to_string(trial.join("provider.toml")).unwrap();
    assert!(
        config.contains(&format!("url = \"{}\"", sim.url)),
        "{config}"
    );
    // Gen2 places by cloudlet; the site, flavor and organization are the simulator's own.
    assert!(
        config.contains("[edge_connect.cloudlet]\norganization = \"TelekomOP\"\nname = \"Munich\""),
        "{config}"
    );
    assert!(config.contains("default_flavor = \"EU.small\""), "{config}");
    let credentials = std::fs::read_to_string(trial.join("credentials.toml")).unwrap();
    assert_eq!(credentials, "username = \"ci\"\npassword = \"s3cret\"\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&trial.join("credentials.toml")), 0o600);
    assert_eq!(mode(&trial), 0o700);
    // The credentials it wrote log in.
    Client::login_as(&sim.url, "ci", "s3cret").await;
}
