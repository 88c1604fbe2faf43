//! The sidecar's side of the events file (docs/operations.md, "Metrics"): [`Consumer::poll`]
//! folds the complete lines written since the last poll, without a lock (a line still being
//! written has no newline yet and waits for the next poll); [`Consumer::compact`] takes the
//! writers' lock exclusively, folds the rest, writes a snapshot of every counter (atomic rename)
//! and truncates the file, so that disk and memory stay bounded and counters survive a restart.
//!
//! The snapshot records how many bytes of the events file it covers and their SHA-256: when the
//! sidecar stopped between the snapshot's rename and the truncation, those bytes are still at
//! the start of the file and are not counted twice; otherwise the file was truncated and all of
//! it is new. Every line carries its time in milliseconds, so a new file does not repeat an old
//! one's bytes.
//!
//! The sidecar never waits for the lock: a compaction that finds it held by someone else (a
//! writer in its milliseconds, or a stray `flock` that never ends) saves the snapshot without
//! truncating, which the snapshot's byte count and hash allow, and truncates at a later one. An
//! events file replaced under its name (log rotation) is told by its device and inode and read
//! from its start.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::fold::Metrics;

/// An event line is a few hundred bytes; a longer "line" is not one of ours and is skipped.
pub(super) const MAX_LINE: usize = 16 * 1024;

/// What the snapshot file holds.
#[derive(Serialize, Deserialize)]
struct Snapshot {
    metrics: Metrics,
    /// Bytes of the events file folded into `metrics` when it was written.
    consumed: u64,
    /// Their SHA-256, lower-case hex.
    sha256: String,
}

/// The sidecar's reader of one events file, with its snapshot.
#[derive(Default)]
pub(super) struct Consumer {
    events: PathBuf,
    snapshot: PathBuf,
    metrics: Metrics,
    /// Bytes at the start of the events file already folded into `metrics`.
    offset: u64,
    /// Their hash.
    hash: Sha256,
    /// The device and inode of the file `offset` counts in.
    file: Option<(u64, u64)>,
}

impl Consumer {
    /// Reads the snapshot (if any) and skips what it covers of the events file.
    pub(super) fn open(events: &Path, snapshot: &Path) -> Result<Consumer, String> {
        let mut consumer = Consumer {
            events: events.to_path_buf(),
            snapshot: snapshot.to_path_buf(),
            ..Consumer::default()
        };
        let shown = snapshot.display();
        let text = match std::fs::read(snapshot) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(consumer),
            Err(e) => return Err(format!("cannot read the snapshot {shown}: {e}")),
        };
        let saved: Snapshot = serde_json::from_slice(&text).map_err(|e| {
            format!("the snapshot {shown} is not one this sidecar wrote ({e}); move it away to start the counters from zero")
        })?;
        consumer.metrics = saved.metrics;
        if let Ok(mut file) = File::open(events) {
            let mut hash = Sha256::new();
            let copied = std::io::copy(&mut (&mut file).take(saved.consumed), &mut hash)
                .map_err(|e| format!("cannot read {}: {e}", events.display()))?;
            if copied == saved.consumed && hex(&hash) == saved.sha256 {
                consumer.offset = copied;
                consumer.hash = hash;
                consumer.file = file.metadata().ok().as_ref().map(identity);
            }
        }
        Ok(consumer)
    }

    /// The metrics folded so far.
    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Folds the complete lines written since the last poll.
    pub(super) fn poll(&mut self) -> std::io::Result<()> {
        match File::open(&self.events) {
            Ok(file) => self.read(&file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Under the writers' lock: folds what is left (a line without its newline now is the
    /// remnant of a writer that died mid-line, and is skipped), saves the snapshot, truncates
    /// the events file. When someone else holds the lock, folds the complete lines and saves the
    /// snapshot of them, leaving the file as it is.
    pub(super) fn compact(&mut self) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.events)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return self.save(),
            Err(e) => return Err(e),
        };
        // Held until `file` closes, when this returns.
        let locked = match file.try_lock() {
            Ok(()) => true,
            Err(std::fs::TryLockError::WouldBlock) => false,
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        };
        self.read(&file)?;
        if !locked {
            return self.save();
        }
        let len = file.metadata()?.len();
        if len > self.offset {
            let mut rest = &file;
            rest.seek(SeekFrom::Start(self.offset))?;
            std::io::copy(&mut rest, &mut self.hash)?;
            self.offset = len;
            self.metrics.skipped();
        }
        self.save()?;
        file.set_len(0)?;
        self.offset = 0;
        self.hash = Sha256::new();
        Ok(())
    }

    /// Writes the snapshot: a temporary file in the same directory, synced, renamed over it.
    fn save(&self) -> std::io::Result<()> {
        let snapshot = Snapshot {
            metrics: self.metrics.clone(),
            consumed: self.offset,
            sha256: hex(&self.hash),
        };
        let mut temporary = self.snapshot.clone().into_os_string();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let mut file = File::create(&temporary)?;
        file.write_all(&serde_json::to_vec(&snapshot).map_err(std::io::Error::other)?)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &self.snapshot)?;
        Ok(())
    }

    /// Folds every complete line of `file` after the offset; stops before a line without its
    /// newline (still being written). A line longer than [`MAX_LINE`] is skipped once its
    /// newline is there.
    fn read(&mut self, file: &File) -> std::io::Result<()> {
        let meta = file.metadata()?;
        let (len, now) = (meta.len(), Some(identity(&meta)));
        if len < self.offset || self.file != now {
            // Truncated by someone else, or another file under the name (rotated): start again
            // at its beginning.
            self.offset = 0;
            self.hash = Sha256::new();
            self.file = now;
        }
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        reader.seek(SeekFrom::Start(self.offset))?;
        let mut line = Vec::with_capacity(1024);
        // The line being read: its hash with what came before, and its bytes so far when it
        // is read in pieces (longer than MAX_LINE: too long to be an event, skipped once it
        // ends, without holding it).
        let (mut hash, mut pieces) = (self.hash.clone(), 0);
        loop {
            line.clear();
            let n = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut line)? as u64;
            let ended = line.last() == Some(&b'\n');
            if !ended && n <= MAX_LINE as u64 {
                // The end, or a line half-written (its writer is still at it): read again
                // from its start at the next poll, never in two parts.
                return Ok(());
            }
            hash.update(&line);
            if !ended {
                pieces += n;
                continue;
            }
            match pieces {
                0 => self.metrics.fold_line(&line[..line.len() - 1]),
                _ => self.metrics.skipped(),
            }
            self.offset += pieces + n;
            self.hash = hash.clone();
            pieces = 0;
        }
    }
}

