//! What both front doors share: building a provider from a config and running an operation.

use std::collections::HashMap;
use std::time::Duration;

use crate::config::Config;
use crate::edge_connect::Client;
use crate::error::Error;
use crate::provider::{Operation, Outcome, Progress, Provider};

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
    let client = Client::new(&config.edge_connect, credentials)?;
    let client = match crate::token_cache::TokenCache::for_config(&config, &environment) {
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
