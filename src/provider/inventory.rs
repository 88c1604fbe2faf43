//! Finding this controller's runners: one by name (GetInstance, Delete, Start, Stop) or all of a
//! pool (ListInstances, RemoveAll), from the paired ShowApp / ShowAppInst answers, and the GARM
//! view of each.
//!
//! An organization may hold tens of thousands of Apps and AppInsts, nearly all of them not ours.
//! Both answers are read as they stream in and only what a runner of ours can need is kept: of an
//! App, its key and its ownership variables (read in one pass); of an AppInst, a compact
//! [`InstRecord`]. An AppInst belongs to a runner only when it has the runner's name **and**
//! deploys the runner's App (organization, name and version): another App's AppInst of the same
//! name is never shown as ours nor deleted.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use edge_connect::models::{App, AppEnv, AppInst, AppInstKey, AppKey, SiteRef};
use edge_connect::AppInstState;

use super::wait::{retry_transient, Deadline};
use super::{OwnedRunner, Provider};
use crate::config::Placement;
use crate::error::Error;
use crate::garm::ProviderInstance;
use crate::naming::edge_name;
use crate::runner_env::{RunnerVarNames, RunnerVars};

/// An AppInst as the inventory reads it from ShowAppInst: the fields a record needs and nothing
/// else, so a line allocates only these (an organization's answer may hold tens of thousands).
#[derive(Debug, Default, serde::Deserialize)]
struct InstLine {
    #[serde(default)]
    key: InstLineKey,
    #[serde(default)]
    app_key: Option<AppKey>,
    #[serde(default)]
    cloudlet_key: Option<SiteRef>,
    #[serde(default)]
    state: State,
    #[serde(default)]
    errors: Vec<String>,
    #[serde(default)]
    uri: String,
}

/// An AppInst's state read straight from its name (or number): [`AppInstState`]'s own
/// `Deserialize` buffers the value to try both forms, a cost paid for every line of the answer.
#[derive(Debug, Default)]
struct State(AppInstState);

impl<'de> serde::Deserialize<'de> for State {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<State, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = State;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a state name or number")
            }
            fn visit_str<E>(self, name: &str) -> Result<State, E> {
                Ok(State(AppInstState::from_name(name)))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<State, E> {
                use serde::de::IntoDeserializer;
                // Rare (the MC writes names): the client's own mapping of numbers.
                <AppInstState as serde::Deserialize>::deserialize(n.into_deserializer()).map(State)
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<State, E> {
                Ok(State(AppInstState::Other(n.to_string())))
            }
            fn visit_unit<E>(self) -> Result<State, E> {
                Ok(State::default())
            }
        }
        d.deserialize_any(Visit)
    }
}

/// The AppInst key without its organization (the filter's, ours).
#[derive(Debug, Default, serde::Deserialize)]
struct InstLineKey {
    #[serde(default)]
    name: String,
    #[serde(default)]
    cloudlet_key: Option<SiteRef>,
}

/// What the inventory keeps of an AppInst that may belong to a runner of ours while the answers
/// stream in: the fields GARM's view and the deletes need, nothing that is the same for all of
/// them (the organization; the App's name, which is the AppInst's own for every runner). Until
/// every App is known, one is kept for each AppInst of the organization, so it is kept small
/// (88 bytes): boxed slices, site indexes, no enum around the version.
#[derive(Debug)]
struct InstRecord {
    /// The version of the App it deploys: `None` for the configured `app_version`, so a
    /// runner's record allocates nothing for it.
    version: Option<Box<str>>,
    state: AppInstState,
    errors: Box<[String]>,
    uri: Box<str>,
    /// The cloudlet inside the key (older API: part of the AppInst's identity, needed to
    /// delete), as an index into the inventory's [`Sites`]; [`NO_SITE`] for none.
    key_site: u32,
    /// The cloudlet the server chose (newer API: output only), likewise.
    site: u32,
    /// The oldest shape names no App: such an AppInst can only be joined by name.
    unnamed: bool,
}

/// No site.
const NO_SITE: u32 = u32::MAX;

