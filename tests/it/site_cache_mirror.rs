//! The site cache's registry mirror with real programs (docs/site-cache.md, "How the site cache is
//! configured" and "What the upstream serves"): Debian's `docker-registry` (the CNCF distribution
//! registry) twice on 127.0.0.1, an upstream holding one image and a pull-through mirror in front
//! of it with the environment `site_cache::registry_env` gives (only the upstream, the port and
//! the storage differ from a site's), and Debian's dockerd started with the dind sidecar's
//! `--registry-mirror` flag from `pod::dockerd_flag`. dockerd, not podman, because it is
//! the daemon the sidecar runs: its mirror rules (Docker Hub images only) are the ones under test.
//!
//! The image is pulled three times, each time by a daemon of its own with an empty store, as a
//! new runner's daemon starts: through the mirror (the site's first runner), through the mirror
//! again (a later runner), and straight from the upstream (a pool without a site cache). What the
//! upstream served in each pull is read from its access log, split by a marker request sent after
//! each pull. The figures are printed for BENCHMARKS.md ("Site cache: registry mirror").

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use garm_provider_edge_connect::site_cache;

use crate::runner_harness::require_tools;

/// How long another process is awaited (a listener, the mirror's store): only a hang meets it.
const PATIENCE: Duration = Duration::from_secs(120);
/// The image's repository on the upstream: a Docker Hub official image's path, so that the
/// daemon pulls it as `docker.io/library/…`, the only registry it asks a mirror for. Should the
/// mirror fail, the daemon's fallback to Docker Hub finds nothing there: only Docker publishes
/// under `library/`.
const REPOSITORY: &str = "library/garm-mirror-probe";
const TAG: &str = "1";
const MANIFEST_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// A process of the test, ended when the test ends, a failing one included: SIGTERM first, so
/// that dockerd stops the containerd it started, then SIGKILL if it does not end.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill(2) on our own child's pid, which is not reaped before the wait below.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let until = Instant::now() + PATIENCE;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One HTTP/1.1 request to 127.0.0.1:`port`: status, response head, body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(PATIENCE))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer.get(split + 4..).unwrap_or_default().to_vec();
    Ok((status, head, body))
}

/// One of Debian's `docker-registry` on 127.0.0.1, configured by `env` over a configuration file
/// that holds only its version: the official image's own file stands there on a site, and
/// everything the site cache sets is in the environment. Its access log (stdout) goes to a file.
struct Registry {
    _process: Reaped,
    port: u16,
    access_log: PathBuf,
    /// The marker that ended the last phase read from the access log.
    last_marker: Option<String>,
}

