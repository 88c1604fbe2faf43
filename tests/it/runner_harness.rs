//! Harness for `tests/it/runner_entrypoint.rs`: runs the real
//! `examples/runner-image/entrypoint.sh` against a fake GARM (metadata and
//! callback endpoints, optionally over HTTPS with a throw-away CA), an optional
//! recording HTTP proxy, and stub runner programs that write down how they were
//! called. Everything listens on 127.0.0.1 only.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

/// Distinctive secret values, so that a leak into logs or the job's
/// environment is found by a plain substring search.
pub const INSTANCE_TOKEN: &str = "garm-instance-token-Xq4F9zK2";
pub const REGISTRATION_TOKEN: &str = "registration-token-B7mW3pR8";
pub const DOWNLOAD_TOKEN: &str = "download-token-T5nH1vC6";

/// Runner ids the fake forge side hands out (GitHub `.runner` `agentId`,
/// Gitea `.runner` `id`).
pub const GITHUB_AGENT_ID: u64 = 4711;
pub const GITEA_AGENT_ID: u64 = 93;

pub const RUNNER_NAME: &str = "garm-7hq2kx0d3mzt";
pub const CONTROLLER_ID: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";
pub const POOL_ID: &str = "9dcf590a-1192-4a9c-b3e4-e0902974c2c0";

pub const METADATA_PATH: &str = "/api/v1/metadata";
pub const CALLBACK_PATH: &str = "/api/v1/callbacks";

/// The JIT files GARM serves; `.runner` starts with a BOM like the real one.
pub const JIT_RUNNER_FILE: &str = "\u{feff}{\"agentId\": 4711, \"agentName\": \"garm-7hq2kx0d3mzt\", \"poolId\": 1, \"poolName\": \"Default\", \"serverUrl\": \"https://pipelines.example.test/abc\", \"gitHubUrl\": \"https://github.com/example-org\", \"workFolder\": \"_work\", \"ephemeral\": true}";
pub const JIT_CREDENTIALS_FILE: &str = "{\"scheme\": \"OAuthAccessToken\", \"data\": {\"clientId\": \"c1\", \"authorizationUrl\": \"https://vstoken.example.test/\"}}";
pub const JIT_RSA_FILE: &str =
    "{\"d\": \"ZA==\", \"dp\": \"ZHA=\", \"modulus\": \"bW9k\", \"exponent\": \"AQAB\"}";

// ---------------------------------------------------------------------------
// Fake GARM

/// How a request authenticated itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    Instance,
    Download,
    Missing,
    Wrong,
}

/// One request as the fake received it, and the status code it answered.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub auth: Auth,
    pub body: String,
    pub answer: u16,
}

impl Call {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| {
            panic!(
                "{} {}: body is not JSON ({e}): {}",
                self.method, self.path, self.body
            )
        })
    }

    /// A one-line description used to compare call sequences exactly:
    /// method, path, the fields of callback bodies that matter, and the
    /// authentication when it is not the instance token.
    pub fn summary(&self) -> String {
        let mut s = format!("{} {}", self.method, self.path);
        if self.path.ends_with("/status") {
            let v = self.json();
            s.push_str(&format!(" status={}", v["status"].as_str().unwrap_or("?")));
            if let Some(id) = v.get("agent_id") {
                s.push_str(&format!(" agent_id={id}"));
            }
        } else if self.path.ends_with("/system-info") {
            let v = self.json();
            s.push_str(&format!(
                " os_name={} os_version={} agent_id={}",
                v["os_name"], v["os_version"], v["agent_id"]
            ));
        }
        if self.auth != Auth::Instance {
            s.push_str(&format!(" auth={:?}", self.auth));
        }
        s
    }

    /// The `message` of a status callback.
    pub fn message(&self) -> String {
        self.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// A runner tool the fake serves: `/downloads/<name>` redirects to
/// `/blobs/<name>` like GitHub's release downloads do.
#[derive(Clone)]
pub struct Download {
    pub name: String,
    pub body: Vec<u8>,
}

/// What the fake GARM does.
#[derive(Clone, Default)]
pub struct Behaviour {
    /// JIT instance: credential files are served, the registration token is not.
    pub jit: bool,
    /// Answer every metadata GET with this status (failure path).
    pub metadata_status: Option<u16>,
    pub download: Option<Download>,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    registration_token_fetched: bool,
    /// GARM stops accepting the instance token once the runner reported
    /// idle or failed; the fake does the same.
    token_revoked: bool,
}

#[derive(Clone)]
struct FakeState {
    behaviour: Behaviour,
    inner: Arc<Mutex<Inner>>,
}

pub struct FakeGarm {
    pub base_url: String,
    inner: Arc<Mutex<Inner>>,
    /// TLS handshakes the client aborted (HTTPS mode only).
    pub tls_rejections: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGarm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeGarm {
    pub async fn start(behaviour: Behaviour) -> FakeGarm {
        Self::start_inner(behaviour, None).await
    }

    pub async fn start_https(behaviour: Behaviour, tls: &TestPki) -> FakeGarm {
        Self::start_inner(behaviour, Some(tls.server_config())).await
    }

    async fn start_inner(behaviour: Behaviour, tls: Option<rustls::ServerConfig>) -> FakeGarm {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let state = FakeState {
            behaviour,
            inner: inner.clone(),
        };
        let app = Router::new().fallback(handle).with_state(state);
        let tcp = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake GARM");
        let addr = tcp.local_addr().expect("fake GARM address");
        let tls_rejections = Arc::new(AtomicUsize::new(0));
        let (scheme, server) = match tls {
            None => (
                "http",
                tokio::spawn(async move {
                    axum::serve(tcp, app).await.expect("fake GARM server");
                }),
            ),
            Some(config) => {
                let listener = TlsListener {
                    tcp,
                    acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
                    rejections: tls_rejections.clone(),
                };
                (
                    "https",
                    tokio::spawn(async move {
                        axum::serve(listener, app)
                            .await
                            .expect("fake GARM TLS server");
                    }),
                )
            }
        };
        FakeGarm {
            base_url: format!("{scheme}://127.0.0.1:{}", addr.port()),
            inner,
            tls_rejections,
            server,
        }
    }

    pub fn metadata_url(&self) -> String {
        format!("{}{METADATA_PATH}", self.base_url)
    }

    pub fn callback_url(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.base_url)
    }

    pub fn download_url(&self, name: &str) -> String {
        format!("{}/downloads/{name}", self.base_url)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.inner.lock().unwrap().calls.clone()
    }

    pub fn summaries(&self) -> Vec<String> {
        self.calls().iter().map(Call::summary).collect()
    }
}

fn classify_auth(headers: &HeaderMap) -> Auth {
    let Some(value) = headers.get("authorization") else {
        return Auth::Missing;
    };
    match value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")) {
        Some(INSTANCE_TOKEN) => Auth::Instance,
        Some(DOWNLOAD_TOKEN) => Auth::Download,
        _ => Auth::Wrong,
    }
}

fn status(code: u16, body: &'static str) -> Response {
    (StatusCode::from_u16(code).expect("status code"), body).into_response()
}

async fn handle(
    State(state): State<FakeState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth = classify_auth(&headers);
    let path = uri.path().to_string();
    let mut inner = state.inner.lock().unwrap();
    let response = respond(&state.behaviour, &mut inner, &method, &path, auth, &body);
    inner.calls.push(Call {
        method: method.to_string(),
        path,
        auth,
        body: String::from_utf8_lossy(&body).into_owned(),
        answer: response.status().as_u16(),
    });
    response
}

