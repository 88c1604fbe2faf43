//! What the runner container receives: the environment of its App.
//!
//! The names follow the Kubernetes provider's runner images (`METADATA_URL`, `CALLBACK_URL`,
//! `BEARER_TOKEN`, `RUNNER_*`), so existing images work; `docs/runner-contract.md` documents
//! every variable. The same variables carry the ownership data (controller id, pool id, exact
//! GARM name) that ListInstances and DeleteInstance read back from the App.

use std::collections::BTreeMap;

use crate::config::Placement;
use crate::garm::BootstrapInstance;
use crate::pod;
use edge_connect::proxy::{HTTPS_PROXY, HTTP_PROXY, NO_PROXY};
use edge_connect::Secret;

/// GARM controller id (ownership).
pub const ENV_CONTROLLER_ID: &str = "GARM_CONTROLLER_ID";
/// GARM pool id, verbatim (ownership).
pub const ENV_POOL_ID: &str = "GARM_POOL_ID";
/// Exact GARM instance name (ownership; the Edge Connect name may be sanitised).
pub const ENV_INSTANCE_NAME: &str = "GARM_INSTANCE_NAME";
/// The sites to place the AppInst on, in order (`zone:ORG/NAME;cloudlet:ORG/NAME`), so
/// StartInstance redeploys where CreateInstance would. Edge Connect names cannot hold `;`, `:` or
/// `/`, so the encoding is unambiguous.
pub const ENV_PLACEMENT: &str = "EDGE_CONNECT_PLACEMENT";
/// OS type of the runner (`linux`), read back for GARM's `os_type`.
pub const ENV_OS_TYPE: &str = "RUNNER_OS_TYPE";
/// Architecture of the runner (`amd64`), read back for GARM's `os_arch`.
pub const ENV_OS_ARCH: &str = "RUNNER_ARCH";

/// The AppInst annotation that names the GARM controller (ownership mark a ShowAppInst filters
/// on, docs/edge-connect-behaviours.md B23; AppInsts of releases before it carry none).
pub const MARK_CONTROLLER_ID: &str = "garm-controller-id";
/// The AppInst annotation that names the GARM pool, verbatim.
pub const MARK_POOL_ID: &str = "garm-pool-id";

/// The AppInst annotations of a runner of `controller_id` in `pool_id`.
pub fn app_inst_marks(controller_id: &str, pool_id: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MARK_CONTROLLER_ID.to_string(), controller_id.to_string()),
        (MARK_POOL_ID.to_string(), pool_id.to_string()),
    ])
}

/// The site's actions cache server, once it is Ready (docs/runner-contract.md, "The site's
/// actions cache").
pub const ENV_CACHE_SERVER: &str = "RUNNER_CACHE_SERVER";
/// Its secret, in `secret_env_vars`.
pub const ENV_CACHE_SECRET: &str = "RUNNER_CACHE_SECRET";

/// Names the provider sets itself; extra specs may not override them.
pub const RESERVED: &[&str] = &[
    ENV_CACHE_SERVER,
    ENV_CACHE_SECRET,
    ENV_CONTROLLER_ID,
    ENV_POOL_ID,
    ENV_INSTANCE_NAME,
    ENV_PLACEMENT,
    ENV_OS_TYPE,
    ENV_OS_ARCH,
    "RUNNER_NAME",
    "FORGE_TYPE",
    "FORGE_URL",
    "GITHUB_URL",
    "RUNNER_ORG",
    "RUNNER_REPO",
    "RUNNER_ENTERPRISE",
    "RUNNER_GROUP",
    "RUNNER_LABELS",
    "JIT_CONFIG_ENABLED",
    "RUNNER_EPHEMERAL",
    "RUNNER_NO_DEFAULT_LABELS",
    "DISABLE_RUNNER_UPDATE",
    "RUNNER_WORKDIR",
    pod::ENV_DOCKER,
    pod::ENV_DOCKER_HOST,
    pod::ENV_JOB_IMAGES,
    pod::ENV_DEFAULT_JOB_IMAGE,
    "METADATA_URL",
    "CALLBACK_URL",
    "BEARER_TOKEN",
    "GARM_CA_BUNDLE",
    "RUNNER_DOWNLOAD_URL",
    "RUNNER_DOWNLOAD_FILENAME",
    "RUNNER_DOWNLOAD_SHA256",
    "RUNNER_DOWNLOAD_TOKEN",
    HTTP_PROXY[0],
    HTTP_PROXY[1],
    HTTPS_PROXY[0],
    HTTPS_PROXY[1],
    NO_PROXY[0],
    NO_PROXY[1],
];

