//! `TrackedState` (`api/edgeproto/common.proto`), the state of an AppInst as Show reports it.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// The tracked state of an AppInst.
///
/// The MC writes the enum by name (`"Ready"`); its number is accepted too, because the proto's
/// JSON form allows either. A name this client does not know is kept as [`AppInstState::Other`]
/// so a newer controller's state is reported, not dropped. The known states are the proto's, in
/// its order, so each one's place is its number; each is named as the MC writes it (`Unknown` is
/// also an absent field).
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    strum::Display,
    strum::EnumString,
    strum::FromRepr,
    strum::IntoStaticStr,
)]
pub enum AppInstState {
    #[default]
    #[strum(serialize = "TrackedStateUnknown")]
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
    #[strum(serialize = "CrmInitok")]
    CrmInitOk,
    CreatingDependencies,
    DeleteDone,
    /// A state this client does not know, as the server named it.
    #[strum(default)]
    Other(String),
}

impl AppInstState {
    /// The state named `name` (as the MC writes it).
    pub fn from_name(name: &str) -> Self {
        name.parse()
            .unwrap_or_else(|_| AppInstState::Other(name.to_string()))
    }

    /// The name the MC uses for this state.
    pub fn name(&self) -> &str {
        match self {
            AppInstState::Other(name) => name,
            known => known.into(),
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
                    .and_then(AppInstState::from_repr)
                    .filter(|s| !matches!(s, AppInstState::Other(_)))
                    .unwrap_or_else(|| AppInstState::Other(n.to_string())))
            }
            /// serde_json hands a number that is not negative to `visit_u64`.
            fn visit_i64<E>(self, n: i64) -> Result<AppInstState, E> {
                Ok(AppInstState::Other(n.to_string()))
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
        // The proto's names, each at its number.
        let names = [
            "TrackedStateUnknown",
            "NotPresent",
            "CreateRequested",
            "Creating",
            "CreateError",
            "Ready",
            "UpdateRequested",
            "Updating",
            "UpdateError",
            "DeleteRequested",
            "Deleting",
            "DeleteError",
            "DeletePrepare",
            "CrmInitok",
            "CreatingDependencies",
            "DeleteDone",
        ];
        for (number, name) in names.into_iter().enumerate() {
            let state = read(&number.to_string());
            assert!(!matches!(state, AppInstState::Other(_)), "{name}");
            assert_eq!(AppInstState::from_name(name), state);
            assert_eq!(state.name(), name);
            assert_eq!(state.to_string(), name);
        }
        assert_eq!(read("16"), AppInstState::Other("16".into()));
        assert_eq!(
            AppInstState::Other("Hibernating".into()).to_string(),
            "Hibernating"
        );
    }
}
