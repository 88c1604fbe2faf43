//! The provider's captured requests, grouped into round trips, and their replay: by the thin
//! client (reqwest over warm connections, in this process: the limit any client could reach with
//! those calls), by the minimal client (a process started as the provider is, with the same
//! HTTP and TLS stack: the floor a provider process can reach) and by curl (one process per
//! round, as a shell script would send them).

use crate::prelude::*;

/// One HTTP request as the provider sent it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct HttpRequest {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl HttpRequest {
    /// Parses one HTTP/1.1 request (the provider always sends a Content-Length body).
    pub(crate) fn parse(raw: &[u8]) -> Result<HttpRequest> {
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
    pub(crate) fn rpc(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }
}

/// The calls of one command, grouped into sequential round trips: calls in flight together cost
/// one round trip.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Rounds(pub(crate) Vec<Vec<HttpRequest>>);

/// The RPC names of each round, sorted within the round: what stays the same from run to run.
pub(crate) type Shape = Vec<Vec<String>>;

/// Shapes by command key (see [`World::garm_with`]), learnt where timing shows them.
pub(crate) type Shapes = BTreeMap<String, Shape>;

impl Rounds {
    pub(crate) fn calls(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn shape(&self) -> Shape {
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
    pub(crate) fn without_read_only_rounds(&self) -> Rounds {
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
pub(crate) struct Traffic {
    pub(crate) rounds: Rounds,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) connections: usize,
}

/// `ShowApp+ShowAppInst → DeleteAppInst → DeleteApp`.
pub(crate) fn shape_text(shape: &Shape) -> String {
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
    pub(crate) fn from_session(session: Session, known: Option<&Shape>) -> Result<Traffic> {
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
pub(crate) async fn replay(
    http: &reqwest::Client,
    base: &str,
    rounds: &Rounds,
) -> Result<Duration> {
    let start = Instant::now();
    for round in &rounds.0 {
        let calls = round.iter().map(|r| send(http, base, r));
        for result in futures_util::future::join_all(calls).await {
            result?;
        }
    }
    Ok(start.elapsed())
}

/// A captured request as reqwest is given it, ready to send.
fn prepare(
    http: &reqwest::Client,
    base: &str,
    request: &HttpRequest,
) -> Result<reqwest::RequestBuilder> {
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
    Ok(builder)
}

pub(crate) async fn send(http: &reqwest::Client, base: &str, request: &HttpRequest) -> Result<()> {
    let response = prepare(http, base, request)?
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

/// What the minimal client process is to send, and where.
#[derive(Serialize, Deserialize)]
struct MinimalJob {
    base: String,
    rounds: Rounds,
    /// Prepare every request (read from the job, URL and headers given to reqwest, the request
    /// built) and send none: the process's cost less its sending, for [`minimal_sends`].
    dry: bool,
}

/// The minimal client's side: this executable run with `--minimal-client FILE` does nothing
/// else before it sends the rounds in FILE as [`replay`] does, with the provider's HTTP and TLS
/// stack (reqwest with rustls, a client built in the process, new connections, a
/// single-threaded runtime), and exits. Its wall time, measured like a provider's, is what any
/// process that sends those requests pays: the floor of the provider's.
pub(crate) fn minimal_client(file: &Path) -> Result<()> {
    let job: MinimalJob = serde_json::from_slice(
        &std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?,
    )
    .context("minimal client job")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("minimal client: runtime")?;
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .context("minimal client: HTTP client")?;
    if job.dry {
        for request in job.rounds.0.iter().flatten() {
            std::hint::black_box(prepare(&http, &job.base, request)?.build()?);
        }
        return Ok(());
    }
    runtime.block_on(replay(&http, &job.base, &job.rounds))?;
    Ok(())
}

/// Runs the minimal client on `rounds` as a process (through the launcher, as providers run),
/// under `grind` when given (made for this executable); `dry` prepares every request and sends
/// none.
pub(crate) fn minimal_client_run(
    dir: &Path,
    base: &str,
    rounds: &Rounds,
    dry: bool,
    grind: Option<&Cachegrind>,
) -> Result<Proc> {
    let file = dir.join("minimal-client.json");
    let job = MinimalJob {
        base: base.to_string(),
        rounds: rounds.clone(),
        dry,
    };
    std::fs::write(&file, serde_json::to_vec(&job)?)
        .with_context(|| format!("cannot write {}", file.display()))?;
    let me = std::env::current_exe().context("cannot find the benchmark's own executable")?;
    let (program, mut args) = grind.map_or((&me, vec![]), |g| (&g.valgrind, g.args.clone()));
    args.extend(["--minimal-client".to_string(), file.display().to_string()]);
    let proc = run_provider(program, &args, dir, &[], None)?;
    ensure!(
        proc.code == 0,
        "the minimal client exited {}: {}",
        proc.code,
        proc.stderr.trim()
    );
    Ok(proc)
}

/// The minimal client's instructions for sending `rounds` and reading every answer, its own
/// preparation left out: the process under cachegrind, less the same process that prepares the
/// same requests and sends none. What the HTTP and TLS stack alone costs for those requests.
pub(crate) fn minimal_sends(dir: &Path, base: &str, rounds: &Rounds) -> Result<u64> {
    let me = std::env::current_exe().context("cannot find the benchmark's own executable")?;
    // The dry run first: the real one changes the simulator.
    let [dry, sent] = [true, false].map(|dry| {
        let grind = Cachegrind::new(&me, dir)?;
        minimal_client_run(dir, base, rounds, dry, Some(&grind))?;
        grind.instructions()
    });
    Ok(sent?.saturating_sub(dry?))
}

/// curl on PATH, if any.
pub(crate) fn curl() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("curl"))
        .find(|candidate| candidate.is_file())
}

/// Sends `rounds` with `curl`: one process per round, its calls in parallel (`--parallel`), the
/// rounds one after the other, as a shell script would. The sum of the processes' wall times.
pub(crate) fn curl_run(curl: &Path, dir: &Path, base: &str, rounds: &Rounds) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for (r, round) in rounds.0.iter().enumerate() {
        let mut args = vec![
            "--silent".to_string(),
            "--show-error".to_string(),
            "--fail".to_string(),
            "--parallel".to_string(),
            "--parallel-immediate".to_string(),
        ];
        for (c, request) in round.iter().enumerate() {
            if c > 0 {
                args.push("--next".to_string());
            }
            let body = dir.join(format!("curl-{r}-{c}.body"));
            std::fs::write(&body, &request.body)
                .with_context(|| format!("cannot write {}", body.display()))?;
            args.extend([
                "--request".to_string(),
                request.method.clone(),
                "--output".to_string(),
                "/dev/null".to_string(),
                "--data-binary".to_string(),
                format!("@{}", body.display()),
            ]);
            for (name, value) in &request.headers {
                let own = ["host", "content-length", "connection"];
                if !own.iter().any(|o| name.eq_ignore_ascii_case(o)) {
                    args.extend(["--header".to_string(), format!("{name}: {value}")]);
                }
            }
            args.push(format!("{base}{}", request.path));
        }
        let proc = run_provider(curl, &args, dir, &[], None)?;
        ensure!(
            proc.code == 0,
            "curl exited {}: {}",
            proc.code,
            proc.stderr.trim()
        );
        total += proc.wall;
    }
    Ok(total)
}
