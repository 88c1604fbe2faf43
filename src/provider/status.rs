//! What a runner looks like from outside: the status GARM accepts for an AppInst (and its fault),
//! GARM's [`ProviderInstance`], and the [`RunnerView`] an operator's table shows.

use serde::Serialize;

use super::deploy::site_name;
use super::{OwnedRunner, Provider};
use crate::garm::{Address, InstanceStatus, ProviderInstance};
use edge_connect::models::AppInst;
use edge_connect::AppInstState;

/// Maps an AppInst (or its absence, for an App whose instance was stopped) to a GARM status and
/// an optional fault text. An AppInst in an error state, or one with errors recorded while it is
/// not Ready, is `error`, with the errors as its fault: what GARM shows as the runner's
/// `provider_fault`.
pub fn garm_status(app_inst: Option<&AppInst>) -> (InstanceStatus, Option<String>) {
    let Some(inst) = app_inst else {
        return (InstanceStatus::Stopped, None);
    };
    use AppInstState::*;
    let fault = || match inst.errors.is_empty() {
        true => inst.failure(),
        false => format!("{}: {}", inst.state, inst.failure()),
    };
    match &inst.state {
        CreateError | UpdateError | DeleteError => (InstanceStatus::Error, Some(fault())),
        // Errors recorded while the controller still works on it (or with a state it does not
        // name): they are why it is not Ready.
        state if !inst.errors.is_empty() && *state != Ready => {
            (InstanceStatus::Error, Some(fault()))
        }
        // Still deploying counts as running: GARM has no pending slot, and `running` is the only
        // status that keeps GARM from "starting" the instance again during reconciliation.
        Ready | CreateRequested | Creating | CreatingDependencies | UpdateRequested | Updating
        | CrmInitOk => (InstanceStatus::Running, None),
        DeletePrepare | DeleteRequested | Deleting | DeleteDone | NotPresent => {
            (InstanceStatus::Stopped, None)
        }
        Unknown | Other(_) => (InstanceStatus::Unknown, None),
    }
}

/// One runner as an operator's table shows it (the CLI's `list` and `get`): GARM's view and what
/// a person needs besides, where it runs, in which Edge Connect state, since when, and why it is
/// broken. It serializes exactly as its [`ProviderInstance`] (what GARM reads); the other fields
/// are for tables only.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunnerView {
    /// GARM's view of the runner (status `error` with the AppInst's errors, base64, as
    /// `provider_fault`).
    #[serde(flatten)]
    pub instance: ProviderInstance,
    /// GARM pool id recorded on the App; empty when not known (a view made by CreateInstance).
    #[serde(skip)]
    pub pool: String,
    /// `ORG/NAME` of the cloudlet the AppInst runs on; empty when it has none (stopped).
    #[serde(skip)]
    pub site: String,
    /// The AppInst's Edge Connect state (`Ready`, `CreateError`, ...); empty when it has none.
    #[serde(skip)]
    pub state: String,
    /// When the AppInst was created, as the server wrote it (RFC 3339); empty when unknown.
    #[serde(skip)]
    pub created_at: String,
    /// The fault in words (the AppInst's state and errors); empty when none.
    #[serde(skip)]
    pub fault: String,
}

