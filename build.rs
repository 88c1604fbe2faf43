//! Identifies the build: the git commit it was built from, when it was built from a git checkout
//! of this repository, for `version` (CLI) and `GetVersion` (GARM). Without git (a source
//! archive, a container build without `.git`) both print the version alone.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=GARM_PROVIDER_VERSION");
    // The static musl binary is a PIE that relocates itself at every start: packed relative
    // relocations (DT_RELR, which musl reads since 1.2.4) take 3 KB where RELA took 225 KB,
    // which each process read whole (docs/packaging.md).
    if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("musl") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let cargo_version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    // A release build names its tag (the release workflow, .ci/release.sh on a tag, the
    // Dockerfile's build argument): GetVersion prints the tag itself. Without it, the Cargo
    // version with the commit as build metadata, as before.
    let tag = std::env::var("GARM_PROVIDER_VERSION")
        .ok()
        .filter(|t| !t.is_empty());
    if let Some(tag) = &tag {
        if let Err(why) = check_tag(tag, &cargo_version) {
            panic!("GARM_PROVIDER_VERSION={tag}: {why}");
        }
    }
    println!(
        "cargo:rustc-env=GARM_PROVIDER_VERSION={}",
        tag.clone().unwrap_or_else(|| format!("v{cargo_version}"))
    );
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
    let metadata = if commit.is_empty() || tag.is_some() {
        String::new()
    } else {
        format!("+{commit}")
    };
    println!("cargo:rustc-env=GARM_PROVIDER_BUILD_METADATA={metadata}");
}

/// A release tag: `v`, Cargo.toml's version, and at most a semver pre-release (`v0.2.0`,
/// `v0.2.0-rc.1`). Another version would make GetVersion disagree with the crate it was built from.
fn check_tag(tag: &str, cargo_version: &str) -> Result<(), String> {
    let Some(version) = tag.strip_prefix('v') else {
        return Err("a release tag starts with v (v1.2.3)".to_string());
    };
    let (core, pre) = match version.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (version, None),
    };
    if core != cargo_version {
        return Err(format!(
            "the tag's version {core} is not Cargo.toml's {cargo_version}: bump Cargo.toml before tagging"
        ));
    }
    let pre_ok = |p: &str| {
        p.split('.').all(|part| {
            !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    if pre.is_some_and(|p| !pre_ok(p)) {
        return Err(
            "a pre-release is dot-separated [0-9A-Za-z-] identifiers (v1.2.3-rc.1)".to_string(),
        );
    }
    Ok(())
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
