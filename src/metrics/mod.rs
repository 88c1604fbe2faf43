//! Metrics of a one-shot provider (docs/operations.md, "Metrics"): every command appends what it
//! learnt as events, one JSON line each, to `metrics_events_file`; the sidecar
//! (`garm-provider-edge-connect metrics serve`, [`serve`]) folds them into counters and
//! histograms and serves them to Prometheus.
//!
//! Recording: [`open`] opens the events file once per process (nothing is recorded without it,
//! the default) as a [`Recorder`], a value the pipeline hands to the client and the provider;
//! each [`Event`] is then one `write(2)` under `O_APPEND` and a shared `flock`,
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
use std::sync::Arc;
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
    /// A create found `service`'s cache of `site` in `state` (`ready`: the runner was pointed at
    /// it; `starting`, `absent`, `failed`).
    SiteCache {
        site: String,
        service: String,
        state: String,
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

/// Where a command's events go: the events file and the command's scrubber, handed to the
/// client (its requests) and the provider (everything else); the default records nothing.
#[derive(Clone, Default)]
pub struct Recorder(Option<Arc<Sink>>);

struct Sink {
    file: std::fs::File,
    scrubber: Scrubber,
}

/// What a command learnt on its way, for its `End` (and a create's or start's `Placed`).
#[derive(Debug, Default)]
pub struct Facts {
    /// The runner's pool (the one given, or the one its App records).
    pub pool: String,
    /// Where a create or start placed the runner, the last site it tried, or the site of the
    /// AppInst a delete, stop or get found.
    pub site: String,
    /// The runner became Ready on `site`.
    pub placed: bool,
    /// The label of the last start failure, if one came.
    pub start_failure: String,
}

/// Records events to `path`, every label value masked by `scrubber` (the command's, which
/// learns its secrets after this). A file that cannot be opened is logged and the command goes
/// on without metrics: a runner matters more than its count.
pub fn open(path: &Path, scrubber: Scrubber) -> Recorder {
    match crate::logging::open_append(path) {
        Ok(file) => Recorder(Some(Arc::new(Sink { file, scrubber }))),
        Err(e) => {
            tracing::warn!(
                "cannot open metrics_events_file {}: {e}; this command records no metrics",
                crate::text::one_line(&path.display().to_string())
            );
            Recorder::default()
        }
    }
}

impl Recorder {
    /// Appends `event`: one write of one line under a shared lock (the sidecar takes the lock
    /// exclusively to truncate). Failures are logged, never returned.
    fn record(&self, event: Event) {
        let Some(sink) = &self.0 else {
            return;
        };
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let Ok(mut line) = serde_json::to_vec(&Line { t, event }) else {
            return;
        };
        line.push(b'\n');
        if let Err(e) = append(&sink.file, &line) {
            tracing::warn!("cannot record a metrics event: {e}");
        }
    }

    /// A label value: masked by the command's scrubber (whole, before it is cut: a cut could
    /// leave a secret's start unrecognised), then at most [`MAX_LABEL`] characters.
    fn label(&self, s: &str) -> String {
        let masked = self
            .0
            .as_ref()
            .map_or(s.into(), |sink| sink.scrubber.scrub(s));
        masked.chars().take(MAX_LABEL).collect()
    }

    /// A command begins: `cmd` its GARM name, `pool` its pool when it names one.
    pub fn begin(&self, cmd: &str, pool: &str) {
        let (cmd, pool) = (cmd.into(), self.label(pool));
        self.record(Event::Begin { cmd, pool });
    }

    /// The command `cmd` of `pool` (its `Begin`'s, so that started minus ended counts the
    /// killed commands of each pool) begun at `began` ends with `result`, having learnt `facts`
    /// and made `logins`. A placed runner's `Placed` comes first.
    pub fn end<T>(
        &self,
        (cmd, pool): (&str, &str),
        began: Instant,
        facts: Facts,
        result: &Result<T, Error>,
        logins: usize,
    ) {
        let (secs, site) = (began.elapsed().as_secs_f64(), self.label(&facts.site));
        if facts.placed {
            let (pool, site) = (self.label(&facts.pool), site.clone());
            self.record(Event::Placed { pool, site, secs });
        }
        let (outcome, reason) = match result {
            Ok(_) => ("ok", String::new()),
            Err(Error::NotFound(_)) => ("not_found", String::new()),
            Err(Error::Duplicate(_)) => ("duplicate", String::new()),
            Err(Error::Interrupted(_)) => ("interrupted", String::new()),
            Err(e) => ("error", reason_of(e, self.label(&facts.start_failure))),
        };
        self.record(Event::End {
            cmd: cmd.into(),
            pool: self.label(pool),
            site,
            outcome: outcome.into(),
            reason,
            secs,
            logins: logins as u64,
        });
    }

    /// A DeleteInstance removed a runner of `pool` whose AppInst `inst` was (none: stopped):
    /// the runners gauge of its pool and site counts one less.
    pub fn removed(&self, pool: &str, inst: Option<&edge_connect::models::AppInst>) {
        // The site as ListInstances shows it (`status::RunnerView`'s `site`): the cloudlet first.
        let runs_on = inst.and_then(|i| {
            i.cloudlet()
                .or(i.zone_key.as_ref().filter(|z| !z.is_empty()))
        });
        let site = runs_on.map_or_else(String::new, |s| format!("{}/{}", s.organization, s.name));
        let (pool, site) = (self.label(pool), self.label(&site));
        self.record(Event::Removed { pool, site });
    }

    /// A create found `service`'s cache of `site` in `state` (docs/site-cache.md).
    pub fn site_cache(&self, site: &str, service: &str, state: &str) {
        self.record(Event::SiteCache {
            site: self.label(site),
            service: service.into(),
            state: state.into(),
        });
    }

    /// `from` could not take a runner of `pool`; `to` is tried next.
    pub fn failover(&self, pool: &str, from: &str, to: &str) {
        let (pool, from, to) = (self.label(pool), self.label(from), self.label(to));
        self.record(Event::Failover { pool, from, to });
    }

    /// A runner of `pool` will not start on `site`; `reason` is one of a fixed set (a kubelet
    /// reason the client knows, or the provider's own verdict).
    pub fn start_failure(&self, pool: &str, site: &str, reason: &str) {
        let (pool, site, reason) = (self.label(pool), self.label(site), self.label(reason));
        self.record(Event::StartFailure { pool, site, reason });
    }

    /// A delete met `inst` of a runner of `pool`, which its site's CRM holds: its age (from its
    /// `created_at`) by pool and site.
    pub fn crm_hold(&self, pool: &str, inst: &edge_connect::models::AppInst) {
        use time::format_description::well_known::Rfc3339;
        let Ok(created) = time::OffsetDateTime::parse(&inst.created_at, &Rfc3339) else {
            return;
        };
        let secs = (time::OffsetDateTime::now_utc() - created).as_seconds_f64();
        self.record(Event::CrmHold {
            pool: self.label(pool),
            site: self.label(&site_of(Some(inst))),
            secs: secs.max(0.0),
        });
    }

    /// A List found runners of `pool` on `sites` (one entry per runner).
    pub fn listed<'a>(&self, pool: &str, sites: impl Iterator<Item = &'a str>) {
        if self.0.is_none() {
            return;
        }
        // Counted by the site as read, then each of the few sites masked once (not each runner's).
        let mut read = std::collections::BTreeMap::<&str, u64>::new();
        for site in sites {
            *read.entry(site).or_insert(0) += 1;
        }
        let mut runners = std::collections::BTreeMap::new();
        for (site, n) in read {
            *runners.entry(self.label(site)).or_insert(0) += n;
        }
        let pool = self.label(pool);
        self.record(Event::Listed { pool, runners });
    }

    /// RemoveAllInstances ended.
    pub fn removed_all(&self, removed: usize, failed: usize) {
        let (removed, failed) = (removed as u64, failed as u64);
        self.record(Event::RemovedAll { removed, failed });
    }

    /// The client's report of each request (`Client::with_call_report`).
    pub fn rpc_reporter(&self) -> Option<edge_connect::CallReport> {
        self.0.as_ref()?;
        let this = self.clone();
        Some(Arc::new(
            move |rpc: edge_connect::Rpc, status: Option<u16>, took: std::time::Duration| {
                this.record(Event::Rpc {
                    rpc: rpc.name().into(),
                    status: status.map_or_else(|| "transport".into(), |s| s.to_string()),
                    secs: took.as_secs_f64(),
                })
            },
        ))
    }
}

