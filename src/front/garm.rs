//! GARM mode: no arguments, `GARM_COMMAND` set. Exactly one JSON document (or nothing) on stdout,
//! one line on stderr on failure, GARM's exit codes.

use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::env::{GarmCommand, GarmEnv, SUPPORTED_INTERFACE_VERSIONS};
use crate::garm::BootstrapInstance;
use crate::logging::LogGuard;
use crate::provider::{Operation, Outcome};

/// Longest stderr line, in characters: GARM stores it as the runner's fault, and an echoed
/// 100 KB instance id must not fill its database.
const MAX_FAULT_CHARS: usize = 2000;

/// Runs the GARM protocol and returns the exit code. Nothing but the result goes to stdout,
/// and on failure exactly one line goes to stderr.
pub fn run() -> u8 {
    crate::logging::reserve_stderr();
    // A panic is a bug, but GARM still stores stderr as the fault: keep it to one line too
    // (the default hook prints two or three, and a backtrace note). Exit code stays 101.
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("unknown panic");
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        fault(&format!(
            "internal error (a bug, please report it): {message}{at}"
        ));
    }));
    // Kept to the end: dropping the log guard flushes the log file.
    let mut log = None;
    let code = match execute(&mut log) {
        Ok(()) => 0,
        Err(e) => {
            // The log file's trouble is worth knowing, but only as part of the one line.
            let line = match log.as_ref().and_then(|l| l.warning.as_deref()) {
                Some(warning) => format!("{e} (also: {warning})"),
                None => e.to_string(),
            };
            fault(&line);
            super::exit_code(&e)
        }
    };
    drop(log);
    code
}

/// The one stderr line GARM keeps: secrets masked, control characters escaped, length bounded.
fn fault(message: &str) {
    // Scrubbed before it is cut, so that no secret is left half-shown at the cut.
    let message = super::scrubber().scrub(message);
    super::say(&crate::text::echo_max(message.trim_end(), MAX_FAULT_CHARS));
}

/// Runs the command and prints its answer; `log` receives the log guard once logging is set up.
fn execute(log: &mut Option<LogGuard>) -> Result<(), Error> {
    let env = GarmEnv::from_process()?;
    if let Some(text) = local_command(&env)? {
        return super::print(|out| out.write_all(text.as_bytes()));
    }
    let scrubber = super::scrubber();
    let session = crate::pipeline::open(Path::new(&env.config_file), scrubber)?;
    let log_file = log.insert(session.log).file;
    // Every line of this command carries command, instance, pool and controller. The instance
    // of a create is only known once stdin is read, so it is recorded then.
    let span = tracing::info_span!(
        "garm",
        command = ?env.command,
        instance = tracing::field::Empty,
        pool = env.pool_id.as_deref().unwrap_or(""),
        controller = %env.controller_id,
    );
    let _entered = span.enter();
    let fail = |e: Error| {
        // Without a log file the front door's stderr line is the only record; don't print twice.
        if log_file {
            tracing::error!(error = %e, "command failed");
        }
        e
    };

    // stdin is read under the command's one deadline, not a budget of its own.
    let operation = operation(&env, session.deadline.remaining()).map_err(fail)?;
    span.record(
        "instance",
        // Escaped by the log writer, cut here: a 100 KB id must not be repeated on every line.
        tracing::field::display(crate::text::echo_max(
            operation.instance().unwrap_or_default(),
            256,
        )),
    );
    // Which interface GARM speaks explains which variables it sent (extra specs only in v0.1.1).
    tracing::info!(interface = env.version, "start");

    let progress: crate::provider::Progress =
        Arc::new(|m: &str| tracing::debug!(message = m, "progress"));
    // The pipeline logs the requests and logins the command took.
    let secrets = crate::pipeline::Secrets::of(scrubber, &operation);
    let finished = crate::pipeline::run(
        session.config,
        session.deadline,
        secrets,
        &env.controller_id,
        crate::pipeline::process_environment(),
        progress,
        async |provider| provider.run(operation).await,
    )
    .map_err(|e| fail(garm_follows_up(env.command, e)))?;
    // Encoded straight onto stdout: ListInstances of a large pool would otherwise hold its
    // whole JSON text in memory beside the list.
    super::print(|out| match &finished.output {
        Outcome::Instance(i) => Ok(serde_json::to_writer(out, i)?),
        Outcome::Instances(list) => Ok(serde_json::to_writer(out, list)?),
        Outcome::Done => Ok(()),
    })
    .map_err(fail)
}

