//! Events folded into Prometheus metrics, and those metrics in the text exposition format
//! (version 0.0.4: `# HELP`, `# TYPE`, one `name{labels} value` line per series, a histogram as
//! cumulative `_bucket{le=…}` lines, `_sum` and `_count`). The set of metrics is fixed here;
//! their series are bounded by [`MAX_SERIES`] whatever the events say.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::{Event, Line};

/// The most series the sidecar keeps (all metrics together): a pool id is a label, and pools
/// come and go over months. Events for a new series past it are counted as dropped.
pub(super) const MAX_SERIES: usize = 10_000;

/// How a metric is kept.
enum Kind {
    Counter,
    Gauge,
    Histogram(&'static [f64]),
}

/// One metric: its name, what it answers, its type and its labels in order.
struct Def {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
}

const CREATE_BUCKETS: &[f64] = &[5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0];
const COMMAND_BUCKETS: &[f64] = &[0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0];
const RPC_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
const HOLD_BUCKETS: &[f64] = &[30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1200.0];

const P: &str = "edge_connect_provider_";

/// The states of the `site_cache` gauge.
const SITE_CACHE_STATES: [&str; 4] = ["ready", "starting", "absent", "failed"];

/// Every metric the sidecar serves (docs/operations.md, "Metrics", says what each answers).
const DEFS: &[Def] = &[
    Def {
        name: "commands_started_total",
        help: "Provider commands started, by GARM command and pool (started minus ended: killed)",
        kind: Kind::Counter,
        labels: &["command", "pool"],
    },
    Def {
        name: "commands_total",
        help: "Provider commands ended, by GARM command, pool, site, outcome and reason",
        kind: Kind::Counter,
        labels: &["command", "pool", "site", "outcome", "reason"],
    },
    Def {
        name: "command_duration_seconds",
        help: "Duration of provider commands, by GARM command, pool and outcome",
        kind: Kind::Histogram(COMMAND_BUCKETS),
        labels: &["command", "pool", "outcome"],
    },
    Def {
        name: "create_ready_seconds",
        help: "From the start of a create (or start) to its AppInst Ready, by pool and site",
        kind: Kind::Histogram(CREATE_BUCKETS),
        labels: &["pool", "site"],
    },
    Def {
        name: "failovers_total",
        help: "Sites that could not take a runner, by pool, the site and the next site tried",
        kind: Kind::Counter,
        labels: &["pool", "from", "to"],
    },
    Def {
        name: "start_failures_total",
        help: "Runners that will not start, by pool, site and reason (kubelet's or the provider's)",
        kind: Kind::Counter,
        labels: &["pool", "site", "reason"],
    },
    Def {
        name: "crm_hold_seconds",
        help: "Age of AppInsts a delete found held by their site's CRM, by pool and site",
        kind: Kind::Histogram(HOLD_BUCKETS),
        labels: &["pool", "site"],
    },
    Def {
        name: "requests_total",
        help: "Edge Connect requests, by RPC and HTTP status (transport: no answer)",
        kind: Kind::Counter,
        labels: &["rpc", "status"],
    },
    Def {
        name: "request_duration_seconds",
        help: "Duration of Edge Connect requests until their answer's headers, by RPC",
        kind: Kind::Histogram(RPC_BUCKETS),
        labels: &["rpc"],
    },
    Def {
        name: "commands_by_token_total",
        help: "Commands that talked to Edge Connect, by where their token came from (login, cache)",
        kind: Kind::Counter,
        labels: &["token"],
    },
    Def {
        name: "runners",
        help: "Runners of a pool per site: the last ListInstances of the pool, less the runners DeleteInstance removed since",
        kind: Kind::Gauge,
        labels: &["pool", "site"],
    },
    Def {
        name: "site_cache",
        help: "A site cache's state as the last create on its site found it (1 for that state, 0 for the others)",
        kind: Kind::Gauge,
        labels: &["site", "service", "state"],
    },
    Def {
        name: "site_cache_runners_total",
        help: "Runners a create pointed at their site's Ready cache",
        kind: Kind::Counter,
        labels: &["site", "service"],
    },
    Def {
        name: "remove_all_runners_total",
        help: "Runners RemoveAllInstances removed or could not remove, by outcome",
        kind: Kind::Counter,
        labels: &["outcome"],
    },
    Def {
        name: "events_skipped_total",
        help:
            "Event lines the sidecar could not read (cut short by a killed writer, or not an event)",
        kind: Kind::Counter,
        labels: &[],
    },
    Def {
        name: "series_dropped_total",
        help: "Events not counted because the sidecar already keeps its maximum of series",
        kind: Kind::Counter,
        labels: &[],
    },
];

/// A histogram's series: counts per bucket (not cumulative), sum and count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Histogram {
    buckets: Vec<u64>,
    /// Grows past `f64::MAX` to infinity after enough huge observations, which JSON writes as
    /// `null`: read back as infinity, so the sidecar starts from every snapshot it wrote.
    #[serde(deserialize_with = "null_is_infinity")]
    sum: f64,
    count: u64,
}

