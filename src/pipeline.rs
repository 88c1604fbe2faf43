//! The one path every command that talks to Edge Connect takes, whichever door it came through
//! (GARM mode, each CLI subcommand, `check`, `demo`): [`open`] reads the config file and installs
//! logging; [`run`] resolves the credentials, gives every secret of the command to its scrubber
//! ([`protect`]), builds the client (with the token cache) and the provider, runs the caller's
//! work on it and reports the requests and logins it took. GARM mode enters through [`garm`],
//! which reads GARM's environment and stdin and takes that path itself. The callers only say
//! what the work is and print what it produced.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use edge_connect::token_cache::TokenCache;
use edge_connect::{Client, Credentials, Deadline, Scrubber, Secret};

use crate::config::Config;
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::env::{Facts, SUPPORTED_INTERFACE_VERSIONS};
use crate::garm::{read_stdin, GarmCommand, Request};
use crate::logging::LogGuard;
use crate::provider::{Operation, Outcome, Progress, Provider};

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
    // The variable lets a deployment add the metrics sidecar without editing the config file
    // (the Helm chart's metrics.enabled); GARM passes it on with the EDP_EDGE_CONNECT_ prefix.
    let events = std::env::var_os(crate::metrics::EVENTS_FILE_VARIABLE)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    let metrics = events.as_ref().or(config.metrics_events_file.as_ref());
    let metrics = metrics.map_or_else(Default::default, |events| {
        crate::metrics::open(events, scrubber().clone())
    });
    let mut retired = Vec::new();
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

/// What a GARM command prints on stdout.
#[derive(Debug)]
pub enum Answer {
    /// A command answered without config or Edge Connect (nothing for `ValidatePoolInfo`).
    Text(String),
    /// What an instance command produced.
    Outcome(Outcome),
}

