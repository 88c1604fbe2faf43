//! Finding this controller's runners: one by name (GetInstance, Delete, Start, Stop) or all of a
//! pool (ListInstances, RemoveAll), from the paired ShowApp / ShowAppInst answers, and the GARM
//! view of each.

use std::collections::HashMap;

use edge_connect::models::{App, AppInst, AppInstKey, AppKey};

use super::wait::{retry_transient, Deadline};
use super::{OwnedRunner, Provider};
use crate::config::Placement;
use crate::error::Error;
use crate::garm::ProviderInstance;
use crate::naming::edge_name;
use crate::runner_env::{Ownership, ENV_OS_ARCH, ENV_OS_TYPE};

impl Provider {
    /// Finds the runner behind a provider id or GARM name, if it belongs to this controller.
    pub(super) async fn find_runner(
        &self,
        instance: &str,
        deadline: Deadline,
    ) -> Result<Option<OwnedRunner>, Error> {
        let name = edge_name(instance);
        let (apps, insts) = self
            .show_apps_and_app_insts(&name, deadline, None, |_| true)
            .await?;
        let Some(app) = apps.into_iter().find(|a| a.key.name == name) else {
            return Ok(None);
        };
        let Some(owner) = self.ownership_of(&app) else {
            tracing::warn!(app = %name, "an App with this name exists but belongs to another controller or was not made by this provider; not touching it");
            return Ok(None);
        };
        let app_inst = insts.into_iter().find(|i| {
            i.key.name == name && i.app_key.as_ref().is_none_or(|k| k.name == app.key.name)
        });
        Ok(Some(OwnedRunner {
            app,
            owner,
            app_inst,
        }))
    }

    /// Apps and AppInsts of this organization named `name` (all of them for ""), fetched in
    /// parallel: one round trip of latency. Only Apps that `keep` accepts are held in memory.
    pub(super) async fn show_apps_and_app_insts(
        &self,
        name: &str,
        deadline: Deadline,
        needle: Option<&[u8]>,
        keep: impl Fn(&App) -> bool,
    ) -> Result<(Vec<App>, Vec<AppInst>), Error> {
        let app_filter = AppKey {
            organization: self.organization().to_string(),
            name: name.to_string(),
            version: String::new(),
        };
        let inst_filter = AppInstKey {
            name: name.to_string(),
            organization: self.organization().to_string(),
            cloudlet_key: None,
        };
        let (apps, insts) = tokio::join!(
            retry_transient(deadline, "ShowApp", || self.client.show_apps_where(
                &app_filter,
                needle,
                &keep
            )),
            retry_transient(deadline, "ShowAppInst", || self
                .client
                .show_app_insts(&inst_filter)),
        );
        Ok((apps?, insts?))
    }

    /// The AppInsts of this organization with exactly this name.
    pub(super) async fn app_insts_named(
        &self,
        name: &str,
        deadline: Deadline,
    ) -> Result<Vec<AppInst>, Error> {
        let filter = AppInstKey {
            name: name.to_string(),
            organization: self.organization().to_string(),
            cloudlet_key: None,
        };
        let insts = retry_transient(deadline, "ShowAppInst", || {
            self.client.show_app_insts(&filter)
        })
        .await?;
        Ok(insts.into_iter().filter(|i| i.key.name == name).collect())
    }

    /// Ownership of an App, if it belongs to this controller.
    pub(super) fn ownership_of(&self, app: &App) -> Option<Ownership> {
        // The controller id first: most Apps of a busy organization are not ours.
        if app.env_var(crate::runner_env::ENV_CONTROLLER_ID).as_deref()
            != Some(self.controller_id.as_str())
        {
            return None;
        }
        let owner = Ownership::of_app(app)?;
        (owner.controller_id == self.controller_id
            && edge_name(&owner.instance_name) == app.key.name)
            .then_some(owner)
    }

