//! Metrics of a one-shot provider (docs/operations.md, "Metrics"): every command appends what it
//! learnt as events, one JSON line each, to `metrics_events_file`; the sidecar
//! (`garm-provider-edge-connect metrics serve`, [`serve`]) folds them into counters and
//! histograms and serves them to Prometheus.
//!
//! Recording: [`install`] opens the events file once per process (nothing is recorded without
//! it, the default); each [`Event`] is then one `write(2)` under `O_APPEND` and a shared `flock`,
//! so that GARM's concurrent commands never interleave their lines, the sidecar never truncates
//! a line being written, and a command that GARM kills loses nothing it already wrote. Labels
//! are bounded by construction (a pool id, a site, a fixed set of reasons); an event never
//! carries an instance name or a message text, and every label value passes through the
//! command's scrubber first: a pool id or a site read from Edge Connect's answer is the
//! controller's text, which may echo a secret.

mod fold;
mod serve;
mod sidecar;

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use edge_connect::Scrubber;
use serde::{Deserialize, Serialize};

use crate::error::Error;

pub use serve::serve;

/// Names the events file instead of `metrics_events_file` (an absolute path).
pub const EVENTS_FILE_VARIABLE: &str = "EDP_EDGE_CONNECT_METRICS_EVENTS_FILE";

/// The longest label value an event keeps (a pool id is a UUID or a scale set's name and id).
const MAX_LABEL: usize = 128;

/// Past this size the events file is not written to: no sidecar consumes it (docs/operations.md,
/// "Metrics"), and a provider must not fill GARM's disk.
const MAX_EVENTS_FILE: u64 = 64 << 20;

/// One event, as one JSON line of the events file (`t`: when, in Unix milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Unix time in milliseconds: it also makes every line distinct, which the sidecar's
    /// snapshot relies on (`sidecar.rs`).
    pub t: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// What a command records. Every string is a label value: a command or RPC name, a pool id, a
/// site (`ORG/NAME`), or one of a fixed set of outcomes and reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum Event {
    /// A command started (a create that never ends is one GARM killed).
    Begin { cmd: String, pool: String },
    /// A command ended.
    End {
        cmd: String,
        pool: String,
        /// Where the runner was placed (a create or start), else empty.
        site: String,
        /// `ok`, `not_found`, `duplicate`, `interrupted` or `error`.
        outcome: String,
        /// Why it failed: a start failure's reason, `left_behind`, the client's error kind,
        /// `other`; empty on success.
        reason: String,
        secs: f64,
        /// Logins the command made (0: a cached token served it).
        logins: u64,
    },
    /// One Edge Connect request: its RPC, the HTTP status (`transport` when none came) and how
    /// long it took.
    Rpc {
        rpc: String,
        status: String,
        secs: f64,
    },
    /// A runner's AppInst became Ready on `site`, `secs` after its command began.
    Placed {
        pool: String,
        site: String,
        secs: f64,
    },
    /// A site could not take a runner; the next one is tried.
    Failover {
        pool: String,
        from: String,
        to: String,
    },
    /// A runner will not start on `site` (a kubelet reason, or `Unplaced`, `Silent`,
    /// `NeverPlaced`).
    StartFailure {
        pool: String,
        site: String,
        reason: String,
    },
    /// A delete met an AppInst of `pool` its site's CRM holds, `secs` after its create.
    CrmHold {
        /// Absent in the lines of versions before it: empty.
        #[serde(default)]
        pool: String,
        site: String,
        secs: f64,
    },
    /// A List of `pool` found `runners` on each site (`""`: stopped, no AppInst).
    Listed {
        pool: String,
        runners: std::collections::BTreeMap<String, u64>,
    },
    /// A DeleteInstance removed a runner of `pool` that ran on `site` (`""`: stopped).
    Removed { pool: String, site: String },
    /// RemoveAllInstances removed `removed` runners and could not remove `failed`.
    RemovedAll { removed: u64, failed: u64 },
}

impl Event {
    /// The duration the event carries, if any.
    fn secs(&self) -> Option<f64> {
        match self {
            Event::End { secs, .. }
            | Event::Rpc { secs, .. }
            | Event::Placed { secs, .. }
            | Event::CrmHold { secs, .. } => Some(*secs),
            _ => None,
        }
    }
}

/// The events file, the command's scrubber and what the running command noted for its `End`.
struct Recorder {
    file: std::fs::File,
    scrubber: Scrubber,
    command: Mutex<Noted>,
}

/// What the running command learnt on its way, for its `End` event.
#[derive(Default)]
struct Noted {
    began: Option<Instant>,
    /// The pool the command was given (its `Begin`'s): its `End` carries the same, so that
    /// started minus ended counts the killed commands of each pool.
    given: String,
    /// The pool of the runner the command acts on: the one given, or the one its App records.
    pool: String,
    site: String,
    reason: String,
}

