//! The Edge Connect (EdgeXR Master Controller) REST API client.

pub mod api;
pub mod client;
pub mod envmap;
pub mod error;
pub mod models;
pub mod ndjson;

pub use client::{Client, LoginLock, StreamEnd, TokenStore};
pub use error::{ApiError, ApiErrorKind};
