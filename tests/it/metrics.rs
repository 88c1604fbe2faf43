//! Metrics (issue 37, docs/operations.md "Metrics"): GARM's commands against the simulator append
//! their events to `metrics_events_file`; the sidecar (`metrics serve`) serves them; a real
//! Prometheus scrapes it and is asked, through its own query API, what it holds.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use edge_connect_sim::Fault;

use crate::support::*;

/// The CRM's error for a pod whose container reports `Unschedulable` (as start_failures.rs).
const UNSCHEDULABLE: &str =
    "invalid pod state, pod garm-mfo1-5c9-p2: Pending (0/1), container garm-mfo1: Unschedulable";

/// How long a condition on another process (the sidecar's port, Prometheus' scrape) is awaited.
const PATIENCE: Duration = Duration::from_secs(90);

/// A world whose provider config records metrics events to `events.jsonl` next to it.
fn world_with_events(config: edge_connect_sim::SimConfig) -> (World, PathBuf) {
    let w = World::with_sim(config, Site::Zone, "");
    let text = std::fs::read_to_string(&w.config).unwrap();
    std::fs::write(
        &w.config,
        format!("metrics_events_file = \"events.jsonl\"\n{text}"),
    )
    .unwrap();
    let events = w.dir.path().join("events.jsonl");
    (w, events)
}

fn create_with(w: &World, name: &str, image: Option<&str>, two_sites: bool) -> Run {
    w.create_edited(name, |v| {
        if let Some(image) = image {
            v["image"] = image.into();
        }
        if two_sites {
            v["extra_specs"] = zones(&["Munich", "Berlin"]);
        }
    })
}

/// A process of the test, killed when the test ends, a failing one included.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The sidecar on a port of its choosing; returns it and its port.
fn sidecar(events: &Path) -> (Reaped, u16) {
    let mut child = command()
        .args(["metrics", "serve", "--listen", "127.0.0.1:0", "--events"])
        .arg(events)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the sidecar starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the sidecar says where it listens");
    let port = first
        .trim()
        .strip_prefix("serving metrics on http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line: {first:?}"));
    (Reaped(child), port)
}

/// `GET path` on 127.0.0.1:`port`: status line and body.
fn get(port: u16, path: &str) -> std::io::Result<(String, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.lines().next().unwrap_or_default().to_string();
    // Prometheus may answer chunked; its JSON is on the chunk lines that are not sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body.split("\r\n")
            .enumerate()
            .filter(|(i, _)| i % 2 == 1)
            .map(|(_, l)| l)
            .collect()
    } else {
        body.to_string()
    };
    Ok((status, body))
}

/// The value of `metric{labels}` in the sidecar's answer (`None` when absent).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn stop(mut child: Reaped) {
    // SIGTERM: the sidecar folds the events into its snapshot before it exits.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let status = child.0.wait().expect("the sidecar exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_sidecar_keeps_its_counters_across_a_restart_and_truncates_the_events() {
    let (w, events) = world_with_events(two_zones());
    let r = w.create("bootstrap-github-jit.json", "garm-mr1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (child, port) = sidecar(&events);
    let (status, before) = get(port, "/metrics").unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    let ok = format!("edge_connect_provider_commands_total{{command=\"CreateInstance\",pool=\"{POOL}\",site=\"TelekomOP/Munich\",outcome=\"ok\",reason=\"\"}}");
    assert_eq!(sample(&before, &ok), Some(1.0), "{before}");
    assert_eq!(
        sample(
            &before,
            "edge_connect_provider_requests_total{rpc=\"CreateApp\",status=\"200\"}"
        ),
        Some(1.0),
        "{before}"
    );
    assert_eq!(get(port, "/other").unwrap().0, "HTTP/1.1 404 Not Found");
    stop(child);
    assert_eq!(std::fs::metadata(&events).unwrap().len(), 0);

    let g = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-mr1")], None);
    assert_eq!(g.code, 0, "{}", g.stderr);
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", "garm-mr1")], None);
    assert_eq!(d.code, 0, "{}", d.stderr);
    let (child, port) = sidecar(&events);
    let (_, after) = get(port, "/metrics").unwrap();
    assert_eq!(sample(&after, &ok), Some(1.0), "{after}");
    // GARM names a runner to delete by instance: in interface v0.1.0 the delete starts and ends
    // without a pool, and names the site its AppInst ran on.
    let deleted = "edge_connect_provider_commands_total{command=\"DeleteInstance\",pool=\"\",site=\"TelekomOP/Munich\",outcome=\"ok\",reason=\"\"}";
    assert_eq!(sample(&after, deleted), Some(1.0), "{after}");
    let got = "edge_connect_provider_commands_total{command=\"GetInstance\",pool=\"\",site=\"TelekomOP/Munich\",outcome=\"ok\",reason=\"\"}";
    assert_eq!(sample(&after, got), Some(1.0), "{after}");
    assert_started_equals_ended(&after);
    stop(child);
}

