//! `check`: verifies, step by step, that a config will work before the first runner fails.
//!
//! Each step prints one `✓` or `✗` line; a failed step that later steps depend on stops the run.
//! Nothing is created on Edge Connect unless `--deploy-test` is given.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use crate::config::{Config, Placement};
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::provider::placement::Target;
use edge_connect::{ApiError, ApiErrorKind, ApiGeneration, Client};

/// What to check besides the config itself.
#[derive(Debug, Default)]
pub struct CheckOptions {
    /// A pool's extra specs (flavor and sites are checked too).
    pub extra_specs: Option<serde_json::Value>,
    /// A runner image to check for form (and to deploy with `deploy_test`).
    pub image: Option<String>,
    /// Create and delete a throw-away App + AppInst, reporting the timings.
    pub deploy_test: bool,
}

/// The outcome of one step.
struct Step {
    ok: bool,
    line: String,
}

/// Collects step lines and prints them as they come.
struct Report<'a> {
    out: &'a mut dyn std::io::Write,
    failed: usize,
}

impl Report<'_> {
    fn pass(&mut self, what: &str, detail: impl AsRef<str>) {
        let _ = writeln!(self.out, "✓ {what}: {}", detail.as_ref());
    }

    fn fail(&mut self, what: &str, detail: impl AsRef<str>) {
        self.failed += 1;
        let _ = writeln!(self.out, "✗ {what}: {}", detail.as_ref());
    }

    fn step(&mut self, what: &str, step: Step) -> bool {
        if step.ok {
            self.pass(what, step.line);
        } else {
            self.fail(what, step.line);
        }
        step.ok
    }
}

/// Runs every check and returns the number of failed steps (0: all good).
pub fn run(
    config_path: &Path,
    options: &CheckOptions,
    environment: &HashMap<String, String>,
    out: &mut dyn std::io::Write,
) -> usize {
    let mut report = Report { out, failed: 0 };
    let config = match Config::load(config_path) {
        Ok(c) => {
            report.pass(
                "config",
                format!("{} parses and validates", config_path.display()),
            );
            c
        }
        Err(e) => {
            report.fail("config", e.to_string());
            return report.failed;
        }
    };
    let credentials = match config.credentials(environment) {
        Ok(c) => {
            let source = if environment.contains_key(crate::config::ENV_USERNAME) {
                "from the environment"
            } else {
                "from credentials_file"
            };
            report.pass("credentials", format!("user {} {source}", c.username));
            c
        }
        Err(e) => {
            report.fail("credentials", e.to_string());
            return report.failed;
        }
    };
    let specs = match ExtraSpecs::from_value(options.extra_specs.as_ref()) {
        Ok(s) => {
            if options.extra_specs.is_some() {
                report.pass("extra specs", "valid");
            }
            s
        }
        Err(e) => {
            report.fail("extra specs", e.to_string());
            ExtraSpecs::default()
        }
    };
    if let Some(image) = &options.image {
        report.step("image", check_image(image));
    }
    let client = match Client::new(&config.edge_connect.client_options(), credentials) {
        Ok(c) => c,
        Err(e) => {
            report.fail("client", e.to_string());
            return report.failed;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            report.fail("runtime", e.to_string());
            return report.failed;
        }
    };
    runtime.block_on(remote_checks(
        &config,
        &client,
        &specs,
        options,
        &mut report,
    ));
    report.failed
}