/// A failure that leaves part of the runner behind ([`Error::left_behind`]) says who removes it:
/// GARM runs DeleteInstance right after a failed CreateInstance, and again, every few seconds,
/// after a failed DeleteInstance (docs/operations.md, "A runner that cannot start").
fn garm_follows_up(command: GarmCommand, e: Error) -> Error {
    if !e.leaves_something() {
        return e;
    }
    let who = match command {
        GarmCommand::CreateInstance => ", DeleteInstance will retry it",
        GarmCommand::DeleteInstance => "; GARM's next DeleteInstance after that removes it",
        GarmCommand::GetInstance
        | GarmCommand::ListInstances
        | GarmCommand::RemoveAllInstances
        | GarmCommand::StartInstance
        | GarmCommand::StopInstance
        | GarmCommand::GetVersion
        | GarmCommand::GetSupportedInterfaceVersions
        | GarmCommand::GetConfigJSONSchema
        | GarmCommand::GetExtraSpecsJSONSchema
        | GarmCommand::ValidatePoolInfo => return e,
    };
    Error::left_behind(format!("{e}{who}"))
}

/// Commands answered without config or Edge Connect.
fn local_command(env: &GarmEnv) -> Result<Option<String>, Error> {
    let json = |v: serde_json::Value| v.to_string();
    Ok(Some(match env.command {
        GarmCommand::GetVersion => crate::VERSION.to_string(),
        GarmCommand::GetSupportedInterfaceVersions => {
            json(serde_json::json!(SUPPORTED_INTERFACE_VERSIONS))
        }
        GarmCommand::GetConfigJSONSchema => json(Config::json_schema()?),
        GarmCommand::GetExtraSpecsJSONSchema => json(ExtraSpecs::json_schema()?),
        GarmCommand::ValidatePoolInfo => {
            let specs = ExtraSpecs::from_value(env.pool_extra_specs.as_ref())?;
            // The operator's prefix for pull password variables is in the config.
            if specs.image_pull_password_env.is_some() && !env.config_file.is_empty() {
                let config = Config::load(Path::new(&env.config_file))?;
                specs.check_pull_password_env(config.image_pull_password_env_prefix.as_deref())?;
            }
            String::new()
        }
        GarmCommand::CreateInstance
        | GarmCommand::DeleteInstance
        | GarmCommand::GetInstance
        | GarmCommand::ListInstances
        | GarmCommand::RemoveAllInstances
        | GarmCommand::StartInstance
        | GarmCommand::StopInstance => return Ok(None),
    }))
}

/// The operation for an instance command (reads stdin for CreateInstance, for at most
/// `stdin_within`).
fn operation(env: &GarmEnv, stdin_within: std::time::Duration) -> Result<Operation, Error> {
    let instance = env.instance_id.clone();
    Ok(match env.command {
        GarmCommand::CreateInstance => Operation::create(
            BootstrapInstance::from_reader_within(std::io::stdin(), stdin_within)?,
            env.pool_id.clone(),
            env.pool_extra_specs.clone(),
        ),
        GarmCommand::DeleteInstance => Operation::Delete { instance },
        GarmCommand::GetInstance => Operation::Get { instance },
        GarmCommand::ListInstances => Operation::List {
            pool_id: env.pool_id.clone().unwrap_or_default(),
        },
        GarmCommand::RemoveAllInstances => Operation::RemoveAll,
        GarmCommand::StartInstance => Operation::Start { instance },
        GarmCommand::StopInstance => Operation::Stop { instance },
        local @ (GarmCommand::GetVersion
        | GarmCommand::GetSupportedInterfaceVersions
        | GarmCommand::ValidatePoolInfo
        | GarmCommand::GetConfigJSONSchema
        | GarmCommand::GetExtraSpecsJSONSchema) => {
            return Err(Error::failed(format!(
                "{local:?} is not an instance command"
            )))
        }
    })
}
