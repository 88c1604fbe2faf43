//! GARM mode: no arguments, `GARM_COMMAND` set. Exactly one JSON document (or nothing) on stdout,
//! one line on stderr on failure, GARM's exit codes.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use crate::config::Config;
use crate::error::Error;
use crate::extra_specs::ExtraSpecs;
use crate::garm::env::{Answered, Facts, SUPPORTED_INTERFACE_VERSIONS};
use crate::garm::{GarmCommand, Request};
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
    let message = crate::pipeline::scrubber().scrub(message);
    super::say(&crate::text::echo_max(message.trim_end(), MAX_FAULT_CHARS));
}

/// Runs the command and prints its answer; `log` receives the log guard once logging is set up.
fn execute(log: &mut Option<LogGuard>) -> Result<(), Error> {
    let mut request = Request::from_process()?;
    let Facts(_, answered, follow_up) = request.command.facts();
    if answered != Answered::ByEdgeConnect {
        let text = local_command(&request)?;
        return super::print(|out| out.write_all(text.as_bytes()));
    }
    let (session, guard) = crate::pipeline::open(Path::new(&request.config_file))?;
    let log_file = log.insert(guard).file;
    // Every line of this command carries command, instance, pool and controller. The instance
    // of a create is only known once stdin is read, so it is recorded then.
    let span = tracing::info_span!(
        "garm",
        command = ?request.command,
        instance = tracing::field::Empty,
        pool = request.pool_id.as_deref().unwrap_or(""),
        controller = %request.controller_id,
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
    let within = session.deadline.remaining();
    request
        .read_stdin(std::io::stdin(), within)
        .map_err(|e| fail(e.into()))?;
    // Which interface GARM speaks explains which variables it sent (extra specs only in v0.1.1).
    let (version, controller_id) = (request.version, request.controller_id.clone());
    let pool = request.pool_id.clone();
    let operation = operation(request).map_err(fail)?;
    span.record(
        "instance",
        // Escaped by the log writer, cut here: a 100 KB id must not be repeated on every line.
        tracing::field::display(crate::text::echo_max(
            operation.instance().unwrap_or_default(),
            256,
        )),
    );
    tracing::info!(interface = version, "start");

    let progress: crate::provider::Progress =
        Arc::new(|m: &str| tracing::debug!(message = m, "progress"));
    // The pipeline logs the requests and logins the command took.
    let finished = crate::pipeline::run(
        session,
        &controller_id,
        crate::pipeline::process_environment(),
        progress,
        operation,
        async |provider, operation| provider.run_in(operation, pool).await,
    )
    .map_err(|e| match follow_up {
        // A failure that leaves part of the runner behind says who removes it (docs/operations.md,
        // "A runner that cannot start").
        Some(who) if e.leaves_something() => fail(Error::left_behind(format!("{e}{who}"))),
        _ => fail(e),
    })?;
    // Encoded straight onto stdout: ListInstances of a large pool would otherwise hold its
    // whole JSON text in memory beside the list.
    super::print(|out| match &finished.output {
        Outcome::Instance(i) => Ok(serde_json::to_writer(out, i)?),
        Outcome::Instances(list) => Ok(serde_json::to_writer(out, list)?),
        Outcome::Done => Ok(()),
    })
    .map_err(fail)
}

/// The answer of a command answered without config or Edge Connect ([`Answered`]).
fn local_command(request: &Request) -> Result<String, Error> {
    let json = |v: serde_json::Value| v.to_string();
    Ok(match request.command {
        GarmCommand::GetVersion => crate::VERSION.to_string(),
        GarmCommand::GetSupportedInterfaceVersions => {
            json(serde_json::json!(SUPPORTED_INTERFACE_VERSIONS))
        }
        GarmCommand::GetConfigJSONSchema => json(Config::json_schema()?),
        GarmCommand::GetExtraSpecsJSONSchema => json(ExtraSpecs::json_schema()?),
        GarmCommand::ValidatePoolInfo => {
            // Over the provider config when GARM names one: the verdict CreateInstance gives.
            let config = (!request.config_file.is_empty())
                .then(|| Config::load(Path::new(&request.config_file)))
                .transpose()?;
            ExtraSpecs::judge(request.pool_extra_specs.as_ref(), config.as_ref())?;
            String::new()
        }
        instance => {
            return Err(Error::failed(format!(
                "{instance:?} is not a local command"
            )))
        }
    })
}

/// The operation of an instance command, with the bootstrap params a create read from stdin.
fn operation(request: Request) -> Result<Operation, Error> {
    let instance = request.instance_id;
    Ok(match request.command {
        GarmCommand::CreateInstance => {
            let bootstrap = request.bootstrap.ok_or_else(|| {
                Error::failed("no bootstrap params on stdin (CreateInstance needs GARM's JSON)")
            })?;
            Operation::create(bootstrap, request.pool_id, request.pool_extra_specs)
        }
        GarmCommand::DeleteInstance => Operation::Delete {
            instance,
            wait: false,
        },
        GarmCommand::GetInstance => Operation::Get { instance },
        GarmCommand::ListInstances => Operation::List {
            pool_id: request.pool_id,
        },
        GarmCommand::StartInstance => Operation::Start { instance },
        GarmCommand::StopInstance => Operation::Stop {
            instance,
            wait: false,
        },
        GarmCommand::RemoveAllInstances => Operation::RemoveAll { wait: false },
        local => {
            return Err(Error::failed(format!(
                "{local:?} is not an instance command"
            )))
        }
    })
}
