//! Reading the config file: bounded and UTF-8, parsed with every refusal naming file, line and
//! key, validated, and its relative paths made relative to the file.

use std::path::{Path, PathBuf};

use super::Config;
use crate::error::Error;

impl Config {
    /// Reads, parses and validates a config file. Only a regular file of at most 1 MiB is read
    /// (a FIFO or `/dev/zero` is refused, not waited on).
    pub fn load(path: &Path) -> Result<Self, Error> {
        let shown = absolute(path);
        let text =
            crate::text::read_regular_file(path, crate::text::MAX_CONFIG_BYTES).map_err(|e| {
                Error::failed(format!("cannot read config file {}: {e}", shown.display()))
            })?;
        Self::parse(&text, path)
    }

    /// Parses and validates config text. `path` names the file in messages, and relative paths
    /// in the config (`credentials_file`, `log_file`, `token_cache_dir`,
    /// `edge_connect.ca_bundle`) are resolved against its directory, so the config means the
    /// same whatever directory GARM starts the provider in.
    pub fn parse(text: &str, path: &Path) -> Result<Self, Error> {
        // Messages name the file by its full path: GARM's working directory is not the
        // operator's.
        let path = absolute(path);
        let mut config: Config = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|e| {
                Error::failed(format!(
                    "config {}: {}",
                    path.display(),
                    toml_error(&e, text, true, &super::RETIRED_KEYS)
                ))
            })?;
        config
            .validate()
            .map_err(|msg| Error::failed(format!("config {}: {msg}", path.display())))?;
        if let Some(dir) = path.parent() {
            for file in [
                &mut config.credentials_file,
                &mut config.log_file,
                &mut config.metrics_events_file,
                &mut config.token_cache_dir,
                &mut config.edge_connect.ca_bundle,
            ]
            .into_iter()
            .flatten()
            {
                if file.is_relative() {
                    *file = dir.join(&*file);
                }
            }
        }
        Ok(config)
    }
}

/// The absolute form of `path` for messages (the path as given when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// One line: "line N: key: what was wrong", never the source excerpt that toml's own Display
/// prints over several lines. With `show_value` false (the credentials file) no value from the
/// file is repeated, whatever its type; the config file holds no secret, so a short excerpt of a
/// wrong value is shown there to make the fix obvious. A key of `retired` (full dotted names) is
/// never offered for an unknown one: it is read only so that an old file still loads.
pub(super) fn toml_error(
    e: &serde_path_to_error::Error<toml::de::Error>,
    text: &str,
    show_value: bool,
    retired: &[(&str, &str)],
) -> String {
    let inner = e.inner();
    let message = inner.message().replace('\n', " ");
    let message = message.trim();
    let key = e.path().to_string();
    // A syntax error (no key, not one of serde's forms) is toml's own description of the
    // text, which holds no value except in the credentials file.
    // The unknown key's path ends in its own name; the names offered are its table's.
    let table = key.rsplit_once('.').map_or("", |(table, _)| table);
    let retired: Vec<&str> = retired
        .iter()
        .filter_map(|(full, _)| full.rsplit_once('.').or(Some(("", full))))
        .filter(|(of, _)| *of == table)
        .map(|(_, name)| name)
        .collect();
    let described = crate::text::describe_serde(message, show_value, &retired);
    let described = if described == "a value of the wrong form" && show_value {
        crate::text::echo_max(message, 300)
    } else if key.ends_with("_secs") {
        described.replace("a whole number (0 or more)", "whole seconds")
    } else {
        described
    };
    let line = inner.span().map_or(String::new(), |span| {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        format!("line {line}: ")
    });
    line + &crate::text::keyed(&key, &described)
}
