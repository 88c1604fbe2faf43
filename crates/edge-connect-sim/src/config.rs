//! What a simulator instance looks like: users, organizations, regions, the edge sites it
//! offers, and the timings it imitates.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Which generation of the AppInst API the simulator speaks (spec §0.2).
///
/// `Gen3` (zones) is what Edge Connect runs today; `Gen2` is the last public MC, where the
/// edge site is part of the AppInst key and `ShowZone` does not exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ApiGeneration {
    /// AppInst key `{name, organization, cloudlet_key}` + `app_key`; no zone RPCs.
    Gen2,
    /// AppInst key `{name, organization}` + `app_key` + `zone_key`; `cloudlet_key` output-only.
    #[default]
    Gen3,
}

impl FromStr for ApiGeneration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gen2" | "2" => Ok(ApiGeneration::Gen2),
            "gen3" | "3" => Ok(ApiGeneration::Gen3),
            other => Err(format!(
                "unknown API generation '{other}' (expected gen2 or gen3)"
            )),
        }
    }
}

impl fmt::Display for ApiGeneration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApiGeneration::Gen2 => "gen2",
            ApiGeneration::Gen3 => "gen3",
        })
    }
}

/// Everything that shapes one simulator instance. `SimConfig::default()` is a small Edge
/// Connect with one user, one organization, region `EU`, three flavors and one site.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// API generation spoken (default `Gen3`).
    pub api: ApiGeneration,
    /// `(username, password)` pairs that may log in.
    pub users: Vec<(String, String)>,
    /// Organizations every user is a member of (others are "foreign": 403 / hidden).
    pub orgs: Vec<String>,
    /// Region names accepted in requests.
    pub regions: Vec<String>,
    /// Flavor names; size (ram/vcpus/disk) is derived from the name (`small`, `medium`, ...).
    pub flavors: Vec<String>,
    /// Edge sites as `(operator organization, name)`.
    pub cloudlets: Vec<(String, String)>,
    /// Zones as `(operator organization, name)`; each maps to the cloudlet of the same name,
    /// or to the first cloudlet when none has that name.
    pub zones: Vec<(String, String)>,
    /// Lifetime of tokens issued by `/api/v1/login` (default 24 h).
    pub token_ttl: Duration,
    /// Total duration of an AppInst create/delete stream, spread over its progress lines.
    pub create_delay: Duration,
    /// Added to every API call before it is answered (benchmarks, slow-network trials).
    pub latency: Duration,
    /// Delay before answering a wrong password (the real MC waits about 3 s).
    pub bad_auth_delay: Duration,
    /// Whether the `/__sim/*` control endpoints exist.
    pub faults_enabled: bool,
    /// Directory for the `address` file and the `requests.log` request log.
    pub state_dir: Option<PathBuf>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            api: ApiGeneration::Gen3,
            users: vec![("garm".into(), "garm-password".into())],
            orgs: vec!["edp-developer-framework".into()],
            regions: vec!["EU".into()],
            flavors: vec!["EU.small".into(), "EU.medium".into(), "EU.large".into()],
            cloudlets: vec![("TelekomOP".into(), "Munich".into())],
            zones: vec![("TelekomOP".into(), "Munich".into())],
            token_ttl: Duration::from_secs(24 * 3600),
            create_delay: Duration::ZERO,
            latency: Duration::ZERO,
            bad_auth_delay: Duration::ZERO,
            faults_enabled: true,
            state_dir: None,
        }
    }
}

/// Size of a flavor, derived from its name so any configured name gets plausible numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FlavorSize {
    /// RAM in MB.
    pub ram: u64,
    /// Virtual CPUs.
    pub vcpus: u64,
    /// Disk in GB.
    pub disk: u64,
}

/// The size for a flavor name: `tiny`/`small`/`medium`/`large`/`xlarge` anywhere in the
/// name pick a size; anything else is medium-sized.
pub(crate) fn flavor_size(name: &str) -> FlavorSize {
    let lower = name.to_ascii_lowercase();
    let (ram, vcpus, disk) = if lower.contains("xlarge") {
        (16_384, 8, 80)
    } else if lower.contains("large") {
        (8192, 4, 40)
    } else if lower.contains("medium") {
        (4096, 2, 20)
    } else if lower.contains("small") {
        (2048, 1, 10)
    } else if lower.contains("tiny") {
        (1024, 1, 5)
    } else {
        (4096, 2, 20)
    };
    FlavorSize { ram, vcpus, disk }
}

/// A location for a site name, so `cloudlet_loc` looks real for the sites Edge Connect is
/// known to have; unknown names sit in Frankfurt.
pub(crate) fn site_location(name: &str) -> (f64, f64) {
    const KNOWN: &[(&str, f64, f64)] = &[
        ("munich", 48.1351, 11.582),
        ("dusseldorf", 51.2277, 6.7735),
        ("frankfurt", 50.1109, 8.6821),
        ("hamburg", 53.5511, 9.9937),
        ("berlin", 52.52, 13.405),
        ("cologne", 50.9375, 6.9603),
        ("stuttgart", 48.7758, 9.1829),
    ];
    let lower = name.to_ascii_lowercase();
    KNOWN
        .iter()
        .find(|(key, _, _)| lower.contains(key))
        .map(|&(_, lat, lon)| (lat, lon))
        .unwrap_or((50.1109, 8.6821))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_generations() {
        assert_eq!("gen2".parse::<ApiGeneration>(), Ok(ApiGeneration::Gen2));
        assert_eq!("GEN3".parse::<ApiGeneration>(), Ok(ApiGeneration::Gen3));
        assert!("gen4".parse::<ApiGeneration>().is_err());
    }

    #[test]
    fn sizes_flavors_by_name() {
        assert_eq!(flavor_size("EU.small").ram, 2048);
        assert_eq!(flavor_size("EU.large").vcpus, 4);
        assert_eq!(flavor_size("m4.xlarge").disk, 80);
        assert_eq!(flavor_size("custom").ram, 4096);
    }
}