fn respond(
    behaviour: &Behaviour,
    inner: &mut Inner,
    method: &Method,
    path: &str,
    auth: Auth,
    body: &[u8],
) -> Response {
    let download = path
        .strip_prefix("/downloads/")
        .map(|name| (name, true))
        .or_else(|| path.strip_prefix("/blobs/").map(|name| (name, false)));
    if let Some((name, redirect)) = download {
        // The download host is not GARM: it must never see the instance token.
        if auth == Auth::Instance || auth == Auth::Wrong {
            return status(403, "unexpected credentials");
        }
        return match &behaviour.download {
            Some(d) if d.name == name && *method == Method::GET => {
                if redirect {
                    (StatusCode::FOUND, [("location", format!("/blobs/{name}"))]).into_response()
                } else {
                    d.body.clone().into_response()
                }
            }
            _ => status(404, "no such file"),
        };
    }

    let garm_path = path.starts_with(METADATA_PATH) || path.starts_with(CALLBACK_PATH);
    if !garm_path {
        return status(404, "not found");
    }
    // GARM's instance middleware answers every metadata and callback request
    // with the same 401 once the runner reported idle or failed, and for a
    // token that is not its own (cloudbase/garm auth/instance_middleware.go
    // l. 199-237, auth/jwt.go l. 89-98).
    if auth != Auth::Instance || inner.token_revoked {
        return status(401, "unauthorized");
    }

    if let Some(rest) = path.strip_prefix(METADATA_PATH) {
        if *method != Method::GET {
            return status(405, "method not allowed");
        }
        if let Some(code) = behaviour.metadata_status {
            return status(code, "metadata failure injected by the test");
        }
        let rest = rest.trim_end_matches('/');
        return match rest {
            "/runner-registration-token" => {
                // GARM: non-JIT only, and only once per instance
                // (runner/metadata.go l. 639-651); JIT files are served
                // again while the runner is pending or installing (l. 614-637).
                if behaviour.jit || inner.registration_token_fetched {
                    status(401, "registration token not available")
                } else {
                    inner.registration_token_fetched = true;
                    REGISTRATION_TOKEN.into_response()
                }
            }
            "/credentials/runner" if behaviour.jit => JIT_RUNNER_FILE.into_response(),
            "/credentials/credentials" if behaviour.jit => JIT_CREDENTIALS_FILE.into_response(),
            "/credentials/credentials_rsaparams" if behaviour.jit => JIT_RSA_FILE.into_response(),
            _ => status(404, "not found"),
        };
    }

    let rest = path.strip_prefix(CALLBACK_PATH).unwrap_or_default();
    if *method != Method::POST {
        return status(405, "method not allowed");
    }
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return status(400, "body is not JSON");
    };
    match rest.trim_end_matches('/') {
        "/status" => {
            if matches!(json["status"].as_str(), Some("idle") | Some("failed")) {
                inner.token_revoked = true;
            }
            status(200, "")
        }
        "/system-info" => status(200, ""),
        _ => status(404, "not found"),
    }
}

/// TLS in front of axum: handshakes run inside `accept`, and a handshake the
/// client aborts (it does not trust our CA) is counted and skipped.
struct TlsListener {
    tcp: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    rejections: Arc<AtomicUsize>,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.tcp.accept().await {
                Ok(conn) => conn,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            // curl either completes the handshake or aborts it (it does not
            // trust the certificate); both end this await.
            match self.acceptor.accept(stream).await {
                Ok(tls) => return (tls, addr),
                Err(_) => {
                    self.rejections.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A throw-away CA and a server certificate for 127.0.0.1 signed by it,
/// standing in for the GARM controller CA in `ca-cert-bundle`.
pub struct TestPki {
    pub ca_pem: String,
    ca_der: Vec<u8>,
    leaf_der: Vec<u8>,
    leaf_key_der: Vec<u8>,
}

impl TestPki {
    pub fn generate() -> TestPki {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "fake GARM test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
            .expect("self-signed CA");

        let mut leaf_params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("leaf params");
        leaf_params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf = leaf_params
            .signed_by(&leaf_key, &*ca)
            .expect("leaf certificate");
        TestPki {
            ca_pem: ca.pem(),
            ca_der: ca.der().to_vec(),
            leaf_der: leaf.der().to_vec(),
            leaf_key_der: leaf_key.serialize_der(),
        }
    }

    fn server_config(&self) -> rustls::ServerConfig {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![
                    CertificateDer::from(self.leaf_der.clone()),
                    CertificateDer::from(self.ca_der.clone()),
                ],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key_der.clone())),
            )
            .expect("TLS server config")
    }
}

// ---------------------------------------------------------------------------
// Recording forward proxy

/// A plain HTTP forward proxy: records each request line (absolute form, as a
/// client sends it to a proxy) and relays the connection to the origin, which
/// must be on 127.0.0.1.
pub struct RecordingProxy {
    pub url: String,
    lines: Arc<Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl RecordingProxy {
    pub async fn start() -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let recorded = lines.clone();
        let server = tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(relay(conn, recorded.clone()));
            }
        });
        RecordingProxy {
            url: format!("http://127.0.0.1:{port}"),
            lines,
            server,
        }
    }

    pub fn request_lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

