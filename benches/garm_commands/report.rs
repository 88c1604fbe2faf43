//! BENCHMARKS.md: the targets, the tables and how to read them.

use crate::prelude::*;

/// A path inside the repository as a relative one, so the report does not depend on where the
/// checkout is.
/// `path` as the report shows it: relative to this repository, or, for a build elsewhere (the
/// baseline's checkout), from its `target` directory on: the report is committed, and no path of
/// the machine it ran on belongs in it.
pub(crate) fn shown(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Ok(inside) = path.strip_prefix(root) {
        return inside.display().to_string();
    }
    let parts: Vec<_> = path.components().collect();
    match parts.iter().rposition(|c| c.as_os_str() == "target") {
        Some(at) => format!(
            "<its checkout>/{}",
            parts[at..].iter().collect::<std::path::PathBuf>().display()
        ),
        None => path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
    }
}

pub(crate) fn kb(bytes: f64) -> String {
    if bytes >= 1_000_000.0 {
        format!("{:.2} MB", bytes / 1_000_000.0)
    } else {
        format!("{:.1} kB", bytes / 1000.0)
    }
}

pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        format!("{:.2}×", a / b)
    } else {
        "–".to_string()
    }
}

/// The fewest sequential round trips each command could make with a cached token (issue 7).
pub(crate) fn min_round_trips(command: &str) -> Option<usize> {
    match command {
        "CreateInstance" | "DeleteInstance" | DIND_CREATE | DIND_CREATE_CACHED => Some(2),
        "GetInstance" | "GetInstance without log_file" | "ListInstances" => Some(1),
        "CreateInstance, empty token cache" => Some(3),
        _ => None,
    }
}

/// The rows of a `dind` pool's CreateInstance without and with the site's registry mirror.
const DIND_CREATE: &str = "CreateInstance, dind pool";
const DIND_CREATE_CACHED: &str = "CreateInstance, dind pool, site cache Ready";

pub(crate) fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**missed**"
    }
}

/// The issue's targets against this run's figures.
pub(crate) fn summary(
    commands: &[CommandResults],
    scale: &ScaleResults,
    burst: &BurstResults,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Against the targets of issue 7
"
    );
    let _ = writeln!(
        out,
        "| target | this run | |
|---|---|---|"
    );
    if let Some(real) = commands.iter().find(|c| c.latency == REAL_LATENCY) {
        let four = [
            ("CreateInstance", &real.create),
            ("GetInstance", &real.get),
            ("ListInstances", &real.list),
            ("DeleteInstance", &real.delete),
        ];
        for (name, s) in four {
            let r = median(&s.ratio);
            let _ = writeln!(
                out,
                "| {name} within 1.3× of the thin client at {} ms | {r:.2}× | {} |",
                REAL_LATENCY.as_millis(),
                verdict(r <= 1.3)
            );
        }
        for (name, s) in four {
            if let Some(min) = min_round_trips(name) {
                let _ = writeln!(
                    out,
                    "| {name}: {min} round trip{} with a cached token | {} ({} calls) | {} |",
                    if min == 1 { "" } else { "s" },
                    s.rounds,
                    s.requests,
                    if s.rounds <= min {
                        "met"
                    } else {
                        "one more, see \"Why more round trips\""
                    }
                );
            }
        }
    }
    // Issue 7's targets were set at 10,000 AppInsts.
    if let Some(last) = scale
        .rows
        .iter()
        .find(|r| r.size == 10_000)
        .or(scale.rows.last())
    {
        let cpu = median(&last.list.cpu);
        let rss = median(&last.list.rss_mb);
        let _ = writeln!(
            out,
            "| ListInstances at {} AppInsts: CPU under 100 ms | {cpu:.0} ms | {} |",
            last.size,
            verdict(cpu < 100.0)
        );
        let _ = writeln!(
            out,
            "| ListInstances at {} AppInsts: peak RSS under 50 MB | {rss:.1} MB | {} |",
            last.size,
            verdict(rss < 50.0)
        );
        if let [.., a, b, c] = scale.rows.as_slice() {
            let per = |x: &ScaleRow, y: &ScaleRow| {
                (median(&y.list.cpu) - median(&x.list.cpu)) / (y.size - x.size) as f64 * 1000.0
            };
            let (first, second) = (per(a, b), per(b, c));
            let _ = writeln!(
                out,
                "| ListInstances grows linearly | CPU per added AppInst {first:.1} µs ({} → {}), {second:.1} µs ({} → {}) | {} |",
                a.size,
                b.size,
                b.size,
                c.size,
                // Quadratic growth would make the second step's cost per AppInst ~10× the first.
                verdict(second < 2.0 * first)
            );
        }
    }
    for row in &burst.rows {
        let _ = writeln!(
            out,
            "| {} CreateInstance at once, {}: 1 login | {} login{} | {} |",
            row.processes,
            row.label,
            row.logins,
            if row.logins == 1 { "" } else { "s" },
            verdict(row.logins <= 1)
        );
    }
    out.push('\n');
    out
}

/// Everything the steps measured.
pub(crate) struct Results {
    pub(crate) commands: Vec<CommandResults>,
    pub(crate) scale: ScaleResults,
    pub(crate) foreign: ForeignResults,
    pub(crate) burst: BurstResults,
    pub(crate) remove_all: RemoveAllResults,
    pub(crate) instructions: Option<InstructionResults>,
    pub(crate) binary: BinaryResults,
}

