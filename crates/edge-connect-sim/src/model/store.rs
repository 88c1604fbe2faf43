//! The simulator's state: Apps and AppInsts keyed organization-first (so one organization is
//! one range), with indexes for "instances of this App" and "instances on this site", and the
//! per-site capacity limits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{App, AppInst, AppInstKey, AppKey, SiteKey};

/// Everything that changes while the simulator runs. Guarded by one mutex that is never held
/// across an `.await`; objects are `Arc`s so Show can serialise outside the lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Bumped by `reset`, so operations started before it stop touching the state.
    pub epoch: u64,
    apps: BTreeMap<AppKey, Arc<App>>,
    insts: BTreeMap<AppInstKey, Arc<AppInst>>,
    app_refs: BTreeMap<AppKey, BTreeSet<AppInstKey>>,
    per_cloudlet: BTreeMap<SiteKey, usize>,
    per_zone: BTreeMap<SiteKey, usize>,
    capacity: BTreeMap<SiteKey, usize>,
}

impl State {
    /// The App with this key.
    pub(crate) fn app(&self, key: &AppKey) -> Option<&Arc<App>> {
        self.apps.get(key)
    }

    /// Stores (or replaces) an App.
    pub(crate) fn put_app(&mut self, app: App) {
        self.apps.insert(app.key.clone(), Arc::new(app));
    }

    /// Removes an App.
    pub(crate) fn remove_app(&mut self, key: &AppKey) -> Option<Arc<App>> {
        self.apps.remove(key)
    }

    /// Some instance of the App, if any (for `Application in use by static AppInst`).
    pub(crate) fn first_inst_of(&self, app: &AppKey) -> Option<&AppInstKey> {
        self.app_refs.get(app).and_then(|keys| keys.iter().next())
    }

    /// One organization's Apps in key order, only those named `name` unless it is empty.
    pub(crate) fn apps_of<'a>(
        &'a self,
        org: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Arc<App>> + 'a {
        let start = AppKey {
            organization: org.to_string(),
            name: name.to_string(),
            version: String::new(),
        };
        self.apps
            .range(start..)
            .take_while(move |(k, _)| k.organization == org && (name.is_empty() || k.name == name))
            .map(|(_, v)| v)
    }

    /// Every App.
    pub(crate) fn all_apps(&self) -> impl Iterator<Item = &Arc<App>> {
        self.apps.values()
    }

    /// The AppInst with this key.
    pub(crate) fn inst(&self, key: &AppInstKey) -> Option<&Arc<AppInst>> {
        self.insts.get(key)
    }

    /// Mutable access to a stored AppInst (copied first if a Show still holds it).
    pub(crate) fn inst_mut(&mut self, key: &AppInstKey) -> Option<&mut AppInst> {
        self.insts.get_mut(key).map(Arc::make_mut)
    }

    /// Stores a new AppInst and indexes it.
    pub(crate) fn insert_inst(&mut self, inst: AppInst) {
        if let Some(old) = self.remove_inst(&inst.key) {
            tracing::debug!(key = ?old.key, "replacing AppInst");
        }
        self.app_refs
            .entry(inst.app_key.clone())
            .or_default()
            .insert(inst.key.clone());
        for (index, site) in [
            (&mut self.per_cloudlet, site_of(&inst)),
            (&mut self.per_zone, inst.zone_key.clone()),
        ] {
            if let Some(site) = site {
                *index.entry(site).or_default() += 1;
            }
        }
        self.insts.insert(inst.key.clone(), Arc::new(inst));
    }

    /// Removes an AppInst and its index entries.
    pub(crate) fn remove_inst(&mut self, key: &AppInstKey) -> Option<Arc<AppInst>> {
        let inst = self.insts.remove(key)?;
        if let Some(refs) = self.app_refs.get_mut(&inst.app_key) {
            refs.remove(key);
            if refs.is_empty() {
                self.app_refs.remove(&inst.app_key);
            }
        }
        for (index, site) in [
            (&mut self.per_cloudlet, site_of(&inst)),
            (&mut self.per_zone, inst.zone_key.clone()),
        ] {
            if let Some(site) = site {
                if let Some(n) = index.get_mut(&site) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        index.remove(&site);
                    }
                }
            }
        }
        Some(inst)
    }

    /// One organization's AppInsts in key order, only those named `name` unless it is empty
    /// (one per name in Gen3; one per cloudlet in Gen2).
    pub(crate) fn insts_of<'a>(
        &'a self,
        org: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Arc<AppInst>> + 'a {
        let start = AppInstKey {
            organization: org.to_string(),
            name: name.to_string(),
            cloudlet_key: None,
        };
        self.insts
            .range(start..)
            .take_while(move |(k, _)| k.organization == org && (name.is_empty() || k.name == name))
            .map(|(_, v)| v)
    }

    /// Every AppInst.
    pub(crate) fn all_insts(&self) -> impl Iterator<Item = &Arc<AppInst>> {
        self.insts.values()
    }

    /// Limits the number of AppInsts on a site (a cloudlet or zone key); `None` = unlimited.
    pub(crate) fn set_capacity(&mut self, site: SiteKey, max: Option<usize>) {
        match max {
            Some(n) => {
                self.capacity.insert(site, n);
            }
            None => {
                self.capacity.remove(&site);
            }
        }
    }

    /// The configured limits.
    pub(crate) fn capacities(&self) -> impl Iterator<Item = (&SiteKey, &usize)> {
        self.capacity.iter()
    }

    /// The limit a new instance on `cloudlet` (in `zone`) would exceed, if any.
    pub(crate) fn site_limit_reached(
        &self,
        cloudlet: &SiteKey,
        zone: Option<&SiteKey>,
    ) -> Option<usize> {
        let reached = |index: &BTreeMap<SiteKey, usize>, site: &SiteKey| {
            self.capacity
                .get(site)
                .copied()
                .filter(|max| index.get(site).copied().unwrap_or(0) >= *max)
        };
        reached(&self.per_cloudlet, cloudlet)
            .or_else(|| zone.and_then(|z| reached(&self.per_zone, z)))
    }

    /// Forgets all objects and limits; operations in flight notice the new epoch and stop.
    pub(crate) fn clear(&mut self) {
        let epoch = self.epoch + 1;
        *self = State {
            epoch,
            ..State::default()
        };
    }
}

