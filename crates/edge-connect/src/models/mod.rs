//! Edge Connect objects, as sent and as shown.
//!
//! Requests are built from small `Serialize` types that carry only what the MC accepts on create
//! (it rejects output-only fields such as `state` or `mapped_ports`). Answers are read into lean
//! views, leniently: every field defaults, so both API generations and future additions parse,
//! and fields nobody reads are skipped, not copied.
//!
//! | Module | Job |
//! |---|---|
//! | this one | keys: [`AppKey`], [`AppInstKey`], [`SiteRef`], [`FlavorKey`] |
//! | `app` | [`NewApp`] as sent, [`App`] as shown, reading an App's environment |
//! | `app_inst` | [`NewAppInst`] as sent, [`AppInst`] as shown |
//! | `site` | [`Site`] (zone or cloudlet) and [`Flavor`] as shown |

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

mod app;
mod app_inst;
mod env;
mod site;

pub use app::{
    env_vars_yaml, parse_env_vars_yaml, vcpus, App, ConfigFile, KubernetesResources, NewApp,
    NodePoolResources,
};
pub use app_inst::{AppInst, MappedPort, NewAppInst};
pub use site::{Flavor, Site};

/// How many items of a shown list are kept; the rest are read past. One answer line may be
/// 8 MiB of `"",` or `{},`, and each item costs 8 to 16 times its bytes to hold, while no list
/// an answer shows us (an AppInst's errors and ports, an App's configs) means anything past its
/// first few items: the provider's Apps carry at most one access port and one config, so what is
/// read past is never what it looks for, and a fault names its first 16 errors.
const FIRST_ITEMS: usize = 16;

/// A shown list's first [`FIRST_ITEMS`] items (`null`: none).
fn first_items<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    struct First<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for First<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list or null")
        }
        fn visit_unit<E>(self) -> Result<Vec<T>, E> {
            Ok(Vec::new())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut items = Vec::new();
            while items.len() < FIRST_ITEMS {
                let Some(item) = seq.next_element()? else {
                    return Ok(items);
                };
                items.push(item);
            }
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(items)
        }
    }
    d.deserialize_any(First(std::marker::PhantomData))
}

/// `AppKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct AppKey {
    /// Owning organization.
    pub organization: String,
    /// App name.
    pub name: String,
    /// App version.
    pub version: String,
}

/// `CloudletKey` / `ZoneKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SiteRef {
    /// Operator organization.
    pub organization: String,
    /// Cloudlet or zone name.
    pub name: String,
    /// Set on the cloudlet keys of federated cloudlets; a delete must send it back or the
    /// AppInst is "not found" (c39 `cloudletkey.pb.go:34-38`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub federated_organization: String,
}

impl SiteRef {
    /// True when no part is set (the server emits `{}` for unset keys).
    pub fn is_empty(&self) -> bool {
        self.organization.is_empty() && self.name.is_empty()
    }
}

/// `AppInstKey`: `{name, organization}`, plus `cloudlet_key` in the older (Gen2) shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppInstKey {
    /// AppInst name.
    pub name: String,
    /// Owning organization.
    pub organization: String,
    /// Cloudlet, in the older key shape only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloudlet_key: Option<SiteRef>,
}

/// `FlavorKey`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlavorKey {
    /// Flavor name.
    #[serde(default)]
    pub name: String,
}
