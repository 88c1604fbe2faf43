//! `check --deploy-test`: the commands' own CreateInstance and DeleteInstance (ownership
//! variables, placement, start watch, rollback and all) for a throw-away runner, once per
//! configured site, with timings or the same message a create would give.

use std::time::Instant;

use super::Report;
use crate::config::Placement;
use crate::garm::BootstrapInstance;
use crate::provider::{Operation, Provider};
use edge_connect::Secret;

/// The image deployed when `--image` is not given: small, public, and it stays up.
const DEFAULT_IMAGE: &str = "docker.io/library/nginx:1.27-alpine";

pub(super) async fn deploy_test(
    provider: &Provider,
    sites: &[Placement],
    image: Option<&str>,
    extra_specs: Option<&serde_json::Value>,
    report: &mut Report<'_>,
) {
    let image = image.unwrap_or(DEFAULT_IMAGE);
    for (i, site) in sites.iter().enumerate() {
        let what = format!("deploy test {site}");
        let name = format!("garm-check-{}-{i}", std::process::id());
        let bootstrap = throwaway(&name, image, site, extra_specs);
        let started = Instant::now();
        let created = provider.run(Operation::create(bootstrap, None, None)).await;
        let t_create = started.elapsed();
        if let Err(e) = created {
            // A failed create has rolled back (or says that it could not).
            report.fail(&what, e.to_string());
            continue;
        }
        let started = Instant::now();
        match provider
            .run(Operation::Delete {
                instance: name.clone(),
            })
            .await
        {
            Ok(_) => report.pass(
                &what,
                format!(
                    "{image} runs there (CreateInstance {} ms, DeleteInstance {} ms)",
                    t_create.as_millis(),
                    started.elapsed().as_millis()
                ),
            ),
            Err(e) => report.fail(
                &what,
                format!("{image} runs there, but DeleteInstance {name} failed: {e} — run `delete {name}` with this config"),
            ),
        }
    }
}

/// A bootstrap for a runner that registers nowhere, placed on `site` alone (the pool's other
/// extra specs kept).
fn throwaway(
    name: &str,
    image: &str,
    site: &Placement,
    extra_specs: Option<&serde_json::Value>,
) -> BootstrapInstance {
    let mut specs = match extra_specs {
        Some(serde_json::Value::Object(map)) => map.clone(),
        _ => serde_json::Map::new(),
    };
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
        pool_id: "garm-provider-edge-connect-check".to_string(),
        repo_url: "https://garm-check.invalid/none".to_string(),
        metadata_url: "https://garm-check.invalid/api/v1/metadata".to_string(),
        callback_url: "https://garm-check.invalid/api/v1/callbacks".to_string(),
        instance_token: Secret::new("not-a-token"),
        extra_specs: Some(serde_json::Value::Object(specs)),
        ..BootstrapInstance::default()
    }
}
