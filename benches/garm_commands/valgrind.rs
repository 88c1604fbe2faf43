//! Instruction counts: a provider command run under valgrind's cachegrind without its cache
//! simulation, which counts every instruction the process executes (`I refs`) at a fraction of
//! callgrind's cost. Unlike times, the count hardly depends on the load of a shared machine.

use crate::prelude::*;

static GRINDS: AtomicUsize = AtomicUsize::new(0);

/// One provider run under cachegrind: what to start, and where its summary goes.
pub(crate) struct Cachegrind {
    /// The valgrind executable.
    pub(crate) valgrind: PathBuf,
    /// valgrind's arguments, ending with the provider binary.
    pub(crate) args: Vec<String>,
    log: PathBuf,
}

/// The valgrind executable on `PATH`, if any.
pub(crate) fn valgrind() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("valgrind"))
        .find(|candidate| candidate.is_file())
}

impl Cachegrind {
    /// A run of `provider` whose summary is written into `dir`.
    pub(crate) fn new(provider: &Path, dir: &Path) -> Result<Cachegrind> {
        let valgrind = valgrind().ok_or_else(|| anyhow!("valgrind is not installed"))?;
        let log = dir.join(format!(
            "cachegrind-{}.log",
            GRINDS.fetch_add(1, Ordering::Relaxed)
        ));
        let args = vec![
            "--tool=cachegrind".to_string(),
            "--cache-sim=no".to_string(),
            // Only the total is wanted; no per-function output file.
            "--cachegrind-out-file=/dev/null".to_string(),
            // Its own file, so the provider's stderr stays the provider's.
            format!("--log-file={}", log.display()),
            provider.display().to_string(),
        ];
        Ok(Cachegrind {
            valgrind,
            args,
            log,
        })
    }

    /// A callgrind run of `provider` writing its profile to `out` (for `callgrind_annotate`).
    pub(crate) fn profile(provider: &Path, dir: &Path, out: &Path) -> Result<Cachegrind> {
        let mut run = Cachegrind::new(provider, dir)?;
        run.args[0] = "--tool=callgrind".to_string();
        run.args[1] = format!("--callgrind-out-file={}", out.display());
        run.args.remove(2);
        Ok(run)
    }

    /// The instructions counted (`==pid== I   refs:      12,345,678`).
    pub(crate) fn instructions(&self) -> Result<u64> {
        let text = std::fs::read_to_string(&self.log)
            .with_context(|| format!("cannot read {}", self.log.display()))?;
        parse_i_refs(&text).ok_or_else(|| {
            anyhow!(
                "no instruction count in valgrind's output: {}",
                text.lines().last().unwrap_or_default()
            )
        })
    }
}

fn parse_i_refs(text: &str) -> Option<u64> {
    let line = text
        .lines()
        .find(|l| l.contains("I   refs:") || l.contains("I refs:"))?;
    let digits: String = line
        .split_once("refs:")?
        .1
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
