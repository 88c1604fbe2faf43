//! Choosing edge sites: the config's site, or a pool's list with a failover / spread strategy.

use sha2::{Digest, Sha256};

use crate::config::{Config, Placement};
use crate::extra_specs::{ExtraSpecs, PlacementStrategy};
use edge_connect::models::{AppInstKey, NewAppInst, Site, SiteRef};
use edge_connect::{ApiError, ApiErrorKind, ApiGeneration, Subject};

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

fn site_ref(key: &crate::config::SiteKey) -> SiteRef {
    SiteRef::from(key)
}

/// How a configured site is addressed on a server of `generation`.
///
/// A zone is always a `zone_key`. A cloudlet is a `cloudlet_key` inside the AppInst key on Gen2;
/// Gen3 drops that field (`Zone not specified`, main `appinst.pb.go:260-262`,
/// `pkg/controller/appinst_zone.go:75-85`) and refuses a top-level `cloudlet_key` from users, so
/// a Gen3 client reaches a cloudlet only through the zone ShowCloudlet names for it
/// (`api/edgeproto/objs.go:1431-1440`); the controller then picks a cloudlet of that zone.
/// `cloudlets` is ShowCloudlet's answer (only needed for a cloudlet on Gen3).
pub fn target(
    site: &Placement,
    generation: ApiGeneration,
    cloudlets: &[Site],
) -> Result<Target, String> {
    match (site, generation) {
        (Placement::Zone(z), _) => Ok(Target::Zone(site_ref(z))),
        (Placement::Cloudlet(c), ApiGeneration::Gen2) => Ok(Target::Cloudlet(site_ref(c))),
        (Placement::Cloudlet(c), ApiGeneration::Gen3) => {
            let found = cloudlets
                .iter()
                .find(|s| s.key.organization == c.organization && s.key.name == c.name)
                .ok_or_else(|| {
                    format!(
                        "cloudlet {}/{} not found; cloudlets here: {}",
                        c.organization,
                        c.name,
                        cloudlets
                            .iter()
                            .map(|s| format!("{}/{}", s.key.organization, s.key.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            if found.zone.is_empty() {
                return Err(format!(
                    "cloudlet {}/{} belongs to no zone, and this Edge Connect (Gen3) places AppInsts only through zones: configure [edge_connect.zone] instead",
                    c.organization, c.name
                ));
            }
            // The zone carries the cloudlet's operator and federation (`objs.go:1431-1440`).
            Ok(Target::Zone(SiteRef {
                organization: found.key.organization.clone(),
                name: found.zone.clone(),
                federated_organization: found.key.federated_organization.clone(),
            }))
        }
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
        _ => e.zone_not_specified(),
    }
}

impl super::Provider {
    /// The target for a configured site, or why the site cannot be used (unknown cloudlet,
    /// cloudlet without zone). Asks the server its API generation once, and ShowCloudlet once
    /// per process, only when a cloudlet is configured.
    pub(super) async fn target_for(
        &self,
        site: &Placement,
        deadline: super::wait::Deadline,
    ) -> Result<Result<Target, String>, crate::error::Error> {
        if let Placement::Zone(_) = site {
            return Ok(target(site, ApiGeneration::Gen3, &[]));
        }
        let generation =
            super::wait::retry_transient(deadline, "ShowZone", || self.client.api_generation())
                .await?;
        let cloudlets: &[Site] = match generation {
            ApiGeneration::Gen2 => &[],
            ApiGeneration::Gen3 => {
                self.cloudlets
                    .get_or_try_init(|| {
                        super::wait::retry_transient(deadline, "ShowCloudlet", || {
                            self.client.show_cloudlets()
                        })
                    })
                    .await?
            }
        };
        Ok(target(site, generation, cloudlets))
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
    fn sites_shape_the_request_per_generation() {
        let key = edge_connect::models::AppKey::default();
        let site = SiteKey {
            organization: "TDG".into(),
            name: "m".into(),
            ..Default::default()
        };
        let request = |site: &Placement, generation, cloudlets: &[Site]| {
            let t = target(site, generation, cloudlets).unwrap();
            serde_json::to_value(new_app_inst("n", "o", key.clone(), &t)).unwrap()
        };
        let z = request(&Placement::Zone(site.clone()), ApiGeneration::Gen3, &[]);
        assert_eq!(z["zone_key"]["name"], "m");
        assert!(z["key"].get("cloudlet_key").is_none());
        let cloudlet = Placement::Cloudlet(site.clone());
        let c = request(&cloudlet, ApiGeneration::Gen2, &[]);
        assert_eq!(c["key"]["cloudlet_key"]["name"], "m");
        assert!(c.get("zone_key").is_none());
        let shown: Vec<Site> = serde_json::from_str(
            r#"[{"key":{"organization":"TDG","name":"m"},"zone":"Munich-Zone"}]"#,
        )
        .unwrap();
        let g3 = request(&cloudlet, ApiGeneration::Gen3, &shown);
        assert_eq!(
            g3["zone_key"],
            serde_json::json!({"organization":"TDG","name":"Munich-Zone"})
        );
        assert!(g3["key"].get("cloudlet_key").is_none());
        let missing = target(&cloudlet, ApiGeneration::Gen3, &[]).unwrap_err();
        assert!(missing.contains("cloudlet TDG/m not found"), "{missing}");
    }
}
