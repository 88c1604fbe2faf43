//! A token cache shared by provider processes, so that N GARM calls within a token's lifetime
//! log in once instead of N times.
//!
//! One file per (Edge Connect URL, user, password), named by a one-way hash of the three (never
//! the password itself), so that a changed or rotated password means a new login on the next
//! call instead of a stale token hiding it. Mode 0600, in a directory with mode 0700. Writes go
//! to a temporary file that is renamed into place, so concurrent processes read either the old
//! or the new token, never half of one.
//!
//! The default directory is in the system temp directory, where other users can plant things:
//! the directory, the cache file and the lock file are opened without following symbolic links
//! and must belong to this user and be private (the directory 0700; files not writable by
//! group or others). Otherwise the cache is not used, with a warning, and the process logs in
//! without it.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::options::Credentials;
use secret::Secret;

/// Tokens are not reused this close to their expiry: at most this many seconds ...
const MAX_EXPIRY_MARGIN_SECS: u64 = 300;
/// ... and at most this fraction of their lifetime, so that a token living 10 minutes is still
/// reused for 9 of them (a fixed 300 s margin would make every process log in).
const EXPIRY_MARGIN_DIVISOR: u64 = 10;
/// Lifetime assumed for a token whose `exp` cannot be read.
const FALLBACK_LIFETIME_SECS: u64 = 3600;
/// A cache file is a token and two numbers; anything larger is not ours.
const MAX_CACHE_FILE: u64 = 64 * 1024;

/// The cache file for one URL and set of credentials, where a [`Client`](crate::Client) gets a
/// cached token from and hands a fresh one to.
pub struct TokenCache {
    path: PathBuf,
    lock_path: PathBuf,
}

/// The result of [`TokenCache::try_login_lock`].
pub(crate) enum LoginLock {
    /// This process holds the lock until the file is dropped.
    Acquired(#[allow(dead_code)] File),
    /// Another process is logging in right now.
    Busy,
    /// No lock can be taken (read-only directory, ...): log in without one.
    Unavailable,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CachedToken {
    token: String,
    expires_at: u64,
    /// When the token was issued (`iat`, else when it was stored); absent (0) in older files,
    /// whose tokens then keep the full margin.
    #[serde(default)]
    issued_at: u64,
}

impl CachedToken {
    /// Still usable: not within the expiry margin.
    fn usable(&self, now: u64) -> bool {
        let lifetime = self.expires_at.saturating_sub(self.issued_at);
        let margin = MAX_EXPIRY_MARGIN_SECS.min(lifetime / EXPIRY_MARGIN_DIVISOR);
        !self.token.is_empty() && self.expires_at > now.saturating_add(margin)
    }
}

/// A one-way name for (URL, user, password). Each part is length-prefixed so that no two
/// different triples hash the same bytes; the name shows nothing of the password, and a
/// changed password changes it.
fn cache_id(url: &str, credentials: &Credentials) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"garm-provider-edge-connect token cache v2\n");
    for part in [
        url.trim_end_matches('/'),
        credentials.username.as_str(),
        credentials.password.expose(),
    ] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `$XDG_RUNTIME_DIR` or the system temp dir (GARM's bare environment has neither HOME nor
/// TMPDIR; `/tmp` then), in a per-user subdirectory.
pub fn default_dir(environment: &HashMap<String, String>) -> PathBuf {
    let base = environment
        .get("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!("garm-provider-edge-connect-{}", my_uid()))
}

fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // Not `metadata`: a symbolic link planted in place of the directory must not be followed.
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return Err(std::io::Error::other("is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(std::io::Error::other("is not a directory"));
    }
    owned_and_closed(&meta, 0o077, "it must be 700")
}

/// `meta` belongs to this user and has none of the mode bits `forbidden` (`why` says why).
fn owned_and_closed(meta: &std::fs::Metadata, forbidden: u32, why: &str) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if meta.uid() != my_uid() {
        return Err(std::io::Error::other(format!(
            "belongs to uid {}, not to this user (uid {})",
            meta.uid(),
            my_uid()
        )));
    }
    let mode = meta.mode() & 0o777;
    if mode & forbidden != 0 {
        return Err(std::io::Error::other(format!("has mode {mode:o}; {why}")));
    }
    Ok(())
}

/// Opens `path` with `options` (a file it creates gets mode 0600), never following a symbolic
/// link in its last component, and checks that what was opened is a regular file of this user
/// that group and others cannot write (`private`: nor read).
fn open_private(
    path: &Path,
    options: &mut std::fs::OpenOptions,
    private: bool,
) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    options
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = options.open(path).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            std::io::Error::other("is a symbolic link")
        } else {
            e
        }
    })?;
    // Checked on the open file, not the path, so that nothing can be swapped in between.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("is not a regular file"));
    }
    let forbidden = if private { 0o077 } else { 0o022 };
    owned_and_closed(&meta, forbidden, "other users could change it")?;
    Ok(file)
}

