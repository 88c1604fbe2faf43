//! `TrackedState` (`api/edgeproto/common.proto`), the state of an AppInst as Show reports it.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// The tracked state of an AppInst.
///
/// The MC writes the enum by name (`"Ready"`); its number is accepted too, because the proto's
/// JSON form allows either. A name this client does not know is kept as [`AppInstState::Other`]
/// so a newer controller's state is reported, not dropped. The known states are the proto's, in
/// its order: `NAMES` below gives each its name at its number (`Unknown` is also an absent field).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AppInstState {
    #[default]
    Unknown,
    NotPresent,
    CreateRequested,
    Creating,
    CreateError,
    Ready,
    UpdateRequested,
    Updating,
    UpdateError,
    DeleteRequested,
    Deleting,
    DeleteError,
    DeletePrepare,
    CrmInitOk,
    CreatingDependencies,
    DeleteDone,
    /// A state this client does not know, as the server named it.
    Other(String),
}

/// Each known state's name as the MC writes it, at the state's number.
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
}

impl fmt::Display for AppInstState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for AppInstState {
    /// Read straight from the name or number as it comes (an untagged enum would buffer every
    /// value first, a cost paid for every line of a large ShowAppInst answer); `null` is unknown.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = AppInstState;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a state name or number")
            }
            fn visit_str<E>(self, name: &str) -> Result<AppInstState, E> {
                Ok(AppInstState::from_name(name))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<AppInstState, E> {
                Ok(usize::try_from(n)
                    .ok()
                    .and_then(|i| NAMES.get(i))
                    .map(|(_, s)| s.clone())
                    .unwrap_or_else(|| AppInstState::Other(n.to_string())))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<AppInstState, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Ok(AppInstState::Other(n.to_string())),
                }
            }
            fn visit_unit<E>(self) -> Result<AppInstState, E> {
                Ok(AppInstState::Unknown)
            }
        }
        deserializer.deserialize_any(Visit)
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
        assert_eq!(read("-1"), AppInstState::Other("-1".into()));
        assert_eq!(read("null"), AppInstState::Unknown);
        for (name, state) in NAMES {
            assert_eq!(AppInstState::from_name(name), state);
            assert_eq!(state.name(), name);
        }
    }
}