async fn relay(mut client: TcpStream, lines: Arc<Mutex<Vec<String>>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let request_line = text.lines().next().unwrap_or_default().to_string();
    lines.lock().unwrap().push(request_line.clone());

    let target = request_line.split(' ').nth(1).unwrap_or_default();
    let authority = target
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default();
    // Hermetic: relay to loopback only.
    if !authority.starts_with("127.0.0.1:") {
        let _ = client
            .write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return;
    }
    let Ok(mut upstream) = TcpStream::connect(authority).await else {
        let _ = client
            .write_all(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .await;
        return;
    };
    if upstream.write_all(&head).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

// ---------------------------------------------------------------------------
// Sandbox with stub runner programs

/// Which forge the contract environment describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forge {
    GitHub,
    Gitea,
    /// A Forgejo attached to GARM as a Gitea endpoint: `FORGE_TYPE=gitea`, and
    /// GARM hands over the endpoint's API base URL.
    Forgejo,
}

/// The Gitea and Forgejo instance URLs the contract environment uses.
pub const GITEA_URL: &str = "http://gitea.example.test/";
pub const FORGEJO_API_URL: &str = "https://forgejo.example.test/api/v1/";
pub const FORGEJO_URL: &str = "https://forgejo.example.test";

/// A temporary directory tree for one entrypoint run:
/// `runner/` (RUNNER_HOME), `bin/` (stub programs, first on PATH), `log/`
/// (what the stubs recorded), `tmp/` (TMPDIR), `work/` (RUNNER_WORKDIR),
/// `system-ca/` (stand-in for /usr/local/share/ca-certificates).
pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
    pub log: PathBuf,
    pub tmp: PathBuf,
    pub work: PathBuf,
    pub system_ca: PathBuf,
    pub os_release: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().to_path_buf();
        let sandbox = Sandbox {
            home: root.join("runner"),
            bin: root.join("bin"),
            log: root.join("log"),
            tmp: root.join("tmp"),
            work: root.join("work"),
            system_ca: root.join("system-ca"),
            os_release: root.join("os-release"),
            root,
            _dir: dir,
        };
        for d in [
            &sandbox.home,
            &sandbox.bin,
            &sandbox.log,
            &sandbox.tmp,
            &sandbox.system_ca,
        ] {
            std::fs::create_dir_all(d).expect("sandbox dir");
        }
        std::fs::write(
            &sandbox.os_release,
            "NAME=\"Test Linux\"\nVERSION=\"42.1 (Stub)\"\nID=testlinux\nVERSION_ID=\"42.1\"\n",
        )
        .expect("os-release");
        sandbox
    }

    /// `config.sh` and `run.sh` of the GitHub runner, in RUNNER_HOME.
    pub fn install_github_stubs(&self) {
        for (name, text) in self.github_stub_scripts() {
            write_executable(&self.home.join(name), &text);
        }
    }

    /// The GitHub stubs as (file name, script) pairs, e.g. to pack a tarball.
    pub fn github_stub_scripts(&self) -> Vec<(&'static str, String)> {
        let log = self.log.display();
        // config.sh fails as many times as log/config.failures says (retry tests),
        // then writes a .runner with a BOM like the real runner does.
        let config = format!(
            r#"#!/bin/bash
set -eu
# The options Runner.Listener knows (actions/runner
# src/Runner.Common/Constants.cs @0088f670, CommandLine.Args and .Flags);
# anything else is refused, as the real runner refuses unknown arguments.
valued=" auth labels monitorsocketaddress name runnergroup startuptype url username windowslogonaccount work token pat windowslogonpassword jitconfig "
flags=" check commit ephemeral generateServiceConfig help local no-default-labels replace disableupdate once runasservice unattended version "
args=("$@"); i=0
while (( i < ${{#args[@]}} )); do
  a=${{args[i]}}; o=${{a#--}}
  if [[ $a == --* && $valued == *" $o "* ]] && (( i + 1 < ${{#args[@]}} )); then i=$((i + 2))
  elif [[ $a == --* && $flags == *" $o "* ]]; then i=$((i + 1))
  else echo "config.sh stub: unrecognized command-line input argument '$a'" >&2; exit 1
  fi
done
n=$(( $(cat '{log}/config.count' 2>/dev/null || echo 0) + 1 ))
echo "$n" > '{log}/config.count'
printf '%s\0' "$@" > '{log}/config.argv'
pwd > '{log}/config.cwd'
if (( n <= $(cat '{log}/config.failures' 2>/dev/null || echo 0) )); then
  echo "config.sh stub: simulated failure $n" >&2
  exit 1
fi
printf '\xef\xbb\xbf{{"agentId": {GITHUB_AGENT_ID}, "agentName": "stub", "poolId": 1}}' > .runner
printf '{{"scheme": "OAuth"}}' > .credentials
"#
        );
        let run = format!(
            r#"#!/bin/bash
for a in "$@"; do printf '%s\0' "$a"; done > '{log}/run.argv'
pwd > '{log}/run.cwd'
env -0 > '{log}/run.env'
"#
        );
        vec![("config.sh", config), ("run.sh", run)]
    }

    /// A Forgejo/Gitea runner stub speaking `cli`'s exact command line, as
    /// `bin/<program>` (on PATH).
    pub fn install_runner_stub(&self, cli: RunnerCli) {
        write_executable(&self.bin.join(cli.program()), &self.runner_stub_script(cli));
    }

    /// The stub of `cli` (see [`RunnerCli`]). Like the real cobra programs it
    /// answers `--help` with the real flag list, refuses an unknown flag with
    /// `Error: unknown flag: --X` and exit code 1, and an unknown subcommand
    /// like the real root command does. Behaviour of a real run:
    /// * every call is appended to `log/calls` (argv joined by spaces);
    /// * `register` records `register.argv` / `.program` / `.cwd`, the token it
    ///   was given (`register.token`, read from `--token-file` if used, with
    ///   that file's mode in `register.token-file-mode`) and then acts as
    ///   `log/register.mode` says: `ok` (default: writes `.runner`),
    ///   `forgejo14` (Forgejo < 15: fails with its ephemeral error),
    ///   `hang` (an unreachable forge: pings forever), `leaky` (prints the
    ///   token, then fails), `fail` (exit 1);
    /// * `daemon` and `one-job` record argv, program, cwd and environment, and
    ///   then act as `log/job.mode` says (see [`Sandbox::set_job_mode`]).
    pub fn runner_stub_script(&self, cli: RunnerCli) -> String {
        let spec = cli.spec();
        let log = self.log.display();
        let mut flag_table = String::new();
        let mut help_table = String::new();
        let mut subcommand_names = Vec::new();
        for sub in spec.subcommands {
            subcommand_names.push(sub.name);
            let flags: Vec<&Flag> = sub.flags.iter().chain(spec.persistent).collect();
            for f in &flags {
                flag_table.push_str(&format!(
                    "{}:{}) echo '{} {}' ;;\n",
                    sub.name,
                    f.long,
                    f.kind.word(),
                    f.short.map(String::from).unwrap_or_else(|| "-".into())
                ));
                if let Some(s) = f.short {
                    flag_table.push_str(&format!(
                        "{}:-{s}) echo '{} {}' ;;\n",
                        sub.name,
                        f.kind.word(),
                        f.long
                    ));
                }
            }
            let mut help = format!(
                "{}\n\nUsage:\n  {} {} [flags]\n\nFlags:\n  -h, --help   help for {}\n",
                sub.short, spec.program, sub.name, sub.name
            );
            for f in sub.flags {
                help.push_str(&flag_help_line(f));
            }
            help.push_str("\nGlobal Flags:\n");
            for f in spec.persistent {
                help.push_str(&flag_help_line(f));
            }
            help_table.push_str(&format!("{}) cat <<'HELP'\n{help}HELP\n;;\n", sub.name));
            help_table.push_str(&format!("{}:max) echo {} ;;\n", sub.name, sub.max_args));
        }
        let mut root_help = format!(
            "{}\n\nUsage:\n  {} [flags]\n  {} [command]\n\nAvailable Commands:\n",
            spec.root_short, spec.root_usage, spec.program
        );
        for sub in spec.subcommands {
            root_help.push_str(&format!("  {:<16}{}\n", sub.name, sub.short));
        }
        root_help
            .push_str("\nFlags:\n  -h, --help   help for the program\n  -v, --version   version\n");
        for f in spec.persistent {
            root_help.push_str(&flag_help_line(f));
        }
        let root_takes_arg = if spec.root_takes_event_arg {
            "true"
        } else {
            "false"
        };
        let known = subcommand_names.join(" ");
        let program = spec.program;
        let source = spec.source;
        format!(
            r#"#!/bin/bash
# Stub of {program}: {source}
set -u
LOG='{log}'
PROG='{program}'
ORIG_ARGV=("$@")
( IFS=' '; printf '%s\n' "$*" ) >> "$LOG/calls"

flag_kind() {{
  case "$1:$2" in
{flag_table}  *) return 1 ;;
  esac
}}
sub_help() {{
  case "$1" in
{help_table}  esac
}}
root_help() {{
  cat <<'HELP'
{root_help}HELP
}}

sub=${{1-}}
if [[ -z $sub || " {known} " != *" $sub "* ]]; then
  # cobra: a root command without an argument validator refuses an unknown
  # subcommand before it looks at --help; one taking an event name shows
  # its own help instead.
  if ! {root_takes_arg} && [[ -n $sub && $sub != -* ]]; then
    echo "Error: unknown command \"$sub\" for \"$PROG\"" >&2
    echo "Run '$PROG --help' for usage." >&2
    exit 1
  fi
  for a in "$@"; do
    if [[ $a == --help || $a == -h ]]; then root_help; exit 0; fi
  done
  if [[ -z $sub ]]; then root_help; exit 0; fi
  if [[ $sub == -* ]]; then echo "Error: unknown flag: $sub" >&2; exit 1; fi
  echo "stub: running a workflow event locally is not mimicked" >&2
  exit 3
fi
shift
declare -A val=()
positional=()
while (( $# )); do
  a=$1; shift
  case $a in
  --) positional+=("$@"); break ;;
  -h|--help) sub_help "$sub"; exit 0 ;;
  --*)
    name=${{a#--}}; v=""; given=false
    if [[ $name == *=* ]]; then v=${{name#*=}}; name=${{name%%=*}}; given=true; fi
    if ! spec=$(flag_kind "$sub" "$name"); then
      echo "Error: unknown flag: --$name" >&2; exit 1
    fi
    kind=${{spec%% *}}
    if [[ $kind == value ]] && ! $given; then
      if (( $# == 0 )); then echo "Error: flag needs an argument: --$name" >&2; exit 1; fi
      v=$1; shift
    fi
    [[ $kind == bool && -z $v ]] && v=true
    val[$name]=${{val[$name]+${{val[$name]}},}}$v ;;
  -?*)
    s=${{a:1:1}}
    if ! spec=$(flag_kind "$sub" "-$s"); then
      echo "Error: unknown shorthand flag: '$s' in $a" >&2; exit 1
    fi
    kind=${{spec%% *}}; name=${{spec#* }}; v=${{a:2}}
    if [[ $kind == value && -z $v ]]; then
      if (( $# == 0 )); then echo "Error: flag needs an argument: '$s' in -$s" >&2; exit 1; fi
      v=$1; shift
    fi
    [[ $kind == bool && -z $v ]] && v=true
    val[$name]=$v ;;
  *) positional+=("$a") ;;
  esac
done
max=$(sub_help "$sub:max")
if (( ${{#positional[@]}} > max )); then
  echo "Error: accepts at most $max arg(s), received ${{#positional[@]}}" >&2; exit 1
fi

printf '%s' "$0" > "$LOG/$sub.program"
pwd > "$LOG/$sub.cwd"
case $sub in
register)
  printf '%s\0' "${{ORIG_ARGV[@]}}" > "$LOG/register.argv"
  if [[ -n ${{val[token-file]-}} ]]; then
    stat -c %a "${{val[token-file]}}" > "$LOG/register.token-file-mode"
    tr -d '\n' < "${{val[token-file]}}" > "$LOG/register.token"
  else
    printf '%s' "${{val[token]-}}" > "$LOG/register.token"
  fi
  mode=$(cat "$LOG/register.mode" 2>/dev/null || echo ok)
  case $mode in
  ok)
    printf '{{"id": {GITEA_AGENT_ID}, "uuid": "3b1c", "name": "%s", "token": "runner-own-token", "address": "%s", "labels": []}}\n' \
      "${{val[name]-}}" "${{val[instance]-}}" > .runner ;;
  forgejo14)
    echo "Error: Failed to register runner: stub says this Forgejo instance does not support ephemeral runners (Forgejo 15 needed); the runner stays registered as non-ephemeral" >&2
    exit 1 ;;
  hang)
    while :; do echo "stub: cannot ping the forge" >&2; sleep 0.2; done ;;
  leaky)
    echo "stub: registering with token $(cat "$LOG/register.token")" >&2
    exit 1 ;;
  *) echo "Error: stub: registration failed" >&2; exit 1 ;;
  esac ;;
*)
  printf '%s\0' "${{ORIG_ARGV[@]}}" > "$LOG/$sub.argv"
  env -0 > "$LOG/$sub.env"
  mode=$(cat "$LOG/job.mode" 2>/dev/null || echo done)
  case $mode in
  done) ;;
  exit=*) exit "${{mode#exit=}}" ;;
  script)
    # The job is log/job.sh, given the runner's --config file (if any);
    # its output goes to log/job.out, its exit code is the runner's.
    bash "$LOG/job.sh" "${{val[config]-}}" > "$LOG/job.out" 2>&1
    exit $? ;;
  busy)
    # A job in progress, until the runner is stopped: the real runners end
    # on SIGTERM (forgejo-runner and gitea-runner main.go l. 15,
    # signal.NotifyContext with SIGINT and SIGTERM). The stub notes the signal.
    # It ends every job, not a pid kept from $!, which a signal arriving while
    # `sleep &` starts runs the trap before.
    trap 'echo TERM > "$LOG/$sub.signal"; kill $(jobs -p) 2>/dev/null; exit 143' TERM
    : > "$LOG/$sub.busy"
    while :; do sleep 3600 & wait "$!"; done ;;
  esac ;;
esac
"#
        )
    }

    /// A stub `docker` CLI for `RUNNER_DOCKER=buildkit`: records its argv
    /// (`docker.argv`) and `$HOME` (`docker.home`); answers as
    /// `log/docker.mode` says: `ok` (default, exit 0, like `docker buildx
    /// create`, which prints the builder's name) or `fail` (buildx's error
    /// line, exit 1).
    pub fn install_docker_stub(&self) {
        let log = self.log.display();
        write_executable(
            &self.bin.join("docker"),
            &format!(
                r#"#!/bin/bash
printf '%s\0' "$@" > '{log}/docker.argv'
printf '%s' "$HOME" > '{log}/docker.home'
if [[ $(cat '{log}/docker.mode' 2>/dev/null) == fail ]]; then
  echo 'ERROR: failed to find driver "remote"' >&2
  exit 1
fi
echo "${{5-}}"
"#
            ),
        );
    }

    /// A stub `update-ca-certificates` that records that it ran.
    pub fn install_update_ca_stub(&self) {
        let log = self.log.display();
        write_executable(
            &self.bin.join("update-ca-certificates"),
            &format!("#!/bin/bash\necho ran >> '{log}/update-ca-certificates'\n"),
        );
    }

    /// Puts a wrapper of the real `program` first on PATH that appends each
    /// call's argv (joined by spaces, one line) to `log/<program>.calls` and
    /// then runs the real one: to see what the entrypoint hands the tools it
    /// runs itself, which anything in the container can read in /proc.
    pub fn install_argv_recorder(&self, program: &str) {
        let real = ["/usr/local/bin", "/usr/bin", "/bin"]
            .iter()
            .map(|dir| Path::new(dir).join(program))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{program} is not installed"));
        let log = self.log.join(format!("{program}.calls"));
        write_executable(
            &self.bin.join(program),
            &format!(
                "#!/bin/bash\n( IFS=' '; printf '%s\\n' \"$*\" ) >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        );
    }

    pub fn set_config_failures(&self, n: u32) {
        std::fs::write(self.log.join("config.failures"), n.to_string()).expect("failures file");
    }

    /// The NUL-separated argv a stub recorded as `<name>.argv`, if it ran.
    pub fn argv(&self, name: &str) -> Option<Vec<String>> {
        let bytes = std::fs::read(self.log.join(format!("{name}.argv"))).ok()?;
        let text = String::from_utf8(bytes).expect("argv is UTF-8");
        Some(
            text.split_terminator('\0')
                .map(str::to_string)
                .collect::<Vec<_>>(),
        )
    }

    /// The environment a stub recorded with `env -0` as `<name>.env`.
    pub fn recorded_env(&self, name: &str) -> BTreeMap<String, String> {
        let bytes = std::fs::read(self.log.join(format!("{name}.env")))
            .unwrap_or_else(|e| panic!("{name}.env was not recorded: {e}"));
        nul_separated_env(&bytes)
    }

    /// What `log/register.mode` tells the runner stubs' `register` to do.
    pub fn set_register_mode(&self, mode: &str) {
        std::fs::write(self.log.join("register.mode"), mode).expect("register mode");
    }

    /// What the runner stubs' job run (`daemon`, `one-job`) does after
    /// recording its call: `done` (default: the job is over, exit 0),
    /// `exit=N` (exit N), `script` (runs `log/job.sh CONFIG` with the
    /// runner's `--config` value, output to `log/job.out`), `busy` (a job in progress: writes `<sub>.busy`, then
    /// runs until SIGTERM, which it writes to `<sub>.signal`).
    pub fn set_job_mode(&self, mode: &str) {
        std::fs::write(self.log.join("job.mode"), mode).expect("job mode");
    }

    /// Every call of a runner stub, one line each (argv joined by spaces),
    /// `--help` probes included.
    pub fn runner_calls(&self) -> Vec<String> {
        self.recorded("calls")
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The runner stub calls that were not `--help` probes.
    pub fn runner_runs(&self) -> Vec<String> {
        self.runner_calls()
            .into_iter()
            .filter(|c| !c.ends_with(" --help"))
            .collect()
    }

    pub fn recorded(&self, file: &str) -> Option<String> {
        std::fs::read_to_string(self.log.join(file)).ok()
    }

    /// The contract environment the provider would set, pointing at `garm`,
    /// with the callback URL without `/status` (GARM uses both forms; see
    /// [`World::use_status_callback_url`]).
    pub fn contract_env(
        &self,
        forge: Forge,
        garm: &FakeGarm,
        jit: bool,
    ) -> BTreeMap<String, String> {
        let callback = garm.callback_url();
        let mut env: BTreeMap<String, String> = [
            ("GARM_CONTROLLER_ID", CONTROLLER_ID),
            ("GARM_POOL_ID", POOL_ID),
            ("GARM_INSTANCE_NAME", RUNNER_NAME),
            ("RUNNER_NAME", RUNNER_NAME),
            ("RUNNER_GROUP", ""),
            ("RUNNER_EPHEMERAL", "true"),
            ("RUNNER_NO_DEFAULT_LABELS", "true"),
            ("DISABLE_RUNNER_UPDATE", "true"),
            ("BEARER_TOKEN", INSTANCE_TOKEN),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        env.insert("METADATA_URL".into(), garm.metadata_url());
        env.insert("CALLBACK_URL".into(), callback);
        env.insert("JIT_CONFIG_ENABLED".into(), jit.to_string());
        env.insert("RUNNER_WORKDIR".into(), self.work.display().to_string());
        match forge {
            Forge::GitHub => {
                env.insert("FORGE_TYPE".into(), "github".into());
                env.insert("FORGE_URL".into(), "https://github.com/example-org".into());
                env.insert("GITHUB_URL".into(), "https://github.com".into());
                env.insert("RUNNER_ORG".into(), "example-org".into());
                let labels = if jit {
                    String::new()
                } else {
                    format!(
                        "edge,linux,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}"
                    )
                };
                env.insert("RUNNER_LABELS".into(), labels);
            }
            Forge::Gitea | Forge::Forgejo => {
                env.insert("FORGE_TYPE".into(), "gitea".into());
                let url = if forge == Forge::Gitea {
                    GITEA_URL
                } else {
                    FORGEJO_API_URL
                };
                env.insert("FORGE_URL".into(), url.into());
                env.insert(
                    "RUNNER_LABELS".into(),
                    format!(
                        "ubuntu-latest, edge:host,runner-controller-id={CONTROLLER_ID},runner-pool-id={POOL_ID}"
                    ),
                );
            }
        }
        env
    }

    /// Starts `bash entrypoint.sh` with exactly `contract` plus the harness
    /// settings (PATH with the stubs first, HOME, TMPDIR, no retry delay,
    /// sandboxed CA store and os-release) and nothing else from our own
    /// environment, in a process group of its own.
    pub fn start_entrypoint(&self, contract: &BTreeMap<String, String>) -> Running {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/runner-image/entrypoint.sh");
        let home_dir = self.root.join("home");
        std::fs::create_dir_all(&home_dir).expect("HOME");
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg(&script)
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
            )
            .env("HOME", &home_dir)
            .env("TMPDIR", &self.tmp)
            .env("RUNNER_HOME", &self.home)
            .env("ENTRYPOINT_RETRIES", "3")
            .env("ENTRYPOINT_RETRY_DELAY", "0")
            .env("ENTRYPOINT_OS_RELEASE", &self.os_release)
            .env("ENTRYPOINT_SYSTEM_CA_DIR", &self.system_ca)
            .envs(contract)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn bash");
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let stdout = tokio::spawn(async move {
            let mut text = Vec::new();
            let _ = stdout.read_to_end(&mut text).await;
            String::from_utf8_lossy(&text).into_owned()
        });
        let (tx, lines) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            stderr: Vec::new(),
            stdout,
        }
    }

    /// Runs the entrypoint as a container would until it is done: until it
    /// exits, or, once it says it stays up, until it is idle (see
    /// [`Running::wait_until_idle`]); then stops it as a deletion would.
    pub async fn run_entrypoint(&self, contract: &BTreeMap<String, String>) -> Run {
        let mut running = self.start_entrypoint(contract);
        let idle = within_hang_guard("the entrypoint to exit or stay up", async {
            running.until_line(STAYING_UP).await.is_some() && running.wait_until_idle().await
        })
        .await;
        if !idle {
            return running.finish().await;
        }
        let environ = running.environ();
        let mut run = running.stop().await;
        run.stayed_up = true;
        run.environ = environ;
        run
    }
}

/// How every line ends with which the entrypoint says it stays up without
/// doing anything more until it is deleted.
pub const STAYING_UP: &str = "staying up until GARM deletes this instance";

/// Only turns a hung entrypoint into a failing test that says what it was
/// waiting for; no test asserts how long anything takes.
const HANG_GUARD: Duration = Duration::from_secs(300);

async fn within_hang_guard<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, f)
        .await
        .unwrap_or_else(|_| panic!("still waiting for {what} after {HANG_GUARD:?}: hung"))
}

/// Waits until `cond` holds, checking it again whenever a little time has
/// passed (observable state, not a fixed sleep).
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    within_hang_guard(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
}

/// The entrypoint while it runs, its stderr read line by line as it comes.
pub struct Running {
    child: tokio::process::Child,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    stderr: Vec<String>,
    stdout: tokio::task::JoinHandle<String>,
}

impl Running {
    fn pid(&self) -> libc::pid_t {
        let pid = self.child.id().expect("the entrypoint has not been reaped");
        libc::pid_t::try_from(pid).expect("pid fits pid_t")
    }

    /// Reads stderr until a line containing `needle`, which it returns;
    /// `None` when stderr ends (the entrypoint is gone) first.
    pub async fn until_line(&mut self, needle: &str) -> Option<String> {
        while let Some(line) = self.lines.recv().await {
            self.stderr.push(line.clone());
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    }

    /// Waits until the entrypoint is what a container that stays up is: a
    /// live process whose only activity is a `sleep` child. False if it exits
    /// instead.
    pub async fn wait_until_idle(&mut self) -> bool {
        let pid = self.pid();
        loop {
            if self.child.try_wait().expect("try_wait").is_some() {
                return false;
            }
            if children_named(pid, "sleep") > 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The entrypoint process's own environment, as /proc/PID/environ shows
    /// it to anything in the container running as the same user (the job).
    pub fn environ(&self) -> BTreeMap<String, String> {
        let bytes = std::fs::read(format!("/proc/{}/environ", self.pid())).expect("read environ");
        nul_separated_env(&bytes)
    }

    /// SIGTERM, as `docker stop` and a pod deletion send it, then waits for
    /// the exit.
    pub async fn stop(self) -> Run {
        // SAFETY: kill(2) on our own live child's pid; no memory is involved.
        let rc = unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        assert_eq!(rc, 0, "SIGTERM to the entrypoint");
        self.finish().await
    }

    /// SIGKILL to the entrypoint and everything it started: a crash of the
    /// container (its processes end, its filesystem stays).
    pub async fn crash(self) -> Run {
        // SAFETY: kill(2) on the process group we made for this child.
        let rc = unsafe { libc::kill(-self.pid(), libc::SIGKILL) };
        assert_eq!(rc, 0, "SIGKILL to the entrypoint's process group");
        self.finish().await
    }

    /// Waits for the exit and for every process the entrypoint started to
    /// end, then reads the rest of the output. A process left behind fails
    /// the test naming it: outside a container (where PID 1's exit ends them
    /// all) it would live on, and it holds the output pipes open.
    pub async fn finish(mut self) -> Run {
        let group = self.pid();
        let status = within_hang_guard("the entrypoint to exit", self.child.wait())
            .await
            .expect("wait for the entrypoint");
        wait_until_group_ended(group).await;
        within_hang_guard("the entrypoint's output to end", async {
            while let Some(line) = self.lines.recv().await {
                self.stderr.push(line);
            }
            let stdout = (&mut self.stdout).await.expect("stdout reader");
            let mut stderr = self.stderr.join("\n");
            if !stderr.is_empty() {
                stderr.push('\n');
            }
            Run {
                stayed_up: false,
                status,
                stdout,
                stderr,
                environ: BTreeMap::new(),
            }
        })
        .await
    }
}

/// Waits until no live process of process group `group` (the reaped
/// entrypoint's) is left; fails naming those that stay, after killing them.
async fn wait_until_group_ended(group: libc::pid_t) {
    let ended = tokio::time::timeout(HANG_GUARD, async {
        while !group_members(group).is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    if ended.is_err() {
        let left = group_members(group);
        // SAFETY: kill(2) on the process group we made for the entrypoint.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        panic!(
            "the entrypoint exited but left {left:?} of its processes running after {HANG_GUARD:?}"
        );
    }
}

/// The live (not zombie) processes of process group `group`, as
/// "PID command line".
fn group_members(group: libc::pid_t) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let path = e.ok()?.path();
        let stat = std::fs::read_to_string(path.join("stat")).ok()?;
        let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
        let state = rest.next()?;
        let pgrp = rest.nth(1)?.parse::<libc::pid_t>().ok()?;
        if pgrp != group || state == "Z" {
            return None;
        }
        let cmdline = std::fs::read(path.join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        Some(format!(
            "{} {}",
            path.file_name()?.to_string_lossy(),
            cmdline.trim_end()
        ))
    })
    .collect()
}

impl Drop for Running {
    /// A test that fails half-way leaves no runner stub or `sleep` behind:
    /// while the entrypoint is not reaped, its pid is its process group's.
    fn drop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: kill(2) on the process group of our own unreaped child.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

/// How many live children of `parent` run the program `name` (from
/// /proc/*/stat: "PID (COMM) STATE PPID ...").
fn children_named(parent: libc::pid_t, name: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                return false;
            };
            let mut rest = stat[close + 1..].split_whitespace();
            let state = rest.next();
            let ppid = rest.next().and_then(|p| p.parse::<libc::pid_t>().ok());
            &stat[open + 1..close] == name && ppid == Some(parent) && state != Some("Z")
        })
        .count()
}

fn nul_separated_env(bytes: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(bytes)
        .split_terminator('\0')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The outcome of one entrypoint run.
pub struct Run {
    /// It said it stays up and then sat idle until the test stopped it (see
    /// [`Sandbox::run_entrypoint`]), instead of exiting on its own.
    pub stayed_up: bool,
    /// The exit status: its own, or how it ended on the test's SIGTERM.
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// Its own environment while it stayed up (see [`Running::environ`]).
    pub environ: BTreeMap<String, String>,
}

impl Run {
    /// Bootstrapped (or found nothing to do) and then stayed up, quiet: its
    /// last word is the line saying so, and a stop request ends it with 0.
    pub fn assert_stayed_up(&self) {
        assert!(
            self.stayed_up && self.status.success(),
            "the entrypoint did not stay up (status {})\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        assert!(
            self.last_line().contains(STAYING_UP),
            "the entrypoint said more after it went idle:\n{}",
            self.stderr
        );
    }

    /// Exited on its own, non-zero.
    pub fn assert_failed(&self) {
        assert!(
            !self.stayed_up && !self.status.success(),
            "the entrypoint did not fail (status {}, stayed up: {})\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stayed_up,
            self.stdout,
            self.stderr
        );
    }

    /// The last line the entrypoint wrote to stderr.
    pub fn last_line(&self) -> &str {
        self.stderr.lines().last().unwrap_or_default()
    }

    /// No secret may ever reach the container log.
    pub fn assert_no_secrets_in_output(&self) {
        for secret in [INSTANCE_TOKEN, REGISTRATION_TOKEN, DOWNLOAD_TOKEN] {
            assert!(
                !self.stdout.contains(secret) && !self.stderr.contains(secret),
                "a secret leaked into the entrypoint output\nstdout:\n{}\nstderr:\n{}",
                self.stdout,
                self.stderr
            );
        }
    }
}

pub fn write_executable(path: &Path, text: &str) {
    let mut f = std::fs::File::create(path).expect("create stub");
    f.write_all(text.as_bytes()).expect("write stub");
    drop(f);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod stub");
}

/// Asserts that the job's environment carries no GARM secret.
pub fn assert_job_env_clean(env: &BTreeMap<String, String>) {
    for var in [
        "BEARER_TOKEN",
        "METADATA_URL",
        "CALLBACK_URL",
        "RUNNER_DOWNLOAD_TOKEN",
    ] {
        assert!(!env.contains_key(var), "the job still sees {var}");
    }
    for (k, v) in env {
        for secret in [INSTANCE_TOKEN, REGISTRATION_TOKEN, DOWNLOAD_TOKEN] {
            assert!(!v.contains(secret), "the job sees a secret in {k}");
        }
    }
    assert_eq!(
        env.get("RUNNER_NAME").map(String::as_str),
        Some(RUNNER_NAME),
        "the rest of the environment must reach the job"
    );
}

// ---------------------------------------------------------------------------
// A Docker daemon's socket, as far as the entrypoint's wait looks at it

/// Answers the Docker Engine API's ping on a unix socket the way dockerd does
/// (moby/moby `api/server/router/system/system_routes.go` @02e3d3ce l. 28-42,
/// `pingHandler`: 200 with body `OK`; the `Api-Version` header comes from the
/// server's version middleware); every other path gets a 404 with a JSON
/// message. Listens until dropped. See docs/runner-contract.md "What the
/// example image does with Docker".
pub struct FakeDockerDaemon {
    pub pings: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeDockerDaemon {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeDockerDaemon {
    /// Listens on `socket` (which must not exist yet).
    pub fn start(socket: &Path) -> FakeDockerDaemon {
        let listener = tokio::net::UnixListener::bind(socket).expect("bind the docker socket");
        let pings = Arc::new(AtomicUsize::new(0));
        let counter = pings.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    // One request per connection (curl sends one), up to the
                    // end of its headers; it has no body.
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                        match conn.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf);
                    let answer = if head.starts_with("GET /_ping ")
                        || head.starts_with("HEAD /_ping ")
                    {
                        counter.fetch_add(1, Ordering::SeqCst);
                        "HTTP/1.1 200 OK\r\nApi-Version: 1.50\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK"
                    } else {
                        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 28\r\nConnection: close\r\n\r\n{\"message\":\"page not found\"}"
                    };
                    let _ = conn.write_all(answer.as_bytes()).await;
                    let _ = conn.shutdown().await;
                });
            }
        });
        FakeDockerDaemon { pings, task }
    }
}

// ---------------------------------------------------------------------------
// The fixture every entrypoint test starts from

/// One entrypoint test's world, set up in one place for every test (in the
/// manner of ripgrep's `rgtest!`): a fake GARM, a fresh sandbox, and the
/// contract environment pointing the one at the other. The test adds the
/// runner programs its image holds and any variables of its own.
pub struct World {
    pub garm: FakeGarm,
    pub sandbox: Sandbox,
    pub env: BTreeMap<String, String>,
}

impl World {
    /// A fake GARM behaving as `behaviour` over HTTP, for a `forge` runner
    /// (a JIT one if `behaviour.jit`).
    pub async fn new(forge: Forge, behaviour: Behaviour) -> World {
        Self::in_sandbox(Sandbox::new(), forge, behaviour).await
    }

    /// As [`World::new`], in a sandbox prepared beforehand (e.g. to build a
    /// download from its stub scripts).
    pub async fn in_sandbox(sandbox: Sandbox, forge: Forge, behaviour: Behaviour) -> World {
        let jit = behaviour.jit;
        let garm = FakeGarm::start(behaviour).await;
        let env = sandbox.contract_env(forge, &garm, jit);
        World { garm, sandbox, env }
    }

    /// As [`World::new`], with GARM on HTTPS under `pki`'s certificate.
    pub async fn https(forge: Forge, behaviour: Behaviour, pki: &TestPki) -> World {
        let jit = behaviour.jit;
        let garm = FakeGarm::start_https(behaviour, pki).await;
        let sandbox = Sandbox::new();
        let env = sandbox.contract_env(forge, &garm, jit);
        World { garm, sandbox, env }
    }

    /// Sets (or overrides) one variable of the container's environment.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.env.insert(name.to_string(), value.into());
    }

    /// The callback URL in its other form GARM hands out, ending in `/status`.
    pub fn use_status_callback_url(&mut self) {
        let url = format!("{}/status", self.garm.callback_url());
        self.set("CALLBACK_URL", url);
    }

    /// Runs the entrypoint (see [`Sandbox::run_entrypoint`]).
    pub async fn run(&self) -> Run {
        self.sandbox.run_entrypoint(&self.env).await
    }

    /// Runs the entrypoint and asserts that the container stayed up after its job and that no
    /// secret reached its output: what every successful run must show.
    pub async fn run_stayed_up(&self) -> Run {
        let run = self.run().await;
        run.assert_stayed_up();
        run.assert_no_secrets_in_output();
        run
    }

    /// Starts the entrypoint and leaves it running (see [`Running`]).
    pub fn start(&self) -> Running {
        self.sandbox.start_entrypoint(&self.env)
    }
}

// ---------------------------------------------------------------------------
// The command lines of the real runner programs

/// Whether a flag takes a value (`--name X`) or is a switch (`--ephemeral`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagKind {
    Bool,
    Value,
}

impl FlagKind {
    fn word(self) -> &'static str {
        match self {
            FlagKind::Bool => "bool",
            FlagKind::Value => "value",
        }
    }
}

/// One flag of a subcommand. The descriptions are ours; the names, short
/// forms and kinds are the upstream ones.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    pub long: &'static str,
    pub short: Option<char>,
    pub kind: FlagKind,
    pub help: &'static str,
}

const fn value(long: &'static str, help: &'static str) -> Flag {
    Flag {
        long,
        short: None,
        kind: FlagKind::Value,
        help,
    }
}

const fn switch(long: &'static str, help: &'static str) -> Flag {
    Flag {
        long,
        short: None,
        kind: FlagKind::Bool,
        help,
    }
}

pub struct SubCommand {
    pub name: &'static str,
    pub short: &'static str,
    /// cobra's `MaximumNArgs`.
    pub max_args: usize,
    pub flags: &'static [Flag],
}

const fn sub(
    name: &'static str,
    short: &'static str,
    max_args: usize,
    flags: &'static [Flag],
) -> SubCommand {
    SubCommand {
        name,
        short,
        max_args,
        flags,
    }
}

/// A runner program's command line, as far as the entrypoint uses it.
pub struct Cli {
    pub program: &'static str,
    /// Where the flag lists come from.
    pub source: &'static str,
    pub root_usage: &'static str,
    pub root_short: &'static str,
    /// The root command takes an event name (`MaximumNArgs(1)`), so cobra
    /// answers an unknown subcommand's `--help` with the root help, exit 0.
    pub root_takes_event_arg: bool,
    pub persistent: &'static [Flag],
    pub subcommands: &'static [SubCommand],
}

fn flag_help_line(f: &Flag) -> String {
    let short = f
        .short
        .map(|c| format!("-{c}, "))
        .unwrap_or_else(|| "    ".into());
    let arg = if f.kind == FlagKind::Value {
        " string"
    } else {
        ""
    };
    format!("  {short}--{}{arg}   {}\n", f.long, f.help)
}

const CONFIG: Flag = Flag {
    long: "config",
    short: Some('c'),
    kind: FlagKind::Value,
    help: "path of the runner's config file",
};

const WAIT: Flag = Flag {
    long: "wait",
    short: Some('w'),
    kind: FlagKind::Bool,
    help: "keep asking until a task is assigned",
};

/// `register` of forgejo-runner before 12.8 and of act_runner < 0.2.12.
const REGISTER_BASE: [Flag; 5] = [
    switch("no-interactive", "do not prompt"),
    value("instance", "forge instance URL"),
    value("token", "registration token"),
    value("name", "runner name"),
    value("labels", "comma separated labels"),
];

const REGISTER_EPHEMERAL: [Flag; 6] = [
    REGISTER_BASE[0],
    REGISTER_BASE[1],
    REGISTER_BASE[2],
    REGISTER_BASE[3],
    REGISTER_BASE[4],
    switch("ephemeral", "the forge removes the runner after one job"),
];

// forgejo-runner, early v12: project-mirrors/forgejo-runner
// internal/app/cmd/cmd.go @0988a0cb1e0b9019fcac16d4eb1d3f1203977ca0 (2025-12-10):
// root persistent --config/-c (l. 26), register flags (l. 35-39), daemon
// (l. 45) and one-job (l. 53) without flags, both MaximumNArgs(1).
const FORGEJO_EARLY_12: Cli = Cli {
    program: "forgejo-runner",
    source: "forgejo-runner early 12 (mirror cmd.go @0988a0cb)",
    root_usage: "forgejo-runner [event name to run]",
    root_short: "Forgejo runner (stub)",
    root_takes_event_arg: true,
    persistent: &[CONFIG],
    subcommands: &[
        sub("register", "register with a forge", 0, &REGISTER_BASE),
        sub("daemon", "poll for jobs", 1, &[]),
        sub("one-job", "run a single job", 1, &[]),
    ],
};

// forgejo-runner 12.8+: creator-signal/fork-forgejo-runner
// internal/app/cmd/cmd.go @bbc747c067958d52a83559da7eaa893e46dd2df4: register
// gains --ephemeral (l. 35-40), daemon still has no flags (l. 45), one-job
// gains --wait/-w (l. 62).
const FORGEJO_12_8: Cli = Cli {
    program: "forgejo-runner",
    source: "forgejo-runner 12.8+ (fork cmd.go @bbc747c0)",
    root_usage: "forgejo-runner [event name to run]",
    root_short: "Forgejo runner (stub)",
    root_takes_event_arg: true,
    persistent: &[CONFIG],
    subcommands: &[
        sub("register", "register with a forge", 0, &REGISTER_EPHEMERAL),
        sub("daemon", "poll for jobs", 1, &[]),
        sub("one-job", "run a single job", 1, &[WAIT]),
    ],
};

const FORGEJO_13_CONNECTION: [Flag; 5] = [
    value("url", "forge instance URL"),
    value("uuid", "runner UUID"),
    value("token-url", "where to read the runner token from"),
    // StringArray upstream: repeatable.
    value("label", "one label (repeatable)"),
    value("fetch-interval", "how often to ask for work"),
];

const FORGEJO_13_ONE_JOB: [Flag; 7] = [
    WAIT,
    value("handle", "ask for the job attempt with this handle"),
    FORGEJO_13_CONNECTION[0],
    FORGEJO_13_CONNECTION[1],
    FORGEJO_13_CONNECTION[2],
    FORGEJO_13_CONNECTION[3],
    FORGEJO_13_CONNECTION[4],
];

// forgejo-runner 13: creator-signal/fork-forgejo-runner
// internal/app/cmd/cmd.go @1a633ad51320631293dfcac99755b13659efe784: config
// (l. 28), register (deprecated, l. 37-42), daemon --url --uuid --token-url
// --label --fetch-interval (l. 56-60), one-job --wait/-w --handle and the same
// connection flags (l. 72-78).
const FORGEJO_13: Cli = Cli {
    program: "forgejo-runner",
    source: "forgejo-runner 13 (fork cmd.go @1a633ad5)",
    root_usage: "forgejo-runner [event name to run]",
    root_short: "Forgejo runner (stub)",
    root_takes_event_arg: true,
    persistent: &[CONFIG],
    subcommands: &[
        sub(
            "register",
            "register with a forge (deprecated)",
            0,
            &REGISTER_EPHEMERAL,
        ),
        sub("daemon", "poll for jobs", 1, &FORGEJO_13_CONNECTION),
        sub("one-job", "run a single job", 1, &FORGEJO_13_ONE_JOB),
    ],
};

// act_runner 0.2.13: chhe/act_runner internal/app/cmd/cmd.go @v0.2.13
// (8920c4a170603dc8f23e9e0d4ba0a9de13cd5f94): config (l. 27), register with
// --ephemeral (l. 37-42), daemon --once (l. 53, MaximumNArgs(0)); no one-job;
// the root command takes an event name.
const ACT_RUNNER_0_2_13: Cli = Cli {
    program: "act_runner",
    source: "act_runner 0.2.13 (cmd.go @v0.2.13)",
    root_usage: "act_runner [event name to run]",
    root_short: "Gitea act_runner (stub)",
    root_takes_event_arg: true,
    persistent: &[CONFIG],
    subcommands: &[
        sub("register", "register with a forge", 0, &REGISTER_EPHEMERAL),
        sub(
            "daemon",
            "poll for jobs",
            0,
            &[switch("once", "exit after one job")],
        ),
    ],
};

// gitea-runner 3.3.0: chhe/act_runner internal/app/cmd/cmd.go @v3.3.0
// (a0c4de79f7331189c6ab414d9575bf1187edccd9): config (l. 24), register with
// --token-file and --ephemeral (l. 34-40), daemon --once --labels (l. 51-52);
// the root command takes no arguments, so an unknown subcommand is an error.
const GITEA_RUNNER_3: Cli = Cli {
    program: "gitea-runner",
    source: "gitea-runner 3.3.0 (cmd.go @v3.3.0)",
    root_usage: "gitea-runner",
    root_short: "Gitea runner (stub)",
    root_takes_event_arg: false,
    persistent: &[CONFIG],
    subcommands: &[
        SubCommand {
            name: "register",
            short: "register with a forge",
            max_args: 0,
            flags: &[
                REGISTER_BASE[0],
                REGISTER_BASE[1],
                REGISTER_BASE[2],
                value("token-file", "file holding the registration token"),
                REGISTER_BASE[3],
                REGISTER_BASE[4],
                REGISTER_EPHEMERAL[5],
            ],
        },
        SubCommand {
            name: "daemon",
            short: "poll for jobs",
            max_args: 0,
            flags: &[
                switch("once", "exit after one job"),
                value("labels", "labels replacing the registered ones"),
            ],
        },
    ],
};

/// The runner programs the stubs imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunnerCli {
    /// forgejo-runner v12 before 12.8: no `register --ephemeral`, no `one-job --wait`.
    ForgejoEarly12,
    /// forgejo-runner 12.8+: `register --ephemeral`, `one-job --wait`.
    Forgejo12_8,
    /// forgejo-runner 13.x.
    Forgejo13,
    /// Gitea's act_runner 0.2.13.
    ActRunner0213,
    /// Gitea's runner under its current name, 3.x.
    GiteaRunner3,
}

impl RunnerCli {
    pub fn spec(self) -> &'static Cli {
        match self {
            RunnerCli::ForgejoEarly12 => &FORGEJO_EARLY_12,
            RunnerCli::Forgejo12_8 => &FORGEJO_12_8,
            RunnerCli::Forgejo13 => &FORGEJO_13,
            RunnerCli::ActRunner0213 => &ACT_RUNNER_0_2_13,
            RunnerCli::GiteaRunner3 => &GITEA_RUNNER_3,
        }
    }

    pub fn program(self) -> &'static str {
        self.spec().program
    }
}

