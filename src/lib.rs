//! garm-provider-edge-connect: a GARM external provider for Deutsche Telekom Edge Connect.
//!
//! The crate holds two programs that share this library: the provider itself
//! (`garm-provider-edge-connect`) and an in-memory Edge Connect simulator (`edge-connect-sim`)
//! used by the tests, the demo and local trials.

pub mod sim;