impl InstRecord {
    /// The record of an AppInst of `organization` that could belong to a runner: it deploys an
    /// App of that organization with the AppInst's own name (how this provider makes them).
    /// `None` for every other AppInst, which no runner of ours can own.
    fn of(
        inst: &InstLine,
        organization: &str,
        version: &str,
        sites: &mut Sites,
    ) -> Option<InstRecord> {
        let (unnamed, app_version) = match &inst.app_key {
            None => (true, None),
            Some(k) if k.organization == organization && k.name == inst.key.name => (
                false,
                (k.version != version).then(|| k.version.as_str().into()),
            ),
            Some(_) => return None,
        };
        let mut site = |s: &Option<SiteRef>| s.as_ref().map_or(NO_SITE, |s| sites.index(s));
        Some(InstRecord {
            version: app_version,
            state: inst.state.0.clone(),
            errors: inst.errors.clone().into_boxed_slice(),
            uri: inst.uri.as_str().into(),
            key_site: site(&inst.key.cloudlet_key),
            site: site(&inst.cloudlet_key),
            unnamed,
        })
    }

    /// True when this AppInst deploys the App `key` (configured version `version`).
    fn deploys(&self, key: &AppKey, version: &str) -> bool {
        self.unnamed || self.version.as_deref().unwrap_or(version) == key.version
    }

    /// The AppInst again, for the runner whose App it deploys.
    fn into_app_inst(self, organization: &str, app: &AppKey, sites: &Sites) -> AppInst {
        AppInst {
            key: AppInstKey {
                name: app.name.clone(),
                organization: organization.to_string(),
                cloudlet_key: sites.get(self.key_site),
            },
            app_key: (!self.unnamed).then(|| app.clone()),
            zone_key: None,
            cloudlet_key: sites.get(self.site),
            state: self.state,
            errors: self.errors.into_vec(),
            uri: self.uri.into(),
            created_at: String::new(),
        }
    }
}

/// The distinct sites the AppInsts run on: an organization has a handful of cloudlets, so each
/// record holds an index instead of its own copy of two strings.
#[derive(Default)]
struct Sites(Vec<SiteRef>);

impl Sites {
    fn index(&mut self, site: &SiteRef) -> u32 {
        let found = self.0.iter().position(|s| s == site);
        let i = found.unwrap_or_else(|| {
            self.0.push(site.clone());
            self.0.len() - 1
        });
        // More than four billion distinct sites cannot come from one answer that fits in
        // memory; should it happen, the site is dropped rather than confused with another.
        u32::try_from(i)
            .ok()
            .filter(|i| *i != NO_SITE)
            .unwrap_or(NO_SITE)
    }

    fn get(&self, index: u32) -> Option<SiteRef> {
        self.0.get(index as usize).cloned()
    }
}

/// What the two answers leave, filled as they stream in.
#[derive(Default)]
struct Inventory {
    /// Our Apps (of the pool, when one is asked for); sorted by name once ShowApp is complete.
    /// A vector, not a map: a thousand runners' entries without a half-empty table beside them.
    apps: Vec<(AppKey, RunnerVars)>,
    /// Apps of the asked name that are not ours (only counted, for a warning).
    foreign_apps: usize,
    /// AppInsts that may be ours, by name.
    insts: HashMap<Box<str>, InstRecord>,
    /// A second AppInst of a name already seen (older API: one per cloudlet).
    more_insts: Vec<(Box<str>, InstRecord)>,
    /// The sites the records point into.
    sites: Sites,
}

