//! Shared harness for process-level tests: a simulator on 127.0.0.1, a provider config pointing
//! at it, and a way to run the built binary exactly as GARM does (bare environment, stdin,
//! exit codes).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use edge_connect_sim::{self as sim, ApiGeneration, SimConfig, SimHandle};

/// The controller the tests act for.
pub const CONTROLLER: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";
/// The pool of the GitHub fixture.
pub const POOL: &str = "9dcf590a-1192-4a9c-b3e4-e0902974c2c0";
/// The pool of the Gitea fixture.
pub const GITEA_POOL: &str = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";
/// Credentials the simulator accepts.
pub const USER: &str = "garm";
/// Password the simulator accepts; must never appear in any output.
pub const PASSWORD: &str = "garm-password";

/// Where the runner is placed.
#[derive(Clone, Copy, Debug)]
pub enum Site {
    /// `[edge_connect.zone]` (newer API).
    Zone,
    /// `[edge_connect.cloudlet]` (older API).
    Cloudlet,
}

/// One simulator + one provider config.
pub struct World {
    pub sim: SimHandle,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub log: PathBuf,
}

/// A provider run's result.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }

    /// `(name, status)` of each instance a ListInstances printed, in its order.
    pub fn statuses(&self) -> Vec<(String, String)> {
        let list = self.json();
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        list.as_array()
            .unwrap_or_else(|| panic!("not a list: {}", self.stdout))
            .iter()
            .map(|i| (text(&i["name"]), text(&i["status"])))
            .collect()
    }
}

impl World {
    /// A gen3 simulator with a zone placement.
    pub fn new() -> World {
        World::with(ApiGeneration::Gen3, Site::Zone, "")
    }

    /// Any generation and placement; `extra_config` is appended to `[edge_connect]`.
    pub fn with(api: ApiGeneration, site: Site, extra_config: &str) -> World {
        let config = SimConfig {
            api,
            ..SimConfig::default()
        };
        World::with_sim(config, site, extra_config)
    }

    /// A simulator configured by the test.
    pub fn with_sim(config: SimConfig, site: Site, extra_config: &str) -> World {
        let sim = sim::spawn(config).expect("simulator starts");
        World::around(sim, site, extra_config)
    }

    /// A config around an already running simulator.
    pub fn around(sim: SimHandle, site: Site, extra_config: &str) -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let (config, log) = write_provider_config(dir.path(), &sim.url(), site, extra_config);
        World {
            sim,
            dir,
            config,
            log,
        }
    }

    /// Rewrites the credentials file with this password and mode; returns its path.
    pub fn write_credentials(&self, password: &str, mode: u32) -> PathBuf {
        let path = self.dir.path().join("credentials.toml");
        write_mode(
            &path,
            &format!("username = \"{USER}\"\npassword = \"{password}\"\n"),
            mode,
        );
        path
    }

    /// The CLI as a person runs it against this world: a bare environment, cwd `/`, the world's
    /// config and `controller` as flags; the command's arguments and pipes are the caller's.
    pub fn person(&self, controller: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_garm-provider-edge-connect"));
        cmd.env_clear()
            .current_dir("/")
            .arg("--config")
            .arg(&self.config)
            .args(["--controller-id", controller]);
        cmd
    }

    /// Runs the provider as GARM does: no arguments, only the given variables, cwd `/`.
    pub fn garm(&self, command: &str, vars: &[(&str, &str)], stdin: Option<&str>) -> Run {
        let mut all: Vec<(String, String)> = vec![
            ("GARM_COMMAND".into(), command.into()),
            ("GARM_CONTROLLER_ID".into(), CONTROLLER.into()),
            (
                "GARM_PROVIDER_CONFIG_FILE".into(),
                self.config.display().to_string(),
            ),
        ];
        for (k, v) in vars {
            all.retain(|(name, _)| name != k);
            all.push((k.to_string(), v.to_string()));
        }
        run_binary(&all, stdin)
    }

    /// Starts the provider as GARM does without waiting for it (to kill it mid-way).
    pub fn spawn_garm(
        &self,
        command: &str,
        vars: &[(&str, &str)],
        stdin: &str,
    ) -> std::process::Child {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_garm-provider-edge-connect"));
        cmd.env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("GARM_COMMAND", command)
            .env("GARM_CONTROLLER_ID", CONTROLLER)
            .env("GARM_PROVIDER_CONFIG_FILE", &self.config);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("provider starts");
        if let Some(mut pipe) = child.stdin.take() {
            pipe.write_all(stdin.as_bytes()).expect("write stdin");
        }
        child
    }

    /// Number of requests of one RPC in the simulator's log.
    pub fn calls(&self, rpc: &str) -> usize {
        self.sim
            .request_log()
            .iter()
            .filter(|e| e.rpc == rpc)
            .count()
    }

    /// Runs the provider as another GARM controller would.
    pub fn garm_as(
        &self,
        controller: &str,
        command: &str,
        vars: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Run {
        let mut all = vec![("GARM_CONTROLLER_ID", controller)];
        all.extend_from_slice(vars);
        self.garm(command, &all, stdin)
    }

    /// CreateInstance with a fixture from examples/ (name and pool may be replaced).
    pub fn create(&self, fixture: &str, name: &str, pool: &str, vars: &[(&str, &str)]) -> Run {
        let bootstrap = fixture_with(fixture, name, pool);
        let mut all = vec![("GARM_POOL_ID", pool)];
        all.extend_from_slice(vars);
        self.garm("CreateInstance", &all, Some(&bootstrap))
    }

    /// Names of the Apps on the simulator (all organizations).
    pub fn app_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .sim
            .apps()
            .iter()
            .filter_map(|a| a["key"]["name"].as_str().map(String::from))
            .collect();
        names.sort();
        names
    }

    /// Names of the AppInsts on the simulator.
    pub fn app_inst_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .sim
            .app_insts()
            .iter()
            .filter_map(|a| a["key"]["name"].as_str().map(String::from))
            .collect();
        names.sort();
        names
    }

    /// The stored App with this name.
    pub fn app(&self, name: &str) -> serde_json::Value {
        self.sim
            .apps()
            .into_iter()
            .find(|a| a["key"]["name"] == name)
            .unwrap_or_else(|| panic!("no App {name}"))
    }

    /// The provider's log file content.
    /// Asserts that the log file cannot be opened for `why` and that this costs no command:
    /// ListInstances runs silently, and a failure's one stderr line names the log's problem.
    pub fn assert_log_refused(&self, why: &str) {
        let r = self.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
        assert_eq!(
            (r.code, r.stdout.as_str(), r.stderr.as_str()),
            (0, "[]", "")
        );
        let r = self.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-nope")], None);
        assert_eq!(r.code, 30);
        assert_eq!(
            r.stderr,
            format!(
                "instance garm-nope not found (also: cannot open log_file {}: {why})\n",
                self.log.display()
            )
        );
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Asserts no secret reached stdout, stderr or the log.
    pub fn assert_no_secrets(&self, runs: &[&Run]) {
        let log = self.log_text();
        let mut texts: Vec<(&str, &str)> = vec![("log", &log)];
        for r in runs {
            texts.push(("stdout", &r.stdout));
            texts.push(("stderr", &r.stderr));
        }
        for (what, text) in texts {
            for secret in secrets() {
                assert!(
                    !text.contains(secret),
                    "{what} contains a secret ({}…): {text}",
                    &secret[..6]
                );
            }
            // Every JWT (Edge Connect token, GARM instance token) starts like this.
            assert!(
                !text.contains("eyJhbGciOi"),
                "{what} contains a JWT: {text}"
            );
        }
    }
}

