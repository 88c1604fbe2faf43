//! A simulator, a relay and a provider config (the tests' own, `support::Provider`): one GARM
//! command run and measured.

use crate::prelude::*;

pub(crate) struct World {
    pub(crate) latency: Duration,
    pub(crate) sim: SimHandle,
    pub(crate) relay: Relay,
    /// The measured provider's config, credentials, log and token cache, in their directory.
    pub(crate) provider: Provider,
    /// The same config without `log_file` (the provider then logs warnings to stderr only).
    pub(crate) config_without_log: PathBuf,
    /// The config for other builds of the provider (baseline, shipped binary): their own token
    /// cache, because another release may name or shape its cache files differently, and a
    /// file it leaves must not make the measured provider's run look warm or cold.
    pub(crate) config_for_others: PathBuf,
    /// Both configs with the site's registry mirror turned on (`[site_cache] registry_mirror`,
    /// docs/site-cache.md, "How the provider runs it"): the measured provider's, then the other
    /// builds'. Each keeps its config's token cache.
    pub(crate) site_cache_configs: [PathBuf; 2],
    /// The thin client: its connections stay open between replays.
    pub(crate) http: reqwest::Client,
    pub(crate) handle: tokio::runtime::Handle,
    /// Round shapes to apply instead of timing (worlds without latency).
    pub(crate) shapes: Shapes,
}

/// One provider command with everything measured around it.
pub(crate) struct Measured {
    pub(crate) proc: Proc,
    pub(crate) traffic: Traffic,
    /// HTTP requests the simulator answered during the run (its request log).
    pub(crate) requests: usize,
    pub(crate) logins: usize,
}

impl World {
    pub(crate) fn start(
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
        // Inside the run's temporary directory, which goes away at the end. The tests' config
        // writer, with the production log level: a deployed provider logs at info, and the log
        // line per call is part of its cost.
        let dir = tempfile::tempdir_in(base).context("cannot create a world's directory")?;
        let provider = Provider::in_dir(dir, &relay.url(), |c| {
            c.log_level = "info";
            c.edge_connect_lines =
                "request_timeout_secs = 60\noperation_timeout_secs = 120".to_string();
        });
        let dir = provider.dir.path();
        let config_without_log = dir.join("provider-without-log.toml");
        sim::ProviderConfig {
            log_file: None,
            ..provider.written.clone()
        }
        .write(&config_without_log)?;
        let config_for_others = dir.join("provider-other-builds.toml");
        sim::ProviderConfig {
            token_cache_dir: Some(dir.join("token-cache-other-builds")),
            ..provider.written.clone()
        }
        .write(&config_for_others)?;
        let mut site_cache_configs = [PathBuf::new(), PathBuf::new()];
        for (config, with_cache) in [&provider.config, &config_for_others]
            .into_iter()
            .zip(&mut site_cache_configs)
        {
            let text = std::fs::read_to_string(config)
                .with_context(|| format!("cannot read {}", config.display()))?;
            *with_cache = config.with_extension("site-cache.toml");
            std::fs::write(
                &*with_cache,
                format!("{text}\n[site_cache]\nregistry_mirror = true\n"),
            )
            .with_context(|| format!("cannot write {}", with_cache.display()))?;
        }
        Ok(World {
            latency,
            sim,
            relay,
            provider,
            config_without_log,
            config_for_others,
            site_cache_configs,
            // A hung simulator must fail the run, not hold it (and CI) forever.
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .context("cannot build the thin client")?,
            handle: runtime.handle().clone(),
            shapes,
        })
    }

    pub(crate) fn bootstrap(&self, name: &str) -> String {
        fixture_with("bootstrap-github-jit.json", name, POOL)
    }

