//! Step 6: the binary's size and start-up.

use crate::prelude::*;

pub(crate) struct BinaryResults {
    pub(crate) measured: PathBuf,
    pub(crate) measured_size: u64,
    pub(crate) shipped: Option<(PathBuf, u64, String, Vec<f64>)>,
    pub(crate) measured_version: Vec<f64>,
}

/// The static musl release binary the image ships, if it was built in this target directory.
pub(crate) fn shipped_binary() -> Option<PathBuf> {
    let measured = Path::new(PROVIDER);
    // <target>/<profile dir>/garm-provider-edge-connect
    let target = measured.parent()?.parent()?;
    let path = target
        .join("x86_64-unknown-linux-musl")
        .join("release")
        .join("garm-provider-edge-connect");
    // A release binary left from an earlier checkout is not this build: it is measured only
    // when it names the same version (and commit) as the measured one.
    let version = |binary: &Path| {
        std::process::Command::new(binary)
            .env_clear()
            .env("GARM_COMMAND", "GetVersion")
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| out.stdout)
    };
    let same = path.is_file() && version(&path).is_some() && version(&path) == version(measured);
    if path.is_file() && !same {
        eprintln!("  {} is not this build: not measured", path.display());
    }
    same.then_some(path)
}

pub(crate) fn binary_step(plan: &Plan, base: &Path) -> Result<BinaryResults> {
    let measured = PathBuf::from(PROVIDER);
    let measured_size = std::fs::metadata(&measured)
        .with_context(|| format!("cannot stat {}", measured.display()))?
        .len();
    let version_wall = |binary: &Path| -> Result<f64> {
        let proc = run_provider(binary, &[], base, &[("GARM_COMMAND", "GetVersion")], None)?;
        ensure!(
            proc.code == 0,
            "GetVersion of {} exited {}",
            binary.display(),
            proc.code
        );
        Ok(ms(proc.wall))
    };
    let mut shipped = match shipped_binary() {
        Some(path) => {
            let meta = std::fs::metadata(&path)?;
            let built = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| utc_date(d.as_secs()))
                .unwrap_or_else(|| "unknown".to_string());
            Some((path, meta.len(), built, Vec::new()))
        }
        None => None,
    };
    let mut measured_version = Vec::new();
    // Alternating, so both see the same load; run 0 puts both binaries in the page cache.
    for i in 0..=plan.version_runs {
        let wall = version_wall(&measured)?;
        if i > 0 {
            measured_version.push(wall);
        }
        if let Some((path, _, _, walls)) = &mut shipped {
            let wall = version_wall(path)?;
            if i > 0 {
                walls.push(wall);
            }
        }
    }
    Ok(BinaryResults {
        measured,
        measured_size,
        shipped,
        measured_version,
    })
}