/// The container's environment, split by sensitivity.
#[derive(Debug, Clone, Default)]
pub struct RunnerEnv {
    /// Values anyone who can show the App may read.
    pub plain: BTreeMap<String, String>,
    /// Values that go to `secret_env_vars` (instance token, proxies with credentials, ...).
    pub secret: BTreeMap<String, Secret>,
}

/// Everything the provider reads back from one of its Apps: who owns it (controller id, pool
/// id, GARM name) and what GARM shows or StartInstance needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunnerVars {
    /// GARM controller id.
    pub controller_id: String,
    /// GARM pool id (verbatim; empty when absent).
    pub pool_id: String,
    /// GARM instance name.
    pub instance_name: String,
    /// [`ENV_OS_TYPE`] (empty when absent).
    pub os_type: String,
    /// [`ENV_OS_ARCH`] (empty when absent).
    pub os_arch: String,
    /// [`ENV_PLACEMENT`] as recorded (empty when absent).
    pub placement: String,
}

impl RunnerVars {
    /// Reads the variables of an App in one pass over its environment (List does this for every
    /// App of the organization); `None` unless the App belongs to `controller_id`: its
    /// controller id is that one and its recorded GARM name is the one its App name was made
    /// from (a copied environment does not make an App ours).
    pub fn of_app(app: &edge_connect::models::App, controller_id: &str) -> Option<Self> {
        let [controller, pool_id, instance_name, os_type, os_arch, placement] = app.env([
            ENV_CONTROLLER_ID,
            ENV_POOL_ID,
            ENV_INSTANCE_NAME,
            ENV_OS_TYPE,
            ENV_OS_ARCH,
            ENV_PLACEMENT,
        ]);
        let vars = RunnerVars {
            controller_id: controller?,
            pool_id: pool_id.unwrap_or_default(),
            instance_name: instance_name?,
            os_type: os_type.unwrap_or_default(),
            os_arch: os_arch.unwrap_or_default(),
            placement: placement.unwrap_or_default(),
        };
        (vars.controller_id == controller_id
            && crate::naming::edge_name(&vars.instance_name) == app.key.name)
            .then_some(vars)
    }

    /// The bytes of text these variables hold (what keeping them costs).
    pub fn len(&self) -> usize {
        self.controller_id.len()
            + self.pool_id.len()
            + self.instance_name.len()
            + self.os_type.len()
            + self.os_arch.len()
            + self.placement.len()
    }

    /// The recorded placements, in order (empty when none was recorded or none is readable).
    pub fn placements(&self) -> Vec<Placement> {
        self.placement
            .split(';')
            .filter_map(parse_placement_tag)
            .collect()
    }
}