fn null_is_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// Every series, by metric and by its label values (rendered `a="x",b="y"`, escaped).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Metrics {
    values: BTreeMap<String, BTreeMap<String, f64>>,
    histograms: BTreeMap<String, BTreeMap<String, Histogram>>,
    series: usize,
}

impl Metrics {
    /// Folds one event line; a line that is not an event, or whose duration is not one (none
    /// is negative, nor, JSON being JSON, infinite or NaN), counts as skipped.
    pub(super) fn fold_line(&mut self, line: &[u8]) {
        let duration = |secs: f64| secs.is_finite() && secs >= 0.0;
        match serde_json::from_slice::<Line>(line) {
            Ok(line) if line.event.secs().is_none_or(duration) => self.fold(line.event),
            _ => self.skipped(),
        }
    }

    /// Counts a line that could not be read. Its one series is always kept, whatever the bound.
    pub(super) fn skipped(&mut self) {
        self.unbounded("events_skipped_total");
    }

    /// Adds one to `name`, a metric without labels: one series each, outside [`MAX_SERIES`],
    /// so what tells that something was not counted is counted however many series exist.
    fn unbounded(&mut self, name: &str) {
        let metric = self.values.entry(name.into()).or_default();
        *metric.entry(String::new()).or_default() += 1.0;
    }

    fn fold(&mut self, event: Event) {
        match event {
            Event::Begin { cmd, pool } => self.add("commands_started_total", &[&cmd, &pool], 1.0),
            Event::End {
                cmd,
                pool,
                site,
                outcome,
                reason,
                secs,
                logins,
            } => {
                let labels = [&*cmd, &pool, &site, &outcome, &reason];
                self.add("commands_total", &labels, 1.0);
                self.observe("command_duration_seconds", &[&cmd, &pool, &outcome], secs);
                let token = if logins > 0 { "login" } else { "cache" };
                self.add("commands_by_token_total", &[token], 1.0);
            }
            Event::Rpc { rpc, status, secs } => {
                self.add("requests_total", &[&rpc, &status], 1.0);
                self.observe("request_duration_seconds", &[&rpc], secs);
            }
            Event::Placed { pool, site, secs } => {
                self.observe("create_ready_seconds", &[&pool, &site], secs)
            }
            Event::SiteCache {
                site,
                service,
                state,
            } => {
                for other in SITE_CACHE_STATES {
                    if let Some(v) = self.slot("site_cache", &[&site, &service, other]) {
                        *v = f64::from(u8::from(*other == state));
                    }
                }
                if state == "ready" {
                    self.add("site_cache_runners_total", &[&site, &service], 1.0);
                }
            }
            Event::Failover { pool, from, to } => {
                self.add("failovers_total", &[&pool, &from, &to], 1.0)
            }
            Event::StartFailure { pool, site, reason } => {
                self.add("start_failures_total", &[&pool, &site, &reason], 1.0)
            }
            Event::CrmHold { pool, site, secs } => {
                self.observe("crm_hold_seconds", &[&pool, &site], secs)
            }
            Event::Listed { pool, runners } => {
                // A site the List no longer finds runners on drops to zero.
                let of_pool = series_key(&["pool"], &[&pool]) + ",";
                for (key, v) in self.values.entry("runners".into()).or_default() {
                    if key.starts_with(&of_pool) {
                        *v = 0.0;
                    }
                }
                for (site, n) in runners {
                    if let Some(v) = self.slot("runners", &[&pool, &site]) {
                        *v = n as f64;
                    }
                }
                self.forget_if_empty(&of_pool);
            }
            Event::Removed { pool, site } => {
                let key = series_key(def("runners").labels, &[&pool, &site]);
                if let Some(v) = self.values.get_mut("runners").and_then(|m| m.get_mut(&key)) {
                    *v = (*v - 1.0).max(0.0);
                }
                self.forget_if_empty(&(series_key(&["pool"], &[&pool]) + ","));
            }
            Event::RemovedAll { removed, failed } => {
                self.add("remove_all_runners_total", &["removed"], removed as f64);
                self.add("remove_all_runners_total", &["failed"], failed as f64);
                // None failed: the controller has no runner left anywhere.
                let all = (failed == 0).then(|| self.values.remove("runners"));
                if let Some(runners) = all.flatten() {
                    self.series = self.series.saturating_sub(runners.len());
                }
            }
        }
    }

