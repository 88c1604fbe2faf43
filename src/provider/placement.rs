//! Choosing edge sites: the config's site, or a pool's list with a failover / spread strategy.

use sha2::{Digest, Sha256};

use crate::config::{Config, Placement};
use crate::extra_specs::{ExtraSpecs, PlacementStrategy};
use edge_connect::models::{AppInstKey, NewAppInst, SiteRef};
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
        let n = u64::from_be_bytes([
            digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
        ]);
        let start = (n % sites.len() as u64) as usize;
        sites.rotate_left(start);
    }
    sites
}

/// The CreateAppInst body for a site: a zone goes into `zone_key` (newer API), a cloudlet into
/// the key's `cloudlet_key` (older API).
pub fn new_app_inst(
    name: &str,
    organization: &str,
    app_key: edge_connect::models::AppKey,
    site: &Placement,
) -> NewAppInst {
    let site_ref = |k: &crate::config::SiteKey| SiteRef {
        organization: k.organization.clone(),
        name: k.name.clone(),
    };
    match site {
        Placement::Zone(z) => NewAppInst {
            key: AppInstKey {
                name: name.to_string(),
                organization: organization.to_string(),
                cloudlet_key: None,
            },
            app_key,
            zone_key: Some(site_ref(z)),
        },
        Placement::Cloudlet(c) => NewAppInst {
            key: AppInstKey {
                name: name.to_string(),
                organization: organization.to_string(),
                cloudlet_key: Some(site_ref(c)),
            },
            app_key,
            zone_key: None,
        },
    }
}

/// True when an early CreateAppInst refusal means "this site cannot take it; try the next one".
pub fn site_unusable(e: &ApiError) -> bool {
    match e.kind {
        ApiErrorKind::NoCapacity => true,
        ApiErrorKind::NotFound => matches!(
            e.missing(),
            Some(Subject::Zone | Subject::Cloudlet | Subject::Flavor)
        ),
        _ => e.zone_not_specified(),
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
    fn sites_shape_the_request() {
        let key = edge_connect::models::AppKey::default();
        let site = SiteKey {
            organization: "TDG".into(),
            name: "m".into(),
        };
        let z = serde_json::to_value(new_app_inst(
            "n",
            "o",
            key.clone(),
            &Placement::Zone(site.clone()),
        ))
        .unwrap();
        assert_eq!(z["zone_key"]["name"], "m");
        assert!(z["key"].get("cloudlet_key").is_none());
        let c =
            serde_json::to_value(new_app_inst("n", "o", key, &Placement::Cloudlet(site))).unwrap();
        assert_eq!(c["key"]["cloudlet_key"]["name"], "m");
        assert!(c.get("zone_key").is_none());
    }
}
