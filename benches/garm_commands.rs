//! What every GARM command costs, how List grows with the inventory, and how close the provider
//! comes to the thinnest possible client. Run with `cargo bench --bench garm_commands`; writes
//! `BENCHMARKS.md` and prints it. `-- --quick` runs every step once with tiny sizes (the CI smoke
//! run, `.ci/bench-smoke.sh`) and writes nothing.
//!
//! Everything runs on 127.0.0.1:
//!
//! ```text
//! provider process ──► counting relay ──► simulator (latency 0 or 20 ms per call)
//! thin client (reqwest, warm) ──┘
//! ```
//!
//! The provider is started as GARM starts it (bare environment, `GARM_*` only, cwd `/`) by a small
//! launcher process and reaped with `wait4`, which gives its CPU time and peak RSS (see "Provider
//! processes" for why a launcher). The relay counts bytes both ways and keeps
//! the raw requests, so the thin client can send exactly the provider's requests again, in the
//! same order and with the same parallelism, over connections that are already open and with the
//! token the provider used. Every figure that depends on the machine is reported next to a
//! figure from the same run (a ratio), because the machine may be shared with other work.
//!
//! Not a test: it fails only when the harness itself cannot work (a provider command fails, a
//! replay is refused, a count is wrong), never because something is slow.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, ensure, Context, Result};
use edge_connect_sim::{self as sim, Seed, SimConfig, SimHandle};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PROVIDER: &str = env!("CARGO_BIN_EXE_garm-provider-edge-connect");
const CONTROLLER: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";
/// The pool of examples/bootstrap-github-jit.json.
const POOL: &str = "9dcf590a-1192-4a9c-b3e4-e0902974c2c0";
const ORG: &str = "edp-developer-framework";
const USER: &str = "garm";
const PASSWORD: &str = "garm-password";
const FIXTURE: &str = "bootstrap-github-jit.json";
/// Latency the simulator adds to every call in the "realistic" runs.
const REAL_LATENCY: Duration = Duration::from_millis(20);
/// Pools the scale inventory is spread over: the measured pool holds a tenth of it.
const SCALE_POOLS: usize = 10;
/// Numbers the worlds' directories.
static WORLDS: AtomicUsize = AtomicUsize::new(0);

/// How much work each step does.
struct Plan {
    quick: bool,
    /// Iterations of GetVersion → Create → Get (with and without log file) → List → Delete, and
    /// their replays, per latency.
    runs: usize,
    /// CreateInstance runs with an empty token cache, per latency.
    cold_runs: usize,
    /// GetVersion runs of each binary in the binary step.
    version_runs: usize,
    /// AppInsts in the scale inventories.
    scale_sizes: Vec<usize>,
    /// ListInstances runs per scale size.
    scale_runs: usize,
    /// Simultaneous CreateInstance processes.
    burst: usize,
    /// Single CreateInstance runs the burst is compared with.
    burst_singles: usize,
}

impl Plan {
    fn full() -> Plan {
        Plan {
            quick: false,
            runs: 60,
            cold_runs: 20,
            version_runs: 60,
            scale_sizes: vec![10, 1_000, 10_000],
            scale_runs: 15,
            burst: 50,
            burst_singles: 9,
        }
    }

