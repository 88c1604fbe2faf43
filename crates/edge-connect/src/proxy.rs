//! Which proxy the client uses, decided once from the proxy environment.
//!
//! The rules are reqwest's own (`HTTPS_PROXY` / `HTTP_PROXY` by the URL's scheme, then
//! `ALL_PROXY`, upper case before lower case; nothing when `REQUEST_METHOD` is set, as in a CGI
//! program where `HTTP_PROXY` may come from a request header); `NO_PROXY` (domain suffixes, IP
//! addresses or networks, `*` for all) is read by the matcher reqwest itself uses (hyper-util's).
//! The client decides here and hands reqwest the result, so that what
//! [`Client::proxy`](crate::Client::proxy) and `check` report is, by construction, what the
//! requests do, and which variable chose the proxy can be named.

use hyper_util::client::proxy::matcher::Matcher;

use crate::options::SetupError;

// The proxy variables, each by its upper-case name (read first) and its lower-case twin; the
// provider names them from here only (the ones it masks, gives a runner, keeps in a sidecar).
/// The proxy URL for `http://` targets (it may carry the proxy's user and password).
pub const HTTP_PROXY: [&str; 2] = ["HTTP_PROXY", "http_proxy"];
/// The proxy URL for `https://` targets.
pub const HTTPS_PROXY: [&str; 2] = ["HTTPS_PROXY", "https_proxy"];
/// The proxy URL for targets neither of the two above covers.
pub const ALL_PROXY: [&str; 2] = ["ALL_PROXY", "all_proxy"];
/// The hosts reached without the proxy.
pub const NO_PROXY: [&str; 2] = ["NO_PROXY", "no_proxy"];
/// The variables a proxy URL, and with it possibly a password, is read from.
pub const URL_VARIABLES: [[&str; 2]; 3] = [HTTPS_PROXY, HTTP_PROXY, ALL_PROXY];

/// The proxy chosen for one Edge Connect URL. No `Debug`: `url` may carry the proxy's password.
#[derive(Clone)]
pub(crate) struct ProxyChoice {
    /// The proxy URL as given (may hold `user:password@`: never print it).
    pub(crate) url: reqwest::Url,
    /// `host:port` of the proxy, for messages.
    pub(crate) address: String,
    /// The variable it came from.
    pub(crate) variable: &'static str,
}

/// The proxy the environment `env` selects for `target`, if any.
pub(crate) fn choose(
    target: &reqwest::Url,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ProxyChoice>, SetupError> {
    let get = |names: [&'static str; 2]| {
        names
            .into_iter()
            .find_map(|n| env(n).map(|v| (n, v)))
            .filter(|(_, v)| !v.trim().is_empty())
    };
    if env("REQUEST_METHOD").is_some() {
        return Ok(None);
    }
    let by_scheme = match target.scheme() {
        "https" => get(HTTPS_PROXY),
        _ => get(HTTP_PROXY),
    };
    let Some((variable, value)) = by_scheme.or_else(|| get(ALL_PROXY)) else {
        return Ok(None);
    };
    if let Some((_, no_proxy)) = get(NO_PROXY) {
        // Asked with a stand-in proxy: only whether `NO_PROXY` exempts the target counts.
        let matcher = Matcher::builder().all("http://proxy").no(no_proxy).build();
        if target
            .as_str()
            .parse()
            .is_ok_and(|uri| matcher.intercept(&uri).is_none())
        {
            return Ok(None);
        }
    }
    // Never echo the value: it may hold the proxy's password.
    let value = value.trim();
    let with_scheme = if value.contains("://") {
        value.to_string()
    } else {
        format!("http://{value}")
    };
    let url = reqwest::Url::parse(&with_scheme)
        .map_err(|_| SetupError(format!("{variable}: not a proxy URL (value not shown)")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(SetupError(format!(
            "{variable}: proxy scheme `{}` is not supported (use an http:// or https:// proxy)",
            url.scheme()
        )));
    }
    let Some(proxy_host) = url.host_str() else {
        return Err(SetupError(format!("{variable}: the proxy URL has no host")));
    };
    let port = url.port_or_known_default().unwrap_or(80);
    Ok(Some(ProxyChoice {
        address: format!("{proxy_host}:{port}"),
        url,
        variable,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(url: &str, vars: &[(&str, &str)]) -> Result<Option<String>, SetupError> {
        let target = reqwest::Url::parse(url).unwrap();
        let env = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        choose(&target, &env).map(|c| c.map(|c| format!("{} {}", c.address, c.variable)))
    }

    #[test]
    fn the_variable_follows_the_scheme_then_all_proxy() {
        let vars = [
            ("HTTPS_PROXY", "http://s:3128"),
            ("HTTP_PROXY", "p:8080"),
            ("all_proxy", "http://a:1"),
        ];
        assert_eq!(
            pick("https://ec.example", &vars).unwrap().as_deref(),
            Some("s:3128 HTTPS_PROXY")
        );
        assert_eq!(
            pick("http://ec.example", &vars).unwrap().as_deref(),
            Some("p:8080 HTTP_PROXY")
        );
        assert_eq!(
            pick("https://ec.example", &[("all_proxy", "http://a:1")])
                .unwrap()
                .as_deref(),
            Some("a:1 all_proxy")
        );
        assert_eq!(
            pick("https://ec.example", &[("https_proxy", "https://s")])
                .unwrap()
                .as_deref(),
            Some("s:443 https_proxy")
        );
        assert_eq!(pick("https://ec.example", &[]).unwrap(), None);
        assert_eq!(
            pick(
                "https://ec.example",
                &[("HTTPS_PROXY", "http://s:1"), ("REQUEST_METHOD", "GET")]
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn no_proxy_exempts_domains_addresses_and_networks() {
        let with = |no: &str, url: &str| {
            pick(url, &[("HTTPS_PROXY", "http://s:1"), ("NO_PROXY", no)]).unwrap()
        };
        assert_eq!(with("example.com", "https://ec.example.com"), None);
        assert_eq!(with(".example.com", "https://example.com"), None);
        assert!(with("example.com", "https://ec.notexample.com").is_some());
        assert_eq!(with("*", "https://anything"), None);
        assert_eq!(with("10.0.0.0/8, x", "https://10.1.2.3"), None);
        assert!(with("10.0.0.0/8", "https://11.1.2.3").is_some());
        assert_eq!(with("::1", "https://[::1]:8443"), None);
        assert_eq!(with("127.0.0.1", "https://127.0.0.1:1"), None);
    }

    #[test]
    fn bad_values_are_named_without_being_echoed() {
        let e = pick("https://ec", &[("HTTPS_PROXY", "http://u:proxy-pass@[bad")]).unwrap_err();
        assert!(e.0.contains("HTTPS_PROXY"), "{e}");
        assert!(!e.0.contains("proxy-pass"), "{e}");
        let e = pick(
            "https://ec",
            &[("HTTPS_PROXY", "socks5://u:proxy-pass@h:1")],
        )
        .unwrap_err();
        assert!(e.0.contains("socks5"), "{e}");
        assert!(!e.0.contains("proxy-pass"), "{e}");
        let c = choose(&reqwest::Url::parse("https://ec").unwrap(), &|n: &str| {
            (n == "HTTPS_PROXY").then(|| "http://u:proxy-pass@h:3128".to_string())
        })
        .unwrap()
        .unwrap();
        assert_eq!(c.address, "h:3128");
    }
}
