//! Step 8: instructions per command of each build, under cachegrind at 0 ms per call: Create,
//! Get and Delete of one runner, RemoveAll of 200 runners (and of none: the difference is the
//! cost per runner), List of 1,000 runners among 10,000 AppInsts; the Create of a `dind` pool's
//! runner without and with the site's registry mirror (issue 46); and the peak RSS of a Get.
//! Counts hardly depend on the load of the machine, so builds measured one after the other
//! compare.

use crate::prelude::*;

/// One build's counts.
pub(crate) struct InstructionRow {
    pub(crate) label: String,
    pub(crate) path: PathBuf,
    pub(crate) create: u64,
    pub(crate) get: u64,
    pub(crate) delete: u64,
    pub(crate) remove_all_none: u64,
    pub(crate) remove_all: u64,
    pub(crate) list: u64,
    /// CreateInstance of a `dind` pool's runner without `[site_cache]`, and with the site's
    /// registry mirror turned on and Ready (`None` for a build without the site cache).
    pub(crate) create_dind: u64,
    pub(crate) create_dind_cached: Option<u64>,
    /// Peak RSS of GetInstance, MB, per run (outside valgrind).
    pub(crate) get_rss_mb: Vec<f64>,
}

impl InstructionRow {
    /// RemoveAll's instructions per runner: what the runners add to RemoveAll of none.
    pub(crate) fn remove_all_per_runner(&self, runners: usize) -> f64 {
        self.remove_all.saturating_sub(self.remove_all_none) as f64 / runners.max(1) as f64
    }
}

pub(crate) struct InstructionResults {
    pub(crate) remove_all_runners: usize,
    /// What the HTTP and TLS stack alone costs per runner of RemoveAll: the minimal client
    /// sending the provider's requests ([`remove_all_floor`]).
    pub(crate) remove_all_floor: f64,
    pub(crate) list_size: usize,
    pub(crate) listed: usize,
    pub(crate) rows: Vec<InstructionRow>,
}

impl InstructionResults {
    /// The shipped binary's row (this build as the image carries it), if it was built.
    pub(crate) fn shipped(&self) -> Option<&InstructionRow> {
        self.rows.iter().find(|r| r.label == SHIPPED_LABEL)
    }

    /// The baseline's row, if one was given.
    pub(crate) fn baseline(&self) -> Option<&InstructionRow> {
        self.rows
            .iter()
            .find(|r| r.label != SHIPPED_LABEL && r.label != MEASURED_LABEL)
    }
}

pub(crate) const SHIPPED_LABEL: &str = "this build, shipped binary";
pub(crate) const MEASURED_LABEL: &str = "this build, bench profile";

/// Runs `command` of `binary` under cachegrind with its own config; checks that it used the
/// cached token (a login would be counted too) and returns the instructions.
fn counted(
    world: &World,
    binary: &Path,
    command: &str,
    extra: &[(&str, &str)],
    stdin: Option<&str>,
) -> Result<u64> {
    let grind = Cachegrind::new(binary, world.dir())?;
    let config = world.config_for(binary);
    let run = world.garm_with(&grind.valgrind, &grind.args, config, command, extra, stdin)?;
    no_login(&run, command, binary)?;
    grind.instructions()
}

/// A count that included a login would not compare with the others.
fn no_login(run: &Measured, command: &str, binary: &Path) -> Result<()> {
    ensure!(
        run.logins == 0,
        "{command} of {} logged in: its count would include the login",
        binary.display()
    );
    Ok(())
}

/// CreateInstance of a `dind` runner by `binary` under cachegrind, with `config` (with or
/// without the site cache), then its DeleteInstance outside valgrind.
fn counted_dind(world: &World, binary: &Path, config: &Path) -> Result<u64> {
    let name = "garm-instructions-dind";
    let grind = Cachegrind::new(binary, world.dir())?;
    let run = world.create_dind(&grind.valgrind, &grind.args, config, name)?;
    no_login(&run, "CreateInstance of a dind runner", binary)?;
    let count = grind.instructions()?;
    world.garm_with(
        binary,
        &[],
        world.config_for(binary),
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", name)],
        None,
    )?;
    Ok(count)
}

/// A create and delete of `binary` outside valgrind: its token cache holds a token after it.
fn warm(world: &World, binary: &Path) -> Result<()> {
    let name = "garm-instructions-warm";
    let config = world.config_for(binary);
    let bootstrap = world.bootstrap(name);
    world.garm_with(
        binary,
        &[],
        config,
        "CreateInstance",
        &[("GARM_POOL_ID", POOL)],
        Some(&bootstrap),
    )?;
    world.garm_with(
        binary,
        &[],
        config,
        "DeleteInstance",
        &[("GARM_INSTANCE_ID", name)],
        None,
    )?;
    Ok(())
}

