//! `check --deploy-test`: the commands' own CreateInstance and DeleteInstance (ownership
//! variables, placement, start watch, rollback and all) for a throw-away runner, once per
//! configured site, with timings or the same message a create would give. The runners belong
//! to the deploy test's own controller id ([`super::CHECK_CONTROLLER`]), so that what one check
//! leaves, killed or failing, the next one finds and removes before it deploys; a cleanup the
//! create could not finish is the check's own DeleteInstance to do, and it waits for it.

use std::time::Instant;

use super::leftovers::{self, Which};
use super::Report;
use crate::config::Placement;
use crate::error::Error;
use crate::garm::BootstrapInstance;
use crate::provider::{Operation, Provider};

/// The image deployed when `--image` is not given: small, public, and it stays up.
const DEFAULT_IMAGE: &str = "docker.io/library/nginx:1.27-alpine";

/// How what is left will be removed: by the next deploy test, or now by `remove_all` (the
/// command line that removes every runner of the deploy test).
fn how(remove_all: &str) -> String {
    format!("the next `check --deploy-test` with this config removes it, or now: {remove_all}")
}

/// What stays of the deploy test's runners (`runners`), and how it will be removed.
fn left(remove_all: &str, runners: &[String]) -> String {
    let runners = runners.join("; ");
    format!("left on Edge Connect: {runners}; {}", how(remove_all))
}

/// The deploy test on each of `sites`; when SIGINT, SIGTERM or SIGHUP stops it, its runners are
/// removed and [`Error::Interrupted`] returned.
pub(super) async fn deploy_test(
    provider: &Provider,
    sites: &[Placement],
    image: Option<&str>,
    extra_specs: Option<&serde_json::Value>,
    remove_all: &str,
    report: &mut Report,
) -> Result<(), Error> {
    let mut signals = leftovers::StopSignals::watch();
    let test = async {
        // What earlier checks left (one that was killed too), before anything new is made.
        let earlier = leftovers::remove(&provider.anew(), Which::All).await;
        if !earlier.removed.is_empty() {
            report.pass(
                "earlier deploy tests",
                format!("removed what they left: {}", earlier.removed.join(", ")),
            );
        }
        if !earlier.left.is_empty() {
            report.fail("earlier deploy tests", left(remove_all, &earlier.left));
        }
        let image = image.unwrap_or(DEFAULT_IMAGE);
        for (i, site) in sites.iter().enumerate() {
            let what = format!("deploy test {site}");
            let name = format!("garm-check-{}-{i}", std::process::id());
            let bootstrap = throwaway(&name, image, site, extra_specs);
            let started = Instant::now();
            let created = provider.run(Operation::create(bootstrap, None, None)).await;
            let t_create = started.elapsed();
            if let Err(e) = created {
                // A failed create has rolled back, or left the rest to DeleteInstance: this one.
                report.fail(&what, e.to_string());
                finish(provider, &name, remove_all, report).await;
                continue;
            }
            let started = Instant::now();
            let delete = Operation::Delete {
                instance: name.clone(),
                wait: false,
            };
            match provider.run(delete).await {
                Ok(_) => report.pass(
                    &what,
                    format!(
                        "{image} runs there (CreateInstance {} ms, DeleteInstance {} ms)",
                        t_create.as_millis(),
                        started.elapsed().as_millis()
                    ),
                ),
                Err(e) => {
                    report.fail(
                        &what,
                        format!("{image} runs there, but DeleteInstance {name} failed: {e}"),
                    );
                    finish(provider, &name, remove_all, report).await;
                }
            }
        }
    };
    tokio::select! {
        () = test => Ok(()),
        signal = signals.next() => {
            Err(interrupted(provider, signal, &mut signals, remove_all, report).await)
        }
    }
}

/// After a failed create or delete: removes what is left of `name`, waiting while the platform
/// holds it busy, and reports what it removed or what stays and how it will go.
async fn finish(provider: &Provider, name: &str, remove_all: &str, report: &mut Report) {
    let started = Instant::now();
    let done = leftovers::remove(&provider.anew(), Which::Named(name)).await;
    let what = format!("cleanup {name}");
    if !done.removed.is_empty() {
        let secs = started.elapsed().as_secs();
        report.pass(
            &what,
            format!("removed by the check's DeleteInstance after {secs} s"),
        );
    }
    if !done.left.is_empty() {
        report.fail(&what, left(remove_all, &done.left));
    }
}

/// The deploy test was stopped by `signal`: removes its runners within the cleanup grace
/// ([`Provider::for_cleanup`]; the same signal again stops at once), reports what stays, and returns the error to end with.
async fn interrupted(
    provider: &Provider,
    signal: &str,
    signals: &mut leftovers::StopSignals,
    remove_all: &str,
    report: &mut Report,
) -> Error {
    let provider = provider.for_cleanup();
    provider.report(&format!(
        "interrupted by {signal}: removing the deploy test's runners (within {}; {signal} again stops at once)",
        provider.bound()
    ));
    let removal = tokio::select! {
        done = leftovers::remove(&provider, Which::All) => Some(done),
        _ = signals.next() => None,
    };
    let detail = match removal {
        Some(done) if done.left.is_empty() => {
            format!("interrupted by {signal}; nothing of it was left on Edge Connect")
        }
        Some(done) => format!("interrupted by {signal}; {}", left(remove_all, &done.left)),
        None => format!(
            "interrupted by {signal}, then stopped at once: what it made may be left; {}",
            how(remove_all)
        ),
    };
    report.fail("deploy test", detail);
    Error::Interrupted(format!("interrupted by {signal}"))
}

/// A bootstrap for a runner that registers nowhere, placed on `site` alone (the pool's other
/// extra specs kept).
fn throwaway(
    name: &str,
    image: &str,
    site: &Placement,
    extra_specs: Option<&serde_json::Value>,
) -> BootstrapInstance {
    let as_object = extra_specs.and_then(serde_json::Value::as_object);
    let mut specs = as_object.cloned().unwrap_or_default();
    specs.remove("zones");
    specs.remove("cloudlets");
    let (key, only) = match site {
        Placement::Zone(k) => ("zones", k),
        Placement::Cloudlet(k) => ("cloudlets", k),
    };
    specs.insert(key.to_string(), serde_json::json!([only]));
    BootstrapInstance {
        name: name.to_string(),
        image: image.to_string(),
        os_type: "linux".to_string(),
        arch: "amd64".to_string(),
        pool_id: super::CHECK_CONTROLLER.to_string(),
        repo_url: "https://garm-check.invalid/none".to_string(),
        metadata_url: "https://garm-check.invalid/api/v1/metadata".to_string(),
        callback_url: "https://garm-check.invalid/api/v1/callbacks".to_string(),
        instance_token: edge_connect::Secret::new("not-a-token"),
        extra_specs: Some(serde_json::Value::Object(specs)),
        ..BootstrapInstance::default()
    }
}
