//! The one test world, shared by the process-level tests and the benchmark (which includes this
//! file): a provider config around an Edge Connect (the simulator or a fake server), and the
//! built binary started as GARM starts it (bare environment, `GARM_*` variables, bootstrap JSON
//! on stdin, exit codes) or as a person does (arguments).

use std::io::Write;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use edge_connect_sim::{
    self as sim, ApiGeneration, CloudletSettings, ImageFault, ImageRule, SimConfig, SimHandle,
};

/// Where the runner is placed: `[edge_connect.zone]` (newer API) or `[edge_connect.cloudlet]`.
pub use edge_connect_sim::SiteTable as Site;

/// The built provider.
pub const BIN: &str = env!("CARGO_BIN_EXE_garm-provider-edge-connect");
/// The controller the tests act for.
pub const CONTROLLER: &str = "f9286791-1589-4f39-a106-5b68c2a18af4";
/// The pool of the GitHub fixture.
pub const POOL: &str = "9dcf590a-1192-4a9c-b3e4-e0902974c2c0";
/// The pool of the Gitea fixture.
pub const GITEA_POOL: &str = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";
/// The image of the GitHub fixture.
pub const IMAGE: &str = "ghcr.io/example-org/garm-runner:2.330.0";
/// Credentials the simulator accepts.
pub const USER: &str = "garm";
/// Password the simulator accepts; must never appear in any output.
pub const PASSWORD: &str = "garm-password";

/// A provider process still running after this long is hung and killed, and so is a wait for
/// an event that never comes: far beyond any deadline a test sets, so that only a hang meets
/// it, however loaded the machine is.
pub const HANG: Duration = Duration::from_secs(600);

/// A provider config in its own directory, with its credentials, log file and token cache.
pub struct Provider {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub log: PathBuf,
    /// What `config` holds.
    pub written: sim::ProviderConfig,
}

/// A provider run's result.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// One simulator and one provider config around it.
pub struct World {
    pub sim: SimHandle,
    provider: Provider,
}

impl Deref for World {
    type Target = Provider;