pub(crate) fn instructions_step(
    runtime: &tokio::runtime::Runtime,
    base: &Path,
    plan: &Plan,
) -> Result<Option<InstructionResults>> {
    if valgrind().is_none() {
        eprintln!("  valgrind not installed: no instruction counts");
        return Ok(None);
    }
    let mut binaries = vec![(MEASURED_LABEL.to_string(), PathBuf::from(PROVIDER))];
    if let Some(shipped) = shipped_binary() {
        binaries.push((SHIPPED_LABEL.to_string(), shipped));
    }
    if let Some(b) = Baseline::from_env()? {
        binaries.push((b.label, b.path));
    }
    let listed = if plan.quick { 10 } else { 1_000 };
    let world = World::start(runtime, base, Duration::ZERO, Shapes::new())?;
    let mut rows = Vec::new();
    for (label, binary) in &binaries {
        warm(&world, binary)?;
        let name = "garm-instructions";
        let bootstrap = world.bootstrap(name);
        let pool = [("GARM_POOL_ID", POOL)];
        let instance = [("GARM_INSTANCE_ID", name)];
        let create = counted(&world, binary, "CreateInstance", &pool, Some(&bootstrap))?;
        let get = counted(&world, binary, "GetInstance", &instance, None)?;
        let config = world.config_for(binary);
        let mut get_rss_mb = Vec::new();
        for _ in 0..plan.runs.min(15) {
            let run = world.garm_with(binary, &[], config, "GetInstance", &instance, None)?;
            get_rss_mb.push(run.proc.max_rss_kb as f64 / 1024.0);
        }
        let delete = counted(&world, binary, "DeleteInstance", &instance, None)?;
        let remove_all_none = counted(&world, binary, "RemoveAllInstances", &[], None)?;
        world.seed_runners(1, plan.remove_all_runners)?;
        let remove_all = counted(&world, binary, "RemoveAllInstances", &[], None)?;
        ensure!(
            world.sim.apps().is_empty() && world.sim.app_insts().is_empty(),
            "RemoveAllInstances of {label} left {} Apps",
            world.sim.apps().len()
        );
        rows.push(InstructionRow {
            label: label.clone(),
            path: binary.clone(),
            create,
            get,
            delete,
            remove_all_none,
            remove_all,
            list: 0,
            create_dind: 0,
            create_dind_cached: None,
            get_rss_mb,
        });
    }
    // A dind pool's create without and with the site's mirror, in a world of its own: the
    // cache's App and AppInst would add to the answers of the List and RemoveAll above.
    let cache_world = World::start(runtime, base, Duration::ZERO, Shapes::new())?;
    cache_world.site_cache_up(Path::new(PROVIDER))?;
    for row in &mut rows {
        warm(&cache_world, &row.path)?;
        let config = cache_world.config_for(&row.path);
        row.create_dind = counted_dind(&cache_world, &row.path, config)?;
        // The baseline may predate the site cache (a config it does not know is refused).
        if row.label == MEASURED_LABEL || row.label == SHIPPED_LABEL {
            let config = cache_world.site_cache_config_for(&row.path);
            row.create_dind_cached = Some(counted_dind(&cache_world, &row.path, config)?);
        }
    }
    drop(cache_world);
    let remove_all_floor = remove_all_floor(&world, plan.remove_all_runners)?;
    world.seed_runners(SCALE_POOLS, listed)?;
    for row in &mut rows {
        warm(&world, &row.path)?;
        let grind = Cachegrind::new(&row.path, world.dir())?;
        let config = world.config_for(&row.path);
        let run = world.garm_with(
            &grind.valgrind,
            &grind.args,
            config,
            "ListInstances",
            &[("GARM_POOL_ID", POOL)],
            None,
        )?;
        let out: Value = serde_json::from_str(&run.proc.stdout)
            .context("ListInstances under valgrind: stdout is not JSON")?;
        ensure!(
            out.as_array().map(Vec::len) == Some(listed),
            "ListInstances of {} did not list {listed} runners",
            row.label
        );
        row.list = grind.instructions()?;
    }
    Ok(Some(InstructionResults {
        remove_all_runners: plan.remove_all_runners,
        remove_all_floor,
        list_size: SCALE_POOLS * listed,
        listed,
        rows,
    }))
}

/// RemoveAll's instructions per runner in the HTTP and TLS stack alone: the provider's requests
/// for `runners` runners and for none, sent again by the minimal client on a freshly seeded
/// inventory, its own preparation left out ([`minimal_sends`]). The provider cannot spend less
/// per runner without another HTTP stack.
fn remove_all_floor(world: &World, runners: usize) -> Result<f64> {
    let provider = Path::new(PROVIDER);
    let config = world.config_for(provider);
    let base = world.relay.url();
    let mut sends = Vec::new();
    for count in [0, runners] {
        world.seed_runners(1, count)?;
        let run = world.garm_with(provider, &[], config, "RemoveAllInstances", &[], None)?;
        let calls: Vec<HttpRequest> = run.traffic.rounds.0.into_iter().flatten().collect();
        let of = |rpc: &str| -> Vec<HttpRequest> {
            calls.iter().filter(|c| c.rpc() == rpc).cloned().collect()
        };
        // The Show round, then the DeleteAppInsts and the DeleteApps, as many at once as
        // RemoveAll has in flight (REMOVE_ALL_CONCURRENCY in src/provider/delete.rs).
        let mut rounds = vec![[of("ShowApp"), of("ShowAppInst")].concat()];
        for all in [of("DeleteAppInst"), of("DeleteApp")] {
            rounds.extend(all.chunks(100).map(<[_]>::to_vec));
        }
        ensure!(
            rounds.iter().map(Vec::len).sum::<usize>() == calls.len(),
            "RemoveAllInstances of {count} sent calls other than Show, DeleteAppInst and DeleteApp"
        );
        world.seed_runners(1, count)?;
        // Its replay fails unless every call is answered 200 without an error trailer.
        sends.push(minimal_sends(world.dir(), &base, &Rounds(rounds))?);
    }
    Ok(sends[1].saturating_sub(sends[0]) as f64 / runners.max(1) as f64)
}
