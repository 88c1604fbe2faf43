//! A ready provider config and credentials file for a running simulator, so that a newcomer's
//! first `create` works without editing anything (`edge-connect-sim --write-provider-config DIR`).

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

/// Writes `DIR/provider.toml` and `DIR/credentials.toml` for a simulator at `url` with
/// `config`: the first user, organization, region and flavor, and the placement shape its API
/// generation takes (a zone on Gen3, a cloudlet on Gen2). The log file and the token cache go
/// into `DIR` too, so a trial touches nothing outside it. `DIR` is created with mode 0700.
pub fn write_trial_files(dir: &Path, url: &str, config: &SimConfig) -> std::io::Result<TrialFiles> {
    create_private_dir(dir)?;
    let dir = dir.canonicalize()?;
    let first = |v: &[String], what: &str| {
        v.first().cloned().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the simulator has no {what}"),
            )
        })
    };
    let (user, password) = config.users.first().cloned().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the simulator has no user",
        )
    })?;
    let org = first(&config.orgs, "organization")?;
    let region = first(&config.regions, "region")?;
    let flavor = first(&config.flavors, "flavor")?;
    let (section, sites) = match config.api {
        ApiGeneration::Gen3 => ("zone", &config.zones),
        ApiGeneration::Gen2 => ("cloudlet", &config.cloudlets),
    };
    let (site_org, site_name) = sites.first().cloned().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("the simulator has no {section}"),
        )
    })?;
    let credentials = dir.join("credentials.toml");
    let provider = dir.join("provider.toml");
    let text = format!(
        "# Written by edge-connect-sim --write-provider-config for a local trial against {url}.\n\
         log_file = {log}\n\
         log_level = \"debug\"\n\
         credentials_file = {creds}\n\
         token_cache_dir = {cache}\n\
         \n\
         [edge_connect]\n\
         url = {url_q}\n\
         organization = {org}\n\
         region = {region}\n\
         default_flavor = {flavor}\n\
         \n\
         [edge_connect.{section}]\n\
         organization = {site_org}\n\
         name = {site_name}\n",
        log = toml_string(&dir.join("provider.log").display().to_string()),
        creds = toml_string(&credentials.display().to_string()),
        cache = toml_string(&dir.join("token-cache").display().to_string()),
        url_q = toml_string(url),
        org = toml_string(&org),
        region = toml_string(&region),
        flavor = toml_string(&flavor),
        site_org = toml_string(&site_org),
        site_name = toml_string(&site_name),
    );
    write_private(
        &credentials,
        &format!(
            "username = {}\npassword = {}\n",
            toml_string(&user),
            toml_string(&password)
        ),
    )?;
    write_private(&provider, &text)?;
    Ok(TrialFiles {
        config: provider,
        credentials,
    })
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

/// Replaces `path` with `text`, readable by the owner only (the provider refuses a
/// credentials file that others can read).
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