async fn remote_checks(
    config: &Config,
    client: &Client,
    specs: &ExtraSpecs,
    options: &CheckOptions,
    report: &mut Report<'_>,
) {
    let ec = &config.edge_connect;
    let started = Instant::now();
    // Only https can be said to have valid TLS; plain http is allowed for loopback (and with
    // allow_http), and the line says so.
    let transport = if ec.url.starts_with("https://") {
        "TLS valid"
    } else {
        "plain http, no TLS"
    };
    match client.login().await {
        Ok(_) => report.pass(
            "login",
            format!(
                "{} reachable, {transport}, logged in ({} ms)",
                ec.url,
                started.elapsed().as_millis()
            ),
        ),
        Err(e) if matches!(e.kind, ApiErrorKind::Transport | ApiErrorKind::Tls) => {
            report.fail("reach", format!("{}: {} — check edge_connect.url, the network path and (for TLS errors) edge_connect.ca_bundle", ec.url, e.message));
            return;
        }
        Err(e) => {
            report.fail("login", e.to_string());
            return;
        }
    }
    let flavors = match client.show_flavors().await {
        Ok(f) => {
            report.pass(
                "region",
                format!("{} known ({} flavors)", ec.region, f.len()),
            );
            f.iter()
                .map(|f| f.flavor_name().to_string())
                .collect::<Vec<_>>()
        }
        Err(e) if e.missing() == Some(edge_connect::Subject::Region) => {
            report.fail(
                "region",
                format!("{} — check edge_connect.region", e.message),
            );
            return;
        }
        Err(e) => {
            report.fail("region", e.to_string());
            return;
        }
    };
    // Show omits what the user may not see, so "0 Apps" proves nothing. A delete needs
    // membership: the MC checks it before the controller looks at the key (403 for
    // non-members), and a name that breaks the key rule cannot exist, so nothing is deleted.
    let probe = edge_connect::models::AppKey {
        organization: ec.organization.clone(),
        name: "-garm-provider-membership-probe".to_string(),
        version: ec.app_version.clone(),
    };
    match client.delete_app(&probe).await {
        Err(e) if e.kind == ApiErrorKind::Forbidden => {
            report.fail(
                "organization",
                format!(
                    "{}: the user may not manage Apps there (HTTP 403) — check edge_connect.organization and the user's role in it",
                    ec.organization
                ),
            );
            return;
        }
        Err(e) if matches!(e.kind, ApiErrorKind::NotFound | ApiErrorKind::Rejected) => report.pass(
            "organization",
            format!("{}: the user may manage Apps there", ec.organization),
        ),
        Ok(()) => report.pass(
            "organization",
            format!("{}: the user may manage Apps there", ec.organization),
        ),
        Err(e) => {
            report.fail("organization", e.to_string());
            return;
        }
    }
    let generation = match client.api_generation().await {
        Ok(g) => {
            report.pass("API generation", g.to_string());
            g
        }
        Err(e) => {
            report.fail("API generation", e.to_string());
            return;
        }
    };
    let zones = match generation {
        ApiGeneration::Gen3 => match client.show_zones().await {
            Ok(z) => Some(z),
            Err(e) => {
                report.fail("zones", e.to_string());
                None
            }
        },
        ApiGeneration::Gen2 => None,
    };
    let sites = crate::provider::placement::candidates(config, specs, "check");
    let cloudlets = if sites.iter().any(|s| matches!(s, Placement::Cloudlet(_))) {
        match client.show_cloudlets().await {
            Ok(c) => Some(c),
            Err(e) => {
                report.fail("cloudlets", e.to_string());
                None
            }
        }
    } else {
        None
    };
    let wanted_flavors: Vec<String> = specs
        .flavor
        .iter()
        .chain(ec.default_flavor.iter())
        .cloned()
        .collect();
    for site in &sites {
        let (list, kind) = match site {
            Placement::Zone(_) => (zones.as_ref(), "zones"),
            Placement::Cloudlet(_) => (cloudlets.as_ref(), "cloudlets"),
        };
        let key = match site {
            Placement::Zone(k) | Placement::Cloudlet(k) => k,
        };
        let Some(list) = list else {
            if matches!(site, Placement::Zone(_)) {
                report.fail(
                    &site.to_string(),
                    "this server has no zones (Gen2): configure [edge_connect.cloudlet] instead",
                );
            }
            continue;
        };
        let exists = list
            .iter()
            .any(|s| s.key.organization == key.organization && s.key.name == key.name);
        if !exists {
            let names: Vec<String> = list
                .iter()
                .map(|s| format!("{}/{}", s.key.organization, s.key.name))
                .collect();
            report.fail(
                &site.to_string(),
                format!("not found; {kind} here: {}", names.join(", ")),
            );
            continue;
        }
        let cloudlet_list = cloudlets.as_deref().unwrap_or_default();
        match crate::provider::placement::target(site, generation, cloudlet_list) {
            Ok(target) => {
                let how = match (site, &target) {
                    (Placement::Cloudlet(_), Target::Zone(_)) => format!(
                        "exists; addressed as {target} (Gen3 places through zones; the controller picks a cloudlet in that zone)"
                    ),
                    _ => format!("exists; addressed as {target}"),
                };
                report.pass(&site.to_string(), how);
            }
            Err(why) => {
                report.fail(&site.to_string(), why);
                continue;
            }
        }
        let available = match site {
            Placement::Zone(z) => {
                let zone = edge_connect::models::SiteRef {
                    organization: z.organization.clone(),
                    name: z.name.clone(),
                    ..Default::default()
                };
                match client.show_flavors_for_zone(&zone).await {
                    Ok(f) => f.iter().map(|f| f.flavor_name().to_string()).collect(),
                    Err(_) => flavors.clone(),
                }
            }
            Placement::Cloudlet(_) => flavors.clone(),
        };
        for flavor in &wanted_flavors {
            if available.contains(flavor) {
                report.pass(&format!("flavor {flavor}"), format!("available in {site}"));
            } else {
                report.fail(
                    &format!("flavor {flavor}"),
                    format!(
                        "not available in {site}; flavors there: {}",
                        available.join(", ")
                    ),
                );
            }
        }
    }
    if options.deploy_test && report.failed == 0 {
        deploy_test(config, client, options, report).await;
    }
}

fn check_image(image: &str) -> Step {
    let well_formed = !image.is_empty()
        && !image.contains(char::is_whitespace)
        && !image.starts_with('-')
        && image.split('/').all(|p| !p.is_empty())
        && !image.ends_with(':');
    Step {
        ok: well_formed,
        line: if well_formed {
            format!("{image} is well formed")
        } else {
            format!("{image:?} is not an image reference like registry.example.com/team/runner:tag")
        },
    }
}

async fn deploy_test(
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

/// Reads a JSON file for `--extra-specs`.
pub fn read_json(path: &Path) -> Result<serde_json::Value, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: not JSON: {e}", path.display())))
}