/// Every command of `text` (a scrape) that began also ended, pool by pool: none was killed.
fn assert_started_equals_ended(text: &str) {
    let mut by_pool = std::collections::BTreeMap::<String, f64>::new();
    for line in text.lines() {
        let (series, value) = line.rsplit_once(' ').unwrap_or_default();
        let labels = |prefix: &str| {
            let rest = series.strip_prefix(prefix)?;
            let pool_at = rest.find(",pool=\"")? + 7;
            let pool = &rest[pool_at..pool_at + rest[pool_at..].find('"')?];
            let command = rest.strip_prefix("{command=\"")?.split('"').next()?;
            Some(format!("{command} {pool}"))
        };
        let v: f64 = value.parse().unwrap_or(0.0);
        if let Some(key) = labels("edge_connect_provider_commands_started_total") {
            *by_pool.entry(key).or_default() += v;
        } else if let Some(key) = labels("edge_connect_provider_commands_total") {
            *by_pool.entry(key).or_default() -= v;
        }
    }
    assert!(!by_pool.is_empty(), "{text}");
    for (command_pool, left) in by_pool {
        assert_eq!(left, 0.0, "{command_pool}: started minus ended in\n{text}");
    }
}

#[test]
fn events_hold_no_secret_and_no_instance_name() {
    let (w, events) = world_with_events(two_zones());
    let r = w.create("bootstrap-github-jit.json", "garm-msecret1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let d = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-msecret1")],
        None,
    );
    assert_eq!(d.code, 0, "{}", d.stderr);
    let text = std::fs::read_to_string(&events).unwrap();
    assert!(text.lines().count() >= 8, "{text}");
    for secret in secrets() {
        assert!(
            !text.contains(secret),
            "a secret ({}…) in {text}",
            &secret[..6]
        );
    }
    assert!(!text.contains("eyJhbGciOi"), "a JWT in {text}");
    assert!(
        !text.contains("garm-msecret1"),
        "an instance name in {text}"
    );
    w.assert_no_secrets(&[&r, &d]);
}

/// Asks Prometheus `query` until it answers `want` (the sum of the result's values).
fn await_value(prometheus: u16, sidecar: u16, query: &str, want: f64) {
    let started = Instant::now();
    let path = format!("/api/v1/query?query={}", url_encoded(query));
    let mut last = String::new();
    while started.elapsed() < PATIENCE {
        if let Ok((_, body)) = get(prometheus, &path) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                let values: Vec<f64> = v["data"]["result"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["value"][1].as_str()?.parse().ok())
                    .collect();
                if values.iter().sum::<f64>() == want && (want == 0.0 || !values.is_empty()) {
                    return;
                }
            }
            last = body;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let metrics = get(sidecar, "/metrics").map(|r| r.1).unwrap_or_default();
    panic!("Prometheus never answered {want} to {query}; last answer: {last}\nthe sidecar serves:\n{metrics}");
}

