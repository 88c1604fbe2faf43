//! Layer 2: the MC's wire format. Reading requests the way the MC does (lenient JSON,
//! `Invalid JSON data` texts), writing replies the way Go's encoder does, error replies and
//! NDJSON streams.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod error;
pub(crate) mod stream;

pub(crate) use error::{capitalize, ApiError};
