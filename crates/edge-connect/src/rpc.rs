//! The RPCs this client makes, by name: what errors, answers and log lines are labelled with.
//! The calls themselves are in `api.rs`.

use std::fmt;

/// An RPC of the Master Controller (and its login), as named in its URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rpc {
    /// `POST /api/v1/login`.
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
    /// How many RPCs there are: each one's place in the enum (`rpc as usize`) is below it, as
    /// long as a new RPC goes last.
    pub(crate) const COUNT: usize = Rpc::ShowFlavorsForZone as usize + 1;

    /// The name as in the URL (`login` for the login).
    pub fn name(self) -> &'static str {
        match self {
            Rpc::Login => "login",
            Rpc::CreateApp => "CreateApp",
            Rpc::DeleteApp => "DeleteApp",
            Rpc::ShowApp => "ShowApp",
            Rpc::CreateAppInst => "CreateAppInst",
            Rpc::DeleteAppInst => "DeleteAppInst",
            Rpc::ShowAppInst => "ShowAppInst",
            Rpc::ShowZone => "ShowZone",
            Rpc::ShowCloudlet => "ShowCloudlet",
            Rpc::ShowFlavor => "ShowFlavor",
            Rpc::ShowFlavorsForZone => "ShowFlavorsForZone",
        }
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

impl fmt::Display for Rpc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