fn lock(inventory: &Mutex<Inventory>) -> MutexGuard<'_, Inventory> {
    // The closures that fill it cannot panic half-way through an update that matters.
    inventory.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Provider {
    /// Finds the runner behind a provider id or GARM name, if it belongs to this controller.
    pub(super) async fn find_runner(
        &self,
        instance: &str,
        deadline: Deadline,
    ) -> Result<Option<OwnedRunner>, Error> {
        let name = edge_name(instance);
        let (runners, foreign) = self.inventory(&name, None, deadline).await?;
        let runner = runners.into_iter().next();
        if runner.is_none() && foreign > 0 {
            tracing::warn!(app = %name, "an App with this name exists but belongs to another controller or was not made by this provider; not touching it");
        }
        Ok(runner)
    }

    /// Every runner of this controller (and pool, when given): two Show calls whatever the count,
    /// sorted by GARM name.
    pub(super) async fn runners(
        &self,
        pool_id: Option<&str>,
        deadline: Deadline,
    ) -> Result<Vec<OwnedRunner>, Error> {
        let (mut runners, _) = self.inventory("", pool_id, deadline).await?;
        runners.sort_by(|a, b| a.vars.owner.instance_name.cmp(&b.vars.owner.instance_name));
        Ok(runners)
    }

    /// Our runners named `name` (every name for ""), of `pool_id` when given, with their
    /// AppInsts; and how many Apps of the name were not ours. ShowApp and ShowAppInst go out in
    /// parallel: one round trip of latency.
    async fn inventory(
        &self,
        name: &str,
        pool_id: Option<&str>,
        deadline: Deadline,
    ) -> Result<(Vec<OwnedRunner>, usize), Error> {
        let organization = self.organization();
        let version = self.config.edge_connect.app_version.as_str();
        let app_filter = AppKey {
            organization: organization.to_string(),
            name: name.to_string(),
            version: String::new(),
        };
        let inst_filter = AppInstKey {
            name: name.to_string(),
            organization: organization.to_string(),
            cloudlet_key: None,
        };
        let client = self.client.until(deadline);
        let inventory = Mutex::new(Inventory::default());
        // Once every App is known, AppInsts of no App of ours are not even recorded.
        let apps_complete = AtomicBool::new(false);
        // Set by ShowAppInst's first line: its request is out and its answer is flowing.
        let insts_flowing = AtomicBool::new(false);
        let keep_app = |app: &AppEnv<RunnerVarNames>| {
            if !name.is_empty() && app.key.name != name {
                return false;
            }
            let mut inv = lock(&inventory);
            match self.owned_vars(RunnerVars::of_env(app), &app.key) {
                Some(vars) if pool_id.is_none_or(|p| p == vars.owner.pool_id) => {
                    inv.apps.push((app.key.clone(), vars));
                }
                Some(_) => {}
                None => inv.foreign_apps += 1,
            }
            // Filed above; nothing is collected by the client.
            false
        };
        // Once our Apps are all known, an AppInst line whose leading key names none of them is
        // dropped unparsed: most of an organization's AppInsts are not ours, and parsing them
        // was most of List's work. A line whose name cannot be read for certain is parsed.
        let skip_inst = |line: &[u8]| {
            insts_flowing.store(true, Ordering::Relaxed);
            if !apps_complete.load(Ordering::Acquire) {
                return false;
            }
            let Some(inst_name) = edge_connect::leading_key_name(line) else {
                return false;
            };
            (!name.is_empty() && inst_name != name)
                || lock(&inventory)
                    .apps
                    .binary_search_by(|(k, _)| k.name.as_str().cmp(inst_name))
                    .is_err()
        };
        let keep_inst = |inst: &InstLine| {
            insts_flowing.store(true, Ordering::Relaxed);
            if !name.is_empty() && inst.key.name != name {
                return false;
            }
            let mut inv = lock(&inventory);
            if apps_complete.load(Ordering::Acquire)
                && inv
                    .apps
                    .binary_search_by(|(k, _)| k.name.as_str().cmp(&inst.key.name))
                    .is_err()
            {
                return false;
            }
            let Inventory {
                insts,
                more_insts,
                sites,
                ..
            } = &mut *inv;
            if let Some(record) = InstRecord::of(inst, organization, version, sites) {
                match insts.entry(inst.key.name.as_str().into()) {
                    Entry::Occupied(seen) => more_insts.push((seen.key().clone(), record)),
                    Entry::Vacant(slot) => {
                        slot.insert(record);
                    }
                }
            }
            false
        };
        let needle = pool_id.map_or(Some(self.controller_id.as_str()), |p| {
            needle_for(p).or(needle_for(&self.controller_id))
        });
        let needle = needle.filter(|n| needle_for(n).is_some());
        let apps = async {
            let result = retry_transient(deadline, "ShowApp", || {
                // A retried call starts over: what a broken attempt filed is dropped.
                let mut inv = lock(&inventory);
                inv.apps.clear();
                inv.foreign_apps = 0;
                drop(inv);
                client.show_apps_as(&app_filter, needle.map(str::as_bytes), &keep_app)
            })
            .await;
            if result.is_ok() {
                // Sorted for the AppInsts' look-ups by name (the join does not care).
                lock(&inventory)
                    .apps
                    .sort_unstable_by(|(a, _), (b, _)| a.name.cmp(&b.name));
                apps_complete.store(true, Ordering::Release);
            }
            result
        };
        let insts = retry_transient(deadline, "ShowAppInst", || {
            let mut inv = lock(&inventory);
            inv.insts.clear();
            inv.more_insts.clear();
            drop(inv);
            client.show_app_insts_filtered(&inst_filter, &skip_inst, &keep_inst)
        });
        // Both requests go out at once (one round trip). For a whole organization, ShowAppInst's
        // answer then waits (in the socket, not in memory) while ShowApp's is read, so that its
        // lines meet the complete set of our Apps and nothing is recorded for the others: that
        // is what keeps List's memory near the number of our runners. For one name, both
        // answers are small and are read as they come.
        let hold_insts = || name.is_empty() && insts_flowing.load(Ordering::Relaxed);
        let (apps, insts) = read_first(apps, insts, hold_insts).await;
        apps?;
        if let Some(insts) = insts {
            insts?;
        }
        let inv = inventory
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let foreign = inv.foreign_apps;
        Ok((self.join(inv), foreign))
    }

    /// Pairs each of our Apps with the AppInsts that have its name and deploy it.
    fn join(&self, inv: Inventory) -> Vec<OwnedRunner> {
        let Inventory {
            apps,
            mut insts,
            mut more_insts,
            sites,
            ..
        } = inv;
        let organization = self.organization();
        let version = self.config.edge_connect.app_version.as_str();
        apps.into_iter()
            .map(|(key, vars)| {
                let mut app_insts = Vec::new();
                if let Some((name, record)) = insts.remove_entry(key.name.as_str()) {
                    if record.deploys(&key, version) {
                        app_insts.push(record.into_app_inst(organization, &key, &sites));
                    } else {
                        // Another version of ours with this name may deploy it.
                        insts.insert(name, record);
                    }
                }
                if !more_insts.is_empty() {
                    let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut more_insts)
                        .into_iter()
                        .partition(|(n, r)| **n == *key.name && r.deploys(&key, version));
                    more_insts = rest;
                    app_insts.extend(
                        mine.into_iter()
                            .map(|(_, r)| r.into_app_inst(organization, &key, &sites)),
                    );
                }
                OwnedRunner {
                    key,
                    vars,
                    app_insts,
                }
            })
            .collect()
    }

    /// The runner variables of an App, if it belongs to this controller: its controller id is
    /// ours and its recorded GARM name is the one its App name was made from (a copied
    /// environment does not make an App ours).
    pub(super) fn owned(&self, app: &App) -> Option<RunnerVars> {
        self.owned_vars(RunnerVars::of_app(app), &app.key)
    }

    fn owned_vars(&self, vars: Option<RunnerVars>, key: &AppKey) -> Option<RunnerVars> {
        let vars = vars?;
        (vars.owner.controller_id == self.controller_id
            && edge_name(&vars.owner.instance_name) == key.name)
            .then_some(vars)
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
        let client = self.client.until(deadline);
        let insts = retry_transient(deadline, "ShowAppInst", || {
            client.show_app_insts_where(&filter, |i: &AppInst| i.key.name == name)
        })
        .await?;
        Ok(insts)
    }

    /// The GARM view of a runner, made of its parts (List converts a thousand runners: moving
    /// their strings instead of copying them keeps one copy alive, not two).
    pub(super) fn instance_of(&self, runner: OwnedRunner) -> ProviderInstance {
        let OwnedRunner {
            key,
            vars,
            app_insts,
        } = runner;
        let app_inst = app_insts.into_iter().next();
        let (status, fault) = super::status::garm_status(app_inst.as_ref());
        let addresses = app_inst
            .map(|i| i.uri)
            .filter(|u| !u.is_empty())
            .map(|address| crate::garm::Address {
                address,
                kind: "public".to_string(),
            })
            .into_iter()
            .collect();
        let instance = ProviderInstance {
            provider_id: key.name,
            name: vars.owner.instance_name,
            os_type: vars.os_type,
            os_name: String::new(),
            os_version: String::new(),
            os_arch: vars.os_arch,
            addresses,
            status,
            provider_fault: None,
        };
        match fault {
            Some(f) => instance.with_fault(&f),
            None => instance,
        }
    }

    /// The placement recorded on a runner's App (or the configured one).
    pub(super) fn recorded_placements(&self, vars: &RunnerVars) -> Vec<Placement> {
        let recorded = vars.placements();
        if recorded.is_empty() {
            vec![self.config.placement()]
        } else {
            recorded
        }
    }
}

