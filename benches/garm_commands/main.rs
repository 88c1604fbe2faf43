//! What every GARM command costs, how List grows with the inventory, and how close the provider
//! comes to the thinnest possible client. Run with `cargo bench --bench garm_commands`; writes
//! `BENCHMARKS.md` and prints it. `-- --quick` runs every step once with tiny sizes (the CI smoke
//! run, `.ci/bench-smoke.sh`) and writes nothing.
//!
//! Everything runs on 127.0.0.1:
//!
//! ```text
//! provider process ──► counting relay ──► simulator (latency 0 or 20 ms per call)
//! thin client (reqwest, warm) ──┤
//! minimal client process ───────┤
//! curl, one process per round ──┘
//! ```
//!
//! The provider is started as GARM starts it (bare environment, `GARM_*` only, cwd `/`) by a small
//! launcher process and reaped with `wait4`, which gives its CPU time and peak RSS (see "Provider
//! processes" for why a launcher). The relay counts bytes both ways and keeps
//! the raw requests, so the thin client can send exactly the provider's requests again, in the
//! same order and with the same parallelism, over connections that are already open and with the
//! token the provider used. Every figure that depends on the machine is reported next to a
//! figure from the same run (a ratio), because the machine may be shared with other work.
//!
//! Not a test: it fails only when the harness itself cannot work (a provider command fails, a
//! replay is refused, a count is wrong), never because something is slow.
//!
//! | module | job |
//! |---|---|
//! | `relay` | the counting TCP relay (timing and bytes, no HTTP parsing) |
//! | `thin_client` | captured requests, round trips, their replay: thin client, minimal client, curl |
//! | `process` | the launcher, `wait4` (CPU time, peak RSS) |
//! | `valgrind` | instruction counts (cachegrind without cache simulation) |
//! | `world` | a simulator, a relay and a provider config; one measured command; seeding |
//! | `stats` | medians and samples |
//! | `commands`, `scale`, `burst`, `remove_all`, `instructions`, `binary` | the steps |
//! | `machine`, `report` | the header and BENCHMARKS.md |
//!
//! `GARM_BENCH_BASELINE=<provider binary>` (and `GARM_BENCH_BASELINE_LABEL`) measures another
//! build of the provider, e.g. the commit before a change built with `cargo build --profile
//! bench`, in the same iterations of the scale and RemoveAll steps, so that before and after come
//! from one run. `GARM_BENCH_SCALE_SIZES=1000,10000` replaces the inventory sizes (with
//! `-- --quick`: a quick look at one size), and `GARM_BENCH_CALLGRIND_DIR=<dir>` writes a
//! callgrind profile of one ListInstances per size there (for `callgrind_annotate`).

mod binary;
mod burst;
mod commands;
mod instructions;
mod machine;
mod process;
mod relay;
mod remove_all;
mod report;
mod scale;
mod stats;
mod thin_client;
mod valgrind;
mod world;

/// The tests' world: the provider's config and GARM's environment, written one way for both.
#[allow(dead_code)]
#[path = "../../tests/it/support.rs"]
mod support;

/// What every module uses: the standard and external items, the constants below and the items
/// of the other modules (each module has one job; they share their types freely).
mod prelude {
    pub(crate) use std::collections::BTreeMap;
    pub(crate) use std::fmt::Write as _;
    pub(crate) use std::fs::File;
    pub(crate) use std::io::{self, Read as _};
    pub(crate) use std::net::{Ipv4Addr, SocketAddr};
    pub(crate) use std::path::{Path, PathBuf};
    pub(crate) use std::process::{Command, Stdio};
    pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
    pub(crate) use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    pub(crate) use anyhow::{anyhow, bail, ensure, Context, Result};
    pub(crate) use edge_connect_sim::{self as sim, Seed, SimConfig, SimHandle};
    pub(crate) use serde::{Deserialize, Serialize};
    pub(crate) use serde_json::Value;
    pub(crate) use tokio::io::{AsyncReadExt, AsyncWriteExt};
    pub(crate) use tokio::net::{TcpListener, TcpStream};

    pub(crate) use crate::binary::*;
    pub(crate) use crate::burst::*;
    pub(crate) use crate::commands::*;
    pub(crate) use crate::instructions::*;
    pub(crate) use crate::machine::*;
    pub(crate) use crate::process::*;
    pub(crate) use crate::relay::*;
    pub(crate) use crate::remove_all::*;
    pub(crate) use crate::report::*;
    pub(crate) use crate::scale::*;
    pub(crate) use crate::stats::*;
    pub(crate) use crate::support::{
        fixture_with, garm_env, Provider, BIN as PROVIDER, CONTROLLER, POOL,
    };
    pub(crate) use crate::thin_client::*;
    pub(crate) use crate::valgrind::*;
    pub(crate) use crate::world::*;
    pub(crate) use crate::{Plan, ORG, REAL_LATENCY, SCALE_POOLS};
}

use prelude::*;