fn append(mut file: &std::fs::File, line: &[u8]) -> std::io::Result<()> {
    file.lock_shared()?;
    let result = file.metadata().and_then(|meta| {
        if meta.len() > MAX_EVENTS_FILE {
            return Err(std::io::Error::other(format!(
                "the events file is over {} MiB: is the metrics sidecar running?",
                MAX_EVENTS_FILE >> 20
            )));
        }
        // One write for the line (write_all repeats only after a short write, still locked).
        file.write_all(line)
    });
    file.unlock()?;
    result
}

/// A failure's reason label: the start failure the command met, the client's error kind, or
/// `left_behind` / `other`.
fn reason_of(e: &Error, start_failure: String) -> String {
    if !start_failure.is_empty() {
        return start_failure;
    }
    if e.leaves_something() {
        return "left_behind".into();
    }
    let mut sources = std::iter::successors(std::error::Error::source(e), |s| s.source());
    let api = sources.find_map(|s| s.downcast_ref::<edge_connect::ApiError>());
    api.map_or_else(|| "other".into(), |api| format!("{:?}", api.kind))
}

/// The configured site an AppInst was placed on, as `ORG/NAME`: its zone, else its cloudlet
/// (`""`: none, a stopped runner).
pub fn site_of(inst: Option<&edge_connect::models::AppInst>) -> String {
    let inst = inst.and_then(|i| {
        i.zone_key
            .as_ref()
            .filter(|z| !z.is_empty())
            .or(i.cloudlet())
    });
    inst.map_or_else(String::new, |s| format!("{}/{}", s.organization, s.name))
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