fn url_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A Debian `prometheus` scraping the sidecar every second, with its storage in `dir`.
fn prometheus(dir: &Path, sidecar: u16) -> (Reaped, u16) {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: provider\n    static_configs:\n      - targets: ['127.0.0.1:{sidecar}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run prometheus ({e}): install Debian's package (apt-get install prometheus)")
        });
    (Reaped(child), port)
}

#[test]
#[ignore = "needs prometheus (Debian package); .ci/run installs it"]
fn a_real_prometheus_holds_what_garms_commands_did() {
    let (w, events) = world_with_events(crm_waiting(
        &["Munich", "Berlin"],
        true,
        Duration::from_secs(10),
    ));
    // A good create on the config's site, Munich.
    let r = create_with(&w, "garm-mok1", None, false);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A runner that will not start: its container keeps crashing.
    let r = create_with(
        &w,
        "garm-mcrash1",
        Some("ghcr.io/example-org/garm-runner:crash"),
        false,
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    // A failover: Munich cannot schedule the pod, Berlin takes it.
    w.sim
        .inject(Fault::stream_error("CreateAppInst", 3, UNSCHEDULABLE));
    let r = create_with(&w, "garm-mfo1", None, true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A delete, and a List of the pool (the runner on Berlin is left).
    let d = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", "garm-mok1")], None);
    assert_eq!(d.code, 0, "{}", d.stderr);
    let l = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(l.code, 0, "{}", l.stderr);
    // A create GARM kills once its CreateApp was answered (its CreateAppInst is slow).
    let create_apps = |text: &str| text.matches("\"rpc\":\"CreateApp\"").count();
    let before = create_apps(&std::fs::read_to_string(&events).unwrap());
    w.sim.inject(Fault::new(
        "CreateAppInst",
        edge_connect_sim::FaultKind::Slow { delay_ms: 60_000 },
    ));
    let mut killed = w.spawn_garm(
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        &fixture_with("bootstrap-github-jit.json", "garm-mkill1", POOL),
    );
    wait_until("the create's CreateApp", || {
        create_apps(&std::fs::read_to_string(&events).unwrap()) != before
    });
    killed.kill().expect("SIGKILL");
    let _ = killed.wait();

    let (side, side_port) = sidecar(&events);
    let dir = tempfile::tempdir().unwrap();
    let (prom, prom_port) = prometheus(dir.path(), side_port);
    let p = "edge_connect_provider_";
    let checks: Vec<(String, f64)> = vec![
        (format!("{p}commands_total{{command=\"CreateInstance\",outcome=\"ok\",site=\"TelekomOP/Munich\"}}"), 1.0),
        (format!("{p}commands_total{{command=\"CreateInstance\",outcome=\"ok\",site=\"TelekomOP/Berlin\"}}"), 1.0),
        (format!("{p}commands_total{{command=\"CreateInstance\",outcome=\"error\",reason=\"CrashLoopBackOff\",pool=\"{POOL}\"}}"), 1.0),
        (format!("{p}start_failures_total{{site=\"TelekomOP/Munich\",reason=\"CrashLoopBackOff\"}}"), 1.0),
        (format!("{p}start_failures_total{{site=\"TelekomOP/Munich\",reason=\"Unschedulable\"}}"), 1.0),
        (format!("{p}failovers_total{{from=\"TelekomOP/Munich\",to=\"TelekomOP/Berlin\",pool=\"{POOL}\"}}"), 1.0),
        (format!("{p}commands_total{{command=\"DeleteInstance\",outcome=\"ok\",site=\"TelekomOP/Munich\"}}"), 1.0),
        (format!("{p}command_duration_seconds_count{{command=\"DeleteInstance\",outcome=\"ok\"}}"), 1.0),
        (format!("{p}create_ready_seconds_count{{pool=\"{POOL}\"}}"), 2.0),
        (format!("{p}runners{{pool=\"{POOL}\",site=\"TelekomOP/Berlin\"}}"), 1.0),
        // Four creates began, three ended: the one GARM killed.
        (format!("sum({p}commands_started_total{{command=\"CreateInstance\"}}) - sum({p}commands_total{{command=\"CreateInstance\"}})"), 1.0),
        (format!("sum({p}requests_total{{rpc=\"CreateApp\",status=\"200\"}})"), 4.0),
        (format!("{p}requests_total{{rpc=\"login\",status=\"200\"}}"), 1.0),
        (format!("{p}commands_by_token_total{{token=\"login\"}}"), 1.0),
        (format!("{p}commands_by_token_total{{token=\"cache\"}}"), 4.0),
        (format!("{p}events_skipped_total"), 0.0),
    ];
    for (query, want) in &checks {
        await_value(prom_port, side_port, query, *want);
    }
    // Every query of the dashboard is one Prometheus accepts.
    for expr in dashboard_queries() {
        let expr = expr
            .replace("$__rate_interval", "1m")
            .replace("$pool", ".*");
        let (status, body) = get(
            prom_port,
            &format!("/api/v1/query?query={}", url_encoded(&expr)),
        )
        .unwrap();
        assert!(
            status.contains("200") && body.contains("\"success\""),
            "{expr}: {status} {body}"
        );
    }
    drop(prom);
    stop(side);
}

#[test]
fn the_environment_can_name_the_events_file() {
    let w = World::with_sim(two_zones(), Site::Zone, "");
    let events = w.dir.path().join("from-env.jsonl");
    let path = events.display().to_string();
    let l = w.garm(
        "ListInstances",
        &[
            ("GARM_POOL_ID", POOL),
            ("EDP_EDGE_CONNECT_METRICS_EVENTS_FILE", &path),
        ],
        None,
    );
    assert_eq!(l.code, 0, "{}", l.stderr);
    let text = std::fs::read_to_string(&events).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["ev"].to_string())
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("\"begin\""),
        "{text}"
    );
    assert!(kinds.contains(&"\"listed\"".to_string()), "{text}");
    assert_eq!(kinds.last().map(String::as_str), Some("\"end\""), "{text}");
}