pub(crate) fn render(
    machine: &Machine,
    plan: &Plan,
    results: &Results,
    elapsed: Duration,
) -> String {
    let Results {
        commands,
        scale,
        foreign,
        burst,
        remove_all,
        instructions,
        binary,
    } = results;
    let mut out = String::new();
    let profile = if cfg!(debug_assertions) {
        "debug (`cargo test --bench`), figures not representative"
    } else {
        "bench profile: opt-level 3, no LTO, 16 codegen units (Cargo.toml)"
    };
    let _ = writeln!(out, "# Benchmarks\n");
    let _ = writeln!(
        out,
        "Written by `cargo bench --bench garm_commands{}` in {:.0} s{} Every figure is the median \
         of repeated runs; every comparison is between figures of the same run, so they hold on a \
         shared machine where absolute times do not.\n",
        if plan.quick { " -- --quick" } else { "" },
        elapsed.as_secs_f64(),
        if plan.quick {
            ": one run of each step with tiny sizes, a check that the harness works, not figures."
        } else {
            "."
        },
    );
    let _ = writeln!(out, "| | |\n|---|---|");
    let _ = writeln!(out, "| date | {} |", machine.date);
    let _ = writeln!(
        out,
        "| machine | {} CPUs (`nproc`), {} |",
        machine.nproc, machine.cpu
    );
    let _ = writeln!(
        out,
        "| load average (1, 5, 15 min) | {} at start, {} at the end (the machine is shared) |",
        machine.load,
        load_average()
    );
    let _ = writeln!(
        out,
        "| peak RSS floor | {:.1} MB: what a fork of the launcher starts with (a child that exits at once), which the kernel counts into every child's (see the source) |",
        LAUNCHER_HWM_KB.load(Ordering::Relaxed) as f64 / 1024.0
    );
    let _ = writeln!(
        out,
        "| kernel, compiler | Linux {}, {} |",
        machine.kernel, machine.rustc
    );
    let _ = writeln!(
        out,
        "| provider binary measured | `{}`, {profile} |",
        shown(&binary.measured)
    );
    let _ = writeln!(
        out,
        "| runs | {} per command and latency (+1 warm-up), {} cold creates, {} per scale size |\n",
        plan.runs, plan.cold_runs, plan.scale_runs
    );

    out.push_str(&issue38(commands, instructions.as_ref(), binary));
    out.push_str(&issue29(commands, scale, foreign, remove_all));
    out.push_str(&summary(commands, scale, burst));

    // Per command
    for c in commands {
        let lat = c.latency.as_millis();
        let _ = writeln!(out, "## Per command, simulator latency {lat} ms per call\n");
        let _ = writeln!(
            out,
            "| command | calls | round trips (min) | wall ms | thin client ms | provider / thin | minimal client ms | provider / minimal | curl ms | provider / curl | CPU ms | peak RSS MB | sent | received | connections | logins | calls in order |"
        );
        let _ = writeln!(
            out,
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
        );
        let rows: [(&str, &Samples); 9] = [
            ("GetVersion (floor)", &c.version),
            ("CreateInstance, empty token cache", &c.cold_create),
            ("CreateInstance", &c.create),
            (DIND_CREATE, &c.dind_create),
            (DIND_CREATE_CACHED, &c.dind_create_cached),
            ("GetInstance", &c.get),
            ("GetInstance without log_file", &c.get_without_log),
            ("ListInstances", &c.list),
            ("DeleteInstance", &c.delete),
        ];
        for (name, s) in rows {
            let wall = median(&s.wall);
            let limit = median(&s.limit);
            let rt = match min_round_trips(name) {
                Some(min) => format!("{} ({min})", s.rounds),
                None => "0".to_string(),
            };
            let (limit_text, ratio_text) = if s.limit.is_empty() {
                ("–".to_string(), "–".to_string())
            } else {
                (format!("{limit:.1}"), format!("{:.2}×", median(&s.ratio)))
            };
            let anchor = |walls: &[f64], ratios: &[f64]| match walls.is_empty() {
                true => "– | –".to_string(),
                false => format!("{:.1} | {:.2}×", median(walls), median(ratios)),
            };
            let _ = writeln!(
                out,
                "| {name} | {} | {rt} | {wall:.1} | {limit_text} | {ratio_text} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} | {} |",
                s.requests,
                anchor(&s.minimal, &s.ratio_minimal),
                anchor(&s.curl, &s.ratio_curl),
                median(&s.cpu),
                median(&s.rss_mb),
                if s.sent.is_empty() { "–".into() } else { kb(median(&s.sent)) },
                if s.received.is_empty() { "–".into() } else { kb(median(&s.received)) },
                s.connections,
                s.logins,
                shape_text(&s.shape),
            );
            if !s.limit_min.is_empty() {
                let _ = writeln!(
                    out,
                    "| ↳ DeleteInstance vs. minimum round trips | | {} | {wall:.1} | {:.1} | {:.2}× | | | | | | | | | | | thin client without the Show round |",
                    s.min_rounds.unwrap_or(0),
                    median(&s.limit_min),
                    median(&s.ratio_min),
                );
            }
        }
        out.push('\n');
    }
    if let [zero, real] = commands.as_slice() {
        let _ = writeln!(out, "### Round trips seen in the wall time\n");
        let _ = writeln!(
            out,
            "(wall at {} ms − wall at 0 ms) / {} ms, against the round trips the relay counted:\n",
            real.latency.as_millis(),
            real.latency.as_millis()
        );
        let _ = writeln!(out, "| command | counted | from wall time | process overhead at 0 ms (wall − thin client) |");
        let _ = writeln!(out, "|---|--:|--:|--:|");
        let pairs: [(&str, &Samples, &Samples); 7] = [
            (
                "CreateInstance, empty token cache",
                &zero.cold_create,
                &real.cold_create,
            ),
            ("CreateInstance", &zero.create, &real.create),
            (DIND_CREATE, &zero.dind_create, &real.dind_create),
            (
                DIND_CREATE_CACHED,
                &zero.dind_create_cached,
                &real.dind_create_cached,
            ),
            ("GetInstance", &zero.get, &real.get),
            ("ListInstances", &zero.list, &real.list),
            ("DeleteInstance", &zero.delete, &real.delete),
        ];
        let step = ms(real.latency);
        for (name, z, r) in pairs {
            // The dind creates are not replayed by the thin client.
            let overhead = match z.limit.is_empty() {
                true => "–".to_string(),
                false => format!("{:.1} ms", median(&z.wall) - median(&z.limit)),
            };
            let _ = writeln!(
                out,
                "| {name} | {} | {:.2} | {overhead} |",
                r.rounds,
                (median(&r.wall) - median(&z.wall)) / step,
            );
        }
        out.push('\n');
    }

    // Scale
    let _ = writeln!(
        out,
        "## ListInstances over large inventories (latency 0 ms)\n"
    );
    let _ = writeln!(
        out,
        "Each inventory is spread over {SCALE_POOLS} pools of this controller; the listed pool holds a tenth. \
         Seeded Apps carry the environment of a real runner App, so bytes per App are real.\n"
    );
    let _ = writeln!(
        out,
        "| AppInsts | listed | wall ms | thin client ms | provider / thin | CPU ms | peak RSS MB | received | calls | the pool alone: received | received / the pool alone |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in &scale.rows {
        let s = &row.list;
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} | {:.2}× | {:.1} | {:.1} | {} | {} | {} | {} |",
            row.size,
            row.pool,
            median(&s.wall),
            median(&s.limit),
            median(&s.ratio),
            median(&s.cpu),
            median(&s.rss_mb),
            kb(median(&s.received)),
            s.requests,
            kb(median(&row.own_received)),
            ratio(median(&s.received), median(&row.own_received)),
        );
    }
    if let Some((path, s)) = &scale.shipped {
        if let Some(last) = scale.rows.last() {
            let _ = writeln!(
                out,
                "| {} (shipped static musl binary) | {} | {:.1} | {:.1} | {:.2}× | {:.1} | {:.1} | {} | {} | | |",
                last.size,
                last.pool,
                median(&s.wall),
                median(&s.limit),
                median(&s.ratio),
                median(&s.cpu),
                median(&s.rss_mb),
                kb(median(&s.received)),
                s.requests,
            );
            let _ = writeln!(out, "\n(shipped binary: `{}`)", shown(path));
        }
    }
    let seeds: Vec<String> = scale
        .rows
        .iter()
        .map(|r| format!("{}: {:.0} ms", r.size, ms(r.seed_time)))
        .collect();
    let _ = writeln!(
        out,
        "\nSeeding time (not measured above): {}.\n",
        seeds.join(", ")
    );

    if scale.rows.len() >= 2 {
        let _ = writeln!(out, "### Growth\n");
        let _ = writeln!(
            out,
            "A linear cost `a + b·n` shows as a constant cost per added AppInst (last columns); a \
             quadratic one would grow tenfold from one step to the next.\n"
        );
        let _ = writeln!(
            out,
            "| step | AppInsts × | wall × | CPU × | RSS × | received × | CPU per added AppInst | RSS per added AppInst | bytes per added AppInst |"
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        for pair in scale.rows.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let added = (b.size - a.size) as f64;
            let (wa, wb) = (median(&a.list.wall), median(&b.list.wall));
            let (ca, cb) = (median(&a.list.cpu), median(&b.list.cpu));
            let (ra, rb) = (median(&a.list.rss_mb), median(&b.list.rss_mb));
            let (ba, bb) = (median(&a.list.received), median(&b.list.received));
            let _ = writeln!(
                out,
                "| {} → {} | {:.0}× | {} | {} | {} | {} | {:.1} µs | {:.2} kB | {:.0} B |",
                a.size,
                b.size,
                b.size as f64 / a.size as f64,
                ratio(wb, wa),
                ratio(cb, ca),
                ratio(rb, ra),
                ratio(bb, ba),
                (cb - ca) * 1000.0 / added,
                (rb - ra) * 1024.0 / added,
                (bb - ba) / added,
            );
        }
        out.push('\n');
    }

    out.push_str(&scale_memory_and_instructions(scale));
    out.push_str(&remove_all_section(remove_all));

    // Concurrency
    let _ = writeln!(
        out,
        "## {} CreateInstance processes at once (latency {} ms)\n",
        plan.burst,
        REAL_LATENCY.as_millis()
    );
    let single = median(&burst.single.wall);
    let _ = writeln!(
        out,
        "One CreateInstance alone: {single:.1} ms wall, {:.1} ms CPU (median of {}).\n",
        median(&burst.single.cpu),
        burst.single.wall.len()
    );
    let _ = writeln!(
        out,
        "| | processes | total wall ms | vs. one alone | per process ms (median / max) | CPU total ms | CPU total / {} CPUs | peak RSS MB (max) | HTTP requests | logins |",
        machine.nproc
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for row in &burst.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {} | {:.0} / {:.0} | {:.0} | {:.0} ms | {:.1} | {} | {} |",
            row.label,
            row.processes,
            row.wall,
            ratio(row.wall, single),
            row.per_process_median,
            row.per_process_max,
            row.cpu_total,
            row.cpu_total / machine.nproc as f64,
            row.rss_max,
            row.requests,
            row.logins,
        );
    }
    out.push('\n');

    // Binary
    let _ = writeln!(out, "## Binary\n");
    let _ = writeln!(out, "| binary | size | GetVersion start → exit ms |");
    let _ = writeln!(out, "|---|--:|--:|");
    let _ = writeln!(
        out,
        "| `{}` (built by `cargo bench`: bench profile, dynamically linked) | {:.2} MB | {:.2} |",
        shown(&binary.measured),
        binary.measured_size as f64 / 1_048_576.0,
        median(&binary.measured_version),
    );
    match &binary.shipped {
        Some((path, size, built, walls)) => {
            let _ = writeln!(
                out,
                "| `{}` (shipped: release profile, LTO, static musl; file dated {built}) | {:.2} MB | {:.2} |",
                shown(path),
                *size as f64 / 1_048_576.0,
                median(walls),
            );
        }
        None => {
            let _ = writeln!(
                out,
                "| shipped binary not built: `cargo build --release --locked --target x86_64-unknown-linux-musl --bin garm-provider-edge-connect` (as the Dockerfile and .ci/static-chroot.sh do) | – | – |"
            );
        }
    }
    out.push('\n');
    out.push_str(HOW_TO_READ);
    out.push_str(&site_cache_section(commands, instructions.as_ref()));
    out
}