/// The cloudlet an instance runs on: top-level in Gen3, inside the key in Gen2.
fn site_of(inst: &AppInst) -> Option<SiteKey> {
    inst.cloudlet_key
        .clone()
        .or_else(|| inst.key.cloudlet_key.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(org: &str, name: &str, app: &AppKey, site: &SiteKey) -> AppInst {
        AppInst {
            key: AppInstKey {
                name: name.into(),
                organization: org.into(),
                cloudlet_key: None,
            },
            app_key: app.clone(),
            cloudlet_key: Some(site.clone()),
            zone_key: Some(site.clone()),
            ..AppInst::default()
        }
    }

    #[test]
    fn org_ranges_and_indexes() {
        let mut st = State::default();
        let app = AppKey {
            organization: "b".into(),
            name: "x".into(),
            version: "1".into(),
        };
        let site = SiteKey::new("op", "s1");
        for (org, name) in [("a", "1"), ("b", "1"), ("b", "2"), ("c", "1")] {
            st.insert_inst(inst(org, name, &app, &site));
        }
        let names: Vec<String> = st.insts_of("b", "").map(|i| i.key.name.clone()).collect();
        assert_eq!(names, ["1", "2"]);
        assert_eq!(st.insts_of("b", "2").count(), 1);
        assert_eq!(st.insts_of("b", "3").count(), 0);
        assert!(st.first_inst_of(&app).is_some());
        st.set_capacity(site.clone(), Some(4));
        assert_eq!(st.site_limit_reached(&site, None), Some(4));
        st.set_capacity(site.clone(), Some(5));
        assert_eq!(st.site_limit_reached(&site, Some(&site)), None);
        let keys: Vec<AppInstKey> = st.all_insts().map(|i| i.key.clone()).collect();
        for k in &keys {
            st.remove_inst(k);
        }
        assert!(st.first_inst_of(&app).is_none());
        st.set_capacity(site.clone(), Some(0));
        assert_eq!(st.site_limit_reached(&site, None), Some(0));
        st.clear();
        assert_eq!(st.epoch, 1);
        assert_eq!(st.site_limit_reached(&site, None), None);
    }
}
