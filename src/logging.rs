//! Logging to the configured file (or to stderr at warn level), never to stdout.
//!
//! GARM runs many provider processes at once, all appending to the same file. Each event is
//! formatted into one buffer and written with a single `write` on a file opened for appending,
//! so lines from different processes never interleave.

use std::io::Write;
use std::path::Path;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::config::{Config, LogFormat, LogLevel};

/// Lines the background writer may queue before a log call waits for it.
const LOG_QUEUE_LINES: usize = 256;

/// Keeps the log writer alive; dropping it flushes pending lines.
pub struct LogGuard {
    _guard: Option<tracing_appender::non_blocking::WorkerGuard>,
}

impl LogGuard {
    /// True when events go to the log file (not to stderr, where the front door already prints
    /// the one-line error).
    pub fn to_file(&self) -> bool {
        self._guard.is_some()
    }
}

/// A file writer that turns every buffered event into one `write(2)` in append mode.
struct AppendFile(std::fs::File);

impl Write for AppendFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // write_all on an O_APPEND file: the kernel places each write at the current end.
        self.0.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Starts logging as the config says. A log file that cannot be opened falls back to stderr
/// (warn and above) with one warning, rather than failing the command.
pub fn init(config: Option<&Config>) -> LogGuard {
    let level = config.map(|c| c.log_level).unwrap_or(LogLevel::Warn);
    let format = config.map(|c| c.log_format).unwrap_or_default();
    let file = config.and_then(|c| c.log_file.as_deref());
    match file.map(open_append) {
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
            }
        }
        Some(Err(e)) => {
            install(LogLevel::Warn.min_with(level), format, std::io::stderr);
            tracing::warn!(error = %e, "cannot open log_file; logging warnings to stderr instead");
            LogGuard { _guard: None }
        }
        None => {
            install(LogLevel::Warn.min_with(level), format, std::io::stderr);
            LogGuard { _guard: None }
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

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
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
                    .with_target(false),
            )
            .try_init(),
        LogFormat::Json => base
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(writer),
            )
            .try_init(),
    };
    // A second init (tests calling into the library twice) keeps the first subscriber.
    let _ = result;
}