/// Issue 46: what a `dind` pool's CreateInstance costs without the site cache and with the
/// site's registry mirror Ready, in calls, round trips and instructions.
fn site_cache_section(
    commands: &[CommandResults],
    instructions: Option<&InstructionResults>,
) -> String {
    let mut out = String::new();
    let (Some(zero), Some(real)) = (
        commands.iter().find(|c| c.latency.is_zero()),
        commands.iter().find(|c| c.latency == REAL_LATENCY),
    ) else {
        return out;
    };
    let lat = REAL_LATENCY.as_millis();
    let _ = writeln!(
        out,
        "\n## Site cache: CreateInstance of a `dind` pool (issue 46)\n\n\
         Measured by this bench. The create of a runner whose pool has a `dind` sidecar, {} runs \
         at each latency in the per-command steps and one under cachegrind in the instructions \
         step (each build with its cached token): without `[site_cache]` in the config, then with \
         `[site_cache] registry_mirror = true` while the site's mirror is Ready, brought up first \
         by the binary's `site-cache up` against the simulator. Each create is checked to have \
         given its `dind` daemon `--registry-mirror=` in the second case only. The relay counts \
         round trips from the calls' timing at {lat} ms per call (calls in flight together are \
         one); \"from wall time\" is (wall at {lat} ms − wall at 0 ms) / {lat} ms. The cache is \
         looked up by one ShowAppInst sent at the same time as the runner's ShowApp \
         (docs/site-cache.md, \"How the provider runs it\").\n",
        real.dind_create.wall.len()
    );
    let rows = instructions.map_or(&[][..], |i| i.rows.as_slice());
    let mut head = format!(
        "| CreateInstance of a `dind` pool | calls | round trips | from wall time | wall ms at {lat} ms | wall ms at 0 ms |"
    );
    let mut rule = "|---|--:|--:|--:|--:|--:|".to_string();
    for row in rows {
        let _ = write!(head, " instructions, {} |", row.label);
        rule.push_str("--:|");
    }
    head.push_str(" calls in order |");
    rule.push_str("---|");
    let _ = writeln!(out, "{head}\n{rule}");
    let step = ms(REAL_LATENCY);
    let counts: [(&str, &Samples, &Samples, Vec<Option<u64>>); 2] = [
        (
            "without the site cache",
            &zero.dind_create,
            &real.dind_create,
            rows.iter().map(|r| Some(r.create_dind)).collect(),
        ),
        (
            "with the registry mirror Ready",
            &zero.dind_create_cached,
            &real.dind_create_cached,
            rows.iter().map(|r| r.create_dind_cached).collect(),
        ),
    ];
    for (name, z, r, counted) in &counts {
        let _ = write!(
            out,
            "| {name} | {} | {} | {:.2} | {:.1} | {:.1} |",
            r.requests,
            r.rounds,
            (median(&r.wall) - median(&z.wall)) / step,
            median(&r.wall),
            median(&z.wall),
        );
        for count in counted {
            let _ = write!(
                out,
                " {} |",
                count.map_or("–".to_string(), |c| thousands(c as f64))
            );
        }
        let _ = writeln!(out, " {} |", shape_text(&r.shape));
    }
    let [(_, _, without, before), (_, _, with, after)] = &counts;
    let _ = write!(
        out,
        "| the mirror adds | {:+} | {:+} | | | |",
        with.requests as i64 - without.requests as i64,
        with.rounds as i64 - without.rounds as i64,
    );
    for (before, after) in before.iter().zip(after) {
        let _ = match (before, after) {
            (Some(b), Some(a)) => write!(
                out,
                " {}{} ({:+.1} %) |",
                if a >= b { "+" } else { "−" },
                thousands(a.abs_diff(*b) as f64),
                (*a as f64 / *b as f64 - 1.0) * 100.0
            ),
            _ => write!(out, " |"),
        };
    }
    let _ = writeln!(out, " |");
    let _ = writeln!(
        out,
        "\nA build without the site cache (the baseline) is counted without it only. \
         Instructions are the whole process's, as in \"Instructions per command\"; the \
         create with the mirror also reads the cache's AppInst and writes the mirror's address \
         into the runner's manifest."
    );
    out
}

