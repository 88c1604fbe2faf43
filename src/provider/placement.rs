//! Choosing edge sites: the config's site, or a pool's list with a failover / spread strategy.

use sha2::{Digest, Sha256};

use super::wait::retry_transient;
use crate::config::{Config, Placement};
use crate::error::Error;
use crate::extra_specs::{ExtraSpecs, PlacementStrategy};
use edge_connect::models::{AppInstKey, NewAppInst, Site, SiteRef};
use edge_connect::{ApiError, ApiErrorKind, Subject};

/// The sites to try for one instance, in order.
///
/// `failover` keeps the listed order. `spread` rotates the list to start at a site derived from
/// the instance name: load spreads across sites, and a retry of the same name starts at the same
/// site.
pub fn candidates(config: &Config, specs: &ExtraSpecs, instance_name: &str) -> Vec<Placement> {
    let mut sites: Vec<Placement> = match (&specs.zones, &specs.cloudlets) {
        (Some(zones), _) => zones.iter().cloned().map(Placement::Zone).collect(),
        (None, Some(cloudlets)) => cloudlets.iter().cloned().map(Placement::Cloudlet).collect(),
        (None, None) => vec![config.placement()],
    };
    if specs.placement_strategy == Some(PlacementStrategy::Spread) && sites.len() > 1 {
        let digest = Sha256::digest(instance_name.as_bytes());
        // The first eight bytes, big-endian.
        let n = digest[..8].iter().fold(0u64, |n, &b| n << 8 | u64::from(b));
        let start = (n % sites.len() as u64) as usize;
        sites.rotate_left(start);
    }
    sites
}

/// Where a CreateAppInst is sent, in the shape the server's API generation accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `zone_key` (Gen3; also a configured cloudlet, through its zone).
    Zone(SiteRef),
    /// `key.cloudlet_key` (Gen2).
    Cloudlet(SiteRef),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Zone(z) => write!(f, "zone_key {}/{}", z.organization, z.name),
            Target::Cloudlet(c) => write!(f, "cloudlet_key {}/{}", c.organization, c.name),
        }
    }
}

/// `organization/name` of each site.
pub fn names(sites: &[Site]) -> Vec<String> {
    sites
        .iter()
        .map(|s| format!("{}/{}", s.key.organization, s.key.name))
        .collect()
}

/// The cloudlet `key` as ShowCloudlet lists it, if it does.
pub fn shown<'a>(cloudlets: &'a [Site], key: &crate::config::SiteKey) -> Option<&'a Site> {
    cloudlets
        .iter()
        .find(|s| s.key.organization == key.organization && s.key.name == key.name)
}

/// How a configured site is addressed, decided from ShowCloudlet's answer in hand (nothing is
/// remembered between commands).
///
/// A zone is always a `zone_key`. A cloudlet that ShowCloudlet lists with a `zone` is on a
/// zones (Gen3) controller: only Gen3 cloudlets carry that field (main
/// `api/edgeproto/cloudlet.proto:521-522`, added with zones in 2024-09), Gen3 drops a
/// `key.cloudlet_key` (`Zone not specified`, docs/edge-connect-behaviours.md B4) and reaches
/// the cloudlet through its zone, whose key carries the cloudlet's operator and federation
/// (`api/edgeproto/objs.go:1431-1440`); the controller then picks a cloudlet of that zone. Any
/// other cloudlet is sent in the Gen2 shape, `key.cloudlet_key`: a Gen3 controller answers it
/// with `Zone not specified`, which [`no_zone`] then explains.
pub fn target(site: &Placement, cloudlets: &[Site]) -> Target {
    match site {
        Placement::Zone(z) => Target::Zone(SiteRef::from(z)),
        Placement::Cloudlet(c) => match shown(cloudlets, c) {
            Some(found) if !found.zone.is_empty() => Target::Zone(SiteRef {
                organization: found.key.organization.clone(),
                name: found.zone.clone(),
                federated_organization: found.key.federated_organization.clone(),
            }),
            _ => Target::Cloudlet(SiteRef::from(c)),
        },
    }
}

/// Why a cloudlet cannot be used on a controller that places only through zones (it answered
/// `Zone not specified`, or `check` saw its zones), from ShowCloudlet's answer.
pub fn no_zone(key: &crate::config::SiteKey, cloudlets: &[Site]) -> String {
    match shown(cloudlets, key) {
        Some(_) => format!(
            "cloudlet {}/{} belongs to no zone, and this Edge Connect places AppInsts only through zones: ask its operator to assign the cloudlet to a zone, or configure [edge_connect.zone]",
            key.organization, key.name
        ),
        None => format!(
            "cloudlet {}/{} not found; cloudlets here: {}",
            key.organization,
            key.name,
            names(cloudlets).join(", ")
        ),
    }
}

/// The CreateAppInst body for a target.
pub fn new_app_inst(
    name: &str,
    organization: &str,
    app_key: edge_connect::models::AppKey,
    target: &Target,
) -> NewAppInst {
    let (cloudlet_key, zone_key) = match target {
        Target::Zone(z) => (None, Some(z.clone())),
        Target::Cloudlet(c) => (Some(c.clone()), None),
    };
    NewAppInst {
        key: AppInstKey {
            name: name.to_string(),
            organization: organization.to_string(),
            cloudlet_key,
        },
        app_key,
        zone_key,
        annotations: Default::default(),
    }
}

