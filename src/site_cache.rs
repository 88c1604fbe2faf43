//! The site cache as Edge Connect holds it and its programs are configured: which App stands
//! for which site and service, the Apps' bodies, and what a runner is given once a cache is
//! Ready. The one statement of these facts is docs/site-cache.md ("How the site cache is
//! configured", "How the provider runs it"); the real-registry test
//! (tests/it/site_cache_mirror.rs) runs Debian's registry and dockerd with exactly these bytes.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::config::{Config, Placement};
use edge_connect::models::{AppKey, FlavorKey, NewApp};

/// Docker Hub's registry host, the one upstream a site mirror caches: the host dockerd and
/// BuildKit pull Docker Hub images from (docs/site-cache.md, "The registry mirror").
pub const DOCKER_HUB: &str = "https://registry-1.docker.io";
/// Where the mirror listens in its pod: the official image's port, the App's one access port.
pub const LISTEN: &str = ":5000";
/// Where the mirror keeps what it fetched: the official image's volume.
pub const STORAGE: &str = "/var/lib/registry";
/// The App variable that marks a cache as this controller's: never the runners'
/// `GARM_CONTROLLER_ID`, so no runner command ever finds a cache.
pub const ENV_CACHE_CONTROLLER: &str = "GPEC_SITE_CACHE_CONTROLLER";
/// The AppInst annotation a ShowAppInst finds this controller's caches by (B23).
pub const MARK_CACHE_CONTROLLER: &str = "gpec-site-cache";
/// The cache server's secret inside its container (`secret_env_vars`).
const ENV_SECRET: &str = "SITE_CACHE_SECRET";
/// A failed or undone cache is tried again only from the second 10-minute slot after its
/// last attempt: attempts are at least 10 minutes apart.
pub const SLOT_SECS: u64 = 600;

/// One service of a site cache, one App each: a service fails, restarts and is removed on its
/// own, and the platform writes each one's Deployment and Service from its image and access
/// port, with no manifest of ours (docs/site-cache.md, "How the provider runs it").
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Service {
    /// distribution in proxy mode: Docker Hub's images for `dind` and `buildkit`.
    Registry,
    /// forgejo-runner's `cache-server`: `actions/cache` of Forgejo runners.
    Actions,
}

impl Service {
    pub const ALL: [Service; 2] = [Service::Registry, Service::Actions];

    /// How names and messages call it: `registry`, `actions`.
    pub fn word(self) -> &'static str {
        self.into()
    }

    /// The access port it listens on.
    pub fn port(self) -> u32 {
        match self {
            Service::Registry => 5000,
            Service::Actions => 4001,
        }
    }

    /// Whether the config runs it.
    pub fn enabled(self, config: &Config) -> bool {
        match self {
            Service::Registry => config.site_cache.registry_mirror,
            Service::Actions => config.site_cache.actions_cache,
        }
    }
}

/// The first four bytes of `text`'s SHA-256, in hex.
fn hex8(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "{:08x}",
        u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
    )
}

/// The App name of `service`'s cache on `site` for `controller_id`:
/// `sc-<controller hash>-<site hash>-<service>`, 29 characters at most (B4's 40).
pub fn app_name(controller_id: &str, site: &Placement, service: Service) -> String {
    let (kind, key) = match site {
        Placement::Zone(k) => ("zone", k),
        Placement::Cloudlet(k) => ("cloudlet", k),
    };
    let site = format!("{kind}:{}/{}", key.organization, key.name);
    format!(
        "sc-{}-{}-{}",
        hex8(controller_id),
        hex8(&site),
        service.word()
    )
}

/// The service a cache App name of `controller_id` stands for.
pub fn service_of(controller_id: &str, app_name: &str) -> Option<Service> {
    let rest = app_name.strip_prefix(&format!("sc-{}-", hex8(controller_id)))?;
    Service::ALL
        .into_iter()
        .find(|s| rest.len() == 9 + s.word().len() && rest.ends_with(s.word()))
}

