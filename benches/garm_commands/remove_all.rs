//! Step 7: RemoveAllInstances of many runners at 20 ms per call, in latency units (wall time
//! divided by the per-call latency): how far from the floor of 3 (Show, DeleteAppInst,
//! DeleteApp) the provider's concurrency keeps it.

use crate::prelude::*;

/// One binary's RemoveAll runs.
#[derive(Default)]
pub(crate) struct RemoveAllRow {
    pub(crate) label: String,
    pub(crate) runners: usize,
    /// Wall time in latency units, per run.
    pub(crate) units: Vec<f64>,
    pub(crate) wall: Vec<f64>,
    pub(crate) cpu: Vec<f64>,
    pub(crate) requests: usize,
    pub(crate) connections: usize,
}

pub(crate) struct RemoveAllResults {
    pub(crate) latency: Duration,
    pub(crate) rows: Vec<RemoveAllRow>,
}

pub(crate) fn remove_all_step(
    runtime: &tokio::runtime::Runtime,
    base: &Path,
    plan: &Plan,
) -> Result<RemoveAllResults> {
    let world = World::start(runtime, base, REAL_LATENCY, Shapes::new())?;
    let mut binaries = vec![("this build".to_string(), PathBuf::from(PROVIDER))];
    if let Some(b) = Baseline::from_env()? {
        binaries.push((b.label, b.path));
    }
    let mut rows: Vec<RemoveAllRow> = binaries
        .iter()
        .map(|(label, _)| RemoveAllRow {
            label: label.clone(),
            runners: plan.remove_all_runners,
            ..RemoveAllRow::default()
        })
        .collect();
    for _ in 0..plan.remove_all_runs {
        // Alternating binaries, so both see the same load.
        for ((_, binary), row) in binaries.iter().zip(rows.iter_mut()) {
            world.seed_runners(1, plan.remove_all_runners)?;
            let config = world.config_for(binary);
            let run = world.garm_with(binary, &[], config, "RemoveAllInstances", &[], None)?;
            ensure!(
                world.sim.apps().is_empty() && world.sim.app_insts().is_empty(),
                "RemoveAllInstances left {} Apps and {} AppInsts",
                world.sim.apps().len(),
                world.sim.app_insts().len()
            );
            row.units.push(ms(run.proc.wall) / ms(REAL_LATENCY));
            row.wall.push(ms(run.proc.wall));
            row.cpu.push(ms(run.proc.cpu));
            row.requests = run.requests;
            row.connections = run.traffic.connections;
        }
    }
    Ok(RemoveAllResults {
        latency: REAL_LATENCY,
        rows,
    })
}
