//! The one path every provider command takes, whichever front door it came through:
//! config file → logging → credentials and client → provider → one operation under its deadline.
//! The front doors only build the [`Operation`] and print the [`Finished`] outcome.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use edge_connect::token_cache::TokenCache;
use edge_connect::{Client, Deadline};

use crate::config::Config;
use crate::error::Error;
use crate::logging::LogGuard;
use crate::provider::{Operation, Outcome, Progress, Provider};

/// A loaded config with its logging installed. Keep it alive until the process ends: dropping
/// it flushes the log file.
pub struct Session {
    /// The validated provider config.
    pub config: Config,
    /// Flushes the log file on drop.
    pub log: LogGuard,
}

/// What a finished operation produced, with the counters the front doors report.
#[derive(Debug)]
pub struct Finished {
    /// The outcome to print.
    pub outcome: Outcome,
    /// HTTP requests sent to Edge Connect (logins included).
    pub requests: usize,
    /// Logins made (0 when a cached token was used).
    pub logins: usize,
}

/// Loads and validates the config file and installs logging as it says.
pub fn open(config_file: &Path) -> Result<Session, Error> {
    let config = Config::load(config_file)?;
    let log = crate::logging::init(Some(&config));
    Ok(Session { config, log })
}

/// Runs `operation` for `controller_id` with the session's config.
pub fn run(
    config: Config,
    controller_id: &str,
    operation: Operation,
    progress: Progress,
) -> Result<Finished, Error> {
    let provider = provider(config, controller_id, process_environment(), progress)?;
    let outcome = block_on(provider.run(operation))?;
    let finished = Finished {
        outcome,
        requests: provider.client().requests(),
        logins: provider.client().logins(),
    };
    tracing::info!(
        requests = finished.requests,
        logins = finished.logins,
        "done"
    );
    Ok(finished)
}

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
    // Read once: the credentials file is both the login and the token cache's key.
    let credentials = config.credentials(&environment)?;
    let cache = token_cache(&config, &environment, &credentials);
    let client = Client::new(
        &config.edge_connect.client_options(),
        credentials,
        Deadline::after(Duration::from_secs(
            config.edge_connect.operation_timeout_secs,
        )),
    )?
    .with_retry_report(progress.clone());
    let client = match cache {
        Some(cache) => client.with_token_store(Box::new(cache)),
        None => client,
    };
    let remove_all_concurrency = config.edge_connect.remove_all_concurrency;
    let delete_checks_app_inst = config.edge_connect.delete_checks_app_inst;
    Ok(
        Provider::new(client, config, controller_id, environment, progress)
            .with_remove_all_concurrency(remove_all_concurrency)
            .with_app_inst_check_on_delete(delete_checks_app_inst),
    )
}

/// The token cache for this config's URL and the credentials it resolves to (user and
/// password: a changed password means a new login); `None` when the cache is disabled or no
/// private directory of this user exists.
fn token_cache(
    config: &Config,
    environment: &HashMap<String, String>,
    credentials: &edge_connect::Credentials,
) -> Option<TokenCache> {
    if !config.token_cache {
        return None;
    }
    let dir = config
        .token_cache_dir
        .clone()
        .unwrap_or_else(|| edge_connect::token_cache::default_dir(environment));
    TokenCache::in_dir(&dir, &config.edge_connect.url, credentials)
}

/// Runs one future on a small single-threaded runtime: a provider process does one thing and
/// exits, so a multi-threaded runtime would only add start-up cost.
pub fn block_on<T>(
    future: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(future);
    // Do not wait for lingering connection tasks at exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}
