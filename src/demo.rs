//! `demo`: a whole runner lifecycle against the built-in simulator, printed step by step.
//!
//! It starts the simulator on 127.0.0.1, writes a throw-away config and credentials file, and
//! drives the same provider code GARM mode uses: create, list, get, stop, start, delete.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::Config;
use crate::error::Error;
use crate::garm::BootstrapInstance;
use crate::provider::{Operation, Outcome, Provider};

/// One line of the demo's report on stdout. A closed stdout (`demo | head`) is not an error
/// worth a panic; the demo goes on and cleans up.
fn line(text: &str) {
    let _ = crate::front::write_stdout(&format!("{text}\n"));
}

const CONTROLLER_ID: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";
const POOL_ID: &str = "9dcf590a-1192-4a9c-b3e4-e0902974c2c0";

/// Runs the demo; prints each step on stdout.
pub fn run() -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(lifecycle())
}

async fn lifecycle() -> Result<(), Error> {
    let dir = tempdir()?;
    // Removed whether the demo succeeds or not: nothing of it stays on the machine.
    let result = lifecycle_in(&dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn lifecycle_in(dir: &std::path::Path) -> Result<(), Error> {
    let sim_config = edge_connect_sim::SimConfig {
        create_delay: std::time::Duration::from_millis(600),
        ..Default::default()
    };
    let (user, password) = sim_config
        .users
        .first()
        .cloned()
        .ok_or_else(|| Error::Other("the simulator has no user".into()))?;
    let org = sim_config.orgs.first().cloned().unwrap_or_default();
    let (zone_org, zone) = sim_config.zones.first().cloned().unwrap_or_default();
    let flavor = sim_config.flavors.first().cloned().unwrap_or_default();
    let listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let sim = edge_connect_sim::serve(sim_config, listen)
        .await
        .map_err(|e| Error::Other(format!("cannot start the simulator: {e}")))?;
    line(&format!(
        "▶ Edge Connect simulator listening on {}",
        sim.url()
    ));

    let creds = dir.join("credentials.toml");
    write_private(
        &creds,
        &format!("username = {user:?}\npassword = {password:?}\n"),
    )?;
    let config_path = dir.join("provider.toml");
    let config_text = format!(
        r#"log_file = "provider.log"
credentials_file = "credentials.toml"
token_cache = false

[edge_connect]
organization = {org:?}
region = "EU"
url = {url:?}
default_flavor = {flavor:?}

[edge_connect.zone]
organization = {zone_org:?}
name = {zone:?}
"#,
        url = sim.url(),
    );
    std::fs::write(&config_path, &config_text)
        .map_err(|e| Error::Other(format!("cannot write the demo config: {e}")))?;
    // The files live in a temporary directory that is removed at the end: their paths would
    // only send the reader looking for something that is gone.
    line(&format!(
        "▶ provider config (a throw-away copy, removed when the demo ends):\n{}",
        indent(&config_text)
    ));

    let config = Config::load(&config_path)?;
    let bootstrap = BootstrapInstance::from_slice(DEMO_BOOTSTRAP.as_bytes())?;
    let name = bootstrap.name.clone();
    let progress_name = name.clone();
    let progress: crate::provider::Progress =
        Arc::new(move |m: &str| line(&format!("    … [{progress_name}] {m}")));
    let provider = crate::pipeline::provider(config, CONTROLLER_ID, HashMap::new(), progress)?
        .with_poll_interval(std::time::Duration::from_millis(200));

    step(
        &provider,
        "CreateInstance",
        Operation::Create {
            bootstrap: Box::new(bootstrap),
            pool_id: POOL_ID.to_string(),
            extra_specs: None,
        },
    )
    .await?;
    step(
        &provider,
        "ListInstances",
        Operation::List {
            pool_id: POOL_ID.to_string(),
        },
    )
    .await?;
    step(
        &provider,
        "GetInstance",
        Operation::Get {
            instance: name.clone(),
        },
    )
    .await?;
    step(
        &provider,
        "StopInstance",
        Operation::Stop {
            instance: name.clone(),
        },
    )
    .await?;
    step(
        &provider,
        "GetInstance (stopped)",
        Operation::Get {
            instance: name.clone(),
        },
    )
    .await?;
    step(
        &provider,
        "StartInstance",
        Operation::Start {
            instance: name.clone(),
        },
    )
    .await?;
    step(
        &provider,
        "DeleteInstance",
        Operation::Delete {
            instance: name.clone(),
        },
    )
    .await?;
    step(
        &provider,
        "ListInstances (empty)",
        Operation::List {
            pool_id: POOL_ID.to_string(),
        },
    )
    .await?;
    line(&format!(
        "✓ demo finished: {} Edge Connect requests, {} login(s); the simulator is empty again",
        provider.client().requests(),
        provider.client().logins()
    ));
    Ok(())
}

async fn step(provider: &Provider, title: &str, operation: Operation) -> Result<(), Error> {
    match operation.instance() {
        Some(instance) => line(&format!("\n▶ {title} {instance}")),
        None => line(&format!("\n▶ {title}")),
    }
    let before = provider.client().requests();
    let outcome = provider.run(operation).await?;
    let calls = provider.client().requests() - before;
    match outcome {
        Outcome::Instance(i) => line(&indent(
            &serde_json::to_string_pretty(&i).unwrap_or_default(),
        )),
        Outcome::Instances(l) => line(&indent(
            &serde_json::to_string_pretty(&l).unwrap_or_default(),
        )),
        Outcome::Done => line("    done"),
    }
    line(&format!("    ({calls} HTTP requests)"));
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn tempdir() -> Result<std::path::PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!("garm-edge-connect-demo-{}", std::process::id()));
    // A fresh private directory: refuse one that already exists (it could be someone else's).
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(&dir)
        .map_err(|e| Error::Other(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), Error> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    options
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| Error::Other(format!("cannot write {}: {e}", path.display())))
}

/// A GitHub JIT bootstrap as GARM sends it (token payload carries `forge_type: github`).
const DEMO_BOOTSTRAP: &str = r#"{
  "name": "garm-demo0runner1",
  "tools": [{"os": "linux", "architecture": "x64", "download_url": "https://github.com/actions/runner/releases/download/v2.330.0/actions-runner-linux-x64-2.330.0.tar.gz", "filename": "actions-runner-linux-x64-2.330.0.tar.gz"}],
  "repo_url": "https://github.com/example-org",
  "callback-url": "https://garm.example.com/api/v1/callbacks",
  "metadata-url": "https://garm.example.com/api/v1/metadata",
  "instance-token": "eyJhbGciOiJIUzI1NiJ9.eyJmb3JnZV90eXBlIjoiZ2l0aHViIn0.c2lnbmF0dXJl",
  "ssh-keys": null,
  "github-runner-group": "",
  "ca-cert-bundle": null,
  "arch": "amd64",
  "os_type": "linux",
  "flavor": "default",
  "image": "ghcr.io/actions/actions-runner:2.330.0",
  "labels": null,
  "pool_id": "9dcf590a-1192-4a9c-b3e4-e0902974c2c0",
  "jit_config_enabled": true
}"#;