/// Interface v0.1.1 names the pool of a command about one runner (`GARM_POOL_ID`): its begin
/// and end count under it; a scale set's runner (the variable empty) under none, and
/// RemoveAllInstances, which is about no pool, under none whatever GARM sends.
#[test]
fn a_command_about_one_runner_counts_under_the_pool_garm_names() {
    let (w, events) = world_with_events(two_zones());
    let r = w.create("bootstrap-github-jit.json", "garm-mpool1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(&events, "").unwrap();
    let instance = ("GARM_INSTANCE_ID", "garm-mpool1");
    let v011 = ("GARM_INTERFACE_VERSION", "v0.1.1");
    for (pool, command) in [
        (POOL, "GetInstance"),
        ("", "GetInstance"),
        (POOL, "DeleteInstance"),
        (POOL, "RemoveAllInstances"),
    ] {
        let run = w.garm(command, &[instance, v011, ("GARM_POOL_ID", pool)], None);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let text = std::fs::read_to_string(&events).unwrap();
    let counted: Vec<(String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["ev"] == "begin" || v["ev"] == "end")
        .map(|v| (format!("{} {}", v["ev"], v["cmd"]), v["pool"].to_string()))
        .collect();
    let (pool, none) = (format!("\"{POOL}\""), "\"\"".to_string());
    let want = [
        ("\"begin\" \"GetInstance\"", &pool),
        ("\"end\" \"GetInstance\"", &pool),
        ("\"begin\" \"GetInstance\"", &none),
        ("\"end\" \"GetInstance\"", &none),
        ("\"begin\" \"DeleteInstance\"", &pool),
        ("\"end\" \"DeleteInstance\"", &pool),
        ("\"begin\" \"RemoveAllInstances\"", &none),
        ("\"end\" \"RemoveAllInstances\"", &none),
    ]
    .map(|(event, pool)| (event.to_string(), pool.clone()));
    assert_eq!(counted, want, "{text}");
}

/// The PromQL of every panel and variable of the Grafana dashboard.
fn dashboard_queries() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/helm/garm-provider-edge-connect/dashboards/edge-connect-provider.json");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut out: Vec<String> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    out.extend(
        d["templating"]["list"]
            .as_array()
            .unwrap()
            .iter()
            // The data source selector holds no PromQL.
            .filter(|v| v["type"] != "datasource")
            // Grafana's `label_values(METRIC, LABEL)`: the metric is the PromQL.
            .map(|v| {
                let d = v["definition"].as_str().unwrap();
                let inner = d.strip_prefix("label_values(").unwrap_or(d);
                inner.split(',').next().unwrap_or_default().to_string()
            }),
    );
    out
}