impl TokenCache {
    /// The cache in `dir` for `url` and `credentials` (creates `dir` with mode 0700 if
    /// missing). `None`, with a warning, when `dir` is not a private directory of this user.
    pub fn in_dir(dir: &Path, url: &str, credentials: &Credentials) -> Option<Self> {
        if let Err(e) = ensure_private_dir(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "token cache not used; logging in without it");
            return None;
        }
        let id = cache_id(url, credentials);
        Some(TokenCache {
            path: dir.join(format!("token-{id}.json")),
            lock_path: dir.join(format!("token-{id}.lock")),
        })
    }

    /// The cache file's entry; `None` when there is none or it cannot be trusted (logged).
    fn read(&self) -> Option<CachedToken> {
        let file = open_private(&self.path, std::fs::OpenOptions::new().read(true), true);
        let file = file.inspect_err(|e| {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(file = %self.path.display(), error = %e, "token cache file not used; logging in");
            }
        });
        let mut text = String::new();
        file.ok()?
            .take(MAX_CACHE_FILE)
            .read_to_string(&mut text)
            .inspect_err(|e| tracing::info!(error = %e, "token cache unreadable; logging in"))
            .ok()?;
        serde_json::from_str(&text)
            .inspect_err(|_| tracing::info!("token cache malformed; logging in"))
            .ok()
    }

    /// A token believed to be valid, if any.
    pub(crate) fn load(&self) -> Option<Secret> {
        let cached = self.read()?;
        if cached.usable(now()) {
            tracing::debug!("using cached token");
            Some(Secret::new(cached.token))
        } else {
            tracing::info!("cached token expired; logging in");
            None
        }
    }

    /// Remembers a freshly issued token, until the `exp` it names (read without verification:
    /// only the server can verify it).
    pub(crate) fn save(&self, token: &Secret) {
        let now = now();
        let claims = crate::jwt::unverified_claims(token.expose());
        let claim = |k: &str| claims.as_ref().and_then(|c| c.get(k)?.as_u64());
        let body = CachedToken {
            token: token.expose().to_string(),
            expires_at: claim("exp").unwrap_or(now + FALLBACK_LIFETIME_SECS),
            issued_at: claim("iat").unwrap_or(now),
        };
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        // A new file of its own (O_EXCL, mode 0600: nothing planted is opened), removed if
        // dropped before it is in place; rename replaces a link at `path` itself, never writes
        // through it.
        let written = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(dir)
            .and_then(|mut file| {
                file.write_all(&serde_json::to_vec(&body)?)?;
                file.as_file().sync_all()?;
                Ok(file.persist(&self.path)?)
            });
        if let Err(e) = written {
            tracing::info!(error = %e, "cannot write the token cache");
        }
    }

    /// Tries to become the one process that logs in, so that many processes starting at once
    /// share one login instead of each making its own.
    pub(crate) fn try_login_lock(&self) -> LoginLock {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).truncate(false).write(true);
        let file = match open_private(&self.lock_path, &mut options, false) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(file = %self.lock_path.display(), error = %e, "login lock not used; logging in without it");
                return LoginLock::Unavailable;
            }
        };
        // An advisory lock: released when the file is closed, so also when the process dies.
        match file.try_lock() {
            Ok(()) => LoginLock::Acquired(file),
            Err(std::fs::TryLockError::WouldBlock) => LoginLock::Busy,
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::info!(error = %e, "cannot take the login lock; logging in without it");
                LoginLock::Unavailable
            }
        }
    }

    /// Forgets a token the server refused.
    pub(crate) fn discard(&self, token: &Secret) {
        // Only remove the file if it still holds the refused token: another process may have
        // stored a fresh one meanwhile. (unlink removes a link itself, never its target.)
        if self.read().is_some_and(|c| c.token == token.expose()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn jwt(exp: u64) -> String {
        let payload =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(r#"{{"exp":{exp}}}"#));
        format!("eyJhbGciOiJIUzUxMiJ9.{payload}.sig")
    }

    fn jwt_issued(iat: u64, exp: u64) -> String {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!(r#"{{"iat":{iat},"exp":{exp}}}"#));
        format!("eyJhbGciOiJIUzUxMiJ9.{payload}.sig")
    }

    fn creds(user: &str, password: &str) -> Credentials {
        Credentials {
            username: user.into(),
            password: Secret::new(password),
        }
    }

    fn cache(dir: &Path) -> TokenCache {
        TokenCache::in_dir(dir, "https://ec", &creds("u", "p")).unwrap()
    }

    #[test]
    fn stores_loads_and_discards() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir.path().join("c"));
        assert!(cache.load().is_none());
        let token = Secret::new(jwt(now() + 3600));
        cache.save(&token);
        assert_eq!(cache.load().as_ref(), Some(&token));
        cache.discard(&Secret::new("other"));
        assert!(cache.load().is_some());
        cache.discard(&token);
        assert!(cache.load().is_none());
    }

    #[test]
    fn file_is_private_and_keyed_by_url_user_and_password() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("c");
        let a = TokenCache::in_dir(&d, "https://ec", &creds("u", "p")).unwrap();
        let b = TokenCache::in_dir(&d, "https://ec", &creds("v", "p")).unwrap();
        let c = TokenCache::in_dir(&d, "https://other", &creds("u", "p")).unwrap();
        let e = TokenCache::in_dir(&d, "https://ec", &creds("u", "rotated")).unwrap();
        assert_ne!(a.path, b.path);
        assert_ne!(a.path, c.path);
        assert_ne!(a.path, e.path, "a changed password is another cache file");
        assert!(!e.path.to_string_lossy().contains("rotated"));
        a.save(&Secret::new(jwt(now() + 3600)));
        let mode = std::fs::metadata(&a.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(b.load().is_none());
    }

    #[test]
    fn one_process_at_a_time_holds_the_login_lock() {
        let dir = tempfile::tempdir().unwrap();
        let a = cache(&dir.path().join("c"));
        let b = cache(&dir.path().join("c"));
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
        let cache = cache(&dir.path().join("c"));
        cache.save(&Secret::new(jwt_issued(now() - 3600, now() + 10)));
        assert!(cache.load().is_none());
        std::fs::write(&cache.path, "not json").unwrap();
        assert!(cache.load().is_none());
    }

    #[test]
    fn a_shared_directory_disables_the_cache() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("open");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(TokenCache::in_dir(&d, "https://ec", &creds("u", "p")).is_none());
    }

    #[test]
    fn short_lived_tokens_are_reused_for_most_of_their_life() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache(&dir.path().join("c"));
        // A 120 s token with 100 s left: the margin is 12 s, not 300 s.
        let t = now();
        let token = Secret::new(jwt_issued(t - 20, t + 100));
        cache.save(&token);
        assert_eq!(cache.load().as_ref(), Some(&token));
        // With 10 s left it is not.
        cache.save(&Secret::new(jwt_issued(t - 110, t + 10)));
        assert!(cache.load().is_none());
        // A long-lived token keeps the 300 s margin.
        cache.save(&Secret::new(jwt_issued(t - 86_000, t + 200)));
        assert!(cache.load().is_none());
    }

    #[test]
    fn planted_links_and_foreign_files_are_not_followed_or_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o700)).unwrap();
        // The directory itself is a link: not used.
        let link_dir = dir.path().join("linked");
        std::os::unix::fs::symlink(&elsewhere, &link_dir).unwrap();
        assert!(TokenCache::in_dir(&link_dir, "https://ec", &creds("u", "p")).is_none());
        // The cache and lock files are links: not read, not written through, no lock.
        let d = dir.path().join("c");
        let c = cache(&d);
        let target = elsewhere.join("target");
        std::fs::write(&target, r#"{"token":"planted","expires_at":99999999999}"#).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&target, &c.path).unwrap();
        std::os::unix::fs::symlink(&target, &c.lock_path).unwrap();
        assert!(c.load().is_none(), "a planted link is not read");
        assert!(matches!(c.try_login_lock(), LoginLock::Unavailable));
        c.save(&Secret::new(jwt(now() + 3600)));
        assert!(
            std::fs::read_to_string(&target)
                .unwrap()
                .contains("planted"),
            "the link's target is untouched"
        );
        assert!(!std::fs::symlink_metadata(&c.path)
            .unwrap()
            .file_type()
            .is_symlink());
        // A cache file others can write to is not trusted.
        std::fs::set_permissions(&c.path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(c.load().is_none());
    }

    #[test]
    fn files_of_another_user_are_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        if my_uid() != 0 {
            // Only root can give a file away; the check is the same uid comparison.
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("c");
        let c = cache(&d);
        c.save(&Secret::new(jwt(now() + 3600)));
        assert!(c.load().is_some());
        std::os::unix::fs::chown(&c.path, Some(4242), None).unwrap();
        assert!(c.load().is_none(), "a foreign cache file is not trusted");
        let foreign = dir.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&foreign, Some(4242), None).unwrap();
        assert!(TokenCache::in_dir(&foreign, "https://ec", &creds("u", "p")).is_none());
    }
}
