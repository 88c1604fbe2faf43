//! Provider processes, started by a launcher and reaped with `wait4` (CPU time and peak RSS), and
//! run under valgrind for instruction counts.

use crate::prelude::*;

// Peak RSS needs care. Linux's ru_maxrss of a child is the maximum over the child's whole life,
// and that life begins as a copy of (or, with vfork, a loan of) its parent's address space: on
// exec the kernel records the old address space's high-water mark as the child's. Started from
// this process, which holds the simulator and its 10,000-object inventories, every provider
// would "use" hundreds of MB. So providers are started by a launcher: this same executable
// re-run with `--launch`, which does nothing but spawn and reap them. And the launcher forks
// rather than lends its address space (std's spawn uses vfork semantics, which would make the
// launcher's whole high-water mark the child's, about 4 MB): a forked copy counts only the
// pages it copied, the launcher's private memory. A child that exits at once measures that
// floor (reported), below which RSS figures cannot go.

/// A finished provider process.
pub(crate) struct Proc {
    pub(crate) wall: Duration,
    pub(crate) cpu: Duration,
    pub(crate) max_rss_kb: u64,
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// One process for the launcher to start; its output goes to files (no pipe can fill up and
/// stall it, and no reader threads compete with it for the CPU).
#[derive(Serialize, Deserialize)]
pub(crate) struct Job {
    pub(crate) vars: Vec<(String, String)>,
    pub(crate) stdin: Option<PathBuf>,
    pub(crate) stdout: PathBuf,
    pub(crate) stderr: PathBuf,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct LaunchRequest {
    pub(crate) binary: PathBuf,
    /// Arguments of `binary` (valgrind's, then the provider; none for the provider itself).
    pub(crate) args: Vec<String>,
    /// Started all at once, one after the other without waiting.
    pub(crate) jobs: Vec<Job>,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct JobResult {
    pub(crate) wall_ns: u64,
    pub(crate) cpu_ns: u64,
    pub(crate) max_rss_kb: u64,
    /// Exit code, or `None` when killed by `signal`.
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
}

#[derive(Serialize, Deserialize)]
pub(crate) struct LaunchReply {
    /// The peak RSS of a fork of the launcher that exits at once: the floor of `max_rss_kb`.
    pub(crate) launcher_hwm_kb: u64,
    pub(crate) results: Vec<JobResult>,
}

/// The launcher's side: reads a [`LaunchRequest`] on stdin, answers a [`LaunchReply`] on stdout.
pub(crate) fn launcher() -> Result<()> {
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .context("launcher: reading the request")?;
    let request: LaunchRequest = serde_json::from_str(&text).context("launcher: request")?;
    let launcher_hwm_kb = fork_floor_kb()?;
    let mut started = Vec::with_capacity(request.jobs.len());
    for job in &request.jobs {
        let input = match &job.stdin {
            Some(path) => Stdio::from(
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
            ),
            None => Stdio::null(),
        };
        let create = |path: &Path| {
            File::create(path).with_context(|| format!("cannot create {}", path.display()))
        };
        let mut command = Command::new(&request.binary);
        command
            .args(&request.args)
            .env_clear()
            .current_dir("/")
            .stdin(input)
            .stdout(Stdio::from(create(&job.stdout)?))
            .stderr(Stdio::from(create(&job.stderr)?))
            .envs(job.vars.iter().map(|(k, v)| (k, v)));
        // SAFETY: the hook does nothing; it is there because std forks (instead of spawning with
        // a borrowed address space) when a pre_exec hook is set.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || Ok(()));
        }
        let start = Instant::now();
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", request.binary.display()))?;
        // Reaped with wait4 below, never through `Child` (which would drop the rusage);
        // dropping `Child` neither waits nor kills.
        let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
        started.push((pid, start));
    }
    let mut results: Vec<Option<JobResult>> = (0..started.len()).map(|_| None).collect();
    let mut left = started.len();
    while left > 0 {
        // Whichever child ends first, so that each one's wall time is its own. The launcher
        // has no other children.
        let (pid, status, usage) = wait4(-1)?;
        let end = Instant::now();
        if let Some(i) = started.iter().position(|(p, _)| *p == pid) {
            let timeval = |t: libc::timeval| {
                t.tv_sec.max(0) as u64 * 1_000_000_000 + t.tv_usec.max(0) as u64 * 1000
            };
            results[i] = Some(JobResult {
                wall_ns: (end - started[i].1).as_nanos() as u64,
                cpu_ns: timeval(usage.ru_utime) + timeval(usage.ru_stime),
                // Linux reports ru_maxrss in KiB.
                max_rss_kb: usage.ru_maxrss.max(0) as u64,
                code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
                signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            });
            left -= 1;
        }
    }
    let reply = LaunchReply {
        launcher_hwm_kb,
        results: results.into_iter().flatten().collect(),
    };
    serde_json::to_writer(io::stdout().lock(), &reply).context("launcher: writing the reply")?;
    Ok(())
}

/// What a fork of this process starts with, in KiB: the peak RSS of a child that exits at once,
/// the floor of every child's figure.
pub(crate) fn fork_floor_kb() -> Result<u64> {
    // SAFETY: the launcher has one thread (nothing has started another), so the child may run
    // anything; it runs only _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: ends the child without running anything of the parent's.
        unsafe { libc::_exit(0) };
    }
    ensure!(pid > 0, "fork: {}", io::Error::last_os_error());
    let (_, _, usage) = wait4(pid)?;
    Ok(usage.ru_maxrss.max(0) as u64)
}

/// Waits for `pid` (or any child with -1): its pid, exit status and resource usage.
pub(crate) fn wait4(pid: libc::pid_t) -> Result<(libc::pid_t, i32, libc::rusage)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain old data, so all zeroes is a valid value; wait4 only writes
        // through the two pointers, which point to live locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped > 0 {
            return Ok((reaped, status, usage));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err).context("wait4");
        }
    }
}