/// Every metric the dashboard draws is one the sidecar serves.
#[test]
fn the_dashboard_draws_only_metrics_the_sidecar_serves() {
    let dir = tempfile::tempdir().unwrap();
    let (side, port) = sidecar(&dir.path().join("events.jsonl"));
    let (_, served) = get(port, "/metrics").unwrap();
    stop(side);
    let queries = dashboard_queries();
    assert!(queries.len() >= 10);
    for q in &queries {
        for (i, _) in q.match_indices("edge_connect_provider_") {
            let name: String = q[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(&name);
            assert!(
                served.contains(&format!("# TYPE {base} ")),
                "the dashboard draws {name}, which the sidecar does not serve"
            );
        }
    }
}

/// A CRM on the edge holds the AppInst of a runner whose image cannot be pulled: the create's
/// start failure, the hold the DeleteInstance meets and that delete's reason are counted.
#[test]
fn a_crm_hold_and_its_start_failure_are_counted() {
    let (w, events) = world_with_events(crm_waiting(&["Munich"], false, Duration::from_secs(10)));
    let r = create_with(
        &w,
        "garm-mhold1",
        Some("registry.example.com/ci/runner:13"),
        false,
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    let d = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-mhold1")],
        None,
    );
    assert_eq!(d.code, 1, "{}", d.stdout);
    let (side, port) = sidecar(&events);
    let (_, text) = get(port, "/metrics").unwrap();
    stop(side);
    let p = "edge_connect_provider_";
    for (series, want) in [
        (format!("{p}crm_hold_seconds_count{{pool=\"{POOL}\",site=\"TelekomOP/Munich\"}}"), 1.0),
        (format!("{p}start_failures_total{{pool=\"{POOL}\",site=\"TelekomOP/Munich\",reason=\"ImagePullBackOff\"}}"), 1.0),
        (format!("{p}commands_total{{command=\"CreateInstance\",pool=\"{POOL}\",site=\"TelekomOP/Munich\",outcome=\"error\",reason=\"ImagePullBackOff\"}}"), 1.0),
        (format!("{p}commands_total{{command=\"DeleteInstance\",pool=\"\",site=\"TelekomOP/Munich\",outcome=\"error\",reason=\"left_behind\"}}"), 1.0),
    ] {
        assert_eq!(sample(&text, &series), Some(want), "{series} in\n{text}");
    }
    assert_started_equals_ended(&text);
}

/// GARM runs commands at once: their lines never interleave, and every one is whole.
#[test]
fn concurrent_commands_write_whole_lines() {
    let (w, events) = world_with_events(two_zones());
    let children: Vec<Child> = (0..16)
        .map(|_| w.spawn_garm("ListInstances", &[("GARM_POOL_ID", POOL)], ""))
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("the provider ends");
        assert!(out.status.success(), "{out:?}");
    }
    let text = std::fs::read_to_string(&events).unwrap();
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        *kinds
            .entry(v["ev"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(kinds.get("begin"), Some(&16), "{kinds:?}");
    assert_eq!(kinds.get("end"), Some(&16), "{kinds:?}");
    assert_eq!(kinds.get("listed"), Some(&16), "{kinds:?}");
}

/// The sidecar answers what is not a scrape with a short refusal, and a request head past its
/// bound with 431, and goes on serving.
#[test]
fn the_sidecar_refuses_what_is_not_a_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let (side, port) = sidecar(&dir.path().join("events.jsonl"));
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 405 "), "{answer}");
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // A little more than the sidecar's 8 KiB bound, and no more: little is left unread when it
    // closes, so its close does not reset the connection before the answer is read.
    let mut huge = String::from("GET /metrics HTTP/1.1\r\nX: ");
    huge.push_str(&"a".repeat(8 * 1024 + 100 - huge.len()));
    s.write_all(huge.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
    assert_eq!(get(port, "/metrics").unwrap().0, "HTTP/1.1 200 OK");
    stop(side);
}

/// A controller whose cloudlet is named with the Edge Connect password (any text an answer
/// carries is the controller's): the site labels of the List, the delete and the CRM hold are
/// masked in the events file and on /metrics, as in the log.
#[test]
fn a_secret_an_answer_carries_is_masked_in_events_and_metrics() {
    let config = edge_connect_sim::SimConfig {
        zones: vec![("TelekomOP".into(), "Munich".into())],
        // The zone holds the first cloudlet no other zone holds: this one.
        cloudlets: vec![("TelekomOP".into(), PASSWORD.into())],
        ..two_zones()
    };
    let (w, events) = world_with_events(config);
    let r = w.create("bootstrap-github-jit.json", "garm-mmask1", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let l = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(l.code, 0, "{}", l.stderr);
    assert!(l.stdout.contains("garm-mmask1"), "{}", l.stdout);
    let text = std::fs::read_to_string(&events).unwrap();
    assert!(!text.contains(PASSWORD), "{text}");
    let (side, port) = sidecar(&events);
    let (_, served) = get(port, "/metrics").unwrap();
    let masked = format!("edge_connect_provider_runners{{pool=\"{POOL}\",site=\"TelekomOP/***\"}}");
    assert_eq!(sample(&served, &masked), Some(1.0), "{served}");
    let d = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-mmask1")],
        None,
    );
    assert_eq!(d.code, 0, "{}", d.stderr);
    let (_, served) = get(port, "/metrics").unwrap();
    stop(side);
    assert!(!served.contains(PASSWORD), "{served}");
    let text = std::fs::read_to_string(&events).unwrap_or_default();
    assert!(!text.contains(PASSWORD), "{text}");
    w.assert_no_secrets(&[&r, &l, &d]);
}

/// The runners gauge holds what each site holds now: after GARM deleted a pool's runners (and
/// then the pool, which it lists no more), the pool's series are gone.
#[test]
fn runners_deleted_since_the_last_list_are_not_shown() {
    let (w, events) = world_with_events(two_zones());
    for name in ["garm-mgone1", "garm-mgone2"] {
        let r = w.create("bootstrap-github-jit.json", name, POOL, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let l = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(l.code, 0, "{}", l.stderr);
    let (side, port) = sidecar(&events);
    let series =
        format!("edge_connect_provider_runners{{pool=\"{POOL}\",site=\"TelekomOP/Munich\"}}");
    let (_, served) = get(port, "/metrics").unwrap();
    assert_eq!(sample(&served, &series), Some(2.0), "{served}");
    let d = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-mgone1")],
        None,
    );
    assert_eq!(d.code, 0, "{}", d.stderr);
    let (_, served) = get(port, "/metrics").unwrap();
    assert_eq!(sample(&served, &series), Some(1.0), "{served}");
    let d = w.garm(
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", "garm-mgone2")],
        None,
    );
    assert_eq!(d.code, 0, "{}", d.stderr);
    let (_, served) = get(port, "/metrics").unwrap();
    assert!(!served.contains("runners{"), "{served}");
    // RemoveAllInstances that removes every runner leaves none shown either.
    let r = w.create("bootstrap-github-jit.json", "garm-mgone3", POOL, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let l = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(l.code, 0, "{}", l.stderr);
    let (_, served) = get(port, "/metrics").unwrap();
    assert_eq!(sample(&served, &series), Some(1.0), "{served}");
    let all = w.garm("RemoveAllInstances", &[], None);
    assert_eq!(all.code, 0, "{}", all.stderr);
    let (_, served) = get(port, "/metrics").unwrap();
    stop(side);
    assert!(!served.contains("runners{"), "{served}");
}

/// `check`'s membership probe is a DeleteApp answered "not found" by design: not an Edge
/// Connect error on the dashboard.
#[test]
fn checks_membership_probe_is_not_counted_as_an_error() {
    let (w, events) = world_with_events(two_zones());
    let r = w.cli(&["check"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(&events).unwrap();
    assert!(text.contains("\"rpc\":\"login\""), "{text}");
    assert!(!text.contains("\"rpc\":\"DeleteApp\""), "{text}");
}

/// The sidecar run over `events`: its first scrape, then SIGTERM.
fn scrape_of(events: &Path) -> String {
    let (side, port) = sidecar(events);
    let (status, served) = get(port, "/metrics").unwrap();
    stop(side);
    assert_eq!(status, "HTTP/1.1 200 OK", "{served}");
    served
}

/// Durations so large that their sum overflows: the snapshot the sidecar writes on SIGTERM is
/// one it starts from again.
#[test]
fn the_sidecar_starts_from_a_snapshot_with_an_infinite_sum() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let huge = "{\"t\":1,\"ev\":\"crm_hold\",\"site\":\"TelekomOP/Munich\",\"secs\":1.7e308}\n";
    std::fs::write(&events, huge.repeat(2)).unwrap();
    let sum = "edge_connect_provider_crm_hold_seconds_sum{pool=\"\",site=\"TelekomOP/Munich\"}";
    let served = scrape_of(&events);
    assert!(served.contains(&format!("{sum} +Inf\n")), "{served}");
    assert_eq!(std::fs::metadata(&events).unwrap().len(), 0);
    // The restart reads the snapshot back.
    let served = scrape_of(&events);
    assert!(served.contains(&format!("{sum} +Inf\n")), "{served}");
}

/// An unreadable line is counted even when the series bound is reached.
#[test]
fn unreadable_lines_are_counted_at_the_series_bound() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let mut text: String = (0..10_001)
        .map(|i| {
            format!("{{\"t\":{i},\"ev\":\"begin\",\"cmd\":\"ListInstances\",\"pool\":\"p{i}\"}}\n")
        })
        .collect();
    text.push_str("{\"t\":1,\"ev\":\"beg\n");
    std::fs::write(&events, text).unwrap();
    let served = scrape_of(&events);
    assert_eq!(
        sample(&served, "edge_connect_provider_series_dropped_total"),
        Some(1.0)
    );
    assert_eq!(
        sample(&served, "edge_connect_provider_events_skipped_total"),
        Some(1.0)
    );
}

/// Waits for `child` to exit (a bound only against a test that would hang).
fn exits(child: &mut Reaped) -> std::process::ExitStatus {
    let started = Instant::now();
    while started.elapsed() < PATIENCE {
        if let Some(status) = child.0.try_wait().expect("wait") {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the sidecar did not exit after SIGTERM");
}

fn sigterm(child: &Reaped) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
}

/// Forty clients that send their request heads a byte at a time: a scrape is answered while
/// every one of them is still connected, and SIGTERM ends the sidecar while they are.
#[test]
fn slow_clients_stall_neither_a_scrape_nor_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut side, port) = sidecar(&dir.path().join("events.jsonl"));
    let mut slow: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: a").unwrap();
            s
        })
        .collect();
    let (status, _) = get(port, "/metrics").unwrap();
    assert_eq!(status, "HTTP/1.1 200 OK");
    // Still open: the scrape did not wait for the server to close them.
    for s in &mut slow {
        s.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        match s.peek(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("a slow client was closed before the scrape was answered: {other:?}"),
        }
    }
    sigterm(&side);
    let status = exits(&mut side);
    assert!(status.success(), "{status:?}");
    drop(slow);
}

/// Someone holds a shared lock on the events file for good (a stray `flock -s`): scrapes are
/// answered, SIGTERM ends the sidecar, and nothing is counted twice after it. Then the file is
/// rotated (renamed away, a new one under the name): the new file is read from its start.
#[test]
fn a_held_lock_and_a_rotated_events_file() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.jsonl");
    let line = |pool: &str| {
        format!("{{\"t\":1,\"ev\":\"begin\",\"cmd\":\"ListInstances\",\"pool\":\"{pool}\"}}\n")
    };
    std::fs::write(&events, line("a")).unwrap();
    let holder = std::fs::File::open(&events).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_SH) }, 0);
    let started = |text: &str, pool: &str| {
        sample(
            text,
            &format!("edge_connect_provider_commands_started_total{{command=\"ListInstances\",pool=\"{pool}\"}}"),
        )
    };
    let (mut side, port) = sidecar(&events);
    let (_, served) = get(port, "/metrics").unwrap();
    assert_eq!(started(&served, "a"), Some(1.0), "{served}");
    sigterm(&side);
    assert!(exits(&mut side).success());
    let (side, port) = sidecar(&events);
    let (_, served) = get(port, "/metrics").unwrap();
    assert_eq!(started(&served, "a"), Some(1.0), "{served}");
    std::fs::rename(&events, dir.path().join("events.jsonl.1")).unwrap();
    std::fs::write(&events, [line("b"), line("b"), line("b")].concat()).unwrap();
    let (_, served) = get(port, "/metrics").unwrap();
    stop(side);
    assert_eq!(started(&served, "b"), Some(3.0), "{served}");
    drop(holder);
}

