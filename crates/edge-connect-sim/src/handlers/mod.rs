//! Layer 5: one function per RPC. Each decodes its request, checks access and region in
//! the MC's order, applies the domain rules to the store under the state lock and writes the
//! reply.
//!
//! | Module | RPCs |
//! |---|---|
//! | `app` | CreateApp, DeleteApp, ShowApp |
//! | `appinst` | CreateAppInst, DeleteAppInst |
//! | `appinst_show` | ShowAppInst |
//! | `infra` | ShowFlavor, ShowCloudlet, ShowZone, ShowFlavorsForZone |
//! | `auth` | login |
//! | `control` | the `/__sim/*` test endpoints |
//! | `seed` | bulk creation for tests and benchmarks |

pub(crate) mod app;
pub(crate) mod appinst;
pub(crate) mod appinst_show;
pub(crate) mod auth;
pub(crate) mod control;
pub(crate) mod infra;
pub(crate) mod seed;