/// Runs `first` and `second` together, but `second` only while `hold` is false or once `first`
/// is done; ends early when `first` fails (then without `second`'s result). A held future is
/// simply not polled: whatever it waits for waits with it. If that lasts longer than a request
/// timeout, its next poll fails as timed out and the caller's retry sends it again.
async fn read_first<A, B, E>(
    first: impl std::future::Future<Output = Result<A, E>>,
    second: impl std::future::Future<Output = B>,
    hold: impl Fn() -> bool,
) -> (Result<A, E>, Option<B>) {
    use std::task::Poll;
    let mut first = std::pin::pin!(first);
    let mut second = std::pin::pin!(second);
    let mut first_out: Option<Result<A, E>> = None;
    let mut second_out: Option<B> = None;
    std::future::poll_fn(|cx| {
        if first_out.is_none() {
            if let Poll::Ready(r) = first.as_mut().poll(cx) {
                first_out = Some(r);
            }
        }
        if let Some(Err(_)) = &first_out {
            if let Some(failed) = first_out.take() {
                return Poll::Ready((failed, None));
            }
        }
        if second_out.is_none() && (first_out.is_some() || !hold()) {
            if let Poll::Ready(r) = second.as_mut().poll(cx) {
                second_out = Some(r);
            }
        }
        if second_out.is_some() {
            if let Some(done) = first_out.take() {
                return Poll::Ready((done, second_out.take()));
            }
        }
        Poll::Pending
    })
    .await
}