/// Figures the targets keep from earlier issues.
pub(crate) mod before {
    /// Calls and round trips per command with a cached token (issue 7), unchanged since.
    pub(crate) const CALLS: [(&str, usize, usize); 4] = [
        ("CreateInstance", 3, 3),
        ("GetInstance", 2, 1),
        ("ListInstances", 2, 1),
        ("DeleteInstance", 4, 3),
    ];
}

/// `x` as `shown` writes it, or `–` where it was not measured.
fn finite(x: f64, shown: impl Fn(f64) -> String) -> String {
    if x.is_finite() {
        shown(x)
    } else {
        "–".to_string()
    }
}

fn mb(x: f64) -> String {
    finite(x, |x| format!("{x:.1} MB"))
}

fn mega(x: f64) -> String {
    finite(x, |x| format!("{:.0} M", x / 1e6))
}

/// Issue 29's targets (Show narrowed on the server), and the command shapes and RemoveAll bound
/// kept from earlier issues: this build against the baseline build measured in this run.
pub(crate) fn issue29(
    commands: &[CommandResults],
    scale: &ScaleResults,
    foreign: &ForeignResults,
    remove_all: &RemoveAllResults,
) -> String {
    let mut out = String::new();
    let baseline_label = scale
        .rows
        .iter()
        .find_map(|r| r.baseline.as_ref())
        .and(Baseline::from_env().ok().flatten().map(|b| b.label));
    let _ = writeln!(out, "## Against the targets of issue 29\n");
    let _ = writeln!(
        out,
        "{}\n",
        match &baseline_label {
            Some(l) =>
                format!("Baseline: the build of {l}, measured in this run, in the same iterations. \
                    \"This build\" here is the bench-profile build (dynamically linked, glibc's \
                    allocator, no LTO); issue 29 set its rows against a baseline built the same way \
                    (1159113, bench profile). Against a static musl baseline, as in issue 38's run, \
                    the instruction and peak RSS rows compare unlike builds: issue 38's section \
                    above compares the shipped binary with it."),
            None =>
                "No baseline build was given (`GARM_BENCH_BASELINE`): only this build's figures."
                    .to_string(),
        }
    );
    let _ = writeln!(out, "| | baseline, this run | this build | target | |");
    let _ = writeln!(out, "|---|--:|--:|--:|---|");
    if let Some(r) = scale
        .rows
        .iter()
        .find(|r| r.size == 10_000)
        .or(scale.rows.last())
    {
        let own = median(&r.own_received);
        let new = median(&r.list.received) / own;
        let base = r
            .baseline
            .as_ref()
            .map_or(f64::NAN, |b| median(&b.received) / own);
        let _ = writeln!(
            out,
            "| ListInstances of {} runners among {} AppInsts: bytes received / the pool's own ({}) | {} | {} | ≤ 1.25× | {} |",
            r.pool,
            r.size,
            kb(own),
            times(base),
            times(new),
            verdict(new <= 1.25),
        );
        let (new_i, base_i) = (median(&r.instructions), median(&r.baseline_instructions));
        let _ = writeln!(
            out,
            "| … instructions | {} | {} ({}) | ≤ 0.5× | {} |",
            mega(base_i),
            mega(new_i),
            times(new_i / base_i),
            if base_i.is_finite() {
                verdict(new_i <= 0.5 * base_i)
            } else {
                ""
            },
        );
        let new_rss = median(&r.list.rss_mb);
        let base_rss = r.baseline.as_ref().map_or(f64::NAN, |b| median(&b.rss_mb));
        let _ = writeln!(
            out,
            "| … peak RSS | {} | {} | ≤ baseline | {} |",
            mb(base_rss),
            mb(new_rss),
            if base_rss.is_finite() {
                verdict(new_rss <= base_rss)
            } else {
                ""
            },
        );
    }
    let grown = |(without, with): &(Vec<f64>, Vec<f64>)| median(with) / median(without);
    let new = grown(&foreign.this_build);
    let _ = writeln!(
        out,
        "| ListInstances of {} runners, {} Apps of another controller added: bytes received with / without them ({} / {}) | {} | {} | ≤ 1.5× | {} |",
        foreign.pool,
        foreign.foreign,
        kb(median(&foreign.this_build.1)),
        kb(median(&foreign.this_build.0)),
        foreign.baseline.as_ref().map_or("–".to_string(), |b| times(grown(b))),
        times(new),
        verdict(new <= 1.5),
    );
    let units = |label: &str| {
        remove_all
            .rows
            .iter()
            .find(|r| r.label == label)
            .map(|r| (r.runners, median(&r.units)))
    };
    let base = remove_all.rows.iter().find(|r| r.label != "this build");
    if let Some((runners, new_units)) = units("this build") {
        let _ = writeln!(
            out,
            "| RemoveAllInstances of {runners} runners at {} ms per call: latency units | {} | {new_units:.1} | ≤ 10 | {} |",
            remove_all.latency.as_millis(),
            base.map_or("–".to_string(), |b| format!("{:.1}", median(&b.units))),
            verdict(new_units <= 10.0),
        );
    }
    if let Some(real) = commands.iter().find(|c| c.latency == REAL_LATENCY) {
        for (name, calls, rounds) in before::CALLS {
            let s = match name {
                "CreateInstance" => &real.create,
                "GetInstance" => &real.get,
                "ListInstances" => &real.list,
                _ => &real.delete,
            };
            let _ = writeln!(
                out,
                "| {name}: calls / round trips | {calls} / {rounds} | {} / {} | unchanged | {} |",
                s.requests,
                s.rounds,
                verdict(s.requests == calls && s.rounds == rounds),
            );
        }
    }
    out.push('\n');
    out
}