/// The App version of an attempt made at `unix_secs`: its 10-minute slot, `t<slot>`.
/// `t<slot>-<nonce>`: the nonce (this attempt's own) keeps two attempts of one slot apart, so
/// that no CreateApp ever meets an App of its name and version, which would delete that App's
/// secret variables (docs/edge-connect-behaviours.md B8).
pub fn version_at(unix_secs: u64, nonce: u32) -> String {
    format!("t{}-{nonce:08x}", unix_secs / SLOT_SECS)
}

/// The slot an App version names, if it is a cache's.
pub fn slot_of(version: &str) -> Option<u64> {
    let (slot, nonce) = version.strip_prefix('t')?.split_once('-')?;
    (nonce.len() == 8 && nonce.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| slot.parse().ok())
        .flatten()
}

/// The attempt that goes ahead, read back after this attempt's CreateApp made `mine`: the
/// earliest, by slot and then by version, of `versions` whose slot lies within `reach` slots of
/// `mine`'s. A runner's attempt passes `reach` 1: it went ahead only because no attempt of the
/// last two slots was recorded, so every version that near was made at the same time as its
/// own, even when the two straddle a slot's boundary, and each of them picks the same one.
pub fn first_attempt(versions: &[String], mine: &str, reach: u64) -> String {
    let Some(slot) = slot_of(mine) else {
        return mine.to_string();
    };
    versions
        .iter()
        .filter_map(|v| Some((slot_of(v)?, v)))
        .filter(|(s, _)| s.abs_diff(slot) <= reach)
        .min()
        .map_or_else(|| mine.to_string(), |(_, v)| v.clone())
}

/// A nonce for one attempt: the clock's nanoseconds mixed with the process id.
pub fn nonce() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish() as u32
}

/// Seconds since the epoch now (0 on a clock before 1970, which makes every cache look old).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether a cache last tried in `last` may be tried again now: from the second slot after it.
pub fn may_try_again(last: u64, now: u64) -> bool {
    now / SLOT_SECS >= last + 2
}

/// The registry container's environment: a pull-through cache of `upstream` only, storing on the
/// filesystem under `storage`, listening on `listen`. Environment variables, not a file, because
/// an App carries environment variables but no files. No upstream credentials, ever: behind a
/// public access port a mirror holding them serves every image they can read to anyone.
pub fn registry_env(upstream: &str, listen: &str, storage: &str) -> Vec<(&'static str, String)> {
    vec![
        ("REGISTRY_PROXY_REMOTEURL", upstream.to_string()),
        (
            "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY",
            storage.to_string(),
        ),
        ("REGISTRY_HTTP_ADDR", listen.to_string()),
    ]
}

/// The cache server's command line: the secret goes into a configuration file written at start
/// from `secret_env_vars` (the server reads it from a flag or that file only, and a flag would
/// be in the App's `command_args`, which ShowApp shows), then `cache-server` on the access port.
/// The file is JSON, which the server's YAML reader takes, so that the script holds neither a
/// newline nor `: `, which the platform's generator would break its manifest's YAML with
/// (docs/site-cache.md, "How the provider runs it").
fn actions_cache_args() -> Vec<String> {
    let port = Service::Actions.port();
    let script = format!(
        "umask 077 && printf '{{\"cache\":{{\"secret\":\"%s\"}}}}' \"${ENV_SECRET}\" > /tmp/cache.json && exec forgejo-runner --config /tmp/cache.json cache-server --port {port} --dir /tmp/actcache"
    );
    vec!["-c".to_string(), script]
}

