//! Logging to the configured file (or, in CLI mode, to stderr at warn level), never to stdout.
//!
//! GARM runs many provider processes at once, all appending to the same file. Each event is
//! formatted into one buffer and written with a single `write` on a file opened for appending,
//! so lines from different processes never interleave. Control characters inside an event
//! (an instance name with a newline) are escaped, so no input can forge a log line.
//!
//! Every record passes through the command's scrubber ([`edge_connect::Scrubber`], given to
//! [`init`]) first: a server's message quoted in a log field can hold the password, a token or
//! a registry password, in any encoding.
//!
//! In GARM mode stderr belongs to the front door alone: GARM stores it as the runner's fault,
//! and it must be exactly one line. Nothing is logged to stderr there.

use std::borrow::Cow;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use edge_connect::Scrubber;

use crate::config::{Config, LogFormat, LogLevel};

/// Set by GARM mode before logging starts: no log event may reach stderr.
static STDERR_RESERVED: AtomicBool = AtomicBool::new(false);

/// Keeps stderr free of log events for the rest of the process (GARM mode: its one stderr
/// line is the front door's).
pub fn reserve_stderr() {
    STDERR_RESERVED.store(true, Ordering::Relaxed);
}

/// Where logging went.
pub struct LogGuard {
    /// Whether events go to the log file (not to stderr, where the front door already prints
    /// the one-line error).
    pub file: bool,
    /// Why the configured log file is not in use, if it is not: GARM mode folds this into its
    /// one error line instead of printing a second line. Boxed: the guard travels in the front
    /// door's error values, which should stay small.
    pub warning: Option<Box<str>>,
}

/// A writer that cleans every formatted event before it writes it: the log file (each event one
/// `write(2)` in append mode) or stderr in CLI mode. A write error is the layer's to ignore
/// (`log_internal_errors(false)`): there is nowhere left to report it.
struct Cleaned<W> {
    out: W,
    scrubber: Scrubber,
}

/// One formatted record as it may be written: secrets masked, control characters escaped so
/// that a field such as an instance name with a newline cannot start a fake log line; the
/// record's own final newline is kept. A record of printable ASCII with nothing to mask (most
/// of them) is written as it came, uncopied.
fn clean<'r>(record: &'r [u8], scrubber: &Scrubber) -> Cow<'r, [u8]> {
    let text = match String::from_utf8_lossy(record) {
        Cow::Borrowed(text) => scrubber.scrub(text),
        Cow::Owned(text) => Cow::Owned(scrubber.scrub(&text).into_owned()),
    };
    let body = text.strip_suffix('\n');
    let line = body.unwrap_or(&text);
    if line.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return match text {
            Cow::Borrowed(text) => Cow::Borrowed(text.as_bytes()),
            Cow::Owned(text) => Cow::Owned(text.into_bytes()),
        };
    }
    let mut out = crate::text::one_line(line);
    if body.is_some() {
        out.push('\n');
    }
    Cow::Owned(out.into_bytes())
}

impl<W: Write> Write for Cleaned<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // write_all on an O_APPEND file: the kernel places each write at the current end.
        self.out.write_all(&clean(buf, &self.scrubber))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Starts logging as the config says, every line masked by `scrubber`. A log file that cannot be opened does not fail the
/// command: CLI mode logs warnings to stderr instead, with one warning saying so; GARM mode logs
/// nothing and keeps the reason in [`LogGuard::warning`] for its error line.
pub fn init(config: &Config, scrubber: Scrubber) -> LogGuard {
    let (level, format) = (config.log_level, config.log_format);
    let warning = match config.log_file.as_deref().map(|p| (p, open_append(p))) {
        Some((_, Ok(f))) => {
            // Written by the thread that logs, one `write` per event, before the call returns:
            // a background writer's queue is flushed at exit for at most a second, so under load
            // the last lines of a command (the ones that say why it failed) were lost, and its
            // shutdown notice went to stdout, which is GARM's.
            install(
                level,
                format,
                std::sync::Mutex::new(Cleaned { out: f, scrubber }),
            );
            return LogGuard {
                file: true,
                warning: None,
            };
        }
        Some((path, Err(e))) => Some(format!(
            "cannot open log_file {}: {e}",
            crate::text::one_line(&path.display().to_string())
        )),
        None => None,
    };
    if !STDERR_RESERVED.load(Ordering::Relaxed) {
        // stderr carries warnings at most: GARM shows it to users.
        install(level.min(LogLevel::Warn), format, move || Cleaned {
            out: std::io::stderr(),
            scrubber: scrubber.clone(),
        });
        if let Some(warning) = &warning {
            tracing::warn!("{warning}; logging warnings to stderr instead");
        }
    }
    LogGuard {
        file: false,
        warning: warning.map(String::into_boxed_str),
    }
}

