//! Edge Connect states → the four statuses GARM accepts.

use crate::garm::InstanceStatus;
use edge_connect::models::AppInst;
use edge_connect::AppInstState;

/// Maps an AppInst (or its absence, for an App whose instance was stopped) to a GARM status and
/// an optional fault text.
pub fn garm_status(app_inst: Option<&AppInst>) -> (InstanceStatus, Option<String>) {
    let Some(inst) = app_inst else {
        return (InstanceStatus::Stopped, None);
    };
    use AppInstState::*;
    match &inst.state {
        // Still deploying counts as running: GARM has no pending slot, and `running` is the only
        // status that keeps GARM from "starting" the instance again during reconciliation.
        Ready | CreateRequested | Creating | CreatingDependencies | UpdateRequested | Updating
        | CrmInitOk => (InstanceStatus::Running, None),
        state @ (CreateError | UpdateError | DeleteError) => {
            let detail = if inst.errors.is_empty() {
                state.to_string()
            } else {
                format!("{state}: {}", inst.errors.join("; "))
            };
            (InstanceStatus::Error, Some(detail))
        }
        DeletePrepare | DeleteRequested | Deleting | DeleteDone | NotPresent => {
            (InstanceStatus::Stopped, None)
        }
        Unknown | Other(_) => (InstanceStatus::Unknown, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn errors_become_the_fault() {
        let (s, fault) = garm_status(Some(&inst("CreateError", &["image pull back-off"])));
        assert_eq!(s, InstanceStatus::Error);
        assert_eq!(fault.as_deref(), Some("CreateError: image pull back-off"));
    }
}
