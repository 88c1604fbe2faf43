//! GARM mode: no arguments, `GARM_COMMAND` set. Exactly one JSON document (or nothing) on stdout,
//! one line on stderr on failure, GARM's exit codes.

use std::io::Write as _;

use crate::error::Error;
use crate::logging::LogGuard;
use crate::pipeline::Answer;
use crate::provider::Outcome;

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
    match execute(&mut log) {
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
    }
}

/// The one stderr line GARM keeps: secrets masked, control characters escaped, length bounded.
fn fault(message: &str) {
    // Scrubbed before it is cut, so that no secret is left half-shown at the cut.
    let message = crate::pipeline::scrubber().scrub(message);
    super::say(&crate::text::echo_max(message.trim_end(), MAX_FAULT_CHARS));
}

/// Runs the command (`pipeline::garm`) and prints its answer; `log` receives the log guard once
/// logging is set up.
fn execute(log: &mut Option<LogGuard>) -> Result<(), Error> {
    let answer = crate::pipeline::garm(log)?;
    // Encoded straight onto stdout: ListInstances of a large pool would otherwise hold its
    // whole JSON text in memory beside the list.
    super::print(|out| match &answer {
        Answer::Text(text) => out.write_all(text.as_bytes()),
        Answer::Outcome(Outcome::Instance(i)) => Ok(serde_json::to_writer(out, i)?),
        Answer::Outcome(Outcome::Instances(list)) => Ok(serde_json::to_writer(out, list)?),
        Answer::Outcome(Outcome::Done) => Ok(()),
    })
    .inspect_err(|e| {
        // Without a log file the front door's stderr line is the only record; don't print twice.
        if log.as_ref().is_some_and(|l| l.file) {
            tracing::error!(error = %e, "command failed");
        }
    })
}
