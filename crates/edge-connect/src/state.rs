//! `TrackedState` (`api/edgeproto/common.proto`), the state of an AppInst as Show reports it.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// The tracked state of an AppInst.
///
/// The MC writes the enum by name (`"Ready"`); its number is accepted too, because the proto's
/// JSON form allows either. A name this client does not know is kept as [`AppInstState::Other`]
/// so a newer controller's state is reported, not dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AppInstState {
    /// 0 `TrackedStateUnknown` (also an absent field).
    #[default]
    Unknown,
    /// 1 `NotPresent`.
    NotPresent,
    /// 2 `CreateRequested`.
    CreateRequested,
    /// 3 `Creating`.
    Creating,
    /// 4 `CreateError`.
    CreateError,
    /// 5 `Ready`.
    Ready,
    /// 6 `UpdateRequested`.
    UpdateRequested,
    /// 7 `Updating`.
    Updating,
    /// 8 `UpdateError`.
    UpdateError,
    /// 9 `DeleteRequested`.
    DeleteRequested,
    /// 10 `Deleting`.
    Deleting,
    /// 11 `DeleteError`.
    DeleteError,
    /// 12 `DeletePrepare`.
    DeletePrepare,
    /// 13 `CrmInitok`.
    CrmInitOk,
    /// 14 `CreatingDependencies`.
    CreatingDependencies,
    /// 15 `DeleteDone`.
    DeleteDone,
    /// A state this client does not know, as the server named it.
    Other(String),
}

const NAMES: [(&str, AppInstState); 16] = [
    ("TrackedStateUnknown", AppInstState::Unknown),
    ("NotPresent", AppInstState::NotPresent),
    ("CreateRequested", AppInstState::CreateRequested),
    ("Creating", AppInstState::Creating),
    ("CreateError", AppInstState::CreateError),
    ("Ready", AppInstState::Ready),
    ("UpdateRequested", AppInstState::UpdateRequested),
    ("Updating", AppInstState::Updating),
    ("UpdateError", AppInstState::UpdateError),
    ("DeleteRequested", AppInstState::DeleteRequested),
    ("Deleting", AppInstState::Deleting),
    ("DeleteError", AppInstState::DeleteError),
    ("DeletePrepare", AppInstState::DeletePrepare),
    ("CrmInitok", AppInstState::CrmInitOk),
    ("CreatingDependencies", AppInstState::CreatingDependencies),
    ("DeleteDone", AppInstState::DeleteDone),
];

impl AppInstState {
    /// The state named `name` (as the MC writes it).
    pub fn from_name(name: &str) -> Self {
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| AppInstState::Other(name.to_string()))
    }

    /// The name the MC uses for this state.
    pub fn name(&self) -> &str {
        match self {
            AppInstState::Other(name) => name,
            known => NAMES
                .iter()
                .find(|(_, s)| s == known)
                .map(|(n, _)| *n)
                .unwrap_or("TrackedStateUnknown"),
        }
    }

    /// `CreateError`, `UpdateError` or `DeleteError`.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            AppInstState::CreateError | AppInstState::UpdateError | AppInstState::DeleteError
        )
    }

    /// The controller is still working on it and refuses deletes (`IsTransientState`,
    /// `api/edgeproto/caches.go`).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            AppInstState::CreateRequested
                | AppInstState::Creating
                | AppInstState::CreatingDependencies
                | AppInstState::UpdateRequested
                | AppInstState::Updating
                | AppInstState::DeleteRequested
                | AppInstState::Deleting
                | AppInstState::DeletePrepare
        )
    }
}

impl fmt::Display for AppInstState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for AppInstState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Name(String),
            Number(u64),
        }
        Ok(match Raw::deserialize(deserializer)? {
            Raw::Name(name) => AppInstState::from_name(&name),
            Raw::Number(n) => usize::try_from(n)
                .ok()
                .and_then(|i| NAMES.get(i))
                .map(|(_, s)| s.clone())
                .unwrap_or_else(|| AppInstState::Other(n.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_numbers_and_unknown_states() {
        let read = |json: &str| serde_json::from_str::<AppInstState>(json).unwrap();
        assert_eq!(read("\"Ready\""), AppInstState::Ready);
        assert_eq!(read("5"), AppInstState::Ready);
        assert_eq!(read("\"CrmInitok\""), AppInstState::CrmInitOk);
        assert_eq!(
            read("\"Hibernating\""),
            AppInstState::Other("Hibernating".into())
        );
        assert_eq!(read("99"), AppInstState::Other("99".into()));
        for (name, state) in NAMES {
            assert_eq!(AppInstState::from_name(name), state);
            assert_eq!(state.name(), name);
        }
    }
}
