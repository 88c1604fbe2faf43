//! The bootstrap parameters GARM writes on stdin for `CreateInstance`.

use base64::Engine as _;
use secret::Secret;
use serde::Deserialize;

use super::error::ProtocolError;

/// Upper bound for stdin. Real bootstrap documents are a few KiB (tools list, extra specs with
/// GARM's install template); anything far larger is not GARM talking to us.
pub const MAX_BOOTSTRAP_BYTES: u64 = 4 * 1024 * 1024;

/// One runner download offered by the forge (`tools` in the bootstrap JSON).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct RunnerTool {
    /// `linux`, `osx`, `win` (GitHub) or `linux`, `windows` (Gitea).
    pub os: String,
    /// `x64`, `arm`, `arm64`.
    pub architecture: String,
    /// Where the runner archive or binary is downloaded from.
    pub download_url: String,
    /// File name of the download.
    pub filename: String,
    /// SHA-256 of the download (GitHub only).
    pub sha256_checksum: String,
    /// Short-lived token for private downloads (GHES).
    pub temp_download_token: Option<Secret>,
}

/// Proxy settings of the pool (`proxy_config`, GARM main only). Values may embed credentials.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProxyConfig {
    /// Proxy for plain HTTP.
    pub http_proxy: Option<Secret>,
    /// Proxy for HTTPS.
    pub https_proxy: Option<Secret>,
    /// Hosts that bypass the proxy.
    pub no_proxy: Option<String>,
}

/// GARM's `BootstrapInstance`, with the exact wire names (hyphens and underscores mixed).
///
/// Unknown fields are ignored, as GARM's own providers do, so newer GARM versions keep working;
/// a missing field is empty (a missing `name` or `image` is then refused as empty).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BootstrapInstance {
    /// GARM instance name, e.g. `garm-ny9heeqyw2rl`.
    pub name: String,
    /// Runner downloads.
    pub tools: Option<Vec<RunnerTool>>,
    /// GitHub registration URL or the Gitea API base URL.
    pub repo_url: String,
    /// Controller callback URL.
    #[serde(rename = "callback-url")]
    pub callback_url: String,
    /// Controller metadata URL.
    #[serde(rename = "metadata-url")]
    pub metadata_url: String,
    /// JWT that authenticates this runner to GARM for this create attempt.
    #[serde(rename = "instance-token")]
    pub instance_token: Secret,
    /// Pool extra specs plus GARM's injected keys. Absent means `{}`.
    pub extra_specs: Option<serde_json::Value>,
    /// Runner group (GitHub).
    #[serde(rename = "github-runner-group")]
    pub github_runner_group: String,
    /// Base64 of PEM bundles, or null.
    #[serde(rename = "ca-cert-bundle")]
    pub ca_cert_bundle: Option<String>,
    /// `amd64`, `arm64`, `arm`, `i386`.
    pub arch: String,
    /// `linux` or `windows`.
    pub os_type: String,
    /// Pool flavor (opaque to GARM; an Edge Connect flavor name here).
    pub flavor: String,
    /// Pool image: the runner container image.
    pub image: String,
    /// Labels to register (non-JIT only); null under JIT.
    pub labels: Option<Vec<String>>,
    /// Pool id (same as `GARM_POOL_ID`).
    pub pool_id: String,
    /// Whether GARM made a JIT config for this runner.
    pub jit_config_enabled: bool,
    /// Proxy settings.
    pub proxy_config: Option<ProxyConfig>,
}