fn times(x: f64) -> String {
    finite(x, |x| format!("{x:.2}×"))
}

/// ListInstances peak RSS and instructions per size, this build against the baseline.
pub(crate) fn scale_memory_and_instructions(scale: &ScaleResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Peak RSS and instructions
"
    );
    if let Some(why) = &scale.no_instructions {
        let _ = writeln!(
            out,
            "Instructions not counted: {why}.
"
        );
    }
    let _ = writeln!(
        out,
        "| AppInsts | listed | peak RSS MB | baseline peak RSS MB | CPU ms | baseline CPU ms | instructions | baseline instructions | this / baseline |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for r in &scale.rows {
        let base = r.baseline.as_ref();
        let opt = |v: Option<f64>| {
            v.filter(|x| x.is_finite())
                .map_or("–".to_string(), |x| format!("{x:.1}"))
        };
        let (new_i, base_i) = (median(&r.instructions), median(&r.baseline_instructions));
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {:.1} | {} | {} | {} | {} |",
            r.size,
            r.pool,
            median(&r.list.rss_mb),
            opt(base.map(|b| median(&b.rss_mb))),
            median(&r.list.cpu),
            opt(base.map(|b| median(&b.cpu))),
            mega(new_i),
            mega(base_i),
            ratio(new_i, base_i),
        );
    }
    out.push('\n');
    out
}

/// One of a build's instruction counts.
type Count<'a> = dyn Fn(&InstructionRow) -> f64 + 'a;