    /// Removes the runners series of a pool (`of_pool`: the start of their keys) when none
    /// holds a runner: a pool GARM deleted (after deleting its runners) leaves no series, and
    /// pools that come and go do not fill [`MAX_SERIES`].
    fn forget_if_empty(&mut self, of_pool: &str) {
        let Some(runners) = self.values.get_mut("runners") else {
            return;
        };
        let mut of = runners.iter().filter(|(k, _)| k.starts_with(of_pool));
        if of.any(|(_, v)| *v > 0.0) {
            return;
        }
        let before = runners.len();
        runners.retain(|k, _| !k.starts_with(of_pool));
        self.series = self.series.saturating_sub(before - runners.len());
    }

    /// The series of `name` with `values`, when it exists or there is room for it.
    fn slot(&mut self, name: &'static str, values: &[&str]) -> Option<&mut f64> {
        let key = series_key(def(name).labels, values);
        let room = self.room(has(&self.values, name, &key));
        let metric = room.then(|| self.values.entry(name.into()).or_default())?;
        Some(metric.entry(key).or_default())
    }

    /// Whether a series may be written: a known one, or a new one within [`MAX_SERIES`] (then
    /// counted); a new one past it is counted as dropped.
    fn room(&mut self, known: bool) -> bool {
        if known || self.series < MAX_SERIES {
            self.series += usize::from(!known);
            return true;
        }
        self.unbounded("series_dropped_total");
        false
    }

    fn add(&mut self, name: &'static str, values: &[&str], by: f64) {
        if let Some(v) = self.slot(name, values) {
            *v += by;
        }
    }

    fn observe(&mut self, name: &'static str, values: &[&str], x: f64) {
        let d = def(name);
        let Kind::Histogram(bounds) = d.kind else {
            return;
        };
        let key = series_key(d.labels, values);
        if !self.room(has(&self.histograms, name, &key)) {
            return;
        }
        let h = self
            .histograms
            .entry(name.to_string())
            .or_default()
            .entry(key)
            .or_insert_with(|| Histogram {
                buckets: vec![0; bounds.len()],
                ..Histogram::default()
            });
        if let Some((n, _)) = h.buckets.iter_mut().zip(bounds).find(|(_, b)| x <= **b) {
            *n += 1;
        }
        h.sum += x;
        h.count += 1;
    }

