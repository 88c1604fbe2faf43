//! Identifies the build: the git commit it was built from, when it was built from a git checkout
//! of this repository, for `version` (CLI) and `GetVersion` (GARM). Without git (a source
//! archive, a container build without `.git`) both print the version alone.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = commit(&manifest_dir);
    if commit.is_some() {
        // HEAD changes on checkout; the branch's ref (loose or packed) changes on commit.
        let mut watched = vec![git(&manifest_dir, &["rev-parse", "--git-path", "HEAD"])];
        if let Some(head_ref) = git(&manifest_dir, &["symbolic-ref", "-q", "HEAD"]) {
            watched.push(git(&manifest_dir, &["rev-parse", "--git-path", &head_ref]));
        }
        watched.push(git(
            &manifest_dir,
            &["rev-parse", "--git-path", "packed-refs"],
        ));
        for path in watched.into_iter().flatten() {
            let path = manifest_dir.join(path);
            // A watched path that does not exist would make cargo rerun this on every build.
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let commit = commit.unwrap_or_default();
    println!("cargo:rustc-env=GARM_PROVIDER_GIT_COMMIT={commit}");
    // Semver build metadata ("+abc1234"): GetVersion stays a valid semver version.
    let metadata = if commit.is_empty() {
        String::new()
    } else {
        format!("+{commit}")
    };
    println!("cargo:rustc-env=GARM_PROVIDER_BUILD_METADATA={metadata}");
}

/// The short commit, if `dir` is the top of a git work tree (not merely inside another
/// repository that vendors this one).
fn commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = std::fs::canonicalize(&top).ok()? == std::fs::canonicalize(dir).ok()?;
    if !same {
        return None;
    }
    let commit = git(dir, &["rev-parse", "--short=7", "HEAD"])?;
    commit
        .chars()
        .all(|c| c.is_ascii_hexdigit())
        .then_some(commit)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}
