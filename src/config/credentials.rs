//! Edge Connect credentials: the credentials file (private to its owner) and the
//! `EDP_EDGE_CONNECT_*` overrides from the environment.

use super::*;

/// Environment variable that overrides the credentials file's `username`.
pub const ENV_USERNAME: &str = "EDP_EDGE_CONNECT_USERNAME";
/// Environment variable that overrides the credentials file's `password`.
pub const ENV_PASSWORD: &str = "EDP_EDGE_CONNECT_PASSWORD";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<Secret>,
}

impl Config {
    /// Resolves credentials: the file first, then `EDP_EDGE_CONNECT_USERNAME` /
    /// `EDP_EDGE_CONNECT_PASSWORD` from `env` override it.
    pub fn credentials(&self, env: &HashMap<String, String>) -> Result<Credentials, Error> {
        let mut username = None;
        let mut password = None;
        let mut file_read: Option<&PathBuf> = None;
        if let Some(path) = &self.credentials_file {
            let from_env_complete = env.get(ENV_USERNAME).is_some_and(|v| !v.is_empty())
                && env.get(ENV_PASSWORD).is_some_and(|v| !v.is_empty());
            if !from_env_complete {
                check_credentials_permissions(path, self.allow_insecure_credentials_file)?;
                let unreadable = |e: String| {
                    Error::failed(format!(
                        "cannot read credentials_file {}: {e}",
                        path.display()
                    ))
                };
                let raw = crate::text::read_regular_file(path, crate::text::MAX_CONFIG_BYTES)
                    .map_err(unreadable)?;
                let text = String::from_utf8(raw)
                    .map_err(|_| unreadable("not valid UTF-8".to_string()))?;
                // Never show a value from this file: it is the password's home.
                let file: CredentialsFile = serde_path_to_error::deserialize(
                    toml::Deserializer::new(&text),
                )
                .map_err(|e| {
                    Error::failed(format!(
                        "credentials_file {}: {}",
                        path.display(),
                        toml_error(&e, &text, false)
                    ))
                })?;
                username = file.username;
                password = file.password;
                file_read = Some(path);
            }
        }
        if let Some(u) = env.get(ENV_USERNAME).filter(|v| !v.is_empty()) {
            username = Some(u.clone());
        }
        if let Some(p) = env.get(ENV_PASSWORD).filter(|v| !v.is_empty()) {
            password = Some(Secret::new(p.clone()));
        }
        let username = username.filter(|u| !u.is_empty());
        let password = password.filter(|p| !p.is_empty());
        match (username, password, file_read) {
            (Some(username), Some(password), _) => Ok(Credentials { username, password }),
            (None, None, None) => Err(Error::failed(format!(
                "no Edge Connect credentials: set username and password in credentials_file, or {ENV_USERNAME} and {ENV_PASSWORD}"
            ))),
            (u, _, file) => {
                let (what, var) = if u.is_none() {
                    ("username", ENV_USERNAME)
                } else {
                    ("password", ENV_PASSWORD)
                };
                Err(Error::failed(match file {
                    Some(path) => format!(
                        "no Edge Connect {what}: credentials_file {} has no `{what}` and {var} is not set",
                        path.display()
                    ),
                    None => format!(
                        "no Edge Connect {what}: {var} is not set (and no credentials_file is configured)"
                    ),
                }))
            }
        }
    }
}

/// Credentials files must not be readable by group or others: GARM's host is shared.
#[cfg(unix)]
fn check_credentials_permissions(path: &Path, allow_insecure: bool) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::failed(format!(
            "cannot read credentials_file {}: {e}",
            path.display()
        ))
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 && !allow_insecure {
        return Err(Error::failed(format!(
            "credentials_file {} is readable by others (mode {mode:o}); run: chmod 600 {}",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_credentials_permissions(_path: &Path, _allow_insecure: bool) -> Result<(), Error> {
    Ok(())
}
