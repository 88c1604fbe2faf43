//! The checks that talk to Edge Connect: reachability and login, region, membership of the
//! organization, API generation, and for every configured site whether it exists, how it will
//! be addressed and which flavors it offers.

use std::time::Instant;

use super::Report;
use crate::config::{Config, EdgeConnectConfig, Placement};
use crate::extra_specs::ExtraSpecs;
use crate::provider::placement::{self, Target};
use crate::provider::Provider;
use edge_connect::models::{AppKey, Site, SiteRef};
use edge_connect::{Answer, ApiErrorKind, Client, Subject};

pub(super) async fn remote_checks(
    config: &Config,
    provider: &Provider,
    specs: &ExtraSpecs,
    sites: &[Placement],
    report: &mut Report,
) {
    let mut check = Remote {
        ec: &config.edge_connect,
        client: provider.client(),
        report,
        reached: 0,
    };
    // The first step that fails ends the checks: the later ones need what it would have found.
    // They are named, so that a person knows what was not checked.
    if check.steps(specs, sites).await.is_err() {
        check.report.skipped(&REMOTE_STAGES[check.reached + 1..]);
    }
}

/// The remote steps, in the order they run: what is skipped after a failed one.
pub(super) const REMOTE_STAGES: [&str; 6] = [
    "login",
    "region",
    "organization",
    "API generation",
    "cloudlets",
    "sites and flavors",
];

/// The remote checks of one `check` run: each step writes its lines into `report`.
struct Remote<'a> {
    ec: &'a EdgeConnectConfig,
    client: &'a Client,
    report: &'a mut Report,
    /// The index in [`REMOTE_STAGES`] of the step running.
    reached: usize,
}

/// A step failed (and said so in the report).
struct Failed;

