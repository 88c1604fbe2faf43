//! A client for the Edge Connect (EdgeXR Master Controller) REST API.
//!
//! It knows nothing of GARM or of any config file: it takes [`ClientOptions`], [`Credentials`]
//! and a [`Deadline`], logs in, sends one POST per RPC under that deadline, reads unary answers,
//! Show answers (as a typed [`Show`] stream the caller filters while it streams) and AppInst
//! operation streams line by line, and returns typed objects ([`models`]) or an [`ApiError`]
//! (naming its [`Rpc`]) whose [`ApiErrorKind`] says what happened. This crate is the only place that
//! reads the controller's message texts.
//!
//! | Module | Job |
//! |---|---|
//! | `options` | what a client is built from |
//! | `client` | what a client is made of and shares between its handles |
//! | `login` | login with retries, one refusal per command, one login shared between processes |
//! | `call` | one POST (retried while unreachable, re-login on 401); unary calls |
//! | `stream` | Show answers as a typed [`Show`] stream; AppInst operation streams |
//! | `deadline` | the command's [`Deadline`], backoff |
//! | `proxy` | which proxy the environment selects for the URL |
//! | `transport` | bodies and chunks under the silence bound and the deadline, size caps, transport errors |
//! | `lines` | one stream line at a time: split, parsed with serde, a body cut inside a line refused |
//! | `rpc` | the RPCs by name ([`Rpc`]) and one function per RPC |
//! | [`appinst_start`] | what a CreateAppInst stream says about the start: success line, pod status reasons, docker pull failures |
//! | [`models`], `state` | objects as sent and as shown; [`AppInstState`] |
//! | [`error`] | typed errors from status codes and controller texts, each message one scrubbed line |
//! | [`token_cache`] | tokens shared between processes |
//! | `secret`, `scrub` | [`Secret`] values; the command's [`Scrubber`], which masks them (and bearer tokens, JWTs) in any encoding in text written out |

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
mod proxy;
mod rpc;
mod scrub;
mod secret;
mod state;
mod stream;
pub mod token_cache;
mod transport;

pub use client::{Client, RetryReport};
pub use deadline::{backoff, Deadline};
pub use error::{ApiError, ApiErrorKind, Subject};
pub use lines::Mentions;
pub use options::{ClientOptions, Credentials, SetupError, DEFAULT_CONNECT_RETRY};
pub use rpc::{Rpc, MAX_COLLECTED};
pub use scrub::{Scrubber, TooManySecrets, MAX_PROTECTED_BYTES, MIN_SECRET_CHARS};
pub use secret::Secret;
pub use state::AppInstState;
pub use stream::{Show, StreamEnd};
