//! `Config::validate`: what TOML's types cannot express, each refusal naming the key.

use super::*;

impl Config {
    /// Checks values that TOML types cannot express. Returns a message naming the key.
    pub fn validate(&self) -> Result<(), String> {
        let prefix = self.image_pull_password_env_prefix.as_deref();
        if prefix.is_some_and(|p| !crate::naming::is_env_name(p)) {
            return Err("image_pull_password_env_prefix: must start an environment variable name (letters, digits, _), e.g. GARM_REGISTRY_".to_string());
        }
        let ec = &self.edge_connect;
        let url = reqwest::Url::parse(&ec.url).map_err(|e| {
            format!(
                "edge_connect.url: not a URL ({e}): {}",
                crate::text::echo(&ec.url)
            )
        })?;
        let path = url.path().trim_end_matches('/');
        if path.ends_with("/api/v1") {
            let mut base = url.clone();
            base.set_path(path.trim_end_matches("/api/v1"));
            return Err(format!(
                "edge_connect.url: give the base URL without /api/v1, the provider adds it (edge_connect.url = \"{}\")",
                base.as_str().trim_end_matches('/')
            ));
        }
        match url.scheme() {
            "https" => {}
            "http" if ec.allow_http || is_loopback(&url) => {}
            "http" => {
                return Err(
                    "edge_connect.url: plain http is only allowed for loopback addresses (set edge_connect.allow_http = true to override)"
                        .to_string(),
                )
            }
            other => return Err(format!("edge_connect.url: unsupported scheme `{other}`")),
        }
        for (key, value) in [
            ("edge_connect.organization", &ec.organization),
            ("edge_connect.region", &ec.region),
            ("edge_connect.app_version", &ec.app_version),
        ] {
            if value.trim().is_empty() {
                return Err(format!("{key}: must not be empty"));
            }
        }
        if !crate::naming::is_valid_key_part(&ec.app_version) {
            return Err(format!(
                "edge_connect.app_version: {:?} does not match Edge Connect's key rule ^[0-9a-zA-Z][-_0-9a-zA-Z .&,!]*$",
                ec.app_version
            ));
        }
        ec.container().check(&|key| format!("edge_connect.{key}"))?;
        if !crate::naming::is_valid_key_part(&ec.organization) {
            return Err(
                "edge_connect.organization: not a valid Edge Connect organization name".into(),
            );
        }
        if !ec
            .region
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err("edge_connect.region: must match ^\\w+$ (e.g. EU)".into());
        }
        if ec
            .default_flavor
            .as_deref()
            .is_some_and(|f| f.trim().is_empty())
        {
            return Err("edge_connect.default_flavor: must not be empty when given".into());
        }
        match (&ec.cloudlet, &ec.zone) {
            (Some(_), Some(_)) => {
                return Err("edge_connect: give either [edge_connect.cloudlet] or [edge_connect.zone], not both".into())
            }
            (None, None) => {
                return Err("edge_connect: a placement is required: [edge_connect.zone] (newer API) or [edge_connect.cloudlet]".into())
            }
            _ => {}
        }
        for (key, site) in [
            ("edge_connect.cloudlet", &ec.cloudlet),
            ("edge_connect.zone", &ec.zone),
        ] {
            let empty = |s: &SiteKey| s.name.trim().is_empty() || s.organization.trim().is_empty();
            if site.as_ref().is_some_and(empty) {
                return Err(format!("{key}: name and organization must not be empty"));
            }
        }
        if ec.request_timeout_secs == 0 {
            return Err("edge_connect.request_timeout_secs: must be at least 1".into());
        }
        for (key, value) in [
            ("edge_connect.request_timeout_secs", ec.request_timeout_secs),
            (
                "edge_connect.operation_timeout_secs",
                ec.operation_timeout_secs,
            ),
            (
                "edge_connect.start_failure_grace_secs",
                ec.start_failure_grace_secs,
            ),
        ] {
            if value > MAX_DURATION_SECS {
                return Err(format!(
                    "{key}: {value} is more than the maximum of {MAX_DURATION_SECS} (24 hours)"
                ));
            }
        }
        if ec.operation_timeout_secs < ec.request_timeout_secs {
            return Err("edge_connect.operation_timeout_secs: must not be smaller than request_timeout_secs".into());
        }
        // A bound above operation_timeout_secs is harmless (the deadline ends the retries
        // first), so only nonsense is refused.
        if ec.connect_retry_secs == 0 || ec.connect_retry_secs > MAX_DURATION_SECS {
            return Err(format!(
                "edge_connect.connect_retry_secs: must be between 1 and {MAX_DURATION_SECS}"
            ));
        }
        let cache = &self.site_cache;
        for (key, image) in [
            ("site_cache.registry_image", &cache.registry_image),
            ("site_cache.actions_cache_image", &cache.actions_cache_image),
        ] {
            if !crate::manifest_safety::fully_qualified(image)
                || image.len() > crate::manifest_safety::MAX_IMAGE_LEN
            {
                return Err(format!(
                    "{key}: `{}` is not a fully qualified image of at most {} bytes (docker.io/...)",
                    crate::text::echo(image),
                    crate::manifest_safety::MAX_IMAGE_LEN
                ));
            }
        }
        if cache.enabled() && cache.flavor.is_none() && ec.default_flavor.is_none() {
            return Err("site_cache: a cache needs a flavor: set site_cache.flavor or edge_connect.default_flavor".into());
        }
        Ok(())
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}
