//! The checks that talk to Edge Connect: reachability and login, region, membership of the
//! organization, API generation, and for every configured site whether it exists, how it will
//! be addressed and which flavors it offers.

use std::time::Instant;

use super::Report;
use crate::config::{Config, Placement};
use crate::extra_specs::ExtraSpecs;
use crate::provider::placement::{self, Target};
use crate::provider::Provider;
use edge_connect::{Answer, ApiErrorKind};

pub(super) async fn remote_checks(
    config: &Config,
    provider: &Provider,
    specs: &ExtraSpecs,
    sites: &[Placement],
    report: &mut Report<'_>,
) {
    let ec = &config.edge_connect;
    let client = provider.client();
    let started = Instant::now();
    // Only https can be said to have valid TLS; plain http is allowed for loopback (and with
    // allow_http), and the line says so.
    let transport = if ec.url.starts_with("https://") {
        "TLS valid"
    } else {
        "plain http, no TLS"
    };
    // The proxy the environment selects for this URL is part of the path being checked.
    let via = client
        .proxy()
        .map(|p| format!(" through the proxy {p}"))
        .unwrap_or_default();
    match client.login().await {
        Ok(_) => report.pass(
            "login",
            format!(
                "{}{via} reachable, {transport}, logged in ({} ms)",
                ec.url,
                started.elapsed().as_millis()
            ),
        ),
        Err(e)
            if matches!(
                e.kind,
                ApiErrorKind::Unreachable | ApiErrorKind::Transport | ApiErrorKind::Tls
            ) =>
        {
            let proxy_hint = if via.is_empty() {
                ""
            } else {
                ", the proxy variables (HTTPS_PROXY, NO_PROXY)"
            };
            report.fail("reach", format!("{}{via}: {} — check edge_connect.url, the network path{proxy_hint} and (for TLS errors) edge_connect.ca_bundle", ec.url, e.message));
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
    // non-members; edgexr/edge-cloud-platform@0414893 `pkg/mc/orm/app.mc2.go`, DeleteApp calls
    // `authorized(.., ResourceApps, ActionManage)` before the controller), and a name that
    // breaks the key rule cannot exist, so nothing is deleted. A member gets the controller's
    // "not found" or "Invalid app name"; either proves membership.
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
        Err(e) if !matches!(e.kind, ApiErrorKind::NotFound | ApiErrorKind::Rejected) => {
            report.fail("organization", e.to_string());
            return;
        }
        _ => report.pass(
            "organization",
            format!("{}: the user may manage Apps there", ec.organization),
        ),
    }
    // Only a zones (Gen3) controller answers ShowZone; an older one does not know the route.
    let zones = match client.show_zones().await {
        Ok(zones) => {
            report.pass("API generation", "Gen3 (zones)");
            Some(zones)
        }
        Err(e) if e.answer == Answer::Status(404) => {
            report.pass("API generation", "Gen2 (cloudlet keys, no zones)");
            None
        }
        Err(e) => {
            report.fail("API generation", e.to_string());
            return;
        }
    };
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
    for site in sites {
        let (list, kind, key) = match site {
            Placement::Zone(k) => (zones.as_ref(), "zones", k),
            Placement::Cloudlet(k) => (cloudlets.as_ref(), "cloudlets", k),
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
        if placement::shown(list, key).is_none() {
            let names = placement::names(list).join(", ");
            report.fail(
                &site.to_string(),
                format!("not found; {kind} here: {names}"),
            );
            continue;
        }
        // The commands' own decision (`placement::target`); a cloudlet key on a controller
        // with zones is what a create would hear `Zone not specified` for.
        let cloudlet_list = cloudlets.as_deref().unwrap_or_default();
        match (placement::target(site, cloudlet_list), site) {
            (target @ Target::Zone(_), Placement::Cloudlet(_)) => report.pass(
                &site.to_string(),
                format!(
                    "exists; addressed as {target} (Gen3 places through zones; the controller picks a cloudlet in that zone)"
                ),
            ),
            (Target::Cloudlet(_), Placement::Cloudlet(key)) if zones.is_some() => {
                report.fail(&site.to_string(), placement::no_zone(key, cloudlet_list));
                continue;
            }
            (target, _) => report.pass(&site.to_string(), format!("exists; addressed as {target}")),
        }
        let available = match site {
            Placement::Zone(z) => {
                let zone = edge_connect::models::SiteRef::from(z);
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
}
