//! What a person's command left on Edge Connect, found and removed: the deploy test's runners
//! (an earlier check's too, one killed included) and what an interrupted or failed `create`
//! made. An AppInst the platform holds busy (a CRM on the edge keeps the AppInst of a runner
//! that cannot start `Creating` for up to 15 minutes, docs/edge-connect-behaviours.md B12, B17)
//! is waited for with progress, within the bound the caller gives and names, and never sent a
//! delete the controller would refuse; what a refusal keeps is named, so that the caller can
//! say how it will be removed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use edge_connect::AppInstState;

use crate::error::Error;
use crate::provider::status::RunnerView;
use crate::provider::{Operation, Outcome, Provider};

/// How often a runner the platform holds busy is looked at again (two Show calls each time,
/// as often as the provider's own waits poll).
const POLL: Duration = Duration::from_secs(2);

/// How often a long wait says that it is still waiting.
const RETELL: Duration = Duration::from_secs(60);

/// Which of the provider's runners to remove.
#[derive(Clone, Copy)]
pub(crate) enum Which<'a> {
    /// Every runner of its controller (the deploy test's identity).
    All,
    /// The runner of this GARM name.
    Named(&'a str),
}

/// What [`remove`] did.
#[derive(Default)]
pub(crate) struct Removal {
    /// The runners removed.
    pub removed: Vec<String>,
    /// Each runner still on Edge Connect, described: its parts and why they are there.
    pub left: Vec<String>,
}

/// Removes `which` runners, waiting while the platform holds one busy, until the deadline of
/// `provider`'s client (named in the progress lines as [`Provider::bound`] says). A delete that
/// fails while nothing holds the runner busy is final: that runner is left and described with
/// the refusal.
pub(crate) async fn remove(provider: &Provider, which: Which<'_>) -> Removal {
    let bound = provider.bound();
    let mut done = Removal::default();
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    // What each busy runner was last said to be, and when.
    let mut announced: BTreeMap<String, (String, Instant)> = BTreeMap::new();
    let started = Instant::now();
    loop {
        let views = match find(provider, which).await {
            Ok(views) => views,
            Err(e) => {
                let what = match which {
                    Which::All => "the deploy test's runners".to_string(),
                    Which::Named(name) => name.to_string(),
                };
                done.left
                    .push(format!("{what} (could not be looked up: {e})"));
                return done;
            }
        };
        let (mut left, mut open) = (Vec::new(), false);
        for view in views {
            let name = view.instance.name.clone();
            if held_busy(&view.state) {
                // A delete refused while the platform held it busy is tried again afterwards.
                failed.remove(&name);
                let state = crate::text::echo(&view.state);
                let tell = match announced.get(&name) {
                    Some((told, at)) if *told == view.state && at.elapsed() < RETELL => None,
                    Some((told, _)) if *told == view.state => Some(format!(
                        "{} still {state} after {} s; waiting, at most {bound}",
                        parts(&view),
                        started.elapsed().as_secs()
                    )),
                    _ => Some(format!(
                        "{} is {state}: Edge Connect deletes it only once that ends (a site whose CRM runs on the edge keeps a runner that cannot start Creating for up to 15 minutes); waiting, at most {bound}",
                        parts(&view)
                    )),
                };
                if let Some(tell) = tell {
                    provider.report(&tell);
                    announced.insert(name, (view.state.clone(), Instant::now()));
                }
                let still = format!("still {state} when the wait of {bound} ended");
                left.push(format!("{} ({still})", parts(&view)));
                open = true;
                continue;
            }
            if let Some(e) = failed.get(&name) {
                left.push(format!("{} (not deleted: {e})", parts(&view)));
                continue;
            }
            let delete = Operation::Delete {
                instance: name.clone(),
                wait: false,
            };
            match provider.run(delete).await {
                Ok(_) => {
                    provider.report(&format!("removed {}", parts(&view)));
                    done.removed.push(name);
                }
                Err(e) => {
                    // Looked at once more: busy by now (wait), or refused (final).
                    left.push(format!("{} (not deleted: {e})", parts(&view)));
                    failed.insert(name, e.to_string());
                    open = true;
                }
            }
        }
        if !open || !provider.client().deadline().has_room_for(POLL) {
            done.left = left;
            return done;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The runners `which` names, as `list` shows them.
async fn find(provider: &Provider, which: Which<'_>) -> Result<Vec<RunnerView>, Error> {
    let operation = match which {
        Which::All => Operation::List { pool_id: None },
        Which::Named(name) => Operation::Get {
            instance: name.to_string(),
        },
    };
    match provider.run(operation).await {
        Ok(Outcome::Instance(view)) => Ok(vec![*view]),
        Ok(Outcome::Instances(views)) => Ok(views),
        Ok(Outcome::Done) | Err(Error::NotFound(_)) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// A state in which the controller refuses to delete the AppInst ("AppInst busy").
fn held_busy(state: &str) -> bool {
    use AppInstState::*;
    matches!(
        AppInstState::from_name(state),
        CreateRequested
            | Creating
            | CreatingDependencies
            | UpdateRequested
            | Updating
            | DeletePrepare
            | DeleteRequested
            | Deleting
    )
}

/// What of a runner exists: its App, and its AppInst with where it is.
fn parts(view: &RunnerView) -> String {
    let name = crate::text::echo(&view.instance.provider_id);
    if view.state.is_empty() {
        format!("App {name}")
    } else {
        let site = crate::text::echo(&view.site);
        format!("App {name} with its AppInst on {site}")
    }
}

/// The signals that stop a person's command: SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal
/// closed, an ssh session dropped). Watched from [`StopSignals::watch`] on, before the work they
/// stop begins, and kept by the same value through its cleanup: a signal that comes while
/// nothing awaits it (say, right after "… again stops at once" was printed) is held for the
/// next [`StopSignals::next`], never lost. Before `watch` the signals keep their default action.
pub(crate) struct StopSignals {
    watched: [(Option<tokio::signal::unix::Signal>, &'static str); 3],
}

impl StopSignals {
    pub(crate) fn watch() -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        let watch = |kind: SignalKind, name| (signal(kind).ok(), name);
        StopSignals {
            watched: [
                watch(SignalKind::interrupt(), "SIGINT"),
                watch(SignalKind::terminate(), "SIGTERM"),
                watch(SignalKind::hangup(), "SIGHUP"),
            ],
        }
    }

    /// The name of the next signal. None of them can be watched: nothing ever stops the
    /// command but a kill, so this never resolves.
    pub(crate) async fn next(&mut self) -> &'static str {
        let waits = self.watched.iter_mut().map(|(signal, name)| {
            Box::pin(async move {
                if let Some(signal) = signal {
                    if signal.recv().await.is_some() {
                        return *name;
                    }
                }
                std::future::pending().await
            })
        });
        futures_util::future::select_all(waits).await.0
    }
}