// ---------------------------------------------------------------------------
// External tools

/// Fails the test, naming the tool, when one of `tools` is not an
/// executable on PATH. The tests calling this are `#[ignore]`d, so a plain
/// `cargo test` lists them as ignored instead of passing them unrun; with
/// `--include-ignored` (as `.ci/run` runs them) a missing tool is a failure.
pub fn require_tools(tools: &[&str]) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(message) = missing_tools(tools, &path) {
        panic!("{message}");
    }
}

/// What [`require_tools`] says when one of `tools` is not an executable in
/// `path`, or `None`.
fn missing_tools(tools: &[&str], path: &std::ffi::OsStr) -> Option<String> {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|tool| {
            !std::env::split_paths(path).any(|dir| {
                std::fs::metadata(dir.join(tool))
                    .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    .unwrap_or(false)
            })
        })
        .collect();
    if missing.is_empty() {
        return None;
    }
    // What .ci/run and .ci/docker-daemon.sh install for each tool.
    let packages: Vec<&str> = missing
        .iter()
        .map(|tool| match *tool {
            "timeout" => "coreutils",
            "busybox" => "busybox-static",
            "docker" => "docker-cli (docker.io before Debian 13)",
            "dockerd" => "docker.io",
            other => other,
        })
        .collect();
    Some(format!(
        "not installed: {}; this test needs {} (Debian packages: {}; .ci/run installs them)",
        missing.join(", "),
        tools.join(", "),
        packages.join(", ")
    ))
}

// The daemon test needs a Docker CLI and busybox beside the entrypoint's tools:
// a missing one is named, with the Debian packages that hold what is missing,
// not the list of another test.
#[test]
fn a_missing_tool_is_named_with_every_tool_its_test_needs() {
    let dir = tempfile::tempdir().expect("tempdir");
    for tool in ["bash", "curl", "jq", "timeout"] {
        let file = dir.path().join(tool);
        std::fs::write(&file, "").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = dir.path().as_os_str();
    let daemon_test = ["bash", "curl", "jq", "timeout", "docker", "busybox"];
    assert_eq!(
        missing_tools(&daemon_test, path).as_deref(),
        Some(
            "not installed: docker, busybox; this test needs bash, curl, jq, timeout, docker, busybox \
             (Debian packages: docker-cli (docker.io before Debian 13), busybox-static; .ci/run installs them)"
        )
    );
    assert_eq!(missing_tools(&daemon_test[..4], path), None);
}
