//! The two front doors: GARM's protocol ([`garm`]) and the command line for people ([`cli`]).
//! Both turn their input into a `provider::Operation` and hand it to the one
//! `pipeline`; they differ only in how they read input and print the outcome.
//!
//! Output goes through [`write_stdout`] and [`say`], never `println!`/`eprintln!`: those panic
//! when the stream cannot be written (stdout to a closed pipe, stderr to a full disk), which
//! would turn a clean exit code into 101.

use std::io::Write;

pub mod cli;
pub mod garm;

/// Writes `text` to stdout and flushes; the caller decides what a failure means.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
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
