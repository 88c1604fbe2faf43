//! Seeding: many Apps (and Ready AppInsts) in one call, in any organization, so tests can
//! stand in for other controllers' runners, foreign objects and large inventories.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::context::Shared;
use crate::domain::app_build::seeded_app;
use crate::domain::appinst_build::seeded_inst;
use crate::domain::names::valid_name;
use crate::lock;
use crate::model::AppKey;

/// A seeding request; also the JSON body of `POST /__sim/seed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Seed {
    /// Organization of the new objects; any name, including ones the users do not belong to
    /// (foreign objects, invisible to Show). Empty: the first configured organization.
    pub org: String,
    /// Number of Apps to create (one call can seed 10,000; at most 100,000).
    pub count: usize,
    /// Also create one Ready AppInst per App (same name, first zone / first cloudlet).
    pub app_insts: bool,
    /// Objects are named `<name_prefix><n>` with the first free numbers from 1
    /// (default prefix `seed-`).
    pub name_prefix: String,
    /// `env_vars` of every seeded App (e.g. look-alike ownership markers).
    pub env_vars: BTreeMap<String, String>,
    /// `secret_env_vars` of every seeded App.
    pub secret_env_vars: BTreeMap<String, String>,
    /// `annotations` of every seeded AppInst (e.g. a provider's ownership marks).
    pub annotations: BTreeMap<String, String>,
}

/// How many objects a seed created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Seeded {
    /// Apps created.
    pub apps: usize,
    /// AppInsts created.
    pub app_insts: usize,
}

/// Most objects one seed call may create, so a typo cannot exhaust memory.
pub(crate) const MAX_SEED: usize = 100_000;

/// Creates what `seed` describes; the error explains an unusable request.
pub(crate) fn seed(shared: &Shared, seed: &Seed) -> Result<Seeded, String> {
    if seed.count > MAX_SEED {
        return Err(format!("count must be at most {MAX_SEED}"));
    }
    let org = if seed.org.is_empty() {
        shared
            .config
            .orgs
            .first()
            .cloned()
            .ok_or("no organization given and none configured")?
    } else {
        seed.org.clone()
    };
    let prefix = if seed.name_prefix.is_empty() {
        "seed-"
    } else {
        seed.name_prefix.as_str()
    };
    if !valid_name(&org) {
        return Err("Invalid app organization".into());
    }
    if !valid_name(&format!("{prefix}1")) {
        return Err("Invalid app name".into());
    }
    let region = shared
        .config
        .regions
        .first()
        .cloned()
        .unwrap_or_else(|| "EU".to_string());
    let mut out = Seeded::default();
    let mut st = lock(&shared.state);
    let mut n = 0usize;
    while out.apps < seed.count {
        n += 1;
        let key = AppKey {
            organization: org.clone(),
            name: format!("{prefix}{n}"),
            version: "1".into(),
        };
        if st.app(&key).is_some() {
            continue;
        }
        let app = seeded_app(
            &shared.infra,
            &shared.rng,
            key,
            seed.env_vars.clone(),
            seed.secret_env_vars.clone(),
            &region,
        )
        .map_err(|e| e.message)?;
        if seed.app_insts {
            let mut inst =
                seeded_inst(shared.config.api, &shared.infra, &shared.rng, &region, &app)
                    .ok_or("no zone or cloudlet configured to place AppInsts on")?;
            inst.annotations = seed.annotations.clone();
            if st.inst(&inst.key).is_some() {
                continue;
            }
            st.insert_inst(inst);
            out.app_insts += 1;
        }
        st.put_app(app);
        out.apps += 1;
    }
    Ok(out)
}