    fn deref(&self) -> &Provider {
        &self.provider
    }
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

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Provider {
    /// A config for an Edge Connect at `url` with the default simulator's user, organization,
    /// region and flavor; `extra_config` is appended to `[edge_connect]`.
    pub fn at(url: &str, site: Site, extra_config: &str) -> Provider {
        let dir = tempfile::tempdir().expect("tempdir");
        Provider::in_dir(dir, url, |c| {
            c.site.0 = site;
            c.edge_connect_lines = extra_config.to_string();
        })
    }

    /// The config of [`sim::ProviderConfig::for_sim`] as `edit` leaves it, and a 0600
    /// credentials file, written into `dir` (which also holds the log and the token cache).
    pub fn in_dir(
        dir: tempfile::TempDir,
        url: &str,
        edit: impl FnOnce(&mut sim::ProviderConfig),
    ) -> Provider {
        let mut written = sim::ProviderConfig::for_sim(url, &SimConfig::default(), dir.path())
            .expect("a default config");
        edit(&mut written);
        sim::write_credentials(&written.credentials_file, USER, PASSWORD)
            .expect("write credentials");
        let config = dir.path().join("provider.toml");
        written.write(&config).expect("write config");
        let log = written.log_file.clone().unwrap_or_default();
        Provider {
            dir,
            config,
            log,
            written,
        }
    }

    /// Rewrites the config: `edit` gets the text and returns the new one.
    pub fn edit_config(&self, edit: impl FnOnce(&str) -> String) {
        let text = std::fs::read_to_string(&self.config).expect("config");
        std::fs::write(&self.config, edit(&text)).expect("write config");
    }

    /// Rewrites the credentials file with this password and mode; returns its path.
    pub fn write_credentials(&self, password: &str, mode: u32) -> PathBuf {
        let path = self.written.credentials_file.clone();
        write_mode(
            &path,
            &format!("username = \"{USER}\"\npassword = \"{password}\"\n"),
            mode,
        );
        path
    }

    /// The CLI as a person runs it against this config: [`command`] with `--config`; the
    /// command's arguments and pipes are the caller's.
    pub fn cli_command(&self) -> Command {
        let mut cmd = command();
        cmd.arg("--config").arg(&self.config);
        cmd
    }

    /// [`Provider::cli_command`] for the controller `controller`.
    pub fn person(&self, controller: &str) -> Command {
        let mut cmd = self.cli_command();
        cmd.args(["--controller-id", controller]);
        cmd
    }

    /// Runs the CLI with `--config` and `args` (no controller id) to its end.
    pub fn cli(&self, args: &[&str]) -> Run {
        run(self.cli_command().args(args), None)
    }

    /// Runs the provider as GARM does: no arguments, only GARM's variables for this config
    /// (`vars` add to or replace them), cwd `/`.
    pub fn garm(&self, command: &str, vars: &[(&str, &str)], stdin: Option<&str>) -> Run {
        run_binary(&garm_env(command, &self.config, vars), stdin)
    }

    /// Starts the provider as GARM does and hands it `stdin`, without waiting for it (to
    /// signal it or to kill it mid-way).
    pub fn spawn_garm(&self, command: &str, vars: &[(&str, &str)], stdin: &str) -> Child {
        start(
            &mut provider_command(&garm_env(command, &self.config, vars)),
            Some(stdin.as_bytes()),
        )
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

    /// The provider's log file content.
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
        let provider = Provider::at(&sim.url(), site, extra_config);
        World { sim, provider }
    }

    /// Number of requests of one RPC in the simulator's log.
    pub fn calls(&self, rpc: &str) -> usize {
        self.sim
            .request_log()
            .iter()
            .filter(|e| e.rpc == rpc)
            .count()
    }

    /// Names of the Apps on the simulator (all organizations).
    pub fn app_names(&self) -> Vec<String> {
        names(self.sim.apps())
    }

    /// Names of the AppInsts on the simulator.
    pub fn app_inst_names(&self) -> Vec<String> {
        names(self.sim.app_insts())
    }

    /// CreateInstance of the GitHub fixture `name` as `edit` leaves its JSON.
    pub fn create_edited(&self, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Run {
        let mut v: serde_json::Value =
            serde_json::from_str(&fixture_with("bootstrap-github-jit.json", name, POOL))
                .expect("fixture JSON");
        edit(&mut v);
        self.garm(
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            Some(&v.to_string()),
        )
    }

    /// CreateInstance of the GitHub fixture `name` with `image` and, when given, these extra
    /// specs.
    pub fn create_image(&self, name: &str, image: &str, specs: Option<serde_json::Value>) -> Run {
        self.create_edited(name, |v| {
            v["image"] = image.into();
            if let Some(specs) = specs {
                v["extra_specs"] = specs;
            }
        })
    }

    /// (name, zone, state) of every AppInst on the simulator, sorted by name.
    pub fn app_insts_where(&self) -> Vec<(String, String, String)> {
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let mut insts: Vec<_> = self
            .sim
            .app_insts()
            .iter()
            .map(|i| {
                (
                    text(&i["key"]["name"]),
                    text(&i["zone_key"]["name"]),
                    text(&i["state"]),
                )
            })
            .collect();
        insts.sort();
        insts
    }

    /// Asserts that nothing is left on the simulator: no App, no AppInst.
    pub fn assert_nothing_left(&self) {
        let none: (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        assert_eq!((self.app_names(), self.app_inst_names()), none, "left");
    }

    /// The stored App with this name.
    pub fn app(&self, name: &str) -> serde_json::Value {
        self.sim
            .apps()
            .into_iter()
            .find(|a| a["key"]["name"] == name)
            .unwrap_or_else(|| panic!("no App {name}"))
    }

    /// Waits until the simulator holds an AppInst.
    pub fn until_an_app_inst(&self) {
        wait_until("an AppInst", || !self.app_inst_names().is_empty());
    }

    /// Waits until the AppInst `name` has left `Creating` (the site's CRM let it go).
    pub fn until_created(&self, name: &str) {
        wait_until(&format!("AppInst {name} ends Creating"), || {
            !self
                .sim
                .app_insts()
                .iter()
                .any(|i| i["key"]["name"] == name && i["state"] == "Creating")
        });
    }
}

fn names(objects: Vec<serde_json::Value>) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .filter_map(|a| a["key"]["name"].as_str().map(String::from))
        .collect();
    names.sort();
    names
}

/// Values that must never be printed or logged.
/// Asserts that `text` holds `part`, showing the text when it does not.
#[track_caller]
pub fn assert_has(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is not in: {text}");
}

/// Asserts that `text` starts with `start`, showing the text when it does not.
#[track_caller]
pub fn assert_starts(text: &str, start: &str) {
    assert!(text.starts_with(start), "{start:?} does not start: {text}");
}

pub fn secrets() -> Vec<&'static str> {
    vec![PASSWORD, "proxy-pass", "c2lnbmF0dXJlLW5vdC12ZXJpZmllZA"]
}

/// The built binary as GARM and a person start it: an empty environment and `/` as its working
/// directory; arguments, variables and pipes are the caller's.
pub fn command() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear().current_dir("/");
    cmd
}

/// GARM's variables for `command` with the provider config `config`: `GARM_COMMAND`,
/// `GARM_CONTROLLER_ID` and `GARM_PROVIDER_CONFIG_FILE`, then `vars`, which add to them or
/// replace them.
pub fn garm_env(command: &str, config: &Path, vars: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = vec![
        ("GARM_COMMAND".into(), command.into()),
        ("GARM_CONTROLLER_ID".into(), CONTROLLER.into()),
        (
            "GARM_PROVIDER_CONFIG_FILE".into(),
            config.display().to_string(),
        ),
    ];
    for (k, v) in vars {
        all.retain(|(name, _)| name != k);
        all.push((k.to_string(), v.to_string()));
    }
    all
}