/// The CreateApp body of `service`'s cache on `site`, of `version` (the attempt's).
pub fn new_app(
    config: &Config,
    controller_id: &str,
    site: &Placement,
    service: Service,
    secret: Option<&str>,
    version: String,
) -> NewApp {
    let ec = &config.edge_connect;
    let cache = &config.site_cache;
    let flavor = cache.flavor.as_ref().or(ec.default_flavor.as_ref());
    let marker = (ENV_CACHE_CONTROLLER.to_string(), controller_id.to_string());
    let mut app = NewApp {
        key: AppKey {
            organization: ec.organization.clone(),
            name: app_name(controller_id, site, service),
            version,
        },
        image_type: "Docker",
        deployment: "kubernetes",
        default_flavor: FlavorKey {
            name: flavor.cloned().unwrap_or_default(),
        },
        env_vars: BTreeMap::from([marker]),
        access_ports: format!("tcp:{}", service.port()),
        ..NewApp::default()
    };
    match service {
        Service::Registry => {
            app.image_path.clone_from(&cache.registry_image);
            let env = registry_env(DOCKER_HUB, LISTEN, STORAGE).into_iter();
            app.env_vars.extend(env.map(|(k, v)| (k.to_string(), v)));
        }
        Service::Actions => {
            app.image_path.clone_from(&cache.actions_cache_image);
            app.command = Some("sh".to_string());
            app.command_args = actions_cache_args();
            let secret = secret.map(|s| (ENV_SECRET.to_string(), s.to_string()));
            app.secret_env_vars.extend(secret);
        }
    }
    app
}

/// The AppInst annotations of a cache of `controller_id`.
pub fn marks(controller_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(MARK_CACHE_CONTROLLER.to_string(), controller_id.to_string())])
}

/// The mirror's URL for the daemons, from the address ShowAppInst reports (`host:port`) and
/// whether the load balancer terminates TLS on the port. The scheme is always written: dockerd
/// takes a mirror without one as `https://`.
pub fn mirror_url(address: &str, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{address}")
}

