//! Edge Connect credentials: the credentials file (private to its owner) and the
//! `EDP_EDGE_CONNECT_*` overrides from the environment.

use std::os::unix::fs::PermissionsExt;

use super::*;

/// Environment variable that overrides the credentials file's `username`.
pub const ENV_USERNAME: &str = "EDP_EDGE_CONNECT_USERNAME";
/// Environment variable that overrides the credentials file's `password`.
pub const ENV_PASSWORD: &str = "EDP_EDGE_CONNECT_PASSWORD";
/// Environment variable that gives the site cache's secret (overrides `site_cache_secret`).
pub const ENV_SITE_CACHE_SECRET: &str = "EDP_SITE_CACHE_SECRET";

/// The shortest password accepted. Every text the provider writes is masked for the password
/// ([`edge_connect::Scrubber`]); a password of a few characters would either stay unmasked or
/// blank every word that contains it (`garm`, `INFO`). The Master Controller requires
/// passwords of a minimum strength (docs/operations.md#secrets), which no shorter one has.
pub const MIN_PASSWORD_CHARS: usize = 8;

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialsFile {
    username: Option<String>,
    password: Option<Secret>,
    site_cache_secret: Option<Secret>,
}

impl Config {
    /// Resolves credentials: the file first, then `EDP_EDGE_CONNECT_USERNAME` /
    /// `EDP_EDGE_CONNECT_PASSWORD` from `env` override it.
    pub fn credentials(&self, env: &HashMap<String, String>) -> Result<Credentials, Error> {
        let from_env = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let (env_username, env_password) = (from_env(ENV_USERNAME), from_env(ENV_PASSWORD));
        // Complete credentials in the environment make the file unnecessary: it is not read.
        let needed = env_username.is_none() || env_password.is_none();
        let file_read = self.credentials_file.as_ref().filter(|_| needed);
        let file = file_read.map(|path| self.read_credentials_file(path));
        let file = file.transpose()?.unwrap_or_default();
        let username = env_username.or(file.username).filter(|u| !u.is_empty());
        // A password that is not the environment's is the file's.
        let password_source = match file_read.filter(|_| env_password.is_none()) {
            Some(path) => format!("credentials_file {}", path.display()),
            None => ENV_PASSWORD.to_string(),
        };
        let password = (env_password.map(Secret::new))
            .or(file.password)
            .filter(|p| !p.is_empty());
        if let Some(p) = &password {
            let chars = p.expose().chars().count();
            if chars < MIN_PASSWORD_CHARS {
                return Err(Error::failed(format!(
                    "the Edge Connect password in {password_source} has {chars} characters; at least {MIN_PASSWORD_CHARS} are needed (a shorter one would appear in the provider's output unmasked or blank ordinary words in it; Edge Connect itself refuses weak passwords)"
                )));
            }
        }
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

    /// The credentials file at `path`, refused when others may read it.
    fn read_credentials_file(&self, path: &PathBuf) -> Result<CredentialsFile, Error> {
        let unreadable = |e: String| {
            Error::failed(format!(
                "cannot read credentials_file {}: {e}",
                path.display()
            ))
        };
        // Credentials files must not be readable by group or others: GARM's host is shared.
        let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 && !self.allow_insecure_credentials_file {
            let who = match (mode & 0o070 != 0, mode & 0o007 != 0) {
                (true, true) => "group and others",
                (true, false) => "its group",
                _ => "others",
            };
            // A Kubernetes Secret volume: the kubelet links its files into `..data`
            // and sets their mode itself, so chmod cannot help (docs/operations.md,
            // "Credentials and fsGroup").
            let fix = if path.parent().is_some_and(|d| d.join("..data").exists()) {
                "set the Secret volume's defaultMode to 0400 (256) and remove the pod's fsGroup, or take the credentials from the environment".to_string()
            } else {
                format!("run: chmod 600 {}", path.display())
            };
            return Err(Error::failed(format!(
                "credentials_file {} is readable by {who} (mode {mode:o}); {fix}",
                path.display()
            )));
        }
        let text = crate::text::read_regular_file(path, crate::text::MAX_CONFIG_BYTES)
            .map_err(unreadable)?;
        // Never show a value from this file: it is the password's home.
        serde_path_to_error::deserialize(toml::Deserializer::new(&text)).map_err(|e| {
            Error::failed(format!(
                "credentials_file {}: {}",
                path.display(),
                toml_error(&e, &text, false, &[])
            ))
        })
    }

    /// The site cache's secret (`site_cache.actions_cache`): `EDP_SITE_CACHE_SECRET` from `env`,
    /// else the credentials file's `site_cache_secret`; `None` when no actions cache runs.
    pub fn site_cache_secret(
        &self,
        env: &HashMap<String, String>,
    ) -> Result<Option<Secret>, Error> {
        if !self.site_cache.actions_cache {
            return Ok(None);
        }
        let from_env = env.get(ENV_SITE_CACHE_SECRET).filter(|v| !v.is_empty());
        let secret = match (from_env, &self.credentials_file) {
            (Some(value), _) => Some(Secret::new(value)),
            (None, Some(path)) => self.read_credentials_file(path)?.site_cache_secret,
            (None, None) => None,
        };
        match secret.filter(|s| !s.is_empty()) {
            Some(s) if s.expose().len() >= MIN_PASSWORD_CHARS && s.expose().bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') => Ok(Some(s)),
            Some(_) => Err(Error::failed(format!("the site cache secret ({ENV_SITE_CACHE_SECRET} or the credentials file's site_cache_secret) must be at least {MIN_PASSWORD_CHARS} characters of letters, digits, - and _ (e.g. openssl rand -hex 32)"))),
            None => Err(Error::failed(format!("site_cache.actions_cache needs a secret: set site_cache_secret in credentials_file or {ENV_SITE_CACHE_SECRET}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(credentials_file: Option<&Path>) -> Config {
        let file = credentials_file
            .map(|p| format!("credentials_file = {:?}\n", p.display().to_string()))
            .unwrap_or_default();
        let text = format!(
            "{file}[edge_connect]\norganization = \"o\"\nregion = \"EU\"\nurl = \"https://hub.example.invalid\"\ndefault_flavor = \"EU.small\"\n[edge_connect.zone]\nname = \"Munich\"\norganization = \"TelekomOP\"\n"
        );
        Config::parse(&text, Path::new("/etc/p.toml")).unwrap()
    }

    #[cfg(unix)]
    fn write(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, "username = \"u\"\npassword = \"a-strong-password\"\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_mode_message_says_who_can_read_and_what_fixes_it() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.toml");
        write(&plain, 0o604);
        let err = config(Some(&plain))
            .credentials(&HashMap::new())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("is readable by others (mode 604); run: chmod 600"),
            "{err}"
        );
        write(&plain, 0o640);
        let err = config(Some(&plain))
            .credentials(&HashMap::new())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is readable by its group (mode 640)"), "{err}");

        // A Kubernetes Secret volume: the file is a link into the kubelet's `..data`, mode 0440
        // with an fsGroup; chmod cannot change it, the volume's defaultMode and fsGroup can.
        let volume = tempfile::tempdir().unwrap();
        std::fs::create_dir(volume.path().join("..data")).unwrap();
        write(&volume.path().join("..data/credentials.toml"), 0o440);
        let linked = volume.path().join("credentials.toml");
        std::os::unix::fs::symlink("..data/credentials.toml", &linked).unwrap();
        let err = config(Some(&linked))
            .credentials(&HashMap::new())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("is readable by its group (mode 440); set the Secret volume's defaultMode to 0400 (256) and remove the pod's fsGroup"),
            "{err}"
        );
        assert!(!err.contains("chmod"), "{err}");
    }

    #[test]
    fn both_variables_suffice_without_a_credentials_file() {
        let env: HashMap<String, String> = [
            (ENV_USERNAME.to_string(), "u".to_string()),
            (ENV_PASSWORD.to_string(), "a-strong-password".to_string()),
        ]
        .into();
        let creds = config(None).credentials(&env).unwrap();
        assert_eq!(creds.username, "u");
        let err = config(None)
            .credentials(&HashMap::new())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("no Edge Connect credentials"), "{err}");
    }
}