/// Values that must never be printed or logged.
pub fn secrets() -> Vec<&'static str> {
    vec![PASSWORD, "proxy-pass", "c2lnbmF0dXJlLW5vdC12ZXJpZmllZA"]
}

/// The provider binary as GARM starts it: exactly these environment variables, `/` as its
/// working directory, pipes for stdin, stdout and stderr.
pub fn provider_command(vars: &[(String, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_garm-provider-edge-connect"));
    cmd.env_clear()
        .current_dir("/")
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs the provider binary with exactly these environment variables.
pub fn run_binary(vars: &[(String, String)], stdin: Option<&str>) -> Run {
    let mut child = provider_command(vars).spawn().expect("provider starts");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(input) = stdin {
            // The provider stops reading at its input limit; a broken pipe is then expected.
            if let Err(e) = pipe.write_all(input.as_bytes()) {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
            }
        }
    }
    child.wait_with_output().expect("provider finishes").into()
}

/// A fixture from examples/ with `name` and `pool_id` replaced.
pub fn fixture_with(fixture: &str, name: &str, pool: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(fixture);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture"))
            .expect("fixture JSON");
    v["name"] = name.into();
    v["pool_id"] = pool.into();
    v.to_string()
}

/// Writes a file with a mode.
pub fn write_mode(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
}

/// Writes `provider.toml` and a 0600 `credentials.toml` into `dir` for an Edge Connect at `url`
/// (the default simulator's user, organization, region and flavor; the log and token cache in
/// `dir`) with the simulator's one config writer; `extra_config` is appended to
/// `[edge_connect]`. Returns the config and log paths.
pub fn write_provider_config(
    dir: &Path,
    url: &str,
    site: Site,
    extra_config: &str,
) -> (PathBuf, PathBuf) {
    let mut config =
        sim::ProviderConfig::for_sim(url, &SimConfig::default(), dir).expect("a default config");
    let (_, org, name) = config.site.clone();
    config.site = match site {
        Site::Zone => (sim::SiteTable::Zone, org, name),
        Site::Cloudlet => (sim::SiteTable::Cloudlet, org, name),
    };
    config.edge_connect_lines = extra_config.to_string();
    sim::write_credentials(&config.credentials_file, USER, PASSWORD).expect("write credentials");
    let path = dir.join("provider.toml");
    config.write(&path).expect("write config");
    (path, config.log_file.expect("a log file"))
}

/// A simulator with two zones, TelekomOP/Munich and TelekomOP/Berlin, each holding the cloudlet
/// of its name: the smallest world with a next site to fail over to.
pub fn two_zones() -> SimConfig {
    SimConfig {
        zones: vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ],
        cloudlets: vec![
            ("TelekomOP".into(), "Munich".into()),
            ("TelekomOP".into(), "Berlin".into()),
        ],
        ..SimConfig::default()
    }
}