    /// Runs `binary` as GARM does and measures it; fails unless it exits 0. Its calls are
    /// grouped into rounds under the key `<command>` (or `<command> (cold)` when the token cache
    /// is empty, which adds a login), followed by [`SITE_CACHE_KEY`] when `config` turns the
    /// site cache on.
    pub(crate) fn garm_with(
        &self,
        binary: &Path,
        args: &[String],
        config: &Path,
        command: &str,
        extra: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Result<Measured> {
        let cold = !self.has_cached_token_for(config);
        let vars = garm_env(command, config, extra);
        let mut key = shape_key(command, cold);
        if self.site_cache_configs.iter().any(|c| c == config) {
            key.push_str(SITE_CACHE_KEY);
        }
        self.relay.take();
        let log_before = self.sim.request_log().len();
        let logins_before = self.sim.logins();
        let proc = run_provider(binary, args, self.dir(), &as_refs(&vars), stdin)?;
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

    pub(crate) fn garm(
        &self,
        command: &str,
        extra: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Result<Measured> {
        self.garm_with(
            Path::new(PROVIDER),
            &[],
            &self.provider.config,
            command,
            extra,
            stdin,
        )
    }

    pub(crate) fn create(&self, name: &str) -> Result<Measured> {
        self.create_by(Path::new(PROVIDER), name)
    }

    /// CreateInstance of `binary`, with the config it runs with ([`World::config_for`]).
    pub(crate) fn create_by(&self, binary: &Path, name: &str) -> Result<Measured> {
        let run = self.garm_with(
            binary,
            &[],
            self.config_for(binary),
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

    /// CreateInstance of a `dind` pool's runner `name` by `binary` (with `args`: valgrind's) under
    /// `config`, checked to have given the `dind` daemon the site's registry mirror exactly when
    /// `config` turns the site cache on (and [`World::site_cache_up`] made it Ready).
    pub(crate) fn create_dind(
        &self,
        binary: &Path,
        args: &[String],
        config: &Path,
        name: &str,
    ) -> Result<Measured> {
        let mut bootstrap: Value = serde_json::from_str(&self.bootstrap(name))
            .context("the bootstrap fixture is not JSON")?;
        bootstrap["extra_specs"] = serde_json::json!({"docker": "dind"});
        let run = self.garm_with(
            binary,
            args,
            config,
            "CreateInstance",
            &[("GARM_POOL_ID", POOL)],
            Some(&bootstrap.to_string()),
        )?;
        let out: Value = serde_json::from_str(&run.proc.stdout)
            .with_context(|| format!("CreateInstance stdout: {:?}", run.proc.stdout))?;
        ensure!(
            out["status"] == "running" && out["name"] == name,
            "CreateInstance of a dind runner answered {out}"
        );
        let cached = self.site_cache_configs.iter().any(|c| c == config);
        let mirror = self.dind_mirror(name)?;
        ensure!(
            mirror.is_some() == cached,
            "CreateInstance of {name} {} the site cache config gave dind the mirror {mirror:?}",
            if cached { "with" } else { "without" }
        );
        Ok(run)
    }

    /// The `--registry-mirror=` argument of the `dind` container in the App `name`'s manifest.
    fn dind_mirror(&self, name: &str) -> Result<Option<String>> {
        let app = self
            .sim
            .apps()
            .into_iter()
            .find(|a| a["key"]["name"] == name)
            .ok_or_else(|| anyhow!("the App {name} is missing"))?;
        let manifest: Value = serde_json::from_str(
            app["deployment_manifest"]
                .as_str()
                .ok_or_else(|| anyhow!("the App {name} has no manifest"))?,
        )
        .with_context(|| format!("the manifest of {name} is not JSON"))?;
        let dind = manifest["spec"]["template"]["spec"]["containers"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "dind"))
            .ok_or_else(|| anyhow!("the App {name} has no dind container"))?;
        Ok(dind["args"].as_array().and_then(|args| {
            args.iter()
                .filter_map(Value::as_str)
                .find(|a| a.starts_with("--registry-mirror="))
                .map(str::to_string)
        }))
    }

    /// The site's registry mirror, brought up as a person or a CronJob does: `binary`'s
    /// `site-cache up` under its site cache config, which returns once the cache's AppInst is
    /// Ready (docs/site-cache.md, "How the provider runs it"); checked on the simulator.
    pub(crate) fn site_cache_up(&self, binary: &Path) -> Result<()> {
        let config = self.site_cache_config_for(binary);
        let args: Vec<String> = [
            "--config",
            &config.display().to_string(),
            "--controller-id",
            CONTROLLER,
            "site-cache",
            "up",
        ]
        .map(str::to_string)
        .to_vec();
        let up = run_provider(binary, &args, self.dir(), &[], None)?;
        ensure!(
            up.code == 0,
            "site-cache up exited {}: {}{}",
            up.code,
            up.stdout.trim(),
            up.stderr.trim()
        );
        self.relay.take();
        let ready = self.sim.app_insts().iter().any(|i| {
            i["app_key"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("sc-") && n.ends_with("-registry"))
                && i["state"] == "Ready"
        });
        ensure!(
            ready,
            "site-cache up succeeded but the simulator holds no Ready registry cache: {}",
            up.stdout.trim()
        );
        Ok(())
    }

    /// [`World::config_for`] `binary` with the site's registry mirror turned on.
    pub(crate) fn site_cache_config_for(&self, binary: &Path) -> &Path {
        let [measured, others] = &self.site_cache_configs;
        if binary == Path::new(PROVIDER) {
            measured
        } else {
            others
        }
    }

    pub(crate) fn delete(&self, name: &str) -> Result<Measured> {
        let run = self.garm("DeleteInstance", &[("GARM_INSTANCE_ID", name)], None)?;
        ensure!(
            !self.has_app(name),
            "DeleteInstance {name} left the App behind"
        );
        Ok(run)
    }

    pub(crate) fn get(&self, name: &str) -> Result<Measured> {
        self.get_by(Path::new(PROVIDER), name)
    }

    /// GetInstance of `binary`, with the config it runs with ([`World::config_for`]).
    pub(crate) fn get_by(&self, binary: &Path, name: &str) -> Result<Measured> {
        self.get_with(binary, self.config_for(binary), name)
    }

    /// GetInstance with the config without `log_file`: what logging to a file costs.
    pub(crate) fn get_without_log(&self, name: &str) -> Result<Measured> {
        self.get_with(Path::new(PROVIDER), &self.config_without_log, name)
    }

    fn get_with(&self, binary: &Path, config: &Path, name: &str) -> Result<Measured> {
        let vars = [("GARM_INSTANCE_ID", name)];
        let run = self.garm_with(binary, &[], config, "GetInstance", &vars, None)?;
        let out: Value = serde_json::from_str(&run.proc.stdout)
            .with_context(|| format!("GetInstance stdout: {:?}", run.proc.stdout))?;
        ensure!(out["name"] == name, "GetInstance answered {out}");
        Ok(run)
    }

    /// GetVersion, the floor: a process that starts, prints and exits, with GARM's variables.
    pub(crate) fn version(&self) -> Result<Proc> {
        let vars = garm_env("GetVersion", &self.provider.config, &[]);
        let proc = run_provider(Path::new(PROVIDER), &[], self.dir(), &as_refs(&vars), None)?;
        ensure!(
            proc.code == 0 && !proc.stdout.trim().is_empty(),
            "GetVersion exited {}: {}",
            proc.code,
            proc.stderr.trim()
        );
        Ok(proc)
    }

    pub(crate) fn list(&self, expect: usize) -> Result<Measured> {
        self.list_with(Path::new(PROVIDER), expect)
    }

    pub(crate) fn list_with(&self, binary: &Path, expect: usize) -> Result<Measured> {
        self.list_run(binary, &[], expect)
    }

    /// ListInstances of `binary` under valgrind: the instructions it executed.
    pub(crate) fn list_instructions(&self, binary: &Path, expect: usize) -> Result<u64> {
        let grind = Cachegrind::new(binary, self.dir())?;
        self.list_run(&grind.valgrind, &grind.args, expect)?;
        grind.instructions()
    }

    /// ListInstances of `binary` under callgrind, its profile written to `out`.
    pub(crate) fn list_profile(&self, binary: &Path, expect: usize, out: &Path) -> Result<()> {
        let grind = Cachegrind::profile(binary, self.dir(), out)?;
        self.list_run(&grind.valgrind, &grind.args, expect)?;
        Ok(())
    }

    /// ListInstances of the pool by `binary` (with `args`), checked to list `expect` runners.
    fn list_run(&self, binary: &Path, args: &[String], expect: usize) -> Result<Measured> {
        // Under valgrind the provider is one of the arguments.
        let measured = Path::new(PROVIDER);
        let config = if args.iter().any(|a| Path::new(a) == measured) {
            &self.provider.config
        } else {
            self.config_for(binary)
        };
        let run = self.garm_with(
            binary,
            args,
            config,
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

    /// Seeds `pools × per_pool` runners of this controller, each with an AppInst: Apps carrying
    /// the environment of a real runner App (same keys, same sizes, taken from one the provider
    /// made), so the bytes per App are the real ones. Pool `k` is [`pool_id`]`(k)`.
    pub(crate) fn seed_runners(&self, pools: usize, per_pool: usize) -> Result<()> {
        let (env, secrets) = self.runner_environment()?;
        let before = self.sim.app_insts().len();
        // Ownership needs GARM_INSTANCE_NAME to be the App's own name, and a seed call gives
        // every App the same environment: so one seed call per App, named `p<pool>-r<n>-1`.
        for k in 0..pools {
            for n in 0..per_pool {
                let prefix = format!("p{k}-r{n}-");
                let name = format!("{prefix}1");
                let mut env_vars = env.clone();
                env_vars.insert("GARM_CONTROLLER_ID".into(), CONTROLLER.into());
                env_vars.insert("GARM_POOL_ID".into(), pool_id(k));
                env_vars.insert("GARM_INSTANCE_NAME".into(), name);
                self.sim.seed(Seed {
                    org: ORG.into(),
                    count: 1,
                    app_insts: true,
                    name_prefix: prefix,
                    env_vars,
                    secret_env_vars: secrets.clone(),
                    // The marks the provider's own CreateAppInst gives its AppInsts.
                    annotations: BTreeMap::from([
                        ("garm-controller-id".into(), CONTROLLER.into()),
                        ("garm-pool-id".into(), pool_id(k)),
                    ]),
                });
            }
        }
        let made = self.sim.app_insts().len() - before;
        ensure!(
            made == pools * per_pool,
            "seeding made {made} AppInsts, expected {}",
            pools * per_pool
        );
        Ok(())
    }

    /// Seeds `count` Apps, each with an AppInst, of another controller in the organization:
    /// a real runner App's environment under another controller id, no marks on the AppInsts.
    pub(crate) fn seed_foreign(&self, count: usize) -> Result<()> {
        let (mut env, secrets) = self.runner_environment()?;
        env.insert(
            "GARM_CONTROLLER_ID".into(),
            "another-team-controller".into(),
        );
        self.sim.seed(Seed {
            org: ORG.into(),
            count,
            app_insts: true,
            name_prefix: "team-app-".into(),
            env_vars: env,
            secret_env_vars: secrets,
            ..Seed::default()
        });
        Ok(())
    }

    /// The `env_vars` and `secret_env_vars` of an App the provider made (then deleted again).
    fn runner_environment(&self) -> Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
        self.create("garm-template")?;
        let template = self
            .sim
            .apps()
            .into_iter()
            .find(|a| a["key"]["name"] == "garm-template")
            .ok_or_else(|| anyhow!("the template App is missing"))?;
        self.delete("garm-template")?;
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
        Ok((env, secrets))
    }

    pub(crate) fn has_app(&self, name: &str) -> bool {
        self.sim.apps().iter().any(|a| a["key"]["name"] == name)
    }

    pub(crate) fn has_app_inst(&self, name: &str) -> bool {
        self.sim
            .app_insts()
            .iter()
            .any(|a| a["key"]["name"] == name)
    }

    /// Replays captured rounds through the relay; wall time and bytes received.
    pub(crate) fn replay(&self, rounds: &Rounds) -> Result<(Duration, u64)> {
        self.relay.take();
        let wall = self
            .handle
            .block_on(replay(&self.http, &self.relay.url(), rounds))?;
        Ok((wall, self.relay.take().received))
    }

    /// The config `binary` runs with: the measured provider's, or the one of other builds.
    pub(crate) fn config_for(&self, binary: &Path) -> &Path {
        if binary == Path::new(PROVIDER) {
            &self.provider.config
        } else {
            &self.config_for_others
        }
    }

    /// Whether the token cache that `config` uses holds anything.
    pub(crate) fn has_cached_token_for(&self, config: &Path) -> bool {
        let dir = if config == self.config_for_others || config == self.site_cache_configs[1] {
            self.dir().join("token-cache-other-builds")
        } else {
            self.token_cache()
        };
        std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some())
    }

    pub(crate) fn forget_token(&self) -> Result<()> {
        let cache = self.token_cache();
        match std::fs::remove_dir_all(&cache) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot empty the token cache {}", cache.display()))
            }
            _ => Ok(()),
        }
    }

    /// The directory of the world's files (job files of the launcher included).
    pub(crate) fn dir(&self) -> &Path {
        self.provider.dir.path()
    }

    fn token_cache(&self) -> PathBuf {
        self.provider
            .written
            .token_cache_dir
            .clone()
            .unwrap_or_default()
    }
}

/// What a shape key of a run under a site cache config ends with.
pub(crate) const SITE_CACHE_KEY: &str = " with the site cache";

pub(crate) fn shape_key(command: &str, cold: bool) -> String {
    if cold {
        format!("{command} (cold)")
    } else {
        command.to_string()
    }
}

/// Variables as the launcher takes them.
pub(crate) fn as_refs(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
