//! Deleting runners: DeleteInstance, RemoveAllInstances, and the AppInst and App deletes that
//! Stop, Start and a failed create share, each waiting out the controller's transient states.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use edge_connect::models::{AppInst, AppKey, SiteRef};
use edge_connect::{ApiError, ApiErrorKind, AppInstState};

use super::wait::retry_transient;
use super::{Outcome, OwnedRunner, Provider, POLL_INTERVAL};
use crate::error::Error;
use crate::metrics::Facts;

/// How many Edge Connect calls RemoveAll has in flight at most (a fixed limit: the retired
/// `edge_connect.remove_all_concurrency` is ignored). Each runner is two calls in sequence
/// (DeleteAppInst, DeleteApp), so 200 runners take 1 + 2 × ⌈200 / 100⌉ = 5 call latencies (64
/// would take 9, too close to issue 16's 10); the controller's 429 / 503 answers lower it while
/// they last (see [`Throttle`]).
const REMOVE_ALL_CONCURRENCY: usize = 100;

/// How long every RemoveAll call holds back after a 429 or 503, on top of the retry's own
/// backoff: the controller said it is overloaded, so all of them wait, not only the one told.
const OVERLOAD_PAUSE: Duration = Duration::from_millis(500);

/// The in-flight limit of RemoveAll's calls: up to `max`, halved (down to one) with a pause when
/// the controller answers 429 or 503, grown back by one per success (additive increase,
/// multiplicative decrease, as TCP does).
pub(super) struct Throttle {
    max: usize,
    state: Mutex<ThrottleState>,
    wake: tokio::sync::Notify,
}

struct ThrottleState {
    limit: usize,
    active: usize,
    paused_until: Option<Instant>,
}

/// One call in flight; dropping it lets the next one go.
pub(super) struct Permit<'a>(&'a Throttle);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.0.state().active -= 1;
        self.0.wake.notify_one();
    }
}

impl Throttle {
    /// A throttle allowing `max` calls at once.
    pub(super) fn new(max: usize) -> Self {
        Throttle {
            max,
            state: Mutex::new(ThrottleState {
                limit: max,
                active: 0,
                paused_until: None,
            }),
            wake: tokio::sync::Notify::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, ThrottleState> {
        // Every update is a few integer operations that cannot panic half-way.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a free place (and for a pause to end).
    pub(super) async fn acquire(&self) -> Permit<'_> {
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            // Registered before looking, so a release between the look and the wait is not lost.
            notified.as_mut().enable();
            let pause = {
                let mut s = self.state();
                let pause = s.paused_until.filter(|until| *until > Instant::now());
                if pause.is_none() && s.active < s.limit {
                    s.active += 1;
                    return Permit(self);
                }
                pause
            };
            match pause {
                Some(until) => tokio::time::sleep_until(until.into()).await,
                None => notified.await,
            }
        }
    }

    /// Records a call's outcome at `now`: overload (429, or 503 and its 5xx kin: the controller
    /// asks for less) halves the limit once per pause; success grows it.
    fn observe<T>(&self, result: &Result<T, ApiError>, now: Instant) {
        let mut s = self.state();
        use ApiErrorKind::{RateLimited, Server};
        match result {
            // Sixty calls told "429" at once are one signal, not sixty halvings (a pause that
            // has not ended holds back; `None`, no pause, is before any time).
            Err(e) if matches!(e.kind, RateLimited | Server) && s.paused_until <= Some(now) => {
                s.limit = (s.limit / 2).max(1);
                s.paused_until = Some(now + OVERLOAD_PAUSE);
                tracing::warn!(
                    limit = s.limit,
                    "Edge Connect is overloaded; fewer deletes at once"
                );
            }
            Ok(_) if s.limit < self.max => {
                s.limit += 1;
                drop(s);
                self.wake.notify_one();
            }
            _ => {}
        }
    }
}

impl Provider {
    /// Runs one attempt of a call under RemoveAll's throttle, when this provider has one.
    async fn throttled<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let Some(throttle) = &self.throttle else {
            return call.await;
        };
        let _permit = throttle.acquire().await;
        let result = call.await;
        throttle.observe(&result, Instant::now());
        result
    }

