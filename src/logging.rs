//! Logging to the configured file (or, in CLI mode, to stderr at warn level), never to stdout.
//!
//! GARM runs many provider processes at once, all appending to the same file. Each event is
//! formatted into one buffer and written with a single `write` on a file opened for appending,
//! so lines from different processes never interleave. Control characters inside an event
//! (an instance name with a newline) are escaped, so no input can forge a log line.
//!
//! Every record passes through the one scrubber ([`edge_connect::Secret::scrub`]) first: a
//! server's message quoted in a log field can hold the password, a token or a registry
//! password, in any encoding.
//!
//! In GARM mode stderr belongs to the front door alone: GARM stores it as the runner's fault,
//! and it must be exactly one line. Nothing is logged to stderr there.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat, LogLevel};

/// Lines the background writer may queue before a log call waits for it.
const LOG_QUEUE_LINES: usize = 256;

/// Set by GARM mode before logging starts: no log event may reach stderr.
static STDERR_RESERVED: AtomicBool = AtomicBool::new(false);

/// Keeps stderr free of log events for the rest of the process (GARM mode: its one stderr
/// line is the front door's).
pub fn reserve_stderr() {
    STDERR_RESERVED.store(true, Ordering::Relaxed);
}

/// Keeps the log writer alive; dropping it flushes pending lines.
pub struct LogGuard {
    _guard: Option<tracing_appender::non_blocking::WorkerGuard>,
    // Boxed: the guard travels in the front door's error values, which should stay small.
    warning: Option<Box<str>>,
}

impl LogGuard {
    /// True when events go to the log file (not to stderr, where the front door already prints
    /// the one-line error).
    pub fn to_file(&self) -> bool {
        self._guard.is_some()
    }

    /// Why the configured log file is not in use, if it is not: GARM mode folds this into its
    /// one error line instead of printing a second line.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }
}

/// A file writer that turns every buffered event into one `write(2)` in append mode.
struct AppendFile(std::fs::File);

/// One formatted record as it may be written: secrets masked, control characters escaped.
fn clean(record: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    use std::borrow::Cow;
    let text = String::from_utf8_lossy(record);
    let scrubbed: Cow<'_, [u8]> = match edge_connect::Secret::scrub(&text) {
        Cow::Borrowed(_) if matches!(text, Cow::Borrowed(_)) => Cow::Borrowed(record),
        other => Cow::Owned(other.into_owned().into_bytes()),
    };
    match crate::text::escape_record(&scrubbed) {
        Some(escaped) => Cow::Owned(escaped),
        None => scrubbed,
    }
}

impl Write for AppendFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // write_all on an O_APPEND file: the kernel places each write at the current end.
        self.0.write_all(&clean(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// stderr for CLI-mode warnings, with the same escaping as the file; a write error (stderr
/// closed or full) is ignored rather than reported, since there is nowhere left to report it.
struct EscapedStderr;

impl Write for EscapedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().lock().write_all(&clean(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

fn stderr_writer() -> EscapedStderr {
    EscapedStderr
}

/// Starts logging as the config says. A log file that cannot be opened does not fail the
/// command: CLI mode logs warnings to stderr instead, with one warning saying so; GARM mode logs
/// nothing and keeps the reason in [`LogGuard::warning`] for its error line.
pub fn init(config: Option<&Config>) -> LogGuard {
    let level = config.map(|c| c.log_level).unwrap_or(LogLevel::Warn);
    let format = config.map(|c| c.log_format).unwrap_or_default();
    let file = config.and_then(|c| c.log_file.as_deref());
    let stderr_reserved = STDERR_RESERVED.load(Ordering::Relaxed);
    match file.map(|path| open_append(path).map_err(|e| (path, e))) {
        Some(Ok(f)) => {
            // The default queue pre-allocates 128,000 lines (about 4 MB touched per process); a
            // provider command writes a few dozen, and GARM runs many processes at once.
            let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .buffered_lines_limit(LOG_QUEUE_LINES)
                .lossy(false)
                .finish(AppendFile(f));
            install(level, format, writer);
            LogGuard {
                _guard: Some(guard),
                warning: None,
            }
        }
        Some(Err((path, e))) => {
            let warning = format!(
                "cannot open log_file {}: {e}",
                crate::text::one_line(&path.display().to_string())
            );
            if !stderr_reserved {
                install(LogLevel::Warn.min_with(level), format, stderr_writer);
                tracing::warn!("{warning}; logging warnings to stderr instead");
            }
            LogGuard {
                _guard: None,
                warning: Some(warning.into_boxed_str()),
            }
        }
        None => {
            if !stderr_reserved {
                install(LogLevel::Warn.min_with(level), format, stderr_writer);
            }
            LogGuard {
                _guard: None,
                warning: None,
            }
        }
    }
}

impl LogLevel {
    /// The less verbose of two levels (stderr carries warnings at most, GARM shows it to users).
    fn min_with(self, other: LogLevel) -> LogLevel {
        let rank = |l: LogLevel| l as u8;
        if rank(self) <= rank(other) {
            self
        } else {
            other
        }
    }

    fn directive(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

/// Opens the log file for appending: created 0600, or made 0600 if it is ours (the log names
/// instances, pools and controller; it is nobody else's business), never another user's file,
/// never through a symlink (another user could
/// point a planted link at a file of ours), never a FIFO or device (the open does not block,
/// and anything but a regular file is refused).
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| {
        // ELOOP is what O_NOFOLLOW answers for a symlink: say so in words.
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return std::io::Error::new(
                e.kind(),
                "it is a symbolic link, which is not followed (give the real path)",
            );
        }
        // ENXIO: a FIFO without a reader (a non-blocking open for writing fails that way), or
        // a device without its driver: say what the path is.
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ENXIO) {
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                return std::io::Error::other(format!(
                    "not a regular file ({})",
                    crate::text::file_kind(&meta)
                ));
            }
        }
        e
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!(
            "not a regular file ({})",
            crate::text::file_kind(&meta)
        )));
    }
    #[cfg(unix)]
    keep_private(&file, &meta)?;
    Ok(file)
}

/// A log file of another user is refused (its owner reads what we write, and may have
/// planted it to collect it); our own file is made 0600 on the open descriptor, whatever mode
/// it had (an earlier version, or a umask, may have left it 0644).
#[cfg(unix)]
fn keep_private(file: &std::fs::File, meta: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
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
    // HTTP traffic.
    let level = level.directive();
    let filter = EnvFilter::new(format!(
        "warn,garm_provider_edge_connect={level},edge_connect={level}"
    ));
    let base = tracing_subscriber::registry().with(filter);
    let result = match format {
        LogFormat::Text => base
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(writer)
                    .with_ansi(false)
                    .with_target(false)
                    // Its report of a failed write is an eprintln!, which panics when stderr
                    // cannot be written either.
                    .log_internal_errors(false),
            )
            .try_init(),
        LogFormat::Json => base
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(writer)
                    .log_internal_errors(false),
            )
            .try_init(),
    };
    // A second init (tests calling into the library twice) keeps the first subscriber.
    let _ = result;
}