impl BootstrapInstance {
    /// Every secret the document holds: the instance token, each tool's download token, the
    /// proxy URLs (which may carry a password).
    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        let tools = self.tools.iter().flatten();
        let proxy = self.proxy_config.iter();
        std::iter::once(&self.instance_token)
            .chain(tools.filter_map(|t| t.temp_download_token.as_ref()))
            .chain(proxy.flat_map(|p| p.http_proxy.iter().chain(&p.https_proxy)))
    }

    /// Parses the bootstrap document.
    pub fn from_slice(raw: &[u8]) -> Result<Self, ProtocolError> {
        if raw.iter().all(u8::is_ascii_whitespace) {
            return Err(ProtocolError::new(
                "no bootstrap params on stdin (CreateInstance needs GARM's JSON)",
            ));
        }
        let mut json = serde_json::Deserializer::from_slice(raw);
        let parsed: BootstrapInstance =
            serde_path_to_error::deserialize(&mut json).map_err(|e| {
                let key = e.path().to_string();
                let e = e.into_inner();
                let text = key == "." || e.is_syntax() || e.is_eof();
                ProtocolError::Bootstrap((!text).then_some(key), e)
            })?;
        json.end().map_err(|e| ProtocolError::Bootstrap(None, e))?;
        parsed.validate()?;
        Ok(parsed)
    }

    fn validate(&self) -> Result<(), ProtocolError> {
        if self.name.trim().is_empty() {
            return Err(ProtocolError::new(
                "invalid bootstrap params: `name` is empty",
            ));
        }
        if self.image.trim().is_empty() {
            return Err(ProtocolError::new(
                "invalid bootstrap params: `image` is empty (set the pool's image to a runner container image)",
            ));
        }
        self.ca_bundle()?;
        let specs = self.extra_specs.as_ref();
        if specs.is_some_and(|specs| !(specs.is_object() || specs.is_null())) {
            return Err(ProtocolError::new(
                "invalid bootstrap params: `extra_specs` must be a JSON object",
            ));
        }
        Ok(())
    }

    /// The decoded `ca-cert-bundle`, if GARM sent one.
    fn ca_bundle(&self) -> Result<Option<String>, ProtocolError> {
        let Some(bundle) = &self.ca_cert_bundle else {
            return Ok(None);
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(bundle.trim())
            .map_err(|_| {
                ProtocolError::new("invalid bootstrap params: `ca-cert-bundle` is not base64")
            })?;
        String::from_utf8(bytes).map(Some).map_err(|_| {
            ProtocolError::new("invalid bootstrap params: `ca-cert-bundle` is not PEM text")
        })
    }

    /// The decoded PEM text of `ca-cert-bundle`, if GARM sent one.
    pub fn ca_bundle_pem(&self) -> Option<String> {
        let pem = self.ca_bundle().ok().flatten()?;
        (!pem.trim().is_empty()).then_some(pem)
    }

    /// The runner download matching the pool's OS and architecture, if GARM offered one.
    pub fn matching_tool(&self) -> Option<&RunnerTool> {
        let os = normalise_os(&self.os_type);
        let arch = normalise_arch(&self.arch);
        self.tools
            .as_deref()?
            .iter()
            .find(|t| normalise_os(&t.os) == os && normalise_arch(&t.architecture) == arch)
    }
}

fn normalise_os(os: &str) -> &str {
    match os {
        "win" | "windows" => "windows",
        "osx" | "darwin" => "osx",
        other => other,
    }
}

