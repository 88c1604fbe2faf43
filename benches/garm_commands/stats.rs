//! Medians and the samples of one command.

use crate::prelude::*;

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// Samples of one command at one latency.
#[derive(Default)]
pub(crate) struct Samples {
    pub(crate) wall: Vec<f64>,
    pub(crate) cpu: Vec<f64>,
    pub(crate) rss_mb: Vec<f64>,
    pub(crate) sent: Vec<f64>,
    pub(crate) received: Vec<f64>,
    pub(crate) requests: usize,
    pub(crate) rounds: usize,
    pub(crate) connections: usize,
    pub(crate) logins: usize,
    pub(crate) shape: Shape,
    /// The thin client with the same calls.
    pub(crate) limit: Vec<f64>,
    /// Provider wall / thin client wall, per run.
    pub(crate) ratio: Vec<f64>,
    /// The thin client without the read-only round (only where the provider has one).
    pub(crate) limit_min: Vec<f64>,
    pub(crate) ratio_min: Vec<f64>,
    pub(crate) min_rounds: Option<usize>,
    /// The minimal client process with the same calls, and provider wall / its wall per run.
    pub(crate) minimal: Vec<f64>,
    pub(crate) ratio_minimal: Vec<f64>,
    /// curl, one process per round, and provider wall / its wall per run.
    pub(crate) curl: Vec<f64>,
    pub(crate) ratio_curl: Vec<f64>,
}

impl Samples {
    pub(crate) fn add_proc(&mut self, proc: &Proc) {
        self.wall.push(ms(proc.wall));
        self.cpu.push(ms(proc.cpu));
        self.rss_mb.push(proc.max_rss_kb as f64 / 1024.0);
    }

    /// The thin client's time for the provider run added last.
    pub(crate) fn add_limit(&mut self, limit: Duration) {
        self.limit.push(ms(limit));
        if let Some(wall) = self.wall.last() {
            self.ratio.push(wall / ms(limit));
        }
    }

    /// The minimal client's and curl's times for the provider run added last.
    pub(crate) fn add_processes(&mut self, minimal: Duration, curl: Option<Duration>) {
        if let Some(wall) = self.wall.last().copied() {
            self.minimal.push(ms(minimal));
            self.ratio_minimal.push(wall / ms(minimal));
            if let Some(curl) = curl {
                self.curl.push(ms(curl));
                self.ratio_curl.push(wall / ms(curl));
            }
        }
    }

    pub(crate) fn add_limit_min(&mut self, limit: Duration) {
        self.limit_min.push(ms(limit));
        if let Some(wall) = self.wall.last() {
            self.ratio_min.push(wall / ms(limit));
        }
    }

    pub(crate) fn add(&mut self, m: &Measured) {
        self.add_proc(&m.proc);
        self.sent.push(m.traffic.sent as f64);
        self.received.push(m.traffic.received as f64);
        // The shape is the same in every run (checked); the last one is kept.
        self.requests = m.requests;
        self.rounds = m.traffic.rounds.len();
        self.connections = m.traffic.connections;
        self.logins = self.logins.max(m.logins);
        self.shape = m.traffic.rounds.shape();
    }

    pub(crate) fn check_shape(&self, m: &Measured, what: &str) -> Result<()> {
        if !self.shape.is_empty() {
            ensure!(
                self.shape == m.traffic.rounds.shape(),
                "{what}: calls changed between runs ({} then {})",
                shape_text(&self.shape),
                shape_text(&m.traffic.rounds.shape())
            );
        }
        Ok(())
    }

    pub(crate) fn record(&mut self, m: &Measured, what: &str) -> Result<()> {
        self.check_shape(m, what)?;
        self.add(m);
        Ok(())
    }
}