    /// The GARM view of a runner.
    pub(super) fn instance_of(&self, runner: &OwnedRunner) -> ProviderInstance {
        let (status, fault) = super::status::garm_status(runner.app_inst.as_ref());
        let mut addresses = Vec::new();
        if let Some(uri) = runner
            .app_inst
            .as_ref()
            .map(|i| i.uri.as_str())
            .filter(|u| !u.is_empty())
        {
            addresses.push(crate::garm::Address {
                address: uri.to_string(),
                kind: "public".to_string(),
            });
        }
        let instance = ProviderInstance {
            provider_id: runner.app.key.name.clone(),
            name: runner.owner.instance_name.clone(),
            os_type: runner.app.env_var(ENV_OS_TYPE).unwrap_or_default(),
            os_name: String::new(),
            os_version: String::new(),
            os_arch: runner.app.env_var(ENV_OS_ARCH).unwrap_or_default(),
            addresses,
            status,
            provider_fault: None,
        };
        match fault {
            Some(f) => instance.with_fault(&f),
            None => instance,
        }
    }

    /// Every runner of this controller (and pool, when given): two Show calls whatever the count.
    pub(super) async fn runners(
        &self,
        pool_id: Option<&str>,
        deadline: Deadline,
    ) -> Result<Vec<OwnedRunner>, Error> {
        // Only this controller's (and pool's) Apps are kept while the answer streams in: an
        // organization may hold thousands of other Apps.
        let keep = |app: &App| {
            self.ownership_of(app)
                .is_some_and(|owner| pool_id.is_none_or(|p| p == owner.pool_id))
        };
        // An App of this pool (or controller) holds the id verbatim in its JSON line, whichever
        // way its environment is delivered, as long as the id needs no JSON escaping.
        let needle = pool_id
            .filter(|p| appears_verbatim_in_json(p))
            .or(Some(self.controller_id.as_str()).filter(|c| appears_verbatim_in_json(c)));
        let (apps, insts) = self
            .show_apps_and_app_insts("", deadline, needle.map(str::as_bytes), keep)
            .await?;
        let mut by_name: HashMap<String, AppInst> =
            insts.into_iter().map(|i| (i.key.name.clone(), i)).collect();
        let mut runners: Vec<OwnedRunner> = apps
            .into_iter()
            .filter_map(|app| {
                let owner = self.ownership_of(&app)?;
                if pool_id.is_some_and(|p| p != owner.pool_id) {
                    return None;
                }
                let app_inst = by_name.remove(&app.key.name);
                Some(OwnedRunner {
                    app,
                    owner,
                    app_inst,
                })
            })
            .collect();
        runners.sort_by(|a, b| a.owner.instance_name.cmp(&b.owner.instance_name));
        Ok(runners)
    }

    /// The placement recorded on an App (or the configured one).
    pub(super) fn recorded_placements(&self, app: &App) -> Vec<Placement> {
        let recorded: Vec<Placement> = app
            .env_var(crate::runner_env::ENV_PLACEMENT)
            .map(|v| {
                v.split(';')
                    .filter_map(crate::runner_env::parse_placement_tag)
                    .collect()
            })
            .unwrap_or_default();
        if recorded.is_empty() {
            vec![self.config.placement()]
        } else {
            recorded
        }
    }
}

/// True when `s` is written as-is inside a JSON string, also inside a JSON string that itself
/// sits in a JSON string (the envvars_yaml delivery): no quote, backslash or control character.
fn appears_verbatim_in_json(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c == '"' || c == '\\' || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn ids_that_json_would_escape_are_not_used_as_needles() {
        assert!(appears_verbatim_in_json(
            "9dcf590a-1192-4a9c-b3e4-e0902974c2c0"
        ));
        assert!(appears_verbatim_in_json("My Scale Set-6B8E Ü"));
        assert!(!appears_verbatim_in_json("quote\"d"));
        assert!(!appears_verbatim_in_json("back\\slash"));
        assert!(!appears_verbatim_in_json("tab\there"));
        assert!(!appears_verbatim_in_json(""));
    }
}
