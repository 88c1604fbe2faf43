//! Finding this controller's runners (GetInstance and ListInstances show them): one by name
//! (GetInstance, Delete, Start, Stop) or all of a pool (ListInstances, RemoveAll). Read our Apps
//! (ShowApp, each App kept only when its environment says it is this controller's), then join
//! their AppInsts (ShowAppInst, each kept only when the App it deploys is one of ours). The
//! server is asked for ours only: the Apps by the controller's (and the pool's) markers in
//! `env_vars`, a pool's AppInsts by the marks in
//! their `annotations` (RemoveAll reads every AppInst, so that a leftover no mark names goes too),
//! or both by name (docs/edge-connect-behaviours.md B23). Every line that arrives
//! is parsed and checked, because a server older than a field answers with everything. Both
//! answers are read as they stream in, so memory follows the number of our runners, not the
//! size of the organization; what is kept has one bound ([`Kept`]), and reaching it is an error
//! that names it, except in a RemoveAll round ([`Provider::runners`]), which keeps whole runners
//! while they fit and leaves the others, whole, to the next round (docs/reliability.md, "Issue 34").
//!
//! An AppInst belongs to a runner when it deploys the runner's App (organization, name and
//! version), whatever its name: a failover past a site that holds the runner's first AppInst
//! places the next one under a second name ([`super::deploy::app_inst_name`]), so a runner is
//! looked up by its App (ShowAppInst filtered by `app_key`, docs/edge-connect-behaviours.md B24),
//! never by an AppInst name. An AppInst whose answer names no App (`app_key` missing, an older
//! answer shape) cannot be confirmed as ours: it is never shown as a runner's, nor deleted.
//! AppInsts made by releases before the marks carry none: an App of ours that the marked answer
//! gives no AppInst is looked up once more without the marks (see [`Provider::runners`]).

use std::collections::{HashMap, HashSet};

use edge_connect::models::{AppInst, AppKey};
use edge_connect::{ApiError, Rpc};
use futures_util::TryStreamExt;

use super::wait::retry_transient;
use super::{Outcome, OwnedRunner, Provider};
use crate::error::Error;
use crate::metrics::Facts;
use crate::naming::edge_name;
use crate::runner_env::{
    RunnerVars, ENV_CONTROLLER_ID, ENV_POOL_ID, MARK_CONTROLLER_ID, MARK_POOL_ID,
};

/// At most this many AppInsts of one runner are kept: one, two after a failover past a site
/// that holds the first (B24), a few more after leftovers on other sites; an answer that gives
/// one App more is not an answer about runners.
pub const MAX_APP_INSTS_PER_RUNNER: usize = 16;
/// At most this many bytes are kept from one command's answers: the runners, their Apps and
/// AppInsts together, each counted as its text (keys, ownership variables, states, errors,
/// addresses) and what holding it costs besides ([`APP_OVERHEAD`], [`APP_INST_OVERHEAD`]). Some
/// 15,000 ordinary runners fit (a GARM controller runs hundreds, a large one a few thousand); a
/// hostile answer's values may be megabytes each. An answer that brings more (one that repeats
/// an App of ours without end) ends a List in an error naming this bound, and makes RemoveAll
/// work in rounds ([`Provider::runners`]); with the rest of the command, this stays within the
/// 64 MiB of data memory docs/reliability.md states.
pub const MAX_KEPT_BYTES: usize = 32 * 1024 * 1024;
/// What one string costs besides its text: the allocator's header and rounding (a short string
/// takes a 32-byte chunk).
const PER_STRING: usize = 24;
/// What one kept App costs besides its text: its 9 strings (key and [`RunnerVars`]), and its slot
/// in the map of runners four times over: the hash table keeps up to 2.3 slots per entry after
/// it doubles, 3.4 while it doubles, and the map becomes a list of runners beside it.
const APP_OVERHEAD: usize =
    4 * std::mem::size_of::<(AppKey, (RunnerVars, Vec<AppInst>))>() + 9 * PER_STRING;
/// What one kept AppInst costs besides its text: the struct and up to 14 strings.
const APP_INST_OVERHEAD: usize = std::mem::size_of::<AppInst>() + 14 * PER_STRING;

/// What the inventory has kept so far, against [`MAX_KEPT_BYTES`].
#[derive(Default)]
struct Kept {
    runners: usize,
    bytes: usize,
}

impl Kept {
    /// Counts one more runner whose App holds `text` bytes of strings, or says that it does not
    /// fit (then nothing is counted).
    fn runner(&mut self, text: usize) -> bool {
        let fits = self.fits(text + APP_OVERHEAD);
        self.runners += usize::from(fits);
        fits
    }

