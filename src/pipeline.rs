//! The one path every command that talks to Edge Connect takes, whichever door it came through
//! (GARM mode, each CLI subcommand, `check`, `demo`): [`open`] reads the config file and installs
//! logging; [`run`] resolves the credentials, gives every secret of the command to its scrubber
//! ([`protect`]), builds the client (with the token cache) and the provider, runs the caller's
//! work on it and reports the requests and logins it took. The callers only say what the work is
//! and print what it produced.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use edge_connect::token_cache::TokenCache;
use edge_connect::{Client, Credentials, Deadline, Scrubber, Secret};

use crate::config::Config;
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::BootstrapInstance;
use crate::logging::LogGuard;
use crate::provider::{Operation, Progress, Provider};

/// The command's one scrubber. A process runs one command, and its writers are the process's
/// (stderr, stdout, the log): every writer masks with this one, and [`run`] gives it every
/// secret of the command ([`protect`]) and hands it to the client.
pub fn scrubber() -> &'static Scrubber {
    static SCRUBBER: OnceLock<Scrubber> = OnceLock::new();
    SCRUBBER.get_or_init(Scrubber::new)
}

/// A loaded config, and the command's deadline.
pub struct Session {
    /// The validated provider config.
    pub config: Config,
    /// The command's deadline (`operation_timeout_secs` from when the config was read): reading
    /// GARM's stdin, every Edge Connect call, retry and wait take their budget from it.
    pub deadline: Deadline,
    /// Where the command's metrics events go (`metrics_events_file`, or nowhere).
    pub metrics: crate::metrics::Recorder,
    /// One warning per retired key the config holds: logged, and each front door shows it on
    /// stderr as well (the CLI as a line of its own, GARM mode in a failure's one line).
    pub retired: Vec<String>,
}

/// What a command was asked to do, as far as it holds secrets that [`run`] cannot find by
/// itself: [`protect`] reads them from it, and the work gets it back.
pub trait Asked {
    /// A create's bootstrap (instance token, download tokens, proxy URLs) and the pool's
    /// settings (the variable that holds the image pull password).
    fn inputs(&self) -> (Option<&BootstrapInstance>, Option<&ExtraSpecs>);
}

impl Asked for Operation {
    fn inputs(&self) -> (Option<&BootstrapInstance>, Option<&ExtraSpecs>) {
        match self {
            Operation::Create {
                bootstrap, specs, ..
            } => (Some(bootstrap), specs.as_deref().ok()),
            _ => (None, None),
        }
    }
}

impl Asked for ExtraSpecs {
    fn inputs(&self) -> (Option<&BootstrapInstance>, Option<&ExtraSpecs>) {
        (None, Some(self))
    }
}

/// Nothing beyond the credentials and the environment.
impl Asked for () {
    fn inputs(&self) -> (Option<&BootstrapInstance>, Option<&ExtraSpecs>) {
        (None, None)
    }
}

/// What finished work produced, with the Edge Connect traffic it took.
#[derive(Debug)]
pub struct Finished<T> {
    /// What the work returned.
    pub output: T,
    /// HTTP requests sent to Edge Connect (logins included).
    pub requests: usize,
    /// Logins made (0 when a cached token was used).
    pub logins: usize,
}

/// Loads and validates the config file and installs logging as it says, its lines masked by
/// the command's [`scrubber`]. A retired key in the config is logged as a warning (and
/// otherwise ignored) once logging is there to say it. Keep the log guard alive until the
/// process ends: dropping it flushes the log file.
pub fn open(config_file: &Path) -> Result<(Session, LogGuard), Error> {
    let config = Config::load(config_file)?;
    let deadline = crate::provider::wait::command_deadline(&config);
    let mut log = crate::logging::init(&config, scrubber().clone());
    let mut retired = Vec::new();
    // The variable lets a deployment add the metrics sidecar without editing the config file
    // (the Helm chart's metrics.enabled); GARM passes it on with the EDP_EDGE_CONNECT_ prefix.
    let events = std::env::var_os(crate::metrics::EVENTS_FILE_VARIABLE)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    let metrics = events.as_ref().or(config.metrics_events_file.as_ref());
    let metrics = metrics.map_or_else(Default::default, |events| {
        crate::metrics::open(events, scrubber().clone())
    });
    for (key, why) in config.retired_keys() {
        let warning = format!("{key} is retired and ignored ({why}); remove it from the config");
        tracing::warn!(key, "{warning}");
        retired.push(warning);
    }
    // GARM shows stderr only for a failure, as one line: the warnings join it there.
    if !retired.is_empty() {
        let earlier = log.warning.take().map(String::from);
        let all = earlier.into_iter().chain(retired.iter().cloned());
        log.warning = Some(all.collect::<Vec<_>>().join("; ").into_boxed_str());
    }
    let session = Session {
        config,
        deadline,
        metrics,
        retired,
    };
    Ok((session, log))
}

