//! `demo`: a whole runner lifecycle against the built-in simulator, printed step by step.
//!
//! It starts the simulator on 127.0.0.1, writes a throw-away config and credentials file, and
//! runs create, list, get, stop, start, delete through the one pipeline GARM mode uses.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use crate::error::Error;
use crate::garm::BootstrapInstance;
use crate::provider::{Operation, Outcome, Provider};

/// One line of the demo's report on stdout. A closed stdout (`demo | head`) is not an error
/// worth a panic; the demo goes on and cleans up.
fn line(text: &str) {
    // stdout is line buffered: the line is flushed at its newline.
    let _ = writeln!(std::io::stdout(), "{text}");
}

const CONTROLLER_ID: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";
/// The pool of the example bootstrap.
const POOL_ID: &str = "9dcf590a-1192-4a9c-b3e4-e0902974c2c0";

/// Runs the demo; prints each step on stdout.
pub fn run() -> Result<(), Error> {
    // A fresh private directory, removed when it drops whether the demo succeeds or not:
    // nothing of it stays on the machine.
    let temporary = tempfile::Builder::new()
        .prefix("garm-edge-connect-demo-")
        .tempdir()
        .map_err(|e| Error::caused_by(format!("cannot create the demo's directory: {e}"), e))?;
    let dir = temporary.path();
    let sim_config = edge_connect_sim::SimConfig {
        create_delay: std::time::Duration::from_millis(600),
        ..Default::default()
    };
    let (user, password) = sim_config
        .users
        .first()
        .cloned()
        .ok_or_else(|| Error::failed("the simulator has no user"))?;
    let sim = edge_connect_sim::spawn(sim_config.clone())
        .map_err(|e| Error::failed(format!("cannot start the simulator: {e:#}")))?;
    let url = sim.url();
    line(&format!("▶ Edge Connect simulator listening on {url}"));
    let cannot_write = |e: std::io::Error| {
        Error::caused_by(format!("cannot write the demo's config files: {e}"), e)
    };
    let mut config =
        edge_connect_sim::ProviderConfig::for_sim(&url, &sim_config, dir).map_err(cannot_write)?;
    // Relative paths (resolved against the config's directory) keep the printed copy short;
    // no token cache: the demo logs in once and leaves nothing behind.
    config.credentials_file = "credentials.toml".into();
    config.log_file = Some("provider.log".into());
    config.log_level = "info";
    config.token_cache_dir = None;
    edge_connect_sim::write_credentials(&dir.join("credentials.toml"), &user, &password)
        .map_err(cannot_write)?;
    let config_path = dir.join("provider.toml");
    config.write(&config_path).map_err(cannot_write)?;
    // The files live in a temporary directory that is removed at the end: their paths would
    // only send the reader looking for something that is gone.
    line(&format!(
        "▶ provider config (a throw-away copy, removed when the demo ends):\n{}",
        indent(&config.to_toml())
    ));

    let (session, _log) = crate::pipeline::open(&config_path)?;
    // The example a person would pass to `create --bootstrap`: a GitHub JIT runner.
    let bootstrap =
        BootstrapInstance::from_slice(include_bytes!("../examples/bootstrap-github-jit.json"))?;
    let name = bootstrap.name.clone();
    let progress: crate::provider::Progress =
        Arc::new(move |m: &str| line(&format!("    … [{name}] {m}")));
    // The user's EDP_EDGE_CONNECT_* must not replace the simulator's credentials.
    let finished = crate::pipeline::run(
        session,
        CONTROLLER_ID,
        HashMap::new(),
        progress,
        Vec::new(),
        async |provider| lifecycle(provider, bootstrap).await,
    )?;
    line(&format!(
        "✓ demo finished: {} Edge Connect requests, {} login(s); the simulator is empty again",
        finished.requests, finished.logins
    ));
    Ok(())
}

/// The steps, each printed with its outcome.
async fn lifecycle(provider: &Provider, bootstrap: BootstrapInstance) -> Result<(), Error> {
    let name = bootstrap.name.clone();
    let id = || name.clone();
    let pool = || Some(POOL_ID.to_string());
    let steps = [
        ("CreateInstance", Operation::create(bootstrap, pool(), None)),
        ("ListInstances", Operation::List { pool_id: pool() }),
        ("GetInstance", Operation::Get { instance: id() }),
        (
            "StopInstance",
            Operation::Stop {
                instance: id(),
                wait: false,
            },
        ),
        ("GetInstance (stopped)", Operation::Get { instance: id() }),
        ("StartInstance", Operation::Start { instance: id() }),
        (
            "DeleteInstance",
            Operation::Delete {
                instance: id(),
                wait: false,
            },
        ),
        ("ListInstances (empty)", Operation::List { pool_id: pool() }),
    ];
    for (title, operation) in steps {
        step(provider, title, operation).await?;
    }
    Ok(())
}

async fn step(provider: &Provider, title: &str, operation: Operation) -> Result<(), Error> {
    let on = operation.instance().map(|i| format!(" {i}"));
    line(&format!("\n▶ {title}{}", on.unwrap_or_default()));
    let before = provider.client().requests();
    let outcome = provider.run(operation).await?;
    let calls = provider.client().requests() - before;
    let json = match outcome {
        Outcome::Instance(i) => serde_json::to_string_pretty(&i),
        Outcome::Instances(l) => serde_json::to_string_pretty(&l),
        Outcome::Done => Ok("done".to_string()),
    }
    .map_err(|e| Error::caused_by(format!("cannot encode the outcome: {e}"), e))?;
    line(&indent(&json));
    line(&format!("    ({calls} HTTP requests)"));
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