    /// Deletes the AppInst `inst` of the App `app` as [`Busy`] says: one that Edge Connect will
    /// not delete yet is waited for, or reported at once with what holds it and until when.
    pub(super) async fn delete_app_inst_or_report(
        &self,
        app: &AppKey,
        inst: &AppInst,
        busy: Busy,
    ) -> Result<(), Error> {
        if let Busy::Report { patience } = busy {
            // Its state is known from the read before: a create still running is refused for
            // as long as the CRM waits for its pod (B17), so asking would tell nothing.
            if creating(&inst.state) && !self.moves_within(app, inst, patience).await? {
                return Ok(());
            }
        }
        let (key, started) = (&inst.key, Instant::now());
        let delete = async || {
            let mut progress = |m: &str| self.report(m);
            self.client.delete_app_inst(key, &mut progress).await
        };
        loop {
            let Some(e) = self.delete_or_busy("DeleteAppInst", delete).await? else {
                return Ok(());
            };
            if e.already_being_deleted() {
                // Someone else (a concurrent DeleteInstance, or the controller undoing a
                // create) is deleting it: wait until it is gone, or until it is back
                // because that delete failed, and then delete it ourselves.
                let what = format!("the other delete of AppInst {} not finished", key.name);
                self.sleep_within(&what).await?;
                // In the older API the cloudlet is part of the key: only that one counts.
                let cloudlet = key.cloudlet_key.as_ref();
                let other = self.settled(app, &key.name, cloudlet, &what).await?;
                if other.is_none() {
                    return Ok(());
                }
                self.report(&format!(
                    "the other delete of AppInst {} failed; deleting it again",
                    key.name
                ));
            } else if let Busy::Report { patience } = busy {
                // Asking again would be refused the same way: read its state instead.
                let left = patience.saturating_sub(started.elapsed());
                if !self.moves_within(app, inst, left).await? {
                    return Ok(());
                }
            } else {
                self.report(&format!("AppInst {} is busy; waiting", key.name));
                let what = format!("AppInst {} busy, not deleted", key.name);
                self.sleep_within(&what).await?;
            }
        }
    }

    /// Runs a delete, throttled and retried while transient: `None` once it is done or finds
    /// nothing; Edge Connect's Busy answer, before the deadline, for the caller to wait on.
    async fn delete_or_busy<T>(
        &self,
        rpc: &str,
        delete: impl AsyncFn() -> Result<T, ApiError>,
    ) -> Result<Option<ApiError>, Error> {
        let client = &self.client;
        match retry_transient(client, rpc, async || self.throttled(delete()).await).await {
            Err(e) if e.kind == ApiErrorKind::Busy && !client.deadline().expired() => Ok(Some(e)),
            Err(e) if e.kind != ApiErrorKind::NotFound => Err(e.into()),
            _ => Ok(None),
        }
    }

    /// Removes a runner's AppInsts in their one order ([`super::removal_order`]: those Edge
    /// Connect lets go at once, the one that runs among them, before those a CRM holds), each as
    /// `busy` says. With [`Busy::Report`] a held one is not waited for: the others are removed and
    /// the error, marked [`Error::left_behind`], names each held one and when its CRM lets it go.
    /// Every command that removes AppInsts of a runner (Delete, Stop, Start, RemoveAll) goes
    /// through here.
    pub(super) async fn remove_app_insts(
        &self,
        runner: &OwnedRunner,
        busy: Busy,
    ) -> Result<(), Error> {
        let mut held_insts = Vec::new();
        for inst in &runner.app_insts {
            match busy {
                Busy::Report { patience } if patience.is_zero() && creating(&inst.state) => {
                    self.metrics.crm_hold(&runner.vars.pool_id, inst);
                    held_insts.push(held(inst, false));
                    continue;
                }
                // The one that runs is gone by now; say what is waited for, and how long.
                Busy::Wait if creating(&inst.state) => self.report(&format!(
                    "{}; waiting, at most {}",
                    held(inst, false),
                    self.bound()
                )),
                _ => self.report(&format!("removing AppInst {}", inst.key.name)),
            }
            self.delete_app_inst_or_report(&runner.key, inst, busy)
                .await?;
        }
        match held_insts.is_empty() {
            true => Ok(()),
            false => Err(Error::left_behind(held_insts.join("; "))),
        }
    }