/// Runs `work` on what was `asked`, for `controller_id`, with a provider built from the
/// session: credentials (the credentials file, overridden by `EDP_EDGE_CONNECT_*` in
/// `environment`), every secret of the command given to its scrubber ([`protect`]), the client
/// with the token cache and the command's deadline, the provider. `environment` also supplies
/// what extra specs name (image pull passwords). Logs the requests and logins whether the work
/// succeeded or not.
pub fn run<A: Asked, T>(
    session: Session,
    controller_id: &str,
    environment: HashMap<String, String>,
    progress: Progress,
    asked: A,
    work: impl AsyncFnOnce(&Provider, A) -> Result<T, Error>,
) -> Result<Finished<T>, Error> {
    let (config, deadline, metrics) = (session.config, session.deadline, session.metrics);
    // Read once: the credentials file is both the login and the token cache's key.
    let credentials = config.credentials(&environment)?;
    protect(&asked, &credentials, &environment)?;
    let cache = token_cache(&config, &environment, &credentials);
    let client = Client::new(&config.edge_connect.client_options(), credentials, deadline)?
        .with_retry_report(progress.clone())
        .with_call_report(metrics.rpc_reporter())
        .with_token_cache(cache)
        .with_scrubber(scrubber().clone());
    let provider = Provider::new(
        client,
        config,
        controller_id,
        environment,
        progress,
        metrics,
    );
    let output = block_on(work(&provider, asked));
    let (requests, logins) = (provider.client().requests(), provider.client().logins());
    tracing::info!(requests, logins, "done");
    output.map(|output| Finished {
        output,
        requests,
        logins,
    })
}

/// Every secret the command holds, given to the scrubber its writers share, before anything is
/// sent. What it protects: the Edge Connect password; the proxy URLs of the environment (and
/// their passwords alone); the bootstrap's instance token, download tokens and proxy URLs; the
/// image pull password the pool's extra specs name; and, added by the client when it learns it,
/// the session token (a JWT is masked by its shape anyway, any other token because it is
/// known). Where: the log (`logging::init`), stderr and GARM's fault line (`front::say`), a
/// runner's `provider_fault` and the table's fault (`Provider::view_of`), `check`'s lines, the
/// labels of metrics events (`metrics::open`); the client's error texts are kept whole for
/// these writers to mask, then cut. More secrets than the scrubber can hold refuse the command
/// here, before any request (docs/reliability.md, "One scrubber per command, handed to every
/// writer").
///
/// Errors raised before this (the config, the credentials file, GARM's stdin) are written with
/// whatever the scrubber already masks (at least bearer tokens and JWT-shaped words), so those
/// readers never quote a value: `Secret` refuses a wrong type without it, parse errors name the
/// key and position only (`config::credentials`, `garm::bootstrap`).
fn protect(
    asked: &impl Asked,
    credentials: &Credentials,
    environment: &HashMap<String, String>,
) -> Result<(), Error> {
    let proxies = PROXY_VARIABLES
        .iter()
        .filter_map(|name| environment.get(*name))
        .map(Secret::new);
    let (bootstrap, specs) = asked.inputs();
    let input = bootstrap.into_iter().flat_map(|b| b.secrets());
    let pull_password = specs
        .and_then(|specs| specs.image_pull_password_env.as_ref())
        .and_then(|var| environment.get(var))
        .map(Secret::new);
    let all: Vec<Secret> = std::iter::once(credentials.password.clone())
        .chain(proxies)
        .chain(input.map(|hidden| Secret::new(hidden.expose())))
        .chain(pull_password)
        .collect();
    scrubber()
        .protect(&all)
        .map_err(|e| Error::caused_by(e.to_string(), e))?;
    tracing::debug!(masked = scrubber().len(), "secrets protected");
    Ok(())
}

/// The variables a proxy URL (possibly with a password) is read from, as the client reads them.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The process environment as a map (credentials overrides, image pull passwords).
pub fn process_environment() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
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
fn block_on<T>(future: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::caused_by(format!("cannot start the async runtime: {e}"), e))?;
    let result = runtime.block_on(future);
    // Do not wait for lingering connection tasks at exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}