fn normalise_arch(arch: &str) -> &str {
    match arch {
        "amd64" | "x64" | "x86_64" => "x64",
        "arm64" | "aarch64" => "arm64",
        "arm" | "armhf" => "arm",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line the front door makes of a refusal.
    fn said(e: ProtocolError) -> String {
        crate::error::Error::from(e).to_string()
    }

    fn minimal(extra: &str) -> String {
        format!(r#"{{"name":"garm-abc","image":"runner:1"{extra}}}"#)
    }

    #[test]
    fn empty_stdin_is_rejected() {
        let err = said(BootstrapInstance::from_slice(b"").unwrap_err());
        assert!(err.contains("no bootstrap params"), "{err}");
        assert!(BootstrapInstance::from_slice(b"  \n").is_err());
    }

    #[test]
    fn invalid_json_is_rejected() {
        let err = said(BootstrapInstance::from_slice(b"{not json").unwrap_err());
        assert!(err.starts_with("invalid bootstrap params"), "{err}");
    }

    #[test]
    fn wire_names_with_hyphens_are_read() {
        let b = BootstrapInstance::from_slice(
            minimal(r#","callback-url":"https://g/cb","metadata-url":"https://g/md","instance-token":"t.k.n","github-runner-group":"grp","unknown_future_field":1"#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(b.callback_url, "https://g/cb");
        assert_eq!(b.metadata_url, "https://g/md");
        assert_eq!(b.instance_token.expose(), "t.k.n");
        assert_eq!(b.github_runner_group, "grp");
    }

    #[test]
    fn ca_bundle_is_base64_pem() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem);
        let b = BootstrapInstance::from_slice(
            minimal(&format!(r#","ca-cert-bundle":"{b64}""#)).as_bytes(),
        )
        .unwrap();
        assert_eq!(b.ca_bundle_pem().as_deref(), Some(pem));
        let err = BootstrapInstance::from_slice(minimal(r#","ca-cert-bundle":"%%%""#).as_bytes())
            .unwrap_err();
        assert!(said(err).contains("ca-cert-bundle"));
    }

    #[test]
    fn matching_tool_uses_either_arch_spelling() {
        let b = BootstrapInstance::from_slice(
            minimal(r#","arch":"amd64","os_type":"linux","tools":[{"os":"linux","architecture":"arm64","download_url":"a"},{"os":"linux","architecture":"x64","download_url":"b"}]"#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            b.matching_tool().map(|t| t.download_url.as_str()),
            Some("b")
        );
    }

    proptest::proptest! {
        /// Any bytes are a bootstrap with a name and an image, or one refusal line that says
        /// what is wrong with the params.
        #[test]
        fn any_bytes_are_a_usable_bootstrap_or_a_named_refusal(raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            match BootstrapInstance::from_slice(&raw) {
                Ok(b) => {
                    proptest::prop_assert!(!b.name.trim().is_empty());
                    proptest::prop_assert!(!b.image.trim().is_empty());
                }
                Err(e) => {
                    let e = said(e);
                    proptest::prop_assert!(
                        e.starts_with("invalid bootstrap params") || e.starts_with("no bootstrap params"),
                        "{}", e
                    );
                    proptest::prop_assert!(!e.contains('\n') && e.chars().count() <= 400, "{}", e);
                }
            }
        }

        /// Field values come through as sent; a refusal names the field and never repeats
        /// the instance token.
        #[test]
        fn field_values_come_through_or_the_field_is_named(
            name in ".*",
            image in ".*",
            bundle in "(|LS0tLS1CRUdJTg==|.*)",
            token in "[A-Za-z0-9]{12,24}",
            labels in proptest::collection::vec(".*", 0..4),
        ) {
            let doc = serde_json::json!({"name": name, "image": image, "ca-cert-bundle": bundle, "instance-token": token, "labels": labels});
            match BootstrapInstance::from_slice(doc.to_string().as_bytes()) {
                Ok(b) => {
                    proptest::prop_assert_eq!(&b.name, &name);
                    proptest::prop_assert_eq!(&b.image, &image);
                    proptest::prop_assert_eq!(b.instance_token.expose(), token.as_str());
                    proptest::prop_assert_eq!(b.labels, Some(labels));
                    proptest::prop_assert_eq!(b.ca_cert_bundle.as_deref(), Some(bundle.as_str()));
                }
                Err(e) => {
                    let e = said(e);
                    let named = ["`name`", "`image`", "`ca-cert-bundle`"].iter().any(|f| e.contains(f));
                    proptest::prop_assert!(named, "{}", e);
                    proptest::prop_assert!(!e.contains(&token), "{}", e);
                    if name.trim().is_empty() {
                        proptest::prop_assert!(e.contains("`name`"), "{}", e);
                    }
                }
            }
        }
    }
}