pub(crate) const ORG: &str = "edp-developer-framework";
/// Latency the simulator adds to every call in the "realistic" runs.
pub(crate) const REAL_LATENCY: Duration = Duration::from_millis(20);
/// Pools the scale inventory is spread over: the measured pool holds a tenth of it.
pub(crate) const SCALE_POOLS: usize = 10;

/// How much work each step does.
pub(crate) struct Plan {
    pub(crate) quick: bool,
    /// Iterations of GetVersion → Create → Get (with and without log file) → List → Delete, and
    /// their replays, per latency.
    pub(crate) runs: usize,
    /// CreateInstance runs with an empty token cache, per latency.
    pub(crate) cold_runs: usize,
    /// GetVersion runs of each binary in the binary step.
    pub(crate) version_runs: usize,
    /// AppInsts in the scale inventories.
    pub(crate) scale_sizes: Vec<usize>,
    /// ListInstances runs per scale size.
    pub(crate) scale_runs: usize,
    /// ListInstances runs under valgrind per scale size (instruction counts).
    pub(crate) instruction_runs: usize,
    /// Runners RemoveAllInstances removes.
    pub(crate) remove_all_runners: usize,
    /// RemoveAllInstances runs.
    pub(crate) remove_all_runs: usize,
    /// Simultaneous CreateInstance processes.
    pub(crate) burst: usize,
    /// Single CreateInstance runs the burst is compared with.
    pub(crate) burst_singles: usize,
}

impl Plan {
    fn full() -> Plan {
        Plan {
            quick: false,
            runs: 60,
            cold_runs: 20,
            version_runs: 60,
            scale_sizes: vec![10, 1_000, 10_000, 20_000],
            scale_runs: 15,
            instruction_runs: 2,
            remove_all_runners: 200,
            remove_all_runs: 3,
            burst: 50,
            burst_singles: 9,
        }
    }

    fn quick() -> Plan {
        Plan {
            quick: true,
            runs: 1,
            cold_runs: 1,
            version_runs: 1,
            scale_sizes: vec![10, 100],
            scale_runs: 1,
            instruction_runs: 1,
            remove_all_runners: 10,
            remove_all_runs: 1,
            burst: 3,
            burst_singles: 1,
        }
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("garm_commands benchmark failed: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("--launch") => return launcher(),
        Some("--minimal-client") => {
            let file = std::env::args()
                .nth(2)
                .ok_or_else(|| anyhow!("--minimal-client FILE"))?;
            return minimal_client(Path::new(&file));
        }
        _ => {}
    }
    let mut quick = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            // `cargo bench` passes `--bench` to every harness-less benchmark.
            "--bench" => {}
            other => bail!("unknown argument {other:?} (accepted: --quick)"),
        }
    }
    let mut plan = if quick { Plan::quick() } else { Plan::full() };
    if let Ok(sizes) = std::env::var("GARM_BENCH_SCALE_SIZES") {
        plan.scale_sizes = sizes
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .context("GARM_BENCH_SCALE_SIZES: a list of numbers")
            })
            .collect::<Result<_>>()?;
    }
    let started = Instant::now();
    let done = |step: &str| eprintln!("  {step} done ({:.0} s)", started.elapsed().as_secs_f64());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-io")
        .enable_all()
        .build()
        .context("cannot start the benchmark's tokio runtime")?;
    let work = tempfile::tempdir().context("cannot create a temporary directory")?;
    let machine = Machine::read();
    eprintln!(
        "garm_commands: {} mode, provider {PROVIDER}",
        if plan.quick { "quick" } else { "full" }
    );

    // 20 ms first: there the calls' timing shows which ones run in parallel, and the 0 ms runs
    // reuse what it learnt (see Traffic::from_session).
    let real = World::start(&runtime, work.path(), REAL_LATENCY, Shapes::new())?;
    let real_results = command_step(&real, &plan)?;
    drop(real);
    done(&format!(
        "per-command step at {} ms",
        REAL_LATENCY.as_millis()
    ));
    let shapes = real_results.shapes();
    let zero = World::start(&runtime, work.path(), Duration::ZERO, shapes.clone())?;
    let zero_results = command_step(&zero, &plan)?;
    drop(zero);
    done("per-command step at 0 ms");
    let commands = [zero_results, real_results];
    let scale = scale_step(&runtime, work.path(), &plan, &shapes)?;
    done("scale step");
    let foreign = foreign_step(&runtime, work.path(), &plan, &shapes)?;
    done("foreign Apps step");
    let burst = burst_step(&runtime, work.path(), &plan)?;
    done("concurrency step");
    let remove_all = remove_all_step(&runtime, work.path(), &plan)?;
    done("RemoveAll step");
    let instructions = instructions_step(&runtime, work.path(), &plan)?;
    done("instructions step");
    let binary = binary_step(&plan, work.path())?;

    let results = Results {
        commands: commands.into(),
        scale,
        foreign,
        burst,
        remove_all,
        instructions,
        binary,
    };
    let report = render(&machine, &plan, &results, started.elapsed());
    println!("{report}");
    if plan.quick {
        eprintln!("quick mode: BENCHMARKS.md left alone");
    } else {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
        std::fs::write(&path, &report)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    eprintln!(
        "garm_commands: finished in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
