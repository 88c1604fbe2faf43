//! A token cache shared by provider processes, so that N GARM calls within a token's lifetime
//! log in once instead of N times.
//!
//! One file per (Edge Connect URL, user), named by a hash of both, mode 0600, in a directory with
//! mode 0700. Writes go to a temporary file that is renamed into place, so concurrent processes
//! read either the old or the new token, never half of one. A file that is unreadable, stale,
//! malformed or in a directory others can write to is ignored with a log line.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::secret::Secret;
use crate::token_store::{LoginLock, TokenStore};

/// Tokens expiring within this many seconds are not reused.
const EXPIRY_MARGIN_SECS: u64 = 300;
/// Lifetime assumed for a token whose `exp` cannot be read.
const FALLBACK_LIFETIME_SECS: u64 = 3600;

/// The cache file for one URL and user.
pub struct TokenCache {
    path: PathBuf,
    lock_path: PathBuf,
    /// What was learnt about the server ([`crate::ServerFacts`]): per URL, whoever logs in.
    facts_path: PathBuf,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CachedToken {
    token: String,
    expires_at: u64,
}

impl TokenCache {
    /// The cache in `dir` for `url` and `username` (creates `dir` with mode 0700 if missing).
    pub fn in_dir(dir: &Path, url: &str, username: &str) -> Option<Self> {
        if let Err(e) = ensure_private_dir(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "token cache disabled");
            return None;
        }
        let url = url.trim_end_matches('/');
        let id = short_hash(&[url.as_bytes(), username.as_bytes()]);
        Some(TokenCache {
            path: dir.join(format!("token-{id}.json")),
            lock_path: dir.join(format!("token-{id}.lock")),
            facts_path: dir.join(format!("facts-{}.json", short_hash(&[url.as_bytes()]))),
        })
    }