/// A provider process to start: its whole environment and its stdin.
pub(crate) struct Spec<'a> {
    pub(crate) vars: Vec<(&'a str, &'a str)>,
    pub(crate) stdin: Option<String>,
}

/// Highest launcher high-water mark seen: the floor of every RSS figure.
pub(crate) static LAUNCHER_HWM_KB: AtomicU64 = AtomicU64::new(0);

/// Starts every job at once through the launcher; returns them in job order and the wall time
/// from the first start to the last exit.
pub(crate) fn run_providers_at_once(
    binary: &Path,
    args: &[String],
    dir: &Path,
    jobs: &[Spec<'_>],
) -> Result<(Vec<Proc>, Duration)> {
    let mut request = LaunchRequest {
        binary: binary.to_path_buf(),
        args: args.to_vec(),
        jobs: Vec::with_capacity(jobs.len()),
    };
    for (i, Spec { vars, stdin }) in jobs.iter().enumerate() {
        let stdin_path = match stdin {
            Some(text) => {
                let path = dir.join(format!("job-{i}.stdin"));
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Some(path)
            }
            None => None,
        };
        request.jobs.push(Job {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            stdin: stdin_path,
            stdout: dir.join(format!("job-{i}.stdout")),
            stderr: dir.join(format!("job-{i}.stderr")),
        });
    }
    let me = std::env::current_exe().context("cannot find the benchmark's own executable")?;
    let mut launcher = Command::new(&me)
        .arg("--launch")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start the launcher {}", me.display()))?;
    {
        let mut pipe = launcher
            .stdin
            .take()
            .ok_or_else(|| anyhow!("launcher has no stdin"))?;
        io::Write::write_all(&mut pipe, &serde_json::to_vec(&request)?)
            .context("cannot hand the jobs to the launcher")?;
    }
    let output = launcher
        .wait_with_output()
        .context("launcher did not finish")?;
    ensure!(
        output.status.success(),
        "launcher failed ({})",
        output.status
    );
    let reply: LaunchReply =
        serde_json::from_slice(&output.stdout).context("launcher reply is not JSON")?;
    ensure!(
        reply.results.len() == jobs.len(),
        "launcher reported {} of {} jobs",
        reply.results.len(),
        jobs.len()
    );
    LAUNCHER_HWM_KB.fetch_max(reply.launcher_hwm_kb, Ordering::Relaxed);
    let read = |path: &Path| -> Result<String> {
        let mut text = String::new();
        File::open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(text)
    };
    let mut procs = Vec::with_capacity(jobs.len());
    for (result, job) in reply.results.iter().zip(&request.jobs) {
        if let Some(signal) = result.signal {
            bail!("{} killed by signal {signal}", binary.display());
        }
        procs.push(Proc {
            wall: Duration::from_nanos(result.wall_ns),
            cpu: Duration::from_nanos(result.cpu_ns),
            max_rss_kb: result.max_rss_kb,
            code: result.code.unwrap_or(-1),
            stdout: read(&job.stdout)?,
            stderr: read(&job.stderr)?,
        });
    }
    let wall = reply
        .results
        .iter()
        .map(|r| Duration::from_nanos(r.wall_ns))
        .max()
        .unwrap_or_default();
    Ok((procs, wall))
}

pub(crate) fn run_provider(
    binary: &Path,
    args: &[String],
    dir: &Path,
    vars: &[(&str, &str)],
    stdin: Option<&str>,
) -> Result<Proc> {
    let spec = Spec {
        vars: vars.to_vec(),
        stdin: stdin.map(str::to_string),
    };
    let (mut procs, _) = run_providers_at_once(binary, args, dir, &[spec])?;
    procs
        .pop()
        .ok_or_else(|| anyhow!("launcher returned no process"))
}