    /// Counts one more AppInst with `text` bytes of strings, or says that it does not fit (then
    /// nothing is counted).
    fn app_inst(&mut self, text: usize) -> bool {
        self.fits(text + APP_INST_OVERHEAD)
    }

    fn fits(&mut self, bytes: usize) -> bool {
        let fits = self.bytes + bytes <= MAX_KEPT_BYTES;
        self.bytes += if fits { bytes } else { 0 };
        fits
    }

    /// Gives back what a runner left for the next round held: its App of `app_text` bytes and
    /// its AppInsts.
    fn release(&mut self, app_text: usize, insts: &[AppInst]) {
        let insts: usize = insts.iter().map(|i| inst_len(i) + APP_INST_OVERHEAD).sum();
        self.runners -= 1;
        self.bytes -= app_text + APP_OVERHEAD + insts;
    }

    /// The error of an answer that holds more than one command keeps, naming the bound and how
    /// many runners were read by then.
    fn too_much(&self, rpc: Rpc) -> ApiError {
        ApiError::protocol(
            rpc,
            format!(
                "the answer holds more of this controller's runners than one command keeps (its bound of {} MiB reached with {} runners); not read further",
                MAX_KEPT_BYTES / (1024 * 1024),
                self.runners
            ),
        )
    }
}

/// The error of an answer that gives one App more AppInsts than a runner has.
fn too_many_app_insts() -> ApiError {
    ApiError::protocol(
        Rpc::ShowAppInst,
        format!("the answer gives one App more than {MAX_APP_INSTS_PER_RUNNER} AppInsts; not read further"),
    )
}

impl Provider {
    /// The runner behind `instance`, or NotFound (exit 30 for GARM).
    pub(super) async fn existing_runner(&self, instance: &str) -> Result<OwnedRunner, Error> {
        self.find_runner(instance).await?.ok_or_else(|| {
            Error::NotFound(format!(
                "instance {} not found",
                crate::text::echo(instance)
            ))
        })
    }

    pub(super) async fn get(&self, instance: &str, facts: &mut Facts) -> Result<Outcome, Error> {
        let runner = self.existing_runner(instance).await?;
        facts.found(&runner);
        Ok(Outcome::Instance(Box::new(self.view_of(runner))))
    }

    /// Exactly this controller's runners of one pool (or of every pool when `pool_id` is None).
    pub(super) async fn list(&self, pool_id: Option<&str>) -> Result<Outcome, Error> {
        let runners = self.runners("", pool_id, None).await?.0;
        // Each runner is dropped as its view is made.
        let views = runners.into_iter().map(|r| self.view_of(r)).collect();
        Ok(Outcome::Instances(views))
    }

    /// Finds the runner behind a provider id or GARM name, if it belongs to this controller.
    pub(super) async fn find_runner(&self, instance: &str) -> Result<Option<OwnedRunner>, Error> {
        let name = edge_name(instance);
        let (runners, foreign, _) = self.runners(&name, None, None).await?;
        let runner = runners.into_iter().next();
        if runner.is_none() && foreign > 0 {
            tracing::warn!(app = %name, "an App with this name exists but belongs to another controller or was not made by this provider; not touching it");
        }
        Ok(runner)
    }