static RECORDER: OnceLock<Recorder> = OnceLock::new();

/// Records events to `path` from now on in this process, every label value masked by
/// `scrubber` (the command's, which learns its secrets after this). A file that cannot be opened
/// is logged and the command goes on without metrics: a runner matters more than its count.
pub fn install(path: &Path, scrubber: Scrubber) {
    match crate::logging::open_append(path) {
        Ok(file) => {
            let _ = RECORDER.set(Recorder {
                file,
                scrubber,
                command: Mutex::new(Noted::default()),
            });
        }
        Err(e) => tracing::warn!(
            "cannot open metrics_events_file {}: {e}; this command records no metrics",
            crate::text::one_line(&path.display().to_string())
        ),
    }
}

/// Appends `event`: one write of one line under a shared lock (the sidecar takes the lock
/// exclusively to truncate). Failures are logged, never returned.
pub fn record(event: Event) {
    let Some(recorder) = RECORDER.get() else {
        return;
    };
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let Ok(mut line) = serde_json::to_vec(&Line { t, event }) else {
        return;
    };
    line.push(b'\n');
    if let Err(e) = append(&recorder.file, &line) {
        tracing::warn!("cannot record a metrics event: {e}");
    }
}

fn append(mut file: &std::fs::File, line: &[u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    flock(fd, libc::LOCK_SH)?;
    let result = if file.metadata()?.len() > MAX_EVENTS_FILE {
        Err(std::io::Error::other(format!(
            "the events file is over {} MiB: is the metrics sidecar running?",
            MAX_EVENTS_FILE >> 20
        )))
    } else {
        // One write for the line (write_all repeats only after a short write, still locked).
        file.write_all(line)
    };
    flock(fd, libc::LOCK_UN)?;
    result
}

pub(crate) fn flock(fd: std::os::fd::RawFd, how: libc::c_int) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor this process owns; no memory is passed.
        if unsafe { libc::flock(fd, how) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A label value: masked by the command's scrubber (whole, before it is cut: a cut could leave
/// a secret's start unrecognised), then at most [`MAX_LABEL`] characters.
fn label(s: &str) -> String {
    let masked = RECORDER.get().map(|r| r.scrubber.scrub(s));
    masked
        .as_deref()
        .unwrap_or(s)
        .chars()
        .take(MAX_LABEL)
        .collect()
}

fn noted() -> Option<std::sync::MutexGuard<'static, Noted>> {
    RECORDER.get().and_then(|r| r.command.lock().ok())
}

/// A command begins: `cmd` its GARM name, `pool` its pool when it names one.
pub fn begin(cmd: &str, pool: &str) {
    if let Some(mut noted) = noted() {
        *noted = Noted {
            began: Some(Instant::now()),
            given: label(pool),
            pool: label(pool),
            ..Noted::default()
        };
    } else {
        return;
    }
    record(Event::Begin {
        cmd: cmd.into(),
        pool: label(pool),
    });
}

/// The command ends with `result`; `logins` it made.
pub fn end<T>(cmd: &str, result: &Result<T, Error>, logins: usize) {
    let Some(noted) = noted().map(|mut n| std::mem::take(&mut *n)) else {
        return;
    };
    let (outcome, reason) = match result {
        Ok(_) => ("ok", String::new()),
        Err(Error::NotFound(_)) => ("not_found", String::new()),
        Err(Error::Duplicate(_)) => ("duplicate", String::new()),
        Err(Error::Interrupted(_)) => ("interrupted", String::new()),
        Err(e) => ("error", reason_of(e, noted.reason)),
    };
    record(Event::End {
        cmd: cmd.into(),
        pool: noted.given,
        site: noted.site,
        outcome: outcome.into(),
        reason,
        secs: noted.began.map_or(0.0, |b| b.elapsed().as_secs_f64()),
        logins: logins as u64,
    });
}

/// A failure's reason label: what the command noted (a start failure), the client's error kind,
/// or `left_behind` / `other`.
fn reason_of(e: &Error, noted: String) -> String {
    if !noted.is_empty() {
        return noted;
    }
    if e.leaves_something() {
        return "left_behind".into();
    }
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(api) = s.downcast_ref::<edge_connect::ApiError>() {
            return format!("{:?}", api.kind);
        }
        source = s.source();
    }
    "other".into()
}

/// The pool a command found its runner in (a delete learns it from the App).
pub fn note_pool(pool: &str) {
    if let Some(mut noted) = noted() {
        if noted.pool.is_empty() {
            noted.pool = label(pool);
        }
    }
}

/// The site the command is placing its runner on now (the last one tried names a failed
/// create's).
pub fn note_site(site: &str) {
    if let Some(mut noted) = noted() {
        noted.site = label(site);
    }
}