/// Issue 38's targets: each command at the floor of a minimal client, instructions against the
/// baseline build, a binary under 6 MB; and the instruction counts of every build measured.
pub(crate) fn issue38(
    commands: &[CommandResults],
    instructions: Option<&InstructionResults>,
    binary: &BinaryResults,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Against the targets of issue 38
"
    );
    let baseline = instructions.and_then(InstructionResults::baseline);
    let shipped = instructions.and_then(InstructionResults::shipped);
    let _ = writeln!(
        out,
        "Instructions and peak RSS of the shipped binary (release profile, static musl) against {} measured in this run (step \"Instructions per command\" below); wall times of the shipped binary against the minimal client at {} ms, in the iterations of the per-command step (the tables below measure the bench-profile build).\n",
        baseline.map_or("no baseline (GARM_BENCH_BASELINE unset)".to_string(), |b| format!("the baseline `{}` ({})", b.label, shown(&b.path))),
        REAL_LATENCY.as_millis()
    );
    let _ = writeln!(out, "| target | baseline | this build | | |");
    let _ = writeln!(out, "|---|--:|--:|--:|---|");
    let pair = |name: &str, of: &Count<'_>, bound: f64| -> String {
        match (baseline, shipped) {
            (Some(b), Some(s)) => {
                let r = of(s) / of(b);
                format!(
                    "| {name}: instructions ≤ {bound}× the baseline's | {} | {} | {r:.2}× | {} |",
                    thousands(of(b)),
                    thousands(of(s)),
                    verdict(r <= bound)
                )
            }
            _ => format!("| {name}: instructions ≤ {bound}× the baseline's | – | – | – | not measured (needs the shipped binary and a baseline) |"),
        }
    };
    let runners = instructions.map_or(0, |i| i.remove_all_runners);
    let listed = instructions.map_or((0, 0), |i| (i.listed, i.list_size));
    let per_runner = |r: &InstructionRow| r.remove_all_per_runner(runners);
    let rows: [(String, &Count<'_>, f64); 5] = [
        ("CreateInstance".into(), &|r| r.create as f64, 0.65),
        ("GetInstance".into(), &|r| r.get as f64, 0.65),
        (
            format!("ListInstances of {} among {}", listed.0, listed.1),
            &|r| r.list as f64,
            1.0,
        ),
        (
            format!("RemoveAllInstances of {runners}"),
            &|r| r.remove_all as f64,
            1.0,
        ),
        ("RemoveAllInstances per runner".into(), &per_runner, 0.6),
    ];
    for (name, of, bound) in rows {
        let _ = writeln!(out, "{}", pair(&name, of, bound));
    }
    if let Some(i) = instructions {
        let of_baseline = baseline.map_or("–".to_string(), |b| {
            format!("{:.2}×", i.remove_all_floor / per_runner(b))
        });
        let _ = writeln!(
            out,
            "| … the floor under it: the minimal client sending the same requests, per runner (its HTTP and TLS stack alone) | | {} | {of_baseline} | not a target |",
            thousands(i.remove_all_floor)
        );
    }
    match shipped {
        Some(s) => {
            let rss = median(&s.get_rss_mb);
            let _ = writeln!(
                out,
                "| GetInstance: peak RSS ≤ 4.5 MB | {} | {rss:.1} MB | | {} |",
                baseline.map_or("–".to_string(), |b| format!(
                    "{:.1} MB",
                    median(&b.get_rss_mb)
                )),
                verdict(rss <= 4.5)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "| GetInstance: peak RSS ≤ 4.5 MB | – | – | | not measured (no shipped binary) |"
            );
        }
    }
    match &binary.shipped {
        Some((_, size, _, _)) => {
            let _ = writeln!(
                out,
                "| shipped binary ≤ 6,000,000 bytes | {} | {} | | {} |",
                baseline
                    .and_then(|b| std::fs::metadata(&b.path).ok())
                    .map_or("–".to_string(), |m| thousands(m.len() as f64)),
                thousands(*size as f64),
                verdict(*size <= 6_000_000)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "| shipped binary ≤ 6,000,000 bytes | – | – | | not built |"
            );
        }
    }
    match commands.iter().find(|c| c.latency == REAL_LATENCY) {
        Some(CommandResults {
            shipped: Some((create, get)),
            ..
        }) => {
            for (name, s) in [("CreateInstance", create), ("GetInstance", get)] {
                let r = median(&s.ratio_minimal);
                let _ = writeln!(
                    out,
                    "| {name}: wall ≤ 1.0× the minimal client at {} ms | {:.1} ms (minimal client) | {:.1} ms | {r:.2}× | {} |",
                    REAL_LATENCY.as_millis(),
                    median(&s.minimal),
                    median(&s.wall),
                    verdict(r <= 1.0)
                );
            }
        }
        _ => {
            let _ = writeln!(
                out,
                "| wall ≤ 1.0× the minimal client at {} ms | – | – | | not measured (no shipped binary) |",
                REAL_LATENCY.as_millis()
            );
        }
    }
    out.push('\n');
    if let Some(i) = instructions {
        let _ = writeln!(
            out,
            "### Instructions per command (latency 0 ms, a cached token)\n"
        );
        let _ = writeln!(
            out,
            "| build | CreateInstance | GetInstance | DeleteInstance | RemoveAll of none | RemoveAll of {} | per runner | ListInstances of {} among {} | GetInstance peak RSS MB |",
            i.remove_all_runners, i.listed, i.list_size
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        for r in &i.rows {
            let _ = writeln!(
                out,
                "| {} (`{}`) | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
                r.label,
                shown(&r.path),
                thousands(r.create as f64),
                thousands(r.get as f64),
                thousands(r.delete as f64),
                thousands(r.remove_all_none as f64),
                thousands(r.remove_all as f64),
                thousands(r.remove_all_per_runner(i.remove_all_runners)),
                thousands(r.list as f64),
                median(&r.get_rss_mb),
            );
        }
        out.push('\n');
    }
    out
}

/// `1234567.8` as `1,234,568`.
fn thousands(x: f64) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    let digits = format!("{:.0}", x.abs());
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(d);
    }
    if x < 0.0 {
        grouped.insert(0, '-');
    }
    grouped
}

/// RemoveAllInstances in latency units.
pub(crate) fn remove_all_section(r: &RemoveAllResults) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## RemoveAllInstances (latency {} ms per call)\n",
        r.latency.as_millis()
    );
    let _ = writeln!(
        out,
        "Latency units: wall time / {} ms. The floor is 3 (the Show round, DeleteAppInst, DeleteApp).\n",
        r.latency.as_millis()
    );
    let _ = writeln!(
        out,
        "| build | runners | calls | connections | wall ms | latency units | CPU ms |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|");
    for row in &r.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {:.1} | {:.1} |",
            row.label,
            row.runners,
            row.requests,
            row.connections,
            median(&row.wall),
            median(&row.units),
            median(&row.cpu),
        );
    }
    out.push('\n');
    out
}

pub(crate) const HOW_TO_READ: &str = r#"## How to read this

- **wall ms**: from the start of the provider process to its exit as seen by `wait4`, i.e. what
  GARM waits for. **CPU ms** (user + system) and **peak RSS** come from the same `wait4`. Peak RSS
  cannot be lower than the "peak RSS floor" above (the kernel counts the pages a forked child
  starts with into its figure); GetVersion sits just above it.
- **thin client**: a reqwest client inside the benchmark that sends *exactly* the provider's
  requests (captured on the wire: same paths, bodies and token), with the same parallelism, over
  connections that are already open and with the token already in hand. It is the limit of what
  any client could do with those calls. **provider / thin** is the median of the per-iteration
  ratios (both measured back to back): what the provider adds (process start, config and
  credentials, TCP connects, JSON, logging, exit).