/// GARM mode's one entry: GARM's environment (`garm::Request`), each command answered once. A
/// local one without config; an instance command on the commands' one path: [`open`] (`log`
/// receives the log guard), a create's bootstrap read from stdin within the command's deadline
/// (not a budget of its own), and [`run`].
pub fn garm(log: &mut Option<LogGuard>) -> Result<Answer, Error> {
    let Request {
        version,
        command,
        controller_id,
        config_file,
        pool_id,
        instance_id: instance,
        pool_extra_specs: specs,
    } = Request::from_process()?;
    let json = |value: serde_json::Value| Ok(Answer::Text(value.to_string()));
    let pool = pool_id.clone();
    let mut opened = || {
        let (session, guard) = open(Path::new(&config_file))?;
        *log = Some(guard);
        Ok::<_, Error>(session)
    };
    // GARM's delete, stop and remove-all report at once what Edge Connect holds; its retries wait.
    let wait = false;
    let (session, operation) = match command {
        GarmCommand::GetVersion => return Ok(Answer::Text(crate::VERSION.to_string())),
        GarmCommand::GetSupportedInterfaceVersions => {
            return json(serde_json::json!(SUPPORTED_INTERFACE_VERSIONS))
        }
        GarmCommand::GetConfigJSONSchema => return json(Config::json_schema()?),
        GarmCommand::GetExtraSpecsJSONSchema => return json(ExtraSpecs::json_schema()?),
        GarmCommand::ValidatePoolInfo => {
            // Over the provider config when GARM names one: the verdict CreateInstance gives.
            let config = (!config_file.is_empty())
                .then(|| Config::load(Path::new(&config_file)))
                .transpose()?;
            ExtraSpecs::judge(specs.as_ref(), config.as_ref())?;
            return Ok(Answer::Text(String::new()));
        }
        GarmCommand::CreateInstance => {
            let session = opened()?;
            let read = read_stdin(std::io::stdin(), session.deadline.remaining());
            let create = |bootstrap| Operation::create(bootstrap, pool_id, specs);
            (session, read.map(create))
        }
        GarmCommand::DeleteInstance => (opened()?, Ok(Operation::Delete { instance, wait })),
        GarmCommand::GetInstance => (opened()?, Ok(Operation::Get { instance })),
        GarmCommand::ListInstances => (opened()?, Ok(Operation::List { pool_id })),
        GarmCommand::StartInstance => (opened()?, Ok(Operation::Start { instance })),
        GarmCommand::StopInstance => (opened()?, Ok(Operation::Stop { instance, wait })),
        GarmCommand::RemoveAllInstances => (opened()?, Ok(Operation::RemoveAll { wait })),
    };
    let log_file = log.as_ref().is_some_and(|l| l.file);
    // Every line of this command carries command, instance, pool and controller. The instance
    // of a create is only known once stdin is read, so it is recorded then.
    let span = tracing::info_span!(
        "garm",
        command = ?command,
        instance = tracing::field::Empty,
        pool = pool.as_deref().unwrap_or_default(),
        controller = %controller_id,
    );
    let _entered = span.enter();
    let fail = |e: Error| {
        // Without a log file the front door's stderr line is the only record; don't print twice.
        if log_file {
            tracing::error!(error = %e, "command failed");
        }
        e
    };
    let operation = operation.map_err(|e| fail(e.into()))?;
    // Escaped by the log writer, cut here: a 100 KB id must not be repeated on every line.
    let instance = crate::text::echo_max(operation.instance().unwrap_or_default(), 256);
    span.record("instance", tracing::field::display(instance));
    // Which interface GARM speaks explains which variables it sent (extra specs only in v0.1.1).
    tracing::info!(interface = version, "start");
    let progress: Progress =
        std::sync::Arc::new(|m: &str| tracing::debug!(message = m, "progress"));
    let environment = process_environment();
    let secrets = asked(&operation, &environment);
    let Facts(_, _, follow_up) = command.facts();
    // The pipeline logs the requests and logins the command took.
    let work = async |provider: &Provider| provider.run_in(operation, pool).await;
    match run(
        session,
        &controller_id,
        environment,
        progress,
        secrets,
        work,
    ) {
        Ok(finished) => Ok(Answer::Outcome(finished.output)),
        // A failure that leaves part of the runner behind says who removes it
        // (docs/operations.md, "A runner that cannot start").
        Err(e) => Err(fail(match follow_up {
            Some(who) if e.leaves_something() => Error::left_behind(format!("{e}{who}")),
            _ => e,
        })),
    }
}

/// Runs `work` for `controller_id` with a provider built from the session: credentials (the
/// credentials file, overridden by `EDP_EDGE_CONNECT_*` in `environment`), every secret of the
/// command (`asked`: what [`asked`] finds in an operation) given to its scrubber ([`protect`]),
/// the client with the token cache and the command's deadline, the provider. `environment` also
/// supplies what extra specs name (image pull passwords). Logs the requests and logins whether
/// the work succeeded or not.
pub fn run<T>(
    session: Session,
    controller_id: &str,
    environment: HashMap<String, String>,
    progress: Progress,
    asked: Vec<Secret>,
    work: impl AsyncFnOnce(&Provider) -> Result<T, Error>,
) -> Result<Finished<T>, Error> {
    let (config, deadline, metrics) = (session.config, session.deadline, session.metrics);
    // Read once: the credentials file is both the login and the token cache's key.
    let credentials = config.credentials(&environment)?;
    // Wanted only by what starts or uses an actions cache, which then says what is missing;
    // every other command goes on without it.
    let cache_secret = config.site_cache_secret(&environment).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the site cache's actions cache has no usable secret");
        None
    });
    let asked: Vec<Secret> = asked.into_iter().chain(cache_secret.clone()).collect();
    protect(&asked, &credentials, &environment)?;
    // Keyed by the URL and the credentials (a changed password means a new login); none when
    // the cache is disabled or no private directory of this user exists.
    let cache = config.token_cache.then(|| {
        let dir = config.token_cache_dir.clone();
        let dir = dir.unwrap_or_else(|| edge_connect::token_cache::default_dir(&environment));
        TokenCache::in_dir(&dir, &config.edge_connect.url, &credentials)
    });
    let cache = cache.flatten();
    let client = Client::new(&config.edge_connect.client_options(), credentials, deadline)
        .map_err(|e| Error::caused_by(e.to_string(), e))?
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
        cache_secret,
    );
    let output = block_on(work(&provider));
    let (requests, logins) = (provider.client().requests(), provider.client().logins());
    tracing::info!(requests, logins, "done");
    output.map(|output| Finished {
        output,
        requests,
        logins,
    })
}