impl Remote<'_> {
    /// The steps, each noted in `reached` as it begins.
    async fn steps(&mut self, specs: &ExtraSpecs, sites: &[Placement]) -> Result<(), Failed> {
        self.login().await?;
        self.reached = 1;
        let flavors = self.region().await?;
        self.reached = 2;
        self.membership().await?;
        self.reached = 3;
        let zones = self.generation().await?;
        // From here on a failure is reported and the other sites still checked.
        let cloudlets = self.cloudlets(sites).await;
        let (zones, cloudlets) = (zones.as_deref(), cloudlets.as_deref());
        // The flavor a create of this pool asks for: the pool's own, else the config's default
        // (GARM's pool flavor lies between them, which `check` cannot see); none for a pool
        // sized by `resources`, whose size `check` reports once instead.
        let wanted = match specs.resources {
            Some(_) => None,
            None => specs.flavor.as_ref().or(self.ec.default_flavor.as_ref()),
        };
        for site in sites {
            let found = self.site(site, zones, cloudlets).await;
            if let (Ok(()), Some(wanted)) = (found, wanted) {
                self.flavors(site, &flavors, wanted).await;
            }
        }
        Ok(())
    }

    fn fail(&mut self, what: &str, detail: impl AsRef<str>) -> Failed {
        self.report.fail(what, detail);
        Failed
    }

    /// The URL reached (through the proxy the environment selects for it: part of the path
    /// being checked) and the login accepted.
    async fn login(&mut self) -> Result<(), Failed> {
        let url = &self.ec.url;
        let started = Instant::now();
        // Only https can be said to have valid TLS; plain http is allowed for loopback (and
        // with allow_http), and the line says so.
        let transport = if url.starts_with("https://") {
            "TLS valid"
        } else {
            "plain http, no TLS"
        };
        let via = self
            .client
            .proxy()
            .map(|p| format!(" through the proxy {p}"))
            .unwrap_or_default();
        let Err(e) = self.client.login().await else {
            let ms = started.elapsed().as_millis();
            let line = format!("{url}{via} reachable, {transport}, logged in ({ms} ms)");
            self.report.pass("login", line);
            return Ok(());
        };
        if !matches!(
            e.kind,
            ApiErrorKind::Unreachable | ApiErrorKind::Transport | ApiErrorKind::Tls
        ) {
            return Err(self.fail("login", e.to_string()));
        }
        let proxy_hint = if via.is_empty() {
            ""
        } else {
            ", the proxy variables (HTTPS_PROXY, NO_PROXY)"
        };
        Err(self.fail(
            "reach",
            format!(
                "{url}{via}: {} — check edge_connect.url and the network path{proxy_hint}",
                e.message
            ),
        ))
    }

    /// The region known, and its flavors' names.
    async fn region(&mut self) -> Result<Vec<String>, Failed> {
        let region = &self.ec.region;
        match self.client.show_flavors().await {
            Ok(f) => {
                let line = format!("{region} known ({} flavors)", f.len());
                self.report.pass("region", line);
                Ok(f.iter().map(|f| f.flavor_name().to_string()).collect())
            }
            Err(e) if e.missing() == Some(Subject::Region) => Err(self.fail(
                "region",
                format!("{} — check edge_connect.region", e.message),
            )),
            Err(e) => Err(self.fail("region", e.to_string())),
        }
    }

    /// The user may manage Apps in the organization.
    ///
    /// Show omits what the user may not see, so "0 Apps" proves nothing. A delete needs
    /// membership: the MC checks it before the controller looks at the key (403 for
    /// non-members; edgexr/edge-cloud-platform@0414893 `pkg/mc/orm/app.mc2.go`, DeleteApp calls
    /// `authorized(.., ResourceApps, ActionManage)` before the controller), and a name that
    /// breaks the key rule cannot exist, so nothing is deleted. A member gets the controller's
    /// "not found" or "Invalid app name"; either proves membership.
    async fn membership(&mut self) -> Result<(), Failed> {
        let org = &self.ec.organization;
        let probe = AppKey {
            organization: org.clone(),
            name: "-garm-provider-membership-probe".to_string(),
            version: self.ec.app_version.clone(),
        };
        // Not counted in the metrics: its "not found" is the answer asked for, not an error of
        // Edge Connect's (docs/operations.md, "The metrics").
        let uncounted = self.client.clone().with_call_report(None);
        match uncounted.delete_app(&probe).await {
            Err(e) if e.kind == ApiErrorKind::Forbidden => Err(self.fail(
                "organization",
                format!(
                    "{org}: the user may not manage Apps there (HTTP 403) — check edge_connect.organization and the user's role in it"
                ),
            )),
            Err(e) if !matches!(e.kind, ApiErrorKind::NotFound | ApiErrorKind::Rejected) => {
                Err(self.fail("organization", e.to_string()))
            }
            _ => {
                let line = format!("{org}: the user may manage Apps there");
                self.report.pass("organization", line);
                Ok(())
            }
        }
    }

    /// The API generation: the zones of a Gen3 controller, `None` for Gen2. Only a zones (Gen3)
    /// controller answers ShowZone; an older one does not know the route.
    async fn generation(&mut self) -> Result<Option<Vec<Site>>, Failed> {
        match self.client.show_zones().await {
            Ok(zones) => {
                self.report.pass("API generation", "Gen3 (zones)");
                Ok(Some(zones))
            }
            Err(e) if e.answer == Answer::Status(404) => {
                self.report
                    .pass("API generation", "Gen2 (cloudlet keys, no zones)");
                Ok(None)
            }
            Err(e) => Err(self.fail("API generation", e.to_string())),
        }
    }

    /// The cloudlets, when a site is one (a failure is reported; the zones are still checked).
    async fn cloudlets(&mut self, sites: &[Placement]) -> Option<Vec<Site>> {
        if !sites.iter().any(|s| matches!(s, Placement::Cloudlet(_))) {
            return None;
        }
        self.client
            .show_cloudlets()
            .await
            .map_err(|e| self.fail("cloudlets", e.to_string()))
            .ok()
    }

    /// The site exists among `zones` (`None`: Gen2) or `cloudlets` (`None`: not asked for, or
    /// not shown), and is addressed as a create would address it.
    async fn site(
        &mut self,
        site: &Placement,
        zones: Option<&[Site]>,
        cloudlets: Option<&[Site]>,
    ) -> Result<(), Failed> {
        let (list, kind, key) = match site {
            Placement::Zone(k) => (zones, "zones", k),
            Placement::Cloudlet(k) => (cloudlets, "cloudlets", k),
        };
        let name = site.to_string();
        let Some(list) = list else {
            if matches!(site, Placement::Zone(_)) {
                return Err(self.fail(
                    &name,
                    "this server has no zones (Gen2): configure [edge_connect.cloudlet] instead",
                ));
            }
            return Err(Failed);
        };
        if placement::shown(list, key).is_none() {
            let names = placement::names(list).join(", ");
            return Err(self.fail(&name, format!("not found; {kind} here: {names}")));
        }
        // The commands' own decision (`placement::target`); a cloudlet key on a controller
        // with zones is what a create would hear `Zone not specified` for.
        let cloudlets = cloudlets.unwrap_or_default();
        match (placement::target(site, cloudlets), site) {
            (target @ Target::Zone(_), Placement::Cloudlet(_)) => self.report.pass(
                &name,
                format!(
                    "exists; addressed as {target} (Gen3 places through zones; the controller picks a cloudlet in that zone)"
                ),
            ),
            (Target::Cloudlet(_), Placement::Cloudlet(key)) if zones.is_some() => {
                return Err(self.fail(&name, placement::no_zone(key, cloudlets)));
            }
            (target, _) => self.report.pass(&name, format!("exists; addressed as {target}")),
        }
        Ok(())
    }

    /// The wanted flavor offered in the site (a zone's own list; for a cloudlet, the region's
    /// flavors).
    async fn flavors(&mut self, site: &Placement, region: &[String], flavor: &String) {
        let available = match site {
            Placement::Zone(z) => {
                match self.client.show_flavors_for_zone(&SiteRef::from(z)).await {
                    Ok(f) => f.iter().map(|f| f.flavor_name().to_string()).collect(),
                    Err(_) => region.to_vec(),
                }
            }
            Placement::Cloudlet(_) => region.to_vec(),
        };
        let what = format!("flavor {flavor}");
        if available.contains(flavor) {
            self.report.pass(&what, format!("available in {site}"));
        } else {
            let there = available.join(", ");
            let line = format!("not available in {site}; flavors there: {there}");
            self.report.fail(&what, line);
        }
    }
}