- **minimal client**: this benchmark's executable started again as a process
  (`--minimal-client`), as the provider is started (bare environment, cwd `/`, through the same
  launcher), that builds a reqwest client with rustls (the provider's HTTP and TLS stack) on a
  single-threaded runtime and sends the same captured requests with the same parallelism over
  new connections, then exits. It does nothing else: no config, no credentials, no token cache,
  no logging, no output. Its wall time is the floor of a provider process; **provider /
  minimal** is what the provider adds to it (median of per-iteration ratios).
- **curl**: the same requests sent by `curl`, one process per round trip (`--parallel` for
  the calls of a round), as a shell script would; its time is the sum of those processes'.
- **GetInstance without log_file**: the same command with `log_file` left out of the config (the
  provider then logs warnings to stderr only), to show what logging to a file costs per process.
- **CreateInstance, dind pool** (and **, site cache Ready**): the create of a runner with a
  `dind` sidecar, without and with the site's registry mirror (issue 46; the section "Site
  cache: CreateInstance of a `dind` pool" at the end). The thin client does not replay them.
- **round trips**: calls whose request → answer intervals overlap on the wire count as one round
  trip, in brackets the minimum with a cached token (issue 7). They are read from the timing at
  20 ms; at 0 ms the same calls are checked to be sent. The "round trips seen in the wall time"
  table cross-checks the count: each round trip costs the simulator's latency once.
- **sent / received**: bytes on the TCP connections between the provider and the simulator,
  counted by a relay on 127.0.0.1 (HTTP headers included). **connections**: TCP connections
  opened; parallel calls need one each.
- **The latency is the simulator's, per call, not the network's.** Over a real network each new
  connection also costs a TCP and a TLS handshake (one round trip each with TLS 1.3), which a
  provider process pays once per connection and a warm client never pays; the simulator speaks
  plain HTTP on 127.0.0.1, so that cost is not in these figures.
- The simulator runs in the benchmark process and shares the CPUs with the provider; at 0 ms
  latency its own work is part of every wall time, for the provider and the thin client alike.
- **Large inventories**: the thin client reads the same answers without parsing them, so
  provider / thin there is the cost of decoding and matching. **The pool alone** is the same
  List in an organization that holds only the listed pool: the bytes of the pool's own Apps and
  AppInsts as the server sends them, which a List narrowed on the server should not exceed by
  much. The shipped binary is the one the image carries (static musl, LTO), in the same
  iterations.
- **Apps of another controller**: a pool of runners, then that many Apps (each with an AppInst)
  of another controller added to the organization, each with a real runner App's environment.
- **instructions**: every instruction the provider process executes (start, config, both Show
  answers, output, exit), counted by valgrind's cachegrind without its cache simulation. Unlike
  times they hardly depend on the load of the machine, so small differences are real.
- **baseline**: another build of the provider (`GARM_BENCH_BASELINE`), built the way the
  image builds the provider (static musl, release profile), in the same iterations as this build,
  so that before and after come from one run.
- **Instructions per command**: each build's commands under cachegrind, at 0 ms per call, each
  with its own token cache warmed first (a count that included a login is refused). RemoveAll
  per runner is RemoveAll of the runners less RemoveAll of none, divided by their number. Its
  floor is the minimal client (bench profile) sending the requests the provider sent for those
  runners and for none again, on a freshly seeded inventory, as many at once as the provider
  has in flight; a run of the same process that prepares the same requests and sends none is
  subtracted, so only the HTTP and TLS stack's work is left. The
  targets of issue 38 compare the shipped binary (the one the image carries) with the baseline,
  both static musl builds; the bench-profile build is listed for reference only.
- **RemoveAllInstances**: the inventory is that many runners of this controller, each with a
  Ready AppInst; latency units are the wall time divided by the simulator's latency per call.
  The floor is 3: the Show round, then DeleteAppInst and DeleteApp of every runner at once.
- **Concurrency**: all processes are started at once; "CPU total / CPUs" is the least wall time
  the CPU work alone needs on this machine. Logins count the simulator's successful logins; with
  an empty token cache every process that starts before the first login is stored logs in.

## Why more round trips than the minimum

- **CreateInstance: 3, against a minimum of 2.** ShowApp, CreateApp, then CreateAppInst (which
  names the App and so cannot be sent before it exists). The ShowApp is there on purpose: a
  CreateApp for a name that exists makes the controller wipe the existing App's secret env vars
  before it answers "already exists" (docs/edge-connect-behaviours.md B8), so the provider looks first and never sends
  one that could damage a live runner. The stream is read to the end: GARM expects `running`.
- **CreateInstance with an empty token cache: 4.** The login comes first (the token cache makes it
  once per token lifetime, 24 h on Edge Connect). Nothing else is remembered between commands: a
  zone placement can only succeed on a controller that keeps App env vars, so no read-back is
  needed; a cloudlet costs one ShowCloudlet per create, and a cloudlet key (possibly an older
  controller) or pull credentials one read-back ShowApp (docs/operations.md).
- **GetInstance: 1 round trip, 2 calls.** The status lives on the AppInst, the ownership (this
  controller's id and the instance name, in the App's environment) on the App. ShowApp and
  ShowAppInst go out together, so the second call costs bytes, not latency.
- **ListInstances: 1 round trip, 2 calls**, for the same reason, whatever the number of runners.
- **DeleteInstance: 3 round trips, 4 calls, against a minimum of 2.** DeleteAppInst then DeleteApp
  is the minimum (an App in use by an AppInst cannot be deleted). The extra round is ShowApp +
  ShowAppInst before them: the provider deletes nothing it has not checked to be this
  controller's runner (`GARM_CONTROLLER_ID` and `GARM_INSTANCE_NAME` in the App's environment),
  because App names are shared by everything in the organization and another controller's or a
  person's App may carry the same name; ShowAppInst also gives the AppInst's key (its cloudlet in
  the older API) for the delete. The row "DeleteInstance vs. minimum round trips" shows what
  dropping the check would save: one latency.
- **DeleteInstance in 3 requests** (ShowApp → DeleteAppInst → DeleteApp) is what the provider
  sends on the zones API with the AppInst check off (`Provider::with_app_inst_check_on_delete`,
  no config key yet). It saves one request, not a round trip (ShowAppInst rides in the ShowApp
  round). It is off by default: ShowAppInst is what tells the runner's AppInst from another App's
  AppInst that took the runner's name (on the zones API an AppInst's key is just its name, so
  this can happen while the runner has no AppInst, e.g. stopped), and DeleteAppInst by name
  alone would delete that one.
## A runner that cannot start: seconds from the cause to the exit

Measured by `cargo test --test it -- --ignored start_failure_timings --nocapture` (not by this
bench), one run on 2026-12-03 17:31 UTC at f52b7a3 on the machine above (shared; a figure may move by one 2 s
poll of the CRM between runs): the provider as GARM runs it, with `start_failure_grace_secs = 5`,
against the simulator's CRM with its 15-minute wait scaled to 90 s (`crm_max_wait`; kubelet's
back-off and the CRM's 2 s polling scale with it, a factor of 0.1). The seconds run from the
provider's log line of the first status message that names the cause to the end of each process;
DeleteInstance is the one GARM runs right after the failed create.

| case | CRM | first line naming the cause | s to CreateInstance exit | s to DeleteInstance exit | exits | DeleteAppInst |
|---|---|---|---|---|---|---|
| unpullable image | central | `ErrImagePull` | 0.2 | 0.2 | 1 / 0 | 0 |
| unpullable image | on the edge | `ErrImagePull` | 4.2 | 4.2 | 1 / 1 | 0 |
| crash loop | central | `: Error` | 0.2 | 0.2 | 1 / 0 | 0 |
| crash loop | on the edge | `: Error` | 4.2 | 4.2 | 1 / 1 | 0 |
| RunContainerError, no back-off after it | central | `: RunContainerError` | 5.0 | 5.0 | 1 / 0 | 0 |
| RunContainerError, no back-off after it | on the edge | `: RunContainerError` | 9.0 | 9.0 | 1 / 1 | 0 |
| PostStartHookError, no back-off after it | central | `: PostStartHookError` | 5.0 | 5.0 | 1 / 0 | 0 |
| PostStartHookError, no back-off after it | on the edge | `: PostStartHookError` | 9.0 | 9.0 | 1 / 1 | 0 |
| pod placed after 8 s, one site | on the edge | `Pending (0/0)` | 10.0 (runs) | - | 0 | 0 |

