//! `check --deploy-test`: a throw-away App and AppInst, created and deleted, with timings.

use std::time::Instant;

use super::{CheckOptions, Report};
use crate::config::Config;
use edge_connect::{ApiError, ApiGeneration, Client};

pub(super) async fn deploy_test(
    config: &Config,
    client: &Client,
    options: &CheckOptions,
    report: &mut Report<'_>,
) {
    use edge_connect::models::{AppKey, FlavorKey, NewApp};
    let ec = &config.edge_connect;
    let Some(flavor) = ec.default_flavor.clone() else {
        report.fail("deploy test", "needs edge_connect.default_flavor");
        return;
    };
    let image = options
        .image
        .clone()
        .unwrap_or_else(|| "docker.io/library/busybox:1.36".to_string());
    let name = format!("garm-check-{}", std::process::id());
    let key = AppKey {
        organization: ec.organization.clone(),
        name: name.clone(),
        version: ec.app_version.clone(),
    };
    let app = NewApp {
        key: key.clone(),
        image_type: "Docker",
        image_path: image,
        deployment: ec.deployment.as_str(),
        default_flavor: FlavorKey { name: flavor },
        command: None,
        command_args: Vec::new(),
        configs: Vec::new(),
        env_vars: Default::default(),
        secret_env_vars: Default::default(),
        username: None,
        credentials: None,
    };
    let t0 = Instant::now();
    if let Err(e) = client.create_app(&app).await {
        report.fail("deploy test", format!("CreateApp: {e}"));
        return;
    }
    let t_app = t0.elapsed();
    let cloudlets = match client.show_cloudlets().await {
        Ok(c) => c,
        Err(e) => {
            report.fail("deploy test", format!("ShowCloudlet: {e}"));
            let _ = client.delete_app(&key).await;
            return;
        }
    };
    let generation = client.facts().generation.unwrap_or(ApiGeneration::Gen3);
    let target =
        match crate::provider::placement::target(&config.placement(), generation, &cloudlets) {
            Ok(t) => t,
            Err(why) => {
                report.fail("deploy test", why);
                let _ = client.delete_app(&key).await;
                return;
            }
        };
    let request =
        crate::provider::placement::new_app_inst(&name, &ec.organization, key.clone(), &target);
    let mut ignore = |_: &str| {};
    let created = client.create_app_inst(&request, &mut ignore).await;
    let t_inst = t0.elapsed() - t_app;
    let t1 = Instant::now();
    let deleted_inst: Result<(), ApiError> = if created.is_ok() {
        client
            .delete_app_inst(&request.key, &mut ignore)
            .await
            .map(|_| ())
    } else {
        Ok(())
    };
    let deleted_app = client.delete_app(&key).await;
    let t_delete = t1.elapsed();
    match (created, deleted_inst, deleted_app) {
        (Ok(_), Ok(()), Ok(())) => report.pass(
            "deploy test",
            format!(
                "CreateApp {} ms, CreateAppInst {} ms, delete both {} ms",
                t_app.as_millis(),
                t_inst.as_millis(),
                t_delete.as_millis()
            ),
        ),
        (Err(e), _, _) => report.fail(
            "deploy test",
            format!("CreateAppInst: {e} (the test App was removed)"),
        ),
        (_, Err(e), _) | (_, _, Err(e)) => report.fail(
            "deploy test",
            format!("cleanup of {name} failed: {e} — delete it by hand"),
        ),
    }
}