    /// Where the cache file lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// 24 hex digits of SHA-256 over the parts, newline-separated: a file name that reveals nothing.
fn short_hash(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hasher.update(b"\n");
        }
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `$XDG_RUNTIME_DIR` or the system temp dir (GARM's bare environment has neither HOME nor
/// TMPDIR; `/tmp` then), in a per-user subdirectory.
pub fn default_dir(environment: &HashMap<String, String>) -> PathBuf {
    let base = environment
        .get("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!("garm-provider-edge-connect-{}", user_tag()))
}

#[cfg(unix)]
fn user_tag() -> String {
    use std::os::unix::fs::MetadataExt;
    // The owner of /proc/self is the process's uid, without libc.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid().to_string())
        .unwrap_or_else(|_| "user".into())
}

#[cfg(not(unix))]
fn user_tag() -> String {
    "user".into()
}

#[cfg(unix)]
fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::metadata(dir)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "directory has mode {mode:o}; it must be 700"
        )));
    }
    if let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) {
        if meta.uid() != me {
            return Err(std::io::Error::other("directory belongs to another user"));
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// `exp` of a JWT, read without verification (only the server can verify it).
fn jwt_expiry(token: &str) -> Option<u64> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()?
        .get("exp")?
        .as_u64()
}

impl TokenStore for TokenCache {
    fn load(&self) -> Option<Secret> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::info!(error = %e, "token cache unreadable; logging in");
                return None;
            }
        };
        match serde_json::from_str::<CachedToken>(&text) {
            Ok(c) if c.expires_at > now() + EXPIRY_MARGIN_SECS && !c.token.is_empty() => {
                tracing::debug!("using cached token");
                Some(Secret::new(c.token))
            }
            Ok(_) => {
                tracing::info!("cached token expired; logging in");
                None
            }
            Err(_) => {
                tracing::info!("token cache malformed; logging in");
                None
            }
        }
    }

    fn save(&self, token: &Secret) {
        let expires_at =
            jwt_expiry(token.expose()).unwrap_or_else(|| now() + FALLBACK_LIFETIME_SECS);
        let body = CachedToken {
            token: token.expose().to_string(),
            expires_at,
        };
        if let Err(e) = write_atomically(&self.path, &body) {
            tracing::info!(error = %e, "cannot write the token cache");
        }
    }

    fn try_login_lock(&self) -> LoginLock {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = match options.open(&self.lock_path) {
            Ok(f) => f,
            Err(e) => {
                tracing::info!(error = %e, "cannot open the login lock; logging in without it");
                return LoginLock::Unavailable;
            }
        };
        // An advisory lock: released when the file is closed, so also when the process dies.
        match file.try_lock() {
            Ok(()) => LoginLock::Acquired(Box::new(file)),
            Err(std::fs::TryLockError::WouldBlock) => LoginLock::Busy,
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::info!(error = %e, "cannot take the login lock; logging in without it");
                LoginLock::Unavailable
            }
        }
    }

    fn load_facts(&self) -> Option<crate::ServerFacts> {
        let text = std::fs::read_to_string(&self.facts_path).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn save_facts(&self, facts: &crate::ServerFacts) {
        if let Err(e) = write_atomically(&self.facts_path, facts) {
            tracing::info!(error = %e, "cannot write the server facts beside the token cache");
        }
    }

    fn discard(&self, token: &Secret) {
        // Only remove the file if it still holds the refused token: another process may have
        // stored a fresh one meanwhile.
        if let Ok(text) = std::fs::read_to_string(&self.path) {
            if serde_json::from_str::<CachedToken>(&text).is_ok_and(|c| c.token == token.expose()) {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

fn write_atomically(path: &Path, body: &impl serde::Serialize) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let unique = format!(
        ".tmp-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    );
    let tmp = dir.join(unique);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        file.write_all(
            serde_json::to_string(body)
                .map_err(std::io::Error::other)?
                .as_bytes(),
        )?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(exp: u64) -> String {
        let payload =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(r#"{{"exp":{exp}}}"#));
        format!("eyJhbGciOiJIUzUxMiJ9.{payload}.sig")
    }

    #[test]
    fn stores_loads_and_discards() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TokenCache::in_dir(&dir.path().join("c"), "https://ec", "u").unwrap();
        assert!(cache.load().is_none());
        let token = Secret::new(jwt(now() + 3600));
        cache.save(&token);
        assert_eq!(cache.load().as_ref(), Some(&token));
        cache.discard(&Secret::new("other"));
        assert!(cache.load().is_some());
        cache.discard(&token);
        assert!(cache.load().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn file_is_private_and_keyed_by_url_and_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("c");
        let a = TokenCache::in_dir(&d, "https://ec", "u").unwrap();
        let b = TokenCache::in_dir(&d, "https://ec", "v").unwrap();
        let c = TokenCache::in_dir(&d, "https://other", "u").unwrap();
        assert_ne!(a.path(), b.path());
        assert_ne!(a.path(), c.path());
        a.save(&Secret::new(jwt(now() + 3600)));
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(b.load().is_none());
    }

    #[test]
    fn one_process_at_a_time_holds_the_login_lock() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenCache::in_dir(&dir.path().join("c"), "https://ec", "u").unwrap();
        let b = TokenCache::in_dir(&dir.path().join("c"), "https://ec", "u").unwrap();
        let guard = match a.try_login_lock() {
            LoginLock::Acquired(g) => g,
            _ => panic!("first lock is free"),
        };
        assert!(matches!(b.try_login_lock(), LoginLock::Busy));
        drop(guard);
        assert!(matches!(b.try_login_lock(), LoginLock::Acquired(_)));
    }

    #[test]
    fn expired_and_malformed_entries_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let cache = TokenCache::in_dir(&dir.path().join("c"), "https://ec", "u").unwrap();
        cache.save(&Secret::new(jwt(now() + 10)));
        assert!(cache.load().is_none());
        std::fs::write(cache.path(), "not json").unwrap();
        assert!(cache.load().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_shared_directory_disables_the_cache() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("open");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(TokenCache::in_dir(&d, "https://ec", "u").is_none());
    }
}
