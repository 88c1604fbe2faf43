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
//! # Layers
//!
//! Each layer imports only from the layers below it (and from the leaf modules); the test
//! `layers::imports_point_down` in `tests/it/` checks this on the sources.
//!
//! | Layer | Modules | Job |
//! |---|---|---|
//! | 7 top | `server` | start/stop, the handles tests hold |
//! | 6 | `router` | routing, early faults, auth, dispatch, request log |
//! | 5 | `handlers` (`app`, `appinst`, `infra`, `auth`, `control`, `seed`) | one function per RPC |
//! | 4 | `context` | `Shared` (the running simulator) and `Call` (one request) |
//! | 3 | `domain` | validation, placement, state machines, manifest, ports, tokens |
//! | 2 | `protocol` | request decoding, reply encoding, errors, NDJSON streams |
//! | 1 | `model` | objects, enums, store, inventory, Show filters |
//! | leaf | `config`, `clock`, `faults`, `reqlog`, `gojson` | configuration, time and ids, fault queue, request log, Go's JSON encoding |

use std::sync::{Mutex, MutexGuard, PoisonError};

mod clock;
mod config;
mod context;
mod domain;
mod faults;
mod gojson;
mod handlers;
mod model;
mod protocol;
mod reqlog;
mod router;
mod server;

pub use clock::civil_from_days;
pub use config::{ApiGeneration, CloudletPool, CloudletSettings, ServerRelease, SimConfig};
pub use faults::{Fault, FaultKind};
pub use handlers::seed::Seed;
pub use reqlog::RequestLogEntry;
pub use server::{serve, spawn, SimControl, SimHandle, SimServer};

/// Locks a mutex, recovering the data if a previous holder panicked: one failed request must
/// not take the whole simulator down.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