impl Registry {
    fn start(dir: &Path, name: &str, port: u16, env: &[(&str, String)]) -> Registry {
        let config = dir.join(format!("{name}.yml"));
        std::fs::write(&config, "version: 0.1\n").unwrap();
        let access_log = dir.join(format!("{name}.access.log"));
        let process = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            // The configuration given and nothing of the machine's: no REGISTRY_* of its own,
            // no proxy variable between the registries on 127.0.0.1.
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(File::create(&access_log).unwrap())
            .stderr(File::create(dir.join(format!("{name}.log"))).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("docker-registry does not start: {e}"));
        let mut process = Reaped(process);
        let until = Instant::now() + PATIENCE;
        while !matches!(http(port, "GET", "/v2/", &[], b""), Ok((200, _, _))) {
            let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
            assert!(
                matches!(process.0.try_wait(), Ok(None)),
                "the {name} registry exited; its log:\n{log}"
            );
            assert!(
                Instant::now() < until,
                "the {name} registry never answered on 127.0.0.1:{port}; its log:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Registry {
            _process: process,
            port,
            access_log,
            last_marker: None,
        }
    }

    /// The requests served since the last phase ended: a marker request ends this one, and
    /// every line before the marker's is the phase's.
    fn phase(&mut self, name: &str) -> Vec<Served> {
        let marker = format!("/v2/?phase={name}");
        let (status, _, _) = http(self.port, "GET", &marker, &[], b"").expect("the marker request");
        assert_eq!(status, 200, "the marker request");
        let until = Instant::now() + PATIENCE;
        loop {
            let log = std::fs::read_to_string(&self.access_log).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            if let Some(end) = lines.iter().position(|l| l.contains(&format!("{marker} "))) {
                let start = match &self.last_marker {
                    Some(last) => {
                        lines
                            .iter()
                            .position(|l| l.contains(&format!("{last} ")))
                            .expect("the last marker")
                            + 1
                    }
                    None => 0,
                };
                let served = lines[start..end]
                    .iter()
                    .map(|l| Served::parse(l).unwrap_or_else(|| panic!("an access log line: {l}")))
                    .collect();
                self.last_marker = Some(marker);
                return served;
            }
            assert!(Instant::now() < until, "the marker never reached the log");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One line of the registry's access log (the combined log format:
/// `127.0.0.1 - - [date] "GET /v2/… HTTP/1.1" 200 527 "" "agent"`).
#[derive(Debug)]
struct Served {
    method: String,
    path: String,
    status: u16,
    /// Body bytes on the wire: none for HEAD, whose logged size is the body the handler wrote
    /// and Go's server dropped.
    bytes: u64,
}

impl Served {
    fn parse(line: &str) -> Option<Served> {
        let mut quoted = line.splitn(3, '"');
        let request = quoted.nth(1)?;
        let mut after = quoted.next()?.split_whitespace();
        let mut request = request.split_whitespace();
        let method = request.next()?.to_string();
        let path = request.next()?.to_string();
        let status = after.next()?.parse().ok()?;
        let logged: u64 = after.next()?.parse().unwrap_or(0);
        let bytes = if method == "HEAD" { 0 } else { logged };
        Some(Served {
            method,
            path,
            status,
            bytes,
        })
    }

    fn is_blob(&self) -> bool {
        self.path.contains("/blobs/sha256:")
    }
}

/// What one pull made a registry serve, as BENCHMARKS.md gives it.
fn figures(served: &[Served]) -> String {
    let blob_gets = served
        .iter()
        .filter(|s| s.method == "GET" && s.is_blob())
        .count();
    let bytes: u64 = served.iter().map(|s| s.bytes).sum();
    let blob_bytes: u64 = served.iter().filter(|s| s.is_blob()).map(|s| s.bytes).sum();
    format!(
        "{} requests, {blob_gets} blob GETs, {bytes} body bytes ({blob_bytes} of blobs)",
        served.len()
    )
}

/// Debian's dockerd on a unix socket in `dir`, as the dind sidecar runs it plus what a test
/// machine needs (no iptables, no bridge, vfs storage on any filesystem), and its CLI.
struct Daemon {
    /// Taken when the daemon is dropped, to stop it before what it made is removed.
    process: Option<Reaped>,
    host: String,
    cli_config: PathBuf,
    /// Whether this daemon made /run/docker: dockerd makes its plugin socket directory
    /// /run/docker/plugins whatever its exec root, which is removed again when empty.
    made_run_docker: bool,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        drop(self.process.take());
        if self.made_run_docker {
            let _ = std::fs::remove_dir(RUN_DOCKER_PLUGINS);
            let _ = std::fs::remove_dir(RUN_DOCKER);
        }
    }
}

const RUN_DOCKER: &str = "/run/docker";
const RUN_DOCKER_PLUGINS: &str = "/run/docker/plugins";

impl Daemon {
    fn start(dir: &Path, mirror_flag: &str) -> Daemon {
        // Its own configuration file, not the machine's; Debian 12's dockerd (20.10) would
        // otherwise write its key to /etc/docker (later versions skip the key).
        let daemon_json = dir.join("daemon.json");
        let config = serde_json::json!({ "deprecated-key-path": dir.join("key.json") });
        std::fs::write(&daemon_json, config.to_string()).unwrap();
        let socket = dir.join("docker.sock");
        let host = format!("unix://{}", socket.display());
        let log = dir.join("dockerd.log");
        let made_run_docker = !Path::new(RUN_DOCKER).exists();
        let process = Command::new("dockerd")
            .arg(format!("--host={host}"))
            .arg(format!("--data-root={}", dir.join("data").display()))
            .arg(format!("--exec-root={}", dir.join("exec").display()))
            .arg(format!("--pidfile={}", dir.join("dockerd.pid").display()))
            .arg(format!("--config-file={}", daemon_json.display()))
            .args([
                "--iptables=false",
                "--ip6tables=false",
                "--bridge=none",
                "--storage-driver=vfs",
            ])
            .arg(mirror_flag)
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("dockerd does not start: {e}"));
        let mut process = Reaped(process);
        let cli_config = dir.join("cli");
        let until = Instant::now() + PATIENCE;
        while !docker(&host, &cli_config, &["version"]).status.success() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                matches!(process.0.try_wait(), Ok(None)),
                "dockerd exited; its log:\n{text}"
            );
            assert!(
                Instant::now() < until,
                "dockerd never answered; its log:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Daemon {
            process: Some(process),
            host,
            cli_config,
            made_run_docker,
        }
    }

    /// `docker args`, which must succeed; its stdout.
    fn run(&self, args: &[&str]) -> String {
        let out = docker(&self.host, &self.cli_config, args);
        assert!(
            out.status.success(),
            "docker {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Pulls `image`; the digest the pull reports.
    fn pull(&self, image: &str) -> String {
        let out = self.run(&["pull", image]);
        out.lines()
            .find_map(|l| l.strip_prefix("Digest: "))
            .unwrap_or_else(|| panic!("no digest in the pull's output: {out}"))
            .to_string()
    }
}

/// The Docker CLI against the daemon at `host`, with a configuration of the test's own.
fn docker(host: &str, cli_config: &Path, args: &[&str]) -> Output {
    Command::new("docker")
        .arg(format!("--host={host}"))
        .args(args)
        .env("DOCKER_CONFIG", cli_config)
        .output()
        .unwrap_or_else(|e| panic!("docker does not run: {e}"))
}

/// A blob of the image: its digest and size, as the manifest gives them.
struct Blob {
    digest: String,
    size: u64,
}

/// What `served` holds for `blob`: each GET of it, which must be whole.
fn gets_of<'a>(served: &'a [Served], blob: &Blob) -> Vec<&'a Served> {
    let got: Vec<&Served> = served
        .iter()
        .filter(|s| s.method == "GET" && s.path.ends_with(&format!("/blobs/{}", blob.digest)))
        .collect();
    for s in &got {
        assert_eq!(
            (s.status, s.bytes),
            (200, blob.size),
            "{} served whole",
            blob.digest
        );
    }
    got
}

#[test]
#[ignore = "needs docker-registry and a Docker daemon (dockerd from docker.io): .ci/run installs them"]
fn a_second_pull_through_the_site_mirror_reads_no_blob_from_the_upstream() {
    require_tools(&["docker-registry", "dockerd", "docker", "busybox", "tar"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let upstream_port = free_port();
    let mirror_port = std::iter::repeat_with(free_port)
        .find(|p| *p != upstream_port)
        .expect("a second free port");
    let mut upstream = Registry::start(
        root,
        "upstream",
        upstream_port,
        &[
            (
                "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY",
                root.join("upstream-store").display().to_string(),
            ),
            ("REGISTRY_HTTP_ADDR", format!("127.0.0.1:{upstream_port}")),
        ],
    );
    // The site's mirror, its upstream this test's registry instead of Docker Hub.
    let mirror_store = root.join("mirror-store");
    let mirror_address = format!("127.0.0.1:{mirror_port}");
    let mut mirror = Registry::start(
        root,
        "mirror",
        mirror_port,
        &site_cache::registry_env(
            &format!("http://127.0.0.1:{upstream_port}"),
            &mirror_address,
            &mirror_store.display().to_string(),
        ),
    );
    // A daemon of its own for each runner, started with an empty store as a new runner's dind
    // is (a daemon that removed an image may still hold its manifest), stopped after its pull.
    let mirror_flag = garm_provider_edge_connect::pod::dockerd_flag(&site_cache::mirror_url(
        &mirror_address,
        false,
    ));
    let fresh_daemon = |name: &str| {
        let dir = root.join(name);
        std::fs::create_dir(&dir).unwrap();
        Daemon::start(&dir, &mirror_flag)
    };

    // The upstream's image: busybox-static's binary alone, put there by the daemon itself.
    let rootfs = root.join("rootfs");
    std::fs::create_dir_all(rootfs.join("bin")).unwrap();
    let busybox = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("busybox"))
        .find(|p| p.is_file())
        .expect("busybox on PATH");
    std::fs::copy(&busybox, rootfs.join("bin/busybox")).unwrap();
    let tarball = root.join("rootfs.tar");
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg(&tarball)
        .arg(".")
        .status()
        .expect("tar runs");
    assert!(tar.success(), "tar failed");
    let upstream_image = format!("127.0.0.1:{upstream_port}/{REPOSITORY}:{TAG}");
    let publisher = fresh_daemon("publisher");
    publisher.run(&["import", &tarball.display().to_string(), &upstream_image]);
    publisher.run(&["push", &upstream_image]);
    drop(publisher);
    let (status, head, manifest) = http(
        upstream_port,
        "GET",
        &format!("/v2/{REPOSITORY}/manifests/{TAG}"),
        &[("Accept", MANIFEST_TYPE)],
        b"",
    )
    .expect("the upstream's manifest");
    assert_eq!(status, 200, "the upstream's manifest: {head}");
    let manifest_digest = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("docker-content-digest: ")
                .map(str::to_string)
        })
        .expect("the manifest's digest");
    let parsed: serde_json::Value = serde_json::from_slice(&manifest).expect("manifest JSON");
    let blob = |v: &serde_json::Value| Blob {
        digest: v["digest"].as_str().expect("a digest").to_string(),
        size: v["size"].as_u64().expect("a size"),
    };
    let mut blobs = vec![blob(&parsed["config"])];
    blobs.extend(
        parsed["layers"]
            .as_array()
            .expect("layers")
            .iter()
            .map(blob),
    );
    upstream.phase("setup");
    mirror.phase("setup");

