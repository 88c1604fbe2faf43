//! Where a [`Client`](crate::Client) keeps tokens between processes: the interface the file
//! cache ([`crate::token_cache::TokenCache`]) implements, so a client can be built with or
//! without one.

use crate::secret::Secret;

/// Where a client gets a cached token from and hands a fresh one to (the token cache).
pub trait TokenStore: Send + Sync {
    /// A token believed to be valid, if any.
    fn load(&self) -> Option<Secret>;
    /// Remember a freshly issued token.
    fn save(&self, token: &Secret);
    /// Forget a token the server refused.
    fn discard(&self, token: &Secret);
    /// Try to become the one process that logs in, so that many processes starting at once
    /// share one login instead of each making its own.
    fn try_login_lock(&self) -> LoginLock;
}

/// The result of [`TokenStore::try_login_lock`].
pub enum LoginLock {
    /// This process holds the lock until the guard is dropped.
    Acquired(Box<dyn Send>),
    /// Another process is logging in right now.
    Busy,
    /// No lock can be taken (read-only directory, ...): log in without one.
    Unavailable,
}
