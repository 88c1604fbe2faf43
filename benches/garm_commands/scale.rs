//! Step 4: ListInstances over large inventories: wall, CPU, peak RSS and (under valgrind)
//! instructions, for the provider and, when one is given, a baseline binary in the same
//! iterations.

use crate::prelude::*;

/// One inventory size.
#[derive(Default)]
pub(crate) struct ScaleRow {
    pub(crate) size: usize,
    pub(crate) pool: usize,
    pub(crate) list: Samples,
    /// Instructions of one ListInstances (valgrind), per run.
    pub(crate) instructions: Vec<f64>,
    /// The baseline binary in the same iterations, when there is one.
    pub(crate) baseline: Option<Samples>,
    pub(crate) baseline_instructions: Vec<f64>,
    /// Bytes the provider receives listing the pool in an organization that holds only the
    /// pool: the size of the pool's own Apps and AppInsts as the server sends them.
    pub(crate) own_received: Vec<f64>,
    pub(crate) seed_time: Duration,
}

pub(crate) struct ScaleResults {
    pub(crate) rows: Vec<ScaleRow>,
    /// The shipped (static musl, LTO) binary at the largest size, when it is present.
    pub(crate) shipped: Option<(PathBuf, Samples)>,
    /// Why instructions were not counted, if they were not.
    pub(crate) no_instructions: Option<String>,
}

/// A pool id for pool `k` of the scale inventory; pool 0 is the measured one.
pub(crate) fn pool_id(k: usize) -> String {
    if k == 0 {
        POOL.to_string()
    } else {
        format!("{k:08x}-0000-4000-8000-00000000bench")
    }
}

pub(crate) fn scale_step(
    runtime: &tokio::runtime::Runtime,
    base: &Path,
    plan: &Plan,
    shapes: &Shapes,
) -> Result<ScaleResults> {
    let mut rows = Vec::new();
    let mut shipped = None;
    let largest = plan.scale_sizes.iter().copied().max().unwrap_or(0);
    let no_instructions = valgrind()
        .is_none()
        .then(|| "valgrind is not installed".to_string());
    let baseline = Baseline::from_env()?;
    for &size in &plan.scale_sizes {
        let world = World::start(runtime, base, Duration::ZERO, shapes.clone())?;
        let seed_start = Instant::now();
        let per_pool = size / SCALE_POOLS;
        world.seed_runners(SCALE_POOLS, per_pool)?;
        let seed_time = seed_start.elapsed();

        let mut row = ScaleRow {
            size,
            pool: per_pool,
            baseline: baseline.as_ref().map(|_| Samples::default()),
            seed_time,
            ..ScaleRow::default()
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
            if i > 0 {
                row.list.record(&list, "ListInstances")?;
                row.list.add_limit(limit);
            }
            if let (Some(b), Some(samples)) = (&baseline, &mut row.baseline) {
                let list = world.list_with(&b.path, per_pool)?;
                if i > 0 {
                    samples.record(&list, "ListInstances (baseline)")?;
                    samples.add_limit(limit);
                }
            }
            if let Some((binary, samples)) = &mut shipped_here {
                let list = world.list_with(binary, per_pool)?;
                if i > 0 {
                    samples.record(&list, "ListInstances (shipped binary)")?;
                    samples.add_limit(limit);
                }
            }
        }
        if no_instructions.is_none() {
            // Counts barely vary from run to run: a few runs suffice, and valgrind is slow.
            for _ in 0..plan.instruction_runs {
                let n = world.list_instructions(Path::new(PROVIDER), per_pool)?;
                row.instructions.push(n as f64);
                if let Some(b) = &baseline {
                    let n = world.list_instructions(&b.path, per_pool)?;
                    row.baseline_instructions.push(n as f64);
                }
            }
        }
        if let Some(dir) = std::env::var_os("GARM_BENCH_CALLGRIND_DIR") {
            let out = Path::new(&dir).join(format!("callgrind-list-{size}.out"));
            world.list_profile(Path::new(PROVIDER), per_pool, &out)?;
            eprintln!("  callgrind profile of ListInstances at {size} written");
        }
        if shipped_here.is_some() {
            shipped = shipped_here;
        }
        world.sim.reset();
        // The same pool alone in the organization: what its own objects weigh.
        world.seed_runners(1, per_pool)?;
        for _ in 0..plan.instruction_runs {
            row.own_received
                .push(world.list(per_pool)?.traffic.received as f64);
        }
        world.sim.reset();
        rows.push(row);
    }
    Ok(ScaleResults {
        rows,
        shipped,
        no_instructions,
    })
}

/// Another build of the provider measured in the same iterations (`GARM_BENCH_BASELINE`, e.g.
/// the commit before a change, built with `cargo build --profile bench`), named in the report by
/// `GARM_BENCH_BASELINE_LABEL`.
pub(crate) struct Baseline {
    pub(crate) path: PathBuf,
    pub(crate) label: String,
}

impl Baseline {
    pub(crate) fn from_env() -> Result<Option<Baseline>> {
        let Some(path) = std::env::var_os("GARM_BENCH_BASELINE").map(PathBuf::from) else {
            return Ok(None);
        };
        ensure!(
            path.is_file(),
            "GARM_BENCH_BASELINE={} is not a file",
            path.display()
        );
        let label =
            std::env::var("GARM_BENCH_BASELINE_LABEL").unwrap_or_else(|_| "baseline".to_string());
        Ok(Some(Baseline { path, label }))
    }
}

/// A small pool among many Apps of another controller: what the pool's List receives with
/// and without them, by this build and the baseline.
pub(crate) struct ForeignResults {
    pub(crate) pool: usize,
    pub(crate) foreign: usize,
    /// Bytes received: (without the foreign Apps, with them), per run.
    pub(crate) this_build: (Vec<f64>, Vec<f64>),
    pub(crate) baseline: Option<(Vec<f64>, Vec<f64>)>,
}

/// 20 runners of the pool, then 2,000 Apps (with AppInsts) of another controller, each carrying
/// the environment of a real runner App: the List must receive little more than before.
pub(crate) fn foreign_step(
    runtime: &tokio::runtime::Runtime,
    base: &Path,
    plan: &Plan,
    shapes: &Shapes,
) -> Result<ForeignResults> {
    let (pool, foreign) = if plan.quick { (2, 20) } else { (20, 2_000) };
    let baseline = Baseline::from_env()?;
    let world = World::start(runtime, base, Duration::ZERO, shapes.clone())?;
    world.seed_runners(1, pool)?;
    let mut out = ForeignResults {
        pool,
        foreign,
        this_build: Default::default(),
        baseline: baseline.as_ref().map(|_| Default::default()),
    };
    let push = |pair: &mut (Vec<f64>, Vec<f64>), with: bool, received: u64| {
        if with { &mut pair.1 } else { &mut pair.0 }.push(received as f64);
    };
    let mut measure = |with: bool| -> Result<()> {
        for _ in 0..plan.instruction_runs.max(1) {
            push(
                &mut out.this_build,
                with,
                world.list(pool)?.traffic.received,
            );
            if let (Some(b), Some(pair)) = (&baseline, &mut out.baseline) {
                push(pair, with, world.list_with(&b.path, pool)?.traffic.received);
            }
        }
        Ok(())
    };
    measure(false)?;
    world.seed_foreign(foreign)?;
    measure(true)?;
    Ok(out)
}
