//! An in-memory Edge Connect (EdgeXR Master Controller) that speaks the same REST API.
//!
//! The simulator follows `spec/edge-connect-api.md` (§11 "Fake server behaviours"): password
//! login with real HS512 JWTs, the MC's 401/403/404/405 answers, region checks, lenient JSON
//! (case-insensitive keys, unknown fields ignored), App create/update/delete/show with the
//! controller's validation texts, AppInst create/update/delete/show as NDJSON streams whose
//! state changes are visible while they run, both AppInst key generations, and fault
//! injection plus seeding under `/__sim/*` for tests.
//!
//! Start it in-process with [`spawn`] (own runtime, any test) or [`serve`] (current runtime),
//! or run the `edge-connect-sim` binary:
//!
//! ```no_run
//! use edge_connect_sim::{spawn, Fault, SimConfig};
//!
//! let sim = spawn(SimConfig::default()).expect("simulator starts");
//! println!("Edge Connect at {}", sim.url());
//! sim.inject(Fault::http_status("CreateAppInst", 503));
//! ```
//!
//! | Module | Job |
//! |---|---|
//! | `config` | what an instance looks like |
//! | `http` | routing, early faults, auth, dispatch, request log |
//! | `auth` | login, JWTs, refresh |
//! | `wire` | lenient JSON decoding and error replies |
//! | `model`, `enums` | API objects and enums |
//! | `app`, `appinst`, `infra` | the RPCs |
//! | `ops` | AppInst state machines |
//! | `stream` | NDJSON replies |
//! | `store` | state and indexes |
//! | `faults`, `seed`, `control` | test hooks |
//! | `reqlog` | request log |

use std::sync::{Mutex, MutexGuard, PoisonError};

mod app;
mod appinst;
mod auth;
mod clock;
mod config;
mod control;
mod enums;
mod faults;
mod filter;
mod http;
mod infra;
mod manifest;
mod model;
mod ops;
mod ports;
mod reqlog;
mod seed;
mod server;
mod store;
mod stream;
mod wire;

pub use clock::civil_from_days;
pub use config::{ApiGeneration, SimConfig};
pub use faults::{Fault, FaultKind};
pub use reqlog::RequestLogEntry;
pub use seed::Seed;
pub use server::{serve, spawn, SimControl, SimHandle, SimServer};

/// Locks a mutex, recovering the data if a previous holder panicked: one failed request must
/// not take the whole simulator down.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