/// What a runner is given of its site's Ready caches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Use {
    /// The registry mirror's URL.
    pub mirror: Option<String>,
    /// The actions cache server's URL.
    pub actions: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SiteKey;

    #[test]
    fn a_site_mirror_proxies_docker_hub_without_credentials() {
        let env = registry_env(DOCKER_HUB, LISTEN, STORAGE);
        assert_eq!(
            env,
            [
                (
                    "REGISTRY_PROXY_REMOTEURL",
                    "https://registry-1.docker.io".into()
                ),
                (
                    "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY",
                    "/var/lib/registry".into()
                ),
                ("REGISTRY_HTTP_ADDR", ":5000".into()),
            ]
        );
    }

    #[test]
    fn names_tell_controller_site_and_service_apart_and_read_back() {
        let zone = |n: &str| {
            Placement::Zone(SiteKey {
                organization: "TelekomOP".into(),
                name: n.into(),
                federated_organization: String::new(),
            })
        };
        let a = app_name("ctrl-1", &zone("Munich"), Service::Registry);
        assert_eq!(a.len(), 29);
        assert!(crate::naming::is_safe_name(&a));
        assert_ne!(a, app_name("ctrl-2", &zone("Munich"), Service::Registry));
        assert_ne!(a, app_name("ctrl-1", &zone("Berlin"), Service::Registry));
        assert_eq!(service_of("ctrl-1", &a), Some(Service::Registry));
        assert_eq!(service_of("ctrl-2", &a), None);
        let b = app_name("ctrl-1", &zone("Munich"), Service::Actions);
        assert_eq!(service_of("ctrl-1", &b), Some(Service::Actions));
    }

    #[test]
    fn the_cache_server_script_is_one_safe_yaml_word() {
        let args = actions_cache_args();
        assert_eq!(
            args[1],
            r#"umask 077 && printf '{"cache":{"secret":"%s"}}' "$SITE_CACHE_SECRET" > /tmp/cache.json && exec forgejo-runner --config /tmp/cache.json cache-server --port 4001 --dir /tmp/actcache"#
        );
        assert!(!args[1].contains(": ") && !args[1].contains('\n') && !args[1].contains(" #"));
    }

    #[test]
    fn each_service_is_one_app_of_its_image_port_and_marker() {
        let config = Config::parse(
            "[edge_connect]\norganization='o'\nregion='EU'\nurl='https://x'\ndefault_flavor='f1'\n[edge_connect.zone]\norganization='TDG'\nname='z0'\n[site_cache]\nregistry_mirror=true\nactions_cache=true\n",
            std::path::Path::new("t.toml"),
        )
        .unwrap();
        let site = config.placement();
        let body = |service, secret| {
            let app = new_app(&config, "c1", &site, service, secret, "t2-000000ab".into());
            serde_json::to_value(&app).unwrap()
        };
        let registry = body(Service::Registry, Some("s3cret"));
        assert_eq!(
            registry,
            serde_json::json!({
                "key": {"organization": "o", "name": app_name("c1", &site, Service::Registry), "version": "t2-000000ab"},
                "image_type": "Docker",
                "image_path": config.site_cache.registry_image,
                "deployment": "kubernetes",
                "default_flavor": {"name": "f1"},
                "env_vars": {
                    "GPEC_SITE_CACHE_CONTROLLER": "c1",
                    "REGISTRY_HTTP_ADDR": ":5000",
                    "REGISTRY_PROXY_REMOTEURL": "https://registry-1.docker.io",
                    "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY": "/var/lib/registry",
                },
                "access_ports": "tcp:5000",
            })
        );
        let actions = body(Service::Actions, Some("s3cret"));
        assert_eq!(
            actions,
            serde_json::json!({
                "key": {"organization": "o", "name": app_name("c1", &site, Service::Actions), "version": "t2-000000ab"},
                "image_type": "Docker",
                "image_path": config.site_cache.actions_cache_image,
                "deployment": "kubernetes",
                "default_flavor": {"name": "f1"},
                "command": "sh",
                "command_args": actions_cache_args(),
                "env_vars": {"GPEC_SITE_CACHE_CONTROLLER": "c1"},
                "secret_env_vars": {"SITE_CACHE_SECRET": "s3cret"},
                "access_ports": "tcp:4001",
            })
        );
        assert!(body(Service::Actions, None)
            .get("secret_env_vars")
            .is_none());
    }

    #[test]
    fn concurrent_attempts_pick_the_same_first_one_across_a_slots_boundary() {
        let late = version_at(6_599, 0xff);
        let early = version_at(6_600, 0x01);
        let older = version_at(4_800, 0x00);
        let all = [older, late.clone(), early.clone()];
        // Two runners' attempts either side of the boundary at 6,600 s: both pick the one made
        // in the earlier slot, whatever its nonce; an attempt two slots back is not theirs.
        assert_eq!(first_attempt(&all, &late, 1), late);
        assert_eq!(first_attempt(&all, &early, 1), late);
        // `site-cache up` joins an attempt of its own slot only.
        assert_eq!(first_attempt(&all, &early, 0), early);
        let same_slot = [version_at(1_300, 0x20), version_at(1_250, 0x10)];
        assert_eq!(first_attempt(&same_slot, &same_slot[0], 0), same_slot[1]);
        assert_eq!(first_attempt(&[], &early, 1), early);
    }

    #[test]
    fn attempts_are_at_least_ten_minutes_apart() {
        let last = slot_of(&version_at(1_200, 0xab)).unwrap();
        assert_eq!(last, 2);
        assert_eq!(version_at(1_200, 0xab), "t2-000000ab");
        assert_eq!(slot_of("t2"), None);
        assert_eq!(slot_of("t2-xyz"), None);
        assert!(!may_try_again(last, 1_799));
        assert!(!may_try_again(last, 1_800 + 599));
        assert!(may_try_again(last, 2_400));
        assert_eq!(slot_of("1"), None);
    }
}