/// `id` as a pre-filter for ShowApp lines: an App of this pool (or controller) holds the id in
/// its JSON line, whichever way its environment is delivered, but only verbatim when nothing in
/// it is escaped. Quotes, backslashes and control characters are always escaped; the Master
/// Controller's Go encoder also writes `&`, `<`, `>`, U+2028 and U+2029 as `\u0026`-style
/// escapes (which a simulator may not). An id with any of them is no needle: every line is
/// parsed instead.
fn needle_for(id: &str) -> Option<&str> {
    let escaped = |c: char| {
        matches!(c, '"' | '\\' | '&' | '<' | '>' | '\u{2028}' | '\u{2029}') || c.is_control()
    };
    (!id.is_empty() && !id.chars().any(escaped)).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the client does with a needle: a data line without it is skipped unparsed.
    fn passes(needle: Option<&str>, line: &str) -> bool {
        needle.is_none_or(|n| line.contains(n))
    }

    #[test]
    fn ids_that_json_would_escape_are_not_used_as_needles() {
        assert!(needle_for("9dcf590a-1192-4a9c-b3e4-e0902974c2c0").is_some());
        assert!(needle_for("My Scale Set-6B8E Ü").is_some());
        for id in [
            "quote\"d",
            "back\\slash",
            "tab\there",
            "",
            "a&b",
            "a<b",
            "a>b",
            "line\u{2028}sep",
            "para\u{2029}sep",
        ] {
            assert_eq!(needle_for(id), None, "{id:?}");
        }
    }

    #[test]
    fn a_go_escaped_pool_id_still_reaches_the_parser() {
        let pool = "Scale & <Set>";
        // The line as the Master Controller writes it (Go's HTML-safe escaping)...
        let line = r#"{"data":{"key":{"organization":"o","name":"garm-x","version":"1.0"},"env_vars":{"GARM_POOL_ID":"Scale \u0026 \u003cSet\u003e","GARM_CONTROLLER_ID":"c","GARM_INSTANCE_NAME":"garm-x"}}}"#;
        // ...and as a simulator that does not escape them writes it.
        let plain = line
            .replace("\\u0026", "&")
            .replace("\\u003c", "<")
            .replace("\\u003e", ">");
        let needle = needle_for(pool).or(needle_for("c"));
        for text in [line, plain.as_str()] {
            assert!(passes(needle, text), "{text}");
            let app: edge_connect::models::App = serde_json::from_value(
                serde_json::from_str::<serde_json::Value>(text).unwrap()["data"].clone(),
            )
            .unwrap();
            let vars = RunnerVars::of_app(&app).unwrap();
            assert_eq!(vars.owner.pool_id, pool);
            // The same line as List parses it: one pass, the same variables.
            let line = serde_json::from_str::<serde_json::Value>(text).unwrap()["data"].clone();
            let env: AppEnv<RunnerVarNames> = serde_json::from_value(line).unwrap();
            assert_eq!(RunnerVars::of_env(&env), Some(vars));
        }
    }

    fn inst(name: &str, app: Option<(&str, &str, &str)>) -> InstLine {
        InstLine {
            key: InstLineKey {
                name: name.into(),
                cloudlet_key: None,
            },
            app_key: app.map(|(o, n, v)| AppKey {
                organization: o.into(),
                name: n.into(),
                version: v.into(),
            }),
            state: State(AppInstState::Ready),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn the_second_answer_waits_while_held_and_a_failure_ends_early() {
        use std::sync::atomic::AtomicUsize;
        let polls = AtomicUsize::new(0);
        let (gate_tx, gate_rx) = tokio::sync::oneshot::channel::<()>();
        let first = async {
            // Pending until released, like a ShowApp answer still streaming.
            let _ = gate_rx.await;
            Ok::<_, ()>(1)
        };
        let second = async {
            polls.fetch_add(1, Ordering::Relaxed);
            2
        };
        let release = async {
            tokio::task::yield_now().await;
            // Held: the second future must not have run yet.
            assert_eq!(polls.load(Ordering::Relaxed), 0);
            let _ = gate_tx.send(());
        };
        let ((a, b), ()) = tokio::join!(read_first(first, second, || true), release);
        assert_eq!((a, b), (Ok(1), Some(2)));
        let (failed, none) = read_first(
            async { Err::<u8, _>("boom") },
            std::future::pending::<u8>(),
            || false,
        )
        .await;
        assert_eq!((failed, none), (Err("boom"), None));
    }

    #[test]
    fn states_read_by_name_or_number() {
        let read = |json: &str| serde_json::from_str::<State>(json).unwrap().0;
        assert_eq!(read("\"Ready\""), AppInstState::Ready);
        assert_eq!(read("5"), AppInstState::Ready);
        assert_eq!(
            read("\"Hibernating\""),
            AppInstState::Other("Hibernating".into())
        );
        assert_eq!(read("null"), AppInstState::Unknown);
        assert_eq!(read("-1"), AppInstState::Other("-1".into()));
    }

    #[test]
    fn records_are_kept_only_for_appinsts_a_runner_could_own() {
        let mut sites = Sites::default();
        let ours = AppKey {
            organization: "o".into(),
            name: "garm-a".into(),
            version: "1.0".into(),
        };
        let r = InstRecord::of(
            &inst("garm-a", Some(("o", "garm-a", "1.0"))),
            "o",
            "1.0",
            &mut sites,
        )
        .unwrap();
        assert!(r.version.is_none() && !r.unnamed);
        assert!(std::mem::size_of::<InstRecord>() <= 88, "kept small");
        assert!(r.deploys(&ours, "1.0"));
        let back = r.into_app_inst("o", &ours, &sites);
        assert_eq!(back.key.name, "garm-a");
        assert_eq!(back.app_key.as_ref(), Some(&ours));
        // Someone else's App, or another organization's, under our runner's name: no record.
        assert!(InstRecord::of(
            &inst("garm-a", Some(("o", "their-app", "1.0"))),
            "o",
            "1.0",
            &mut sites
        )
        .is_none());
        assert!(InstRecord::of(
            &inst("garm-a", Some(("x", "garm-a", "1.0"))),
            "o",
            "1.0",
            &mut sites
        )
        .is_none());
        // Our App's name at another version: recorded, but it deploys only that version.
        let r = InstRecord::of(
            &inst("garm-a", Some(("o", "garm-a", "2.0"))),
            "o",
            "1.0",
            &mut sites,
        )
        .unwrap();
        assert!(!r.deploys(&ours, "1.0"));
        // The oldest shape names no App: joined by name.
        assert!(
            InstRecord::of(&inst("garm-a", None), "o", "1.0", &mut sites)
                .unwrap()
                .deploys(&ours, "1.0")
        );
    }
}
