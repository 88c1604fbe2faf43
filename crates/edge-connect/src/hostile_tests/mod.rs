//! The client against tiny misbehaving servers on 127.0.0.1 (the `hostile-server` test crate,
//! shared with the provider's integration tests). Each test finishes in a few seconds; none
//! asserts on timing, they assert on outcomes (a test that regressed would hang or run out of
//! memory instead of passing).
//!
//! | Module | What misbehaves |
//! |---|---|
//! | `login` | redirects, transient, slow and refused logins, unreachable hosts, secrets in URLs |
//! | `answers` | endless, newline-free, cut, drip-fed and silent answers |

mod answers;
mod login;

use std::time::Duration;

use crate::{Client, ClientOptions, Credentials, Deadline, Secret};

pub(super) const PASSWORD: &str = "hostile-test-password";

pub(super) fn options(url: &str) -> ClientOptions {
    ClientOptions {
        url: url.to_string(),
        region: "EU".into(),
        request_timeout: Duration::from_secs(1),
        connect_retry: Duration::from_secs(1),
        ca_bundle: None,
        insecure_skip_verify: false,
    }
}

pub(super) fn client(url: &str) -> Client {
    client_until(url, Deadline::after(Duration::from_secs(20)))
}

pub(super) fn client_until(url: &str, deadline: Deadline) -> Client {
    Client::new(
        &options(url),
        Credentials {
            username: "u".into(),
            password: Secret::new(PASSWORD),
        },
        deadline,
    )
    .unwrap()
}

/// Every App of a ShowApp answer.
pub(super) async fn apps(c: &Client) -> Result<Vec<crate::models::App>, crate::ApiError> {
    let apps = c.show_apps(&Default::default(), &[]).await?;
    crate::collect(crate::Rpc::ShowApp, apps, 100_000).await
}

pub(super) fn assert_secret_free(text: &str) {
    assert!(!text.contains(PASSWORD), "password in: {text}");
    assert!(!text.contains("eyJhbGciOi"), "token in: {text}");
}

pub(super) fn app_key() -> crate::models::AppKey {
    crate::models::AppKey {
        organization: "o".into(),
        name: "n".into(),
        version: "1".into(),
    }
}

pub(super) fn app() -> crate::models::NewApp {
    crate::models::NewApp {
        key: app_key(),
        image_type: "Docker",
        image_path: "i".into(),
        deployment: "kubernetes",
        default_flavor: crate::models::FlavorKey { name: "f".into() },
        kubernetes_resources: None,
        command: None,
        command_args: Vec::new(),
        configs: Vec::new(),
        env_vars: Default::default(),
        secret_env_vars: Default::default(),
        username: None,
        credentials: None,
        deployment_manifest: None,
        access_ports: String::new(),
    }
}
