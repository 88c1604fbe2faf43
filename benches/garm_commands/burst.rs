//! Step 5: many CreateInstance processes at once.

use crate::prelude::*;

pub(crate) struct BurstRow {
    pub(crate) label: &'static str,
    pub(crate) processes: usize,
    pub(crate) wall: f64,
    pub(crate) per_process_median: f64,
    pub(crate) per_process_max: f64,
    pub(crate) cpu_total: f64,
    pub(crate) rss_max: f64,
    pub(crate) logins: usize,
    pub(crate) requests: usize,
}

pub(crate) struct BurstResults {
    pub(crate) single: Samples,
    pub(crate) rows: Vec<BurstRow>,
}

pub(crate) fn burst_step(
    runtime: &tokio::runtime::Runtime,
    base: &Path,
    plan: &Plan,
) -> Result<BurstResults> {
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
        let vars = garm_env(
            "CreateInstance",
            &world.provider.config,
            &[("GARM_POOL_ID", POOL)],
        );
        let names: Vec<String> = (0..plan.burst).map(|i| format!("garm-burst-{i}")).collect();
        let jobs: Vec<Spec<'_>> = names
            .iter()
            .map(|name| Spec {
                vars: as_refs(&vars),
                stdin: Some(world.bootstrap(name)),
            })
            .collect();
        let log_before = world.sim.request_log().len();
        let logins_before = world.sim.logins();
        world.relay.take();
        let (procs, wall) = run_providers_at_once(Path::new(PROVIDER), &[], world.dir(), &jobs)?;
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
