//! The site cache's registry mirror as its programs are configured: the registry container's
//! environment and the dind daemon's flag, from the mirror's address. The one statement of this
//! configuration is docs/site-cache.md, "How the site cache is configured"; the real-registry test
//! (tests/it/site_cache_mirror.rs) runs Debian's registry and dockerd with exactly these bytes.

/// Docker Hub's registry host, the one upstream a site mirror caches: the host dockerd and
/// BuildKit pull Docker Hub images from (docs/site-cache.md, "The registry mirror").
pub const DOCKER_HUB: &str = "https://registry-1.docker.io";
/// Where the mirror listens in its pod: the official image's port, the App's one access port.
pub const LISTEN: &str = ":5000";
/// Where the mirror keeps what it fetched: the official image's volume (an `emptyDir` in the pod).
pub const STORAGE: &str = "/var/lib/registry";

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

/// The mirror's URL for the daemons, from the address ShowAppInst reports (`host:port`) and
/// whether the load balancer terminates TLS on the port. The scheme is always written: dockerd
/// takes a mirror without one as `https://`.
pub fn mirror_url(address: &str, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{address}")
}

/// The dind sidecar's daemon flag for the mirror at `url` (Docker Hub images only: dockerd asks
/// a mirror for no other registry).
pub fn dockerd_flag(url: &str) -> String {
    format!("--registry-mirror={url}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_daemon_flag_names_the_scheme_the_port_speaks() {
        assert_eq!(
            dockerd_flag(&mirror_url("cache.example.net:10003", false)),
            "--registry-mirror=http://cache.example.net:10003"
        );
        assert_eq!(
            dockerd_flag(&mirror_url("cache.example.net:5000", true)),
            "--registry-mirror=https://cache.example.net:5000"
        );
    }
}