    /// Every metric in the text exposition format.
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        for d in DEFS {
            let name = format!("{P}{}", d.name);
            let kind = match d.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram(_) => "histogram",
            };
            let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", d.help);
            if let Kind::Histogram(bounds) = d.kind {
                // Every histogram has labels: `key` is never empty.
                for (key, h) in self.histograms.get(d.name).into_iter().flatten() {
                    let mut cumulative = 0;
                    for (bound, n) in bounds.iter().zip(&h.buckets) {
                        cumulative += n;
                        let _ = writeln!(out, "{name}_bucket{{{key},le=\"{bound}\"}} {cumulative}");
                    }
                    let _ = writeln!(out, "{name}_bucket{{{key},le=\"+Inf\"}} {}", h.count);
                    let _ = writeln!(out, "{name}_sum{{{key}}} {}", Value(h.sum));
                    let _ = writeln!(out, "{name}_count{{{key}}} {}", h.count);
                }
            } else {
                // A metric without labels has one series, of the empty key: no braces.
                let (open, close) = if d.labels.is_empty() {
                    ("", "")
                } else {
                    ("{", "}")
                };
                for (key, v) in self.values.get(d.name).into_iter().flatten() {
                    let _ = writeln!(out, "{name}{open}{key}{close} {}", Value(*v));
                }
            }
        }
        out
    }
}

/// A sample value as the exposition format spells it (`+Inf`, where Rust writes `inf`; Rust's
/// `NaN` is the format's).
struct Value(f64);

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            v if v == f64::INFINITY => f.write_str("+Inf"),
            v if v == f64::NEG_INFINITY => f.write_str("-Inf"),
            v => write!(f, "{v}"),
        }
    }
}

/// Whether `metrics` has the series `key` of `name`.
fn has<T>(metrics: &BTreeMap<String, BTreeMap<String, T>>, name: &str, key: &str) -> bool {
    metrics.get(name).is_some_and(|m| m.contains_key(key))
}

fn def(name: &str) -> &'static Def {
    DEFS.iter()
        .find(|d| d.name == name)
        .unwrap_or(&DEFS[DEFS.len() - 1])
}