impl Provider {
    /// The views of a runner, made of its parts (List converts a thousand runners: moving their
    /// strings instead of copying them keeps one copy alive, not two).
    pub(super) fn view_of(&self, runner: OwnedRunner) -> RunnerView {
        // Normally one AppInst; after a failover past a site that held the first, the one that
        // runs tells (Ready before one still deploying, running before anything else).
        let rank = |inst: &AppInst| match garm_status(Some(inst)).0 {
            InstanceStatus::Running if inst.state == AppInstState::Ready => 0,
            InstanceStatus::Running => 1,
            InstanceStatus::Error => 2,
            InstanceStatus::Unknown => 3,
            _ => 4,
        };
        let app_inst = runner.app_insts.into_iter().min_by_key(rank);
        let (status, fault) = masked_status(app_inst.as_ref(), self.client().scrubber());
        let (site, state, created_at, uri) = match app_inst {
            Some(i) => (
                i.cloudlet()
                    .or(i.zone_key.as_ref())
                    .map(|s| [s.organization.as_str(), "/", &s.name].concat())
                    .unwrap_or_default(),
                i.state.name().to_string(),
                i.created_at,
                i.uri,
            ),
            // A stopped runner: its App records where it runs when started; with no AppInst
            // it has no state (which `check` reads as "only the App is left") and no age.
            None => {
                let sites: Vec<_> = runner.vars.placements().iter().map(site_name).collect();
                (sites.join(","), String::new(), String::new(), String::new())
            }
        };
        let kind = "public".to_string();
        let instance = ProviderInstance {
            provider_id: runner.key.name,
            name: runner.vars.instance_name,
            os_type: runner.vars.os_type,
            os_arch: runner.vars.os_arch,
            addresses: Vec::from_iter((!uri.is_empty()).then_some(Address { address: uri, kind })),
            status,
            provider_fault: None,
        }
        .with_fault(&fault);
        RunnerView {
            instance,
            pool: runner.vars.pool_id,
            site,
            state,
            created_at,
            fault,
        }
    }
}

/// [`garm_status`] with the controller's text masked by `scrubber`, once for both of its
/// readers: GARM's `provider_fault` (where base64 would hide a secret from any later look) and
/// the table's fault.
fn masked_status(
    app_inst: Option<&AppInst>,
    scrubber: &edge_connect::Scrubber,
) -> (InstanceStatus, String) {
    let (status, fault) = garm_status(app_inst);
    let masked = fault.map(|fault| scrubber.scrub(&fault).into_owned());
    (status, masked.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_scrubbed_before_it_is_encoded() {
        use base64::Engine as _;
        let failed = inst(
            "CreateError",
            &["pull refused: Authorization: Bearer abcdefghijklmnopqrstuvwxyz"],
        );
        let (_, fault) = masked_status(Some(&failed), &edge_connect::Scrubber::new());
        let instance = ProviderInstance {
            provider_id: "garm-a".into(),
            name: "garm-a".into(),
            os_type: String::new(),
            os_arch: String::new(),
            addresses: vec![],
            status: InstanceStatus::Error,
            provider_fault: None,
        }
        .with_fault(&fault);
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(instance.provider_fault.unwrap_or_default())
            .unwrap();
        assert_eq!(
            decoded,
            b"CreateError: pull refused: Authorization: Bearer ***"
        );
    }

    fn inst(state: &str, errors: &[&str]) -> AppInst {
        AppInst {
            state: AppInstState::from_name(state),
            errors: errors.iter().map(|e| e.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn every_state_maps_to_a_status_garm_accepts() {
        use InstanceStatus::*;
        let cases = [
            ("Ready", Running),
            ("Creating", Running),
            ("CreateRequested", Running),
            ("CreatingDependencies", Running),
            ("Updating", Running),
            ("CreateError", Error),
            ("UpdateError", Error),
            ("DeleteError", Error),
            ("Deleting", Stopped),
            ("DeletePrepare", Stopped),
            ("TrackedStateUnknown", Unknown),
            ("", Unknown),
        ];
        for (state, want) in cases {
            assert_eq!(garm_status(Some(&inst(state, &[]))).0, want, "{state}");
        }
        assert_eq!(garm_status(None), (Stopped, None));
    }

    #[test]
    fn errors_recorded_before_ready_make_it_an_error() {
        let (s, fault) = garm_status(Some(&inst("Creating", &["pod x: ErrImagePull"])));
        assert_eq!(s, InstanceStatus::Error);
        assert_eq!(fault.as_deref(), Some("Creating: pod x: ErrImagePull"));
        assert_eq!(
            garm_status(Some(&inst("Ready", &["an old failure"]))),
            (InstanceStatus::Running, None)
        );
    }

    #[test]
    fn errors_become_the_fault() {
        let (s, fault) = garm_status(Some(&inst("CreateError", &["image pull back-off"])));
        assert_eq!(s, InstanceStatus::Error);
        assert_eq!(fault.as_deref(), Some("CreateError: image pull back-off"));
    }
}