A back-off (`ImagePullBackOff`, `CrashLoopBackOff`) ends the create at once, any other reason after
the grace. On a central CRM closing the stream makes the controller undo the create, so nothing is
left and no DeleteAppInst is sent. On a CRM on the edge the AppInst cannot be deleted before the
CRM's own wait ends: the rollback gives it 4 s (two polls within its 6 s patience) and names what holds
it, and the DeleteInstance after it exits 1 at once without a DeleteAppInst the platform would
refuse; GARM's retries remove it once the CRM lets it go.

| two-site pool (Munich first), grace 5 s, `request_timeout_secs = 5` | wall s | deadline s | site used | exit | DeleteAppInst |
|---|---|---|---|---|---|
| Munich schedules nothing, CRM central | 5.0 | 60 | Berlin | 0 | 0 |
| Munich schedules nothing, CRM on the edge | 9.0 | 60 | Berlin (as garm-t-2) | 0 | 0 |
| neither schedules, both CRMs on the edge (both hold) | 64.0 | 60 | none | 1 | 0 |
| Munich answers nothing to CreateAppInst | 5.0 | 60 | Berlin | 0 | 0 |
| Munich is full (`No resources available for deployment`) | 0.0 | 60 | Berlin | 0 | 0 |
| the image cannot be pulled anywhere | 0.4 | 60 | none | 1 | 0 |

A site that holds the runner's AppInst (its CRM on the edge, the pod unscheduled) costs the grace
and the 4 s in which the cleanup looks whether the AppInst starts going; the next site then takes
the runner under a second AppInst name (`garm-t-2`, docs/architecture.md, "Failover past a site
that holds the AppInst") and the held AppInst stays for the runner's DeleteInstance. Before,
this create ended there with exit 1 and never tried Berlin. When both sites hold,
the last site waits for its pod up to the deadline (60 s) and the rollback adds Berlin's 4 s:
64 s, within the deadline plus the rollback's 30 s, with both causes named, Munich's first.

## Recording metrics events (issue 37)

Measured by hand (not by this bench), one run on 2026-12-04 20:50 UTC at 6665b5c on the machine
above (shared, load average 1.1 to 2.0 during the run), with the bench profile's
`--no-default-features` binary. CreateInstance as GARM runs it against the simulator (latency
0 ms, a cached token), the same binary with the same config, once without and once with
`metrics_events_file`: the difference is what recording costs a command (a create writes six
events: begin, its three requests, placed, end). Instructions are callgrind's count of the
whole process (`valgrind --tool=callgrind`, one run each); wall time is the median of 30 runs
each (all without, then all with).

| CreateInstance | events off | events on | difference |
|---|--:|--:|--:|
| instructions (callgrind) | 3,344,484 | 3,386,013 | +41,529 (+1.2 %) |
| wall time, median of 30 | 27.8 ms | 28.1 ms | +0.3 ms, within the spread of either (26.5–35.8 ms off, 27.2–32.4 ms on) |

The sidecar (`metrics serve`, same binary) after one million events (115.8 MB of JSON lines; 20
pools, 3 sites, creates with their requests, start failures, placements and Lists, as a busy
GARM writes them), folded by one scrape:

| | |
|---|--:|
| peak RSS (`VmHWM`) before the scrape | 6.0 MB |
| peak RSS after folding the million events and answering the scrape | 6.4 MB |
| time to fold them and answer (one scrape) | 870 ms (about 1.1 million events per second) |
| the next scrape (nothing new) | 15 ms |
| series served / snapshot written on SIGTERM | 1,753 sample lines / 65.7 kB; the events file truncated to 0 |

Memory depends on the number of series (bounded at 10,000), not on the number of events: the
file is read a line at a time (docs/operations.md, "Metrics").

## Site cache: registry mirror

Measured by `cargo test --test it -- --include-ignored site_cache_mirror --nocapture` (not by this
bench; it needs Debian's `docker-registry` and `dockerd`, run as root), one run on 2026-12-06 09:44
UTC at cfd8535 on the machine above, with Debian 12's `docker-registry` 2.8.2 and `docker.io`
20.10.24. The test's image (busybox-static's binary: one layer of 1,064,365 gzipped bytes and a
config of 895) is pulled three times, each by a dockerd of its own with an empty store, as each
runner's `dind` starts: twice through a mirror configured as the site cache's (docs/site-cache.md,
"How the site cache is configured"), then straight from the upstream. The figures are what the
upstream's access log shows for each pull: requests, and body bytes on the wire (a `HEAD` has
none). Times are not measured.

| pull | upstream requests | blob GETs upstream | body bytes from the upstream | of them blobs |
|---|--:|--:|--:|--:|
| first, through the mirror (the site's first runner) | 16 | 4 | 2,131,063 | 2,130,520 |
| second, through the mirror (a later runner) | 2 | 0 | 2 | 0 |
| direct from the upstream (no site cache) | 5 | 2 | 1,065,789 | 1,065,260 |

The second pull read no blob and no manifest body from the upstream: its two requests are the
mirror's `HEAD` of the tag and the `GET /v2/` before it, while the mirror served the daemon its
5 requests and 1,065,789 bytes itself. The first pull through Debian's 2.8 costs the upstream
twice the blob bytes of a direct pull, because that version fetches a missing blob once for the
client and once more to store it; 3.0.0, the official image a site runs, fetches it once
(docs/site-cache.md, "What the upstream serves"), so there the first pull costs what a direct
pull does. Of the first pull's 16 requests, 8 are the mirror's `GET /v2/` before each upstream
request, which only an upstream without authentication like the test's causes (Docker Hub's
challenge is remembered), 2 are `HEAD`s of the blobs, and the rest the tag's `HEAD`, the
manifest and the four blob GETs; the direct pull makes one `GET /v2/`, the tag's `HEAD`, the
manifest and one GET per blob. Between runs the count of `GET /v2/` can move with the order of
the daemon's parallel requests, and the bytes by a few with the image's timestamps.
"#;
