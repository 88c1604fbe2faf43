//! CLI mode: subcommands for people. They build the same `Operation` as GARM mode and run it
//! through the same provider; only the output is friendlier (pretty JSON, progress on stderr).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};

use crate::check::leftovers::{self, StopSignals, Which};
use crate::config::{Config, Placement};
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::bootstrap::MAX_BOOTSTRAP_BYTES;
use crate::garm::BootstrapInstance;
use crate::provider::site_cache::CacheState;
use crate::provider::status::RunnerView;
use crate::provider::{Operation, Outcome, Provider};
use crate::site_cache::Service;

use super::say;

/// garm-provider-edge-connect: GARM runners as Edge Connect Apps + AppInsts.
///
/// Run by GARM with no arguments and GARM_COMMAND set (the external-provider protocol), or by a
/// person with one of the subcommands below.
#[derive(Debug, Parser)]
#[command(name = "garm-provider-edge-connect", version = crate::VERSION, about, long_about)]
pub struct Cli {
    /// Provider config file (TOML).
    #[arg(long, short, global = true, env = "GARM_PROVIDER_CONFIG_FILE")]
    pub config: Option<PathBuf>,
    /// GARM controller id the runners belong to.
    #[arg(long, global = true, env = "GARM_CONTROLLER_ID")]
    pub controller_id: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a runner from a GARM bootstrap JSON file (as GARM's CreateInstance).
    Create {
        /// Bootstrap JSON (see examples/).
        #[arg(long)]
        bootstrap: PathBuf,
        /// Pool id; default: the bootstrap's pool_id.
        #[arg(long)]
        pool_id: Option<String>,
    },
    /// Show one runner by provider id or GARM name.
    Get {
        /// Provider id or GARM instance name.
        id: String,
        /// `table` for people, `json` for scripts (what GARM gets).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// List this controller's runners (of one pool with --pool-id).
    List {
        /// Only this pool.
        #[arg(long)]
        pool_id: Option<String>,
        /// `table` for people, `json` for scripts (what GARM gets).
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Delete a runner (App and AppInst); succeeds when it is already gone.
    Delete {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// Delete every runner of this controller, in every pool.
    RemoveAll {
        /// Confirm.
        #[arg(long)]
        yes: bool,
    },
    /// Redeploy a stopped runner's AppInst.
    Start {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// Remove a runner's AppInst, keeping its App.
    Stop {
        /// Provider id or GARM instance name.
        id: String,
    },
    /// Check config, credentials, reachability, login, organization, region, placement and flavors.
    Check(crate::check::CheckOptions),
    /// Print a JSON Schema.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaKind,
    },
    /// Validate a pool's extra specs JSON file; with --config, over that provider config, as
    /// CreateInstance will.
    ValidateExtraSpecs {
        /// JSON file.
        file: PathBuf,
    },
    /// The metrics sidecar: serve Prometheus metrics from the commands' events file.
    #[command(subcommand)]
    Metrics(MetricsCommand),
    /// This controller's site caches (docs/site-cache.md); no runner command touches them.
    #[command(subcommand)]
    SiteCache(SiteCacheCommand),
    /// Print the version.
    Version,
    /// Run a whole runner lifecycle against the built-in Edge Connect simulator.
    #[cfg(feature = "demo")]
    Demo,
}

/// `site-cache` subcommands. A site is `zone:ORG/NAME` or `cloudlet:ORG/NAME`.
#[derive(Debug, Subcommand)]
pub enum SiteCacheCommand {
    /// List this controller's caches: site, service, App version, state, address or reason.
    List,
    /// Start the configured site's caches (or --site's) and wait until they are Ready.
    Up {
        /// Another site than the config's.
        #[arg(long, value_parser = site)]
        site: Option<Placement>,
    },
    /// Remove this controller's caches, every site's or --site's.
    Remove {
        /// Only this site's.
        #[arg(long, value_parser = site)]
        site: Option<Placement>,
    },
    /// Remove the caches of sites where no runner of this controller runs now, started more
    /// than --idle ago.
    Prune {
        /// `90m`, `24h`, `7d` (s, m, h or d).
        #[arg(long, value_parser = idle)]
        idle: Duration,
    },
}

fn site(text: &str) -> Result<Placement, String> {
    crate::runner_env::parse_placement_tag(text)
        .ok_or_else(|| "a site is zone:ORG/NAME or cloudlet:ORG/NAME".to_string())
}

fn idle(text: &str) -> Result<Duration, String> {
    let units = [('s', 1), ('m', 60), ('h', 3600), ('d', 86400)];
    let secs = units.iter().find_map(|&(unit, secs)| {
        let number = text.strip_suffix(unit)?.parse::<u64>().ok()?;
        number.checked_mul(secs)
    });
    secs.map(Duration::from_secs)
        .ok_or_else(|| "a duration is a number and s, m, h or d: 90m, 24h, 7d".into())
}

/// `metrics` subcommands.
#[derive(Debug, Subcommand)]
pub enum MetricsCommand {
    /// Serve /metrics (Prometheus text format) from the events the commands append to
    /// `metrics_events_file`, keeping the counters in a snapshot next to it.
    Serve {
        /// The events file; default: the config's `metrics_events_file`.
        #[arg(long)]
        events: Option<PathBuf>,
        /// Where the counters are kept between restarts; default: the events file's path with
        /// `.snapshot` added.
        #[arg(long)]
        snapshot: Option<PathBuf>,
        /// Address to listen on (`0.0.0.0:9464` to be scraped from another pod).
        #[arg(long, default_value = "127.0.0.1:9464")]
        listen: std::net::SocketAddr,
        /// How often the events are folded into the snapshot and the file truncated.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
        compact_secs: u64,
    },
}

/// How `get` and `list` print runners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns: name, pool, site, Edge Connect state, age, fault.
    Table,
    /// GARM's JSON, indented.
    Json,
}

/// Schemas the CLI prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    /// The provider config file.
    Config,
    /// Pool extra specs.
    ExtraSpecs,
}

/// Runs CLI mode; returns the exit code.
pub fn run() -> u8 {
    let cli = Cli::parse();
    match execute(cli) {
        Ok(()) => 0,
        // `schema config | head -1`: the reader has gone; there is no one left to tell.
        Err(e) if stdout_gone(&e) => 0,
        Err(e) => {
            // One line whatever the message holds (a server's text, an echoed argument).
            say(&format!("error: {e}"));
            super::exit_code(&e)
        }
    }
}

/// stdout is a closed pipe: stop quietly, as `head` expects of the writer.
fn stdout_gone(e: &Error) -> bool {
    let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
    io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Prints `v` to stdout as indented JSON.
fn print_json(v: &impl serde::Serialize) -> Result<(), Error> {
    super::print(|out| {
        serde_json::to_writer_pretty(&mut *out, v)?;
        writeln!(out)
    })
}

fn execute(cli: Cli) -> Result<(), Error> {
    let config_path = || {
        cli.config
            .clone()
            .ok_or_else(|| Error::failed("--config (or GARM_PROVIDER_CONFIG_FILE) is required"))
    };
    let controller_id = || {
        (cli.controller_id.clone())
            .filter(|c| !c.is_empty())
            .ok_or_else(|| Error::failed("--controller-id (or GARM_CONTROLLER_ID) is required"))
    };
    let progress: crate::provider::Progress = Arc::new(|m: &str| say(&format!("  … {m}")));
    // A created runner is printed as GARM gets it.
    let format = match &cli.command {
        Command::Get { format, .. } | Command::List { format, .. } => *format,
        _ => Format::Json,
    };
    // A person's delete, stop and remove-all wait while Edge Connect holds an AppInst busy.
    let wait = true;
    let operation = match cli.command {
        Command::Version => {
            // With the git commit when built from a git checkout (`v0.1.0 (abc1234)`), for
            // people; GARM gets `crate::VERSION`.
            let version = match env!("GARM_PROVIDER_GIT_COMMIT") {
                "" => env!("GARM_PROVIDER_VERSION").to_string(),
                commit => format!("{} ({commit})", env!("GARM_PROVIDER_VERSION")),
            };
            return super::print(|out| writeln!(out, "garm-provider-edge-connect {version}"));
        }
        Command::Schema { which } => {
            return print_json(&match which {
                SchemaKind::Config => Config::json_schema()?,
                SchemaKind::ExtraSpecs => ExtraSpecs::json_schema()?,
            })
        }
        Command::ValidateExtraSpecs { file } => {
            let (value, _) = read_json(&file, "extra specs file", "")?;
            // With a config, the pool is judged over it, as CreateInstance will judge it.
            let config = cli.config.as_deref().map(Config::load).transpose()?;
            ExtraSpecs::judge(Some(&value), config.as_ref())?;
            let under = match &cli.config {
                Some(config) => format!(" under {}", config.display()),
                None => " (alone: give --config to judge it over a provider config)".into(),
            };
            say(&format!("✓ {} is valid{under}", file.display()));
            return Ok(());
        }
        #[cfg(feature = "demo")]
        Command::Demo => return crate::demo::run(),
        Command::Metrics(MetricsCommand::Serve {
            events,
            snapshot,
            listen,
            compact_secs,
        }) => {
            let no_events = "give --events FILE, or set metrics_events_file in the config";
            let events = match events {
                Some(events) => events,
                None => (Config::load(&config_path()?)?.metrics_events_file)
                    .ok_or_else(|| Error::failed(no_events))?,
            };
            let snapshot = snapshot.unwrap_or_else(|| {
                let mut path = events.clone().into_os_string();
                path.push(".snapshot");
                PathBuf::from(path)
            });
            let every = Duration::from_secs(compact_secs);
            let serve = crate::metrics::serve(&events, &snapshot, listen, every);
            return crate::pipeline::block_on(serve);
        }
        Command::SiteCache(command) => {
            return site_cache(command, &config_path()?, &controller_id()?, progress)
        }
        Command::Check(options) => {
            let extra_specs = options.extra_specs.as_deref();
            let extra_specs = extra_specs.map(|f| read_json(f, "extra specs file", ""));
            let extra_specs = extra_specs.transpose()?.map(|(value, _)| value);
            let failed = crate::check::run(
                &config_path()?,
                cli.controller_id.as_deref(),
                &options,
                extra_specs.as_ref(),
                progress,
            )?;
            return match failed {
                0 => Ok(()),
                n => Err(Error::failed(format!("{n} check(s) failed"))),
            };
        }
        Command::Create { bootstrap, pool_id } => {
            Operation::create(read_bootstrap(&bootstrap)?, pool_id, None)
        }
        Command::Get { id, .. } => Operation::Get { instance: id },
        Command::List { pool_id, .. } => Operation::List { pool_id },
        Command::Delete { id } => Operation::Delete { instance: id, wait },
        Command::RemoveAll { yes: false } => {
            return Err(Error::failed(
                "remove-all deletes every runner of this controller; add --yes to confirm",
            ))
        }
        Command::RemoveAll { yes: true } => Operation::RemoveAll { wait },
        Command::Start { id } => Operation::Start { instance: id },
        Command::Stop { id } => Operation::Stop { instance: id, wait },
    };
    let config_path = config_path()?;
    let controller_id = controller_id()?;
    // Kept to the end: dropping the log guard flushes the log file.
    let (session, log) = crate::pipeline::open(&config_path)?;
    // Not only in the log: a person reads stderr. (Without a log file, logging's own warning
    // already went there.)
    if log.file {
        for warning in &session.retired {
            say(&format!("warning: {warning}"));
        }
    }
    let summary = summary(&operation);
    let target = operation.instance().unwrap_or_default().to_string();
    let environment = crate::pipeline::process_environment();
    let secrets = crate::pipeline::asked(&operation, &environment);
    let finished = crate::pipeline::run(
        session,
        &controller_id,
        environment,
        progress,
        secrets,
        async |provider| run_operation(provider, operation).await,
    )?;
    let table = |views: &[RunnerView]| {
        let text = super::table::render(views, SystemTime::now());
        super::print(|out| out.write_all(text.as_bytes()))
    };
    match (finished.output, format) {
        // A `delete` of a name no runner of this controller has.
        (None, _) => {
            say(&format!(
                "nothing to delete: {target} (no runner of this controller has that name)"
            ));
            return Ok(());
        }
        (Some(Outcome::Instance(i)), Format::Table) => table(&[*i])?,
        (Some(Outcome::Instances(list)), Format::Table) => table(&list)?,
        (Some(Outcome::Instance(i)), Format::Json) => print_json(&i)?,
        (Some(Outcome::Instances(list)), Format::Json) => print_json(&list)?,
        (Some(Outcome::Done), _) => {}
    }
    say(&format!(
        "✓ {summary} ({} Edge Connect requests, {} login(s))",
        finished.requests, finished.logins
    ));
    Ok(())
}

/// `site-cache`: runs its command for `controller_id` through the one pipeline, and says what
/// it found or did.
fn site_cache(
    command: SiteCacheCommand,
    config_path: &Path,
    controller_id: &str,
    progress: crate::provider::Progress,
) -> Result<(), Error> {
    let (session, _log) = crate::pipeline::open(config_path)?;
    let configured = session.config.placement();
    if !session.config.site_cache.enabled() && matches!(command, SiteCacheCommand::Up { .. }) {
        return Err(Error::failed(
            "no site cache is enabled: set site_cache.registry_mirror or site_cache.actions_cache in the config",
        ));
    }
    let finished = crate::pipeline::run(
        session,
        controller_id,
        crate::pipeline::process_environment(),
        progress,
        Vec::new(),
        async |provider| -> Result<Vec<String>, Error> {
            Ok(match command {
                SiteCacheCommand::List => provider
                    .site_cache_list()
                    .await?
                    .into_iter()
                    .map(|(app, insts)| crate::provider::site_cache::describe(&app, &insts))
                    .collect(),
                SiteCacheCommand::Up { site } => {
                    let site = site.unwrap_or(configured);
                    let states = provider.site_cache_up(&site).await?;
                    let line = |(service, state): &(Service, CacheState)| {
                        let state = crate::text::echo(&state.to_string());
                        format!("{} on {site}: {state}", service.word())
                    };
                    let ready = |(_, state): &&_| matches!(state, CacheState::Ready(_));
                    let failed: Vec<String> =
                        states.iter().filter(|s| !ready(s)).map(line).collect();
                    if !failed.is_empty() {
                        return Err(Error::failed(failed.join("; ")));
                    }
                    states.iter().map(|s| format!("✓ {}", line(s))).collect()
                }
                SiteCacheCommand::Remove { site } => {
                    let n = provider.remove_site_caches(site.as_ref()).await?;
                    vec![format!("✓ removed {n} site cache App(s)")]
                }
                SiteCacheCommand::Prune { idle } => {
                    let n = provider.prune_site_caches(idle).await?;
                    vec![format!("✓ pruned {n} site cache App(s)")]
                }
            })
        },
    )?;
    let lines = finished.output;
    super::print(|out| lines.iter().try_for_each(|line| writeln!(out, "{line}")))
}

/// Runs one operation for a person at a terminal: a `create` or `start` stopped by SIGINT
/// (Ctrl-C), SIGTERM or SIGHUP removes what it made; a failed `create` is followed by the
/// DeleteInstance its rollback may have left to do (there is no GARM to run it); a `delete` of
/// a name nothing has is `None`, to say so.
async fn run_operation(
    provider: &Provider,
    operation: Operation,
) -> Result<Option<Outcome>, Error> {
    match operation {
        // Dropping the future stops it where it is; what a create made is removed by name, as
        // GARM's DeleteInstance would, including an AppInst still creating.
        watched @ (Operation::Create { .. } | Operation::Start { .. }) => {
            let name = watched.instance().unwrap_or_default().to_string();
            let create = matches!(watched, Operation::Create { .. });
            let mut signals = StopSignals::watch();
            let stopped = tokio::select! {
                result = provider.run(watched) => Ok(result),
                signal = signals.next() => Err(signal),
            };
            match stopped {
                // Unless the name is another runner's, or nothing reached Edge Connect: nothing
                // of this create to remove.
                Ok(Err(e)) if create && !matches!(e, Error::Duplicate(_)) && !made_nothing(&e) => {
                    Err(after_failed_create(provider, &name, e, &mut signals).await)
                }
                Ok(result) => result.map(Some),
                Err(signal) if create => {
                    Err(interrupted(provider, &name, signal, &mut signals).await)
                }
                Err(signal) => Err(interrupted_start(provider, &name, signal, &mut signals).await),
            }
        }
        // A person's delete waits (with progress) while the platform holds the AppInst busy.
        delete @ Operation::Delete { .. } => {
            // The provider's delete succeeds when nothing has the name (GARM needs that), so
            // look first to tell the person which it was.
            let instance = delete.instance().unwrap_or_default().to_string();
            match provider.run(Operation::Get { instance }).await {
                Err(Error::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
                Ok(_) => provider.run(delete).await.map(Some),
            }
        }
        // A person's remove-all leaves nothing of this controller: its site caches go too
        // (GARM's RemoveAllInstances leaves them).
        remove_all @ Operation::RemoveAll { .. } => {
            let outcome = provider.run(remove_all).await?;
            let caches = provider.remove_site_caches(None).await?;
            if caches > 0 {
                say(&format!("  … removed {caches} site cache App(s)"));
            }
            Ok(Some(outcome))
        }
        other @ (Operation::Get { .. } | Operation::List { .. } | Operation::Stop { .. }) => {
            provider.run(other).await.map(Some)
        }
    }
}

/// After a failed `create`: removes what its rollback left of `name`, waiting (with progress,
/// within a command's deadline from now) while the platform holds it busy; a signal stops the
/// wait.
/// Returns the error to report, naming what stays and the command that removes it.
async fn after_failed_create(
    provider: &Provider,
    name: &str,
    cause: Error,
    signals: &mut StopSignals,
) -> Error {
    let provider = provider.anew();
    let done = tokio::select! {
        done = leftovers::remove(&provider, Which::Named(name)) => done,
        signal = signals.next() => {
            return Error::Interrupted(format!("{cause}; interrupted by {signal} while removing what is left of {name}; remove it with: delete {name}"));
        }
    };
    match (done.removed.is_empty(), done.left.is_empty()) {
        (true, true) => cause,
        (false, true) => Error::failed(format!(
            "{cause}; removed since by this command's DeleteInstance"
        )),
        (_, false) => Error::failed(format!(
            "{cause}; left on Edge Connect: {}; remove it with: delete {name}",
            done.left.join("; ")
        )),
    }
}

/// Whether a create's failure is the login or a host that could not be reached: then CreateApp
/// was never sent, or the rollback removed what it made (a rollback that fails reports a
/// failure of its own), and looking would only wait for that host again.
fn made_nothing(e: &Error) -> bool {
    std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<edge_connect::ApiError>())
        .is_some_and(|api| {
            api.kind == edge_connect::ApiErrorKind::Unreachable
                || api.rpc == edge_connect::Rpc::Login
        })
}

/// How often an interrupted create looks again for the App of a CreateApp left unanswered.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// Removes what an interrupted create made, within the cleanup grace
/// ([`Provider::for_cleanup`]); the signal again stops at once. Returns the error to report.
async fn interrupted(
    provider: &Provider,
    name: &str,
    signal: &str,
    signals: &mut StopSignals,
) -> Error {
    say(&format!(
        "  … interrupted by {signal}: removing what was made of {name} ({signal} again stops at once)"
    ));
    let unanswered = provider.unanswered_create_app();
    let provider = provider.for_cleanup();
    let cleanup = async {
        let mut done = leftovers::remove(&provider, Which::Named(name)).await;
        // A CreateApp the signal cut off may still be carried out by the controller: look again
        // until its answer would have come, and remove the App that appeared.
        let Some(until) = unanswered else {
            return done;
        };
        provider.report(&format!(
            "the CreateApp of {name} was sent and not answered: looking for its App until the answer would have come (edge_connect.request_timeout_secs)"
        ));
        while done.left.is_empty()
            && std::time::Instant::now() < until
            && provider.client().deadline().has_room_for(LOOK_AGAIN)
        {
            tokio::time::sleep(LOOK_AGAIN).await;
            let again = leftovers::remove(&provider, Which::Named(name)).await;
            done.removed.extend(again.removed);
            done.left = again.left;
        }
        done
    };
    let done = tokio::select! {
        done = cleanup => Some(done),
        _ = signals.next() => None,
    };
    Error::Interrupted(match done {
        Some(done) if done.left.is_empty() => {
            format!("interrupted; nothing of {name} was left behind")
        }
        Some(done) => format!(
            "interrupted; left on Edge Connect: {}; remove it with: delete {name}",
            done.left.join("; ")
        ),
        None => format!(
            "interrupted; {name} may be left behind (interrupted again); remove it with: delete {name}"
        ),
    })
}

/// Removes the AppInst an interrupted `start` was deploying (the App stays, as a stopped
/// runner's does), within the cleanup grace ([`Provider::for_cleanup`]); the signal again
/// stops at once.
async fn interrupted_start(
    provider: &Provider,
    name: &str,
    signal: &str,
    signals: &mut StopSignals,
) -> Error {
    say(&format!(
        "  … interrupted by {signal}: stopping {name} again ({signal} again stops at once)"
    ));
    let stop = Operation::Stop {
        instance: name.to_string(),
        wait: true,
    };
    let cleanup = provider.for_cleanup();
    let stopped = tokio::select! {
        result = cleanup.run(stop) => result.map(|_| ()).map_err(|e| e.to_string()),
        _ = signals.next() => Err("interrupted again".to_string()),
    };
    Error::Interrupted(match stopped {
        Ok(()) => format!("interrupted; {name} is stopped"),
        Err(why) => {
            format!("interrupted; {name} may be left starting ({why}); stop it with: stop {name}")
        }
    })
}

/// Reads a bootstrap file: GARM's bootstrap JSON, each failure named with the file.
fn read_bootstrap(path: &Path) -> Result<BootstrapInstance, Error> {
    let hint = "; it must be GARM's bootstrap JSON, see examples/";
    let (_, raw) = read_json(path, "bootstrap file", hint)?;
    let file = path.display();
    BootstrapInstance::from_slice(raw.as_bytes())
        .map_err(|e| Error::failed(format!("bootstrap file {file}: {}", Error::from(e))))
}

/// Reads a JSON file given on the command line: a regular file of bounded size that holds JSON,
/// each failure named with the file (`hint` ends the message of one that is not JSON). Returns
/// the JSON and the text it was read from.
fn read_json(path: &Path, what: &str, hint: &str) -> Result<(serde_json::Value, String), Error> {
    let raw = crate::text::read_regular_file(path, MAX_BOOTSTRAP_BYTES)
        .map_err(|e| Error::failed(format!("cannot read {what} {}: {e}", path.display())))?;
    match serde_json::from_str(&raw) {
        Ok(value) => Ok((value, raw)),
        Err(e) => Err(Error::failed(format!(
            "{what} {} is not JSON (line {} column {}){hint}",
            path.display(),
            e.line(),
            e.column()
        ))),
    }
}

fn summary(operation: &Operation) -> String {
    match operation {
        Operation::Create { bootstrap, .. } => format!("created {}", bootstrap.name),
        Operation::Delete { instance, .. } => format!("deleted {instance}"),
        Operation::Get { instance } => format!("found {instance}"),
        Operation::List { pool_id: Some(p) } => format!("listed pool {p}"),
        Operation::List { pool_id: None } => "listed all pools".to_string(),
        Operation::RemoveAll { .. } => "removed all runners of this controller".to_string(),
        Operation::Start { instance } => format!("started {instance}"),
        Operation::Stop { instance, .. } => format!("stopped {instance}"),
    }
}
