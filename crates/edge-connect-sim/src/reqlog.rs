//! The request log: one entry per API call (method, path, RPC, status, duration — never a
//! body, token or password), kept in memory and appended as JSON lines to
//! `<state_dir>/requests.log`.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::clock::Timestamp;
use crate::lock;

/// One answered API call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLogEntry {
    /// HTTP method.
    pub method: String,
    /// Request path without query string.
    pub path: String,
    /// RPC name (`CreateApp`, `login`), empty for unknown paths.
    pub rpc: String,
    /// HTTP status of the reply (200 also for streams that ended with an error result).
    pub status: u16,
    /// From request arrival until the reply was complete (end of stream for streams).
    pub duration: Duration,
}

/// JSON form of an entry (file lines and `GET /__sim/requests`).
#[derive(Serialize)]
pub(crate) struct EntryJson<'a> {
    time: String,
    method: &'a str,
    path: &'a str,
    rpc: &'a str,
    status: u16,
    duration_ms: f64,
}

impl<'a> EntryJson<'a> {
    /// The JSON form of an entry completed at `time`.
    pub(crate) fn new(time: Timestamp, e: &'a RequestLogEntry) -> Self {
        EntryJson {
            time: time.rfc3339(),
            method: &e.method,
            path: &e.path,
            rpc: &e.rpc,
            status: e.status,
            duration_ms: e.duration.as_secs_f64() * 1000.0,
        }
    }
}

/// In-memory entries are capped so a long-running simulator stays memory-bounded; the file
/// keeps everything.
const MEMORY_CAP: usize = 100_000;

/// The log of answered calls.
#[derive(Debug)]
pub(crate) struct RequestLog {
    entries: Mutex<VecDeque<(Timestamp, RequestLogEntry)>>,
    file: Option<Mutex<File>>,
}

impl RequestLog {
    /// A log that also appends to `<dir>/requests.log` when a directory is given.
    pub(crate) fn open(dir: Option<&Path>) -> anyhow::Result<Self> {
        let file = match dir {
            Some(dir) => {
                let path = dir.join("requests.log");
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("cannot open request log {}", path.display()))?;
                Some(Mutex::new(file))
            }
            None => None,
        };
        Ok(RequestLog {
            entries: Mutex::new(VecDeque::new()),
            file,
        })
    }

    /// Adds an entry.
    pub(crate) fn record(&self, entry: RequestLogEntry) {
        tracing::debug!(
            method = %entry.method,
            path = %entry.path,
            status = entry.status,
            duration_ms = entry.duration.as_millis() as u64,
            "request"
        );
        let time = Timestamp::now();
        if let Some(file) = &self.file {
            if let Ok(mut line) = serde_json::to_vec(&EntryJson::new(time, &entry)) {
                line.push(b'\n');
                // A failing disk must not fail the API call; the in-memory log still has it.
                if let Err(e) = lock(file).write_all(&line) {
                    tracing::warn!("cannot write request log: {e}");
                }
            }
        }
        let mut entries = lock(&self.entries);
        if entries.len() >= MEMORY_CAP {
            entries.pop_front();
        }
        entries.push_back((time, entry));
    }

    /// All entries so far, oldest first.
    pub(crate) fn entries(&self) -> Vec<RequestLogEntry> {
        lock(&self.entries).iter().map(|(_, e)| e.clone()).collect()
    }

    /// All entries with their completion times, oldest first.
    pub(crate) fn timed_entries(&self) -> Vec<(Timestamp, RequestLogEntry)> {
        lock(&self.entries).iter().cloned().collect()
    }

    /// Forgets the in-memory entries (the file is left alone).
    pub(crate) fn clear(&self) {
        lock(&self.entries).clear();
    }
}

/// Records its entry when dropped: once the reply is complete, or half-way through (client
/// gone, connection cut by a fault).
pub(crate) struct PendingEntry {
    pub log: Arc<RequestLog>,
    pub entry: RequestLogEntry,
    /// When the request arrived.
    pub start: Instant,
}

impl Drop for PendingEntry {
    fn drop(&mut self) {
        let mut entry = std::mem::take(&mut self.entry);
        entry.duration = self.start.elapsed();
        self.log.record(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> RequestLogEntry {
        RequestLogEntry {
            method: "POST".into(),
            path: path.into(),
            rpc: "ShowApp".into(),
            status: 200,
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn writes_json_lines_to_the_state_dir() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(RequestLog::open(Some(dir.path())).unwrap());
        log.record(entry("/a"));
        for path in ["/b", "/c"] {
            drop(PendingEntry {
                log: log.clone(),
                entry: entry(path),
                start: Instant::now(),
            });
        }
        let text = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
        let paths: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["path"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(paths, ["/a", "/b", "/c"]);
        assert_eq!(log.entries().len(), 3);
        log.clear();
        assert!(log.entries().is_empty());
    }
}