    fn quick() -> Plan {
        Plan {
            quick: true,
            runs: 1,
            cold_runs: 1,
            version_runs: 1,
            scale_sizes: vec![10, 100],
            scale_runs: 1,
            burst: 3,
            burst_singles: 1,
        }
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("garm_commands benchmark failed: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("--launch") {
        return launcher();
    }
    let mut quick = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            // `cargo bench` passes `--bench` to every harness-less benchmark.
            "--bench" => {}
            other => bail!("unknown argument {other:?} (accepted: --quick)"),
        }
    }
    let plan = if quick { Plan::quick() } else { Plan::full() };
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-io")
        .enable_all()
        .build()
        .context("cannot start the benchmark's tokio runtime")?;
    let work = tempfile::tempdir().context("cannot create a temporary directory")?;
    let machine = Machine::read();
    eprintln!(
        "garm_commands: {} mode, provider {PROVIDER}",
        if plan.quick { "quick" } else { "full" }
    );

    // 20 ms first: there the calls' timing shows which ones run in parallel, and the 0 ms runs
    // reuse what it learnt (see Traffic::from_session).
    let real = World::start(&runtime, work.path(), REAL_LATENCY, Shapes::new())?;
    let real_results = command_step(&real, &plan)?;
    drop(real);
    eprintln!(
        "  per-command step at {} ms done ({:.0} s)",
        REAL_LATENCY.as_millis(),
        started.elapsed().as_secs_f64()
    );
    let shapes = real_results.shapes();
    let zero = World::start(&runtime, work.path(), Duration::ZERO, shapes.clone())?;
    let zero_results = command_step(&zero, &plan)?;
    drop(zero);
    eprintln!(
        "  per-command step at 0 ms done ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    let commands = [zero_results, real_results];
    let scale = scale_step(&runtime, work.path(), &plan, &shapes)?;
    eprintln!(
        "  scale step done ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    let burst = burst_step(&runtime, work.path(), &plan)?;
    eprintln!(
        "  concurrency step done ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    let binary = binary_step(&plan, work.path())?;

    let report = render(
        &machine,
        &plan,
        &commands,
        &scale,
        &burst,
        &binary,
        started.elapsed(),
    );
    println!("{report}");
    if plan.quick {
        eprintln!("quick mode: BENCHMARKS.md left alone");
    } else {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
        std::fs::write(&path, &report)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    eprintln!(
        "garm_commands: finished in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The counting relay

/// Locks a mutex; a panicked relay task must not stop the measurement of the others.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One request and its answer on one connection, as the relay saw them.
struct Exchange {
    start: Instant,
    end: Option<Instant>,
    request: Vec<u8>,
    response_bytes: u64,
}

/// What went through the relay since the last [`Relay::take`].
#[derive(Default)]
struct Session {
    exchanges: Vec<Arc<Mutex<Exchange>>>,
    sent: u64,
    received: u64,
    connections: usize,
}

/// Per connection: the exchange in progress and whether its answer has started.
#[derive(Default)]
struct Conn {
    current: Option<Arc<Mutex<Exchange>>>,
    answered: bool,
}

/// A TCP relay on 127.0.0.1 in front of the simulator. HTTP/1.1 without pipelining sends one
/// request, then reads one answer, per connection; so every switch from "server talking" to
/// "client talking" starts a new exchange, and no HTTP parsing is needed to time the calls.
struct Relay {
    addr: SocketAddr,
    session: Arc<Mutex<Session>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        // Stops listening; connections still open end when their peers close them.
        self.accept.abort();
    }
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Result<Relay> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .context("relay: cannot listen on 127.0.0.1")?;
        let addr = listener.local_addr().context("relay: no local address")?;
        let session = Arc::new(Mutex::new(Session::default()));
        let shared = session.clone();
        let accept = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((client, _)) => {
                        let session = shared.clone();
                        tokio::spawn(async move {
                            // A peer closing abruptly ends its connection, nothing else.
                            let _ = pipe(session, client, upstream).await;
                        });
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: let it pass, the command that
                        // could not connect will fail and say so.
                        eprintln!("relay: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        });
        Ok(Relay {
            addr,
            session,
            accept,
        })
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Everything since the previous call; starts a new session.
    fn take(&self) -> Session {
        std::mem::take(&mut *lock(&self.session))
    }
}

async fn pipe(
    session: Arc<Mutex<Session>>,
    client: TcpStream,
    upstream: SocketAddr,
) -> io::Result<()> {
    let server = TcpStream::connect(upstream).await?;
    // Both ends send small requests and answers; Nagle's algorithm would add delays that are
    // the relay's, not the provider's.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    lock(&session).connections += 1;
    let conn = Arc::new(Mutex::new(Conn::default()));
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = {
        let (session, conn) = (session.clone(), conn.clone());
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = client_read.read(&mut buf).await?;
                if n == 0 {
                    return server_write.shutdown().await;
                }
                request_bytes(&session, &conn, &buf[..n]);
                server_write.write_all(&buf[..n]).await?;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = server_read.read(&mut buf).await?;
            if n == 0 {
                return client_write.shutdown().await;
            }
            response_bytes(&session, &conn, n);
            client_write.write_all(&buf[..n]).await?;
        }
    };
    let (a, b) = tokio::join!(up, down);
    a.and(b)
}

fn request_bytes(session: &Mutex<Session>, conn: &Mutex<Conn>, bytes: &[u8]) {
    let now = Instant::now();
    let mut conn = lock(conn);
    let mut session = lock(session);
    session.sent += bytes.len() as u64;
    match &conn.current {
        Some(exchange) if !conn.answered => lock(exchange).request.extend_from_slice(bytes),
        _ => {
            let exchange = Arc::new(Mutex::new(Exchange {
                start: now,
                end: None,
                request: bytes.to_vec(),
                response_bytes: 0,
            }));
            session.exchanges.push(exchange.clone());
            conn.current = Some(exchange);
            conn.answered = false;
        }
    }
}

fn response_bytes(session: &Mutex<Session>, conn: &Mutex<Conn>, n: usize) {
    let now = Instant::now();
    let mut conn = lock(conn);
    lock(session).received += n as u64;
    if let Some(exchange) = &conn.current {
        let mut exchange = lock(exchange);
        exchange.response_bytes += n as u64;
        exchange.end = Some(now);
    }
    conn.answered = true;
}

// ---------------------------------------------------------------------------------------------
// Captured requests and their replay

/// One HTTP request as the provider sent it.
#[derive(Clone, Debug)]
struct HttpRequest {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    /// Parses one HTTP/1.1 request (the provider always sends a Content-Length body).
    fn parse(raw: &[u8]) -> Result<HttpRequest> {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| anyhow!("captured request has no end of headers"))?;
        let head = std::str::from_utf8(&raw[..split]).context("request head is not UTF-8")?;
        let body = raw[split + 4..].to_vec();
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let mut parts = first.split(' ');
        let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
            bail!("captured request line {first:?} is not HTTP");
        };
        let mut headers = Vec::new();
        for line in lines {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| anyhow!("captured header line {line:?} has no colon"))?;
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        if let Some((_, len)) = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        {
            let len: usize = len.parse().context("captured Content-Length")?;
            ensure!(
                len == body.len(),
                "captured request to {path}: Content-Length {len}, body {} bytes",
                body.len()
            );
        } else if headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
        {
            bail!("captured request to {path} has a chunked body; the replay cannot send it");
        }
        Ok(HttpRequest {
            method: method.to_string(),
            path: path.to_string(),
            headers,
            body,
        })
    }

    /// `ShowApp`, `login`, ...: the last path segment.
    fn rpc(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

/// The calls of one command, grouped into sequential round trips: calls in flight together cost
/// one round trip.
#[derive(Clone, Debug, Default)]
struct Rounds(Vec<Vec<HttpRequest>>);

/// The RPC names of each round, sorted within the round: what stays the same from run to run.
type Shape = Vec<Vec<String>>;

/// Shapes by command key (see [`World::garm_with`]), learnt where timing shows them.
type Shapes = BTreeMap<String, Shape>;

impl Rounds {
    fn calls(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn shape(&self) -> Shape {
        self.0
            .iter()
            .map(|round| {
                let mut names: Vec<String> = round.iter().map(|r| r.rpc().to_string()).collect();
                names.sort_unstable();
                names
            })
            .collect()
    }

    /// The same calls without the rounds that only read (the ownership check before a delete).
    fn without_read_only_rounds(&self) -> Rounds {
        Rounds(
            self.0
                .iter()
                .filter(|round| !round.iter().all(|r| r.rpc().starts_with("Show")))
                .cloned()
                .collect(),
        )
    }
}

/// What one provider run sent and received.
struct Traffic {
    rounds: Rounds,
    sent: u64,
    received: u64,
    connections: usize,
}

/// `ShowApp+ShowAppInst → DeleteAppInst → DeleteApp`.
fn shape_text(shape: &Shape) -> String {
    if shape.is_empty() {
        return "–".to_string();
    }
    shape
        .iter()
        .map(|round| round.join("+"))
        .collect::<Vec<_>>()
        .join(" → ")
}

impl Traffic {
    /// Groups the session's calls into rounds. Without a `known` shape, by timing: calls whose
    /// request → answer intervals overlap were in flight together. That needs latency: at 0 ms
    /// the first of two parallel calls can be answered before the second one's connection is
    /// even open, so there the shape learnt at 20 ms is applied instead (calls in start order,
    /// cut into rounds of the known sizes, and checked to be the same calls).
    fn from_session(session: Session, known: Option<&Shape>) -> Result<Traffic> {
        let mut timed = Vec::new();
        for exchange in &session.exchanges {
            let e = lock(exchange);
            let end = e
                .end
                .ok_or_else(|| anyhow!("a request through the relay got no answer"))?;
            timed.push((e.start, end, HttpRequest::parse(&e.request)?));
        }
        timed.sort_by_key(|(start, _, _)| *start);
        let mut rounds: Vec<Vec<HttpRequest>> = Vec::new();
        match known {
            Some(shape) => {
                let mut calls = timed.into_iter().map(|(_, _, request)| request);
                for names in shape {
                    rounds.push(calls.by_ref().take(names.len()).collect());
                }
                let extra = calls.count();
                let grouped = Rounds(rounds.clone()).shape();
                ensure!(
                    extra == 0 && &grouped == shape,
                    "calls {} (+{extra} more) differ from the ones seen at {} ms: {}",
                    shape_text(&grouped),
                    REAL_LATENCY.as_millis(),
                    shape_text(shape)
                );
            }
            None => {
                let mut round_end: Option<Instant> = None;
                for (start, end, request) in timed {
                    match round_end {
                        Some(open_until) if start < open_until => {
                            if let Some(round) = rounds.last_mut() {
                                round.push(request);
                            }
                            round_end = Some(open_until.max(end));
                        }
                        _ => {
                            rounds.push(vec![request]);
                            round_end = Some(end);
                        }
                    }
                }
            }
        }
        Ok(Traffic {
            rounds: Rounds(rounds),
            sent: session.sent,
            received: session.received,
            connections: session.connections,
        })
    }
}

/// Sends the rounds as the thinnest client would: every call of a round at once, the next round
/// when all answers are read to the end. Returns the wall time.
async fn replay(http: &reqwest::Client, base: &str, rounds: &Rounds) -> Result<Duration> {
    let start = Instant::now();
    for round in &rounds.0 {
        let calls = round.iter().map(|r| send(http, base, r));
        for result in futures_util::future::join_all(calls).await {
            result?;
        }
    }
    Ok(start.elapsed())
}

async fn send(http: &reqwest::Client, base: &str, request: &HttpRequest) -> Result<()> {
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .with_context(|| format!("captured method {:?}", request.method))?;
    let mut builder = http
        .request(method, format!("{base}{}", request.path))
        .body(request.body.clone());
    for (name, value) in &request.headers {
        // reqwest sets these from the URL and body; the rest (token, content type) is replayed.
        let own = ["host", "content-length", "connection"];
        if !own.iter().any(|o| name.eq_ignore_ascii_case(o)) {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    let response = builder
        .send()
        .await
        .with_context(|| format!("replay of {}", request.rpc()))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .with_context(|| format!("replay of {}: reading the answer", request.rpc()))?;
    ensure!(
        status == reqwest::StatusCode::OK,
        "replay of {} answered {status}: {}",
        request.rpc(),
        String::from_utf8_lossy(&body[..body.len().min(300)])
    );
    // Streams report failures in a `result` trailer with HTTP 200.
    ensure!(
        !body.windows(10).any(|w| w == b"\"result\":{"),
        "replay of {} ended with an error: {}",
        request.rpc(),
        String::from_utf8_lossy(&body[..body.len().min(300)])
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Provider processes
//
// Peak RSS needs care. Linux's ru_maxrss of a child is the maximum over the child's whole life,
// and that life begins as a copy of (or, with vfork, a loan of) its parent's address space: on
// exec the kernel records the old address space's high-water mark as the child's. Started from
// this process, which holds the simulator and its 10,000-object inventories, every provider
// would "use" hundreds of MB. So providers are started by a launcher: this same executable
// re-run with `--launch`, which does nothing but spawn and reap them. Its own high-water mark
// (a few MB, reported) is then the floor below which RSS figures cannot go.

/// A finished provider process.
struct Proc {
    wall: Duration,
    cpu: Duration,
    max_rss_kb: u64,
    code: i32,
    stdout: String,
    stderr: String,
}

/// One process for the launcher to start; its output goes to files (no pipe can fill up and
/// stall it, and no reader threads compete with it for the CPU).
#[derive(Serialize, Deserialize)]
struct Job {
    vars: Vec<(String, String)>,
    stdin: Option<PathBuf>,
    stdout: PathBuf,
    stderr: PathBuf,
}

#[derive(Serialize, Deserialize)]
struct LaunchRequest {
    binary: PathBuf,
    /// Started all at once, one after the other without waiting.
    jobs: Vec<Job>,
}

#[derive(Serialize, Deserialize)]
struct JobResult {
    wall_ns: u64,
    cpu_ns: u64,
    max_rss_kb: u64,
    /// Exit code, or `None` when killed by `signal`.
    code: Option<i32>,
    signal: Option<i32>,
}

#[derive(Serialize, Deserialize)]
struct LaunchReply {
    /// The launcher's own peak RSS when it started the jobs: the floor of `max_rss_kb`.
    launcher_hwm_kb: u64,
    results: Vec<JobResult>,
}

/// The launcher's side: reads a [`LaunchRequest`] on stdin, answers a [`LaunchReply`] on stdout.
fn launcher() -> Result<()> {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .context("launcher: reading the request")?;
    let request: LaunchRequest = serde_json::from_str(&text).context("launcher: request")?;
    let launcher_hwm_kb = own_hwm_kb();
    let mut started = Vec::with_capacity(request.jobs.len());
    for job in &request.jobs {
        let input = match &job.stdin {
            Some(path) => Stdio::from(
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
            ),
            None => Stdio::null(),
        };
        let create = |path: &Path| {
            File::create(path).with_context(|| format!("cannot create {}", path.display()))
        };
        let mut command = Command::new(&request.binary);
        command
            .env_clear()
            .current_dir("/")
            .stdin(input)
            .stdout(Stdio::from(create(&job.stdout)?))
            .stderr(Stdio::from(create(&job.stderr)?))
            .envs(job.vars.iter().map(|(k, v)| (k, v)));
        let start = Instant::now();
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", request.binary.display()))?;
        // Reaped with wait4 below, never through `Child` (which would drop the rusage);
        // dropping `Child` neither waits nor kills.
        let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
        started.push((pid, start));
    }
    let mut results: Vec<Option<JobResult>> = (0..started.len()).map(|_| None).collect();
    let mut left = started.len();
    while left > 0 {
        // Whichever child ends first, so that each one's wall time is its own. The launcher
        // has no other children.
        let (pid, status, usage) = wait4(-1)?;
        let end = Instant::now();
        if let Some(i) = started.iter().position(|(p, _)| *p == pid) {
            let timeval = |t: libc::timeval| {
                t.tv_sec.max(0) as u64 * 1_000_000_000 + t.tv_usec.max(0) as u64 * 1000
            };
            results[i] = Some(JobResult {
                wall_ns: (end - started[i].1).as_nanos() as u64,
                cpu_ns: timeval(usage.ru_utime) + timeval(usage.ru_stime),
                // Linux reports ru_maxrss in KiB.
                max_rss_kb: usage.ru_maxrss.max(0) as u64,
                code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
                signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            });
            left -= 1;
        }
    }
    let reply = LaunchReply {
        launcher_hwm_kb,
        results: results.into_iter().flatten().collect(),
    };
    serde_json::to_writer(io::stdout().lock(), &reply).context("launcher: writing the reply")?;
    Ok(())
}

/// This process's peak RSS (`VmHWM`, which belongs to the address space, not the process's
/// history), in KiB.
fn own_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Waits for `pid` (or any child with -1): its pid, exit status and resource usage.
fn wait4(pid: libc::pid_t) -> Result<(libc::pid_t, i32, libc::rusage)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain old data, so all zeroes is a valid value; wait4 only writes
        // through the two pointers, which point to live locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped > 0 {
            return Ok((reaped, status, usage));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err).context("wait4");
        }
    }
}

/// A provider process to start: its whole environment and its stdin.
struct Spec<'a> {
    vars: Vec<(&'a str, &'a str)>,
    stdin: Option<String>,
}

/// Highest launcher high-water mark seen: the floor of every RSS figure.
static LAUNCHER_HWM_KB: AtomicU64 = AtomicU64::new(0);

/// Starts every job at once through the launcher; returns them in job order and the wall time
/// from the first start to the last exit.
fn run_providers_at_once(
    binary: &Path,
    dir: &Path,
    jobs: &[Spec<'_>],
) -> Result<(Vec<Proc>, Duration)> {
    let mut request = LaunchRequest {
        binary: binary.to_path_buf(),
        jobs: Vec::with_capacity(jobs.len()),
    };
    for (i, Spec { vars, stdin }) in jobs.iter().enumerate() {
        let stdin_path = match stdin {
            Some(text) => {
                let path = dir.join(format!("job-{i}.stdin"));
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Some(path)
            }
            None => None,
        };
        request.jobs.push(Job {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            stdin: stdin_path,
            stdout: dir.join(format!("job-{i}.stdout")),
            stderr: dir.join(format!("job-{i}.stderr")),
        });
    }
    let me = std::env::current_exe().context("cannot find the benchmark's own executable")?;
    let mut launcher = Command::new(&me)
        .arg("--launch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start the launcher {}", me.display()))?;
    {
        let mut pipe = launcher
            .stdin
            .take()
            .ok_or_else(|| anyhow!("launcher has no stdin"))?;
        io::Write::write_all(&mut pipe, &serde_json::to_vec(&request)?)
            .context("cannot hand the jobs to the launcher")?;
    }
    let output = launcher
        .wait_with_output()
        .context("launcher did not finish")?;
    ensure!(
        output.status.success(),
        "launcher failed ({})",
        output.status
    );
    let reply: LaunchReply =
        serde_json::from_slice(&output.stdout).context("launcher reply is not JSON")?;
    ensure!(
        reply.results.len() == jobs.len(),
        "launcher reported {} of {} jobs",
        reply.results.len(),
        jobs.len()
    );
    LAUNCHER_HWM_KB.fetch_max(reply.launcher_hwm_kb, Ordering::Relaxed);
    let read = |path: &Path| -> Result<String> {
        let mut text = String::new();
        File::open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(text)
    };
    let mut procs = Vec::with_capacity(jobs.len());
    for (result, job) in reply.results.iter().zip(&request.jobs) {
        if let Some(signal) = result.signal {
            bail!("{} killed by signal {signal}", binary.display());
        }
        procs.push(Proc {
            wall: Duration::from_nanos(result.wall_ns),
            cpu: Duration::from_nanos(result.cpu_ns),
            max_rss_kb: result.max_rss_kb,
            code: result.code.unwrap_or(-1),
            stdout: read(&job.stdout)?,
            stderr: read(&job.stderr)?,
        });
    }
    let wall = reply
        .results
        .iter()
        .map(|r| Duration::from_nanos(r.wall_ns))
        .max()
        .unwrap_or_default();
    Ok((procs, wall))
}

fn run_provider(
    binary: &Path,
    dir: &Path,
    vars: &[(&str, &str)],
    stdin: Option<&str>,
) -> Result<Proc> {
    let spec = Spec {
        vars: vars.to_vec(),
        stdin: stdin.map(str::to_string),
    };
    let (mut procs, _) = run_providers_at_once(binary, dir, &[spec])?;
    procs
        .pop()
        .ok_or_else(|| anyhow!("launcher returned no process"))
}

// ---------------------------------------------------------------------------------------------
// A simulator, a relay and a provider config

struct World {
    latency: Duration,
    sim: SimHandle,
    relay: Relay,
    dir: PathBuf,
    config: PathBuf,
    /// The same config without `log_file` (the provider then logs warnings to stderr only).
    config_without_log: PathBuf,
    token_cache: PathBuf,
    /// The thin client: its connections stay open between replays.
    http: reqwest::Client,
    handle: tokio::runtime::Handle,
    /// The bootstrap fixture as JSON, to be given a name per run.
    fixture: Value,
    /// Round shapes to apply instead of timing (worlds without latency).
    shapes: Shapes,
}

/// One provider command with everything measured around it.
struct Measured {
    proc: Proc,
    traffic: Traffic,
    /// HTTP requests the simulator answered during the run (its request log).
    requests: usize,
    logins: usize,
}

impl World {
    fn start(
        runtime: &tokio::runtime::Runtime,
        base: &Path,
        latency: Duration,
        shapes: Shapes,
    ) -> Result<World> {
        let sim = sim::spawn(SimConfig {
            latency,
            create_delay: Duration::ZERO,
            ..SimConfig::default()
        })
        .context("cannot start the simulator")?;
        let relay = runtime.block_on(Relay::start(sim.addr()))?;
        // Inside the run's temporary directory, which goes away at the end.
        let dir = base.join(format!(
            "world-{}-{}ms",
            WORLDS.fetch_add(1, Ordering::Relaxed),
            latency.as_millis()
        ));
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let creds = dir.join("credentials.toml");
        std::fs::write(
            &creds,
            format!("username = \"{USER}\"\npassword = \"{PASSWORD}\"\n"),
        )?;
        {
            use std::os::unix::fs::PermissionsExt;
            // The provider refuses a credentials file others can read.
            std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600))?;
        }
        let token_cache = dir.join("token-cache");
        // What the tests use (tests/common/mod.rs), with the production log level: a deployed
        // provider logs at info, and the log line per call is part of its cost.
        let body = format!(
            r#"log_level = "info"
credentials_file = "{creds}"
token_cache_dir = "{cache}"

[edge_connect]
organization = "{ORG}"
region = "EU"
url = "{url}"
default_flavor = "EU.small"
request_timeout_secs = 60
operation_timeout_secs = 120

[edge_connect.zone]
organization = "TelekomOP"
name = "Munich"
"#,
            creds = creds.display(),
            cache = token_cache.display(),
            url = relay.url(),
        );
        let config = dir.join("provider.toml");
        let log = dir.join("provider.log");
        std::fs::write(&config, format!("log_file = \"{}\"\n{body}", log.display()))?;
        let config_without_log = dir.join("provider-without-log.toml");
        std::fs::write(&config_without_log, body)?;
        let fixture_path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(FIXTURE);
        let fixture: Value = serde_json::from_str(
            &std::fs::read_to_string(&fixture_path)
                .with_context(|| format!("cannot read {}", fixture_path.display()))?,
        )
        .with_context(|| format!("{} is not JSON", fixture_path.display()))?;
        Ok(World {
            latency,
            sim,
            relay,
            dir,
            config,
            config_without_log,
            token_cache,
            // A hung simulator must fail the run, not hold it (and CI) forever.
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .context("cannot build the thin client")?,
            handle: runtime.handle().clone(),
            fixture,
            shapes,
        })
    }

    fn bootstrap(&self, name: &str) -> String {
        let mut v = self.fixture.clone();
        v["name"] = name.into();
        v["pool_id"] = POOL.into();
        v.to_string()
    }

    fn config_str(&self) -> String {
        self.config.display().to_string()
    }

    /// Runs `binary` as GARM does and measures it; fails unless it exits 0. Its calls are
    /// grouped into rounds under the key `<command>` (or `<command> (cold)` when the token cache
    /// is empty, which adds a login).
    fn garm_with(
        &self,
        binary: &Path,
        config: &Path,
        command: &str,
        extra: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Result<Measured> {
        let config = config.display().to_string();
        let mut vars = vec![
            ("GARM_COMMAND", command),
            ("GARM_CONTROLLER_ID", CONTROLLER),
            ("GARM_PROVIDER_CONFIG_FILE", config.as_str()),
        ];
        vars.extend_from_slice(extra);
        let key = shape_key(command, !self.has_cached_token());
        self.relay.take();
        let log_before = self.sim.request_log().len();
        let logins_before = self.sim.logins();
        let proc = run_provider(binary, &self.dir, &vars, stdin)?;
        ensure!(
            proc.code == 0,
            "{command} exited {}: {}",
            proc.code,
            proc.stderr.trim()
        );
        let traffic = Traffic::from_session(self.relay.take(), self.shapes.get(&key))
            .with_context(|| key.clone())?;
        let requests = self.sim.request_log().len().saturating_sub(log_before);
        ensure!(
            requests == traffic.rounds.calls(),
            "{command}: the simulator logged {requests} requests, the relay saw {}",
            traffic.rounds.calls()
        );
        Ok(Measured {
            proc,
            traffic,
            requests,
            logins: self.sim.logins().saturating_sub(logins_before),
        })
    }

    fn garm(&self, command: &str, extra: &[(&str, &str)], stdin: Option<&str>) -> Result<Measured> {
        self.garm_with(Path::new(PROVIDER), &self.config, command, extra, stdin)
    }

    fn create(&self, name: &str) -> Result<Measured> {
        let run = self.garm(
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            Some(&self.bootstrap(name)),
        )?;
        let out: Value = serde_json::from_str(&run.proc.stdout)
            .with_context(|| format!("CreateInstance stdout: {:?}", run.proc.stdout))?;
        ensure!(
            out["status"] == "running" && out["name"] == name,
            "CreateInstance answered {out}"
        );
        Ok(run)
    }

    fn delete(&self, name: &str) -> Result<Measured> {
        let run = self.garm("DeleteInstance", &[("GARM_INSTANCE_ID", name)], None)?;
        ensure!(
            !self.has_app(name),
            "DeleteInstance {name} left the App behind"
        );
        Ok(run)
    }

    fn get(&self, name: &str) -> Result<Measured> {
        let run = self.garm("GetInstance", &[("GARM_INSTANCE_ID", name)], None)?;
        let out: Value = serde_json::from_str(&run.proc.stdout)
            .with_context(|| format!("GetInstance stdout: {:?}", run.proc.stdout))?;
        ensure!(out["name"] == name, "GetInstance answered {out}");
        Ok(run)
    }

    /// GetInstance with the config without `log_file`: what logging to a file costs.
    fn get_without_log(&self, name: &str) -> Result<Measured> {
        let run = self.garm_with(
            Path::new(PROVIDER),
            &self.config_without_log,
            "GetInstance",
            &[("GARM_INSTANCE_ID", name)],
            None,
        )?;
        let out: Value = serde_json::from_str(&run.proc.stdout)
            .with_context(|| format!("GetInstance stdout: {:?}", run.proc.stdout))?;
        ensure!(out["name"] == name, "GetInstance answered {out}");
        Ok(run)
    }

    /// GetVersion, the floor: a process that starts, prints and exits, with GARM's variables.
    fn version(&self) -> Result<Proc> {
        let config = self.config_str();
        let vars = [
            ("GARM_COMMAND", "GetVersion"),
            ("GARM_CONTROLLER_ID", CONTROLLER),
            ("GARM_PROVIDER_CONFIG_FILE", config.as_str()),
        ];
        let proc = run_provider(Path::new(PROVIDER), &self.dir, &vars, None)?;
        ensure!(
            proc.code == 0 && !proc.stdout.trim().is_empty(),
            "GetVersion exited {}: {}",
            proc.code,
            proc.stderr.trim()
        );
        Ok(proc)
    }

    fn list(&self, expect: usize) -> Result<Measured> {
        self.list_with(Path::new(PROVIDER), expect)
    }

    fn list_with(&self, binary: &Path, expect: usize) -> Result<Measured> {
        let run = self.garm_with(
            binary,
            &self.config,
            "ListInstances",
            &[("GARM_POOL_ID", POOL)],
            None,
        )?;
        let out: Value = serde_json::from_str(&run.proc.stdout).with_context(|| {
            format!(
                "ListInstances stdout is not JSON ({} bytes)",
                run.proc.stdout.len()
            )
        })?;
        let listed = out.as_array().map(Vec::len);
        ensure!(
            listed == Some(expect),
            "ListInstances listed {listed:?} runners, expected {expect}"
        );
        Ok(run)
    }

    fn has_app(&self, name: &str) -> bool {
        self.sim.apps().iter().any(|a| a["key"]["name"] == name)
    }

    fn has_app_inst(&self, name: &str) -> bool {
        self.sim
            .app_insts()
            .iter()
            .any(|a| a["key"]["name"] == name)
    }

    /// Replays captured rounds through the relay; wall time and bytes received.
    fn replay(&self, rounds: &Rounds) -> Result<(Duration, u64)> {
        self.relay.take();
        let wall = self
            .handle
            .block_on(replay(&self.http, &self.relay.url(), rounds))?;
        Ok((wall, self.relay.take().received))
    }

    fn has_cached_token(&self) -> bool {
        std::fs::read_dir(&self.token_cache).is_ok_and(|mut d| d.next().is_some())
    }

    fn forget_token(&self) -> Result<()> {
        match std::fs::remove_dir_all(&self.token_cache) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e).with_context(|| {
                format!(
                    "cannot empty the token cache {}",
                    self.token_cache.display()
                )
            }),
            _ => Ok(()),
        }
    }
}

fn shape_key(command: &str, cold: bool) -> String {
    if cold {
        format!("{command} (cold)")
    } else {
        command.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(values: &[f64]) -> f64 {
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
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    rss_mb: Vec<f64>,
    sent: Vec<f64>,
    received: Vec<f64>,
    requests: usize,
    rounds: usize,
    connections: usize,
    logins: usize,
    shape: Shape,
    /// The thin client with the same calls.
    limit: Vec<f64>,
    /// Provider wall / thin client wall, per run.
    ratio: Vec<f64>,
    /// The thin client without the read-only round (only where the provider has one).
    limit_min: Vec<f64>,
    ratio_min: Vec<f64>,
    min_rounds: Option<usize>,
}

impl Samples {
    fn add_proc(&mut self, proc: &Proc) {
        self.wall.push(ms(proc.wall));
        self.cpu.push(ms(proc.cpu));
        self.rss_mb.push(proc.max_rss_kb as f64 / 1024.0);
    }

    /// The thin client's time for the provider run added last.
    fn add_limit(&mut self, limit: Duration) {
        self.limit.push(ms(limit));
        if let Some(wall) = self.wall.last() {
            self.ratio.push(wall / ms(limit));
        }
    }

    fn add_limit_min(&mut self, limit: Duration) {
        self.limit_min.push(ms(limit));
        if let Some(wall) = self.wall.last() {
            self.ratio_min.push(wall / ms(limit));
        }
    }

    fn add(&mut self, m: &Measured) {
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

    fn check_shape(&self, m: &Measured, what: &str) -> Result<()> {
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

    fn record(&mut self, m: &Measured, what: &str) -> Result<()> {
        self.check_shape(m, what)?;
        self.add(m);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Step 1-3: every command, against the thin client

struct CommandResults {
    latency: Duration,
    version: Samples,
    cold_create: Samples,
    create: Samples,
    get: Samples,
    get_without_log: Samples,
    list: Samples,
    delete: Samples,
}

impl CommandResults {
    /// The round shapes seen, by command key.
    fn shapes(&self) -> Shapes {
        [
            (shape_key("CreateInstance", true), &self.cold_create),
            (shape_key("CreateInstance", false), &self.create),
            (shape_key("GetInstance", false), &self.get),
            (shape_key("ListInstances", false), &self.list),
            (shape_key("DeleteInstance", false), &self.delete),
        ]
        .into_iter()
        .map(|(key, samples)| (key, samples.shape.clone()))
        .collect()
    }
}

fn command_step(world: &World, plan: &Plan) -> Result<CommandResults> {
    let mut r = CommandResults {
        latency: world.latency,
        version: Samples::default(),
        cold_create: Samples::default(),
        create: Samples::default(),
        get: Samples::default(),
        get_without_log: Samples::default(),
        list: Samples::default(),
        delete: Samples::default(),
    };
    // Iteration 0 warms up (token cache, page cache, the thin client's two connections) and is
    // not recorded. Everything of one iteration runs back to back, so that a ratio of two figures
    // of one iteration compares them under the same load of the (shared) machine.
    for i in 0..=plan.runs {
        let record = i > 0;
        let name = format!("garm-bench-{i}");
        let version = world.version()?;
        let create = world.create(&name)?;
        let get = world.get(&name)?;
        let get_without_log = world.get_without_log(&name)?;
        let list = world.list(1)?;
        let delete = world.delete(&name)?;

        // The thin client: the same requests, in the same state (the runner absent, then there).
        let (limit_create, _) = world.replay(&create.traffic.rounds)?;
        ensure!(
            world.has_app(&name) && world.has_app_inst(&name),
            "replayed CreateInstance did not create {name}"
        );
        let (limit_get, _) = world.replay(&get.traffic.rounds)?;
        let (limit_list, _) = world.replay(&list.traffic.rounds)?;
        let minimal_delete = delete.traffic.rounds.without_read_only_rounds();
        let (limit_delete_min, _) = world.replay(&minimal_delete)?;
        ensure!(
            !world.has_app(&name),
            "replayed DeleteInstance (minimal) left {name}"
        );
        // Again, for the full delete: the runner must exist for its calls to be the same.
        world.replay(&create.traffic.rounds)?;
        let (limit_delete, _) = world.replay(&delete.traffic.rounds)?;
        ensure!(!world.has_app(&name), "replayed DeleteInstance left {name}");

        if record {
            r.version.add_proc(&version);
            r.create.record(&create, "CreateInstance")?;
            r.get.record(&get, "GetInstance")?;
            r.get_without_log
                .record(&get_without_log, "GetInstance without log_file")?;
            r.list.record(&list, "ListInstances")?;
            r.delete.record(&delete, "DeleteInstance")?;
            r.create.add_limit(limit_create);
            r.get.add_limit(limit_get);
            r.get_without_log.add_limit(limit_get);
            r.list.add_limit(limit_list);
            r.delete.add_limit(limit_delete);
            r.delete.add_limit_min(limit_delete_min);
            r.delete.min_rounds = Some(minimal_delete.len());
        }
        ensure!(
            create.logins == 0 || !record,
            "CreateInstance logged in although the token cache was warm"
        );
    }

    for i in 0..plan.cold_runs {
        let name = format!("garm-cold-{i}");
        world.forget_token()?;
        let create = world.create(&name)?;
        ensure!(
            create.logins == 1,
            "cold CreateInstance made {} logins",
            create.logins
        );
        world.delete(&name)?;
        let (limit, _) = world.replay(&create.traffic.rounds)?;
        world.delete(&name)?;
        r.cold_create.record(&create, "cold CreateInstance")?;
        r.cold_create.add_limit(limit);
    }
    Ok(r)
}

// ---------------------------------------------------------------------------------------------
// Step 4: ListInstances over large inventories

struct ScaleRow {
    size: usize,
    pool: usize,
    list: Samples,
    /// Bytes received by the thin client if ShowApp filtered by pool on the server.
    filtered_received: Vec<f64>,
    filtered_limit: Vec<f64>,
    seed_time: Duration,
}

struct ScaleResults {
    rows: Vec<ScaleRow>,
    /// The shipped (static musl, LTO) binary at the largest size, when it is present.
    shipped: Option<(PathBuf, Samples)>,
}

/// A pool id for pool `k` of the scale inventory; pool 0 is the measured one.
fn pool_id(k: usize) -> String {
    if k == 0 {
        POOL.to_string()
    } else {
        format!("{k:08x}-0000-4000-8000-00000000bench")
    }
}

fn scale_step(
    runtime: &tokio::runtime::Runtime,
    base: &Path,
    plan: &Plan,
    shapes: &Shapes,
) -> Result<ScaleResults> {
    let mut rows = Vec::new();
    let mut shipped = None;
    let largest = plan.scale_sizes.iter().copied().max().unwrap_or(0);
    for &size in &plan.scale_sizes {
        let world = World::start(runtime, base, Duration::ZERO, shapes.clone())?;
        // The seeded Apps carry the environment of a real runner App (same keys, same sizes),
        // taken from one the provider made, so the bytes per App are the real ones.
        world.create("garm-template")?;
        let template = world
            .sim
            .apps()
            .into_iter()
            .find(|a| a["key"]["name"] == "garm-template")
            .ok_or_else(|| anyhow!("the template App is missing"))?;
        world.delete("garm-template")?;
        let string_map = |v: &Value| -> BTreeMap<String, String> {
            v.as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let env = string_map(&template["env_vars"]);
        let secrets = string_map(&template["secret_env_vars"]);
        ensure!(
            env.contains_key("GARM_INSTANCE_NAME"),
            "the template App has no GARM_INSTANCE_NAME in env_vars: {}",
            template["env_vars"]
        );

        // Ownership needs GARM_INSTANCE_NAME to be the App's own name, and a seed call gives
        // every App the same environment: so one seed call per App, named `p<pool>-r<n>-1`.
        let seed_start = Instant::now();
        let per_pool = size / SCALE_POOLS;
        for k in 0..SCALE_POOLS {
            for n in 0..per_pool {
                let prefix = format!("p{k}-r{n}-");
                let name = format!("{prefix}1");
                let mut env_vars = env.clone();
                env_vars.insert("GARM_CONTROLLER_ID".into(), CONTROLLER.into());
                env_vars.insert("GARM_POOL_ID".into(), pool_id(k));
                env_vars.insert("GARM_INSTANCE_NAME".into(), name);
                world.sim.seed(Seed {
                    org: ORG.into(),
                    count: 1,
                    app_insts: true,
                    name_prefix: prefix,
                    env_vars,
                    secret_env_vars: secrets.clone(),
                });
            }
        }
        let seed_time = seed_start.elapsed();
        ensure!(
            world.sim.app_insts().len() == per_pool * SCALE_POOLS,
            "seeding made {} AppInsts, expected {}",
            world.sim.app_insts().len(),
            per_pool * SCALE_POOLS
        );

        let mut row = ScaleRow {
            size,
            pool: per_pool,
            list: Samples::default(),
            filtered_received: Vec::new(),
            filtered_limit: Vec::new(),
            seed_time,
        };
        // At the largest size the shipped binary runs too, in the same iterations.
        let mut shipped_here = if size == largest {
            shipped_binary().map(|binary| (binary, Samples::default()))
        } else {
            None
        };
        // One unrecorded run warms the page cache and the thin client's connections.
        for i in 0..=plan.scale_runs {
            let list = world.list(per_pool)?;
            let (limit, _) = world.replay(&list.traffic.rounds)?;
            let filtered = filtered_by_pool(&list.traffic.rounds)?;
            let (filtered_limit, filtered_received) = world.replay(&filtered)?;
            if i > 0 {
                row.list.record(&list, "ListInstances")?;
                row.list.add_limit(limit);
                row.filtered_limit.push(ms(filtered_limit));
                row.filtered_received.push(filtered_received as f64);
            }
            if let Some((binary, samples)) = &mut shipped_here {
                let list = world.list_with(binary, per_pool)?;
                if i > 0 {
                    samples.record(&list, "ListInstances (shipped binary)")?;
                    samples.add_limit(limit);
                }
            }
        }
        if shipped_here.is_some() {
            shipped = shipped_here;
        }
        world.sim.reset();
        rows.push(row);
    }
    Ok(ScaleResults { rows, shipped })
}

/// The provider's List calls with ShowApp narrowed to this controller's pool by an `env_vars`
/// filter (which the simulator honours like any Show filter): what a server-side filter would
/// save. ShowAppInst stays as it is (AppInsts carry no pool).
fn filtered_by_pool(rounds: &Rounds) -> Result<Rounds> {
    let mut out = rounds.clone();
    let mut found = false;
    for request in out.0.iter_mut().flatten() {
        if request.rpc() == "ShowApp" {
            let mut body: Value =
                serde_json::from_slice(&request.body).context("captured ShowApp body")?;
            body["app"]["env_vars"] = json!({
                "GARM_CONTROLLER_ID": CONTROLLER,
                "GARM_POOL_ID": POOL,
            });
            request.body = serde_json::to_vec(&body)?;
            found = true;
        }
    }
    ensure!(found, "ListInstances sent no ShowApp");
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Step 5: many CreateInstance processes at once

struct BurstRow {
    label: &'static str,
    processes: usize,
    wall: f64,
    per_process_median: f64,
    per_process_max: f64,
    cpu_total: f64,
    rss_max: f64,
    logins: usize,
    requests: usize,
}

struct BurstResults {
    single: Samples,
    rows: Vec<BurstRow>,
}

fn burst_step(runtime: &tokio::runtime::Runtime, base: &Path, plan: &Plan) -> Result<BurstResults> {
    let world = World::start(runtime, base, REAL_LATENCY, Shapes::new())?;
    // Warm token cache and page cache.
    world.create("garm-warm")?;
    world.delete("garm-warm")?;
    let mut single = Samples::default();
    for i in 0..plan.burst_singles {
        let name = format!("garm-single-{i}");
        let run = world.create(&name)?;
        single.record(&run, "CreateInstance")?;
        world.delete(&name)?;
    }
    let mut rows = Vec::new();
    for (label, cold) in [("token cache warm", false), ("token cache empty", true)] {
        if cold {
            world.forget_token()?;
        }
        let config = world.config_str();
        let names: Vec<String> = (0..plan.burst).map(|i| format!("garm-burst-{i}")).collect();
        let jobs: Vec<Spec<'_>> = names
            .iter()
            .map(|name| Spec {
                vars: vec![
                    ("GARM_COMMAND", "CreateInstance"),
                    ("GARM_CONTROLLER_ID", CONTROLLER),
                    ("GARM_PROVIDER_CONFIG_FILE", config.as_str()),
                    ("GARM_POOL_ID", POOL),
                ],
                stdin: Some(world.bootstrap(name)),
            })
            .collect();
        let log_before = world.sim.request_log().len();
        let logins_before = world.sim.logins();
        world.relay.take();
        let (procs, wall) = run_providers_at_once(Path::new(PROVIDER), &world.dir, &jobs)?;
        world.relay.take();
        for (proc, name) in procs.iter().zip(&names) {
            ensure!(
                proc.code == 0,
                "concurrent CreateInstance {name} exited {}: {}",
                proc.code,
                proc.stderr.trim()
            );
        }
        let apps = world.sim.apps().len();
        ensure!(
            apps == plan.burst,
            "{} concurrent creates left {apps} Apps",
            plan.burst
        );
        let walls: Vec<f64> = procs.iter().map(|p| ms(p.wall)).collect();
        rows.push(BurstRow {
            label,
            processes: plan.burst,
            wall: ms(wall),
            per_process_median: median(&walls),
            per_process_max: walls.iter().copied().fold(0.0, f64::max),
            cpu_total: procs.iter().map(|p| ms(p.cpu)).sum(),
            rss_max: procs
                .iter()
                .map(|p| p.max_rss_kb as f64 / 1024.0)
                .fold(0.0, f64::max),
            logins: world.sim.logins().saturating_sub(logins_before),
            requests: world.sim.request_log().len().saturating_sub(log_before),
        });
        // Clean slate for the next burst; issued tokens stay valid across a reset.
        world.sim.reset();
    }
    Ok(BurstResults { single, rows })
}

// ---------------------------------------------------------------------------------------------
// Step 6: the binary

struct BinaryResults {
    measured: PathBuf,
    measured_size: u64,
    shipped: Option<(PathBuf, u64, String, Vec<f64>)>,
    measured_version: Vec<f64>,
}

/// The static musl release binary the image ships, if it was built in this target directory.
fn shipped_binary() -> Option<PathBuf> {
    let measured = Path::new(PROVIDER);
    // <target>/<profile dir>/garm-provider-edge-connect
    let target = measured.parent()?.parent()?;
    let path = target
        .join("x86_64-unknown-linux-musl")
        .join("release")
        .join("garm-provider-edge-connect");
    path.is_file().then_some(path)
}

fn binary_step(plan: &Plan, base: &Path) -> Result<BinaryResults> {
    let measured = PathBuf::from(PROVIDER);
    let measured_size = std::fs::metadata(&measured)
        .with_context(|| format!("cannot stat {}", measured.display()))?
        .len();
    let version_wall = |binary: &Path| -> Result<f64> {
        let proc = run_provider(binary, base, &[("GARM_COMMAND", "GetVersion")], None)?;
        ensure!(
            proc.code == 0,
            "GetVersion of {} exited {}",
            binary.display(),
            proc.code
        );
        Ok(ms(proc.wall))
    };
    let mut shipped = match shipped_binary() {
        Some(path) => {
            let meta = std::fs::metadata(&path)?;
            let built = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| utc_date(d.as_secs()))
                .unwrap_or_else(|| "unknown".to_string());
            Some((path, meta.len(), built, Vec::new()))
        }
        None => None,
    };
    let mut measured_version = Vec::new();
    // Alternating, so both see the same load; run 0 puts both binaries in the page cache.
    for i in 0..=plan.version_runs {
        let wall = version_wall(&measured)?;
        if i > 0 {
            measured_version.push(wall);
        }
        if let Some((path, _, _, walls)) = &mut shipped {
            let wall = version_wall(path)?;
            if i > 0 {
                walls.push(wall);
            }
        }
    }
    Ok(BinaryResults {
        measured,
        measured_size,
        shipped,
        measured_version,
    })
}

// ---------------------------------------------------------------------------------------------
// The machine and the date

struct Machine {
    nproc: usize,
    cpu: String,
    load: String,
    kernel: String,
    rustc: String,
    date: String,
}

impl Machine {
    fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let mhz = cpuinfo
            .lines()
            .find(|l| l.starts_with("cpu MHz"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| format!(" @ {:.0} MHz", v.trim().parse::<f64>().unwrap_or(0.0)))
            .unwrap_or_default();
        let first_line = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.lines().next().map(str::to_string))
                .unwrap_or_else(|| "unknown".to_string())
        };
        let load = load_average();
        let kernel = first_line("/proc/sys/kernel/osrelease");
        let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu: format!("{cpu}{mhz}"),
            load,
            kernel,
            rustc,
            date: utc_date(now),
        }
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the epoch (civil-from-days, proleptic Gregorian).
fn utc_date(secs: u64) -> String {
    let rem = secs % 86_400;
    let (y, m, d) = edge_connect_sim::civil_from_days((secs / 86_400) as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

// ---------------------------------------------------------------------------------------------
// The report

/// A path inside the repository as a relative one, so the report does not depend on where the
/// checkout is.
fn shown(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn kb(bytes: f64) -> String {
    if bytes >= 1_000_000.0 {
        format!("{:.2} MB", bytes / 1_000_000.0)
    } else {
        format!("{:.1} kB", bytes / 1000.0)
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        format!("{:.2}×", a / b)
    } else {
        "–".to_string()
    }
}

/// The fewest sequential round trips each command could make with a cached token (issue 7).
fn min_round_trips(command: &str) -> Option<usize> {
    match command {
        "CreateInstance" | "DeleteInstance" => Some(2),
        "GetInstance" | "GetInstance without log_file" | "ListInstances" => Some(1),
        "CreateInstance, empty token cache" => Some(3),
        _ => None,
    }
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**missed**"
    }
}

/// The issue's targets against this run's figures.
fn summary(commands: &[CommandResults], scale: &ScaleResults, burst: &BurstResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Against the targets of issue 7
"
    );
    let _ = writeln!(
        out,
        "| target | this run | |
|---|---|---|"
    );
    if let Some(real) = commands.iter().find(|c| c.latency == REAL_LATENCY) {
        for (name, s) in [
            ("CreateInstance", &real.create),
            ("GetInstance", &real.get),
            ("ListInstances", &real.list),
            ("DeleteInstance", &real.delete),
        ] {
            let r = median(&s.ratio);
            let _ = writeln!(
                out,
                "| {name} within 1.3× of the thin client at {} ms | {r:.2}× | {} |",
                REAL_LATENCY.as_millis(),
                verdict(r <= 1.3)
            );
        }
        for (name, s) in [
            ("CreateInstance", &real.create),
            ("GetInstance", &real.get),
            ("ListInstances", &real.list),
            ("DeleteInstance", &real.delete),
        ] {
            if let Some(min) = min_round_trips(name) {
                let _ = writeln!(
                    out,
                    "| {name}: {min} round trip{} with a cached token | {} ({} calls) | {} |",
                    if min == 1 { "" } else { "s" },
                    s.rounds,
                    s.requests,
                    if s.rounds <= min {
                        "met"
                    } else {
                        "one more, see \"Why more round trips\""
                    }
                );
            }
        }
    }
    if let Some(last) = scale.rows.last() {
        let cpu = median(&last.list.cpu);
        let rss = median(&last.list.rss_mb);
        let _ = writeln!(
            out,
            "| ListInstances at {} AppInsts: CPU under 100 ms | {cpu:.0} ms | {} |",
            last.size,
            verdict(cpu < 100.0)
        );
        let _ = writeln!(
            out,
            "| ListInstances at {} AppInsts: peak RSS under 50 MB | {rss:.1} MB | {} |",
            last.size,
            verdict(rss < 50.0)
        );
        if let [.., a, b, c] = scale.rows.as_slice() {
            let per = |x: &ScaleRow, y: &ScaleRow| {
                (median(&y.list.cpu) - median(&x.list.cpu)) / (y.size - x.size) as f64 * 1000.0
            };
            let (first, second) = (per(a, b), per(b, c));
            let _ = writeln!(
                out,
                "| ListInstances grows linearly | CPU per added AppInst {first:.1} µs ({} → {}), {second:.1} µs ({} → {}) | {} |",
                a.size,
                b.size,
                b.size,
                c.size,
                // Quadratic growth would make the second step's cost per AppInst ~10× the first.
                verdict(second < 2.0 * first)
            );
        }
    }
    for row in &burst.rows {
        let _ = writeln!(
            out,
            "| {} CreateInstance at once, {}: 1 login | {} login{} | {} |",
            row.processes,
            row.label,
            row.logins,
            if row.logins == 1 { "" } else { "s" },
            verdict(row.logins <= 1)
        );
    }
    out.push('\n');
    out
}

fn render(
    machine: &Machine,
    plan: &Plan,
    commands: &[CommandResults],
    scale: &ScaleResults,
    burst: &BurstResults,
    binary: &BinaryResults,
    elapsed: Duration,
) -> String {
    let mut out = String::new();
    let profile = if cfg!(debug_assertions) {
        "debug (`cargo test --bench`), figures not representative"
    } else {
        "bench profile: opt-level 3, no LTO, 16 codegen units (Cargo.toml)"
    };
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Written by `cargo bench --bench garm_commands{}` in {:.0} s{} Every figure is the median \
         of repeated runs; every comparison is between figures of the same run, so they hold on a \
         shared machine where absolute times do not.\n",
        if plan.quick { " -- --quick" } else { "" },
        elapsed.as_secs_f64(),
        if plan.quick {
            ": one run of each step with tiny sizes, a check that the harness works, not figures."
        } else {
            "."
        },
    );
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| date | {} |", machine.date);
    let _ = writeln!(
        out,
        "| machine | {} CPUs (`nproc`), {} |",
        machine.nproc, machine.cpu
    );
    let _ = writeln!(
        out,
        "| load average (1, 5, 15 min) | {} at start, {} at the end (the machine is shared) |",
        machine.load,
        load_average()
    );
    let _ = writeln!(
        out,
        "| peak RSS floor | {:.1} MB: the launcher's own high-water mark, which the kernel counts into its children's (see the source) |",
        LAUNCHER_HWM_KB.load(Ordering::Relaxed) as f64 / 1024.0
    );
    let _ = writeln!(
        out,
        "| kernel, compiler | Linux {}, {} |",
        machine.kernel, machine.rustc
    );
    let _ = writeln!(
        out,
        "| provider binary measured | `{}`, {profile} |",
        shown(&binary.measured)
    );
    let _ = writeln!(
        out,
        "| runs | {} per command and latency (+1 warm-up), {} cold creates, {} per scale size |\n",
        plan.runs, plan.cold_runs, plan.scale_runs
    );

    out.push_str(&summary(commands, scale, burst));

    // Per command
    for c in commands {
        let lat = c.latency.as_millis();
        let _ = writeln!(out, "## Per command, simulator latency {lat} ms per call\n");
        let _ = writeln!(
            out,
            "| command | calls | round trips (min) | wall ms | thin client ms | provider / thin | CPU ms | peak RSS MB | sent | received | connections | logins | calls in order |"
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
        let rows: [(&str, &Samples); 7] = [
            ("GetVersion (floor)", &c.version),
            ("CreateInstance, empty token cache", &c.cold_create),
            ("CreateInstance", &c.create),
            ("GetInstance", &c.get),
            ("GetInstance without log_file", &c.get_without_log),
            ("ListInstances", &c.list),
            ("DeleteInstance", &c.delete),
        ];
        for (name, s) in rows {
            let wall = median(&s.wall);
            let limit = median(&s.limit);
            let rt = match min_round_trips(name) {
                Some(min) => format!("{} ({min})", s.rounds),
                None => "0".to_string(),
            };
            let (limit_text, ratio_text) = if s.limit.is_empty() {
                ("–".to_string(), "–".to_string())
            } else {
                (format!("{limit:.1}"), format!("{:.2}×", median(&s.ratio)))
            };
            let _ = writeln!(
                out,
                "| {name} | {} | {rt} | {wall:.1} | {limit_text} | {ratio_text} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
                s.requests,
                median(&s.cpu),
                median(&s.rss_mb),
                if s.sent.is_empty() { "–".into() } else { kb(median(&s.sent)) },
                if s.received.is_empty() { "–".into() } else { kb(median(&s.received)) },
                s.connections,
                s.logins,
                shape_text(&s.shape),
            );
            if !s.limit_min.is_empty() {
                let _ = writeln!(
                    out,
                    "| ↳ DeleteInstance vs. minimum round trips | | {} | {wall:.1} | {:.1} | {:.2}× | | | | | | | thin client without the Show round |",
                    s.min_rounds.unwrap_or(0),
                    median(&s.limit_min),
                    median(&s.ratio_min),
                );
            }
        }
        out.push('\n');
    }
    if let [zero, real] = commands {
        let _ = writeln!(out, "### Round trips seen in the wall time\n");
        let _ = writeln!(
            out,
            "(wall at {} ms − wall at 0 ms) / {} ms, against the round trips the relay counted:\n",
            real.latency.as_millis(),
            real.latency.as_millis()
        );
        let _ = writeln!(out, "| command | counted | from wall time | process overhead at 0 ms (wall − thin client) |");
        let _ = writeln!(out, "|---|--:|--:|--:|");
        let pairs: [(&str, &Samples, &Samples); 5] = [
            (
                "CreateInstance, empty token cache",
                &zero.cold_create,
                &real.cold_create,
            ),
            ("CreateInstance", &zero.create, &real.create),
            ("GetInstance", &zero.get, &real.get),
            ("ListInstances", &zero.list, &real.list),
            ("DeleteInstance", &zero.delete, &real.delete),
        ];
        let step = ms(real.latency);
        for (name, z, r) in pairs {
            let _ = writeln!(
                out,
                "| {name} | {} | {:.2} | {:.1} ms |",
                r.rounds,
                (median(&r.wall) - median(&z.wall)) / step,
                median(&z.wall) - median(&z.limit),
            );
        }
        out.push('\n');
    }

    // Scale
    let _ = writeln!(
        out,
        "## ListInstances over large inventories (latency 0 ms)\n"
    );
    let _ = writeln!(
        out,
        "Each inventory is spread over {SCALE_POOLS} pools of this controller; the listed pool holds a tenth. \
         Seeded Apps carry the environment of a real runner App, so bytes per App are real.\n"
    );
    let _ = writeln!(
        out,
        "| AppInsts | listed | wall ms | thin client ms | provider / thin | CPU ms | peak RSS MB | received | calls | ShowApp filtered by pool: received | … thin client ms |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in &scale.rows {
        let s = &row.list;
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} | {:.2}× | {:.1} | {:.1} | {} | {} | {} | {:.1} |",
            row.size,
            row.pool,
            median(&s.wall),
            median(&s.limit),
            median(&s.ratio),
            median(&s.cpu),
            median(&s.rss_mb),
            kb(median(&s.received)),
            s.requests,
            kb(median(&row.filtered_received)),
            median(&row.filtered_limit),
        );
    }
    if let Some((path, s)) = &scale.shipped {
        if let Some(last) = scale.rows.last() {
            let _ = writeln!(
                out,
                "| {} (shipped static musl binary) | {} | {:.1} | {:.1} | {:.2}× | {:.1} | {:.1} | {} | {} | | |",
                last.size,
                last.pool,
                median(&s.wall),
                median(&s.limit),
                median(&s.ratio),
                median(&s.cpu),
                median(&s.rss_mb),
                kb(median(&s.received)),
                s.requests,
            );
            let _ = writeln!(out, "\n(shipped binary: `{}`)", shown(path));
        }
    }
    let seeds: Vec<String> = scale
        .rows
        .iter()
        .map(|r| format!("{}: {:.0} ms", r.size, ms(r.seed_time)))
        .collect();
    let _ = writeln!(
        out,
        "\nSeeding time (not measured above): {}.\n",
        seeds.join(", ")
    );

    if scale.rows.len() >= 2 {
        let _ = writeln!(out, "### Growth\n");
        let _ = writeln!(
            out,
            "A linear cost `a + b·n` shows as a constant cost per added AppInst (last columns); a \
             quadratic one would grow tenfold from one step to the next.\n"
        );
        let _ = writeln!(
            out,
            "| step | AppInsts × | wall × | CPU × | RSS × | received × | CPU per added AppInst | RSS per added AppInst | bytes per added AppInst |"
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        for pair in scale.rows.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let added = (b.size - a.size) as f64;
            let (wa, wb) = (median(&a.list.wall), median(&b.list.wall));
            let (ca, cb) = (median(&a.list.cpu), median(&b.list.cpu));
            let (ra, rb) = (median(&a.list.rss_mb), median(&b.list.rss_mb));
            let (ba, bb) = (median(&a.list.received), median(&b.list.received));
            let _ = writeln!(
                out,
                "| {} → {} | {:.0}× | {} | {} | {} | {} | {:.1} µs | {:.2} kB | {:.0} B |",
                a.size,
                b.size,
                b.size as f64 / a.size as f64,
                ratio(wb, wa),
                ratio(cb, ca),
                ratio(rb, ra),
                ratio(bb, ba),
                (cb - ca) * 1000.0 / added,
                (rb - ra) * 1024.0 / added,
                (bb - ba) / added,
            );
        }
        out.push('\n');
    }

    // Concurrency
    let _ = writeln!(
        out,
        "## {} CreateInstance processes at once (latency {} ms)\n",
        plan.burst,
        REAL_LATENCY.as_millis()
    );
    let single = median(&burst.single.wall);
    let _ = writeln!(
        out,
        "One CreateInstance alone: {single:.1} ms wall, {:.1} ms CPU (median of {}).\n",
        median(&burst.single.cpu),
        burst.single.wall.len()
    );
    let _ = writeln!(
        out,
        "| | processes | total wall ms | vs. one alone | per process ms (median / max) | CPU total ms | CPU total / {} CPUs | peak RSS MB (max) | HTTP requests | logins |",
        machine.nproc
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in &burst.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {} | {:.0} / {:.0} | {:.0} | {:.0} ms | {:.1} | {} | {} |",
            row.label,
            row.processes,
            row.wall,
            ratio(row.wall, single),
            row.per_process_median,
            row.per_process_max,
            row.cpu_total,
            row.cpu_total / machine.nproc as f64,
            row.rss_max,
            row.requests,
            row.logins,
        );
    }
    out.push('\n');

    // Binary
    let _ = writeln!(out, "## Binary\n");
    let _ = writeln!(out, "| binary | size | GetVersion start → exit ms |");
    let _ = writeln!(out, "|---|--:|--:|");
    let _ = writeln!(
        out,
        "| `{}` (built by `cargo bench`: bench profile, dynamically linked) | {:.2} MB | {:.2} |",
        shown(&binary.measured),
        binary.measured_size as f64 / 1_048_576.0,
        median(&binary.measured_version),
    );
    match &binary.shipped {
        Some((path, size, built, walls)) => {
            let _ = writeln!(
                out,
                "| `{}` (shipped: release profile, LTO, static musl; file dated {built}) | {:.2} MB | {:.2} |",
                shown(path),
                *size as f64 / 1_048_576.0,
                median(walls),
            );
        }
        None => {
            let _ = writeln!(
                out,
                "| shipped binary not built: `cargo build --release --locked --target x86_64-unknown-linux-musl --bin garm-provider-edge-connect` (as the Dockerfile and .ci/static-chroot.sh do) | – | – |"
            );
        }
    }
    out.push('\n');
    out.push_str(HOW_TO_READ);
    out
}

const HOW_TO_READ: &str = r#"## How to read this

- **wall ms**: from the start of the provider process to its exit as seen by `wait4`, i.e. what
  GARM waits for. **CPU ms** (user + system) and **peak RSS** come from the same `wait4`. Peak RSS
  cannot be lower than the "peak RSS floor" above (the kernel counts the starting process's
  high-water mark into the child's); GetVersion sits just above it.
- **thin client**: a reqwest client inside the benchmark that sends *exactly* the provider's
  requests (captured on the wire: same paths, bodies and token), with the same parallelism, over
  connections that are already open and with the token already in hand. It is the limit of what
  any client could do with those calls. **provider / thin** is the median of the per-iteration
  ratios (both measured back to back): what the provider adds (process start, config and
  credentials, TCP connects, JSON, logging, exit).
- **GetInstance without log_file**: the same command with `log_file` left out of the config (the
  provider then logs warnings to stderr only), to show what logging to a file costs per process.
- **round trips**: calls whose request → answer intervals overlap on the wire count as one round
  trip, in brackets the minimum with a cached token (issue 7). They are read from the timing at
  20 ms; at 0 ms the same calls are checked to be sent. The "round trips seen in the wall time"
  table cross-checks the count: each round trip costs the simulator's latency once.
- **sent / received**: bytes on the TCP connections between the provider and the simulator,
  counted by a relay on 127.0.0.1 (HTTP headers included). **connections**: TCP connections
  opened; parallel calls need one each.
- **The latency is the simulator's, per call, not the network's.** Over a real network each new
  connection also costs a TCP and a TLS handshake (one round trip each with TLS 1.3), which a
  provider process pays once per connection and a warm client never pays; the simulator speaks
  plain HTTP on 127.0.0.1, so that cost is not in these figures.
- The simulator runs in the benchmark process and shares the CPUs with the provider; at 0 ms
  latency its own work is part of every wall time, for the provider and the thin client alike.
- **Large inventories**: the thin client reads the same answers without parsing them, so
  provider / thin there is the cost of decoding and matching. **ShowApp filtered by pool** is the
  thin client with an `env_vars` filter (this controller and pool) added to ShowApp, which the
  simulator applies like any Show filter: what a server-side filter would save in bytes. The
  shipped binary is the one the image carries (static musl, LTO), in the same iterations.
- **Concurrency**: all processes are started at once; "CPU total / CPUs" is the least wall time
  the CPU work alone needs on this machine. Logins count the simulator's successful logins; with
  an empty token cache every process that starts before the first login is stored logs in.

## Why more round trips than the minimum

- **CreateInstance: 2 (the minimum).** CreateApp, then CreateAppInst (which names the App and so
  cannot be sent before it exists). The stream is read to the end: GARM expects `running`.
- **CreateInstance with an empty token cache: 3.** The login comes first; the token cache makes it
  once per token lifetime (24 h on Edge Connect) rather than once per command.
- **GetInstance: 1 round trip, 2 calls.** The status lives on the AppInst, the ownership (this
  controller's id and the instance name, in the App's environment) on the App. ShowApp and
  ShowAppInst go out together, so the second call costs bytes, not latency.
- **ListInstances: 1 round trip, 2 calls**, for the same reason, whatever the number of runners.
- **DeleteInstance: 3 round trips, 4 calls, against a minimum of 2.** DeleteAppInst then DeleteApp
  is the minimum (an App in use by an AppInst cannot be deleted). The extra round is ShowApp +
  ShowAppInst before them: the provider deletes nothing it has not checked to be this
  controller's runner (`GARM_CONTROLLER_ID` and `GARM_INSTANCE_NAME` in the App's environment),
  because App names are shared by everything in the organization and another controller's or a
  person's App may carry the same name; ShowAppInst also gives the AppInst's key (its cloudlet in
  the older API) for the delete. The row "DeleteInstance vs. minimum round trips" shows what
  dropping the check would save: one latency.
"#;