/// A delete, stop or get found its runner: the pool its App records and the site of its
/// AppInst (the one that runs, first in removal order; none: stopped).
pub fn note_runner(pool: &str, inst: Option<&edge_connect::models::AppInst>) {
    note_pool(pool);
    note_site(&inst.map(site_of).unwrap_or_default());
}

/// A DeleteInstance removed a runner of `pool` whose AppInst `inst` was (none: stopped): the
/// runners gauge of its pool and site counts one less.
pub fn removed(pool: &str, inst: Option<&edge_connect::models::AppInst>) {
    // The site as ListInstances shows it (`status::RunnerView`'s `site`): the cloudlet first.
    let runs_on = inst.and_then(|i| {
        i.cloudlet()
            .or(i.zone_key.as_ref().filter(|z| !z.is_empty()))
    });
    record(Event::Removed {
        pool: label(pool),
        site: label(
            &runs_on.map_or_else(String::new, |s| format!("{}/{}", s.organization, s.name)),
        ),
    });
}

/// The configured site an AppInst was placed on, as `ORG/NAME`: its zone, else its cloudlet.
fn site_of(inst: &edge_connect::models::AppInst) -> String {
    inst.zone_key
        .as_ref()
        .filter(|z| !z.is_empty())
        .or(inst.cloudlet())
        .map_or_else(String::new, |s| format!("{}/{}", s.organization, s.name))
}

/// The runner is Ready on `site`.
pub fn placed(site: &str) {
    let Some((pool, secs)) = noted().map(|mut n| {
        n.site = label(site);
        let secs = n.began.map_or(0.0, |b| b.elapsed().as_secs_f64());
        (n.pool.clone(), secs)
    }) else {
        return;
    };
    record(Event::Placed {
        pool,
        site: label(site),
        secs,
    });
}

/// `from` could not take the runner; `to` is tried next.
pub fn failover(from: &str, to: &str) {
    let Some(pool) = noted().map(|n| n.pool.clone()) else {
        return;
    };
    record(Event::Failover {
        pool,
        from: label(from),
        to: label(to),
    });
}

/// The runner will not start on `site`; `reason` is one of a fixed set (a kubelet reason the
/// client knows, or the provider's own verdict).
pub fn start_failure(site: &str, reason: &str) {
    let Some(pool) = noted().map(|mut n| {
        n.reason = label(reason);
        n.pool.clone()
    }) else {
        return;
    };
    record(Event::StartFailure {
        pool,
        site: label(site),
        reason: label(reason),
    });
}

/// The kubelet reason as a label: itself when the client knows it, else `Other` (a controller
/// can send any text).
pub fn kubelet_reason(reason: &str) -> &str {
    use edge_connect::appinst_start::{problem, StartProblem};
    if problem(reason) == StartProblem::Other {
        "Other"
    } else {
        reason
    }
}

/// A delete met `inst` of a runner of `pool`, which its site's CRM holds: its age (from its
/// `created_at`) by pool and site.
pub fn crm_hold(pool: &str, inst: &edge_connect::models::AppInst) {
    use time::format_description::well_known::Rfc3339;
    let Ok(created) = time::OffsetDateTime::parse(&inst.created_at, &Rfc3339) else {
        return;
    };
    let site = site_of(inst);
    let secs = (time::OffsetDateTime::now_utc() - created).as_seconds_f64();
    record(Event::CrmHold {
        pool: label(pool),
        site: label(&site),
        secs: secs.max(0.0),
    });
}

/// A List found runners of `pool` on `sites` (one entry per runner).
pub fn listed<'a>(pool: &str, sites: impl Iterator<Item = &'a str>) {
    if RECORDER.get().is_none() {
        return;
    }
    // Counted by the site as read, then each of the few sites masked once (not each runner's).
    let mut read = std::collections::BTreeMap::<&str, u64>::new();
    for site in sites {
        *read.entry(site).or_insert(0) += 1;
    }
    let mut runners = std::collections::BTreeMap::new();
    for (site, n) in read {
        *runners.entry(label(site)).or_insert(0) += n;
    }
    record(Event::Listed {
        pool: label(pool),
        runners,
    });
}

/// RemoveAllInstances ended.
pub fn removed_all(removed: usize, failed: usize) {
    record(Event::RemovedAll {
        removed: removed as u64,
        failed: failed as u64,
    });
}

/// The client's report of each request (`Client::with_call_report`).
pub fn rpc_reporter() -> Option<edge_connect::CallReport> {
    RECORDER.get()?;
    Some(std::sync::Arc::new(
        |rpc: edge_connect::Rpc, status: Option<u16>, took: std::time::Duration| {
            record(Event::Rpc {
                rpc: rpc.name().into(),
                status: status.map_or_else(|| "transport".into(), |s| s.to_string()),
                secs: took.as_secs_f64(),
            })
        },
    ))
}