/// Builds the runner environment for a bootstrap request.
pub fn runner_env(
    bootstrap: &BootstrapInstance,
    controller_id: &str,
    pool_id: &str,
    placements: &[Placement],
    extra: &BTreeMap<String, String>,
    single_line_values: bool,
) -> RunnerEnv {
    let mut plain = BTreeMap::new();
    let mut secret = BTreeMap::new();
    let mut set = |k: &str, v: &str| {
        plain.insert(k.to_string(), v.to_string());
    };
    // Extra specs first, so that nothing below can be overridden by a pool setting.
    for (k, v) in extra {
        set(k, v);
    }
    set(ENV_CONTROLLER_ID, controller_id);
    set(ENV_POOL_ID, pool_id);
    set(ENV_INSTANCE_NAME, &bootstrap.name);
    let tags: Vec<String> = placements.iter().map(placement_tag).collect();
    set(ENV_PLACEMENT, &tags.join(";"));
    set(ENV_OS_TYPE, &bootstrap.os_type);
    set(ENV_OS_ARCH, &bootstrap.arch);
    set("RUNNER_NAME", &bootstrap.name);
    let forge = forge_type(bootstrap.instance_token.expose()).unwrap_or("github");
    set("FORGE_TYPE", forge);
    set("FORGE_URL", &bootstrap.repo_url);
    // A GitHub registration URL names the base URL and the entity.
    let url = reqwest::Url::parse(&bootstrap.repo_url).ok();
    if let Some(url) = url.filter(|_| forge == "github") {
        if let Some(host) = url.host_str() {
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            set("GITHUB_URL", &format!("{}://{host}{port}", url.scheme()));
        }
        let parts: Vec<&str> = url
            .path_segments()
            .map(|s| s.filter(|p| !p.is_empty()).collect())
            .unwrap_or_default();
        match parts.as_slice() {
            ["enterprises", ent, ..] => set("RUNNER_ENTERPRISE", ent),
            [org, repo, ..] => {
                set("RUNNER_ORG", org);
                set("RUNNER_REPO", repo);
            }
            [org] => set("RUNNER_ORG", org),
            [] => {}
        }
    }
    set("RUNNER_GROUP", &bootstrap.github_runner_group);
    set(
        "RUNNER_LABELS",
        &bootstrap.labels.as_deref().unwrap_or_default().join(","),
    );
    set(
        "JIT_CONFIG_ENABLED",
        &bootstrap.jit_config_enabled.to_string(),
    );
    set("RUNNER_EPHEMERAL", "true");
    set("RUNNER_NO_DEFAULT_LABELS", "true");
    set("DISABLE_RUNNER_UPDATE", "true");
    set("RUNNER_WORKDIR", "/runner/_work");
    set("METADATA_URL", &bootstrap.metadata_url);
    set("CALLBACK_URL", &bootstrap.callback_url);
    if let Some(tool) = bootstrap.matching_tool() {
        set("RUNNER_DOWNLOAD_URL", &tool.download_url);
        set("RUNNER_DOWNLOAD_FILENAME", &tool.filename);
        if !tool.sha256_checksum.is_empty() {
            set("RUNNER_DOWNLOAD_SHA256", &tool.sha256_checksum);
        }
        if let Some(token) = tool.temp_download_token.clone().filter(|t| !t.is_empty()) {
            secret.insert("RUNNER_DOWNLOAD_TOKEN".to_string(), token);
        }
    }
    if let Some(pem) = bootstrap.ca_bundle_pem() {
        // Docker env files cannot hold line breaks; the contract allows them written as `\n`.
        let value = if single_line_values {
            pem.replace('\n', "\\n")
        } else {
            pem
        };
        set("GARM_CA_BUNDLE", &value);
    }
    if let Some(proxy) = &bootstrap.proxy_config {
        if let Some(no_proxy) = proxy.no_proxy.as_deref().filter(|v| !v.is_empty()) {
            for name in NO_PROXY {
                set(name, no_proxy);
            }
        }
        for (names, value) in [
            (HTTP_PROXY, &proxy.http_proxy),
            (HTTPS_PROXY, &proxy.https_proxy),
        ] {
            if let Some(v) = value.as_ref().filter(|v| !v.is_empty()) {
                for name in names {
                    secret.insert(name.to_string(), v.clone());
                }
            }
        }
    }
    secret.insert("BEARER_TOKEN".to_string(), bootstrap.instance_token.clone());
    RunnerEnv { plain, secret }
}

/// The forge the instance token says this runner is for (`github` or `gitea`), from its
/// `forge_type` claim. The token is read, not verified: only GARM can verify it, and it only
/// tells which bootstrap flavour the container must follow.
pub fn forge_type(token: &str) -> Option<&'static str> {
    let claims = edge_connect::jwt::unverified_claims(token)?;
    let forge = claims.get("forge_type")?.as_str()?.to_ascii_lowercase();
    match forge.as_str() {
        "github" => Some("github"),
        "gitea" | "forgejo" => Some("gitea"),
        _ => None,
    }
}

/// `zone:ORG/NAME` or `cloudlet:ORG/NAME`.
pub fn placement_tag(placement: &Placement) -> String {
    let (kind, k) = match placement {
        Placement::Zone(k) => ("zone", k),
        Placement::Cloudlet(k) => ("cloudlet", k),
    };
    // Key parts cannot hold `/` (the key rule), so a third part is unambiguous.
    let tag = format!("{kind}:{}/{}", k.organization, k.name);
    match k.federated_organization.as_str() {
        "" => tag,
        federated => format!("{tag}/{federated}"),
    }
}