/// `a="x",b="y"` with the exposition format's escapes (backslash, quote, newline).
fn series_key(labels: &[&str], values: &[&str]) -> String {
    let mut key = String::new();
    for (i, (label, value)) in labels.iter().zip(values).enumerate() {
        if i > 0 {
            key.push(',');
        }
        let _ = write!(key, "{label}=\"");
        for c in value.chars() {
            match c {
                '\\' => key.push_str("\\\\"),
                '"' => key.push_str("\\\""),
                '\n' => key.push_str("\\n"),
                c => key.push(c),
            }
        }
        key.push('"');
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: Event) -> Vec<u8> {
        serde_json::to_vec(&Line { t: 1, event }).unwrap()
    }

    #[test]
    fn sample_values_are_spelled_as_the_exposition_format_spells_them() {
        let spelled =
            [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 2.5, 3.0].map(|v| Value(v).to_string());
        assert_eq!(spelled, ["+Inf", "-Inf", "NaN", "2.5", "3"]);
    }

    #[test]
    fn events_become_series_in_the_exposition_format() {
        let mut m = Metrics::default();
        m.fold_line(&line(Event::Rpc {
            rpc: "CreateApp".into(),
            status: "200".into(),
            secs: 0.2,
        }));
        m.fold_line(&line(Event::Listed {
            pool: "p\"1".into(),
            runners: [("A/x".to_string(), 3), ("A/y".to_string(), 1)].into(),
        }));
        m.fold_line(&line(Event::Listed {
            pool: "p\"1".into(),
            runners: [("A/x".to_string(), 2)].into(),
        }));
        m.fold_line(b"{\"t\":1,\"ev\":\"no_such_event\"}");
        let text = m.render();
        assert!(
            text.contains(
                "edge_connect_provider_requests_total{rpc=\"CreateApp\",status=\"200\"} 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("edge_connect_provider_request_duration_seconds_bucket{rpc=\"CreateApp\",le=\"0.1\"} 0\n"));
        assert!(text.contains("edge_connect_provider_request_duration_seconds_bucket{rpc=\"CreateApp\",le=\"0.25\"} 1\n"));
        assert!(text.contains(
            "edge_connect_provider_request_duration_seconds_count{rpc=\"CreateApp\"} 1\n"
        ));
        assert!(text.contains("edge_connect_provider_runners{pool=\"p\\\"1\",site=\"A/x\"} 2\n"));
        assert!(text.contains("edge_connect_provider_runners{pool=\"p\\\"1\",site=\"A/y\"} 0\n"));
        assert!(text.contains("edge_connect_provider_events_skipped_total 1\n"));
    }

    #[test]
    fn unreadable_lines_are_counted_past_the_series_bound() {
        let mut m = Metrics::default();
        for i in 0..MAX_SERIES + 1 {
            m.fold(Event::Listed {
                pool: format!("pool-{i}"),
                runners: [(String::new(), 1)].into(),
            });
        }
        m.fold_line(b"cut sho");
        let text = m.render();
        assert!(
            text.contains("edge_connect_provider_events_skipped_total 1\n"),
            "{}",
            &text[text.len() - 600..]
        );
        assert!(text.contains("edge_connect_provider_series_dropped_total 1\n"));
    }

    #[test]
    fn a_sum_grown_to_infinity_survives_its_snapshot() {
        let mut m = Metrics::default();
        for _ in 0..2 {
            m.fold(Event::CrmHold {
                pool: "p".into(),
                site: "A/x".into(),
                secs: f64::MAX,
            });
        }
        let saved = serde_json::to_vec(&m).unwrap();
        let read: Metrics = serde_json::from_slice(&saved).unwrap();
        assert!(read.render().contains(
            "edge_connect_provider_crm_hold_seconds_sum{pool=\"p\",site=\"A/x\"} +Inf\n"
        ));
    }

    #[test]
    fn a_negative_duration_is_not_one() {
        let mut m = Metrics::default();
        m.fold_line(br#"{"t":1,"ev":"crm_hold","site":"A/x","secs":-1e308}"#);
        let text = m.render();
        assert!(text.contains("edge_connect_provider_events_skipped_total 1\n"));
        assert!(!text.contains("crm_hold_seconds_sum"), "{text}");
    }

    #[test]
    fn a_pool_whose_runners_are_deleted_leaves_no_series() {
        let mut m = Metrics::default();
        m.fold(Event::Listed {
            pool: "p".into(),
            runners: [("A/x".to_string(), 1), ("A/y".to_string(), 1)].into(),
        });
        m.fold(Event::Removed {
            pool: "p".into(),
            site: "A/x".into(),
        });
        let text = m.render();
        assert!(text.contains("edge_connect_provider_runners{pool=\"p\",site=\"A/x\"} 0\n"));
        assert!(text.contains("edge_connect_provider_runners{pool=\"p\",site=\"A/y\"} 1\n"));
        m.fold(Event::Removed {
            pool: "p".into(),
            site: "A/y".into(),
        });
        assert!(!m.render().contains("edge_connect_provider_runners{"));
        assert_eq!(m.series, 0);
        // RemoveAllInstances that removed everything leaves no runner of any pool.
        for pool in ["p", "q"] {
            m.fold(Event::Listed {
                pool: pool.into(),
                runners: [("A/x".to_string(), 1)].into(),
            });
        }
        m.fold(Event::RemovedAll {
            removed: 2,
            failed: 0,
        });
        assert!(!m.render().contains("edge_connect_provider_runners{"));
    }

    #[test]
    fn series_are_bounded() {
        let mut m = Metrics::default();
        for i in 0..MAX_SERIES + 5 {
            m.fold(Event::Listed {
                pool: format!("pool-{i}"),
                runners: [(String::new(), 1)].into(),
            });
        }
        assert_eq!(m.series, MAX_SERIES);
        assert!(m
            .render()
            .contains("edge_connect_provider_series_dropped_total 5\n"));
    }
}
