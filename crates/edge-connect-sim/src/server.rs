//! Layer 7, the top: starting and stopping a simulator, and the handles tests use to look inside it.

use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::SimConfig;
use crate::context::Shared;
use crate::faults::Fault;
use crate::handlers::seed::Seed;
use crate::reqlog::RequestLogEntry;
use crate::router;

/// Inspection and control of a running simulator; what [`SimServer`] and [`SimHandle`]
/// dereference to. Cheap to clone.
#[derive(Clone)]
pub struct SimControl {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

impl SimControl {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every stored App (all organizations) in Show form, but with the real
    /// `secret_env_vars` values, so tests can check what a runner would receive.
    pub fn apps(&self) -> Vec<Value> {
        self.shared.apps_json()
    }

    /// Every stored AppInst (all organizations) in the Show form of the running generation.
    pub fn app_insts(&self) -> Vec<Value> {
        self.shared.insts_json()
    }

    /// What the container of every stored AppInst would get on the site, as
    /// `{"organization", "name", "container": {"deployment", "image", "command", "args",
    /// "env"}}` (or `"error"` when the site could not start it): kubernetes command words and
    /// arguments as YAML reads them from the generated manifest, docker's command as one
    /// argument after the image, the environment after envVarsYaml or docker's env file.
    ///
    /// An App with its own manifest also has `"pod"`: each container of its Deployment with
    /// `name`, `image` and the `env` it gets (the App's environment on every container, under
    /// the container's own entries; docs/edge-connect-behaviours.md B27).
    pub fn containers(&self) -> Vec<Value> {
        self.shared.containers_json()
    }

    /// The API calls answered so far (not the `/__sim` ones), oldest first.
    pub fn request_log(&self) -> Vec<RequestLogEntry> {
        self.shared.log.entries()
    }

    /// Successful logins so far.
    pub fn logins(&self) -> usize {
        self.shared.tokens.logins()
    }

    /// Injects a fault (same as `POST /__sim/faults`).
    pub fn inject(&self, fault: Fault) {
        self.shared.inject(fault);
    }

    /// Faults still waiting (same as `GET /__sim/faults`): a fault is taken when its call
    /// arrives, so a test can tell that a call has reached the controller.
    pub fn pending_faults(&self) -> Vec<Fault> {
        self.shared.pending_faults()
    }

    /// Limits the AppInsts on a site (cloudlet or zone key): `None` = unlimited, `Some(0)` =
    /// full. A create on a full site is refused as the controller refuses a site without
    /// resources: Gen3 streams the placement lines and ends with the result `No resources
    /// available for deployment`; Gen2 answers HTTP 400 `Not enough resources available: …`
    /// (docs/edge-connect-behaviours.md B14).
    pub fn set_capacity(&self, site_org: &str, site_name: &str, max_app_insts: Option<usize>) {
        self.shared.set_capacity(site_org, site_name, max_app_insts);
    }

    /// Seeds Apps/AppInsts (same as `POST /__sim/seed`). A request that cannot be honoured
    /// (invalid prefix, no site configured) is logged and creates what it could.
    pub fn seed(&self, seed: Seed) {
        if let Err(e) = crate::handlers::seed::seed(&self.shared, &seed) {
            tracing::warn!("seed request not fully honoured: {e}");
        }
    }

    /// Back to a fresh simulator (same as `POST /__sim/reset`).
    pub fn reset(&self) {
        self.shared.reset();
    }
}

/// A simulator serving on the current tokio runtime (from [`serve`]). Dropping it stops
/// accepting connections, ends operations in flight and lets open replies finish.
pub struct SimServer {
    control: SimControl,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Deref for SimServer {
    type Target = SimControl;

    fn deref(&self) -> &SimControl {
        &self.control
    }
}

impl SimServer {
    /// Stops it as dropping it does, then waits up to `timeout` for open replies to finish
    /// and the listener to close.
    pub async fn shutdown_and_wait(mut self, timeout: Duration) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            if tokio::time::timeout(timeout, task).await.is_err() {
                tracing::debug!("simulator still draining connections after {timeout:?}");
            }
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Starts a simulator on the current tokio runtime, listening on `listen` (port 0 picks a
/// free port). Writes `<state_dir>/address` when a state directory is configured.
pub async fn serve(config: SimConfig, listen: SocketAddr) -> anyhow::Result<SimServer> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener
        .local_addr()
        .context("cannot read the bound address")?;
    if let Some(dir) = &config.state_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create state directory {}", dir.display()))?;
    }
    let (stop, stop_rx) = watch::channel(false);
    let shared = Arc::new(Shared::new(config, stop_rx.clone())?);
    let control = SimControl {
        shared: shared.clone(),
        addr,
    };
    if let Some(dir) = &shared.config.state_dir {
        let path = dir.join("address");
        std::fs::write(&path, format!("{}\n", control.url()))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let router = router::router(shared);
    let mut signal = stop_rx;
    let task = tokio::spawn(async move {
        let stopping = async move {
            let _ = signal.wait_for(|stop| *stop).await;
        };
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(stopping)
            .await
        {
            tracing::error!("simulator server failed: {e}");
        }
    });
    tracing::info!("edge connect simulator listening on {}", control.url());
    Ok(SimServer {
        control,
        stop,
        task: Some(task),
    })
}

/// A simulator on its own runtime (from [`spawn`]), usable from plain `#[test]` functions and
/// from async tests alike. Stops on [`SimHandle::shutdown`] or drop.
pub struct SimHandle {
    control: SimControl,
    server: Option<SimServer>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Deref for SimHandle {
    type Target = SimControl;

    fn deref(&self) -> &SimControl {
        &self.control
    }
}

impl SimHandle {
    /// Stops the simulator and its runtime, as dropping it does.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        // The server first: dropping it stops it.
        self.server.take();
        if let Some(runtime) = self.runtime.take() {
            // Never blocks, so dropping a handle inside an async test is fine.
            runtime.shutdown_background();
        }
    }
}

/// Starts a simulator on `127.0.0.1:0` with its own two-thread runtime.
pub fn spawn(config: SimConfig) -> anyhow::Result<SimHandle> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("edge-connect-sim")
        .enable_all()
        .build()
        .context("cannot start the simulator runtime")?;
    // `block_on` would panic inside an async test, so the server starts on the new runtime's
    // own workers and reports back over a plain channel.
    let (tx, rx) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let _ = tx.send(serve(config, listen).await);
    });
    let server = rx
        .recv()
        .context("the simulator runtime stopped before the server started")??;
    Ok(SimHandle {
        control: server.control.clone(),
        server: Some(server),
        runtime: Some(runtime),
    })
}