/// The provider binary as GARM starts it: exactly these environment variables.
pub fn provider_command(vars: &[(String, String)]) -> Command {
    let mut cmd = command();
    cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    cmd
}

/// Runs the provider binary with exactly these environment variables.
pub fn run_binary(vars: &[(String, String)], stdin: Option<&str>) -> Run {
    run(&mut provider_command(vars), stdin.map(str::as_bytes))
}

/// Starts `cmd` with pipes for stdin, stdout and stderr, writes `stdin` and closes it.
pub fn start(cmd: &mut Command, stdin: Option<&[u8]>) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("provider starts");
    let mut pipe = child.stdin.take().expect("stdin");
    // The provider stops reading at its input limit; a broken pipe is then expected.
    if let Err(e) = pipe.write_all(stdin.unwrap_or_default()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    child
}

/// Runs `cmd` ([`start`]) to its end ([`finish`]).
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Run {
    finish(start(cmd, stdin))
}

/// Waits for a child with piped stdout and stderr to end; kills it, and fails, if it hangs
/// ([`HANG`]).
pub fn finish(child: Child) -> Run {
    let pid = child.id() as libc::pid_t;
    let (ended, end) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        let hung = end.recv_timeout(HANG).is_err();
        if hung {
            // SAFETY: our own child, not yet reaped (the waiting thread is still waiting).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        hung
    });
    let out = child.wait_with_output().expect("provider finishes");
    // The guard may have ended already, having killed the process: then nobody receives.
    let _ = ended.send(());
    assert!(
        !guard.join().expect("guard"),
        "the provider hung for more than {HANG:?} and was killed"
    );
    out.into()
}

/// Sends `signal` to a child.
pub fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: signalling our own child by its pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    assert_eq!(rc, 0);
}

/// Reads `child`'s stderr line by line and sends it `sig` at the first line that contains
/// `needle`; the thread returns every line.
pub fn signal_at_line(
    child: &mut Child,
    needle: &'static str,
    sig: libc::c_int,
) -> std::thread::JoinHandle<Vec<String>> {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("stderr");
    let pid = child.id() as libc::pid_t;
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            if line.contains(needle) && !seen.iter().any(|l: &String| l.contains(needle)) {
                // SAFETY: our own child, not reaped before its stderr has ended.
                unsafe { libc::kill(pid, sig) };
            }
            seen.push(line);
        }
        seen
    })
}

/// Waits until `done` holds (polling it); fails after [`HANG`], which only a lost event reaches.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < HANG, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// Adds `line` to the `[edge_connect]` table of a config's text.
pub fn in_edge_connect(text: &str, line: &str) -> String {
    text.replacen("[edge_connect]\n", &format!("[edge_connect]\n{line}\n"), 1)
}

/// Writes a file with a mode.
pub fn write_mode(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A file's permission bits.
pub fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
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

/// Extra specs that list these zones of TelekomOP, in this order.
pub fn zones(names: &[&str]) -> serde_json::Value {
    let zones: Vec<_> = names
        .iter()
        .map(|n| serde_json::json!({"organization": "TelekomOP", "name": n}))
        .collect();
    serde_json::json!({ "zones": zones })
}

/// The sites of TelekomOP named `sites` (a zone holding a cloudlet of the same name each),
/// their CRMs central or on the edge, each waiting `wait` for a pod (15 minutes for real,
/// docs/edge-connect-behaviours.md B12; kubelet's back-off and the CRM's polling shrink with
/// it); images `registry.example.com/*` cannot be pulled, `*:crash` crash, `*:big` are placed
/// on no node.
pub fn crm_waiting(sites: &[&str], central: bool, wait: Duration) -> SimConfig {
    let owned = |n: &&str| ("TelekomOP".to_string(), n.to_string());
    SimConfig {
        zones: sites.iter().map(owned).collect(),
        cloudlets: sites.iter().map(owned).collect(),
        cloudlet_settings: sites
            .iter()
            .map(|n| CloudletSettings {
                crm_on_edge: !central,
                ..CloudletSettings::new("TelekomOP", *n)
            })
            .collect(),
        images: vec![
            ImageRule::new("registry.example.com/*", ImageFault::CannotPull),
            ImageRule::new("*:crash", ImageFault::Crashes),
            ImageRule::new("*:big", ImageFault::Unschedulable),
        ],
        crm_max_wait: wait,
        ..SimConfig::default()
    }
}

/// Munich and Berlin with their CRMs on the edge, each waiting `wait` for a pod; Munich (the
/// first) places no pod, so its CRM holds each AppInst `Creating` for the whole wait; Berlin
/// places the runner's pod when `berlin_schedules`.
pub fn munich_holds(wait: Duration, berlin_schedules: bool) -> SimConfig {
    let mut config = crm_waiting(&["Munich", "Berlin"], false, wait);
    config.cloudlet_settings[0].pods_unscheduled = true;
    config.cloudlet_settings[1].pods_unscheduled = !berlin_schedules;
    config
}