    /// Our runners named `name` (every name for ""), of `pool_id` when given, with their
    /// AppInsts, sorted by GARM name, how many Apps of that name were someone else's, and
    /// whether a round left runners unread: two Show calls whatever the count, and a third only
    /// when an App of ours has no marked AppInst (a stopped runner, or one made before the
    /// marks). A transient failure of an answer reads it again.
    ///
    /// `round`: a RemoveAll round, which keeps the runners whose Apps are not in it (those earlier
    /// rounds could not remove), whole (the App and every AppInst of it), as many as the bound
    /// keeps, and leaves each runner that does not fit for the next round; without it, more
    /// than the bounds is an error.
    pub(super) async fn runners(
        &self,
        name: &str,
        pool_id: Option<&str>,
        round: Option<&HashSet<AppKey>>,
    ) -> Result<(Vec<OwnedRunner>, usize, bool), Error> {
        let client = &self.client;
        let app_filter = &AppKey {
            version: String::new(),
            ..self.app_key(name)
        };
        // An App asked for by name is read whoever it belongs to: one that is someone else's is
        // counted, so that the caller can say why it is not touched. A name narrows both
        // answers already (the AppInsts by the App they deploy, whatever their names), and finds
        // AppInsts of every release.
        let by = |controller, pool| match (name, pool_id) {
            ("", Some(p)) => vec![(controller, self.controller_id.as_str()), (pool, p)],
            ("", None) => vec![(controller, self.controller_id.as_str())],
            _ => Vec::new(),
        };
        // Every runner of the controller (RemoveAll): every AppInst of each App counts, a
        // leftover on another site that no mark names included, so the AppInsts are read
        // unfiltered.
        let marks = match pool_id {
            Some(_) => by(MARK_CONTROLLER_ID, MARK_POOL_ID),
            None => Vec::new(),
        };
        let (env_vars, marks) = (&by(ENV_CONTROLLER_ID, ENV_POOL_ID)[..], &marks[..]);
        let read = || async move {
            // Both requests go out at once: one round trip. The AppInsts' answer then waits in
            // the socket, not in memory, while the Apps are read, so each AppInst meets the
            // complete set of our Apps and is kept or dropped at once.
            let (mut apps, insts) = futures_util::future::try_join(
                client.show_apps(app_filter, env_vars),
                client.show_app_insts(app_filter, marks),
            )
            .await?;
            let mut kept = Kept::default();
            // Each App's key is moved into the map, not copied: the runner gets it back at the end.
            let mut ours: HashMap<AppKey, (RunnerVars, Vec<AppInst>)> = HashMap::new();
            let (mut foreign, mut more) = (0, false);
            while let Some(app) = apps.try_next().await? {
                if !name.is_empty() && app.key.name != name {
                    continue;
                }
                let Some(vars) = RunnerVars::of_app(&app, &self.controller_id) else {
                    foreign += 1;
                    continue;
                };
                let done = round.is_some_and(|done| done.contains(&app.key));
                if done || pool_id.is_some_and(|p| p != vars.pool_id) {
                    continue;
                }
                // Every App of ours counts, a repeated one too: an answer that repeats one
                // without end must reach the bound, not run until the deadline. A round keeps
                // what fits and leaves the rest for the next one.
                if !kept.runner(key_len(&app.key) + vars.len()) {
                    if round.is_none() {
                        return Err(kept.too_much(Rpc::ShowApp));
                    }
                    more = true;
                    break;
                }
                ours.insert(app.key, (vars, Vec::new()));
            }
            let round = round.is_some();
            more |= join(insts, &mut ours, &mut kept, round).await?;
            // An App of ours without a marked AppInst is stopped, or its AppInst was made
            // before the marks: only the unmarked read can tell (once, for all such Apps).
            if !marks.is_empty() && ours.values().any(|(_, insts)| insts.is_empty()) {
                let mut unmarked: HashMap<_, _> =
                    ours.extract_if(|_, (_, insts)| insts.is_empty()).collect();
                let insts = client.show_app_insts(app_filter, &[]).await?;
                more |= join(insts, &mut unmarked, &mut kept, round).await?;
                ours.extend(unmarked);
            }
            // Each runner left whole for the next round was alone more than the bound: no
            // round would ever keep it.
            if more && ours.is_empty() {
                return Err(ApiError::protocol(
                    Rpc::ShowAppInst,
                    format!(
                        "a runner of this controller holds more than one command keeps (its bound of {} MiB); not read further",
                        MAX_KEPT_BYTES / (1024 * 1024)
                    ),
                ));
            }
            let mut runners: Vec<_> = (ours.into_iter())
                .map(|(key, (vars, mut app_insts))| {
                    super::removal_order(&mut app_insts);
                    OwnedRunner {
                        key,
                        vars,
                        app_insts,
                    }
                })
                .collect();
            // The map's order is arbitrary: a stable sort would keep nothing worth keeping.
            runners.sort_unstable_by(|a, b| a.vars.instance_name.cmp(&b.vars.instance_name));
            Ok((runners, foreign, more))
        };
        Ok(retry_transient(client, "ShowApp and ShowAppInst", read).await?)
    }

    /// The AppInsts that deploy the App `app_key` (exactly that version), whatever their names
    /// (at most [`MAX_APP_INSTS_PER_RUNNER`]): ShowAppInst filtered by the App (B24).
    pub(super) async fn app_insts_of(&self, app_key: &AppKey) -> Result<Vec<AppInst>, Error> {
        let client = &self.client;
        Ok(retry_transient(client, "ShowAppInst", || async move {
            let mut ours = HashMap::from([(app_key.clone(), Default::default())]);
            let insts = client.show_app_insts(app_key, &[]).await?;
            join(insts, &mut ours, &mut Kept::default(), false).await?;
            let (_, mut found) = ours.remove(app_key).unwrap_or_default();
            super::removal_order(&mut found);
            Ok(found)
        })
        .await?)
    }
}