/// The secrets of what a command was asked, beyond its credentials and the environment's proxy
/// URLs: a create's bootstrap (instance token, download tokens, proxy URLs) and the image pull
/// password its pool's settings name.
pub fn asked(operation: &Operation, environment: &HashMap<String, String>) -> Vec<Secret> {
    match operation {
        Operation::Create {
            bootstrap, specs, ..
        } => {
            let pull_password = specs
                .as_deref()
                .ok()
                .and_then(|s| pull_password(s, environment));
            bootstrap.secrets().cloned().chain(pull_password).collect()
        }
        _ => Vec::new(),
    }
}

/// The image pull password `specs` name, as `environment` holds it.
pub fn pull_password(specs: &ExtraSpecs, environment: &HashMap<String, String>) -> Option<Secret> {
    let var = specs.image_pull_password_env.as_ref()?;
    environment.get(var).map(Secret::new)
}

/// Every secret the command holds, given to the scrubber its writers share, before anything is
/// sent. What it protects: the Edge Connect password; the proxy URLs of the environment (and
/// their passwords alone); what was `asked` (a create's instance token, download tokens and
/// proxy URLs, the image pull password the pool's extra specs name); and, added by the client
/// when it learns it, the session token (a JWT is masked by its shape anyway, any other token
/// because it is known). Where: the log (`logging::init`), stderr and GARM's fault line
/// (`front::say`), a runner's `provider_fault` and the table's fault (`Provider::view_of`),
/// `check`'s lines, the labels of metrics events (`metrics::open`); the client's error texts
/// are kept whole for these writers to mask, then cut. More secrets than the scrubber can hold
/// refuse the command here, before any request (docs/reliability.md, "One scrubber per command,
/// handed to every writer").
///
/// Errors raised before this (the config, the credentials file, GARM's stdin) are written with
/// whatever the scrubber already masks (at least bearer tokens and JWT-shaped words), so those
/// readers never quote a value: `Secret` refuses a wrong type without it, parse errors name the
/// key and position only (`config::credentials`, `garm::bootstrap`).
fn protect(
    asked: &[Secret],
    credentials: &Credentials,
    environment: &HashMap<String, String>,
) -> Result<(), Error> {
    let proxies: Vec<Secret> = edge_connect::proxy::URL_VARIABLES
        .iter()
        .flatten()
        .filter_map(|name| environment.get(*name))
        .map(Secret::new)
        .collect();
    let all = std::iter::once(&credentials.password)
        .chain(&proxies)
        .chain(asked);
    scrubber()
        .protect(all)
        .map_err(|e| Error::caused_by(e.to_string(), e))?;
    tracing::debug!(masked = scrubber().len(), "secrets protected");
    Ok(())
}

/// The process environment as a map (credentials overrides, image pull passwords).
pub fn process_environment() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Runs one future on a small single-threaded runtime: a provider process does one thing and
/// exits, so a multi-threaded runtime would only add start-up cost.
pub fn block_on<T>(
    future: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::caused_by(format!("cannot start the async runtime: {e}"), e))?;
    let result = runtime.block_on(future);
    // Do not wait for lingering connection tasks at exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}
