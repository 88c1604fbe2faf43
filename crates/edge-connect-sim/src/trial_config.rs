//! The one writer of the provider's config TOML: for a newcomer's trial
//! (`edge-connect-sim --write-provider-config DIR`), the provider's `demo`, its tests and its
//! benchmarks. It lives here, not in the provider, because the provider depends on the
//! simulator (for `demo`) and not the reverse.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{ApiGeneration, SimConfig};

/// The files written for a trial.
#[derive(Debug, Clone)]
pub struct TrialFiles {
    /// The provider config (`--config` of the provider).
    pub config: PathBuf,
    /// The credentials file it names (mode 0600).
    pub credentials: PathBuf,
}

/// Which placement table a provider config has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteTable {
    /// `[edge_connect.zone]` (the newer API).
    Zone,
    /// `[edge_connect.cloudlet]` (the older API).
    Cloudlet,
}

/// A provider config for an Edge Connect (the simulator, usually) at `url`.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// `edge_connect.url`.
    pub url: String,
    /// `edge_connect.organization`.
    pub organization: String,
    /// `edge_connect.region`.
    pub region: String,
    /// `edge_connect.default_flavor`.
    pub default_flavor: String,
    /// The placement table and its site (organization, name).
    pub site: (SiteTable, String, String),
    /// `credentials_file`.
    pub credentials_file: PathBuf,
    /// `log_file`; `None` leaves it out (warnings then go to stderr only).
    pub log_file: Option<PathBuf>,
    /// `log_level`.
    pub log_level: &'static str,
    /// `token_cache_dir`; `None` writes `token_cache = false`.
    pub token_cache_dir: Option<PathBuf>,
    /// More `key = value` lines for `[edge_connect]`, as they are.
    pub edge_connect_lines: String,
}

impl ProviderConfig {
    /// A config for a simulator at `url` that runs with `sim`: its first user's credentials
    /// file, organization, region and flavor, and the placement its API generation takes (a
    /// zone on Gen3, a cloudlet on Gen2). The credentials file, the log file and the token cache
    /// are named in `dir`, so a run touches nothing outside it.
    pub fn for_sim(url: &str, sim: &SimConfig, dir: &Path) -> std::io::Result<ProviderConfig> {
        let first = |v: &[String], what: &str| v.first().cloned().ok_or_else(|| missing(what));
        let (table, sites) = match sim.api {
            ApiGeneration::Gen3 => (SiteTable::Zone, &sim.zones),
            ApiGeneration::Gen2 => (SiteTable::Cloudlet, &sim.cloudlets),
        };
        let (site_org, site_name) = sites.first().cloned().ok_or_else(|| missing("site"))?;
        Ok(ProviderConfig {
            url: url.to_string(),
            organization: first(&sim.orgs, "organization")?,
            region: first(&sim.regions, "region")?,
            default_flavor: first(&sim.flavors, "flavor")?,
            site: (table, site_org, site_name),
            credentials_file: dir.join("credentials.toml"),
            log_file: Some(dir.join("provider.log")),
            log_level: "debug",
            token_cache_dir: Some(dir.join("token-cache")),
            edge_connect_lines: String::new(),
        })
    }

    /// The config as TOML text.
    pub fn to_toml(&self) -> String {
        let path = |p: &Path| toml_string(&p.display().to_string());
        let mut text = String::new();
        if let Some(log) = &self.log_file {
            text.push_str(&format!("log_file = {}\n", path(log)));
        }
        text.push_str(&format!("log_level = {}\n", toml_string(self.log_level)));
        text.push_str(&format!(
            "credentials_file = {}\n",
            path(&self.credentials_file)
        ));
        match &self.token_cache_dir {
            Some(dir) => text.push_str(&format!("token_cache_dir = {}\n", path(dir))),
            None => text.push_str("token_cache = false\n"),
        }
        text.push_str(&format!(
            "\n[edge_connect]\nurl = {}\norganization = {}\nregion = {}\ndefault_flavor = {}\n",
            toml_string(&self.url),
            toml_string(&self.organization),
            toml_string(&self.region),
            toml_string(&self.default_flavor),
        ));
        if !self.edge_connect_lines.is_empty() {
            text.push_str(self.edge_connect_lines.trim_end());
            text.push('\n');
        }
        let (table, org, name) = &self.site;
        let table = match table {
            SiteTable::Zone => "zone",
            SiteTable::Cloudlet => "cloudlet",
        };
        text.push_str(&format!(
            "\n[edge_connect.{table}]\norganization = {}\nname = {}\n",
            toml_string(org),
            toml_string(name),
        ));
        text
    }

    /// Writes the config to `path` (replacing what is there).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        write_private(path, &self.to_toml())
    }
}

/// Writes a credentials file with `username` and `password`, readable by the owner only (the
/// provider refuses one that others can read).
pub fn write_credentials(path: &Path, username: &str, password: &str) -> std::io::Result<()> {
    write_private(
        path,
        &format!(
            "username = {}\npassword = {}\n",
            toml_string(username),
            toml_string(password)
        ),
    )
}

/// Writes `DIR/provider.toml` and `DIR/credentials.toml` for a simulator at `url` with
/// `config` ([`ProviderConfig::for_sim`], its first user). `DIR` is created with mode 0700.
pub fn write_trial_files(dir: &Path, url: &str, config: &SimConfig) -> std::io::Result<TrialFiles> {
    create_private_dir(dir)?;
    let dir = dir.canonicalize()?;
    let (user, password) = config
        .users
        .first()
        .cloned()
        .ok_or_else(|| missing("user"))?;
    let provider = ProviderConfig::for_sim(url, config, &dir)?;
    write_credentials(&provider.credentials_file, &user, &password)?;
    let path = dir.join("provider.toml");
    write_private(
        &path,
        &format!(
            "# Written by edge-connect-sim --write-provider-config for a local trial against {url}.\n{}",
            provider.to_toml()
        ),
    )?;
    Ok(TrialFiles {
        config: path,
        credentials: provider.credentials_file,
    })
}

fn missing(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("the simulator has no {what}"),
    )
}

/// A TOML basic string: JSON's escaping is valid TOML for every character.
fn toml_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Replaces `path` with `text`, readable by the owner only.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(text.as_bytes())
}
