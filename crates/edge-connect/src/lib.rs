//! A client for the Edge Connect (EdgeXR Master Controller) REST API.
//!
//! It knows nothing of GARM or of any config file: it takes [`ClientOptions`], [`Credentials`]
//! and a [`Deadline`], logs in, sends one POST per RPC under that deadline, reads unary answers,
//! Show answers (as a typed [`Show`] stream the caller filters while it streams) and AppInst
//! operation streams line by line, and returns typed objects ([`models`]) or an [`ApiError`]
//! (naming its [`Rpc`]) whose [`ApiErrorKind`] says what happened. This crate is the only place that
//! reads the controller's message texts.
//!
//! Its modules, each with its layer and job, are in the table of `docs/architecture.md` ("The
//! client"), which the workspace's `tests/it/layers.rs` holds against the code.

mod api;
pub mod appinst_start;
mod call;
mod client;
mod deadline;
pub mod error;
#[cfg(test)]
mod hostile_tests;
pub mod jwt;
mod lines;
mod login;
pub mod models;
mod options;
pub mod proxy;
mod rpc;
mod scrub;
mod state;
mod stream;
pub mod token_cache;
mod transport;

pub use api::MAX_COLLECTED;
pub use client::{CallReport, Client, RetryReport};
pub use deadline::{backoff, retry, Deadline};
pub use error::{Answer, ApiError, ApiErrorKind, Retries, Subject};
pub use options::{ClientOptions, Credentials, SetupError, DEFAULT_CONNECT_RETRY};
pub use rpc::Rpc;
pub use scrub::{Scrubber, TooManySecrets, MAX_PROTECTED_BYTES, MIN_SECRET_CHARS};
pub use secret::Secret;
pub use state::AppInstState;
pub use stream::{collect, Show, StreamEnd};