/// Adds each AppInst of the answer to the runner of `ours` whose App it deploys, under any name.
/// One that passes the bound ends a read of all in an error; in a `round` its runner is left,
/// whole, for the next round: dropped from `ours` with what it held, its later AppInsts passed
/// over. Returns whether a runner was left.
async fn join(
    mut insts: edge_connect::Show<AppInst>,
    ours: &mut HashMap<AppKey, (RunnerVars, Vec<AppInst>)>,
    kept: &mut Kept,
    round: bool,
) -> Result<bool, ApiError> {
    let mut left = false;
    while let Some(inst) = insts.try_next().await? {
        let Some((_, found)) = inst.app_key.as_ref().and_then(|k| ours.get_mut(k)) else {
            continue;
        };
        if found.len() == MAX_APP_INSTS_PER_RUNNER {
            return Err(too_many_app_insts());
        }
        if kept.app_inst(inst_len(&inst)) {
            // Nearly every runner has one AppInst: room for one more at a time, not the four a
            // first push reserves (an AppInst is some 400 bytes: 1.2 MB of a 1,000-runner List).
            found.reserve_exact(1);
            found.push(inst);
            continue;
        }
        if !round {
            return Err(kept.too_much(Rpc::ShowAppInst));
        }
        // A runner is removed whole (its AppInsts, then its App) or not at all in a round: one
        // removed with an AppInst unread would leave that AppInst, and its App in use.
        if let Some((key, (vars, found))) = inst.app_key.as_ref().and_then(|k| ours.remove_entry(k))
        {
            kept.release(key_len(&key) + vars.len(), &found);
        }
        left = true;
    }
    Ok(left)
}

fn key_len(key: &AppKey) -> usize {
    key.organization.len() + key.name.len() + key.version.len()
}

/// The text an AppInst holds (keys, sites, state, errors, address).
fn inst_len(inst: &AppInst) -> usize {
    let site = |s: &Option<edge_connect::models::SiteRef>| {
        s.as_ref().map_or(0, |s| {
            s.organization.len() + s.name.len() + s.federated_organization.len()
        })
    };
    inst.key.name.len()
        + inst.key.organization.len()
        + site(&inst.key.cloudlet_key)
        + inst.app_key.as_ref().map_or(0, key_len)
        + site(&inst.zone_key)
        + site(&inst.cloudlet_key)
        + inst.state.name().len()
        + inst.errors.iter().map(String::len).sum::<usize>()
        + inst.uri.len()
        + inst.created_at.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_and_app_insts_share_the_bound_and_the_error_counts_the_runners_read() {
        let mut kept = Kept::default();
        assert!(kept.runner(MAX_KEPT_BYTES / 2));
        assert!(kept.runner(MAX_KEPT_BYTES / 4));
        assert!(!kept.app_inst(MAX_KEPT_BYTES / 4), "past the bound");
        assert!(!kept.runner(MAX_KEPT_BYTES / 4), "past the bound");
        assert_eq!(
            (kept.runners, kept.bytes),
            (2, MAX_KEPT_BYTES / 4 * 3 + 2 * APP_OVERHEAD)
        );
        assert_eq!(
            kept.too_much(Rpc::ShowAppInst).to_string(),
            "Edge Connect ShowAppInst: the answer holds more of this controller's runners than one command keeps (its bound of 32 MiB reached with 2 runners); not read further"
        );
        assert!(too_many_app_insts()
            .to_string()
            .contains("more than 16 AppInsts"));
        // What an ordinary runner costs, App and AppInst: some 15,000 fit.
        let runner = 150 + APP_OVERHEAD + 170 + APP_INST_OVERHEAD;
        assert!(
            (12_000..20_000).contains(&(MAX_KEPT_BYTES / runner)),
            "{runner} bytes a runner"
        );
    }

    #[test]
    fn a_runner_left_for_the_next_round_gives_back_all_it_held() {
        let mut kept = Kept::default();
        assert!(kept.runner(10));
        assert!(kept.runner(20));
        let inst = AppInst {
            uri: "x".repeat(100),
            ..Default::default()
        };
        assert!(kept.app_inst(inst_len(&inst)));
        let (runners, bytes) = (kept.runners, kept.bytes);
        kept.release(20, std::slice::from_ref(&inst));
        assert_eq!(kept.runners, runners - 1);
        assert_eq!(
            kept.bytes,
            bytes - (20 + APP_OVERHEAD) - (inst_len(&inst) + APP_INST_OVERHEAD)
        );
        assert_eq!(kept.bytes, 10 + APP_OVERHEAD);
    }
}