    /// Reads the AppInst `inst` of the App `app` (still creating) every poll interval for up to
    /// `patience`: `Ok(true)` once it is in another state (a central CRM's undo has begun),
    /// `Ok(false)` once it is gone, an error saying what holds it when it is still creating then.
    async fn moves_within(
        &self,
        app: &AppKey,
        inst: &AppInst,
        patience: Duration,
    ) -> Result<bool, Error> {
        let started = Instant::now();
        let (name, cloudlet) = (&inst.key.name, inst.key.cloudlet_key.as_ref());
        let mut latest = inst.clone();
        loop {
            if started.elapsed() + POLL_INTERVAL > patience {
                // Given time to start going (a stream closed on a runner that does not start),
                // it did not: its CRM holds it. Without that time, only its state is known.
                return Err(Error::failed(held(&latest, !patience.is_zero())));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
            let insts = self.app_insts_of(app).await?;
            match insts.into_iter().find(|i| same_key(i, name, cloudlet)) {
                None => return Ok(false),
                Some(i) if creating(&i.state) => latest = i,
                Some(_) => return Ok(true),
            }
        }
    }

    /// Polls the AppInst `name` of the App `app` (on `cloudlet`, when given) until it settles:
    /// gone (`None`), Ready or failed (`Some`); fails saying that `what` did not happen by the
    /// deadline. It is looked up by its App (B24).
    pub(super) async fn settled(
        &self,
        app: &AppKey,
        name: &str,
        cloudlet: Option<&SiteRef>,
        what: &str,
    ) -> Result<Option<AppInst>, Error> {
        loop {
            let insts = self.app_insts_of(app).await?;
            match insts.into_iter().find(|i| same_key(i, name, cloudlet)) {
                Some(i) if i.state != AppInstState::Ready && !i.state.is_error() => {}
                settled => return Ok(settled),
            }
            self.sleep_within(what).await?;
        }
    }

    /// Deletes an App, waiting while it is still in use by an AppInst that is going away.
    pub(super) async fn delete_app(&self, key: &AppKey) -> Result<(), Error> {
        let delete = async || self.client.delete_app(key).await;
        while self.delete_or_busy("DeleteApp", delete).await?.is_some() {
            self.sleep_within(&format!("App {} in use, not deleted", key.name))
                .await?;
        }
        Ok(())
    }

    /// Delete: by provider id or GARM name; already gone is success. An AppInst that Edge
    /// Connect will not delete yet is waited for when `wait` (a person's delete), else reported
    /// at once: GARM retries a failed DeleteInstance every few seconds, and one that waited
    /// would hold the runner in `creating` for the whole wait (docs/reliability.md).
    pub(super) async fn delete(
        &self,
        instance: &str,
        wait: bool,
        facts: &mut Facts,
    ) -> Result<Outcome, Error> {
        let Some(runner) = self.find_runner(instance).await? else {
            tracing::info!(instance, "nothing to delete");
            return Ok(Outcome::Done);
        };
        facts.found(&runner);
        let busy = if wait { Busy::Wait } else { REPORT_AT_ONCE };
        // A runner has two AppInsts when a failover went past a site that held its first one
        // (docs/architecture.md, "Failover"): the one that runs goes first, whatever holds the
        // other.
        self.remove_app_insts(&runner, busy).await?;
        self.delete_app(&runner.key).await?;
        self.metrics
            .removed(&runner.vars.pool_id, runner.app_insts.first());
        tracing::info!(instance, "deleted");
        Ok(Outcome::Done)
    }

    /// RemoveAll: every runner of this controller, any pool, [`REMOVE_ALL_CONCURRENCY`] calls at
    /// once at most (fewer while the controller answers 429 / 503). An AppInst still creating is
    /// waited for when `wait` (a person's remove-all), else reported at once, as GARM's
    /// DeleteInstance does. An estate larger than one command keeps is removed in rounds: each
    /// reads the runners no earlier round failed to remove, keeps whole runners within the
    /// inventory's one bound (a runner that does not fit is left whole for the next round), and
    /// removes them; the estate's size never fails the cleanup (docs/reliability.md, "Issue 34").
    pub(super) async fn remove_all(&self, wait: bool) -> Result<Outcome, Error> {
        use futures_util::stream::{self, StreamExt};
        use futures_util::TryFutureExt;
        let this = &Provider {
            throttle: Some(std::sync::Arc::new(Throttle::new(REMOVE_ALL_CONCURRENCY))),
            ..self.clone()
        };
        let busy = if wait { Busy::Wait } else { REPORT_AT_ONCE };
        // The runners a round could not remove: later rounds pass over them. The others are
        // gone, so memory follows the failures, not the estate.
        let mut failed = std::collections::HashSet::new();
        // How many were tried, the first failure, and whether every one is a held AppInst.
        let (mut total, mut first, mut all_held) = (0usize, None::<String>, true);
        loop {
            let (runners, _, more) = self.runners("", None, Some(&failed)).await?;
            if runners.is_empty() {
                break;
            }
            if more || total > 0 {
                self.report(&format!(
                    "removing {} runners; more are left for the next round",
                    runners.len()
                ));
            }
            total += runners.len();
            let mut results = stream::iter(runners)
                .map(|r| async move {
                    let removed = this.remove_app_insts(&r, busy);
                    let result = removed.and_then(|()| this.delete_app(&r.key)).await;
                    (r, result)
                })
                .buffer_unordered(REMOVE_ALL_CONCURRENCY);
            while let Some((r, result)) = results.next().await {
                if let Err(e) = result {
                    all_held &= e.leaves_something();
                    first.get_or_insert_with(|| format!("{}: {e}", r.vars.instance_name));
                    failed.insert(r.key);
                }
            }
            if !more {
                break;
            }
        }
        let failed = failed.len();
        self.metrics.removed_all(total - failed, failed);
        let Some(first) = first else {
            tracing::info!(total, "removed all instances of this controller");
            return Ok(Outcome::Done);
        };
        let line = format!("{failed} of {total} instances could not be removed; first: {first}");
        Err(match all_held {
            // Only held AppInsts stay, each with its App: the time is in the line.
            true => Error::left_behind(format!(
                "{line}; everything else was removed, and RemoveAll after that removes them"
            )),
            false => Error::failed(line),
        })
    }
}

/// How a delete treats an AppInst that Edge Connect will not delete yet.
#[derive(Debug, Clone, Copy)]
pub(super) enum Busy {
    /// Wait within the deadline.
    Wait,
    /// Wait while Edge Connect itself deletes or undoes it (within the deadline), and up to
    /// `patience` for one still creating to start going; then say what holds it.
    Report {
        /// How long a create still running is given (zero: not asked at all).
        patience: Duration,
    },
}

/// GARM's DeleteInstance, Stop and RemoveAll: an AppInst still creating is named at once, never
/// waited for (GARM retries a failed DeleteInstance every few seconds; a held AppInst is let go
/// only after 15 minutes, longer than any deadline of these commands).
pub(super) const REPORT_AT_ONCE: Busy = Busy::Report {
    patience: Duration::ZERO,
};

/// How long a site's CRM waits for a new AppInst's pod before it lets the AppInst go
/// (main `pkg/k8smgmt/appinst.go:42`, `maxWait`; docs/edge-connect-behaviours.md B12).
const CRM_POD_WAIT: Duration = Duration::from_secs(15 * 60);

/// A create still under way: Edge Connect refuses to delete it (B17).
pub(super) fn creating(state: &AppInstState) -> bool {
    matches!(
        state,
        AppInstState::CreateRequested | AppInstState::Creating | AppInstState::CreatingDependencies
    )
}

/// One line for an AppInst Edge Connect will not delete yet. A create still running (which a
/// central CRM may finish in seconds, B12) is deleted once it has ended, at the latest when its
/// site's CRM stops waiting for the pod; `by_crm`: it is still creating after its create stream
/// was closed because its pod does not start, and not undone within the patience a central
/// CRM's undo needs (B7), so its site's CRM runs on the edge and holds it for the whole of its
/// wait for the pod (B12, B17).
pub(super) fn held(inst: &AppInst, by_crm: bool) -> String {
    let (name, state) = (&inst.key.name, &inst.state);
    let site = match crate::metrics::site_of(Some(inst)) {
        site if site.is_empty() => site,
        site => format!(" on {site}"),
    };
    if !creating(state) {
        return format!(
            "AppInst {name}{site} is {state}: Edge Connect deletes it only once that has finished"
        );
    }
    use time::format_description::well_known::Rfc3339;
    let by = time::OffsetDateTime::parse(&inst.created_at, &Rfc3339).map(|created| {
        let t = (created + CRM_POD_WAIT).to_offset(time::UtcOffset::UTC);
        format!("by {:02}:{:02}:{:02} UTC", t.hour(), t.minute(), t.second())
    });
    let until = match (by, by_crm) {
        (Ok(by), true) => format!("{by}, 15 minutes after its create"),
        (Ok(by), false) => by,
        (Err(_), _) => "within 15 minutes of its create".to_string(),
    };
    match by_crm {
        true => format!("AppInst {name}{site} is {state}: Edge Connect refuses to delete it while the site's CRM waits for its pod, which ends {until}"),
        false => format!("AppInst {name}{site} is {state}: its create is still running, and Edge Connect deletes it only once that has ended, at the latest {until} (the site's CRM waits at most 15 minutes for its pod)"),
    }
}

/// True when `inst` is the AppInst `name` (on `cloudlet`, when given: the older key shape).
fn same_key(inst: &AppInst, name: &str, cloudlet: Option<&SiteRef>) -> bool {
    inst.key.name == name && cloudlet.is_none_or(|c| inst.key.cloudlet_key.as_ref() == Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use edge_connect::models::AppInstKey;

    fn err(status: u16) -> Result<(), ApiError> {
        Err(ApiError::from_status(
            edge_connect::Rpc::DeleteApp,
            status,
            "x",
        ))
    }

    #[test]
    fn overload_halves_once_per_pause_and_success_grows_back() {
        let t = Throttle::new(64);
        let start = Instant::now();
        for _ in 0..60 {
            t.observe(&err(429), start);
        }
        assert_eq!(
            t.state().limit,
            32,
            "sixty answers of one moment are one signal"
        );
        let later = start + OVERLOAD_PAUSE * 2;
        t.observe(&err(503), later);
        assert_eq!(t.state().limit, 16);
        t.observe(&err(400), later);
        assert_eq!(t.state().limit, 16, "a refusal is not overload");
        t.observe(&Ok::<(), ApiError>(()), later);
        assert_eq!(t.state().limit, 17);
        for _ in 0..10 {
            t.observe(&err(429), later + OVERLOAD_PAUSE * 4);
        }
        assert_eq!(t.state().limit, 8);
        let t = Throttle::new(1);
        t.observe(&err(429), start);
        assert_eq!(t.state().limit, 1, "never below one");
    }

    #[tokio::test]
    async fn permits_never_exceed_the_limit() {
        let t = Throttle::new(2);
        let a = t.acquire().await;
        let _b = t.acquire().await;
        use futures_util::FutureExt;
        assert!(t.acquire().now_or_never().is_none(), "a third call waits");
        drop(a);
        assert!(
            t.acquire().now_or_never().is_some(),
            "a released place is handed on"
        );
    }

    #[test]
    fn a_held_app_inst_is_named_with_its_state_site_and_the_time_it_is_let_go() {
        let inst = |state: AppInstState, created_at: &str| AppInst {
            key: AppInstKey {
                name: "garm-a".into(),
                organization: "o".into(),
                cloudlet_key: None,
            },
            zone_key: Some(edge_connect::models::SiteRef {
                federated_organization: String::new(),
                organization: "TelekomOP".into(),
                name: "Munich".into(),
            }),
            state,
            created_at: created_at.into(),
            ..Default::default()
        };
        assert_eq!(
            held(&inst(AppInstState::Creating, "2026-12-03T13:50:07.5+01:00"), true),
            "AppInst garm-a on TelekomOP/Munich is Creating: Edge Connect refuses to delete it while the site's CRM waits for its pod, which ends by 13:05:07 UTC, 15 minutes after its create"
        );
        assert!(held(&inst(AppInstState::CreateRequested, ""), true)
            .ends_with("which ends within 15 minutes of its create"));
        assert_eq!(
            held(&inst(AppInstState::Creating, "2026-12-03T13:50:07.5+01:00"), false),
            "AppInst garm-a on TelekomOP/Munich is Creating: its create is still running, and Edge Connect deletes it only once that has ended, at the latest by 13:05:07 UTC (the site's CRM waits at most 15 minutes for its pod)"
        );
        assert_eq!(
            held(&inst(AppInstState::Updating, ""), false),
            "AppInst garm-a on TelekomOP/Munich is Updating: Edge Connect deletes it only once that has finished"
        );
    }

    #[test]
    fn the_older_key_names_its_cloudlet() {
        let site = |n: &str| edge_connect::models::SiteRef {
            federated_organization: String::new(),
            organization: "op".into(),
            name: n.into(),
        };
        let inst = AppInst {
            key: AppInstKey {
                name: "r".into(),
                organization: "o".into(),
                cloudlet_key: Some(site("a")),
            },
            ..Default::default()
        };
        assert!(same_key(&inst, "r", Some(&site("a"))));
        assert!(!same_key(&inst, "r", Some(&site("b"))));
        assert!(same_key(&inst, "r", None));
        assert!(!same_key(&inst, "s", None));
    }
}