/// Opens the log file for appending: created 0600, or made 0600 if it is ours (the log names
/// instances, pools and controller; it is nobody else's business), never another user's file,
/// never through a symlink (another user could
/// point a planted link at a file of ours), never a FIFO or device (the open does not block,
/// and anything but a regular file is refused).
pub(crate) fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    options
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = crate::text::open_regular(path, &options).map_err(|e| match e.raw_os_error() {
        // What O_NOFOLLOW answers for a symlink: said in words.
        Some(libc::ELOOP) => std::io::Error::new(
            e.kind(),
            "it is a symbolic link, which is not followed (give the real path)",
        ),
        // A FIFO without a reader (a non-blocking open for writing fails that way), or a device
        // without its driver: say what the path is.
        Some(libc::ENXIO) => std::fs::symlink_metadata(path)
            .ok()
            .and_then(|meta| crate::text::not_regular(&meta))
            .unwrap_or(e),
        _ => e,
    })?;
    keep_private(&file)?;
    Ok(file)
}

/// A log file of another user is refused (its owner reads what we write, and may have
/// planted it to collect it); our own file is made 0600 on the open descriptor, whatever mode
/// it had (an earlier version, or a umask, may have left it 0644).
fn keep_private(file: &std::fs::File) -> std::io::Result<()> {
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(std::io::Error::other(format!(
            "it belongs to another user (uid {}, this provider runs as uid {me}); remove it, or give log_file a path of this user's",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

fn install<W>(level: LogLevel, format: LogFormat, writer: W)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    // Our crates (the provider and its Edge Connect client) at the configured level;
    // dependencies (hyper, rustls) only at warn, so the log holds provider events and never raw
    // HTTP traffic. Targets, not EnvFilter: the same prefixes without a regex engine, which
    // would be a fifth of the binary for three fixed directives.
    let level = match level {
        LogLevel::Error => LevelFilter::ERROR,
        LogLevel::Warn => LevelFilter::WARN,
        LogLevel::Info => LevelFilter::INFO,
        LogLevel::Debug => LevelFilter::DEBUG,
        LogLevel::Trace => LevelFilter::TRACE,
    };
    let filter = Targets::new()
        .with_default(LevelFilter::WARN)
        .with_target("garm_provider_edge_connect", level)
        .with_target("edge_connect", level);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        // Its report of a failed write is an eprintln!, which panics when stderr cannot be
        // written either.
        .log_internal_errors(false);
    let base = tracing_subscriber::registry().with(filter);
    // A second init (tests calling into the library twice) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => base.with(layer.with_target(false)).try_init(),
        LogFormat::Json => {
            let layer = layer.json().with_current_span(true).with_span_list(false);
            base.with(layer).try_init()
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn records_keep_their_final_newline_only() {
        let s = edge_connect::Scrubber::new();
        let clean = |r: &[u8]| super::clean(r, &s).into_owned();
        assert_eq!(clean(b"plain line\n"), b"plain line\n");
        assert!(matches!(
            super::clean(b"plain line\n", &s),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(clean("bidi \u{202e}x\n".as_bytes()), b"bidi \\u{202e}x\n");
        assert_eq!(clean(b"tab\tx\n"), b"tab\\tx\n");
        assert_eq!(clean(b"bad \xff\n"), "bad \u{fffd}\n".as_bytes());
        assert_eq!(
            clean(b"instance=a\nFAKE line\n"),
            b"instance=a\\nFAKE line\n"
        );
        assert_eq!(clean("c1 \u{9b} x\n".as_bytes()), b"c1 \\u{9b} x\n");
    }
}
