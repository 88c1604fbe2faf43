//! The RPCs this client makes, by name: what errors, answers and log lines are labelled with.
//! The calls themselves are in `api.rs`.

/// An RPC of the Master Controller (and its login), as named in its URL (`Display` and
/// [`Rpc::name`]); `Rpc::COUNT` of them, each one's place in the enum (`rpc as usize`) below it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, strum::Display, strum::EnumCount, strum::IntoStaticStr,
)]
pub enum Rpc {
    /// `POST /api/v1/login`.
    #[strum(serialize = "login")]
    Login,
    CreateApp,
    DeleteApp,
    ShowApp,
    CreateAppInst,
    DeleteAppInst,
    ShowAppInst,
    /// `ShowZone` (Gen3 only).
    ShowZone,
    ShowCloudlet,
    ShowFlavor,
    ShowFlavorsForZone,
}

impl Rpc {
    /// The name as in the URL (`login` for the login).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The key the request object is wrapped in (`{"region": ..., "<wrapper>": {...}}`).
    pub(crate) fn wrapper(self) -> &'static str {
        match self {
            Rpc::Login => "",
            Rpc::CreateApp | Rpc::DeleteApp | Rpc::ShowApp => "app",
            Rpc::CreateAppInst | Rpc::DeleteAppInst | Rpc::ShowAppInst => "appinst",
            Rpc::ShowZone => "zone",
            Rpc::ShowCloudlet => "cloudlet",
            Rpc::ShowFlavor => "flavor",
            Rpc::ShowFlavorsForZone => "zonekey",
        }
    }
}
