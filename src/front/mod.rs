//! The two front doors: GARM's protocol ([`garm`]) and the command line for people ([`cli`]).
//! Both turn their input into a `provider::Operation` and hand it to the one
//! `pipeline`; they differ only in how they read input and print the outcome.
//!
//! Output goes through [`print()`] and [`say`], never `println!`/`eprintln!`: those panic
//! when the stream cannot be written (stdout to a closed pipe, stderr to a full disk), which
//! would turn a clean exit code into 101.

use std::io::Write;
use std::sync::OnceLock;

use edge_connect::Scrubber;

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

/// Longest stderr line, in characters: a server's message is kept whole by the client (so
/// that it is masked before it is cut) and may be 64 KiB.
const MAX_LINE_CHARS: usize = 4000;

/// The command's scrubber. stderr is the process's, so is the scrubber of its lines: each front
/// door hands this one to the pipeline, which gives it every secret of the command
/// (`pipeline::protect`) and hands it on to the log writer and the client.
pub fn scrubber() -> &'static Scrubber {
    static SCRUBBER: OnceLock<Scrubber> = OnceLock::new();
    SCRUBBER.get_or_init(Scrubber::new)
}

/// Writes one line to stderr: masked by [`scrubber`], then made one line of text a terminal
/// shows as it is ([`crate::text::echo_max`]: control characters and bidirectional overrides
/// escaped) and cut. A failure is ignored: stderr is where failures are reported, so there is
/// nowhere left to report this one, and the exit code still tells the caller.
pub fn say(line: &str) {
    // Masked before it is cut: half a secret would no longer be recognised.
    let line = crate::text::echo_max(&scrubber().scrub(line), MAX_LINE_CHARS);
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
