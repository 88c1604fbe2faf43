//! The two front doors: GARM's protocol ([`garm`]) and the command line for people ([`cli`]).
//! Both turn their input into a `provider::Operation` and hand it to the one
//! `pipeline`; they differ only in how they read input and print the outcome.
//!
//! Output goes through [`print()`] and [`say`], never `println!`/`eprintln!`: those panic
//! when the stream cannot be written (stdout to a closed pipe, stderr to a full disk), which
//! would turn a clean exit code into 101.

use std::io::Write;

use crate::error::Error;
use crate::garm::{exit, ProtocolError};

pub mod cli;
pub mod garm;
mod table;

/// Exit code of a CLI command stopped by Ctrl-C (128 + SIGINT, what a shell reports).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit code of a failed command, the same through both doors: GARM's codes for "not
/// found" (30) and "duplicate" (31), a shell's for Ctrl-C, 1 for everything else.
pub fn exit_code(e: &Error) -> u8 {
    match e {
        Error::NotFound(_) => exit::NOT_FOUND,
        Error::Duplicate(_) => exit::DUPLICATE,
        Error::Interrupted(_) => EXIT_INTERRUPTED,
        Error::Failed { .. } => exit::FAILURE,
    }
}

/// GARM's input was not what the protocol promises: a failure with that one line.
impl From<ProtocolError> for Error {
    fn from(e: ProtocolError) -> Self {
        Error::caused_by(e.to_string(), e)
    }
}

/// Writes to stdout through `write`, buffered, and flushes.
pub fn print(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), Error> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    write(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| Error::caused_by(format!("cannot write the result to stdout: {e}"), e))
}

/// Writes one line to stderr. A failure is ignored: stderr is where failures are reported, so
/// there is nowhere left to report this one, and the exit code still tells the caller.
pub fn say(line: &str) {
    // The one scrubber: a server's message in the line may repeat a secret.
    let line = edge_connect::Secret::scrub(line);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.write_all(b"\n");
    let _ = err.flush();
}

/// The build: the version, plus the git commit when built from a git checkout
/// (`v0.1.0 (abc1234)`), for people; GARM gets [`crate::VERSION`].
pub fn build_description() -> String {
    match env!("GARM_PROVIDER_GIT_COMMIT") {
        "" => format!("v{}", env!("CARGO_PKG_VERSION")),
        commit => format!("v{} ({commit})", env!("CARGO_PKG_VERSION")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_garm_provider_common() {
        assert_eq!(exit_code(&Error::NotFound("x".into())), 30);
        assert_eq!(exit_code(&Error::Duplicate("x".into())), 31);
        assert_eq!(exit_code(&Error::Interrupted("x".into())), 130);
        assert_eq!(exit_code(&Error::failed("x")), 1);
    }
}
