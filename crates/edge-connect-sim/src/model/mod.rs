//! Layer 1, the bottom: the API's objects and the stored state, with no knowledge of HTTP,
//! validation or the running simulator.
//!
//! | Module | Job |
//! |---|---|
//! | `keys` | App, AppInst, cloudlet/zone, cluster and flavor keys |
//! | `values` | parts shared by objects (resources, configs, secrets, timestamps as sent) |
//! | `app`, `appinst` | App and AppInst: stored output shape and lenient input shape |
//! | `site` | flavors, cloudlets, zones and the operator inventory built from the config |
//! | `enums` | the API enums with the MC's accepted spellings |
//! | `store` | Apps and AppInsts with their indexes and site capacities |
//! | `filter` | Show filter semantics (zero = wildcard) |

pub(crate) mod app;
pub(crate) mod appinst;
pub(crate) mod enums;
pub(crate) mod filter;
pub(crate) mod keys;
pub(crate) mod site;
pub(crate) mod store;
pub(crate) mod values;

pub(crate) use app::{App, AppIn};
pub(crate) use appinst::{AppInst, AppInstIn, InstPort, RuntimeInfo};
pub(crate) use keys::{key_json, AppInstKey, AppInstKeyIn, AppKey, ClusterKey, FlavorKey, SiteKey};
pub(crate) use site::{Cloudlet, Flavor, FlavorName, Infra, Zone};
pub(crate) use values::{
    json_kind, KubernetesResources, NodePoolResources, NodePoolTopology, NodeResources, SecretMap,
    Udec64,
};

// `skip_serializing_if` helpers: Go's `omitempty` for scalars.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

pub(crate) fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

pub(crate) fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}

pub(crate) fn is_zero_f64(n: &f64) -> bool {
    *n == 0.0
}