/// Parses [`placement_tag`] output.
pub fn parse_placement_tag(tag: &str) -> Option<Placement> {
    let (kind, rest) = tag.split_once(':')?;
    let mut parts = rest.splitn(3, '/');
    let key = crate::config::SiteKey {
        organization: parts.next()?.to_string(),
        name: parts.next()?.to_string(),
        federated_organization: parts.next().unwrap_or_default().to_string(),
    };
    match kind {
        "zone" => Some(Placement::Zone(key)),
        "cloudlet" => Some(Placement::Cloudlet(key)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_env_of(repo_url: &str) -> BTreeMap<String, String> {
        let doc = serde_json::json!({"name": "garm-a", "image": "runner:1", "repo_url": repo_url});
        let bootstrap = BootstrapInstance::from_slice(doc.to_string().as_bytes()).unwrap();
        runner_env(&bootstrap, "c", "p", &[], &BTreeMap::new(), false).plain
    }

    #[test]
    fn forge_type_is_read_from_the_token_payload() {
        use base64::Engine as _;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"forge_type":"gitea","name":"x"}"#);
        assert_eq!(forge_type(&format!("h.{payload}.s")), Some("gitea"));
        assert_eq!(forge_type("garbage"), None);
    }

    #[test]
    fn github_urls_split_into_entities() {
        let e = plain_env_of("https://github.com/acme/widgets");
        assert_eq!(e["GITHUB_URL"], "https://github.com");
        assert_eq!(
            (e["RUNNER_ORG"].as_str(), e["RUNNER_REPO"].as_str()),
            ("acme", "widgets")
        );
        let e = plain_env_of("https://ghes.example.com:8443/enterprises/big");
        assert_eq!(e["GITHUB_URL"], "https://ghes.example.com:8443");
        assert_eq!(e["RUNNER_ENTERPRISE"], "big");
        assert_eq!(
            plain_env_of("https://github.com/acme")["RUNNER_ORG"],
            "acme"
        );
    }

    /// Every name `runner_env` can set is refused in a pool's `env` (docs/runner-contract.md: pool
    /// variables cannot override any listed variable), so none is silently overwritten.
    #[test]
    fn every_name_the_provider_sets_is_reserved() {
        for repo_url in [
            "https://github.com/acme/widgets",
            "https://github.com/enterprises/big",
        ] {
            let doc = serde_json::json!({
                "name": "garm-a", "image": "runner:1", "repo_url": repo_url,
                "os_type": "linux", "arch": "amd64",
                "ca-cert-bundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
                "tools": [{"os": "linux", "architecture": "amd64", "download_url": "https://d/x",
                           "filename": "x.tgz", "sha256_checksum": "ab", "temp_download_token": "t"}],
                "proxy_config": {"http_proxy": "http://p", "https_proxy": "http://p", "no_proxy": "n"},
            });
            let bootstrap = BootstrapInstance::from_slice(doc.to_string().as_bytes()).unwrap();
            let env = runner_env(&bootstrap, "c", "p", &[], &BTreeMap::new(), false);
            for name in env.plain.keys().chain(env.secret.keys()) {
                assert!(RESERVED.contains(&name.as_str()), "{name} is not reserved");
                let specs = serde_json::json!({ "env": { name.as_str(): "x" } });
                let refusal = crate::extra_specs::ExtraSpecs::from_value(Some(&specs)).unwrap_err();
                assert!(
                    refusal.to_string().contains("set by the provider"),
                    "{refusal}"
                );
            }
        }
    }

    #[test]
    fn placement_tags_round_trip() {
        let p = Placement::Zone(crate::config::SiteKey {
            organization: "TDG".into(),
            name: "dusseldorf-main".into(),
            federated_organization: String::new(),
        });
        assert_eq!(parse_placement_tag(&placement_tag(&p)), Some(p));
        let federated = Placement::Cloudlet(crate::config::SiteKey {
            organization: "TDG".into(),
            name: "partner-edge".into(),
            federated_organization: "PartnerOP".into(),
        });
        assert_eq!(
            placement_tag(&federated),
            "cloudlet:TDG/partner-edge/PartnerOP"
        );
        assert_eq!(
            parse_placement_tag(&placement_tag(&federated)),
            Some(federated)
        );
        assert_eq!(parse_placement_tag("nonsense"), None);
    }
}