/// True when a CreateAppInst refusal means "this site cannot take it; try the next one".
pub fn site_unusable(e: &ApiError, target: &Target) -> bool {
    match e.kind {
        // Gen2: a cloudlet outside the organization's cloudlet pools.
        ApiErrorKind::Forbidden => matches!(target, Target::Cloudlet(_)),
        ApiErrorKind::NoCapacity => true,
        ApiErrorKind::NotFound => matches!(
            e.missing(),
            Some(Subject::Zone | Subject::Cloudlet | Subject::Flavor)
        ),
        _ => false,
    }
}

impl super::Provider {
    /// How each site is addressed ([`target`]): cloudlets cost one ShowCloudlet for all of
    /// them, zones nothing. Decided once per command, from the answer in hand.
    pub(super) async fn targets(&self, sites: &[Placement]) -> Result<Vec<Target>, Error> {
        let cloudlets = if sites.iter().any(|s| matches!(s, Placement::Cloudlet(_))) {
            self.show_cloudlets().await?
        } else {
            Vec::new()
        };
        Ok(sites.iter().map(|s| target(s, &cloudlets)).collect())
    }

    /// ShowCloudlet, retried while transient.
    pub(super) async fn show_cloudlets(&self) -> Result<Vec<Site>, Error> {
        let client = &self.client;
        Ok(retry_transient(client, "ShowCloudlet", || client.show_cloudlets()).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SiteKey;

    fn config() -> Config {
        Config::parse(
            "[edge_connect]\norganization='o'\nregion='EU'\nurl='https://x'\n[edge_connect.zone]\norganization='TDG'\nname='z0'\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap()
    }

    fn zones(n: usize) -> ExtraSpecs {
        ExtraSpecs {
            zones: Some(
                (0..n)
                    .map(|i| SiteKey {
                        organization: "TDG".into(),
                        name: format!("z{i}"),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn config_placement_without_specs() {
        let c = candidates(&config(), &ExtraSpecs::default(), "garm-a");
        assert_eq!(c.len(), 1);
        assert!(matches!(&c[0], Placement::Zone(k) if k.name == "z0"));
    }

    #[test]
    fn failover_keeps_order_and_spread_is_stable_and_spreads() {
        let specs = zones(3);
        let c = candidates(&config(), &specs, "garm-a");
        assert!(matches!(&c[0], Placement::Zone(k) if k.name == "z0"));
        let spread = ExtraSpecs {
            placement_strategy: Some(PlacementStrategy::Spread),
            ..zones(3)
        };
        let first = |name: &str| match &candidates(&config(), &spread, name)[0] {
            Placement::Zone(k) => k.name.clone(),
            Placement::Cloudlet(k) => k.name.clone(),
        };
        assert_eq!(first("garm-abc"), first("garm-abc"));
        let distinct: std::collections::HashSet<String> =
            (0..30).map(|i| first(&format!("garm-{i}"))).collect();
        assert_eq!(distinct.len(), 3);
    }

    #[test]
    fn sites_are_shaped_by_what_show_cloudlet_says() {
        let key = edge_connect::models::AppKey::default();
        let site = SiteKey {
            organization: "TDG".into(),
            name: "m".into(),
            ..Default::default()
        };
        let request = |site: &Placement, cloudlets: &[Site]| {
            let t = target(site, cloudlets);
            serde_json::to_value(new_app_inst("n", "o", key.clone(), &t)).unwrap()
        };
        let z = request(&Placement::Zone(site.clone()), &[]);
        assert_eq!(z["zone_key"]["name"], "m");
        assert!(z["key"].get("cloudlet_key").is_none());
        let cloudlet = Placement::Cloudlet(site.clone());
        // Gen2 lists cloudlets without a zone (or not at all): the cloudlet key.
        let gen2: Vec<Site> =
            serde_json::from_str(r#"[{"key":{"organization":"TDG","name":"m"}}]"#).unwrap();
        for cloudlets in [&gen2[..], &[]] {
            let c = request(&cloudlet, cloudlets);
            assert_eq!(c["key"]["cloudlet_key"]["name"], "m");
            assert!(c.get("zone_key").is_none());
        }
        // Gen3 lists the cloudlet's zone, which need not share its name.
        let gen3: Vec<Site> = serde_json::from_str(
            r#"[{"key":{"organization":"TDG","name":"m","federated_organization":"P"},"zone":"Munich-Zone"}]"#,
        )
        .unwrap();
        let g3 = request(&cloudlet, &gen3);
        assert_eq!(
            g3["zone_key"],
            serde_json::json!({"organization":"TDG","name":"Munich-Zone","federated_organization":"P"})
        );
        assert!(g3["key"].get("cloudlet_key").is_none());
        assert!(no_zone(&site, &gen2).contains("cloudlet TDG/m belongs to no zone"));
        assert_eq!(
            no_zone(&site, &[]),
            "cloudlet TDG/m not found; cloudlets here: "
        );
    }
}