    // The site's first runner: the daemon asks the mirror, which fetches from the upstream.
    let hub_image = format!("{}:{TAG}", REPOSITORY.trim_start_matches("library/"));
    assert_eq!(fresh_daemon("first").pull(&hub_image), manifest_digest);
    // Debian's registry (2.8) stores a blob in a task of its own, after the client was served
    // (docs/site-cache.md, "What the upstream serves"): a later runner finds it once stored.
    for blob in &blobs {
        let hex = blob.digest.trim_start_matches("sha256:");
        let data = mirror_store
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data");
        let until = Instant::now() + PATIENCE;
        while !data.is_file() {
            assert!(
                Instant::now() < until,
                "the mirror never stored {}",
                blob.digest
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let first = upstream.phase("first-pull");
    let first_at_mirror = mirror.phase("first-pull");
    for blob in &blobs {
        let fetched = gets_of(&first, blob).len();
        // Once to serve the daemon and store at once (3.0); once more for the store (2.8).
        assert!(
            (1..=2).contains(&fetched),
            "{} fetched {fetched} times from the upstream: {first:?}",
            blob.digest
        );
        assert_eq!(
            gets_of(&first_at_mirror, blob).len(),
            1,
            "{first_at_mirror:?}"
        );
    }

    // A later runner of the site: a fresh store, the same mirror.
    assert_eq!(fresh_daemon("second").pull(&hub_image), manifest_digest);
    let second = upstream.phase("second-pull");
    let second_at_mirror = mirror.phase("second-pull");
    for blob in &blobs {
        assert_eq!(
            gets_of(&second_at_mirror, blob).len(),
            1,
            "the daemon got {} from the mirror: {second_at_mirror:?}",
            blob.digest
        );
    }
    let tag_path = format!("/v2/{REPOSITORY}/manifests/{TAG}");
    let unexpected: Vec<&Served> = second
        .iter()
        .filter(|s| {
            !(s.method == "GET" && s.path == "/v2/" || s.method == "HEAD" && s.path == tag_path)
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "the second pull read more than the tag from the upstream: {unexpected:?}"
    );
    let tag_checks = second.iter().filter(|s| s.method == "HEAD").count();
    let tag_asks = second_at_mirror
        .iter()
        .filter(|s| s.path == tag_path)
        .count();
    assert!(
        tag_asks >= 1,
        "the daemon asked the mirror for the tag: {second_at_mirror:?}"
    );
    assert_eq!(
        tag_checks, tag_asks,
        "one HEAD of the tag upstream per ask of the tag at the mirror: {second:?}"
    );

    // A pool without a site cache: the same image straight from the upstream. The daemon asks
    // no mirror for a registry other than Docker Hub.
    assert_eq!(
        fresh_daemon("direct").pull(&upstream_image),
        manifest_digest
    );
    let direct = upstream.phase("direct-pull");
    let direct_at_mirror = mirror.phase("direct-pull");
    assert!(
        direct_at_mirror.is_empty(),
        "the daemon asked the mirror for a non-Docker Hub image: {direct_at_mirror:?}"
    );
    for blob in &blobs {
        assert_eq!(gets_of(&direct, blob).len(), 1, "{direct:?}");
    }

    println!(
        "upstream, first pull through the mirror: {}",
        figures(&first)
    );
    println!(
        "upstream, second pull through the mirror: {}",
        figures(&second)
    );
    println!("upstream, direct pull: {}", figures(&direct));
    println!("mirror, second pull: {}", figures(&second_at_mirror));

    // Nothing can be pushed to the mirror: neither a blob upload nor a manifest.
    let (status, head, body) = http(
        mirror_port,
        "POST",
        &format!("/v2/{REPOSITORY}/blobs/uploads/"),
        &[],
        b"",
    )
    .expect("an upload at the mirror");
    assert_eq!(
        status,
        405,
        "a blob upload at the mirror: {head}\n{}",
        String::from_utf8_lossy(&body)
    );
    let (status, head, body) = http(
        mirror_port,
        "PUT",
        &format!("/v2/{REPOSITORY}/manifests/pushed"),
        &[("Content-Type", MANIFEST_TYPE)],
        &manifest,
    )
    .expect("a manifest put at the mirror");
    assert_eq!(
        status,
        405,
        "a manifest put at the mirror: {head}\n{}",
        String::from_utf8_lossy(&body)
    );
    assert!(String::from_utf8_lossy(&body).contains("UNSUPPORTED"));
}
