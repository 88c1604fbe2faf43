//! What both front doors share: building a provider from a config and running an operation.

use std::collections::HashMap;
use std::time::Duration;

use crate::config::Config;
use crate::error::Error;
use crate::provider::{Operation, Outcome, Progress, Provider};
use edge_connect::token_cache::TokenCache;
use edge_connect::Client;

/// The process environment as a map (credentials overrides, image pull passwords).
pub fn process_environment() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Builds a provider for `controller_id` from a loaded config.
pub fn provider(
    config: Config,
    controller_id: &str,
    environment: HashMap<String, String>,
    progress: Progress,
) -> Result<Provider, Error> {
    let credentials = config.credentials(&environment)?;
    let client = Client::new(&config.edge_connect.client_options(), credentials)?;
    let client = match token_cache(&config, &environment) {
        Some(cache) => client.with_token_store(Box::new(cache)),
        None => client,
    };
    Ok(Provider::new(
        client,
        config,
        controller_id,
        environment,
        progress,
    ))
}

/// The token cache for this config's URL and the user its credentials resolve to; `None` when
/// the cache is disabled or no usable directory exists.
fn token_cache(config: &Config, environment: &HashMap<String, String>) -> Option<TokenCache> {
    if !config.token_cache {
        return None;
    }
    let username = config.credentials(environment).ok()?.username;
    let dir = config
        .token_cache_dir
        .clone()
        .unwrap_or_else(|| edge_connect::token_cache::default_dir(environment));
    TokenCache::in_dir(&dir, &config.edge_connect.url, &username)
}

/// Runs one operation on a small single-threaded runtime: a provider process does one thing and
/// exits, so a multi-threaded runtime would only add start-up cost.
pub fn block_on_operation(provider: &Provider, operation: Operation) -> Result<Outcome, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(provider.run(operation));
    // Do not wait for lingering connection tasks at exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}