/// What tells one file from another under the same name.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

fn hex(hash: &Sha256) -> String {
    format!("{:x}", hash.clone().finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Event, Line};

    fn event(pool: &str) -> Vec<u8> {
        let mut line = serde_json::to_vec(&Line {
            t: 1,
            event: Event::Begin {
                cmd: "CreateInstance".into(),
                pool: pool.into(),
            },
        })
        .unwrap();
        line.push(b'\n');
        line
    }

    fn append(path: &Path, bytes: &[u8]) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(bytes).unwrap();
    }

    fn started(c: &Consumer, pool: &str) -> String {
        let key = format!(
            "edge_connect_provider_commands_started_total{{command=\"CreateInstance\",pool=\"{pool}\"}} "
        );
        c.metrics()
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(&key).map(String::from))
            .unwrap_or_else(|| "absent".into())
    }

    fn skipped(c: &Consumer) -> String {
        c.metrics()
            .render()
            .lines()
            .find_map(|l| {
                l.strip_prefix("edge_connect_provider_events_skipped_total ")
                    .map(String::from)
            })
            .unwrap_or_else(|| "0".into())
    }

    #[test]
    fn a_half_written_line_waits_for_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let (events, snap) = (dir.path().join("events"), dir.path().join("snap"));
        let line = event("a");
        append(&events, &event("a"));
        append(&events, &line[..10]);
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        assert_eq!(started(&c, "a"), "1");
        append(&events, &line[10..]);
        c.poll().unwrap();
        assert_eq!(started(&c, "a"), "2");
        assert_eq!(skipped(&c), "0");
    }

    #[test]
    fn compaction_truncates_and_a_restart_keeps_the_counters() {
        let dir = tempfile::tempdir().unwrap();
        let (events, snap) = (dir.path().join("events"), dir.path().join("snap"));
        append(&events, &event("a"));
        append(&events, b"not json\n");
        // The remnant of a writer killed mid-line: skipped at compaction, under the lock.
        append(&events, &event("a")[..7]);
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.compact().unwrap();
        assert_eq!(std::fs::metadata(&events).unwrap().len(), 0);
        assert_eq!(started(&c, "a"), "1");
        assert_eq!(skipped(&c), "2");
        append(&events, &event("a"));
        drop(c);
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        assert_eq!(started(&c, "a"), "2");
        assert_eq!(skipped(&c), "2");
    }

    #[test]
    fn a_snapshot_saved_before_its_truncation_is_not_counted_twice() {
        let dir = tempfile::tempdir().unwrap();
        let (events, snap) = (dir.path().join("events"), dir.path().join("snap"));
        append(&events, &event("a"));
        append(&events, &event("b"));
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        // The sidecar stops after the rename, before the truncation.
        c.save().unwrap();
        drop(c);
        append(&events, &event("b"));
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        assert_eq!(started(&c, "a"), "1");
        assert_eq!(started(&c, "b"), "2");
    }

    #[test]
    fn a_rotated_events_file_is_read_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let (events, snap) = (dir.path().join("events"), dir.path().join("snap"));
        append(&events, &event("a"));
        append(&events, &event("a"));
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        assert_eq!(started(&c, "a"), "2");
        // logrotate's way: the old file renamed away, a new one under the name, longer than
        // what was read of the old one.
        std::fs::rename(&events, dir.path().join("events.1")).unwrap();
        for _ in 0..3 {
            append(&events, &event("b"));
        }
        c.poll().unwrap();
        assert_eq!(started(&c, "b"), "3");
        assert_eq!(skipped(&c), "0");
    }

    #[test]
    fn a_lock_held_by_someone_else_does_not_stop_a_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let (events, snap) = (dir.path().join("events"), dir.path().join("snap"));
        append(&events, &event("a"));
        let holder = File::open(&events).unwrap();
        holder.lock_shared().unwrap();
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.compact().unwrap();
        // Saved but not truncated: a restart counts nothing twice.
        assert!(std::fs::metadata(&events).unwrap().len() > 0);
        drop(c);
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        assert_eq!(started(&c, "a"), "1");
        drop(holder);
        c.compact().unwrap();
        assert_eq!(std::fs::metadata(&events).unwrap().len(), 0);
        assert_eq!(started(&c, "a"), "1");
    }

    #[test]
    fn an_overlong_line_is_skipped_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (events, snap) = (dir.path().join("events"), dir.path().join("snap"));
        append(&events, &vec![b'x'; 3 * MAX_LINE]);
        let mut c = Consumer::open(&events, &snap).unwrap();
        c.poll().unwrap();
        assert_eq!(skipped(&c), "0");
        append(&events, b"\n");
        append(&events, &event("a"));
        c.poll().unwrap();
        assert_eq!(skipped(&c), "1");
        assert_eq!(started(&c, "a"), "1");
    }
}
