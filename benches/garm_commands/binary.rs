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
    path.is_file().then_some(path)
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