/// The README says the `Pool` selector filters every panel but those whose titles say "(all
/// pools)": each of the others filters each of its queries by it.
#[test]
fn every_dashboard_panel_is_filtered_by_pool_or_says_it_is_not() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/helm/garm-provider-edge-connect/dashboards/edge-connect-provider.json");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for panel in d["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        let exprs = panel["targets"].as_array().unwrap().iter();
        let exprs: Vec<&str> = exprs.map(|t| t["expr"].as_str().unwrap()).collect();
        let per_metric = |e: &&str| {
            e.matches("edge_connect_provider_").count() == e.matches("pool=~\"$pool\"").count()
        };
        if title.ends_with("(all pools)") {
            assert!(exprs.iter().all(|e| !e.contains("$pool")), "{title}");
        } else {
            assert!(
                exprs.iter().all(per_metric),
                "{title} ignores Pool: {exprs:?}"
            );
        }
    }
}

/// Each caching create says in what state it found its site's cache, and counts the runners it
/// pointed at a Ready one (docs/site-cache.md, issue 46).
#[test]
fn each_create_reports_its_site_cache_and_the_runners_pointed_at_it() {
    let (w, events) = world_with_events(edge_connect_sim::SimConfig::default());
    w.edit_config(|t| format!("{t}\n[site_cache]\nregistry_mirror = true\n"));
    let dind = |name: &str| {
        let r = w.create_image(name, IMAGE, Some(serde_json::json!({"docker": "dind"})));
        assert_eq!(r.code, 0, "{}", r.stderr);
    };
    dind("garm-cache1");
    wait_until("the mirror is Ready", || {
        w.sim.app_insts().iter().any(|i| {
            i["app_key"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("-registry"))
                && i["state"] == "Ready"
        })
    });
    dind("garm-cache2");
    let served = scrape_of(&events);
    let series = |state: &str, v: u8| {
        format!("edge_connect_provider_site_cache{{site=\"TelekomOP/Munich\",service=\"registry\",state=\"{state}\"}} {v}\n")
    };
    for (state, v) in [("ready", 1), ("absent", 0), ("starting", 0), ("failed", 0)] {
        assert!(served.contains(&series(state, v)), "{state}: {served}");
    }
    assert!(
        served.contains("edge_connect_provider_site_cache_runners_total{site=\"TelekomOP/Munich\",service=\"registry\"} 1\n"),
        "{served}"
    );
}
